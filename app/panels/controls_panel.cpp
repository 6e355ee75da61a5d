// Controls: every knob of the configuration. Each change marks the config dirty; App validates
// it, recomputes (on a worker when big) and keeps the previous picture while the new one is
// made or when the new config is invalid (then the reason and the nearest valid h are shown).
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <utility>
#include <string>

#include "color/see_as.hpp"
#include "attention/engine.hpp"
#include "attention/tokenizer.hpp"
#include "model_source/model_source.hpp"
#include "panels/controls_sections.hpp"
#include "panels/panel.hpp"
#include "widgets/workspace_actions.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/labels.hpp"
#include "widgets/wrapped_text.hpp"
#include "widgets/text_field.hpp"
#include "io/presets.hpp"

namespace mhascope::app {

void helpMarker(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void sectionTitle(const char* text) {
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextUnformatted(text);
  ImGui::PopStyleColor();
  ImGui::Separator();
}

std::string fixedReason(const AppState& st, const char* control) {
  if (st.doc.trainedLayer) return kFixedByTrainedLayer;
  return fixedByFiles(st.doc.files, control);
}

FixedSection::FixedSection(std::string why) : reason(std::move(why)) { ImGui::BeginDisabled(!reason.empty()); }

FixedSection::~FixedSection() {
  ImGui::EndDisabled();
  if (!reason.empty() && reason != kFixedByTrainedLayer) textWrappedDisabled(reason);
}

namespace {



void presetPicker(UiContext& ctx) {
  AppState& st = ctx.state;
  // The box shows a path's file name, cut with "…" before the arrow (ImGui would run the text
  // under it); the whole name is in the tooltip.
  std::string shown = st.doc.presetName;
  if (const auto slash = shown.rfind('/', shown.find(" (")); slash != std::string::npos) shown = shown.substr(slash + 1);
  const ImGuiStyle& style = ImGui::GetStyle();
  shown = fitText(shown, ImGui::CalcItemWidth() - ImGui::GetFrameHeight() - 2.0f * style.FramePadding.x);
  ctx.probes.recordLabel("preset_box", shown);
  ctx.probes.recordLabel("preset_name", st.doc.presetName);  // whole, as the tooltip shows it
  if (ImGui::BeginCombo("preset", shown.c_str())) {
    for (const std::string& name : presetNames()) {
      ImGui::PushID(name.c_str());
      if (ImGui::Selectable(name.c_str(), name == st.doc.presetName)) {
        auto preset = loadPreset(name);
        if (!preset) {
          st.actionError = preset.error().message;
        } else {
          st.doc.config = std::move(preset.value());
          st.doc.presetName = name;
          notePresetRead(st, name);
          st.doc.files = {};  // a preset is a text + seed model
          st.doc.trainedLayer.reset();
          st.doc.beforeOpen.reset();
          st.doc.configDirty = true;
          ctx.view.batch = 0;
          ctx.view.head = 0;
          ctx.view.zoom = {};
        }
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  ctx.probes.recordLastFrame("preset");
  if (ImGui::IsItemHovered()) {
    const std::string tip = st.doc.presetName + (st.doc.config.description.empty() ? "" : "\n" + st.doc.config.description);
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
    ImGui::TextUnformatted(tip.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
  if (ImGui::Button("Reset to defaults")) resetToDefaults(st, ctx.view);
  ctx.probes.recordLastItem("reset_defaults");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("The default preset and view. The window restores the last session at launch; this is the "
                      "way back to a clean start.");
  }
}

// The tokens as chips, so typing shows at once how the text is cut into tokens (made by the
// update step: Document::chips).
void tokenChips(const TokenChips& chips) {
  if (chips.items == 0) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "enter at least one token");
    return;
  }
  const std::vector<std::string>& tokens = chips.shown;
  const std::size_t count = chips.count, shown = tokens.size();
  textWrappedDisabled(formatText("%zu sentence%s; the first one has %zu token%s:", chips.items, chips.items == 1 ? "" : "s",
                                 count, count == 1 ? "" : "s"));
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (std::size_t i = 0; i < shown; ++i) {
    ImGui::PushID(static_cast<int>(i));
    const std::string label = fitText(readableToken(tokens[i], ImGui::GetFont()), ImGui::GetFontSize() * 8);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    const ImVec2 pad(ImGui::GetFontSize() * 0.3f, 1.0f);
    if (i > 0) {
      ImGui::SameLine(0, ImGui::GetFontSize() * 0.25f);
      if (ImGui::GetCursorScreenPos().x + ts.x + 2 * pad.x > right) ImGui::NewLine();
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(p, ImVec2(p.x + ts.x + 2 * pad.x, p.y + ts.y + 2 * pad.y), IM_COL32(60, 80, 110, 255), 3.0f);
    dl->AddText(ImVec2(p.x + pad.x, p.y + pad.y), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
    ImGui::Dummy(ImVec2(ts.x + 2 * pad.x, ts.y + 2 * pad.y));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("token %zu: %s", i, readableToken(tokens[i], ImGui::GetFont()).c_str());
    ImGui::PopID();
  }
  if (shown < count) ImGui::TextDisabled("… and %zu more", count - shown);
}

// With a model folder the text's tokens are the model's tokenizer's: their count is the shown
// layer's T once the pipeline has computed this text (until then, said so).
void modelTokenCount(UiContext& ctx) {
  const AppState& st = ctx.state;
  const ShownResult& shown = st.shown;
  std::string line;
  if (shown.hasTrace() && !st.doc.configDirty && !st.compute.computing && shown.traceConfig.text == st.doc.config.text) {
    line = std::to_string(shown.trace.tq) + " token" + (shown.trace.tq == 1 ? "" : "s") + " through the model's tokenizer";
  } else {
    line = "tokenized by the model when computed";
  }
  ImGui::TextDisabled("%s", line.c_str());
  ctx.probes.recordLabel("text_tokens", line);
}


// The engine's messages name the command line's flag; the window's budget is the control above.
std::string windowWording(std::string message) {
  for (const char* flag : {"(--memory-budget MiB)", "--memory-budget"}) {
    if (auto at = message.find(flag); at != std::string::npos) {
      message.replace(at, std::string(flag).size(), "(the memory budget under Sizes)");
      break;
    }
  }
  return message;
}

// The most one computation may hold; typed in MiB and applied on Enter or the +/- buttons (each
// keystroke of "2048" would otherwise recompute, or refuse, at 2, 20 and 204 MiB).
bool memoryBudgetControl(UiContext& ctx) {
  AppState& st = ctx.state;
  if (st.doc.memoryBudgetBytes == 0) return false;  // in-process tests: the config's own
  constexpr int kMinMib = 16, kMaxMib = 1 << 24;  // 16 MiB … 16 TiB
  int mib = static_cast<int>(std::min<std::uint64_t>(st.doc.memoryBudgetBytes >> 20, kMaxMib));
  bool changed = false;
  if (ImGui::InputInt("memory MiB", &mib, 256, 1024, ImGuiInputTextFlags_EnterReturnsTrue)) {
    st.doc.memoryBudgetBytes = static_cast<std::uint64_t>(std::clamp(mib, kMinMib, kMaxMib)) << 20;
    changed = true;
  }
  ctx.probes.recordLastItem("memory_budget");
  ctx.probes.recordLabel("memory_budget", std::to_string(st.doc.memoryBudgetBytes >> 20) + " MiB");
  helpMarker("Memory budget: the most one configuration may hold (its trace of every stage, weights and files). "
             "A bigger one is refused with what it needs instead of slowing the machine down. Type MiB and press "
             "Enter, or use - / +. The default is half of the memory available when the window started.");
  if (st.doc.defaultBudgetBytes > 0 && st.doc.memoryBudgetBytes != st.doc.defaultBudgetBytes) {
    // The amount in the tooltip only: it follows MemAvailable, so it moves between launches.
    if (ImGui::SmallButton("default budget")) {
      st.doc.memoryBudgetBytes = st.doc.defaultBudgetBytes;
      changed = true;
    }
    ctx.probes.recordLastItem("memory_budget_default");
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("Back to this machine's default: %llu MiB (half of the memory available at start)",
                        static_cast<unsigned long long>(st.doc.defaultBudgetBytes >> 20));
    }
  }
  return changed;
}

void configErrorBox(UiContext& ctx) {
  AppState& st = ctx.state;
  ctx.probes.recordLabel("config_error", windowWording(st.doc.configError));
  if (st.doc.configError.empty()) return;
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorColor);
  textWrapped(windowWording(st.doc.configError));
  ImGui::PopStyleColor();
  if (!st.doc.suggestedHeads.empty()) {
    textWrapped(formatText("With d_k = d_model / h, h must divide d_model (%d); or untick d_k = d_model / h to "
                           "give the heads a width of their own. Nearest valid:",
                           st.doc.config.dModel));
    for (std::size_t i = 0; i < st.doc.suggestedHeads.size(); ++i) {
      ImGui::PushID(static_cast<int>(i));
      if (i > 0) ImGui::SameLine();
      const int h = st.doc.suggestedHeads[i];
      const std::string label = "use h = " + std::to_string(h) + " (d_k = " + std::to_string(st.doc.config.dModel / h) + ")";
      if (ImGui::Button(label.c_str())) {
        st.doc.config.heads = h;
        st.doc.configDirty = true;
      }
      ctx.probes.recordLastItem("suggest_heads_" + std::to_string(i));
      ImGui::PopID();
    }
  }
  ImGui::TextDisabled("The picture still shows the last valid configuration.");
}

// "K/V heads N" under h: how many key/value heads the h query heads share (grouped-query
// attention). Stored as 0 while N = h, so changing h keeps multi-head attention; applied, like
// d_model and h, when the drag ends (a drag from 8 to 2 passes 7, 5 and 3, which do not divide h).
SliderEdit kvHeadsControl(UiContext& ctx, bool fixedByFile) {
  ModelConfig& cfg = ctx.state.doc.config;
  const Trace& t = ctx.state.shown.trace;
  const int h = std::max(cfg.heads, 1);
  // A weights file (or a trained layer) decides N: the control shows the N the shown pass used.
  int n = fixedByFile && t.kvHeads > 0 ? t.kvHeads : cfg.kvHeads > 0 ? cfg.kvHeads : h;
  const SliderEdit edit = dragSliderInt("K/V heads N", &n, 1, std::max(h, n));
  if (edit.changed) cfg.kvHeads = n == cfg.heads ? 0 : n;
  ctx.probes.recordLastFrame("kv_heads");
  helpMarker("Grouped-query attention: the h query heads share N key/value heads, h/N query heads each; query head i "
             "reads K/V head i // (h/N). N = h is multi-head attention (MHA), N = 1 multi-query attention (MQA). "
             "W_k and W_v shrink to d_model × N·d_k and the KV cache to 2·N·d_k numbers per token. N must divide h. "
             "Drag to change (applied when you let go); Ctrl+click to type a number.");
  const int shown = fixedByFile && t.kvHeads > 0 ? t.kvHeads : cfg.kvHeads > 0 ? cfg.kvHeads : cfg.heads;
  std::string kind;
  if (fixedByFile && t.latentRank > 0) {  // the folder's latent attention: the count above is h (one K, V per head)
    kind = "no K/V heads are cached: each head's keys and values come from one latent of r + d_r = " +
           std::to_string(t.latentRank) + " + " + std::to_string(t.latentRopeDim) + " = " +
           std::to_string(t.latentRank + t.latentRopeDim) + " numbers per token (latent attention)";
  } else if (shown == cfg.heads) {
    kind = "N = h: multi-head attention (MHA)";
  } else if (shown == 1) {
    kind = "N = 1: multi-query attention (MQA), every query head reads one K/V head";
  } else if (shown > 0 && cfg.heads % shown == 0) {
    kind = "grouped-query attention (GQA): " + std::to_string(cfg.heads / shown) + " query heads per K/V head";
  } else {
    kind = "N = " + std::to_string(shown) + " does not divide h = " + std::to_string(cfg.heads);
  }
  ctx.probes.recordLabel("kv_heads_kind", kind);
  textWrappedDisabled(kind);
  return edit;
}

// "d_k" under N: each head's width. By default d_model / h (the choice of the original paper and most
// models: the heads together are d_model wide); unticked, a width of its own, as Qwen3 (d_model 1024,
// 16 heads of 128) and Gemma 2 (2304, 8 heads of 256) have it: W_q becomes (d_model, h·d_k) and W_o
// (h·d_k, d_model). Stored as 0 while it is d_model / h, so changing d_model or h keeps that rule.
SliderEdit headDimControl(UiContext& ctx, bool fixedByFile, bool& changed) {
  ModelConfig& cfg = ctx.state.doc.config;
  const Trace& t = ctx.state.shown.trace;
  const int h = std::max(cfg.heads, 1);
  // Fixed by a file: the widths of the pass on screen, else (none yet) the ones the file set in the config.
  const bool traced = t.dModel > 0 && t.heads > 0;
  bool usual = !fixedByFile ? cfg.headDim == 0
               : traced     ? t.heads * t.dk == t.dModel
                            : cfg.headDim == 0 || cfg.headDim * h == cfg.dModel;
  if (ImGui::Checkbox("d_k = d_model / h", &usual)) {
    // Unticked: start from the width the heads have now, so nothing changes until it is dragged.
    cfg.headDim = usual ? 0 : std::max(1, t.dk > 0 ? t.dk : cfg.dModel / h);
    changed = true;
  }
  ctx.probes.recordLastItem("head_dim_usual");
  helpMarker("Each head's width d_k. Usually d_model / h, so the h heads together are exactly d_model wide and cost "
             "what one full-width head would; it is a choice, not a rule: Qwen3-0.6B has d_model 1024 and 16 heads "
             "of 128, Gemma 2 2B 2304 and 8 heads of 256. Untick to set d_k yourself: W_q becomes d_model × h·d_k, "
             "W_o h·d_k × d_model, and the scores are scaled by 1/√d_k.");
  SliderEdit edit;
  if (usual) {
    if (cfg.heads > 0 && cfg.dModel > 0 && cfg.dModel % cfg.heads == 0) {
      ImGui::TextColored(symbolColorVec("d_k"), "d_k = d_model / h = %d / %d = %d", cfg.dModel, cfg.heads,
                         cfg.dModel / cfg.heads);
    } else {
      ImGui::TextDisabled("d_model / h = %d / %d is not a whole number", cfg.dModel, cfg.heads);
    }
  } else {
    int dk = fixedByFile && traced ? t.dk : cfg.headDim;
    edit = dragSliderInt("d_k", &dk, 1, 512, "%d", ImGuiSliderFlags_Logarithmic);
    if (edit.changed) cfg.headDim = std::max(1, dk);
    ctx.probes.recordLastFrame("head_dim");
    const int shown = fixedByFile && traced ? t.dk : cfg.headDim;
    std::string width = "h·d_k = " + std::to_string(h) + " × " + std::to_string(shown) + " = " +
                        std::to_string(h * shown) +
                        (h * shown == cfg.dModel ? " = d_model" : " ≠ d_model = " + std::to_string(cfg.dModel));
    // A latent layer's values are narrower than its queries and keys (d_v, not d_n + d_r): said beside.
    const bool staged = traced && t.stages.size() == static_cast<std::size_t>(kStageCount);
    const Shape* heads = staged ? &t.shapeOf(StageId::HeadOutputs) : nullptr;
    if (fixedByFile && heads && heads->size() == 4 && (*heads)[3] != t.dk) {
      width += "; values d_v = " + std::to_string((*heads)[3]) + " (h·d_v = " + std::to_string(h * (*heads)[3]) + ")";
    }
    ctx.probes.recordLabel("head_dim_width", width);
    ImGui::PushTextWrapPos(0.0f);  // a latent layer's line (d_v beside d_k) is longer than the column
    ImGui::TextColored(symbolColorVec("d_k"), "%s", width.c_str());
    ImGui::PopTextWrapPos();
  }
  return edit;
}


}  // namespace

// Over 80 lines (146) on purpose: one tab drawn top to bottom in reading order — open, preset, files in use, sentence,
// sizes, attention, weights and view sections of the left column — every part using the trace, batch
// item, sizes and result fetched at the top.
void drawControlsPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  ModelConfig& cfg = st.doc.config;
  ViewState& view = ctx.view;
  const float em = ImGui::GetFontSize();
  bool changed = false;
  ImGui::PushItemWidth(-7.5f * em);  // room for the labels on the right

  // The file row: open anything (File › Open: path field, folder, recent files), keep the workspace.
  drawOpenFileButton(ctx);
  ImGui::SameLine();
  drawWorkspaceActions(ctx);
  presetPicker(ctx);
  drawFilesInUse(ctx);

  if (st.doc.trainedLayer) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", kTrainedLayerNote);
    ImGui::PopTextWrapPos();
  }
  ctx.probes.recordLabel("controls_fixed_note", st.doc.trainedLayer ? kTrainedLayerNote : "");
  sectionTitle("Input");
  std::optional<FixedSection> inputFixed(std::in_place, fixedReason(st, "text"));
  // A model folder reads the text whole through its own tokenizer: '|' is text there, not a batch
  // separator, and mhascope's word splitter would count other tokens than the model's.
  const bool modelText = !st.doc.files.model.empty() && !st.doc.trainedLayer;
  const char* textLabel = modelText ? "Text (to the model's tokenizer, verbatim)" : "Sentence (separate batch items with | )";
  textWrapped(textLabel);  // wrapped in a narrow column, not cut
  ctx.probes.recordLabel("text_label", textLabel);
  changed |= textBox("##text", &cfg.text, ImVec2(-1.0f, 3.2f * em));
  ctx.probes.recordLastItem("text");
  const bool startNote = !st.doc.startTextNote.empty() && cfg.text == st.doc.startText;
  if (startNote) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", st.doc.startTextNote.c_str());
    ImGui::PopTextWrapPos();
  }
  ctx.probes.recordLabel("start_text_note", startNote ? st.doc.startTextNote : "");
  if (modelText) {
    modelTokenCount(ctx);
    // The model fixes T (its tokenizer's count), B = 1 and self-attention: greyed with the reason.
    inputFixed.reset();
    inputFixed.emplace(fixedReason(st, "tokens"));
    ctx.probes.recordLabel("tokens_fixed", inputFixed->reason);
  } else if (st.doc.files.query.empty()) {
    tokenChips(st.doc.chips);  // a query file's tokens are t0, t1, …
  }
  changed |= dragSliderInt("tokens T", &cfg.tokens, 0, 1024, cfg.tokens == 0 ? "as typed" : "%d",
                           ImGuiSliderFlags_Logarithmic).changed;
  ctx.probes.recordLastFrame("tokens");
  helpMarker("Cut the sentence to T tokens, or extend it with filler words. 0 keeps the sentence as typed. "
             "Drag to change; Ctrl+click to type a number.");
  changed |= dragSliderInt("batch B", &cfg.batch, 0, 16, cfg.batch == 0 ? "one per sentence" : "%d").changed;
  ctx.probes.recordLastFrame("batch_size");
  helpMarker("How many sequences go through at once (B). 0 = one per sentence; more items cycle the sentences. "
             "Shorter items are padded and their padding keys masked. Drag to change; Ctrl+click to type a number.");
  changed |= ImGui::Checkbox("cross-attention", &cfg.crossAttention);
  helpMarker("Queries come from the sentence above, keys and values from another one, so T_k can differ from T_q "
             "(an encoder-decoder's second attention).");
  if (cfg.crossAttention) {
    ImGui::TextUnformatted("Key/value sentence");
    changed |= textBox("##kvtext", &cfg.kvText, ImVec2(-1.0f, 2.4f * em));
  }
  inputFixed.reset();

  sectionTitle("Sizes");
  // d_model and h are applied when the drag (or the typed value) is finished: on the way from
  // h = 4 to h = 8 a drag passes 5, 6, 7, which do not divide d_model = 16, and an error
  // flashing for each of them would only be noise. The picture stays until then.
  std::optional<FixedSection> sizeFixed(std::in_place, fixedReason(st, "d_model"));
  const SliderEdit dModelEdit = dragSliderInt("d_model", &cfg.dModel, 1, 1024, "%d", ImGuiSliderFlags_Logarithmic);
  ctx.probes.recordLastFrame("d_model");
  helpMarker("Width of every token vector. Drag to change (applied when you let go); Ctrl+click to type a number.");
  sizeFixed.emplace(fixedReason(st, "heads"));
  const SliderEdit headsEdit = dragSliderInt("heads h", &cfg.heads, 1, 64);
  ctx.probes.recordLastFrame("heads");
  helpMarker("Number of heads. Each head works on its own d_k features; usually d_k = d_model / h, so h must "
             "divide d_model (unless d_k is set below). Drag to change (applied when you let go); Ctrl+click to type "
             "a number.");
  sizeFixed.emplace(fixedReason(st, "kv_heads"));
  const SliderEdit kvEdit = kvHeadsControl(ctx, !sizeFixed->reason.empty());
  sizeFixed.emplace(fixedReason(st, "head_dim"));
  const SliderEdit dkEdit = headDimControl(ctx, !sizeFixed->reason.empty(), changed);
  sizeFixed.reset();
  const bool sizing = dModelEdit.active || headsEdit.active || kvEdit.active || dkEdit.active;
  if (dModelEdit.changed || headsEdit.changed || kvEdit.changed || dkEdit.changed) st.doc.sizeEditPending = true;
  if (st.doc.sizeEditPending && !sizing) {
    st.doc.sizeEditPending = false;
    changed = true;
  }
  if (memoryBudgetControl(ctx)) st.doc.configDirty = true;  // the same model, allowed more or less memory
  if (!sizing) configErrorBox(ctx);

  changed |= drawAttentionControls(ctx);


  sectionTitle("Weights");
  std::optional<FixedSection> weightsFixed(std::in_place, fixedReason(st, "seed"));
  int seed = static_cast<int>(cfg.seed & 0x7fffffff);
  if (ImGui::InputInt("seed", &seed)) {
    cfg.seed = static_cast<std::uint64_t>(std::max(seed, 0));
    changed = true;
  }
  helpMarker("The random weights (and token vectors) come from this seed: same seed, same numbers.");
  weightsFixed.emplace(fixedReason(st, "bias"));
  changed |= ImGui::Checkbox("bias", &cfg.bias);
  weightsFixed.reset();

  sectionTitle("View");
  int cmap = view.colormap ? 1 + static_cast<int>(*view.colormap) : 0;
  std::string items = std::string("auto (by data)") + '\0';
  for (ColormapId id : allColormaps()) items += std::string(colormapName(id)) + '\0';
  if (ImGui::Combo("colormap", &cmap, items.c_str())) {
    view.colormap = cmap == 0 ? std::nullopt : std::optional<ColormapId>(allColormaps()[static_cast<std::size_t>(cmap - 1)]);
  }
  helpMarker("auto: signed numbers (scores, projections) on a diverging map centred on 0; weights (0..1) on viridis, "
             "whose lightness rises evenly for every common colour-vision deficiency too. cividis: made to look the "
             "same with red-green deficiency; coolwarm: Moreland's blue-red diverging map.");
  // The whole window (and every export) as a reader with a colour-vision deficiency sees it.
  const bool seeAsOpen = ImGui::BeginCombo("see as", seeAsLabel(view.seeAs));
  ctx.probes.recordLastItem("see_as");  // the combo itself, open or not
  if (seeAsOpen) {
    for (SeeAs k : allSeeAs()) {
      if (ImGui::Selectable(seeAsLabel(k), view.seeAs == k)) view.seeAs = k;
      ctx.probes.recordLastItem(std::string("see_as_") + seeAsName(k));
    }
    ImGui::EndCombo();
  }
  helpMarker("Shows the whole window, and writes every export, as a reader with protanopia, deuteranopia or "
             "tritanopia (Machado, Oliveira & Fernandes 2009, full severity) or on a grey printer would see it. "
             "Blocked cells keep their cross and NaN cells their dot, so neither is told by hue alone.");
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("weights");
  for (ColorScale sc : {ColorScale::Linear, ColorScale::Log, ColorScale::PerRow}) {
    ImGui::SameLine();
    if (ImGui::RadioButton(colorScaleName(sc), view.colorScale == sc)) view.colorScale = sc;
    std::string probe = std::string("scale_") + colorScaleName(sc);  // "scale_per_row": script words have no spaces
    std::replace(probe.begin(), probe.end(), ' ', '_');
    ctx.probes.recordLastItem(probe);
  }
  helpMarker("How the weights are coloured. linear: 0 … 1. log: log10 of the weight, 4 decades below the top, so "
             "the ~1/T weights of long sequences show. per row: each query row divided by its largest weight. "
             "Other stages stay linear; exported pictures are always linear.");
  ImGui::Checkbox("one colour scale for all heads", &view.sharedScale);
  ctx.probes.recordLastItem("shared_scale");
  ImGui::Checkbox("numbers in big cells", &view.showNumbers);
  ctx.probes.recordLastItem("show_numbers");
  ImGui::PopItemWidth();

  if (changed) {
    st.doc.configDirty = true;
    markEditedIfChanged(st.doc);
  }

  if (!st.actionError.empty()) {
    ImGui::Spacing();
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColor);
    textWrapped(windowWording(st.actionError));
    ImGui::PopStyleColor();
    if (ImGui::SmallButton("dismiss")) st.actionError.clear();
  }
}

}  // namespace mhascope::app
