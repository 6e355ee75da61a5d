// config + InputFiles → Model in steps: raw inputs (or the text), mask files, weights file; or a
// checkpoint layer; or a model folder's layer (model_folder_source.cpp). See model_source.hpp.
#include "model_source/model_source.hpp"

#include <climits>
#include <utility>

#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "io/weights_io.hpp"
#include "train/checkpoint.hpp"
#include "train/layer_model.hpp"

namespace mhascope {
namespace {

Result<Tensor> loadInput(const std::string& path, const char* flag, std::uint64_t budget) {
  auto t = loadNpy(path, NpyValues::FiniteOnly, budget);
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

// Raw inputs: .npy files replace the text; d_model and the shapes come from them, the rest of the
// model from the one core builder (modelFromInputs), like a text model's.
Result<Model> rawModel(const ModelRequest& r, ModelConfig& cfg) {
  const InputFiles& f = r.files;
  if (f.key.empty() != f.value.empty()) {
    return makeError("give both --key and --value, or neither (then key = value = query: self-attention)");
  }
  const std::uint64_t budget = cfg.memoryBudgetBytes;
  auto q = loadInput(f.query, "--query", budget);
  if (!q) return q.error();
  const auto d = q->dim(2);
  if (r.requiredDModel && *r.requiredDModel != d) {
    return makeError("--d-model " + std::to_string(*r.requiredDModel) + " contradicts --query '" + f.query +
                     "' whose last axis is d_model = " + std::to_string(d));
  }
  if (d > INT_MAX) return makeError("--query '" + f.query + "': d_model = " + std::to_string(d) + " is too large");
  cfg.dModel = static_cast<int>(d);
  AttentionInputs in;
  in.query = std::move(*q);
  cfg.crossAttention = !f.key.empty();
  if (cfg.crossAttention) {
    auto k = loadInput(f.key, "--key", budget);
    if (!k) return k.error();
    auto v = loadInput(f.value, "--value", budget);
    if (!v) return v.error();
    in.key = std::move(*k);
    in.value = std::move(*v);
    in.selfAttention = false;
  }
  const auto B = in.query.dim(0), Tq = in.query.dim(1);
  const auto Tk = cfg.crossAttention ? in.key.dim(1) : Tq;
  // Before the weights and the key/value copies are allocated.
  if (auto s = validateSizes(B, Tq, Tk, d, cfg.heads, budget, r.use); !s) return s.error();
  AttentionOptions variants;
  variants.heads = cfg.heads;
  variants.causal = cfg.mask == MaskKind::Causal;
  applyVariants(cfg, variants);
  if (auto s = validateVariants(d, variants); !s) return s.error();
  if (!cfg.crossAttention) {
    in.key = in.query;
    in.value = in.query;
    in.selfAttention = true;
  }
  in.queryTokens = indexTokens(B, Tq);
  in.keyTokens = indexTokens(in.key.dim(0), Tk);
  cfg.text = "(from " + f.query + ")";
  return modelFromInputs(cfg, std::move(in));
}

// --key-padding-mask and --attn-mask files on top of the model's own masks.
Status applyMaskFiles(const InputFiles& f, Model& m, std::uint64_t budget) {
  const auto B = m.inputs.query.dim(0), Tq = m.inputs.query.dim(1), Tk = m.inputs.key.dim(1);
  if (!f.keyPaddingMask.empty()) {
    auto pm = loadNpy(f.keyPaddingMask, NpyValues::FiniteOnly, budget);
    if (!pm) return pm.error();
    const Shape want{B, Tk};
    if (pm->shape != want) {
      return makeError("--key-padding-mask '" + f.keyPaddingMask + "' has shape " + shapeToString(pm->shape) +
                       " but must be (B, T_k) = " + shapeToString(want));
    }
    if (m.options.keyPaddingMask) {  // keep the padding the batch already needs
      for (std::size_t i = 0; i < pm->data.size(); ++i)
        if (m.options.keyPaddingMask->data[i] != 0.0f) pm->data[i] = 1.0f;
    }
    m.options.keyPaddingMask = std::move(*pm);
  }
  if (!f.attnMask.empty()) {
    auto am = loadNpy(f.attnMask, NpyValues::FiniteOnly, budget);
    if (!am) return am.error();
    const Shape want{Tq, Tk};
    if (am->shape != want) {
      return makeError("--attn-mask '" + f.attnMask + "' has shape " + shapeToString(am->shape) +
                       " but must be (T_q, T_k) = " + shapeToString(want));
    }
    m.options.attnMask = std::move(*am);
  }
  return Ok{};
}

// d_model of a state_dict: in_proj_weight is (3·d_model, d_model), q_proj.weight (d_model, d_model).
std::optional<int> dModelOfWeights(const StateDict& sd) {
  const std::int64_t d = stateDictDModel(sd);
  if (d < 1 || d > INT_MAX) return std::nullopt;
  return static_cast<int>(d);
}

// The head width and K/V heads the weights hold: d_k = (rows of q_proj) / h, N = (rows of k_proj) /
// d_k. The config's d_k and N (options, a preset or a workspace) must agree; in_proj names hold
// d_k = d_model / h and N = h only.
Status kvHeadsFromWeights(const std::string& file, const StateDict& sd, const MhaWeights& w, ModelConfig& cfg,
                          Model& m) {
  const int h = cfg.heads;
  const std::int64_t qWidth = w.qWidth(), width = w.kvWidth();
  if (qWidth % h != 0) {
    return makeError("--weights '" + file + "': q_proj.weight has " + std::to_string(qWidth) + " rows, not a multiple "
                     "of h = " + std::to_string(h) + " (its rows are h*d_k)");
  }
  const std::int64_t dk = qWidth / h;
  const int headDim = qWidth == cfg.dModel ? 0 : static_cast<int>(dk);
  if (cfg.headDim > 0 && cfg.headDim != dk) {
    return makeError("--weights '" + file + "' holds heads of d_k = " + std::to_string(dk) + " (q_proj.weight " +
                     std::to_string(qWidth) + " rows = h*d_k, h = " + std::to_string(h) + "), but --head-dim is " +
                     std::to_string(cfg.headDim));
  }
  if (headDim > 0) cfg.headDim = headDim;
  m.options.headDim = cfg.headDim;
  if (!hasSeparateProjections(sd)) {
    if (cfg.kvHeads > 0 && cfg.kvHeads != h) {
      return makeError("--weights '" + file + "' uses in_proj_weight, which holds W_q, W_k and W_v of equal size "
                       "(N = h = " + std::to_string(h) + "), but --kv-heads is " + std::to_string(cfg.kvHeads) +
                       "; grouped K/V heads need the separate q_proj/k_proj/v_proj/o_proj names");
    }
    return Ok{};
  }
  if (width % dk != 0) {
    return makeError("--weights '" + file + "': k_proj.weight has " + std::to_string(width) + " rows, not a multiple "
                     "of d_k = " + std::to_string(dk) + " (h = " + std::to_string(h) + ")");
  }
  const int n = static_cast<int>(width / dk);
  if (cfg.kvHeads > 0 && cfg.kvHeads != n) {
    return makeError("--weights '" + file + "' holds N = " + std::to_string(n) + " K/V heads (k_proj.weight " +
                     std::to_string(width) + " rows = N*d_k, d_k = " + std::to_string(dk) + "), but --kv-heads is " +
                     std::to_string(cfg.kvHeads));
  }
  cfg.kvHeads = n == h ? cfg.kvHeads : n;
  m.options.kvHeads = n;
  return validateVariants(cfg.dModel, m.options);
}

}  // namespace

Result<SourcedModel> modelFromSource(const ModelRequest& r) {
  const InputFiles& f = r.files;
  if (!f.model.empty()) return modelFolderLayerSource(r);
  if (!f.checkpoint.empty()) {
    return checkpointLayerSource(f.checkpoint, f.layer.value_or(0), r.checkpointItems, r.checkpointText,
                                 r.config.memoryBudgetBytes);
  }
  ModelConfig cfg = r.config;
  const std::uint64_t budget = cfg.memoryBudgetBytes;
  const bool raw = !f.query.empty();
  // The window reads the weights first: their d_model sizes the text model.
  std::optional<StateDict> sd;
  if (!f.weights.empty() && r.weightsDecideDModel) {
    auto loaded = loadSafetensors(f.weights, budget);  // its header is checked against its size first
    if (!loaded) return loaded.error();
    sd = std::move(*loaded);
    if (!raw) {
      if (auto d = dModelOfWeights(*sd)) cfg.dModel = *d;
    }
  }
  auto m = raw ? rawModel(r, cfg) : buildModel(cfg, r.use);
  if (!m) return m.error();
  SourcedModel out;
  out.model = std::move(*m);
  if (auto s = applyMaskFiles(f, out.model, budget); !s) return s.error();
  if (!f.weights.empty()) {
    if (!sd) {
      auto loaded = loadSafetensors(f.weights, budget);
      if (!loaded) return loaded.error();
      sd = std::move(*loaded);
    }
    auto w = weightsFromStateDict(*sd, cfg.dModel);
    if (!w) return makeError("--weights '" + f.weights + "': " + w.error().message);
    if (auto s = kvHeadsFromWeights(f.weights, *sd, *w, cfg, out.model); !s) return s.error();
    out.model.weights = std::move(*w);
    cfg.bias = out.model.weights.hasBias;
  }
  out.config = std::move(cfg);
  out.seedUsed = !(raw && !f.weights.empty());
  return out;
}

ModelConfig checkpointLayerConfig(const train::GptConfig& g, const train::Batch& batch,
                                  const std::vector<std::vector<std::string>>& labels) {
  ModelConfig c;
  c.name = "checkpoint";
  c.dModel = g.dModel;
  c.heads = g.heads;
  c.bias = true;
  c.mask = MaskKind::Causal;
  // The layer's attention variant, as training ran it (train::applyVariants sets the engine's options).
  c.kvHeads = g.kv() == g.heads ? 0 : g.kv();
  c.attnPositions = g.positions == train::TrainPositions::Rope    ? AttnPositions::Rope
                    : g.positions == train::TrainPositions::Alibi ? AttnPositions::Alibi
                                                                  : AttnPositions::None;
  c.ropeBase = g.ropeBase;
  c.batch = batch.batch;
  c.tokens = batch.seq;
  c.text.clear();
  for (const auto& row : labels) {
    if (!c.text.empty()) c.text += " | ";
    for (std::size_t i = 0; i < row.size(); ++i) c.text += (i ? " " : "") + row[i];
  }
  return c;
}

Result<SourcedModel> checkpointLayerSource(const std::string& path, int layer, int items, const std::string& text,
                                           std::uint64_t memoryBudgetBytes) {
  auto ckpt = train::loadCheckpoint(path, memoryBudgetBytes);
  if (!ckpt) return ckpt.error();
  auto probe = train::checkpointProbe(*ckpt, items, text);
  if (!probe) return probe.error();
  if (ckpt->task.kind != train::TaskKind::Text && !text.empty()) {
    return makeError("--text is only for checkpoints of the text task; this one was trained on " +
                     std::string(train::taskName(ckpt->task.kind)) + " (its probe sequence is used)");
  }
  auto model = train::trainedLayerModel(ckpt->params, probe->batch, layer, probe->labels, memoryBudgetBytes);
  if (!model) return model.error();
  SourcedModel r;
  const train::GptConfig& g = ckpt->params.cfg;
  r.config = checkpointLayerConfig(g, probe->batch, probe->labels);
  r.config.memoryBudgetBytes = memoryBudgetBytes;
  r.model = std::move(*model);
  r.seedUsed = false;
  // A layer is an index (0-based) and "N of M" is kept for ordinals: "layer 1 (L = 2; …)".
  r.describeNote = "; trained layer " + std::to_string(layer) + " (L = " + std::to_string(g.layers) + "; " +
                   train::taskName(ckpt->task.kind) + ", step " + std::to_string(ckpt->step) +
                   ", input LN1 of the residual stream)";
  return r;
}

namespace {

// What a model folder fixes, in the words of its config.json; the text and the layer stay free.
std::string fixedByModel(const std::string& dir, const std::string& control) {
  const std::string by = "set by the model folder '" + dir + "'";
  if (control == "text" || control == "layer") return "";
  if (control == "d_model") return by + " (its config.json: n_embd / hidden_size)";
  if (control == "heads") return by + " (its config.json: n_head / num_attention_heads)";
  if (control == "kv_heads") return by + " (its config.json: num_key_value_heads; GPT-2: N = h)";
  if (control == "head_dim") return by + " (its config.json: head_dim, else hidden_size / num_attention_heads)";
  if (control == "stable_scores") return by + " (its q_norm/k_norm weights and attn_logit_softcapping)";
  if (control == "learned_sink") return by + " (its self_attn.sinks weights, gpt-oss only)";
  if (control == "attention_positions" || control == "positions") {
    return by + ": its architecture decides (Llama family: RoPE with config.json's rope_theta; GPT-2: learned "
                "positions, already inside the hidden states the layer reads)";
  }
  if (control == "window") return by + " (its config.json: sliding_window, Mistral only)";
  if (control == "mask" || control == "pad") return by + ": a language model attends causally, one text, no padding";
  if (control == "seed") return "not used: the hidden states and the weights come from the model folder";
  if (control == "bias") return by + " (GPT-2: every projection; Qwen2: q, k, v; Llama: none)";
  if (control == "tokens" || control == "batch" || control == "cross") {
    return by + ": the text goes through its tokenizer as one item (B = 1, T = its tokens)";
  }
  return by;
}

}  // namespace

std::string fixedByFiles(const InputFiles& f, const std::string& control) {
  if (!f.model.empty()) return fixedByModel(f.model, control);
  if (!f.checkpoint.empty()) {
    return "set by the trained layer (checkpoint '" + f.checkpoint + "'); close it under Files in use to edit";
  }
  const bool textControl = control == "text" || control == "tokens" || control == "batch" ||
                           control == "cross" || control == "positions" || control == "pad";
  if (!f.query.empty()) {
    if (textControl || control == "d_model") {
      return "set by the query file '" + f.query + "' (its shape is (B, T, d_model)); close it to edit";
    }
    if (control == "seed" && !f.weights.empty()) return "not used: the inputs and the weights come from files";
  }
  if (!f.weights.empty()) {
    if (control == "d_model") return "set by the weights file '" + f.weights + "' (in_proj_weight is (3·d_model, d_model))";
    if (control == "bias") return "set by the weights file '" + f.weights + "' (in_proj_bias present or not)";
    if (control == "kv_heads") {
      return "set by the weights file '" + f.weights + "' (k_proj.weight is (N·d_k, d_model); in_proj_weight: N = h)";
    }
    if (control == "head_dim") {
      return "set by the weights file '" + f.weights + "' (q_proj.weight is (h·d_k, d_model); in_proj_weight: "
             "d_k = d_model / h)";
    }
  }
  return "";
}

}  // namespace mhascope
