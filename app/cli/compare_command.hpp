// `mhascope compare`: one stage of two models side by side, and their difference B − A on one
// scale symmetric about 0 (core/attention/compare.hpp, core/export/compare_figure.hpp). Side A is
// the MODEL options, as for `export`; side B is the same model with what --b-* changes (seed,
// positions, mask, h, K/V heads), or another preset or checkpoint (two checkpoints of one run: two
// steps of its timeline). Prints each side's configuration line and the largest |B − A| of the
// stage over every head in words, or exactly why no difference is possible (another T, another h);
// --out writes A | B | B − A (A | B then) as PNG, SVG or PDF.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model_options.hpp"

namespace CLI {
class App;
}

namespace mhascope::cli {

struct CompareArgs {
  std::string stage = "weights";
  std::optional<int> head;
  int batchIndex = 0;
  std::string out, colormap;
  // Side B: A's options with these changed, or a preset / checkpoint of its own.
  std::optional<std::uint64_t> bSeed;
  std::optional<int> bHeads, bKvHeads, bLayer;
  std::optional<std::string> bPositions, bMask, bPreset, bCheckpoint;
};

int cmdCompare(const ModelOptions& mo, const CompareArgs& a);
// Side B's options: A's with the --b-* changes applied, or a preset / checkpoint of its own.
ModelOptions sideBOptions(const ModelOptions& a, const CompareArgs& args);

}  // namespace mhascope::cli
