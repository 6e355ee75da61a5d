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
#include <memory>
#include <string>

#include "render/texture_keys.hpp"
#include "analysis/head_roles.hpp"
#include "analysis/head_scores.hpp"
#include "model/families/families.hpp"
#include "model/model_view.hpp"
#include "model_source/model_view_page.hpp"
#include "panels/model_heads.hpp"
#include "panels/panel.hpp"
#include "state/model_view_state.hpp"
#include "state/workspace_state.hpp"
#include "widgets/export_button.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"
#include "widgets/text_field.hpp"

namespace mhascope::app {
namespace {

constexpr std::size_t kTokensShown = 300;  // tokens drawn in the Tokens box; the rest are counted

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
  textField("##model_probe_tokens", &m.probeTokensEdit);
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
  if (m.result) {
    ImGui::SameLine(0.0f, 2.0f * em);
    ExportForm form;
    form.probe = "export_model";
    form.button = "Export page\xe2\x80\xa6";
    form.title = "Export every head as one page";
    form.stem = "model_heads";
    form.pageOnly = true;
    form.tooltip = "One offline HTML file of every layer's heads, their roles and scores, with hover values";
    form.note = "The same page as: mhascope export --model DIR --view model --out F.html\n"
                "(it carries this workspace: mhascope --workspace F.html opens it again)";
    drawExportForm(ctx, form, [&] {
      ExportPicture p;
      p.page = std::make_shared<const HtmlExport>(modelViewPage(*m.result, m.resultKey.folder));
      p.workspace = workspaceFromWindow(ctx.state, ctx.view, ctx.lessons);
      return p;
    });
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
    const bool hoveredLabel = ImGui::IsItemHovered();
    ImGui::SameLine(0.0f, 0.15f * em);
    ImGui::TextDisabled("%s", id.c_str());
    // The label and the id are one token: either shows its position and, in a mixture-of-experts model, its experts.
    const bool hovered = ImGui::IsItemHovered() || hoveredLabel;
    if (hovered) {
      const std::vector<std::string> routes = model::tokenRoutingLines(v, static_cast<int>(i));
      ImGui::BeginTooltip();
      ImGui::Text("position %zu: token id %s", i, id.c_str());
      for (const std::string& line : routes) ImGui::TextUnformatted(line.c_str());
      ImGui::EndTooltip();
      std::string joined;
      for (const std::string& line : routes) joined += (joined.empty() ? "" : "; ") + line;
      ctx.probes.recordLabel("model_token_routing", joined);
    }
    ctx.probes.recordLastItem("model_token_" + std::to_string(i));
  }
  if (shown < v.ids.size()) ImGui::TextDisabled("… and %zu more", v.ids.size() - shown);
  ctx.probes.recordLabel("model_tokens_drawn", std::to_string(shown));
  ImGui::EndChild();
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
    const std::string kv = v.latentCache.empty() ? "N = " + std::to_string(v.kvHeads) + " K/V heads" : "no K/V heads: a latent";
    ImGui::TextDisabled("L = %d layers × h = %d heads (%s) · T = %zu tokens%s · %s", v.layers, v.heads, kv.c_str(),
                        v.ids.size(),
                        m.resultKey.probe == ModelProbe::RepeatedRandom ? " of repeated random tokens" : " of your text",
                        folder.c_str());
    ImGui::PopTextWrapPos();
    if (!v.latentCache.empty()) {  // latent attention: its small cache, beside what the usual K/V heads would hold
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextDisabled("Latent attention: every head's keys and values made from one latent; the cache holds %s",
                          v.latentCache.c_str());
      ImGui::PopTextWrapPos();
      ctx.probes.recordLabel("model_latent_cache", v.latentCache);
    }
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
  const GridPick pick = drawModelGrid(ctx, m, ImVec2(std::max(avail.x - sideW - em, 10.0f * em), avail.y));
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
  drawModelSide(ctx, m, pick, sideW - em);
  ImGui::EndChild();
  ctx.probes.recordLabel("model_selected", "L" + std::to_string(m.layer) + " h" + std::to_string(m.head));
}

}  // namespace mhascope::app
