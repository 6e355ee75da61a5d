// The Model tab: every layer and head of a model folder on one probe, as one grid — L rows of h
// thumbnails of each head's attention — coloured by a role score (previous-token, induction, the
// first-token sink, entropy), with the heads ranked by that role, the hovered head's scores and a
// larger view. Clicking a head opens that layer and head in the pipeline. The tab only draws
// state/model_view_state.hpp; the forward pass runs on its own worker (shell/model_view_compute).
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "render/texture_keys.hpp"
#include "analysis/head_roles.hpp"
#include "analysis/head_scores.hpp"
#include "model/families/families.hpp"
#include "model/model_view.hpp"
#include "panels/panel.hpp"
#include "state/model_view_state.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

constexpr int kRankedShown = 10;
constexpr std::size_t kTokensShown = 300;  // tokens drawn in the Tokens box; the rest are counted

ImU32 roleColor(HeadRole r, float alpha = 1.0f) {
  const int a = static_cast<int>(std::clamp(alpha, 0.0f, 1.0f) * 255.0f);
  switch (r) {
    case HeadRole::PreviousToken: return IM_COL32(255, 165, 60, a);
    case HeadRole::Induction: return IM_COL32(240, 90, 220, a);
    case HeadRole::Sink: return IM_COL32(80, 200, 255, a);
    case HeadRole::Entropy: return IM_COL32(130, 230, 120, a);
  }
  return IM_COL32(255, 255, 255, a);
}

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

