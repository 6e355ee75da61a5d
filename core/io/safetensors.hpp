// .safetensors files (Hugging Face's format: an 8-byte little-endian header length N, N bytes
// of JSON header, then one contiguous byte buffer) read from and written to byte strings.
// Reading is the untrusted boundary: it applies the same checks as the
// reference implementation's validate() — plus duplicate JSON keys and NaN/Inf, which the
// reference lets through — and every Error names the file, the tensor key and the numbers.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "util/result.hpp"
#include "attention/tensor.hpp"

namespace mhascope {

using TensorMap = std::map<std::string, Tensor>;

// A parsed file: its tensors and its optional "__metadata__" string map.
struct SafetensorsContents {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;
};

// Parses a whole .safetensors file held in `bytes`; `what` names it in every message.
// Read dtypes: F32, F64 (values outside the float32 range are an error), F16, BF16 — all
// converted to float. Other known dtypes (I64, I32, BOOL, F8_E4M3, ...) are refused as
// "unsupported dtype", anything else as "unknown dtype". NaN/±Inf values are an error with the
// tensor's name and the counts. Tensors come back with shape and data; axes are left empty.
Result<TensorMap> parseSafetensors(std::string_view bytes, const std::string& what);
// The same, keeping the "__metadata__" map too.
Result<SafetensorsContents> parseSafetensorsWithMetadata(std::string_view bytes, const std::string& what);

// readFile + parseSafetensors; messages name the path.
// FIFOs, devices and folders are refused before opening; a file larger than maxBytes is refused
// before it is read.
Result<TensorMap> loadSafetensors(const std::string& path, std::uint64_t maxBytes = (1ull << 32));

// F32 tensors, names sorted, data contiguous in that order from offset 0, compact JSON header
// padded with spaces to a multiple of 8 bytes as the reference writer does. Preconditions: names
// and metadata are valid UTF-8, no tensor is named "__metadata__", no negative dims and
// data.size() == numel(); otherwise std::invalid_argument (saveSafetensors checks and returns an
// Error instead).
std::string encodeSafetensors(const TensorMap& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// encodeSafetensors + writeFileAtomic (no partial file on failure). Errors name the path.
Status saveSafetensors(const std::string& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace mhascope
