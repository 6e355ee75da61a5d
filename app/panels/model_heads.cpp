// The Model tab's heads (model_heads.hpp): the grid of thumbnails and the side column beside it.
#include "panels/model_heads.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "analysis/head_roles.hpp"
#include "analysis/head_scores.hpp"
#include "model/model_view.hpp"
#include "render/texture_keys.hpp"
#include "util/format.hpp"
#include "widgets/colors.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

ImU32 roleColor(HeadRole r, float alpha) {
  const int a = static_cast<int>(std::clamp(alpha, 0.0f, 1.0f) * 255.0f);
  switch (r) {
    case HeadRole::PreviousToken: return IM_COL32(255, 165, 60, a);
    case HeadRole::Induction: return IM_COL32(240, 90, 220, a);
    case HeadRole::Sink: return IM_COL32(80, 200, 255, a);
    case HeadRole::Entropy: return IM_COL32(130, 230, 120, a);
  }
  return IM_COL32(255, 255, 255, a);
}

namespace {

constexpr int kRankedShown = 10;
// Offsets the profile draws: enough to see a head that looks a few tokens back, few enough that
// each bar stays wide in the side column.
constexpr int kProfileOffsetsShown = 25;

// How strongly a head plays the role, 0 … 1, for the frame's weight, measured from chance (a
// uniform causal head's score on the same tokens, `chance`): (score − chance) / (1 − chance), or
// for the entropy the sharpness 1 − H / even (even: that head's entropy, ln(T!) / T).
float roleStrength(HeadRole r, double value, double chance) {
  if (std::isnan(value) || std::isnan(chance)) return 0.0f;
  if (r == HeadRole::Entropy) {
    return chance > 0 ? static_cast<float>(std::clamp(1.0 - value / chance, 0.0, 1.0)) : 0.0f;
  }
  return static_cast<float>(aboveChance(value, chance));
}

std::string roleValueText(double value) { return std::isnan(value) ? "n/a" : formatFixed(value, 2); }

// A head's offset profile (model::offsetProfile: its mean weight d = t − k positions back) as bars
// for d = 0 … min(T − 1, 24) on the weights' 0 … 1 scale, the strongest in the role colour and named
// below. `compact`: the grid's tooltip (a sparkline and the sentence, no axis).
void drawOffsetProfile(UiContext& ctx, const model::HeadView& hv, int T, float width, bool compact) {
  const float em = ImGui::GetFontSize();
  const int shown = std::min(static_cast<int>(hv.offsets.size()), kProfileOffsetsShown);
  if (shown <= 0) return;
  const int best = model::strongestOffset(hv.offsets, T);
  if (!compact) ImGui::TextUnformatted("Mean weight by offset d = t − k");
  const float h = (compact ? 2.0f : 4.0f) * em;
  const float barW = std::max(2.0f, std::floor(width / static_cast<float>(shown)));
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p0, ImVec2(p0.x + barW * static_cast<float>(shown), p0.y + h), IM_COL32(30, 30, 30, 255));
  for (int d = 0; d < shown; ++d) {
    const float w = std::clamp(hv.offsets[static_cast<std::size_t>(d)], 0.0f, 1.0f);
    const float x = p0.x + barW * static_cast<float>(d);
    const ImU32 col = d == best ? IM_COL32(255, 210, 90, 255) : IM_COL32(150, 170, 200, 255);
    dl->AddRectFilled(ImVec2(x + 1.0f, p0.y + h * (1.0f - w)), ImVec2(x + barW - 1.0f, p0.y + h), col);
  }
  ImGui::Dummy(ImVec2(barW * static_cast<float>(shown), h));
  if (!compact) {
    ctx.probes.recordLastItem("model_offsets_bars");
    if (ImGui::IsItemHovered()) {
      const int d = static_cast<int>((ImGui::GetIO().MousePos.x - p0.x) / barW);
      if (d >= 0 && d < shown) {
        const std::string what = d == 0 ? "the token itself" : d == 1 ? "the previous token" : std::to_string(d) + " tokens back";
        ImGui::SetTooltip("offset %d (%s): %.3f mean weight over the %zu queries t >= %d", d, what.c_str(),
                          static_cast<double>(hv.offsets[static_cast<std::size_t>(d)]), hv.offsets.size() - static_cast<std::size_t>(d), d);
      }
    }
    // The axis: d at both ends.
    const float x0 = ImGui::GetCursorPosX();
    ImGui::TextDisabled("d = 0");
    const std::string last = "d = " + std::to_string(shown - 1);
    const float right = x0 + barW * static_cast<float>(shown) - ImGui::CalcTextSize(last.c_str()).x;
    if (right > ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + em) ImGui::SameLine(right);
    else ImGui::SameLine();
    ImGui::TextDisabled("%s", last.c_str());
  }
  const std::string sentence = model::offsetSentence(hv.offsets, T);
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
  ImGui::TextUnformatted(sentence.c_str());
  if (compact) {  // the strongest few in numbers: the sparkline's bars are small
    std::string top = "strongest offsets:";
    for (int d : model::strongestOffsets(hv.offsets, T, 3)) {
      char buf[48];
      std::snprintf(buf, sizeof buf, " %d (%.2f)", d, static_cast<double>(hv.offsets[static_cast<std::size_t>(d)]));
      top += buf;
    }
    // Unwrapped: a wrap may break after a decimal point ("(0." / "09)"); the line is short.
    ImGui::PushTextWrapPos(-1.0f);
    ImGui::TextDisabled("%s", top.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!compact) {
    ImGui::TextDisabled("bar height: the mean over the queries t ≥ d of the weight on key t − d, 0 … 1; the strongest in "
                        "yellow (of the offsets d ≤ T / 2, each averaged over half the queries or more)");
  }
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel(compact ? "model_tooltip_offsets" : "model_offsets", sentence);
}

// The grid's hover: which head, and its offset profile as a sparkline with the sentence.
void drawHeadTooltip(UiContext& ctx, const model::ModelView& v, int l, int h) {
  ImGui::BeginTooltip();
  ImGui::Text("layer %d, head %d", l, h);
  drawOffsetProfile(ctx, v.head(l, h), static_cast<int>(v.ids.size()), 14.0f * ImGui::GetFontSize(), true);
  ImGui::EndTooltip();
}

}  // namespace

