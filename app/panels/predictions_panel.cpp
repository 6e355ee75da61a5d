// The Predictions tab: what a model folder predicts after each position of the text (its top 5
// next tokens with their probabilities) and the logit lens (what each layer would predict if the
// model stopped there), both read from the model view's last result (state/model_view_state.hpp;
// its worker computes them). One line says how to open a model when there is none.
//
// [SECTION] index
//   reading the result — the few accessors every part below goes through
//   words              — the explanation, a lens cell's tooltip
//   the logit lens     — the L x T heatmap, its header, labels, colour bar, hover and click; its export
//   the predictions    — the T rows of top-5 bars, clipped to the rows on screen
//   drawPredictionsPanel
#include "panels/predictions_panel.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "attention/tokenizer.hpp"
#include "color/colormap.hpp"
#include "model/model_view.hpp"
#include "panels/panel.hpp"
#include "state/model_view_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/labels.hpp"
#include "widgets/export_button.hpp"
#include "widgets/lens_export.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] reading the result
// ---------------------------------------------------------------------------------------------

int positions(const model::ModelView& v) { return static_cast<int>(v.predictions.size()); }
int lensLayers(const model::ModelView& v) { return v.lens.layers; }
int lensPositions(const model::ModelView& v) { return v.lens.positions; }

// A token as the window draws it: the leading space as '␣', glyphs the font lacks as U+XXXX.
std::string shownToken(const std::string& label) { return readableToken(label, ImGui::GetFont()); }
std::string positionLabel(const model::ModelView& v, int t) {
  return t < static_cast<int>(v.labels.size()) ? v.labels[static_cast<std::size_t>(t)] : std::to_string(t);
}
std::string candidateLabel(const model::ModelView& v, int id) {
  const auto it = v.tokenTexts.find(id);
  return it != v.tokenTexts.end() ? it->second : "#" + std::to_string(id);
}

const model::LensCell& lensCell(const model::ModelView& v, int layer, int t) { return v.lens.at(layer, t); }

// What a lens cell's colour shows: p(this layer's own top-1), or p(the model's final top-1) as
// this layer sees it.
double lensValue(const model::LensCell& c, bool byFinal) { return byFinal ? c.finalTopProbability : c.top.probability; }

std::string probabilityText(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, p >= 0.001 || p == 0.0 ? "%.3f" : "%.1e", p);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] words
// ---------------------------------------------------------------------------------------------

constexpr const char* kLensWords =
    "The logit lens (nostalgebraist 2020) reads each layer's residual stream (the token's embedding plus "
    "what the layers so far have added to it) through the model's final norm and unembedding, the model's own last step: what the model "
    "would predict if it stopped after that layer. The last row is the model's own prediction. A row is a "
    "layer, a column a position; the colour is the probability of that layer's top-1 next token (or, with "
    "the toggle, of the token the model finally predicts), the token is written in the cell when it fits. "
    "Early layers often predict the input token itself or a frequent word; the answer tends to appear "
    "part way up and sharpen towards the last layer. The lens assumes every layer writes in the final "
    "layer's basis. For some models it reads poorly, above all in the early layers (the untied Llama family "
    "is a known case); the tuned lens (Belrose et al. 2023) learns one affine map per layer instead and reads "
    "them better. A model with random weights "
    "predicts nothing: its probabilities are spread thin and its top-1 tokens arbitrary.";

// The columns' axis, written where the row labels meet the column labels: not "T", which a
// token (shown in the cells and column labels) may also be.
constexpr const char* kLensAxis = "position →";

void drawWords() {
  if (ImGui::CollapsingHeader("What the logit lens shows", ImGuiTreeNodeFlags_DefaultOpen)) textWrapped(kLensWords);
}

}  // namespace

