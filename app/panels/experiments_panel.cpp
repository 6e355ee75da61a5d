// The Experiments tab: activation patching and direct logit attribution on the model folder in use, drawn from
// the tab's last result (state/experiments_state.hpp; its job in shell/experiments_compute.cpp computes it — never
// here). The form (texts, answers, metric, site, direction), Run / Cancel with the progress and the memory
// estimate, the tokens of both texts, the patching heatmap with its colour bar, hover words and click (the
// layer and head in the pipeline on the clean text, Compare's side B on the corrupted one), its Export…, then the
// attribution's layer × head heatmap and its other terms with the sum beside the model's own logit difference.
//
// [SECTION] index
//   words       — what patching and the attribution show
//   the form    — inputs, Run, Cancel, progress, the error
//   the tokens  — both texts' tokens, the differing positions lit
//   a grid      — one labelled heatmap with its colour bar, hover and click (patching and attribution)
//   drawExperimentsPanel
#include "panels/experiments_panel.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "attention/engine.hpp"  // formatBytes
#include "color/colormap.hpp"
#include "panels/panel.hpp"
#include "render/texture_keys.hpp"
#include "state/experiments_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/labels.hpp"
#include "widgets/text_field.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
// A named namespace, not an anonymous one: a unity batch merges its files' anonymous namespaces.
namespace experiments_tab {

using experiments::Metric;
using experiments::PatchDirection;
using experiments::PatchSite;

// ---------------------------------------------------------------------------------------------
// [SECTION] words
// ---------------------------------------------------------------------------------------------

constexpr const char* kPatchWords =
    "Activation patching runs the model on both texts, then once per site again with that site's numbers taken "
    "from the other run: denoising puts the clean run's numbers into the corrupted run, noising the corrupted "
    "run's into the clean one. Each cell is the restored fraction (patched − corrupted) / (clean − corrupted) of "
    "the metric at the last position: 0 = as the corrupted run, 1 = as the clean run. Both texts need the same "
    "number of tokens, so that position t means the same place in both.";

constexpr const char* kDlaWords =
    "Direct logit attribution (on the clean text): the final residual stream at the last position is a sum of what "
    "each component wrote there, and the final norm is made linear by freezing its scale at the clean run's own "
    "value for that row; each term's share of the logit difference is its normed vector · (unembedding[right] − "
    "unembedding[wrong]). A head's term is its own output through its rows of W_o; the terms add up to the "
    "model's own logit difference.";

// ---------------------------------------------------------------------------------------------
// [SECTION] the form
// ---------------------------------------------------------------------------------------------

const char* metricLabel(Metric m) { return m == Metric::LogitDiff ? "logit difference (right − wrong)" : "probability of the right answer"; }

void drawForm(UiContext& ctx, ExperimentsState& m) {
  const float em = ImGui::GetFontSize();
  ExperimentInputs& f = m.form;
  const float labelW = 9.0f * em;
  const auto row = [&](const char* label, const char* id, const char* hint, std::string* text, float width) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(label);
    ImGui::SameLine(labelW);
    ImGui::SetNextItemWidth(width);
    textFieldWithHint(id, hint, text);
  };
  const float wide = std::max(10.0f * em, ImGui::GetContentRegionAvail().x - labelW - em);
  row("Clean text", "##exp_clean", "When Mary and John went to the store, John gave a drink to", &f.clean, wide);
  ctx.probes.recordLastItem("exp_clean");
  row("Corrupted text", "##exp_corrupted", "the same number of tokens, the answer changed", &f.corrupted, wide);
  ctx.probes.recordLastItem("exp_corrupted");
  row("Right answer", "##exp_answer", "' Mary' or #id", &f.answer, 10.0f * em);
  ctx.probes.recordLastItem("exp_answer");
  ImGui::SameLine(0.0f, 2.0f * em);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Wrong answer");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(10.0f * em);
  if (f.metric != Metric::LogitDiff) ImGui::BeginDisabled();
  textFieldWithHint("##exp_wrong", "' John' or #id", &f.wrong);
  if (f.metric != Metric::LogitDiff) ImGui::EndDisabled();
  ctx.probes.recordLastItem("exp_wrong");

  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Metric");
  ImGui::SameLine(labelW);
  for (Metric mt : {Metric::LogitDiff, Metric::Probability}) {
    if (ImGui::RadioButton(metricLabel(mt), f.metric == mt)) f.metric = mt;
    ctx.probes.recordLastItem(std::string("exp_metric_") + experiments::metricName(mt));
    ImGui::SameLine();
  }
  ImGui::NewLine();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Site");
  ImGui::SameLine(labelW);
  ImGui::SetNextItemWidth(24.0f * em);
  const std::string shown = std::string(experiments::siteName(f.site)) + ": " + experiments::siteWords(f.site);
  if (ImGui::BeginCombo("##exp_site", shown.c_str())) {
    for (PatchSite s : experiments::allSites()) {
      const std::string item = std::string(experiments::siteName(s)) + ": " + experiments::siteWords(s);
      if (ImGui::Selectable(item.c_str(), s == f.site)) f.site = s;
      ctx.probes.recordLastItem(std::string("exp_site_") + experiments::siteName(s));
    }
    ImGui::EndCombo();
  }
  ctx.probes.recordLastItem("exp_site");
  ctx.probes.recordLabel("exp_site", experiments::siteName(f.site));
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Direction");
  ImGui::SameLine(labelW);
  for (PatchDirection d : {PatchDirection::Denoise, PatchDirection::Noise}) {
    const char* words = d == PatchDirection::Denoise ? "denoise (clean into corrupted)" : "noise (corrupted into clean)";
    if (ImGui::RadioButton(words, f.direction == d)) f.direction = d;
    ctx.probes.recordLastItem(std::string("exp_direction_") + experiments::directionName(d));
    ImGui::SameLine();
  }
  ImGui::NewLine();

