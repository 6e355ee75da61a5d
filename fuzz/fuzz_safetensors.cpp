// libFuzzer target for parseSafetensors: any bytes must give the tensors or an Error naming the
// input — never a crash, an out-of-bounds read, undefined behaviour or an allocation beyond the
// input's size (scripts/fuzz.sh runs it with a malloc limit). What parses must survive
// encodeSafetensors → parse unchanged, tensors and metadata alike.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto contents = mhascope::parseSafetensorsWithMetadata(bytes, "fuzz.safetensors");
  if (!contents) {
    if (contents.error().message.rfind("fuzz.safetensors: ", 0) != 0) __builtin_trap();
    return 0;
  }
  const std::string encoded = mhascope::encodeSafetensors(contents->tensors, contents->metadata);
  auto again = mhascope::parseSafetensorsWithMetadata(encoded, "re-encoded");
  if (!again || again->metadata != contents->metadata || again->tensors.size() != contents->tensors.size()) {
    __builtin_trap();
  }
  for (const auto& [name, t] : contents->tensors) {
    const auto it = again->tensors.find(name);
    if (it == again->tensors.end() || it->second.shape != t.shape || it->second.data.size() != t.data.size()) {
      __builtin_trap();
    }
    if (static_cast<std::uint64_t>(t.numel()) != t.data.size()) __builtin_trap();
    // Bitwise, so -0.0 stays -0.0 (NaN cannot get here: the parser refuses it).
    if (!t.data.empty() &&
        std::memcmp(it->second.data.data(), t.data.data(), t.data.size() * sizeof(float)) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
