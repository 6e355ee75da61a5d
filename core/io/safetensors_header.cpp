// .safetensors header reading: the SAX handler, dtype lookup, the reference validate() rules, checkHeader.
//
// The header is read with nlohmann's SAX interface rather than into a json DOM, because the
// DOM silently keeps the last of duplicate keys (a file could then mean two things) and would
// hold a copy of everything, wanted or not. The handler below keeps only what a tensor entry
// needs and refuses a duplicate key the moment it appears.
//
// [SECTION] Helpers: messages
// [SECTION] dtypes
// [SECTION] Header: the SAX handler
// [SECTION] Validation: the reference validate() rules
// [SECTION] Header and layout: checkHeader

#include "io/safetensors_internal.hpp"

#include "io/binary_decode.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/format.hpp"
#include "util/utf8.hpp"

namespace mhascope::safetensors_detail {

using detail::loadUnsigned;

//-----------------------------------------------------------------------------------------------
// [SECTION] Helpers: messages
//-----------------------------------------------------------------------------------------------

constexpr std::size_t kMaxNesting = 128;                // serde_json's recursion limit

std::string quoteName(std::string_view s) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (out.size() > 80 && (c & 0xC0u) != 0x80u) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

//-----------------------------------------------------------------------------------------------
// [SECTION] dtypes
//-----------------------------------------------------------------------------------------------

namespace {

// Every dtype the reference knows, so a known-but-unused one gets "unsupported", not "unknown".
constexpr DtypeInfo kDtypes[] = {
    {"F32", 32, true},     {"F64", 64, true},     {"F16", 16, true},     {"BF16", 16, true},
    {"BOOL", 8, false},    {"U8", 8, false},      {"I8", 8, false},      {"I16", 16, false},
    {"U16", 16, false},    {"I32", 32, false},    {"U32", 32, false},    {"I64", 64, false},
    {"U64", 64, false},    {"F8_E5M2", 8, false}, {"F8_E4M3", 8, false}, {"F8_E8M0", 8, false},
    {"F6_E2M3", 6, false}, {"F6_E3M2", 6, false}, {"F4", 4, false},      {"C64", 64, false},
};

const DtypeInfo* findDtype(std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}
}  // namespace

std::string dtypeList(bool readableOnly) {
  std::string s;
  for (const DtypeInfo& d : kDtypes) {
    if (readableOnly && !d.readable) continue;
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}
namespace {

//-----------------------------------------------------------------------------------------------
// [SECTION] Header: the SAX handler
//-----------------------------------------------------------------------------------------------

// A JSON scalar as the handler sees it.
struct Scalar {
  enum class Kind { kNull, kBool, kNegative, kUnsigned, kFloat, kString };
  Kind kind = Kind::kNull;
  std::uint64_t u = 0;  // kUnsigned
  std::string text;     // kString: the value; kNegative/kFloat: the number as written
};

std::string describe(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::kNull: return "null";
    case Scalar::Kind::kBool: return "a bool";
    case Scalar::Kind::kNegative:
    case Scalar::Kind::kFloat: return "the number " + s.text;
    case Scalar::Kind::kUnsigned: return "the number " + std::to_string(s.u);
    case Scalar::Kind::kString: return "the string " + quoteName(s.text);
  }
  return "a value";
}

// Called by nlohmann::json::sax_parse. Every method returns false to stop at the first problem,
// leaving the message in error().
class HeaderReader {
 public:
  using json = nlohmann::json;

  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  const std::string& error() const { return error_; }

  bool null() { return scalar(Scalar{Scalar::Kind::kNull, 0, {}}); }
  bool boolean(bool) { return scalar(Scalar{Scalar::Kind::kBool, 0, {}}); }
  bool number_integer(json::number_integer_t v) {  // NOLINT(readability-identifier-naming): SAX API
    // nlohmann reports non-negative integers as unsigned; this is a negative one (or "-0").
    if (v == 0) return scalar(Scalar{Scalar::Kind::kUnsigned, 0, {}});
    return scalar(Scalar{Scalar::Kind::kNegative, 0, std::to_string(v)});
  }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(Scalar{Scalar::Kind::kUnsigned, v, {}}); }
  bool number_float(json::number_float_t, const std::string& text) {
    return scalar(Scalar{Scalar::Kind::kFloat, 0, text});
  }
  bool string(std::string& v) { return scalar(Scalar{Scalar::Kind::kString, 0, std::move(v)}); }
  bool binary(json::binary_t&) { return failWith("the header holds binary data"); }
  bool start_object(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& f = stack_.back();
    if (!f.keys.insert(k).second) {
      switch (f.kind) {
        case Kind::kTop:
          if (k == kMetadataKey) return failWith("the header has the key '__metadata__' twice");
          return failWith("the header has the tensor name " + quoteName(k) +
                          " twice (a JSON reader would silently keep only the last one)");
        case Kind::kMetadata: return failWith("__metadata__ has the key " + quoteName(k) + " twice");
        case Kind::kEntry:
          return failWith("tensor " + quoteName(entries.back().name) + " has the key " + quoteName(k) +
                          " twice");
        default:
          return failWith("the header has the key " + quoteName(k) + " twice inside tensor " +
                          quoteName(entries.back().name));
      }
    }
    f.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    return failWith(std::string("the header is not valid JSON: ") + ex.what());
  }

 private:
  enum class Kind { kTop, kMetadata, kEntry, kShape, kOffsets, kSkipObject, kSkipArray };
  struct Frame {
    Kind kind;
    std::set<std::string> keys;  // keys seen so far, to refuse duplicates (objects only)
    std::string key;             // the key whose value comes next (objects only)
  };

  bool failWith(std::string message) {
    error_ = std::move(message);
    return false;
  }
  bool push(Kind kind) {
    stack_.push_back(Frame{kind, {}, {}});
    return true;
  }
  std::string entryName() const { return quoteName(entries.back().name); }

  bool open(bool object) {
    const std::string found = object ? "an object" : "an array";
    if (stack_.size() >= kMaxNesting) {
      return failWith("the header nests deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    if (stack_.empty()) {
      if (!object) return failWith("the header is not a JSON object (it is an array)");
      return push(Kind::kTop);
    }
    const Frame& f = stack_.back();
    switch (f.kind) {
      case Kind::kTop:
        if (f.key == kMetadataKey) {
          if (!object) return failWith("__metadata__ must be an object of string values, got an array");
          return push(Kind::kMetadata);
        }
        if (!object) {
          return failWith("tensor " + quoteName(f.key) +
                          " must be an object with dtype, shape and data_offsets, got an array");
        }
        entries.push_back(Entry{});
        entries.back().name = f.key;
        return push(Kind::kEntry);
      case Kind::kMetadata:
        return failWith("__metadata__ value for " + quoteName(f.key) + " must be a string, got " + found);
      case Kind::kEntry:
        if (!object && f.key == "shape") {
          entries.back().hasShape = true;
          return push(Kind::kShape);
        }
        if (!object && f.key == "data_offsets") {
          entries.back().hasOffsets = true;
          return push(Kind::kOffsets);
        }
        if (f.key == "shape" || f.key == "data_offsets") {
          return failWith("tensor " + entryName() + " " + f.key + " must be an array of integers, got " +
                          found);
        }
        if (f.key == "dtype")
          return failWith("tensor " + entryName() + " dtype must be a string like \"F32\", got " + found);
        // The reference ignores fields it does not know; so do we.
        return push(object ? Kind::kSkipObject : Kind::kSkipArray);
      case Kind::kShape:
      case Kind::kOffsets:
        return failWith("tensor " + entryName() + (f.kind == Kind::kShape ? " shape" : " data_offsets") +
                        " must hold integers, got " + found);
      case Kind::kSkipObject:
      case Kind::kSkipArray: return push(object ? Kind::kSkipObject : Kind::kSkipArray);
    }
    return false;
  }

  bool close() {
    const Kind kind = stack_.back().kind;
    stack_.pop_back();
    if (kind == Kind::kEntry) {
      const Entry& e = entries.back();
      const char* missing = !e.hasDtype     ? "dtype"
                            : !e.hasShape   ? "shape"
                            : !e.hasOffsets ? "data_offsets"
                                            : nullptr;
      if (missing) return failWith("tensor " + entryName() + " has no \"" + missing + "\"");
    }
    if (kind == Kind::kOffsets && entries.back().offsets.size() != 2) {
      return failWith("tensor " + entryName() + " data_offsets must be [begin, end], got " +
                      std::to_string(entries.back().offsets.size()) + " values " +
                      listText(entries.back().offsets));
    }
    return true;
  }

  bool scalar(Scalar s) {
    if (stack_.empty()) return failWith("the header is not a JSON object (it is " + describe(s) + ")");
    const Frame& f = stack_.back();
    switch (f.kind) {
      case Kind::kTop:
        if (f.key == kMetadataKey) {
          if (s.kind == Scalar::Kind::kNull) return true;  // the reference reads null as "no metadata"
          return failWith("__metadata__ must be an object of string values, got " + describe(s));
        }
        return failWith("tensor " + quoteName(f.key) +
                        " must be an object with dtype, shape and data_offsets, got " + describe(s));
      case Kind::kMetadata:
        if (s.kind != Scalar::Kind::kString) {
          return failWith("__metadata__ value for " + quoteName(f.key) + " must be a string, got " +
                          describe(s));
        }
        metadata.emplace(f.key, std::move(s.text));
        return true;
      case Kind::kEntry:
        if (f.key == "dtype") {
          if (s.kind != Scalar::Kind::kString) {
            return failWith("tensor " + entryName() + " dtype must be a string like \"F32\", got " +
                            describe(s));
          }
          entries.back().dtype = std::move(s.text);
          entries.back().hasDtype = true;
          return true;
        }
        if (f.key == "shape" || f.key == "data_offsets") {
          return failWith("tensor " + entryName() + " " + f.key + " must be an array of integers, got " +
                          describe(s));
        }
        return true;
      case Kind::kShape:
      case Kind::kOffsets: {
        const std::string field = f.kind == Kind::kShape ? "shape" : "data_offsets";
        if (s.kind == Scalar::Kind::kUnsigned) {
          (f.kind == Kind::kShape ? entries.back().shape : entries.back().offsets).push_back(s.u);
          return true;
        }
        if (s.kind == Scalar::Kind::kNegative) {
          return failWith("tensor " + entryName() + " " + field + " has a negative value " + s.text);
        }
        if (s.kind == Scalar::Kind::kFloat) {
          return failWith("tensor " + entryName() + " " + field + " has " + s.text +
                          ", which is not an integer below 2^64");
        }
        return failWith("tensor " + entryName() + " " + field + " must hold integers, got " + describe(s));
      }
      case Kind::kSkipObject:
      case Kind::kSkipArray: return true;
    }
    return false;
  }

  std::vector<Frame> stack_;
  std::string error_;
};

//-----------------------------------------------------------------------------------------------
// [SECTION] Validation: the reference validate() rules
//-----------------------------------------------------------------------------------------------

// Per entry: known dtype, end >= begin, within the data, no overflow, bytes = numel * size.
// Then, sorted by offset, the tensors must tile the data exactly: from 0, no gap, no overlap,
// nothing left over. (~85 lines: the reference's validate() rules one after another, in its order.)
Status validateLayout(std::vector<Entry>& entries, std::uint64_t dataLen, const std::string& what) {
  constexpr auto kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  for (Entry& e : entries) {
    const std::string name = "tensor " + quoteName(e.name);
    e.info = findDtype(e.dtype);
    if (!e.info)
      return fileError(what,
                  name + " has unknown dtype " + quoteName(e.dtype) + " (known: " + dtypeList(false) + ")");
    e.begin = e.offsets[0];
    e.end = e.offsets[1];
    const std::string offsets = "data_offsets " + listText(e.offsets);
    if (e.end < e.begin) return fileError(what, name + " has " + offsets + " with end < begin");
    if (e.end > dataLen) {
      return fileError(what, name + " has " + offsets + " out of range: the data after the header is only " +
                            std::to_string(dataLen) + " bytes");
    }
    // Dims are checked to fit Tensor's int64 shape, and the product of the non-zero dims too, so
    // no partial product computed later can overflow.
    std::uint64_t product = 1;
    bool hasZero = false;
    for (const std::uint64_t d : e.shape) {
      if (d > kInt64Max || (d != 0 && product > kInt64Max / d)) {
        return fileError(what, name + " shape " + listText(e.shape) +
                              " overflows: its element count does not fit in 64 bits");
      }
      if (d == 0) {
        hasZero = true;
      } else {
        product *= d;
      }
    }
    const std::uint64_t numel = hasZero ? 0 : product;
    e.numel = static_cast<std::int64_t>(numel);
    if (numel > std::numeric_limits<std::uint64_t>::max() / e.info->bits) {
      return fileError(what, name + " shape " + listText(e.shape) + " of " + std::string(e.info->name) +
                            " overflows: its size in bits does not fit in 64 bits");
    }
    const std::uint64_t bits = numel * e.info->bits;
    if (bits % 8 != 0) {
      return fileError(what, name + " shape " + listText(e.shape) + " of " + std::string(e.info->name) +
                            " is not a whole number of bytes (" + std::to_string(bits) + " bits)");
    }
    if (e.end - e.begin != bits / 8) {
      return fileError(what, name + " has " + std::to_string(e.end - e.begin) + " bytes (" + offsets +
                            ") but shape " + listText(e.shape) + " of " + std::string(e.info->name) +
                            " needs " + std::to_string(bits / 8) + " bytes");
    }
  }

  std::vector<const Entry*> byOffset;
  byOffset.reserve(entries.size());
  for (const Entry& e : entries) byOffset.push_back(&e);
  std::sort(byOffset.begin(), byOffset.end(), [](const Entry* a, const Entry* b) {
    if (a->begin != b->begin) return a->begin < b->begin;
    if (a->end != b->end) return a->end < b->end;
    return a->name < b->name;
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : byOffset) {
    const std::string name = "tensor " + quoteName(e->name);
    if (e->begin > covered) {
      if (!previous) {
        return fileError(what, "the first tensor by offset, " + name + ", starts at byte " +
                              std::to_string(e->begin) + " instead of 0 (a gap of " + std::to_string(e->begin) +
                              " bytes)");
      }
      return fileError(what, "gap of " + std::to_string(e->begin - covered) + " bytes between tensor " +
                            quoteName(previous->name) + " (data_offsets " + listText(previous->offsets) +
                            ") and " + name + " (data_offsets " + listText(e->offsets) + ")");
    }
    if (e->begin < covered) {
      return fileError(what, name + " (data_offsets " + listText(e->offsets) + ") overlaps tensor " +
                            quoteName(previous->name) + " (data_offsets " + listText(previous->offsets) + ")");
    }
    covered = e->end;
    previous = e;
  }
  if (covered != dataLen) {
    return fileError(what, "trailing bytes: the tensors cover " + std::to_string(covered) +
                          " bytes but the data after the header is " + std::to_string(dataLen) + " bytes (" +
                          std::to_string(dataLen - covered) + " bytes extra)");
  }
  return Ok{};
}

}  // namespace

//-----------------------------------------------------------------------------------------------
// [SECTION] Header and layout: checkHeader
//-----------------------------------------------------------------------------------------------

// The header and the layout rules, without the data: `bytes` holds at least the length and
// the header of a file of `totalSize` bytes, so a file whose size disagrees with what its
// header declares is refused before its data is read.
Result<ParsedHeader> checkHeader(std::string_view bytes, std::uint64_t totalSize, const std::string& what) {
  if (totalSize < kLengthBytes || bytes.size() < kLengthBytes) {
    return fileError(what, "file is only " + std::to_string(totalSize) +
                          " bytes, too short for the 8-byte header length of a .safetensors file");
  }
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto headerLen = loadUnsigned<std::uint64_t>(raw, false);
  if (headerLen > kMaxHeaderBytes) {
    return fileError(what, "header length " + std::to_string(headerLen) + " is larger than the limit of " +
                          std::to_string(kMaxHeaderBytes) + " bytes");
  }
  const std::uint64_t afterLength = totalSize - kLengthBytes;
  if (headerLen > afterLength) {
    return fileError(what, "header length " + std::to_string(headerLen) + " is larger than the file (" +
                          std::to_string(afterLength) +
                          " bytes after the 8-byte length); the file is truncated "
                          "or not a .safetensors file");
  }
  if (bytes.size() < kLengthBytes + headerLen) return fileError(what, "the header could not be read whole");
  const std::string_view header = bytes.substr(kLengthBytes, static_cast<std::size_t>(headerLen));
  if (const std::size_t bad = firstInvalidUtf8(header); bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(header[bad]));
    return fileError(what, std::string("the header is not valid UTF-8 (byte ") + byte + " at header offset " +
                          std::to_string(bad) + ")");
  }

  try {
    HeaderReader reader;
    bool parsed = false;
    try {
      parsed = nlohmann::json::sax_parse(header.begin(), header.end(), &reader);
    } catch (const nlohmann::json::exception& ex) {
      return fileError(what, std::string("the header is not valid JSON: ") + ex.what());
    }
    if (!parsed) return fileError(what, reader.error());

    const std::size_t dataStart = kLengthBytes + static_cast<std::size_t>(headerLen);
    const std::uint64_t dataLen = totalSize - dataStart;
    if (auto layout = validateLayout(reader.entries, dataLen, what); !layout) return layout.error();

    ParsedHeader out;
    out.entries = std::move(reader.entries);
    out.metadata = std::move(reader.metadata);
    out.dataStart = dataStart;
    return out;
  } catch (const std::bad_alloc&) {
    return fileError(what, "not enough memory to read the header of the " + std::to_string(totalSize) + "-byte file");
  }
}

}  // namespace mhascope::safetensors_detail