  // Run: the form as it is now, for the folder in use.
  if (ImGui::Button("Run")) {
    ExperimentInputs want = f;
    want.folder = ctx.state.doc.files.model;
    m.computeAgain();  // the same inputs after an error or a cancel: run again (a shown result stays shown)
    m.wanted = want;
  }
  ctx.probes.recordLastItem("exp_run");
  if (m.busy()) {
    ImGui::SameLine();
    ImGui::ProgressBar(static_cast<float>(m.progress()), ImVec2(22.0f * em, 0.0f), m.progressText().c_str());
    ctx.probes.recordLastItem("exp_progress");
    ctx.probes.recordLabel("exp_progress", m.progressText());
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) m.requestCancel();
    ctx.probes.recordLastItem("exp_cancel");
  } else if (m.cancelled) {
    ImGui::SameLine();
    ImGui::TextDisabled("cancelled: Run starts it again");
  }
  if (!m.error.empty()) drawResultMessage(m.error, true);
  ctx.probes.recordLabel("exp_error", m.error);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] the tokens
// ---------------------------------------------------------------------------------------------

void drawTokens(const ExperimentResult& r) {
  const float em = ImGui::GetFontSize();
  const int T = static_cast<int>(r.cleanTokens.size());
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollX | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  const float h = 3.2f * ImGui::GetTextLineHeightWithSpacing() + ImGui::GetStyle().ScrollbarSize;
  if (!ImGui::BeginTable("##exp_tokens", T + 1, flags, ImVec2(0.0f, h))) return;
  ImGui::TableSetupScrollFreeze(1, 0);
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("t");
  for (int t = 0; t < T; ++t) {
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%d", t);
  }
  const auto line = [&](const char* name, const std::vector<std::string>& tokens, const std::vector<std::string>& other) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name);
    for (int t = 0; t < T; ++t) {
      ImGui::TableNextColumn();
      const std::string& tok = tokens[static_cast<std::size_t>(t)];
      if (tok != other[static_cast<std::size_t>(t)]) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, IM_COL32(200, 120, 40, 110));
      const std::string shown = readableToken(tok, ImGui::GetFont());
      ImGui::TextUnformatted(fitText(shown, 8.0f * em).c_str());
    }
  };
  line("clean", r.cleanTokens, r.corruptedTokens);
  line("corrupted", r.corruptedTokens, r.cleanTokens);
  ImGui::EndTable();
}

// ---------------------------------------------------------------------------------------------
// [SECTION] a grid
// ---------------------------------------------------------------------------------------------

struct CellPick {
  int row = -1, col = -1;
  bool clicked = false;
};