std::string lensCellText(const model::ModelView& v, int layer, int t) {
  if (layer < 0 || layer >= lensLayers(v) || t < 0 || t >= lensPositions(v)) return {};
  const int last = lensLayers(v) - 1;
  const model::LensCell& c = lensCell(v, layer, t);
  const model::LensCell& out = lensCell(v, last, t);
  std::string s = "layer " + std::to_string(layer) + (layer == last ? " (the model's output)" : "") + " · position " +
                  std::to_string(t) + " '" + displayToken(positionLabel(v, t)) + "'\n";
  s += "top-1 here: '" + displayToken(candidateLabel(v, c.top.id)) + "' (id " + std::to_string(c.top.id) +
       "), p = " + probabilityText(c.top.probability) + "\n";
  const int finalId = t < static_cast<int>(v.lens.finalTop.size()) ? v.lens.finalTop[static_cast<std::size_t>(t)] : out.top.id;
  s += "the model's final top-1: '" + displayToken(candidateLabel(v, finalId)) + "' (id " + std::to_string(finalId) +
       "), p here = " + probabilityText(c.finalTopProbability) +
       ", at the last layer = " + probabilityText(out.finalTopProbability);
  return s;
}

namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] the logit lens
// ---------------------------------------------------------------------------------------------

// The lens as cells drawn with the draw list, only those in view: columns at least half an em
// wide, so at most (view width / 0.5 em) x (rows in view) rectangles a frame whatever T is —
// a few thousand — and the token can be written into each cell once the columns are wide enough.
// Row and column labels stay pinned to the child's left and top edges while the cells scroll.
struct LensGeometry {
  float labelW = 0, headerH = 0, cellW = 0, cellH = 0;
  ImVec2 origin;  // the screen position of cell (0, 0)'s top-left
  ImVec2 clipMin, clipMax;  // the child's visible inner rectangle
  int l0 = 0, l1 = 0, t0 = 0, t1 = 0;  // the cells in view, [l0, l1) x [t0, t1)
};

LensGeometry lensGeometry(const model::ModelView& v, const PredictionsView& pv) {
  const float em = ImGui::GetFontSize();
  LensGeometry g;
  g.labelW = ImGui::CalcTextSize("layer 000 (out)").x + 0.6f * em;
  g.headerH = ImGui::GetTextLineHeight() + 0.4f * em;
  g.cellW = std::clamp(pv.lensCellEm, kLensCellMinEm, kLensCellMaxEm) * em;
  g.cellH = ImGui::GetTextLineHeight() + 0.3f * em;
  const ImVec2 start = ImGui::GetCursorScreenPos();
  g.origin = ImVec2(start.x + g.labelW, start.y + g.headerH);
  // The scrolled content: labels + T columns wide, header + L rows tall.
  ImGui::Dummy(ImVec2(g.labelW + g.cellW * static_cast<float>(lensPositions(v)),
                      g.headerH + g.cellH * static_cast<float>(lensLayers(v))));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  g.clipMin = dl->GetClipRectMin();
  g.clipMax = dl->GetClipRectMax();
  const auto first = [](float from, float origin, float size) { return static_cast<int>(std::floor((from - origin) / size)); };
  g.t0 = std::max(0, first(g.clipMin.x + g.labelW, g.origin.x, g.cellW));
  g.t1 = std::min(lensPositions(v), first(g.clipMax.x, g.origin.x, g.cellW) + 1);
  g.l0 = std::max(0, first(g.clipMin.y + g.headerH, g.origin.y, g.cellH));
  g.l1 = std::min(lensLayers(v), first(g.clipMax.y, g.origin.y, g.cellH) + 1);
  return g;
}

ImVec2 cellMin(const LensGeometry& g, int layer, int t) {
  return ImVec2(g.origin.x + g.cellW * static_cast<float>(t), g.origin.y + g.cellH * static_cast<float>(layer));
}