GridPick drawModelGrid(UiContext& ctx, ModelViewState& m, ImVec2 size) {
  const model::ModelView& v = *m.result;
  const ModelViewState::Atlas& atlas = *m.atlas;
  const float em = ImGui::GetFontSize();
  GridPick pick;
  ImGui::BeginChild("##model_grid", size, true, ImGuiWindowFlags_HorizontalScrollbar);
  const int L = v.layers, H = v.heads;
  const double chance = roleValue(v.uniform, m.colourBy);
  // The row labels: the layer and, under it, its mask in force ("W 4", "full", "no pos").
  float tagW = 0.0f;
  for (const model::LayerMask& lm : v.layerMasks) tagW = std::max(tagW, ImGui::CalcTextSize(lm.tag.c_str()).x);
  const float labelW = std::max(2.6f * em, tagW + 0.6f * em), headerH = ImGui::GetTextLineHeightWithSpacing();
  const float gap = std::max(2.0f, 0.2f * em);
  // Cells fit the box when they can, within 2.5 … 12 em; more heads than fit scroll.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float fit = std::min((avail.x - labelW) / static_cast<float>(H), (avail.y - headerH) / static_cast<float>(L)) - gap;
  const float cell = std::clamp(fit, 2.5f * em, 12.0f * em);
  const float pitch = cell + gap;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 grid0(origin.x + labelW, origin.y + headerH);
  ImDrawList* dl = ImGui::GetWindowDrawList();

  // The whole grid under one invisible button: which cell the mouse is over is arithmetic, so a
  // 32 × 32 grid costs no per-cell widgets.
  const ImVec2 total(labelW + static_cast<float>(H) * pitch, headerH + static_cast<float>(L) * pitch);
  ImGui::InvisibleButton("##cells", total);
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  if (hovered) {
    const ImVec2 mp = ImGui::GetIO().MousePos;
    const int h = static_cast<int>(std::floor((mp.x - grid0.x) / pitch));
    const int l = static_cast<int>(std::floor((mp.y - grid0.y) / pitch));
    if (l >= 0 && l < L && h >= 0 && h < H) {
      pick.layer = l;
      pick.head = h;
      pick.clicked = clicked;
    }
  }

  const HeatmapTexture tex = ctx.textures.get(
      TextureKey{kModelAtlasSpace | m.resultSerial, kModelAtlasSlot, 0, -1, probabilityColormap(ctx.view), 0.0f, 1.0f}, atlas.values.data(),
      atlas.rows(), atlas.cols);
  const ImVec2 clipMin = ImGui::GetWindowPos(), clipMax(clipMin.x + ImGui::GetWindowWidth(), clipMin.y + ImGui::GetWindowHeight());
  for (int h = 0; h < H; ++h) {
    const float x = grid0.x + static_cast<float>(h) * pitch;
    if (x + cell < clipMin.x || x > clipMax.x) continue;
    char buf[16];
    std::snprintf(buf, sizeof buf, "h%d", h);
    dl->AddText(ImVec2(x, origin.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
  }
  const int pixelRows = atlas.rows(), pixelCols = atlas.cols;
  for (int l = 0; l < L; ++l) {
    const float y = grid0.y + static_cast<float>(l) * pitch;
    if (y + cell < clipMin.y || y > clipMax.y) continue;
    char buf[16];
    std::snprintf(buf, sizeof buf, "L%d", l);
    const bool tagged = static_cast<std::size_t>(l) < v.layerMasks.size();
    dl->AddText(ImVec2(origin.x, y + 0.5f * cell - (tagged ? em : 0.5f * em)), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
    if (tagged) {
      dl->AddText(ImVec2(origin.x, y + 0.5f * cell), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  v.layerMasks[static_cast<std::size_t>(l)].tag.c_str());
    }
    for (int h = 0; h < H; ++h) {
      const ImVec2 p0(grid0.x + static_cast<float>(h) * pitch, y), p1(p0.x + cell, p0.y + cell);
      if (p1.x < clipMin.x || p0.x > clipMax.x) continue;
      // This head's block of the picture (the texture's u1, v1: its texels may not fill the storage).
      const float u0 = tex.u1 * static_cast<float>(h * atlas.thumbCols) / static_cast<float>(pixelCols);
      const float u1 = tex.u1 * static_cast<float>((h + 1) * atlas.thumbCols) / static_cast<float>(pixelCols);
      const float v0 = tex.v1 * static_cast<float>(l * atlas.thumbRows) / static_cast<float>(pixelRows);
      const float v1 = tex.v1 * static_cast<float>((l + 1) * atlas.thumbRows) / static_cast<float>(pixelRows);
      dl->AddImage(tex.imguiId, p0, p1, ImVec2(u0, v0), ImVec2(u1, v1));
      const double value = roleValue(v.head(l, h).scores, m.colourBy);
      const float strength = roleStrength(m.colourBy, value, chance);
      const float thick = 1.0f + 3.0f * strength * std::max(1.0f, em / 13.0f);
      dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), roleColor(m.colourBy, 0.25f + 0.75f * strength), 0.0f, 0, thick);
      if (cell >= 3.0f * em) {
        // The score on a dark badge so it reads on any colour, in the top-right corner: above the
        // diagonal, which the causal mask leaves empty, so it covers no weight.
        const std::string text = roleValueText(value);
        const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
        dl->AddRectFilled(ImVec2(p1.x - ts.x - 4, p0.y), ImVec2(p1.x, p0.y + ts.y + 2), IM_COL32(20, 20, 20, 210));
        dl->AddText(ImVec2(p1.x - ts.x - 2, p0.y + 1), roleColor(m.colourBy), text.c_str());
      }
      if (l == m.layer && h == m.head) dl->AddRect(ImVec2(p0.x - 3, p0.y - 3), ImVec2(p1.x + 3, p1.y + 3), IM_COL32(255, 255, 255, 255), 0.0f, 0, 2.0f);
      if (l == pick.layer && h == pick.head) dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 160), 0.0f, 0, 1.0f);
      ctx.probes.recordRect("model_cell_" + std::to_string(l) + "_" + std::to_string(h), p0, p1);
    }
  }
  if (pick.layer >= 0) drawHeadTooltip(ctx, v, pick.layer, pick.head);
  ImGui::EndChild();
  return pick;
}

