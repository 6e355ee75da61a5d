#include "model_source/model_view_page.hpp"

#include <cstdio>
#include <memory>

#include "analysis/circuit_texts.hpp"
#include "analysis/head_roles.hpp"
#include "color/downsample.hpp"

namespace mhascope {

HtmlExport modelViewPage(const model::ModelView& v, const std::string& folder) {
  HtmlExport page;
  page.grid = true;
  page.gridColumns = v.heads;
  page.options.title = "Every head of " + folder + " · T = " + std::to_string(v.ids.size()) + " tokens";
  page.options.subtitle = std::to_string(v.layers) + " layers × " + std::to_string(v.heads) + " heads (N = " +
                          std::to_string(v.kvHeads) + " K/V heads)";
  if (v.probe) page.options.subtitle += "\nProbe: " + model::describeProbe(*v.probe);
  page.options.range = ColorRange{0.0f, 1.0f};  // weights, as the tab draws them
  const int T = static_cast<int>(v.labels.size());
  for (int l = 0; l < v.layers; ++l) {
    std::string heading = "layer " + std::to_string(l);
    if (static_cast<std::size_t>(l) < v.layerMasks.size() && !v.layerMasks[l].tag.empty()) {
      heading += " · " + v.layerMasks[static_cast<std::size_t>(l)].tag;
    }
    page.rowHeadings.push_back(std::move(heading));
    for (int h = 0; h < v.heads; ++h) {
      const model::HeadView& hv = v.head(l, h);
      Slice2D s;
      s.stage = StageId::Weights;
      s.layer = l;
      s.head = h;
      s.rows = hv.thumbRows;
      s.cols = hv.thumbCols;
      auto values = std::make_shared<const std::vector<float>>(hv.thumbnail);
      s.data = values->data();
      s.owned = std::move(values);
      s.rowAxis = "T_q";
      s.colAxis = "T_k";
      // A block of k tokens per entry: each row and column is named by its first token.
      const int ky = hv.thumbRows > 0 ? (T + hv.thumbRows - 1) / hv.thumbRows : 1;
      const int kx = hv.thumbCols > 0 ? (T + hv.thumbCols - 1) / hv.thumbCols : 1;
      for (int r = 0; r < s.rows; ++r) s.rowLabels.push_back(v.labels[static_cast<std::size_t>(r * ky)]);
      for (int c = 0; c < s.cols; ++c) s.colLabels.push_back(v.labels[static_cast<std::size_t>(c * kx)]);
      page.slices.push_back(std::move(s));
      page.names.push_back(analysis::headName(l, h));
      const HeadScores& sc = hv.scores;
      char scores[160];
      std::snprintf(scores, sizeof scores, " · prev %.2f · induction %s · sink %.2f · entropy %.2f", sc.prevToken,
                    sc.inductionQueries > 0 ? std::to_string(sc.induction).substr(0, 4).c_str() : "n/a", sc.sink,
                    sc.entropy);
      page.notes.push_back(roleOf(roleScoresOf(sc, l)) + scores);
    }
  }
  if (!v.headViews.empty() && v.headViews.front().thumbRows < T) {
    const int k = (T + v.headViews.front().thumbRows - 1) / v.headViews.front().thumbRows;
    page.sourceNote = "Each entry shows a block of " + std::to_string(k) + " × " + std::to_string(k) +
                      " tokens by its largest weight (the Model tab's thumbnails, " + downsampleRuleName(DownsampleRule::Max) +
                      "); a row or column is named by its block's first token.";
  }
  page.sourceNote += (page.sourceNote.empty() ? "" : " ") + std::string("An induction head: ") + inductionRuleText() + ".";
  return page;
}

}  // namespace mhascope
