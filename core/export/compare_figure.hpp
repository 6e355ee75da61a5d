// The comparison picture: side A, side B and their difference B − A, left to right, each drawn by
// the one heatmap figure every export uses (labels, masks, colour bar). A and B share one colour
// scale, so the same colour means the same number on both; the difference has its own, the
// diverging map symmetric about 0. Without a difference (another T, another h) the picture holds A
// and B, and B's caption says why there is no third map. PNG, SVG or PDF, as every export.
#pragma once

#include <optional>
#include <string>

#include "attention/compare.hpp"
#include "export/export.hpp"

namespace mhascope {

struct ComparisonPicture {
  const Slice2D* a = nullptr;
  const Slice2D* b = nullptr;
  std::string titleA, titleB;        // "A · Softmax (weights) · head 0 · batch 0"
  std::string subtitleA, subtitleB;  // each side's configuration line
  std::optional<ColormapId> colormap;  // A and B; empty: by the stage's data kind
  std::optional<ColorRange> range;     // A and B; empty: the union of both sides' rangeFor
  const SliceDifference* difference = nullptr;  // null: no difference map
  std::string noDifferenceReason;               // why not (differenceBlocker), when null
  std::string differenceTitle;     // "B − A · …"
  std::string differenceSubtitle;  // the words: "max |B − A| = … at …"
  SeeAs seeAs = SeeAs::Normal;     // every colour as this reader sees it
};

Result<std::string> renderComparison(const ComparisonPicture& picture, ImageFormat format);
// Render (the format from the extension), then write atomically; nothing is written on an error.
Status exportComparison(const std::string& path, const ComparisonPicture& picture);

}  // namespace mhascope
