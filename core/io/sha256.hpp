// SHA-256 (FIPS 180-4), our own few lines instead of a dependency: workspace files record the
// content hash of every input file they name, so a changed file is noticed. Streaming, so a
// multi-GiB weights file is hashed with a fixed 1 MiB buffer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace mhascope {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  std::string hexDigest();  // finishes; 64 lowercase hex digits

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t bufLen_ = 0;
  std::uint64_t totalBytes_ = 0;
};

std::string sha256Hex(std::string_view bytes);
// Hashes a regular file in 1 MiB pieces (FIFOs and devices are refused like readFile does).
Result<std::string> sha256File(const std::string& path);

}  // namespace mhascope
