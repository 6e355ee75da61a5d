// Shared between safetensors_header.cpp and safetensors.cpp: constants, dtype table entry, parsed header types.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace mhascope::safetensors_detail {

constexpr std::size_t kLengthBytes = 8;                 // the u64 header length
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference's MAX_HEADER_SIZE
constexpr std::size_t kAlign = 8;                       // the reference pads its header to 8
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr bool kHostBigEndian = std::endian::native == std::endian::big;
// A name from the file inside a message: quoted, control bytes escaped, long names cut at a
// character boundary (names are valid UTF-8 by the time they get here).
std::string quoteName(std::string_view s);

template <class Int>
std::string listText(const std::vector<Int>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}
struct DtypeInfo {
  std::string_view name;
  std::uint64_t bits;  // F4 and F6 pack below a byte per element
  bool readable;       // mhascope converts it to float
};
// The dtype names the reference knows (readableOnly: only those mhascope converts), for messages.
std::string dtypeList(bool readableOnly);

// One tensor entry as written in the header, before validation.
struct Entry {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint64_t> offsets;
  bool hasDtype = false;
  bool hasShape = false;
  bool hasOffsets = false;
  // Filled by validation.
  const DtypeInfo* info = nullptr;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::int64_t numel = 0;
};

struct ParsedHeader {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  std::size_t dataStart = 0;
};

// The header and the layout rules, without the data: `bytes` holds at least the length and
// the header of a file of `totalSize` bytes, so a file whose size disagrees with what its
Result<ParsedHeader> checkHeader(std::string_view bytes, std::uint64_t totalSize, const std::string& what);

}  // namespace mhascope::safetensors_detail
