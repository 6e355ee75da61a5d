// MODEL options → ModelConfig → Model, then the file overrides: raw .npy inputs, .npy masks,
// .safetensors weights (PyTorch nn.MultiheadAttention names), --save-weights.
#include "model_options.hpp"

#include "checkpoint_layer.hpp"

#include "mhascope/npy.hpp"
#include "mhascope/safetensors.hpp"
#include "mhascope/weights_io.hpp"

namespace mhascope::cli {

void addModelOptions(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--preset", o.preset, "preset name (" + [] {
    std::string s;
    for (const auto& n : presetNames()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }() + ") or a preset .json path")->capture_default_str();
  cmd.add_option("--text", o.text, "query sentence; batch items separated by '|'");
  cmd.add_option("--kv-text", o.kvText, "key/value sentence(s): cross-attention");
  cmd.add_option("--d-model", o.dModel, "model width d_model");
  cmd.add_option("--heads", o.heads, "number of heads h (must divide d_model)");
  cmd.add_option("--tokens", o.tokens, "cut or extend every sentence to this many tokens");
  cmd.add_option("--batch", o.batch, "batch size B (sentences repeat cyclically)");
  cmd.add_option("--seed", o.seed, "seed for embeddings and weights");
  auto* bias = cmd.add_flag("--bias", o.bias, "use biases in the four projections");
  cmd.add_flag("--no-bias", o.noBias, "no biases")->excludes(bias);
  cmd.add_option("--mask", o.mask, "none | causal")->check(CLI::IsMember({"none", "causal"}));
  cmd.add_option("--pad-last", o.padLast, "key padding: ignore the last N keys of every batch item");
  cmd.add_option("--key-padding-mask", o.keyPaddingMaskFile, ".npy (B, T_k); nonzero = ignore that key");
  cmd.add_option("--attn-mask", o.attnMaskFile, ".npy (T_q, T_k); nonzero = blocked");
  cmd.add_option("--scale", o.scale, "sqrt-dk | sqrt-dmodel | none")
      ->check(CLI::IsMember({"sqrt-dk", "sqrt-dmodel", "none"}));
  cmd.add_flag("--no-positions", o.noPositions, "do not add sinusoidal position codes");
  cmd.add_option("--query", o.queryFile, "raw query input .npy (B, T_q, d_model) float32/float64");
  cmd.add_option("--key", o.keyFile, "raw key input .npy (B, T_k, d_model)");
  cmd.add_option("--value", o.valueFile, "raw value input .npy (B, T_k, d_model)");
  cmd.add_option("--weights", o.weightsFile, "load weights .safetensors (PyTorch MHA state_dict names)");
  cmd.add_option("--save-weights", o.saveWeightsFile, "save the weights used as .safetensors");
  cmd.add_option("--memory-budget", o.memoryBudgetMib, "memory budget for recorded tensors, MiB (default 512)");
  cmd.add_option("--checkpoint", o.checkpointFile, "a `mhascope train` checkpoint: show one trained layer");
  cmd.add_option("--layer", o.layer, "with --checkpoint: the layer, 0 .. L-1 (default 0)");
}

namespace {

Result<Tensor> loadInput(const std::string& path, const char* flag) {
  auto t = loadNpy(path);
  if (!t) return t.error();
  if (t->rank() != 3) {
    return makeError(std::string(flag) + " '" + path + "' has shape " + shapeToString(t->shape) +
                     "; expected (B, T, d_model)");
  }
  return t;
}

std::vector<std::vector<std::string>> indexTokens(std::int64_t B, std::int64_t T) {
  std::vector<std::vector<std::string>> out(static_cast<std::size_t>(B));
  for (auto& row : out)
    for (std::int64_t i = 0; i < T; ++i) row.push_back(std::string("t").append(std::to_string(i)));
  return out;
}

}  // namespace

Result<ResolvedModel> resolveModel(const ModelOptions& o) {
  if (!o.checkpointFile.empty()) return resolveCheckpointLayer(o);
  if (o.layer) return makeError("--layer needs --checkpoint m.safetensors (a model trained by `mhascope train`)");
  auto preset = loadPreset(o.preset);
  if (!preset) return preset.error();
  ModelConfig cfg = *preset;
  if (o.text) cfg.text = *o.text;
  if (o.kvText) {
    cfg.kvText = *o.kvText;
    cfg.crossAttention = true;
  }
  if (o.dModel) cfg.dModel = *o.dModel;
  if (o.heads) cfg.heads = *o.heads;
  if (o.tokens) cfg.tokens = *o.tokens;
  if (o.batch) cfg.batch = *o.batch;
  if (o.padLast) cfg.padLastKeys = *o.padLast;
  if (o.seed) cfg.seed = *o.seed;
  if (o.bias) cfg.bias = true;
  if (o.noBias) cfg.bias = false;
  if (o.noPositions) cfg.positions = false;
  if (o.mask) cfg.mask = *maskFromName(*o.mask);
  if (o.scale) cfg.scale = *scaleFromName(*o.scale);
  if (o.memoryBudgetMib) {
    if (*o.memoryBudgetMib == 0 || *o.memoryBudgetMib > (1ull << 30)) {
      return makeError("--memory-budget must be between 1 and 1073741824 MiB, got " +
                       std::to_string(*o.memoryBudgetMib));
    }
    cfg.memoryBudgetBytes = *o.memoryBudgetMib << 20;
  }

  ResolvedModel r;
  if (!o.queryFile.empty()) {
    // Raw inputs replace the text: d_model and the shapes come from the files.
    if (o.keyFile.empty() != o.valueFile.empty()) {
      return makeError("give both --key and --value, or neither (then key = value = query: self-attention)");
    }
    auto q = loadInput(o.queryFile, "--query");
    if (!q) return q.error();
    const auto d = q->dim(2);
    if (o.dModel && *o.dModel != d) {
      return makeError("--d-model " + std::to_string(*o.dModel) + " contradicts --query '" + o.queryFile +
                       "' whose last axis is d_model = " + std::to_string(d));
    }
    cfg.dModel = static_cast<int>(d);
    Model& m = r.model;
    m.inputs.query = std::move(*q);
    if (!o.keyFile.empty()) {
      auto k = loadInput(o.keyFile, "--key");
      if (!k) return k.error();
      auto v = loadInput(o.valueFile, "--value");
      if (!v) return v.error();
      m.inputs.key = std::move(*k);
      m.inputs.value = std::move(*v);
      m.inputs.selfAttention = false;
      cfg.crossAttention = true;
    } else {
      m.inputs.key = m.inputs.query;
      m.inputs.value = m.inputs.query;
      m.inputs.selfAttention = true;
      cfg.crossAttention = false;
    }
    const auto B = m.inputs.query.dim(0), Tq = m.inputs.query.dim(1), Tk = m.inputs.key.dim(1);
    if (auto s = validateSizes(B, Tq, Tk, d, cfg.heads, cfg.memoryBudgetBytes); !s) return s.error();
    m.inputs.queryTokens = indexTokens(B, Tq);
    m.inputs.keyTokens = indexTokens(m.inputs.key.dim(0), Tk);
    m.weights = initWeights(cfg.dModel, cfg.bias, cfg.seed);
    m.options.heads = cfg.heads;
    m.options.scale = cfg.scale;
    m.options.causal = cfg.mask == MaskKind::Causal;
    m.options.memoryBudgetBytes = cfg.memoryBudgetBytes;
    cfg.text = "(from " + o.queryFile + ")";
  } else {
    if (!o.keyFile.empty() || !o.valueFile.empty()) {
      return makeError("--key/--value need --query as well (raw inputs replace the text)");
    }
    auto m = buildModel(cfg);
    if (!m) return m.error();
    r.model = std::move(*m);
  }
  Model& m = r.model;
  const auto B = m.inputs.query.dim(0), Tq = m.inputs.query.dim(1), Tk = m.inputs.key.dim(1);
  if (!o.keyPaddingMaskFile.empty()) {
    auto pm = loadNpy(o.keyPaddingMaskFile);
    if (!pm) return pm.error();
    const Shape want{B, Tk};
    if (pm->shape != want) {
      return makeError("--key-padding-mask '" + o.keyPaddingMaskFile + "' has shape " + shapeToString(pm->shape) +
                       " but must be (B, T_k) = " + shapeToString(want));
    }
    if (m.options.keyPaddingMask) {  // keep the padding the batch already needs
      for (std::size_t i = 0; i < pm->data.size(); ++i)
        if (m.options.keyPaddingMask->data[i] != 0.0f) pm->data[i] = 1.0f;
    }
    m.options.keyPaddingMask = std::move(*pm);
  }
  if (!o.attnMaskFile.empty()) {
    auto am = loadNpy(o.attnMaskFile);
    if (!am) return am.error();
    const Shape want{Tq, Tk};
    if (am->shape != want) {
      return makeError("--attn-mask '" + o.attnMaskFile + "' has shape " + shapeToString(am->shape) +
                       " but must be (T_q, T_k) = " + shapeToString(want));
    }
    m.options.attnMask = std::move(*am);
  }
  if (!o.weightsFile.empty()) {
    auto sd = loadSafetensors(o.weightsFile);
    if (!sd) return sd.error();
    auto w = weightsFromStateDict(*sd, cfg.dModel);
    if (!w) return makeError("--weights '" + o.weightsFile + "': " + w.error().message);
    m.weights = std::move(*w);
    cfg.bias = m.weights.hasBias;
  }
  if (!o.saveWeightsFile.empty()) {
    if (auto s = saveSafetensors(o.saveWeightsFile, stateDictFromWeights(m.weights), {{"format", "pt"}}); !s) {
      return s.error();
    }
  }
  r.config = cfg;
  const int h = m.options.heads;
  r.describe = "B=" + std::to_string(B) + " T_q=" + std::to_string(Tq) + " T_k=" + std::to_string(Tk) +
               " d_model=" + std::to_string(cfg.dModel) + " h=" + std::to_string(h) +
               " d_k=" + std::to_string(h > 0 ? cfg.dModel / h : 0) + " mask=" + maskName(cfg.mask) +
               (m.options.keyPaddingMask ? "+padding" : "") + (m.options.attnMask ? "+attn_mask" : "") +
               " scale=" + scaleName(cfg.scale) + (m.weights.hasBias ? " bias" : " no-bias") +
               (m.inputs.selfAttention ? " self-attention" : " cross-attention");
  return r;
}

}  // namespace mhascope::cli