// One labelled heatmap fitted into `size` (one texture), its colour bar on [-range, range]; the tooltip is the
// caller's. Records the rect of cell (probeRow, probeCol) as `probe`_top for scripts.
CellPick drawGrid(UiContext& ctx, const char* id, const Slice2D& s, float range, int slot, std::uint64_t serial,
                  ImVec2 size, const std::string& probe, int probeRow, int probeCol) {
  HeatmapSpec spec;
  spec.slice = &s;
  spec.colormap = effectiveColormap(ctx.view, s.stage);
  spec.range = ColorRange{-range, range};
  spec.kind = DataKind::Signed;
  spec.scale = ColorScale::Linear;
  spec.showNumbers = true;
  spec.colorbarTexture = ctx.textures.colorbar(spec.colormap).imguiId();
  spec.interactive = false;
  spec.tooltip = false;
  spec.textures = &ctx.textures;
  spec.textureKey = TextureKey{kExperimentSpace | serial, kExperimentSlot + slot, 0, 0, spec.colormap, -range, range};
  const HeatmapHover hv = drawHeatmap(id, spec, nullptr, size);
  ctx.probes.recordRect(probe + "_cells", hv.plotMin, hv.plotMax);
  if (probeRow >= 0 && probeCol >= 0 && s.rows > 0 && s.cols > 0) {
    const float cw = (hv.plotMax.x - hv.plotMin.x) / static_cast<float>(s.cols);
    const float ch = (hv.plotMax.y - hv.plotMin.y) / static_cast<float>(s.rows);
    const ImVec2 a(hv.plotMin.x + cw * static_cast<float>(probeCol), hv.plotMin.y + ch * static_cast<float>(probeRow));
    ctx.probes.recordRect(probe + "_top", a, ImVec2(a.x + cw, a.y + ch));
  }
  if (s.rows > 0 && s.cols > 0) {  // cell (0, 1), in view whatever the tab's height, for scripts
    const float cw = (hv.plotMax.x - hv.plotMin.x) / static_cast<float>(s.cols);
    const float ch = (hv.plotMax.y - hv.plotMin.y) / static_cast<float>(s.rows);
    const ImVec2 a(hv.plotMin.x + cw * static_cast<float>(std::min(1, s.cols - 1)), hv.plotMin.y);
    ctx.probes.recordRect(probe + "_cell_0_1", a, ImVec2(a.x + cw, a.y + ch));
  }
  CellPick p;
  if (hv.hovered && hv.row >= 0 && hv.col >= 0) {
    p.row = hv.row;
    p.col = hv.col;
    p.clicked = hv.clicked;
  }
  return p;
}

// A click on a cell: filed, so the pipeline and Compare change (and Compare's state is made) in the update step.
void openCell(UiContext& ctx, const ExperimentsState& m, int layer, int head) {
  ctx.requests.file([&state = ctx.state, &view = ctx.view, in = m.resultKey, layer, head] {
    openExperimentCell(state, view, in, layer, head);
  });
}

std::string number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string gridTitle(const ExperimentResult& r) {
  const char* metric = r.metric == Metric::LogitDiff ? "logit difference" : "probability";
  return std::string("Activation patching (") + experiments::directionName(r.grid.direction) + "): " +
         experiments::siteWords(r.grid.site) + ", restored fraction of the " + metric;
}

