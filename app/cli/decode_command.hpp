// `mhascope decode`: the model's tokens generated through a KV cache (core/attention/decode.hpp):
// the first P at once, then one at a time, with the cache's bytes and the FLOPs per step against
// recomputing everything; --dump writes the assembled output and the caches as .npy.
#pragma once

#include <string>

#include "model_options.hpp"
#include "util/result.hpp"

namespace CLI {
class App;
}

namespace mhascope::cli {

struct DecodeArgs {
  int prefill = 1;    // P
  std::string dump;   // folder for output.npy, k_cache.npy, v_cache.npy ("" = none)
};

Status cmdDecode(const ModelOptions& mo, const DecodeArgs& a);

}  // namespace mhascope::cli