void drawLensCells(const model::ModelView& v, const PredictionsView& pv, const LensGeometry& g, ColormapId colormap,
                   ImDrawList* dl) {
  const float em = ImGui::GetFontSize();
  const bool words = g.cellW >= 2.2f * em;
  for (int l = g.l0; l < g.l1; ++l) {
    for (int t = g.t0; t < g.t1; ++t) {
      const model::LensCell& c = lensCell(v, l, t);
      const ImVec2 a = cellMin(g, l, t);
      const ImVec2 b(a.x + g.cellW, a.y + g.cellH);
      const RGBA8 rgba = mapValue(colormap, ColorRange{0.0f, 1.0f}, static_cast<float>(lensValue(c, pv.colourByFinal)));
      const ImU32 fill = IM_COL32(rgba.r, rgba.g, rgba.b, 255);
      dl->AddRectFilled(a, b, fill);
      if (words) {
        const std::string text = fitText(shownToken(candidateLabel(v, c.top.id)), g.cellW - 0.3f * em);
        dl->AddText(ImVec2(a.x + 0.15f * em, a.y + 0.15f * em), textColorOn(fill), text.c_str());
      }
    }
  }
  // The model's output row set off from the layers above it.
  const int last = lensLayers(v) - 1;
  if (last >= g.l0 && last < g.l1) {
    const float y = cellMin(g, last, 0).y;
    const float x1 = std::min(g.clipMax.x, cellMin(g, last, lensPositions(v)).x);
    dl->AddLine(ImVec2(g.clipMin.x, y), ImVec2(x1, y), IM_COL32(255, 255, 255, 200), 2.0f);
  }
  // The picked position and the one under the mouse, as column frames.
  const auto frameColumn = [&](int t, ImU32 color, float thickness) {
    if (t < g.t0 || t >= g.t1) return;
    const ImVec2 a = cellMin(g, 0, t);
    dl->AddRect(a, ImVec2(a.x + g.cellW, a.y + g.cellH * static_cast<float>(lensLayers(v))), color, 0, 0, thickness);
  };
  frameColumn(pv.lensHover, IM_COL32(255, 255, 255, 160), 1.0f);
  frameColumn(pv.selected, IM_COL32(255, 230, 120, 255), 2.0f);
}

// Position tokens along the top and layer names down the left, drawn over the scrolled cells.
void drawLensLabels(const model::ModelView& v, const PredictionsView& pv, const LensGeometry& g, ImDrawList* dl) {
  const float em = ImGui::GetFontSize();
  const ImU32 bg = ImGui::GetColorU32(ImGuiCol_ChildBg, 1.0f) | IM_COL32(0, 0, 0, 255);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 lit = IM_COL32(255, 230, 120, 255);
  const float top = g.clipMin.y;
  dl->AddRectFilled(ImVec2(g.clipMin.x, top), ImVec2(g.clipMax.x, top + g.headerH), bg);
  // Tokens when a column holds one; position numbers every few columns otherwise.
  const bool words = g.cellW >= 2.2f * em;
  const int every = words ? 1 : std::max(1, static_cast<int>(std::ceil(3.0f * em / g.cellW)));
  for (int t = g.t0; t < g.t1; ++t) {
    if (t % every != 0 && t != pv.selected) continue;
    const float x = cellMin(g, 0, t).x;
    const std::string label = words ? fitText(shownToken(positionLabel(v, t)), g.cellW - 0.2f * em) : std::to_string(t);
    dl->AddText(ImVec2(x + 0.1f * em, top + 0.2f * em), t == pv.selected || t == pv.lensHover ? lit : text, label.c_str());
  }
  dl->AddRectFilled(ImVec2(g.clipMin.x, top + g.headerH), ImVec2(g.clipMin.x + g.labelW, g.clipMax.y), bg);
  const int last = lensLayers(v) - 1;
  for (int l = g.l0; l < g.l1; ++l) {
    const float y = cellMin(g, l, 0).y;
    if (y + g.cellH <= top + g.headerH) continue;
    const std::string label = "layer " + std::to_string(l) + (l == last ? " (out)" : "");
    dl->AddText(ImVec2(g.clipMin.x + 0.3f * em, y + 0.15f * em), text, label.c_str());
  }
  dl->AddRectFilled(g.clipMin, ImVec2(g.clipMin.x + g.labelW, top + g.headerH), bg);
  dl->AddText(ImVec2(g.clipMin.x + 0.3f * em, top + 0.2f * em), text, kLensAxis);
}

