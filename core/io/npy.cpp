// NumPy .npy data conversion and the public API: parseNpy, loadNpy, encodeNpy, saveNpy (see npy.hpp).
//
// The header is read by npy_header.cpp (checkLayout); this file turns the data bytes into
// floats, guards against NaN/Inf, and writes .npy files byte for byte as NumPy does.
//
// [SECTION] Data conversion and the NaN/Inf guard
// [SECTION] Public API: parseNpy, loadNpy, encodeNpy, saveNpy

#include "io/npy.hpp"

#include "io/binary_decode.hpp"
#include "io/npy_internal.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "io/file_io.hpp"
#include "util/format.hpp"

namespace mhascope {
namespace {

using detail::halfToFloat;
using detail::loadUnsigned;
using detail::narrowToFloat;
using npy_detail::checkLayout;
using npy_detail::kGrowthAxisDigits;
using npy_detail::kHeaderAlign;
using npy_detail::kHostBigEndian;
using npy_detail::kMagic;
using npy_detail::kMaxHeaderBytes;
using npy_detail::kPreambleV1;
using npy_detail::kPreambleV2;
using npy_detail::NpyDtype;
using npy_detail::NpyHeader;
using npy_detail::printable;

//-----------------------------------------------------------------------------------------------
// [SECTION] Data conversion and the NaN/Inf guard
//-----------------------------------------------------------------------------------------------

// Integers and bools become floats (masks): U carries the file's bytes, S is the value type.
template <class U, class S>
void convertIntegers(const unsigned char* src, std::size_t n, bool bigEndian, float* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    dst[i] = static_cast<float>(static_cast<S>(loadUnsigned<U>(src + i * sizeof(U), bigEndian)));
  }
}

struct RangeDamage {
  std::size_t count = 0;  // finite f8 values beyond float32
  std::size_t first = 0;
  double firstValue = 0.0;
};

void convertFloats(const unsigned char* src, std::size_t n, const NpyDtype& dt, float* dst, RangeDamage& damage) {
  const bool big = dt.bigEndian;
  if (dt.size == 2) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = halfToFloat(loadUnsigned<std::uint16_t>(src + 2 * i, big));
  } else if (dt.size == 4) {
    if (big == kHostBigEndian) {
      if (n) std::memcpy(dst, src, n * 4);  // the common case: the bytes already are host floats
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        dst[i] = std::bit_cast<float>(loadUnsigned<std::uint32_t>(src + 4 * i, big));
      }
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const double v = std::bit_cast<double>(loadUnsigned<std::uint64_t>(src + 8 * i, big));
      if (!narrowToFloat(v, dst[i]) && damage.count++ == 0) {
        damage.first = i;
        damage.firstValue = v;
      }
    }
  }
}

void convertData(const unsigned char* src, std::size_t n, const NpyDtype& dt, float* dst, RangeDamage& damage) {
  const bool big = dt.bigEndian;
  const bool isSigned = dt.kind == NpyDtype::Kind::kSigned;
  switch (dt.kind) {
    case NpyDtype::Kind::kFloat: convertFloats(src, n, dt, dst, damage); return;
    case NpyDtype::Kind::kBool:
      for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] ? 1.0f : 0.0f;  // NumPy reads any nonzero as True
      return;
    case NpyDtype::Kind::kSigned:
    case NpyDtype::Kind::kUnsigned:
      switch (dt.size) {
        case 1:
          isSigned ? convertIntegers<std::uint8_t, std::int8_t>(src, n, big, dst)
                   : convertIntegers<std::uint8_t, std::uint8_t>(src, n, big, dst);
          return;
        case 2:
          isSigned ? convertIntegers<std::uint16_t, std::int16_t>(src, n, big, dst)
                   : convertIntegers<std::uint16_t, std::uint16_t>(src, n, big, dst);
          return;
        case 4:
          isSigned ? convertIntegers<std::uint32_t, std::int32_t>(src, n, big, dst)
                   : convertIntegers<std::uint32_t, std::uint32_t>(src, n, big, dst);
          return;
        default:
          isSigned ? convertIntegers<std::uint64_t, std::int64_t>(src, n, big, dst)
                   : convertIntegers<std::uint64_t, std::uint64_t>(src, n, big, dst);
          return;
      }
  }
}

// NaN/Inf are an error with their counts, never zeroed behind the user's back.
Status checkFinite(std::span<const float> data, const std::string& what, const std::string& descr,
                   NpyValues values) {
  if (values == NpyValues::Any) return Ok{};
  const bool allowMinusInf = values == NpyValues::AllowMinusInfinity;
  std::size_t nan = 0;
  std::size_t inf = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const float v = data[i];
    if (std::isfinite(v)) continue;
    if (allowMinusInf && v < 0 && std::isinf(v)) continue;
    if (nan + inf == 0) first = i;
    if (std::isnan(v)) {
      ++nan;
    } else {
      ++inf;
    }
  }
  if (nan + inf == 0) return Ok{};
  return fileError(what, "'" + descr + "' data contains " + std::to_string(nan) + " NaN and " + std::to_string(inf) +
                        " Inf values (of " + std::to_string(data.size()) + ", the first at flat index " +
                        std::to_string(first) +
                        "); they are never silently zeroed — fix the array "
                        "before saving");
}

