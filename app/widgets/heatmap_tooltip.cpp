// The heatmap's hover (heatmap_tooltip.hpp): the cell in words, forced values, downsampled blocks.
#include "widgets/heatmap_tooltip.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "lessons/lessons.hpp"
#include "widgets/colors.hpp"
#include "widgets/labels.hpp"

namespace mhascope::app {
namespace {

// One axis position in words: "query «cat» (T_q position 1)", "d_k feature 5 (d_model column 13)".
// Indices count from 0 and are never written "N of M" (that form is kept for ordinals such as
// "stage 13 of 16"), so each names its axis first.
std::string describeIndex(const Slice2D& s, bool row, int index, const HeatmapSpec& spec) {
  const std::string& axis = row ? s.rowAxis : s.colAxis;
  const auto& labels = row ? s.rowLabels : s.colLabels;
  const std::string token = index < static_cast<int>(labels.size())
                                ? readableToken(labels[static_cast<std::size_t>(index)], ImGui::GetFont())
                                : std::string("?");
  const std::string pos = std::to_string(index);
  if (axis == "T_q") return "query  «" + token + "»   (T_q position " + pos + ")";
  if (axis == "T_k") return "key    «" + token + "»   (T_k position " + pos + ")";
  if (axis == "d_k" && s.head >= 0 && spec.dk > 0) {
    // The heads side by side are d_model wide unless the model sets d_k; then they are h·d_k wide.
    const bool dModelWide = !spec.trace || spec.trace->heads * spec.trace->dk == spec.trace->dModel;
    return "d_k feature " + pos + "   (" + (dModelWide ? "d_model" : "h·d_k") + " column " +
           std::to_string(s.head * spec.dk + index) + ")";
  }
  if (!row && columnsOwnedByHeads(spec) && spec.dk > 0 && spec.heads > 1) {
    const int i = index / spec.dk;
    return axis + " feature " + pos + "   (column " + pos + " belongs to head floor(" + pos + " / " +
           std::to_string(spec.dk) + ") = " + std::to_string(i) + ")";
  }
  if (!row && axis == "d_model" && !s.weight && !headsOwnColumns(s.stage)) {
    return "d_model feature " + pos + "   (" + noHeadOwnerNote(s.stage) + ")";
  }
  return axis + " feature " + pos;
}

}  // namespace

bool blockedAt(const HeatmapSpec& spec, int r, int dataCol) {
  const Slice2D& s = *spec.slice;
  return s.isBlockedCell(r, dataCol) || s.at(r, dataCol) == -std::numeric_limits<float>::infinity();
}

// The largest value of row r that the mask does not block (the per-row colour scale's top).
float rowMaxOf(const HeatmapSpec& spec, int r) {
  const Slice2D& s = *spec.slice;
  float m = -std::numeric_limits<float>::infinity();
  for (int c = 0; c < s.cols; ++c) {
    if (!blockedAt(spec, r, c) && s.at(r, c) > m) m = s.at(r, c);
  }
  return m;
}

// Downsampled: the hovered texel stands for a block of cells; point at the one the rule shows
// (the block's max, or largest |v|), so the tooltip's exact value is the colour on screen.
void hoverBlockExtreme(const HeatmapSpec& spec, int colBegin, int cols, HeatmapHover& hover) {
  if (!hover.hovered || (hover.rowStep <= 1 && hover.colStep <= 1)) return;
  const Slice2D& s = *spec.slice;
  const DownsampleRule rule = downsampleRuleFor(spec.kind);
  const int rA = hover.row / hover.rowStep * hover.rowStep, rB = std::min(s.rows, rA + hover.rowStep);
  const int dataCol = colBegin + hover.col;
  const int cA = std::max(colBegin, dataCol / hover.colStep * hover.colStep);
  const int cB = std::min({s.cols, colBegin + cols, dataCol / hover.colStep * hover.colStep + hover.colStep});
  float best = -std::numeric_limits<float>::infinity();
  for (int r = rA; r < rB; ++r) {
    const float rowMax = spec.scale == ColorScale::PerRow ? rowMaxOf(spec, r) : 0.0f;
    for (int c = cA; c < cB; ++c) {
      if (blockedAt(spec, r, c)) continue;
      const float pos = colorPosition(spec.scale, spec.range, s.at(r, c), rowMax);
      if (best == -std::numeric_limits<float>::infinity() || combinePositions(best, pos, rule) != best) {
        best = pos;
        hover.row = r;
        hover.col = c - colBegin;
      }
    }
  }
}

// "{q}" and "{k}" in a cell's meaning replaced by the query's and the key's token.
std::string withTokens(std::string text, const std::string& q, const std::string& k) {
  for (const auto& [mark, token] : {std::pair<const char*, const std::string*>{"{q}", &q}, {"{k}", &k}}) {
    for (std::size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + token->size()))
      text.replace(at, 3, *token);
  }
  return text;
}

