// .safetensors data conversion and the public API: parse, load, encode, save (see safetensors.hpp).
//
// The header is read and validated by safetensors_header.cpp (checkHeader); this file turns the
// tensor bytes into floats, guards against NaN/Inf, and writes .safetensors files.
//
// [SECTION] Data conversion and the NaN/Inf guard
// [SECTION] Public API: parse, load, encode, save

#include "io/safetensors.hpp"

#include "io/binary_decode.hpp"
#include "io/safetensors_internal.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/file_io.hpp"
#include "util/format.hpp"
#include "util/utf8.hpp"

namespace mhascope {
namespace {

using detail::bf16ToFloat;
using detail::halfToFloat;
using detail::loadUnsigned;
using detail::narrowToFloat;
using safetensors_detail::checkHeader;
using safetensors_detail::dtypeList;
using safetensors_detail::Entry;
using safetensors_detail::kAlign;
using safetensors_detail::kHostBigEndian;
using safetensors_detail::kLengthBytes;
using safetensors_detail::kMaxHeaderBytes;
using safetensors_detail::kMetadataKey;
using safetensors_detail::listText;
using safetensors_detail::ParsedHeader;
using safetensors_detail::quoteName;

//-----------------------------------------------------------------------------------------------
// [SECTION] Data conversion and the NaN/Inf guard
//-----------------------------------------------------------------------------------------------

struct Damage {
  std::size_t nan = 0;
  std::size_t inf = 0;
  std::size_t firstBad = 0;
  std::size_t outOfRange = 0;  // finite F64 values beyond float32
  std::size_t firstOutOfRange = 0;
  double firstOutOfRangeValue = 0.0;
};

void convertTensor(const Entry& e, const unsigned char* src, std::span<float> dst, Damage& damage) {
  const std::size_t n = dst.size();
  const std::string_view dtype = e.info->name;
  if (dtype == "F32") {
    if constexpr (!kHostBigEndian) {
      if (n) std::memcpy(dst.data(), src, n * 4);  // the common case: the bytes already are floats
    } else {
      for (std::size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(loadUnsigned<std::uint32_t>(src + 4 * i, false));
    }
  } else if (dtype == "F16") {
    for (std::size_t i = 0; i < n; ++i) dst[i] = halfToFloat(loadUnsigned<std::uint16_t>(src + 2 * i, false));
  } else if (dtype == "BF16") {
    for (std::size_t i = 0; i < n; ++i) dst[i] = bf16ToFloat(loadUnsigned<std::uint16_t>(src + 2 * i, false));
  } else {  // F64
    for (std::size_t i = 0; i < n; ++i) {
      const double v = std::bit_cast<double>(loadUnsigned<std::uint64_t>(src + 8 * i, false));
      if (!narrowToFloat(v, dst[i]) && damage.outOfRange++ == 0) {
        damage.firstOutOfRange = i;
        damage.firstOutOfRangeValue = v;
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isfinite(dst[i])) continue;
    if (damage.nan + damage.inf == 0) damage.firstBad = i;
    if (std::isnan(dst[i])) {
      ++damage.nan;
    } else {
      ++damage.inf;
    }
  }
}

// Why `tensors`/`metadata` cannot be encoded, or empty.
std::string encodeProblem(const TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
  for (const auto& [name, t] : tensors) {
    if (firstInvalidUtf8(name) != std::string_view::npos) return "tensor name is not valid UTF-8";
    if (name == kMetadataKey) return "a tensor may not be named '__metadata__'";
    for (const std::int64_t d : t.shape) {
      if (d < 0) return "tensor " + quoteName(name) + " shape " + listText(t.shape) + " has a negative dimension";
    }
    // 4 bytes a float32: the byte count must fit as well.
    const auto count = checkedElementCount(t.shape, std::numeric_limits<std::int64_t>::max() / 4);
    if (!count) return "tensor " + quoteName(name) + " shape " + listText(t.shape) + " overflows";
    const std::int64_t numel = *count;
    if (static_cast<std::uint64_t>(numel) != t.data.size()) {
      return "tensor " + quoteName(name) + " shape " + listText(t.shape) + " has " + std::to_string(numel) +
             " elements but the tensor holds " + std::to_string(t.data.size()) + " values";
    }
  }
  for (const auto& [key, value] : metadata) {
    if (firstInvalidUtf8(key) != std::string_view::npos || firstInvalidUtf8(value) != std::string_view::npos) {
      return "__metadata__ entries must be valid UTF-8";
    }
  }
  return {};
}

}  // namespace

//-----------------------------------------------------------------------------------------------
// [SECTION] Public API: parse, load, encode, save
//-----------------------------------------------------------------------------------------------


Result<SafetensorsContents> parseSafetensorsWithMetadata(std::string_view bytes, const std::string& what) {
  auto parsed = checkHeader(bytes, bytes.size(), what);
  if (!parsed) return parsed.error();
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t dataStart = parsed->dataStart;
  try {
    // Name order, so the message for a file with several problems is always the same one.
    std::sort(parsed->entries.begin(), parsed->entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    for (const Entry& e : parsed->entries) {
      if (!e.info->readable) {
        return fileError(what, "unsupported dtype " + std::string(e.info->name) + " for tensor " +
                              quoteName(e.name) + "; mhascope reads " + dtypeList(true) +
                              " (convert with tensor.float())");
      }
    }

    SafetensorsContents out;
    out.metadata = std::move(parsed->metadata);
    std::string damageReport;
    for (const Entry& e : parsed->entries) {
      Tensor t;
      t.shape.assign(e.shape.begin(), e.shape.end());
      t.data.resize(static_cast<std::size_t>(e.numel));  // bounded: numel * size == bytes in the file
      Damage damage;
      convertTensor(e, raw + dataStart + e.begin, t.data, damage);
      if (damage.nan + damage.inf > 0) {
        damageReport += "; tensor " + quoteName(e.name) + " has " + std::to_string(damage.nan) + " NaN and " +
                        std::to_string(damage.inf) + " Inf values (of " + std::to_string(t.data.size()) +
                        ", the first at flat index " + std::to_string(damage.firstBad) + ")";
      }
      if (damage.outOfRange > 0) {
        damageReport += "; tensor " + quoteName(e.name) + " has " + std::to_string(damage.outOfRange) +
                        " F64 values outside the float32 range (±" +
                        formatDouble(static_cast<double>(FLT_MAX)) + "), the first " +
                        formatDouble(damage.firstOutOfRangeValue) + " at flat index " +
                        std::to_string(damage.firstOutOfRange);
      }
      out.tensors.emplace(e.name, std::move(t));
    }
    if (!damageReport.empty()) {
      return fileError(what, "values mhascope cannot use, never silently zeroed" + damageReport);
    }
    return out;
  } catch (const std::bad_alloc&) {
    return fileError(what, "not enough memory to read the " + std::to_string(bytes.size()) + "-byte file");
  }
}

Result<TensorMap> parseSafetensors(std::string_view bytes, const std::string& what) {
  auto contents = parseSafetensorsWithMetadata(bytes, what);
  if (!contents) return contents.error();
  return std::move(contents->tensors);
}

Result<TensorMap> loadSafetensors(const std::string& path, std::uint64_t maxBytes) {
  auto size = regularFileSize(path);  // FIFOs, devices and folders are refused before opening
  if (!size) return size.error();
  // The header first (its length, then the header itself, at most 100 MB): a file whose size
  // disagrees with the tensors it declares is refused before the data is read.
  auto length = readFilePrefix(path, kLengthBytes);
  if (!length) return length.error();
  std::uint64_t headerLen = 0;
  if (length->size() == kLengthBytes) {
    headerLen = loadUnsigned<std::uint64_t>(reinterpret_cast<const unsigned char*>(length->data()), false);
  }
  auto overBudget = [&] {
    return fileError(path, "the file is " + std::to_string(*size) + " bytes, more than the memory budget of " +
                          std::to_string(maxBytes) + " bytes for it (raise it with --memory-budget MiB)");
  };
  if (headerLen <= kMaxHeaderBytes && headerLen <= *size && kLengthBytes + headerLen > maxBytes) return overBudget();
  auto prefix = readFilePrefix(path, kLengthBytes + std::min(headerLen, kMaxHeaderBytes));
  if (!prefix) return prefix.error();
  if (auto header = checkHeader(*prefix, *size, path); !header) return header.error();
  if (*size > maxBytes) return overBudget();
  auto bytes = readFile(path, *size);
  if (!bytes) return bytes.error();
  return parseSafetensors(*bytes, path);
}

std::string encodeSafetensors(const TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
  if (const std::string problem = encodeProblem(tensors, metadata); !problem.empty()) {
    throw std::invalid_argument("encodeSafetensors: " + problem);
  }
  // ordered_json keeps insertion order: __metadata__ first, then the names as std::map sorts them.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[std::string(kMetadataKey)] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::uint64_t size = t.data.size() * sizeof(float);
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = "F32";
    entry["shape"] = t.shape;
    entry["data_offsets"] = nlohmann::ordered_json::array({offset, offset + size});
    header[name] = std::move(entry);
    offset += size;
  }
  std::string text = header.dump();
  text.append((kAlign - text.size() % kAlign) % kAlign, ' ');

  std::string out;
  out.reserve(kLengthBytes + text.size() + static_cast<std::size_t>(offset));
  const std::uint64_t n = text.size();
  for (std::size_t k = 0; k < kLengthBytes; ++k) out += static_cast<char>((n >> (8 * k)) & 0xffu);
  out += text;
  for (const auto& [name, t] : tensors) {
    detail::appendFloat32LE(out, t.data);
  }
  return out;
}

Status saveSafetensors(const std::string& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata) {
  if (const std::string problem = encodeProblem(tensors, metadata); !problem.empty()) {
    return makeError("cannot write '" + path + "': " + problem);
  }
  try {
    return writeFileAtomic(path, encodeSafetensors(tensors, metadata));
  } catch (const std::bad_alloc&) {
    return makeError("cannot write '" + path + "': not enough memory to encode the tensors");
  }
}

}  // namespace mhascope