std::string formatEntropy(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

std::string roleValueText(double value) {
  if (std::isnan(value)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", value);
  return buf;
}

std::string folderName(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename() == "config.json") p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() ? path : name;
}

std::string statusText(const AppState& st, const ModelViewState& m) {
  return m.status(wantedModelView(st, m), m.progressText());
}

void drawNoModel(UiContext& ctx) {
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted("No model folder is open.");
  const std::string families = model::familyNames() + " folders open (config.json's model_type " +
                               model::familyTypes(" or ") + ").";
  ImGui::TextDisabled(
      "Open a Hugging Face model folder (config.json, model.safetensors or its shards, tokenizer.json or vocab.json + "
      "merges.txt) with Open file… (pick the folder or its config.json), or start with `mhascope --model DIR`. This tab "
      "then shows every layer and head of the model on your text, finds heads by role and opens any head in the "
      "pipeline. %s",
      families.c_str());
  ImGui::PopTextWrapPos();
  drawOpenFileButton(ctx);
}

// The radio buttons of "Draw from:", in model::ProbeSource's order.
struct ProbeSourceChoice {
  model::ProbeSource source;
  const char* label;
  const char* probe;
  const char* tip;
};
constexpr ProbeSourceChoice kProbeSources[] = {
    {model::ProbeSource::Vocabulary, "the whole vocabulary", "model_probe_vocabulary",
     "every token id of the model but its special tokens: a model trained on a small alphabet never saw most of them"},
    {model::ProbeSource::TextTokens, "your text's tokens", "model_probe_alphabet",
     "the distinct tokens of your text (its alphabet), as the model's tokenizer splits it"},
    {model::ProbeSource::GivenTokens, "these tokens:", "model_probe_given",
     "the distinct tokens of the string typed here, as the model's tokenizer splits it (a merge makes several "
     "letters one token); at least two different tokens"},
};

// A labelled slider of the probe, `value` applied when the drag ends (each step would start a
// forward); `edit` is what the slider shows meanwhile (0: not yet shown).
void probeSlider(UiContext& ctx, const char* label, const std::string& probe, int& value, int& edit, int lo, int hi,
                 float width, const char* tip) {
  ImGui::TextUnformatted(label);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(width);
  if (edit == 0) edit = value;
  const SliderEdit e = dragSliderInt(("##" + probe).c_str(), &edit, lo, hi);
  ctx.probes.recordLastItem(probe);  // the frame itself: the label is drawn beside it
  if (!e.active) value = edit;
  ctx.probes.recordLabel(probe, std::to_string(value));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
}

// The repeated random probe's choices: where the run is drawn from, its period and copies.
void drawRandomProbeControls(UiContext& ctx, ModelViewState& m) {
  const float em = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Draw from:");
  for (const ProbeSourceChoice& c : kProbeSources) {
    ImGui::SameLine();
    if (ImGui::RadioButton(c.label, m.probeSource == c.source)) m.probeSource = c.source;
    ctx.probes.recordLastItem(c.probe);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", c.tip);
  }
  sameLineOrWrap(12.0f * em);
  if (!m.probeTokensShown) {
    m.probeTokensEdit = m.probeTokens;
    m.probeTokensShown = true;
  }
  ImGui::SetNextItemWidth(12.0f * em);
  ImGui::InputText("##model_probe_tokens", &m.probeTokensEdit);
  if (m.probeTokensEdit.size() > kMaxProbeTokensBytes) {  // cut at a character's start, never inside one
    std::size_t end = kMaxProbeTokensBytes;
    while (end > 0 && (static_cast<unsigned char>(m.probeTokensEdit[end]) & 0xC0) == 0x80) --end;
    m.probeTokensEdit.resize(end);
  }
  ctx.probes.recordLastItem("model_probe_tokens");
  // Applied when the field is left (or Enter): each keystroke would start a forward.
  if (ImGui::IsItemDeactivatedAfterEdit()) {
    m.probeTokens = m.probeTokensEdit;
    m.probeSource = model::ProbeSource::GivenTokens;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the tokens of this string are the set the run is drawn from (Enter applies)");

  ImGui::AlignTextToFramePadding();
  probeSlider(ctx, "period p", "model_probe_period", m.probePeriod, m.probePeriodEdit, kMinProbePeriod, kMaxProbePeriod,
              7.0f * em, "tokens in one random run (Ctrl+click types a value)");
  ImGui::SameLine();
  probeSlider(ctx, "copies", "model_probe_copies", m.probeCopies, m.probeCopiesEdit, kMinProbeCopies, kMaxProbeCopies,
              5.0f * em, "how many times the run appears in all: 2 is the run, then the same run again");
  ImGui::SameLine();
  ImGui::TextDisabled("= %d tokens", m.probePeriod * m.probeCopies);
  ImGui::SameLine();
  if (ImGui::SmallButton("new tokens")) ++m.probeSeed;
  ctx.probes.recordLastItem("model_probe_reseed");
  ImGui::SameLine();
  ImGui::TextDisabled("seed %llu", static_cast<unsigned long long>(m.probeSeed));
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("(+ the BOS if the model has one.) A run holds no token twice while the set lasts (drawn without "
                      "replacement); a period longer than the set draws it in shuffled rounds, so its tokens repeat "
                      "within the run.");
  ImGui::PopTextWrapPos();
}

// The probe, the colour, and what the worker is doing.
void drawControls(UiContext& ctx, ModelViewState& m) {
  const float em = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Run on:");
  ImGui::SameLine();
  if (ImGui::RadioButton("your text", m.probe == ModelProbe::Text)) m.probe = ModelProbe::Text;
  ctx.probes.recordLastItem("model_probe_text");
  ImGui::SameLine();
  if (ImGui::RadioButton("repeated random tokens", m.probe == ModelProbe::RepeatedRandom)) m.probe = ModelProbe::RepeatedRandom;
  ctx.probes.recordLastItem("model_probe_random");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("a run of p random tokens, then the same run again (after the BOS if the model has one): in\n"
                      "a later copy an induction head attends to the token that followed the same token last time,\n"
                      "so induction heads show even when your text has no repeats.");
  }
  if (m.probe == ModelProbe::RepeatedRandom) drawRandomProbeControls(ctx, m);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Colour by:");
  for (int r = 0; r < kHeadRoleCount; ++r) {
    const auto role = static_cast<HeadRole>(r);
    ImGui::SameLine();
    ImGui::PushStyleColor(ImGuiCol_CheckMark, roleColor(role));
    if (ImGui::RadioButton(headRoleName(role), m.colourBy == role)) m.colourBy = role;
    ImGui::PopStyleColor();
    ctx.probes.recordLastItem(std::string("model_role_") + std::to_string(r));
  }

  if (m.busy()) {
    ImGui::ProgressBar(static_cast<float>(m.progress()), ImVec2(18.0f * em, 0.0f), m.progressText().c_str());
    ctx.probes.recordLastItem("model_progress");
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) m.requestCancel();
    ctx.probes.recordLastItem("model_cancel");
    if (m.result) {
      ImGui::SameLine();
      ImGui::TextDisabled("the previous result stays until this one is ready");
    }
  } else if (!m.error.empty() || m.cancelled) {
    ImGui::PushTextWrapPos(0.0f);
    if (!m.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColor);
      ImGui::TextUnformatted(m.error.c_str());  // the window's wording: no command-line prefix
      ImGui::PopStyleColor();
    } else {
      ImGui::TextDisabled("Cancelled.");
    }
    ImGui::PopTextWrapPos();
    if (m.result) {
      ImGui::SameLine();
      ImGui::TextDisabled("The grid shows the previous result.");
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("Run again")) {
      m.computeAgain();
    }
    ctx.probes.recordLastItem("model_rerun");
  }
}