namespace {

// Each score beside a uniform causal head's on the same tokens (v.uniform, the chance level) and
// the ratio to it, as a table so the columns line up in a narrow side column.
void drawScores(UiContext& ctx, const model::ModelView& v, int l, int h) {
  const ::mhascope::HeadScores& s = v.head(l, h).scores;
  const ::mhascope::HeadScores& u = v.uniform;
  if (!ImGui::BeginTable("##model_scores", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_NoPadOuterX)) return;
  ImGui::TableSetupColumn("score");
  ImGui::TableSetupColumn("head");
  ImGui::TableSetupColumn("uniform");
  ImGui::TableSetupColumn("×");
  ImGui::TableHeadersRow();
  const auto row = [&](const char* label, const std::string& value, const std::string& chance, const std::string& ratio,
                       const char* probe) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(label);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value.c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", chance.c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", ratio.c_str());
    ctx.probes.recordLabel(probe, value + " uniform " + chance + " " + ratio);
  };
  const auto ratioOf = [](double value, double chance) {
    if (!(chance > 0)) return std::string("n/a");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f×", value / chance);
    return std::string(buf);
  };
  const auto three = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", x);
    return std::string(buf);
  };
  row("previous-token", three(s.prevToken), three(u.prevToken), ratioOf(s.prevToken, u.prevToken), "model_chance_prev");
  if (s.inductionQueries > 0) {
    row("induction", three(s.induction), three(u.induction), ratioOf(s.induction, u.induction), "model_chance_induction");
  } else {
    row("induction", "n/a", "n/a", "no repeats", "model_chance_induction");
  }
  if (s.copying) {
    // A head's output ranks one token of V first: chance is about 1/V, not a uniform head's score.
    row("copying", three(*s.copying), "~1/V", "", "model_chance_copying");
  } else {
    row("copying", "not checked", "~1/V", "", "model_chance_copying");
  }
  row("sink (first)", three(s.sink), three(u.sink), ratioOf(s.sink, u.sink), "model_chance_sink");
  row("self", three(s.self), three(u.self), ratioOf(s.self, u.self), "model_chance_self");
  // Entropy is better low: its ratio would read backwards, so only the uniform value is given.
  row("entropy (nats)", formatFixed(s.entropy, 2), formatFixed(u.entropy, 2), "", "model_chance_entropy");
  ImGui::EndTable();
  if (s.inductionQueries > 0) {
    ImGui::TextDisabled("induction and copying over %lld queries", static_cast<long long>(s.inductionQueries));
  }
  ImGui::PushTextWrapPos(0.0f);
  const std::string role = "role: " + roleOf(roleScoresOf(s, l));
  textWrapped(role);
  ctx.probes.recordLabel("model_head_role", role);
  if (!s.copying) {
    char why[96];
    if (s.inductionQueries == 0) std::snprintf(why, sizeof why, "copying not checked: no token repeats");
    else if (l < 1) std::snprintf(why, sizeof why, "copying not checked: layer 0 (it cannot be an induction head)");
    else std::snprintf(why, sizeof why, "copying not checked: prefix matching below %.2f", kRoleThreshold);
    textWrappedDisabled(why);
  }
  ImGui::TextDisabled("uniform: the score of a head that spreads every row evenly over the t + 1 keys it sees, on these "
                      "tokens (chance level); ×: this head's score over it.");
  ImGui::PopTextWrapPos();
}