// The lens in a child of `size` (scrolling both ways), its colour bar on the right.
void drawLens(UiContext& ctx, const model::ModelView& v, PredictionsView& pv, ImVec2 size) {
  const float em = ImGui::GetFontSize();
  const float barRoom = colorbarWidth() + 0.5f * em;
  const ImVec2 childTopLeft = ImGui::GetCursorScreenPos();
  const ImVec2 childSize(std::max(size.x - barRoom, 8.0f * em), size.y);
  ImGui::BeginChild("##lens", childSize, true, ImGuiWindowFlags_HorizontalScrollbar);
  const LensGeometry g = lensGeometry(v, pv);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  drawLensCells(v, pv, g, probabilityColormap(ctx.view), dl);
  ctx.probes.recordLabel("lens_axis", kLensAxis);
  // Hover and click: the cell under the mouse, if it is a cell (not a label).
  pv.lensHover = -1;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (ImGui::IsWindowHovered() && mouse.x >= g.clipMin.x + g.labelW && mouse.y >= g.clipMin.y + g.headerH &&
      mouse.x < g.clipMax.x && mouse.y < g.clipMax.y) {
    const int t = static_cast<int>(std::floor((mouse.x - g.origin.x) / g.cellW));
    const int l = static_cast<int>(std::floor((mouse.y - g.origin.y) / g.cellH));
    if (t >= 0 && t < lensPositions(v) && l >= 0 && l < lensLayers(v)) {
      pv.lensHover = t;
      const ImVec2 a = cellMin(g, l, t);
      dl->AddRect(a, ImVec2(a.x + g.cellW, a.y + g.cellH), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
      ImGui::BeginTooltip();
      ImGui::TextUnformatted(lensCellText(v, l, t).c_str());
      ImGui::EndTooltip();
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
        pv.selected = t;
        pv.scrollListToSelected = true;
      }
    }
  }
  drawLensLabels(v, pv, g, dl);
  ctx.probes.recordRect("lens_cells", ImVec2(g.clipMin.x + g.labelW, g.clipMin.y + g.headerH), g.clipMax);
  // A cell to click in scripts: layer 0 at the first position, if it is in view.
  if (lensPositions(v) > 0) {
    const ImVec2 a = cellMin(g, 0, std::min(lensPositions(v) - 1, 1));
    ctx.probes.recordRect("lens_cell_0_1", a, ImVec2(a.x + g.cellW, a.y + g.cellH));
  }
  ImGui::EndChild();
  // The colour bar: probabilities on [0, 1], viridis, as every probability in the window.
  ImGui::GetWindowDrawList()->AddText(ImVec2(childTopLeft.x + childSize.x + 0.5f * em, childTopLeft.y),
                                      ImGui::GetColorU32(ImGuiCol_Text), "p");
  drawColorbar(ImGui::GetWindowDrawList(), ctx.textures.colorbar(probabilityColormap(ctx.view)).imguiId(), ColorRange{0.0f, 1.0f},
               ImVec2(childTopLeft.x + childSize.x + 0.5f * em - 0.8f * em, childTopLeft.y + 1.3f * em),
               std::max(childSize.y - 1.6f * em, 2.0f * em));
}

// The lens as a picture (PNG, SVG or PDF by the core's exporter) through the window's one Export…
// form; an existing file is never replaced.
void drawLensExport(UiContext& ctx, const model::ModelView& v, const ModelViewState& m, const PredictionsView& pv) {
  ExportForm form;
  form.probe = "lens_export";
  form.button = "Export lens\xe2\x80\xa6";
  form.title = lensTitle(pv.colourByFinal);
  form.stem = pv.colourByFinal ? "logit_lens_final" : "logit_lens";
  drawExportForm(ctx, form, [&] {
    return lensPicture(v, pv.colourByFinal, probabilityColormap(ctx.view), m.resultKey.folder + " · T = " + std::to_string(positions(v)) + " tokens · " +
                                                std::to_string(lensLayers(v)) + " layers");
  });
}

// ---------------------------------------------------------------------------------------------
// [SECTION] the predictions
// ---------------------------------------------------------------------------------------------

// One candidate: a bar as long as its probability behind "token  p".
void candidateCell(const model::ModelView& v, const model::Candidate& c, float width) {
  const float em = ImGui::GetFontSize();
  const ImVec2 a = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(a, ImVec2(a.x + width * static_cast<float>(std::clamp(c.probability, 0.0, 1.0)), a.y + h),
                    IM_COL32(70, 130, 200, 150));
  const std::string p = probabilityText(c.probability);
  const float pW = ImGui::CalcTextSize(p.c_str()).x;
  const std::string token = fitText(shownToken(candidateLabel(v, c.id)), width - pW - 0.6f * em);
  ImGui::TextUnformatted(token.c_str());
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), 0.0f));
  ImGui::SetCursorScreenPos(ImVec2(a.x + width - pW, a.y));
  ImGui::TextDisabled("%s", p.c_str());
  if (ImGui::IsItemHovered() || ImGui::IsMouseHoveringRect(a, ImVec2(a.x + width, a.y + h))) {
    ImGui::SetTooltip("'%s' (id %d)\np = %s, logit %.3f", displayToken(candidateLabel(v, c.id)).c_str(), c.id,
                      probabilityText(c.probability).c_str(), static_cast<double>(c.logit));
  }
}