void drawPatching(UiContext& ctx, ExperimentsState& m, const ExperimentResult& r, float height) {
  const experiments::PatchGrid& g = r.grid;
  ExportForm form;  // the button first, the title after it: a long title never pushes it off the tab
  form.probe = "exp_patch_export";
  form.button = "Export patching\xe2\x80\xa6";
  form.title = gridTitle(r);
  form.stem = std::string("patch_") + experiments::siteName(g.site) + "_" + experiments::directionName(g.direction);
  ImGui::PushID("patch_export");  // each form's popup its own
  drawExportForm(ctx, form, [&] {
    ExportPicture pic;
    pic.slices.push_back(r.patchSlice);
    pic.options.colormap = effectiveColormap(ctx.view, r.patchSlice.stage);
    pic.options.range = ColorRange{-1.0f, 1.0f};
    pic.options.title = gridTitle(r);
    pic.options.subtitle = r.modelType + " " + m.resultKey.folder + ", T = " + std::to_string(r.cleanTokens.size());
    return pic;
  });
  ImGui::PopID();
  ImGui::SameLine();
  ImGui::PushTextWrapPos(0.0f);  // long titles and sums wrap at the tab's edge
  ImGui::TextUnformatted(gridTitle(r).c_str());
  ImGui::PopTextWrapPos();
  std::string metricLine = std::string("metric: ") + (r.metric == Metric::LogitDiff ? "logit difference '" + r.answerText + "' − '" + r.wrongText + "'"
                                                                                    : "probability of '" + r.answerText + "'") +
                           " at the last position; clean " + number(g.cleanMetric, 4) + ", corrupted " + number(g.corruptedMetric, 4) +
                           " · rows " + g.rowAxis + ", columns " + g.colAxis + " · about " + formatBytes(r.estimateBytes) + " held";
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", metricLine.c_str());
  ImGui::PopTextWrapPos();
  const std::string top =
      r.topRow < 0 ? "no cell restores anything (clean = corrupted)"
      : r.grid.direction == experiments::PatchDirection::Noise
          ? "most needed (noising it keeps least of the clean answer): " + patchCellText(r, r.topRow, r.topCol)
          : "most restored: " + patchCellText(r, r.topRow, r.topCol);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(top.c_str());
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel("exp_top", top);
  const CellPick p = drawGrid(ctx, "##exp_patch", r.patchSlice, 1.0f, 0, m.resultSerial,
                              ImVec2(ImGui::GetContentRegionAvail().x, height), "exp_patch", r.topRow, r.topCol);
  m.hoverRow = p.row;
  m.hoverCol = p.col;
  if (p.row >= 0) {
    const auto [layer, head] = cellLayerHead(r, p.row, p.col);
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(patchCellText(r, p.row, p.col).c_str());
    if (layer >= 0) ImGui::TextDisabled("click: layer %d, head %d in the pipeline on the clean text, the corrupted text in Compare", layer, head);
    ImGui::EndTooltip();
    ctx.probes.recordLabel("exp_hovered", patchCellText(r, p.row, p.col));
    if (p.clicked && layer >= 0) openCell(ctx, m, layer, head);
  }
}