// A refused open (File → Open of a folder whose text, tokenizer or weights the pipeline cannot
// use) puts the previous model back and says why under the left controls, which may be below the
// screen's edge: said here too, where the model would have shown.
void drawOpenRefusal(UiContext& ctx) {
  AppState& st = ctx.state;
  if (st.actionError.empty()) return;
  std::string message = st.actionError;
  constexpr const char* kPrefix = "mhascope: error: ";
  if (message.rfind(kPrefix, 0) == 0) message.erase(0, std::string(kPrefix).size());
  ImGui::PushTextWrapPos(0.0f);
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorColor);
  ImGui::TextUnformatted(message.c_str());
  ImGui::PopStyleColor();
  ImGui::PopTextWrapPos();
  ctx.probes.recordLabel("model_open_error", message);
  if (ImGui::SmallButton("dismiss##model_open_error")) st.actionError.clear();
  ctx.probes.recordLastItem("model_open_error_dismiss");
}

// The tokens as text (a leading space drawn as '␣') with their ids, wrapped, in a short scrolling box.
void drawTokens(UiContext& ctx, const model::ModelView& v) {
  const float em = ImGui::GetFontSize();
  // Open at first: which tokens the model read (the BOS, how the text split) is the first question.
  if (!ImGui::CollapsingHeader(("Tokens (T = " + std::to_string(v.ids.size()) + ")###tokens").c_str(),
                               ImGuiTreeNodeFlags_DefaultOpen)) {
    return;
  }
  ImGui::BeginChild("##tokens", ImVec2(0.0f, 4.5f * em), true);
  const float right = ImGui::GetContentRegionAvail().x;
  float x = 0.0f;
  // Wrapped text cannot be clipped by rows cheaply: the first kTokensShown are drawn each frame
  // (a long text has thousands), the rest counted.
  const std::size_t shown = std::min(v.ids.size(), kTokensShown);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::string label = i < v.labels.size() ? v.labels[i] : std::string();
    const std::string id = std::to_string(v.ids[i]);
    const float w = ImGui::CalcTextSize(label.c_str()).x + ImGui::CalcTextSize(id.c_str()).x * 0.8f + 1.2f * em;
    if (i > 0 && x + w < right) ImGui::SameLine(0.0f, 0.4f * em);
    else x = 0.0f;
    x += w + 0.4f * em;
    ImGui::TextUnformatted(label.c_str());
    ImGui::SameLine(0.0f, 0.15f * em);
    ImGui::TextDisabled("%s", id.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("position %zu: token id %s", i, id.c_str());
  }
  if (shown < v.ids.size()) ImGui::TextDisabled("… and %zu more", v.ids.size() - shown);
  ctx.probes.recordLabel("model_tokens_drawn", std::to_string(shown));
  ImGui::EndChild();
}

// Offsets the profile draws: enough to see a head that looks a few tokens back, few enough that
// each bar stays wide in the side column.
constexpr int kProfileOffsetsShown = 25;

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

struct GridPick {
  int layer = -1, head = -1;  // hovered (-1: none)
  bool clicked = false;
};