std::string scoresLine(const model::ModelView& v, int l, int h) {
  const ::mhascope::HeadScores& s = v.head(l, h).scores;
  char buf[160];
  std::snprintf(buf, sizeof buf, "L%d h%d prev %.3f induction %s sink %.3f entropy %.2f", l, h, s.prevToken,
                s.inductionQueries > 0 ? std::to_string(s.induction).substr(0, 5).c_str() : "n/a", s.sink, s.entropy);
  return buf;
}

// The heads ranked by the colour's role: for a role with a rule, the heads that pass it first, each
// with the numbers the rule reads, then the others with why they do not pass; every line wrapped to
// the column, so nothing is cut at any window width.
void drawRanked(UiContext& ctx, ModelViewState& m, float width) {
  const model::ModelView& v = *m.result;
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(roleColor(m.colourBy)), "Heads by %s", headRoleName(m.colourBy));
  const std::string order = roleHighIsStrong(m.colourBy) ? "highest first" : "lowest first: the sharpest";
  const std::string rule = roleRuleText(m.colourBy);
  char chance[96];
  std::snprintf(chance, sizeof chance, "a uniform head (chance) scores %s here", roleValueText(roleValue(v.uniform, m.colourBy)).c_str());
  const std::string heading = (roleHasRule(m.colourBy) ? rule + "; passing heads first, each group " + order : order) +
                              " · " + chance;
  ImGui::TextDisabled("%s", wrapAtSpaces(heading, width).c_str());
  ctx.probes.recordLabel("model_ranked_heading", heading);
  const std::vector<RankedHead> ranked = headsByRole(v, m.colourBy, kRankedShown);
  if (ranked.empty()) ImGui::TextDisabled("%s", wrapAtSpaces("n/a: the text repeats no token; try repeated random tokens", width).c_str());
  const bool nonePasses = roleHasRule(m.colourBy) && !ranked.empty() && !ranked.front().passes;
  if (nonePasses) {
    const std::string none = noHeadPassesText(m.colourBy) + ".";
    ImGui::TextUnformatted(wrapAtSpaces(none, width).c_str());
    ctx.probes.recordLabel("model_ranked_none", none);
  }
  if (m.colourBy == HeadRole::Induction && !v.copyingEveryHead) {
    ImGui::TextDisabled("%s", wrapAtSpaces("Copying reads the whole vocabulary per query: measured only for heads in layer 1 "
                                           "or later whose prefix matching passes.", width).c_str());
  }
  std::string rankedText;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const RankedHead& r = ranked[i];
    ImGui::PushID(static_cast<int>(i));
    char rank[24], head[48];
    std::snprintf(rank, sizeof rank, "%2zu.  ", i + 1);
    std::snprintf(head, sizeof head, "layer %d, head %d: ", r.layer, r.head);
    // One selectable as tall as the wrapped line (at spaces only: never inside a number), the line drawn over it.
    const std::string line = wrapAtSpaces(rank + (head + r.verdict), width);
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const ImVec2 size = ImGui::CalcTextSize(line.c_str());
    if (ImGui::Selectable("##rank", r.layer == m.layer && r.head == m.head, 0, ImVec2(width, size.y))) {
      m.layer = r.layer;
      m.head = r.head;
    }
    ctx.probes.recordLastItem("model_rank_" + std::to_string(i));
    const ImU32 colour = r.passes ? roleColor(m.colourBy) : ImGui::GetColorU32(roleHasRule(m.colourBy) ? ImGuiCol_TextDisabled : ImGuiCol_Text);
    dl->AddText(at, colour, line.c_str());
    ctx.probes.recordLabel("model_rank_text_" + std::to_string(i), head + r.verdict);
    ImGui::PopID();
    rankedText += (i ? "; " : "") + std::string("L") + std::to_string(r.layer) + " h" + std::to_string(r.head);
  }
  ctx.probes.recordLabel("model_ranked", rankedText);
}

}  // namespace

