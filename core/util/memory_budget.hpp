// The default memory budget: how much the command line and the window may hold for one
// configuration before they refuse it. It follows the machine: half of the memory
// Linux says is available (MemAvailable in /proc/meminfo) when the program starts, at least
// 512 MiB and at most 32 GiB; 512 MiB when /proc/meminfo cannot be read. `--memory-budget MiB`
// (CLI and window) replaces it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mhascope {

inline constexpr std::uint64_t kMinDefaultBudget = 512ull << 20;  // also the fallback
inline constexpr std::uint64_t kMaxDefaultBudget = 32ull << 30;

// MemAvailable of a /proc/meminfo text, in bytes; nullopt when the line is missing or malformed.
std::optional<std::uint64_t> parseMemAvailable(std::string_view meminfo);
// The rule above for a given available amount (nullopt: unknown).
std::uint64_t budgetForAvailable(std::optional<std::uint64_t> availableBytes);
// The rule applied to this machine now (reads /proc/meminfo).
std::uint64_t defaultMemoryBudget();

}  // namespace mhascope