// L rows × h columns of thumbnails, one texture cut per cell; a frame in the role's colour, as
// strong as the head plays it, with the score written in the corner when the cell has room.
GridPick drawGrid(UiContext& ctx, ModelViewState& m, ImVec2 size) {
  const model::ModelView& v = *m.result;
  const ModelViewState::Atlas& atlas = *m.atlas;
  const float em = ImGui::GetFontSize();
  GridPick pick;
  ImGui::BeginChild("##model_grid", size, true, ImGuiWindowFlags_HorizontalScrollbar);
  const int L = v.layers, H = v.heads;
  const double chance = roleValue(v.uniform, m.colourBy);
  const float labelW = 2.6f * em, headerH = ImGui::GetTextLineHeightWithSpacing();
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
    dl->AddText(ImVec2(origin.x, y + 0.5f * (cell - em)), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
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
  row("entropy (nats)", formatEntropy(s.entropy), formatEntropy(u.entropy), "", "model_chance_entropy");
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
    char rank[16], head[48];
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

// The side column: the hovered (else selected) head larger with its scores, the heads ranked by
// the role, and what the sink is.
void drawSide(UiContext& ctx, ModelViewState& m, const GridPick& pick, float width) {
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

}  // namespace

// Over 80 lines on purpose: one tab drawn top to bottom — what is open, the controls, the tokens,
// then the grid and its side column side by side.
void drawModelPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  if (!st.modelView) return;  // made by the update step on the tab's first frame
  ModelViewState& m = *st.modelView;
  ctx.probes.recordLabel("model_status", statusText(st, m));
  if (st.doc.files.model.empty() && !m.result) {
    drawNoModel(ctx);
    return;
  }
  const float em = ImGui::GetFontSize();
  const std::string folder = m.result ? m.resultKey.folder : st.doc.files.model;
  if (m.result) {
    const model::ModelView& v = *m.result;
    ImGui::Text("%s", folderName(folder).c_str());
    ImGui::SameLine();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("L = %d layers × h = %d heads (N = %d K/V heads) · T = %zu tokens%s · %s", v.layers, v.heads,
                        v.kvHeads, v.ids.size(),
                        m.resultKey.probe == ModelProbe::RepeatedRandom ? " of repeated random tokens" : " of your text",
                        folder.c_str());
    ImGui::PopTextWrapPos();
    if (v.probe) {  // which probe was run: source, period, copies, seed
      const std::string line = model::describeProbe(*v.probe);
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextDisabled("Probe: %s", line.c_str());
      ImGui::PopTextWrapPos();
      ctx.probes.recordLabel("model_probe_header", line);
    }
  } else {
    ImGui::Text("%s", folder.c_str());
  }
  drawOpenRefusal(ctx);
  drawControls(ctx, m);
  if (!m.result || !m.atlas) {
    if (!m.busy() && m.error.empty()) ImGui::TextDisabled("Nothing computed yet.");
    return;
  }
  drawTokens(ctx, *m.result);
  if (!m.result->textNote.empty()) {
    drawResultMessage(m.result->textNote, true);
    ctx.probes.recordLabel("model_text_note", m.result->textNote);
  }
  if (const std::string line = model::nonFiniteWarning(*m.result); !line.empty()) {
    // Said, never drawn as if the heads were quiet: dark thumbnails here are not zeros.
    drawResultMessage(line, true);
    ctx.probes.recordLabel("model_non_finite", line);
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("Hover a head: its scores and a larger view. Click: that layer and head in the pipeline. The "
                      "frame's colour and width: how far the head's score is above a uniform head's (chance), as a share of the way to 1.");
  ImGui::PopTextWrapPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float sideW = std::clamp(0.3f * avail.x, 18.0f * em, 26.0f * em);
  const GridPick pick = drawGrid(ctx, m, ImVec2(std::max(avail.x - sideW - em, 10.0f * em), avail.y));
  m.hoverLayer = pick.layer;
  m.hoverHead = pick.head;
  ctx.probes.recordLabel("model_hovered", pick.layer >= 0 ? "L" + std::to_string(pick.layer) + " h" + std::to_string(pick.head) : "none");
  if (pick.clicked) {
    m.layer = pick.layer;
    m.head = pick.head;
    openHeadInPipeline(st, ctx.view, pick.layer, pick.head);
  }
  ImGui::SameLine(0.0f, em);
  ImGui::BeginChild("##model_side", ImVec2(sideW, avail.y), false);
  drawSide(ctx, m, pick, sideW - em);
  ImGui::EndChild();
  ctx.probes.recordLabel("model_selected", "L" + std::to_string(m.layer) + " h" + std::to_string(m.head));
}

}  // namespace mhascope::app