// The side column: the hovered (else selected) head larger with its scores, the heads ranked by
// the role, and what the sink is.
void drawModelSide(UiContext& ctx, ModelViewState& m, const GridPick& pick, float width) {
  const model::ModelView& v = *m.result;
  const ModelViewState::Atlas& atlas = *m.atlas;
  const float em = ImGui::GetFontSize();
  const bool hovering = pick.layer >= 0;
  const int l = hovering ? pick.layer : m.layer, h = hovering ? pick.head : m.head;
  const ImVec2 column = ImGui::GetWindowPos();  // the side column's child window, for scripts that scroll it
  ctx.probes.recordRect("model_side", column, ImVec2(column.x + ImGui::GetWindowWidth(), column.y + ImGui::GetWindowHeight()));
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(h)), "layer %d, head %d", l, h);
  ImGui::SameLine();
  ImGui::TextDisabled(hovering ? "(hovered; click: pipeline)" : "(selected)");
  ctx.probes.recordLabel("model_shown_head", scoresLine(v, l, h));
  if (static_cast<std::size_t>(l) < v.layerMasks.size()) {
    const std::string mask = "mask in force: " + v.layerMasks[static_cast<std::size_t>(l)].words;
    textWrappedDisabled(mask);
    ctx.probes.recordLabel("model_layer_mask", mask);
  }
  std::string rules;
  for (const std::string& line : model::headScoreRuleLines(v, l, h)) {
    textWrappedDisabled(line);
    rules += (rules.empty() ? "" : "; ") + line;
  }
  ctx.probes.recordLabel("model_head_score_rules", rules);
  if (const std::string routing = model::routingSummary(v, l); !routing.empty()) {  // a mixture-of-experts layer
    textWrappedDisabled(routing + "; hover a token above for the experts it went to");
    ctx.probes.recordLabel("model_layer_routing", routing);
  }
  const HeatmapTexture tex = ctx.textures.get(
      TextureKey{kModelAtlasSpace | m.resultSerial, kModelAtlasSlot, 0, -1, probabilityColormap(ctx.view), 0.0f, 1.0f}, atlas.values.data(),
      atlas.rows(), atlas.cols);
  const float side = std::min(width - colorbarWidth() - 1.0f * em, 16.0f * em);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float u0 = tex.u1 * static_cast<float>(h * atlas.thumbCols) / static_cast<float>(atlas.cols);
  const float u1 = tex.u1 * static_cast<float>((h + 1) * atlas.thumbCols) / static_cast<float>(atlas.cols);
  const float v0 = tex.v1 * static_cast<float>(l * atlas.thumbRows) / static_cast<float>(atlas.rows());
  const float v1 = tex.v1 * static_cast<float>((l + 1) * atlas.thumbRows) / static_cast<float>(atlas.rows());
  ImGui::GetWindowDrawList()->AddImage(tex.imguiId, p0, ImVec2(p0.x + side, p0.y + side), ImVec2(u0, v0), ImVec2(u1, v1));
  drawColorbar(ImGui::GetWindowDrawList(), ctx.textures.colorbar(probabilityColormap(ctx.view)).imguiId(), ColorRange{0.0f, 1.0f},
               ImVec2(p0.x + side + 0.4f * em, p0.y), side);
  ImGui::Dummy(ImVec2(side, side));
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
  ImGui::TextDisabled("query rows × key columns, T = %zu (shown in %d × %d blocks, each the largest weight in it); "
                      "colour: the weight itself on the bar's 0 … 1, the same scale for every row and head, so a row "
                      "spread over many keys is dark and a sharp one bright", v.ids.size(), atlas.thumbRows, atlas.thumbCols);
  ImGui::PopTextWrapPos();
  drawScores(ctx, v, l, h);
  drawOffsetProfile(ctx, v.head(l, h), static_cast<int>(v.ids.size()), width, false);
  if (ImGui::Button("Open in the pipeline")) openHeadInPipeline(ctx.state, ctx.view, m.layer, m.head);
  ctx.probes.recordLastItem("model_open_pipeline");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d, head %d: every stage of its attention", m.layer, m.head);

  ImGui::Separator();
  drawRanked(ctx, m, width);

  ImGui::Separator();
  if (ImGui::CollapsingHeader("The attention sink")) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
    ImGui::TextUnformatted(
        "Most heads of a trained model put much of their weight on the first token, whatever it is. Softmax must give "
        "each query's weight somewhere; the first key, which every query sees, becomes a no-op place to park it: the "
        "attention sink. Colour by sink to see which heads do it. The Windows lesson's --sinks keeps the first S keys "
        "visible inside a sliding window for this reason (StreamingLLM): drop them and such heads lose their parking "
        "place, and the model's outputs degrade.");
    ImGui::TextDisabled("A model with random weights has learnt no roles: its grid shows little "
                        "structure.");
    ImGui::PopTextWrapPos();
  }
}

}  // namespace mhascope::app
