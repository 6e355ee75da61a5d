// libFuzzer target for parseNpy: any bytes must give a Tensor or an Error naming the input —
// never a crash, an out-of-bounds read, undefined behaviour or an allocation beyond the input's
// size (scripts/fuzz.sh runs it with a malloc limit). Both NpyValues modes are run. A tensor
// that parses must also survive encodeNpy → parseNpy unchanged, which exercises the writer on
// every shape the parser admits.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using mhascope::NpyValues;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto strict = mhascope::parseNpy(bytes, "fuzz.npy");
  auto tensor = mhascope::parseNpy(bytes, "fuzz.npy", NpyValues::AllowMinusInfinity);
  if (!tensor) {
    // Every error names its input, and what the lenient mode refuses the strict one refuses too.
    if (tensor.error().message.rfind("fuzz.npy: ", 0) != 0 || strict) __builtin_trap();
    return 0;
  }
  if (!strict && strict.error().message.rfind("fuzz.npy: ", 0) != 0) __builtin_trap();
  if (static_cast<std::uint64_t>(tensor->numel()) != tensor->data.size()) __builtin_trap();
  auto again = mhascope::parseNpy(mhascope::encodeNpy(*tensor), "re-encoded", NpyValues::AllowMinusInfinity);
  if (!again || again->shape != tensor->shape || again->data.size() != tensor->data.size()) __builtin_trap();
  // Bitwise, so -0.0 stays -0.0 (NaN cannot get here: both modes refuse it).
  if (!again->data.empty() &&
      std::memcmp(again->data.data(), tensor->data.data(), tensor->data.size() * sizeof(float)) != 0) {
    __builtin_trap();
  }
  return 0;
}