void drawPredictionList(UiContext& ctx, const model::ModelView& v, PredictionsView& pv, ImVec2 size) {
  const float em = ImGui::GetFontSize();
  const int T = positions(v);
  int k = 0;
  for (const auto& row : v.predictions) k = std::max(k, static_cast<int>(row.size()));
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##predictions", 3 + k, flags, size)) return;
  const float candW = 7.0f * em;
  ImGui::TableSetupScrollFreeze(3, 1);
  ImGui::TableSetupColumn("t", ImGuiTableColumnFlags_WidthFixed, 2.5f * em);
  ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthFixed, 6.0f * em);
  ImGui::TableSetupColumn("id", ImGuiTableColumnFlags_WidthFixed, 3.5f * em);
  for (int i = 0; i < k; ++i) ImGui::TableSetupColumn(("next " + std::to_string(i + 1)).c_str(), ImGuiTableColumnFlags_WidthFixed, candW);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(T);
  const bool scrollTo = pv.scrollListToSelected && pv.selected >= 0 && pv.selected < T;
  if (scrollTo) clipper.ForceDisplayRangeByIndices(pv.selected, pv.selected + 1);
  while (clipper.Step()) {
    for (int t = clipper.DisplayStart; t < clipper.DisplayEnd; ++t) {
      ImGui::PushID(t);
      ImGui::TableNextRow();
      if (t == pv.lensHover && t != pv.selected) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(255, 255, 255, 40));
      ImGui::TableSetColumnIndex(0);
      char num[16];
      std::snprintf(num, sizeof num, "%d", t);
      if (ImGui::Selectable(num, t == pv.selected, ImGuiSelectableFlags_SpanAllColumns)) pv.selected = t;
      if (t == pv.selected && scrollTo) {
        ImGui::SetScrollHereY(0.3f);
        pv.scrollListToSelected = false;
      }
      if (t == 0) ctx.probes.recordLastItem("prediction_row_0");
      ImGui::TableSetColumnIndex(1);
      ImGui::TextUnformatted(fitText(shownToken(positionLabel(v, t)), 6.0f * em).c_str());
      ImGui::TableSetColumnIndex(2);
      if (t < static_cast<int>(v.ids.size())) ImGui::TextDisabled("%d", v.ids[static_cast<std::size_t>(t)]);
      const auto& row = v.predictions[static_cast<std::size_t>(t)];
      for (int i = 0; i < static_cast<int>(row.size()); ++i) {
        ImGui::TableSetColumnIndex(3 + i);
        candidateCell(v, row[static_cast<std::size_t>(i)], candW - 0.5f * em);
      }
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
}