// What encodeNpy needs from a Tensor; empty when fine.
std::string encodeProblem(const Tensor& t) {
  for (const std::int64_t d : t.shape) {
    if (d < 0) return "shape " + shapeToString(t.shape) + " has a negative dimension";
  }
  const auto count = checkedElementCount(t.shape);
  if (!count) return "shape " + shapeToString(t.shape) + " overflows";
  const std::int64_t numel = *count;
  if (static_cast<std::uint64_t>(numel) != t.data.size()) {
    return "shape " + shapeToString(t.shape) + " has " + std::to_string(numel) +
           " elements but the tensor holds " + std::to_string(t.data.size()) + " values";
  }
  return {};
}

}  // namespace

//-----------------------------------------------------------------------------------------------
// [SECTION] Public API: parseNpy, loadNpy, encodeNpy, saveNpy
//-----------------------------------------------------------------------------------------------

Result<Tensor> parseNpy(std::string_view bytes, const std::string& what, NpyValues values) {
  auto layout = checkLayout(bytes, bytes.size(), what);
  if (!layout) return layout.error();
  const NpyHeader* header = &layout->header;
  const std::size_t dataStart = layout->dataStart;
  const auto numel = static_cast<std::uint64_t>(header->numel);
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
  try {
    Tensor t;
    t.shape = header->shape;
    t.data.resize(static_cast<std::size_t>(numel));  // bounded: numel <= dataBytes
    RangeDamage damage;
    convertData(raw + dataStart, t.data.size(), header->dtype, t.data.data(), damage);
    if (header->dtype.kind == NpyDtype::Kind::kFloat) {
      auto finite = checkFinite(t.data, what, printable(header->descr, 40), values);
      if (!finite) return finite.error();
    }
    if (damage.count) {
      return fileError(what, std::to_string(damage.count) + " float64 values are outside the float32 range (±" +
                            formatDouble(static_cast<double>(FLT_MAX)) + "), the first " +
                            formatDouble(damage.firstValue) + " at flat index " + std::to_string(damage.first) +
                            "; rescale the data or save it as float32");
    }
    return t;
  } catch (const std::bad_alloc&) {
    return fileError(what, "not enough memory to hold " + std::to_string(numel) + " float values");
  }
}

Result<Tensor> loadNpy(const std::string& path, NpyValues values, std::uint64_t maxFloatBytes) {
  auto size = regularFileSize(path);
  if (!size) return size.error();
  // The header first: a file whose size disagrees with it, or whose data would not fit the
  // memory allowed, is refused without reading the data.
  auto prefix = readFilePrefix(path, kPreambleV2 + kMaxHeaderBytes);
  if (!prefix) return prefix.error();
  auto layout = checkLayout(*prefix, *size, path);
  if (!layout) return layout.error();
  const double floatBytes = 4.0 * static_cast<double>(layout->header.numel);
  if (floatBytes > static_cast<double>(maxFloatBytes)) {
    return fileError(path, "shape " + shapeToString(layout->header.shape) + " needs " +
                          std::to_string(static_cast<std::uint64_t>(floatBytes)) +
                          " bytes as float32, more than the memory budget of " + std::to_string(maxFloatBytes) +
                          " bytes (raise it with --memory-budget MiB)");
  }
  auto bytes = readFile(path, *size);
  if (!bytes) return bytes.error();
  return parseNpy(*bytes, path, values);
}

std::string encodeNpy(const Tensor& t) {
  if (const std::string problem = encodeProblem(t); !problem.empty()) {
    throw std::invalid_argument("encodeNpy: " + problem);
  }
  // Byte for byte what NumPy 1.24 writes: keys sorted, Python reprs, room to grow shape[0].
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shapeToString(t.shape) + ", }";
  if (!t.shape.empty()) {
    const std::size_t digits = std::to_string(t.shape[0]).size();
    if (digits < kGrowthAxisDigits) dict.append(kGrowthAxisDigits - digits, ' ');
  }
  const std::size_t withNewline = dict.size() + 1;
  std::size_t preamble = kPreambleV1;
  std::size_t pad = kHeaderAlign - (preamble + withNewline) % kHeaderAlign;
  if (withNewline + pad > std::numeric_limits<std::uint16_t>::max()) {
    preamble = kPreambleV2;  // only a header of thousands of dims needs the 4-byte length
    pad = kHeaderAlign - (preamble + withNewline) % kHeaderAlign;
  }
  const std::size_t headerLen = withNewline + pad;

  std::string out;
  out.reserve(preamble + headerLen + t.data.size() * 4);
  out += kMagic;
  out += static_cast<char>(preamble == kPreambleV1 ? 1 : 2);
  out += '\0';
  const std::size_t lenBytes = preamble - 8;
  for (std::size_t k = 0; k < lenBytes; ++k) out += static_cast<char>((headerLen >> (8 * k)) & 0xffu);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  detail::appendFloat32LE(out, t.data);
  return out;
}

Status saveNpy(const std::string& path, const Tensor& t) {
  if (const std::string problem = encodeProblem(t); !problem.empty()) {
    return makeError("cannot write '" + path + "': " + problem);
  }
  try {
    return writeFileAtomic(path, encodeNpy(t));
  } catch (const std::bad_alloc&) {
    return makeError("cannot write '" + path + "': not enough memory to encode " +
                     std::to_string(t.data.size()) + " values");
  }
}

}  // namespace mhascope
