#include "util/memory_budget.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

namespace mhascope {
namespace {

std::optional<std::uint64_t> readAvailable() {
  std::ifstream f("/proc/meminfo");
  if (!f) return std::nullopt;
  std::ostringstream text;
  text << f.rdbuf();
  return parseMemAvailable(text.str());
}

}  // namespace

std::optional<std::uint64_t> parseMemAvailable(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  std::size_t pos = 0;
  while (pos < meminfo.size()) {
    const std::size_t end = std::min(meminfo.find('\n', pos), meminfo.size());
    std::string_view line = meminfo.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    std::uint64_t kib = 0;
    std::size_t digits = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) {
      if (kib > (~0ull >> 10) / 10) return std::nullopt;  // would overflow as bytes
      kib = kib * 10 + static_cast<std::uint64_t>(line[digits] - '0');
      ++digits;
    }
    line.remove_prefix(digits);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (digits == 0 || line.substr(0, 2) != "kB") return std::nullopt;
    return kib << 10;
  }
  return std::nullopt;
}

std::uint64_t budgetForAvailable(std::optional<std::uint64_t> availableBytes) {
  if (!availableBytes) return kMinDefaultBudget;
  return std::clamp(*availableBytes / 2, kMinDefaultBudget, kMaxDefaultBudget);
}

std::uint64_t defaultMemoryBudget() { return budgetForAvailable(readAvailable()); }

}  // namespace mhascope
