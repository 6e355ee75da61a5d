// Opening a model folder: the config, the weights' names/shapes/dtypes checked in one pass,
// and the per-layer conversion to float (see model_folder.hpp for the names).
#include "model/model_folder.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "io/file_io.hpp"
#include "util/format.hpp"

namespace mhascope::model {
namespace {

struct Expected {
  std::string name;  // as stored (prefix included)
  Shape shape;
};

std::string shapeText(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<Expected> expectedTensors(const ModelSpec& s, const std::string& prefix) {
  const std::int64_t d = s.dModel, V = s.vocab, F = s.dFf, kv = static_cast<std::int64_t>(s.kvHeads) * s.dk();
  std::vector<Expected> e;
  if (s.arch == Arch::Gpt2) {
    e.push_back({prefix + "wte.weight", {V, d}});
    e.push_back({prefix + "wpe.weight", {s.maxPositions, d}});
    for (int i = 0; i < s.layers; ++i) {
      const std::string p = prefix + "h." + std::to_string(i) + ".";
      e.push_back({p + "ln_1.weight", {d}});
      e.push_back({p + "ln_1.bias", {d}});
      e.push_back({p + "attn.c_attn.weight", {d, 3 * d}});
      e.push_back({p + "attn.c_attn.bias", {3 * d}});
      e.push_back({p + "attn.c_proj.weight", {d, d}});
      e.push_back({p + "attn.c_proj.bias", {d}});
      e.push_back({p + "ln_2.weight", {d}});
      e.push_back({p + "ln_2.bias", {d}});
      e.push_back({p + "mlp.c_fc.weight", {d, F}});
      e.push_back({p + "mlp.c_fc.bias", {F}});
      e.push_back({p + "mlp.c_proj.weight", {F, d}});
      e.push_back({p + "mlp.c_proj.bias", {d}});
    }
    e.push_back({prefix + "ln_f.weight", {d}});
    e.push_back({prefix + "ln_f.bias", {d}});
  } else {
    e.push_back({"model.embed_tokens.weight", {V, d}});
    for (int i = 0; i < s.layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      e.push_back({p + "input_layernorm.weight", {d}});
      e.push_back({p + "self_attn.q_proj.weight", {d, d}});
      e.push_back({p + "self_attn.k_proj.weight", {kv, d}});
      e.push_back({p + "self_attn.v_proj.weight", {kv, d}});
      e.push_back({p + "self_attn.o_proj.weight", {d, d}});
      if (s.qkvBias) {
        e.push_back({p + "self_attn.q_proj.bias", {d}});
        e.push_back({p + "self_attn.k_proj.bias", {kv}});
        e.push_back({p + "self_attn.v_proj.bias", {kv}});
      }
      if (s.outputBias) e.push_back({p + "self_attn.o_proj.bias", {d}});
      e.push_back({p + "post_attention_layernorm.weight", {d}});
      e.push_back({p + "mlp.gate_proj.weight", {F, d}});
      e.push_back({p + "mlp.up_proj.weight", {F, d}});
      e.push_back({p + "mlp.down_proj.weight", {d, F}});
    }
    e.push_back({"model.norm.weight", {d}});
  }
  if (!s.tiedEmbeddings) e.push_back({"lm_head.weight", {V, d}});
  return e;
}

// Stored tensors the forward does not use but real checkpoints carry: GPT-2's causal-mask
// buffers, old Llama files' RoPE frequencies, an lm_head equal to the tied embedding.
bool ignorable(const ModelSpec& s, const std::string& name) {
  if (s.arch == Arch::Gpt2 && (endsWith(name, ".attn.bias") || endsWith(name, ".attn.masked_bias"))) return true;
  if (s.arch != Arch::Gpt2 && endsWith(name, "rotary_emb.inv_freq")) return true;
  return s.tiedEmbeddings && name == "lm_head.weight";
}

}  // namespace

Result<ModelFolder> ModelFolder::open(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  ModelFolder m;
  if (fs::is_directory(path, ec)) {
    m.dir_ = path;
  } else if (fs::path(path).filename() == "config.json" && fs::exists(path, ec)) {
    m.dir_ = fs::path(path).parent_path().string();
    if (m.dir_.empty()) m.dir_ = ".";
  } else if (!fs::exists(path, ec)) {
    return fileError(path, "no such folder (a model folder holds config.json and model.safetensors)");
  } else {
    return fileError(path, "not a model folder (a folder with config.json and model.safetensors, or its config.json)");
  }
  const std::string configPath = (fs::path(m.dir_) / "config.json").string();
  if (!fs::exists(configPath, ec)) return fileError(m.dir_, "no config.json in the folder");
  auto text = readFile(configPath, 16ull << 20);
  if (!text) return text.error();
  auto spec = parseModelConfig(*text, configPath);
  if (!spec) return spec.error();
  m.spec_ = *spec;
  auto store = WeightStore::openFolder(m.dir_);
  if (!store) return store.error();
  m.store_ = std::move(*store);
  if (m.spec_.arch == Arch::Gpt2 && !m.store_.find("wte.weight") && m.store_.find("transformer.wte.weight")) {
    m.prefix_ = "transformer.";
  }

  // Every layer has at least nine tensors, so a layer count above the stored tensors cannot fit:
  // refuse it here, before naming every layer's tensors would take memory in proportion to it.
  if (static_cast<std::size_t>(m.spec_.layers) > m.store_.tensors().size()) {
    return fileError(configPath, std::string("'") + (m.spec_.arch == Arch::Gpt2 ? "n_layer" : "num_hidden_layers") +
                                     "' is " + std::to_string(m.spec_.layers) + " but the weights hold only " +
                                     std::to_string(m.store_.tensors().size()) + " tensors (each layer has at least 9)");
  }

  // Every mismatch in one message: missing, wrong shape, unreadable dtype, unknown extra.
  std::vector<std::string> problems;
  std::set<std::string> used, dtypes;
  for (const Expected& e : expectedTensors(m.spec_, m.prefix_)) {
    used.insert(e.name);
    const StoredTensor* t = m.store_.find(e.name);
    if (!t) {
      problems.push_back("missing tensor '" + e.name + "'");
    } else if (t->shape != e.shape) {
      problems.push_back("'" + e.name + "' has shape " + shapeText(t->shape) + ", the config needs " + shapeText(e.shape));
    } else if (!t->readable()) {
      problems.push_back("'" + e.name + "' has dtype " + t->dtype + " (mhascope reads F32, F16, BF16, F64)");
    } else {
      dtypes.insert(t->dtype);
    }
  }
  for (const auto& [name, t] : m.store_.tensors()) {
    if (!used.count(name) && !ignorable(m.spec_, name)) problems.push_back("unknown tensor '" + name + "'");
  }
  if (!problems.empty()) {
    std::string list;
    const std::size_t shown = std::min<std::size_t>(problems.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) list += (i ? "; " : "") + problems[i];
    if (problems.size() > shown) list += "; and " + std::to_string(problems.size() - shown) + " more";
    return fileError(m.dir_, std::string("the weights do not fit ") + archName(m.spec_.arch) + "'s config.json: " + list);
  }
  for (const auto& d : dtypes) m.dtype_ += (m.dtype_.empty() ? "" : "+") + d;
  return m;
}

const StoredTensor& ModelFolder::tensor(const std::string& suffix) const {
  return *store_.find(name(suffix));  // open() checked that every expected tensor exists
}

Status ModelFolder::readMatrix(const std::string& suffix, RowMatrix& m, bool transpose) const {
  const StoredTensor& t = tensor(suffix);
  m.resize(t.shape[0], t.shape[1]);
  if (auto s = store_.read(t, m.data()); !s) return s;
  if (transpose) m = m.transpose().eval();  // nn.Linear's (out, in) → (in, out)
  return Ok{};
}

Status ModelFolder::readVector(const std::string& suffix, RowVector& v) const {
  const StoredTensor& t = tensor(suffix);
  v.resize(t.numel);
  return store_.read(t, v.data());
}

Result<LayerWeights> ModelFolder::layer(int i) const { return readLayer(i, true); }
Result<LayerWeights> ModelFolder::attentionLayer(int i) const { return readLayer(i, false); }

Result<LayerWeights> ModelFolder::readLayer(int i, bool withMlp) const {
  if (i < 0 || i >= spec_.layers) {
    return makeError("layer " + std::to_string(i) + " is outside the model's " + std::to_string(spec_.layers) + " layers");
  }
  LayerWeights w;
  auto att = std::make_shared<MhaWeights>();
  const Eigen::Index d = spec_.dModel;
  att->dModel = spec_.dModel;
  Status s = Ok{};
  auto read = [&](const std::string& suffix, auto& target, bool transpose = false) {
    if (!s) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(target)>, RowMatrix>) s = readMatrix(suffix, target, transpose);
    else s = readVector(suffix, target);
  };
  if (spec_.arch == Arch::Gpt2) {
    const std::string p = "h." + std::to_string(i) + ".";
    read(p + "ln_1.weight", w.norm1);
    read(p + "ln_1.bias", w.norm1Bias);
    if (withMlp) {
      read(p + "ln_2.weight", w.norm2);
      read(p + "ln_2.bias", w.norm2Bias);
    }
    // Conv1D: c_attn (d, 3d) is [W_q | W_k | W_v] in y = x W + b already.
    RowMatrix qkv;
    RowVector qkvBias;
    read(p + "attn.c_attn.weight", qkv);
    read(p + "attn.c_attn.bias", qkvBias);
    read(p + "attn.c_proj.weight", att->wo);
    read(p + "attn.c_proj.bias", att->bo);
    if (withMlp) {
      read(p + "mlp.c_fc.weight", w.mlpIn);
      read(p + "mlp.c_fc.bias", w.mlpInBias);
      read(p + "mlp.c_proj.weight", w.mlpOut);
      read(p + "mlp.c_proj.bias", w.mlpOutBias);
    }
    if (!s) return s.error();
    att->wq = qkv.leftCols(d);
    att->wk = qkv.middleCols(d, d);
    att->wv = qkv.rightCols(d);
    att->bq = qkvBias.leftCols(d);
    att->bk = qkvBias.middleCols(d, d);
    att->bv = qkvBias.rightCols(d);
    att->hasBias = true;
  } else {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    read(p + "input_layernorm.weight", w.norm1);
    read(p + "self_attn.q_proj.weight", att->wq, true);
    read(p + "self_attn.k_proj.weight", att->wk, true);
    read(p + "self_attn.v_proj.weight", att->wv, true);
    read(p + "self_attn.o_proj.weight", att->wo, true);
    if (withMlp) {
      read(p + "post_attention_layernorm.weight", w.norm2);
      read(p + "mlp.gate_proj.weight", w.mlpIn, true);
      read(p + "mlp.up_proj.weight", w.mlpUp, true);
      read(p + "mlp.down_proj.weight", w.mlpOut, true);
    }
    const Eigen::Index kv = att->wk.cols();
    att->bq = RowVector::Zero(d);
    att->bk = RowVector::Zero(kv);
    att->bv = RowVector::Zero(kv);
    att->bo = RowVector::Zero(d);
    if (spec_.qkvBias) {
      read(p + "self_attn.q_proj.bias", att->bq);
      read(p + "self_attn.k_proj.bias", att->bk);
      read(p + "self_attn.v_proj.bias", att->bv);
    }
    if (spec_.outputBias) read(p + "self_attn.o_proj.bias", att->bo);
    if (!s) return s.error();
    att->hasBias = spec_.qkvBias || spec_.outputBias;
  }
  w.attention = std::move(att);
  return w;
}

Status ModelFolder::embed(const std::vector<int>& tokens, RowMatrix& x) const {
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  x.resize(T, spec_.dModel);
  const StoredTensor& table = tensor(spec_.arch == Arch::Gpt2 ? "wte.weight" : "model.embed_tokens.weight");
  for (std::int64_t t = 0; t < T; ++t) {
    if (auto s = store_.readRows(table, tokens[static_cast<std::size_t>(t)], 1, x.row(t).data()); !s) return s;
  }
  if (spec_.arch == Arch::Gpt2) {  // learned positions 0 .. T-1
    RowMatrix pos(T, spec_.dModel);
    if (auto s = store_.readRows(tensor("wpe.weight"), 0, T, pos.data()); !s) return s;
    x += pos;
  }
  return Ok{};
}

Status ModelFolder::finalNorm(RowVector& weight, RowVector& bias) const {
  if (spec_.arch == Arch::Gpt2) {
    if (auto s = readVector("ln_f.weight", weight); !s) return s;
    return readVector("ln_f.bias", bias);
  }
  bias.resize(0);
  return readVector("model.norm.weight", weight);
}

const StoredTensor& ModelFolder::embeddingTable() const {
  return tensor(spec_.arch == Arch::Gpt2 ? "wte.weight" : "model.embed_tokens.weight");
}

const StoredTensor& ModelFolder::unembedding() const {
  if (!spec_.tiedEmbeddings) return *store_.find("lm_head.weight");
  return tensor(spec_.arch == Arch::Gpt2 ? "wte.weight" : "model.embed_tokens.weight");
}

Status ModelFolder::unembed(const RowMatrix& normed, RowMatrix& logits) const {
  logits.resize(normed.rows(), spec_.vocab);
  return unembedInto(normed, logits.data());
}

Status ModelFolder::unembedInto(const RowMatrix& normed, float* out) const {
  const StoredTensor& E = unembedding();  // (V, d_model)
  const std::int64_t V = spec_.vocab, block = 4096;
  Eigen::Map<RowMatrix> logits(out, normed.rows(), V);  // (T, V)
  RowMatrix rows;
  for (std::int64_t r0 = 0; r0 < V; r0 += block) {
    const std::int64_t n = std::min(block, V - r0);
    rows.resize(n, spec_.dModel);
    if (auto s = store_.readRows(E, r0, n, rows.data()); !s) return s;
    logits.middleCols(r0, n).noalias() = normed * rows.transpose();
  }
  return Ok{};
}

}  // namespace mhascope::model