void cellTooltip(const HeatmapSpec& spec, const HeatmapHover& hover) {
  const Slice2D& s = *spec.slice;
  const int r = hover.row, c = hover.col;
  const int dataCol = spec.colBegin + c;
  const float v = s.at(r, dataCol);
  ImGui::BeginTooltip();
  if (hover.rowStep > 1 || hover.colStep > 1) {
    ImGui::TextDisabled("this pixel shows the %s of %d×%d cells; the cell it shows:",
                        downsampleRuleName(downsampleRuleFor(spec.kind)), hover.rowStep, hover.colStep);
  }
  ImGui::TextUnformatted(describeIndex(s, true, r, spec).c_str());
  ImGui::TextUnformatted(describeIndex(s, false, dataCol, spec).c_str());
  ImGui::Separator();
  if (std::isinf(v) && v < 0) {
    ImGui::Text("value  −inf   (softmax gives it weight 0)");
  } else if (std::isnan(v)) {
    ImGui::TextColored(ImVec4(1, 0.3f, 1, 1), "value  NaN   (not a number: a bug worth seeing)");
  } else {
    ImGui::Text("value  %.9g", static_cast<double>(v));
  }
  const bool tokens = s.rowAxis == "T_q" && s.colAxis == "T_k";
  // What the number means for this query/key pair, in words.
  if (tokens && std::isfinite(v) && !blockedAt(spec, r, dataCol)) {
    const std::string q = "«" + readableToken(s.rowLabels[static_cast<std::size_t>(r)], ImGui::GetFont()) + "»";
    const std::string k = "«" + readableToken(s.colLabels[static_cast<std::size_t>(dataCol)], ImGui::GetFont()) + "»";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (!spec.cellMeaning.empty()) {
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
      ImGui::TextUnformatted(withTokens(spec.cellMeaning, q, k).c_str());
      ImGui::PopTextWrapPos();
    } else if (s.stage == StageId::Weights) {
      ImGui::Text("%s puts %.1f%% of its attention on %s (each row sums to 100%%)", q.c_str(), 100.0 * v, k.c_str());
    } else if (s.stage == StageId::Scores) {
      ImGui::Text("dot product of %s's query and %s's key in this head", q.c_str(), k.c_str());
    } else if (s.stage == StageId::ScaledScores || s.stage == StageId::MaskedScores) {
      ImGui::Text("the score of %s against %s, scaled", q.c_str(), k.c_str());
    }
    ImGui::PopStyleColor();
  }
  // A derived table's blocked cell: its number never reaches a weight.
  if (!spec.cellMeaning.empty() && spec.trace && tokens && spec.trace->isBlocked(s.batchIndex, r, dataCol)) {
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "the mask blocks this key for this query: this number "
                       "never reaches a weight (its weight is 0 either way)");
    ImGui::PopTextWrapPos();
  }
  // A value the mask forces: say why (blocked key, a query with one visible key).
  if (spec.trace && tokens && !s.weight && spec.cellMeaning.empty()) {
    const std::string why = forcedCellReason(*spec.trace, s.stage, s.batchIndex, r, dataCol);
    if (!why.empty()) {
      ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "%s", why.c_str());
    } else if (s.stage != StageId::MaskedScores && s.stage != StageId::Weights &&
               spec.trace->isBlocked(s.batchIndex, r, dataCol)) {
      ImGui::TextDisabled("the mask will block this key for this query (at the Mask stage)");
    }
  }
  if (spec.trace && s.rowAxis == "T_q" && !s.weight && spec.trace->isFullyMasked(s.batchIndex, r)) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kMaskFlagColor),
                       "every key is blocked for this query: its weights and head output are 0 (its final output "
                       "row is b_o; %s)", fullyMaskedRowElsewhereText());
  }
  ImGui::EndTooltip();
}

}  // namespace mhascope::app
