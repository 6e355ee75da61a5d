// The controls panel's Attention section: the mask, key padding, the scaling of the scores, today's
// score stabilisers (q/k norm, softcap), where positions come in (sinusoidal codes, RoPE, ALiBi,
// none), the sliding window with its sinks and the learned sink. Drawn by drawControlsPanel (controls_panel.cpp).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "attention/engine.hpp"
#include "model_source/model_source.hpp"
#include "panels/controls_sections.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/labels.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

constexpr const char* kScaleLabels[] = {"divide by √d_k (standard)", "divide by √d_model (flatter by √h)", "none (sharper by √d_k)"};
constexpr ScaleKind kScales[] = {ScaleKind::SqrtDk, ScaleKind::SqrtDModel, ScaleKind::None};

// The four position choices of the command line's --positions; sinusoidal is the codes added to
// the inputs (the old "position codes" box), rope and alibi act inside attention.
constexpr const char* kPositionNames[] = {"sinusoidal", "rope", "alibi", "none"};
constexpr const char* kPositionLabels[] = {"sinusoidal (codes added to the inputs)", "RoPE (q and k rotated)",
                                           "ALiBi (distance bias on the scores)", "none"};

bool positionControls(UiContext& ctx) {
  AppState& st = ctx.state;
  ModelConfig& cfg = st.doc.config;
  bool changed = false;
  FixedSection fixed(fixedReason(st, "attention_positions"));
  // Raw inputs from a file have no text to add sinusoidal codes to; RoPE and ALiBi still apply.
  const std::string noCodes = fixedReason(st, "positions");
  const std::string current = positionsName(cfg);  // "sinusoidal+rope" from an old preset
  const bool positionsOpen = ImGui::BeginCombo("positions", current.c_str());
  if (!positionsOpen) ctx.probes.recordLastItem("positions");  // the box (once open, the popup is the last item)
  if (positionsOpen) {
    for (int i = 0; i < 4; ++i) {
      ImGui::PushID(i);
      const bool disabled = i == 0 && !noCodes.empty();
      if (ImGui::Selectable(kPositionLabels[i], current == kPositionNames[i],
                            disabled ? ImGuiSelectableFlags_Disabled : 0)) {
        (void)setPositions(cfg, kPositionNames[i]);  // a name from the list: always known
        changed = true;
      }
      ctx.probes.recordLastItem(std::string("positions_") + kPositionNames[i]);
      if (disabled && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", noCodes.c_str());
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  ctx.probes.recordLabel("positions", current);
  helpMarker("Where the order of the tokens comes in. sinusoidal: a code of sines and cosines is added to each "
             "token's vector before attention (the 2017 paper). RoPE: each head's q and k are turned pair by pair "
             "by an angle that grows with the position, so position enters a score only through the offset t − j "
             "(Llama, Mistral, Qwen). ALiBi: each head subtracts a fixed slope times the distance from its scores. "
             "none: no position code; without a mask attention then cannot tell the order (shuffled tokens give "
             "the same outputs, shuffled), while under a causal mask a model can still infer position.");
  if (cfg.attnPositions == AttnPositions::Rope) {
    float base = cfg.ropeBase;
    if (ImGui::InputFloat("rope base", &base, 0.0f, 0.0f, "%g", ImGuiInputTextFlags_EnterReturnsTrue)) {
      cfg.ropeBase = base;  // 0 or less: the engine's error, the picture stays
      changed = true;
    }
    ctx.probes.recordLastItem("rope_base");
    helpMarker("inv_freq_k = base^(−2k/d_k): pair k turns by t · inv_freq_k at position t. A larger base turns the "
               "last pairs more slowly, for longer texts (Llama 2: 10000, Llama 3: 500000). Type and press Enter.");
    constexpr const char* kStyleLabels[] = {"half (Hugging Face Llama)", "interleaved (original Llama)"};
    const int style = cfg.ropeStyle == RopeStyle::Interleaved ? 1 : 0;
    const bool styleOpen = ImGui::BeginCombo("rope style", kStyleLabels[style]);
    if (!styleOpen) ctx.probes.recordLastItem("rope_style");
    if (styleOpen) {
      for (int i = 0; i < 2; ++i) {
        if (ImGui::Selectable(kStyleLabels[i], i == style)) {
          cfg.ropeStyle = i == 1 ? RopeStyle::Interleaved : RopeStyle::Half;
          changed = true;
        }
        ctx.probes.recordLastItem(i == 1 ? "rope_style_interleaved" : "rope_style_half");
      }
      ImGui::EndCombo();
    }
    helpMarker("Which features are turned together. half: feature k with feature k + d_k/2 (rotate_half, as Hugging "
               "Face Llama, Mistral and Qwen compute it). interleaved: neighbours 2k and 2k + 1, as complex numbers "
               "(the original Llama code). Both give the same scores up to a permutation of the d_k features, but "
               "weights written for one pairing do not fit the other.");
  }
  return changed;
}

// Sliding window W and sinks S (0 = none): query t sees keys t − W < j ≤ t, and keys j < S always.
bool windowControls(UiContext& ctx) {
  AppState& st = ctx.state;
  ModelConfig& cfg = st.doc.config;
  bool changed = false;
  FixedSection fixed(fixedReason(st, "window"));
  const int hi = std::max({16, st.shown.trace.tk, cfg.window, cfg.sinks});
  changed |= dragSliderInt("window W", &cfg.window, 0, hi, cfg.window == 0 ? "none" : "%d").changed;
  ctx.probes.recordLastFrame("window");
  helpMarker("Sliding window: query t sees only the W keys t − W < j ≤ t under a causal mask (|t − j| < W without "
             "one). A kernel that skips blocked blocks then does T·W work instead of T² (this engine computes all T² "
             "scores, then masks); a decoder's rolling-buffer cache holds W keys per layer (Mistral 7B: W = 4096). "
             "0 = no window. Drag to change; "
             "Ctrl+click to type a number.");
  changed |= dragSliderInt("sinks S", &cfg.sinks, 0, hi, "%d").changed;
  ctx.probes.recordLastFrame("sinks");
  helpMarker("Attention sinks: the first S keys stay visible to every query whatever the window (the causal rule "
             "still applies), as StreamingLLM (Xiao et al. 2023) keeps them. Needs a window W.");
  return changed;
}

// A learned sink (gpt-oss): one logit s, here the same for every head, joins each row's softmax as a column of
// its own and is dropped, so the row's weights sum to less than 1.
bool learnedSinkControls(UiContext& ctx) {
  AppState& st = ctx.state;
  ModelConfig& cfg = st.doc.config;
  bool changed = false;
  FixedSection fixed(fixedReason(st, "learned_sink"));
  changed |= ImGui::Checkbox("learned sink", &cfg.learnedSink);
  ctx.probes.recordLastItem("learned_sink");
  helpMarker("gpt-oss gives each head one learned logit s that joins every row's softmax as an extra column and is "
             "then dropped: w = e^(z) / (e^(s) + Σ e^(z)). A head can then attend to nothing, leaving the missing "
             "share on the sink (the stage Learned sink shows each row's); a row whose keys are all blocked gives "
             "the sink everything. Models without one learn a sink anyway, on the first token.");
  if (cfg.learnedSink) {
    ImGui::SetNextItemWidth(8 * ImGui::GetFontSize());
    float logit = cfg.sinkLogit;
    if (ImGui::InputFloat("sink logit s", &logit, 0.0f, 0.0f, "%.3g", ImGuiInputTextFlags_EnterReturnsTrue)) {
      cfg.sinkLogit = std::isfinite(logit) ? logit : 0.0f;
      changed = true;
    }
    ctx.probes.recordLastItem("sink_logit");
    helpMarker("The sink's logit, the same for every head here (a model folder's heads each have their own). "
               "Compared with the scaled scores: s above a row's scores takes most of its mass. Type a value and "
               "press Enter.");
  }
  return changed;
}

}  // namespace

bool drawAttentionControls(UiContext& ctx) {
  AppState& st = ctx.state;
  ModelConfig& cfg = st.doc.config;
  bool changed = false;
  sectionTitle("Attention");
  std::optional<FixedSection> attentionFixed(std::in_place, fixedReason(st, "mask"));
  int mask = cfg.mask == MaskKind::Causal ? 1 : 0;
  if (ImGui::Combo("mask", &mask, "none\0causal (no peeking ahead)\0")) {
    cfg.mask = mask == 1 ? MaskKind::Causal : MaskKind::None;
    changed = true;
  }
  {
    FixedSection padFixed(attentionFixed->reason.empty() ? fixedReason(st, "pad") : "");
    changed |= dragSliderInt("pad last keys", &cfg.padLastKeys, 0, std::max(1, st.shown.trace.tk)).changed;
    helpMarker("Key padding: ignore the last n keys of every item, as if they were <pad> tokens.");
  }
  int scale = 0;
  for (int i = 0; i < 3; ++i) {
    if (kScales[i] == cfg.scale) scale = i;
  }
  // A model folder's layer may scale by a factor of its own (Gemma's query_pre_attn_scalar^-1/2): said,
  // not offered, as the model fixes it.
  const Trace& shownTrace = st.shown.trace;
  if (shownTrace.scale == ScaleKind::Given) {
    textWrappedDisabled(formatText("scaling: × %.6g, the model's own (query_pre_attn_scalar^-1/2)", shownTrace.scaleFactor));
    ctx.probes.recordLabel("scaling_given", formatText("%.6g", shownTrace.scaleFactor));
  } else if (ImGui::BeginCombo("scaling", kScaleLabels[scale])) {
    for (int i = 0; i < 3; ++i) {
      ImGui::PushID(i);
      if (ImGui::Selectable(kScaleLabels[i], i == scale)) {
        cfg.scale = kScales[i];
        changed = true;
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  helpMarker("Scores are divided by √d_k so their size does not grow with d_k; the other two choices show what "
             "goes wrong without it.");
  {
    // The stabilisers of today's models: q/k norm (Qwen3, Gemma 3) and the scores' softcap (Gemma 2).
    FixedSection stableFixed(attentionFixed->reason.empty() ? fixedReason(st, "stable_scores") : "");
    changed |= ImGui::Checkbox("q/k norm", &cfg.qkNorm);
    ctx.probes.recordLastItem("qk_norm");
    helpMarker("RMSNorm of each head's q and k right after the split, before RoPE (Qwen3, Gemma 3; gains 1 here): "
               "every query and key gets root-mean-square 1, so |q·k| ≤ d_k and no score can grow without bound as "
               "weights grow. The stages Normalise (Q) and (K) show them.");
    ImGui::SetNextItemWidth(8 * ImGui::GetFontSize());
    float cap = cfg.softcap;
    if (ImGui::InputFloat("softcap c", &cap, 0.0f, 0.0f, "%.3g", ImGuiInputTextFlags_EnterReturnsTrue)) {
      cfg.softcap = std::isfinite(cap) ? std::max(0.0f, cap) : 0.0f;
      changed = true;
    }
    ctx.probes.recordLastItem("softcap");
    helpMarker("0: none. Otherwise the scaled scores become c·tanh(s/c) before the mask (Gemma 2's "
               "attn_logit_softcapping, c = 50): near 0 a score is unchanged, large ones bend towards ±c, so no key "
               "can take all the weight by a huge score. Type a value and press Enter.");
  }
  attentionFixed.reset();
  changed |= positionControls(ctx);
  changed |= windowControls(ctx);
  changed |= learnedSinkControls(ctx);
  return changed;
}

}  // namespace mhascope::app