// No result yet: how to get one, or what is happening.
void drawNoResult(const ModelViewState* m) {
  if (m && m->busy()) {
    ImGui::TextUnformatted(("Computing the predictions: " + m->progressText()).c_str());
    ImGui::ProgressBar(static_cast<float>(m->progress()), ImVec2(20.0f * ImGui::GetFontSize(), 0));
  } else if (m && !m->error.empty()) {
    drawResultMessage("mhascope: error: " + m->error, true);
  } else {
    textWrappedDisabled("Open a model folder (File › Open a model folder, or mhascope --model DIR) to see what it "
                        "predicts after each token of your text and, layer by layer, the logit lens.");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] drawPredictionsPanel
// ---------------------------------------------------------------------------------------------

void drawPredictionsPanel(UiContext& ctx) {
  // Made by the update step on the tab's first frame: from then on the model view's worker
  // computes for this tab too.
  if (!ctx.state.modelView) {
    drawNoResult(nullptr);
    ctx.probes.recordLabel("predictions_state", "no model");
    return;
  }
  ModelViewState& m = *ctx.state.modelView;
  const std::shared_ptr<const model::ModelView> result = m.result;  // held for the frame
  if (!result || positions(*result) == 0) {
    drawNoResult(&m);
    ctx.probes.recordLabel("predictions_state", m.busy() ? "computing" : "no model");
    return;
  }
  const model::ModelView& v = *result;
  PredictionsView& pv = m.predictions;
  const float em = ImGui::GetFontSize();
  if (pv.selected >= positions(v)) pv.selected = -1;
  ctx.probes.recordLabel("predictions_state", "shown");

  ImGui::Text("%d tokens · %d layers · top %d next tokens per position", positions(v), lensLayers(v),
              v.predictions.empty() ? 0 : static_cast<int>(v.predictions.front().size()));
  if (m.busy()) {
    ImGui::SameLine(0, em);
    ImGui::TextDisabled("(computing a new result: %s)", m.progressText().c_str());
  }
  if (!m.error.empty()) drawResultMessage("mhascope: error: " + m.error + " (the last good result is shown)", true);
  if (const std::string line = model::nonFiniteWarning(v); !line.empty()) {
    drawResultMessage(line, true);
    ctx.probes.recordLabel("predictions_non_finite", line);
  }
  drawWords();

  // The lens controls: what the colour shows, the column width.
  ImGui::TextUnformatted("Logit lens");
  ImGui::SameLine(0, em);
  int byFinal = pv.colourByFinal ? 1 : 0;
  ImGui::TextDisabled("colour:");
  ImGui::SameLine();
  ImGui::RadioButton("p(this layer's top-1)", &byFinal, 0);
  ctx.probes.recordLastItem("lens_colour_own");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("How sure each layer is of its own best guess");
  ImGui::SameLine();
  ImGui::RadioButton("p(final top-1)", &byFinal, 1);
  ctx.probes.recordLastItem("lens_colour_final");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("The probability each layer gives the token the whole model finally ranks first: how early the answer appears");
  }
  pv.colourByFinal = byFinal == 1;
  ctx.probes.recordLabel("lens_colour", pv.colourByFinal ? "final" : "own");
  ImGui::SameLine(0, em);
  const float sliderW = 6.0f * em;
  ImGui::SetNextItemWidth(sliderW);
  ImGui::SliderFloat("width", &pv.lensCellEm, kLensCellMinEm, kLensCellMaxEm, "%.1f em");
  // The slider's frame alone (a fraction across it is a fraction of the range).
  ctx.probes.recordRect("lens_column_width", ImGui::GetItemRectMin(),
                        ImVec2(ImGui::GetItemRectMin().x + sliderW, ImGui::GetItemRectMax().y));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A lens column's width: tokens are written from about 2.2 em");
  pv.lensCellEm = std::clamp(pv.lensCellEm, kLensCellMinEm, kLensCellMaxEm);
  char widthText[16];
  std::snprintf(widthText, sizeof widthText, "%.1f", static_cast<double>(pv.lensCellEm));
  ctx.probes.recordLabel("lens_width", widthText);
  ImGui::SameLine(0, em);
  drawLensExport(ctx, v, m, pv);

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float rowH = ImGui::GetTextLineHeight() + 0.3f * em;
  // The lens gets the room its rows need (header, L rows, a scrollbar), at most about half the tab.
  const float lensH = std::min(ImGui::GetTextLineHeight() + 0.4f * em + rowH * static_cast<float>(lensLayers(v)) +
                                   ImGui::GetStyle().ScrollbarSize + 2.0f * ImGui::GetStyle().WindowPadding.y,
                               std::max(0.5f * avail.y, 10.0f * em));
  drawLens(ctx, v, pv, ImVec2(avail.x, lensH));

  ImGui::Spacing();
  ImGui::TextUnformatted("Next-token predictions");
  ImGui::SameLine(0, em);
  ImGui::TextDisabled("(top %d at each position, probability over the whole vocabulary; click a row to pick it)",
                      v.predictions.empty() ? 0 : static_cast<int>(v.predictions.front().size()));
  ctx.probes.recordLabel("predictions_selected", std::to_string(pv.selected));
  drawPredictionList(ctx, v, pv, ImVec2(0, std::max(ImGui::GetContentRegionAvail().y, 6.0f * em)));
}

}  // namespace mhascope::app
