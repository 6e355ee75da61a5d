// Shared between npy_header.cpp and npy.cpp: format constants, the parsed header types, checkLayout.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "attention/tensor.hpp"
#include "util/result.hpp"

namespace mhascope::npy_detail {

constexpr std::string_view kMagic{"\x93NUMPY", 6};
constexpr std::size_t kPreambleV1 = 10;         // magic + 2 version bytes + uint16 length
constexpr std::size_t kPreambleV2 = 12;         // magic + 2 version bytes + uint32 length
constexpr std::size_t kMaxHeaderBytes = 10000;  // NumPy's own limit for loading safely
constexpr std::size_t kHeaderAlign = 64;        // NumPy pads so the data starts 64-aligned
constexpr std::size_t kGrowthAxisDigits = 21;   // NumPy leaves room to grow shape[0] in place
constexpr bool kHostBigEndian = std::endian::native == std::endian::big;

// Bytes from the file shown in a message: printable ASCII as is, the rest as \xNN, cut short.
std::string printable(std::string_view s, std::size_t maxChars = 100);

struct NpyDtype {
  enum class Kind { kFloat, kSigned, kUnsigned, kBool };
  Kind kind = Kind::kFloat;
  std::size_t size = 4;  // bytes per element
  bool bigEndian = false;
};

struct NpyHeader {
  NpyDtype dtype;
  std::string descr;  // as written, for messages
  Shape shape;
  std::int64_t numel = 1;
};

struct NpyLayout {
  NpyHeader header;
  std::size_t dataStart = 0;
};

// Everything but the data: `bytes` holds at least the preamble and header of a file of
// `totalSize` bytes (the whole file, or its first bytes when loading from disk), so a file whose
// size disagrees with its header is refused before its data is read.
Result<NpyLayout> checkLayout(std::string_view bytes, std::uint64_t totalSize, const std::string& what);

}  // namespace mhascope::npy_detail