void drawAttribution(UiContext& ctx, ExperimentsState& m, const ExperimentResult& r, float height) {
  const float em = ImGui::GetFontSize();
  if (!r.dla) {
    ImGui::TextDisabled("Direct logit attribution: %s", r.dlaNote.c_str());
    return;
  }
  const experiments::LogitAttribution& a = *r.dla;
  float range = 0.0f;
  for (double v : a.head) range = std::isfinite(v) ? std::max(range, static_cast<float>(std::abs(v))) : range;
  if (!(range > 0.0f)) range = 1.0f;
  // The export, the title and the sum above the grid: in view without scrolling.
  ExportForm form;
  form.probe = "exp_dla_export";
  form.button = "Export attribution\xe2\x80\xa6";
  form.title = "Direct logit attribution per head";
  form.stem = "attribution_heads";
  ImGui::PushID("dla_export");
  drawExportForm(ctx, form, [&] {
    ExportPicture pic;
    pic.slices.push_back(r.dlaSlice);
    pic.options.colormap = effectiveColormap(ctx.view, r.dlaSlice.stage);
    pic.options.range = ColorRange{-range, range};
    pic.options.title = "Direct logit attribution of '" + r.answerText + "' − '" + r.wrongText + "' per head";
    pic.options.subtitle = r.modelType + " " + m.resultKey.folder + ", T = " + std::to_string(r.cleanTokens.size());
    return pic;
  });
  ImGui::PopID();
  ImGui::SameLine();
  ImGui::TextUnformatted(("Direct logit attribution of '" + r.answerText + "' − '" + r.wrongText + "' per head (clean text, last position)").c_str());
  const std::string terms = "token embedding " + number(a.tokenEmbedding, 4) + " · position embedding " + number(a.positionEmbedding, 4) +
                            " · final norm bias " + number(a.finalNormBias, 4);
  const std::string sum = "sum of every term " + number(a.sum, 4) + " · the model's own logit difference " + number(a.modelLogitDiff, 4) +
                          " (final norm scale frozen at the clean run's 1/σ = " + number(a.finalScale, 4) + ")";
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(terms.c_str());
  ImGui::TextUnformatted(sum.c_str());
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel("exp_dla_sum", sum);
  const float gridW = std::min(ImGui::GetContentRegionAvail().x * 0.55f, std::max(20.0f * em, 4.0f * em * static_cast<float>(a.heads)));
  ImGui::BeginGroup();
  int topLayer = -1, topHead = -1;  // the largest term, for scripts (exp_dla_top)
  for (int l = 0; l < a.layers; ++l) {
    for (int i = 0; i < a.heads; ++i) {
      if (topLayer < 0 || std::abs(a.headAt(l, i)) > std::abs(a.headAt(topLayer, topHead))) topLayer = l, topHead = i;
    }
  }
  const CellPick p = drawGrid(ctx, "##exp_dla", r.dlaSlice, range, 1, m.resultSerial, ImVec2(gridW, height), "exp_dla", topLayer, topHead);
  ImGui::EndGroup();
  m.dlaHoverLayer = p.row;
  m.dlaHoverHead = p.col;
  if (p.row >= 0) {
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(dlaCellText(r, p.row, p.col).c_str());
    ImGui::TextDisabled("click: layer %d, head %d in the pipeline on the clean text, the corrupted text in Compare", p.row, p.col);
    ImGui::EndTooltip();
    ctx.probes.recordLabel("exp_dla_hovered", dlaCellText(r, p.row, p.col));
    if (p.clicked) openCell(ctx, m, p.row, p.col);
  }
  ImGui::SameLine(0.0f, em);
  ImGui::BeginGroup();
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  if (ImGui::BeginTable("##exp_dla_terms", 5, flags, ImVec2(0.0f, height))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("layer");
    ImGui::TableSetupColumn("heads");
    ImGui::TableSetupColumn("b_o");
    ImGui::TableSetupColumn("MLP");
    ImGui::TableSetupColumn("accumulated");  // embeddings, final norm bias and every term through this layer
    ImGui::TableHeadersRow();
    for (int l = 0; l < a.layers; ++l) {
      double heads = 0;
      for (int i = 0; i < a.heads; ++i) heads += a.headAt(l, i);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("L%d", l);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(number(heads, 4).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(number(a.outputBias[static_cast<std::size_t>(l)], 4).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(number(a.mlp[static_cast<std::size_t>(l)], 4).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(number(a.accumulated[static_cast<std::size_t>(l)], 4).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::EndGroup();
}

}  // namespace experiments_tab

// One tab drawn top to bottom: the folder, the form, the tokens, the two grids.
void drawExperimentsPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  if (!st.experiments) return;  // made by the update step on the tab's first frame
  ExperimentsState& m = *st.experiments;
  ctx.probes.recordLabel("exp_state", m.busy() ? "computing" : !m.error.empty() ? "error" : m.cancelled ? "cancelled" : m.result ? "shown" : "none");
  if (st.doc.files.model.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted("No model folder is open.");
    ImGui::TextDisabled("Open a Hugging Face model folder with Open file… or start with `mhascope --model DIR`; this tab then "
                        "patches its activations between a clean and a corrupted text and attributes its answer to its heads.");
    ImGui::PopTextWrapPos();
    drawOpenFileButton(ctx);
    return;
  }
  ImGui::TextDisabled("%s", st.doc.files.model.c_str());
  const bool words = ImGui::CollapsingHeader("What these experiments show");
  ctx.probes.recordLastItem("exp_words");
  if (words) {
    textWrapped(experiments_tab::kPatchWords);
    textWrapped(experiments_tab::kDlaWords);
  }
  experiments_tab::drawForm(ctx, m);
  if (!m.result) {
    if (!m.busy() && m.error.empty()) ImGui::TextDisabled("Nothing run yet: fill in the texts and the answers, then Run.");
    return;
  }
  const ExperimentResult& r = *m.result;
  ctx.probes.recordLabel("exp_shown", std::string(experiments::siteName(m.resultKey.site)) + " " +
                                          experiments::directionName(m.resultKey.direction) + " " +
                                          experiments::metricName(m.resultKey.metric));
  ImGui::Separator();
  if (m.resultKey.folder != st.doc.files.model) ImGui::TextDisabled("(from %s)", m.resultKey.folder.c_str());
  experiments_tab::drawTokens(r);
  // Each grid as tall as its rows need (2.5 em a row, where its numbers fit, and the labels), at most half the tab;
  // the tab scrolls for the rest.
  const float avail = ImGui::GetContentRegionAvail().y;
  const float em = ImGui::GetFontSize();
  const auto heightFor = [&](int rows) {
    return std::clamp(2.5f * em * static_cast<float>(rows) + 3.0f * em, 7.0f * em, std::max(7.0f * em, 0.5f * avail));
  };
  experiments_tab::drawPatching(ctx, m, r, heightFor(r.patchSlice.rows));
  ImGui::Separator();
  experiments_tab::drawAttribution(ctx, m, r, heightFor(r.dlaSlice.rows));
}

}  // namespace mhascope::app
