// Opening a model folder: the config, the weights' names/shapes/dtypes checked in one pass,
// and the per-layer conversion to float (see model_folder.hpp for the names).
#include "model/model_folder.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "io/file_io.hpp"
#include "util/format.hpp"

namespace mhascope::model {
namespace {

struct Expected {
  std::string name;  // as stored (prefix included)
  Shape shape;
  bool stackedMatrix = false;  // a stack of experts' matrices (E, rows, cols), which may be stored as MXFP4
};

// (…, rows, cols) → (…, cols, rows): MXFP4 stores each expert's matrix with its outputs as rows.
Shape transposedLast(Shape s) {
  if (s.size() >= 2) std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

std::string shapeText(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Every tensor the spec needs, in the family table's order: a run of per-layer entries is repeated
// for each layer before the table goes on.
std::vector<Expected> expectedTensors(const ModelSpec& s, const std::string& prefix) {
  const std::span<const TensorName> table = s.family->tensors;
  std::vector<Expected> e;
  for (std::size_t k = 0; k < table.size();) {
    if (!perLayer(table[k].role)) {
      if (needed(table[k], s)) e.push_back({tensorName(table[k], prefix), storedShape(table[k], s)});
      ++k;
      continue;
    }
    std::size_t end = k;
    while (end < table.size() && perLayer(table[end].role)) ++end;
    for (int i = 0; i < s.layers; ++i) {
      for (std::size_t j = k; j < end;) {
        // A run of per-expert entries is repeated for each expert.
        std::size_t runEnd = j + 1;
        while (perExpert(table[j].role) && runEnd < end && perExpert(table[runEnd].role)) ++runEnd;
        const int experts = perExpert(table[j].role) ? s.moe.experts : 1;
        for (int x = 0; x < experts; ++x) {
          for (std::size_t r = j; r < runEnd; ++r) {
            const TensorName& t = table[r];
            if (x > 0 && storedCopies(t, s) == 1) continue;  // a stack of every expert: once a layer
            if (!neededAt(t, s, i)) continue;
            const Shape shape = storedShape(t, s);
            e.push_back({tensorName(t, prefix, i, x), shape, storedCopies(t, s) == 1 && perExpert(t.role) && shape.size() == 3});
          }
        }
        j = runEnd;
      }
    }
    k = end;
  }
  return e;
}

// Stored tensors the forward does not use but real checkpoints carry: the family's (GPT-2's causal-mask
// buffers, old Llama files' RoPE frequencies), and an lm_head equal to the tied embedding.
bool ignorable(const ModelSpec& s, const std::string& prefix, const std::string& name) {
  for (const char* suffix : s.family->skippedSuffixes) {
    if (endsWith(name, suffix)) return true;
  }
  // The layers past L the forward does not run (DeepSeek-V3's multi-token prediction): "model.layers.{n}." for n in
  // L .. L + storedExtraLayers - 1, as the norm before attention names its layer.
  if (const TensorName* norm = s.family->tensor(TensorRole::Norm1); norm && s.storedExtraLayers > 0) {
    for (int l = s.layers; l < s.layers + s.storedExtraLayers; ++l) {
      const std::string layerName = tensorName(*norm, prefix, l);
      const std::string layerPrefix = layerName.substr(0, layerName.find(std::to_string(l) + ".") + std::to_string(l).size() + 1);
      if (name.compare(0, layerPrefix.size(), layerPrefix) == 0) return true;
    }
  }
  const TensorName* head = s.family->tensor(TensorRole::Unembedding);
  return s.tiedEmbeddings && head && name == tensorName(*head, prefix);
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
  if (!fs::exists(configPath, ec)) {
    // A link that leads nowhere is not a missing file: say what it is.
    if (fs::is_symlink(fs::symlink_status(configPath, ec))) {
      const fs::path to = fs::read_symlink(configPath, ec);
      return fileError(configPath, "is a symbolic link to '" + to.string() + "', which " +
                                       (ec ? "cannot be read" : "does not lead to a file (missing, or a loop of links)"));
    }
    return fileError(m.dir_, "no config.json in the folder");
  }
  auto text = readFile(configPath, 16ull << 20);
  if (!text) return text.error();
  auto spec = parseModelConfig(*text, configPath);
  if (!spec) return spec.error();
  m.spec_ = *spec;
  auto store = WeightStore::openFolder(m.dir_);
  if (!store) return store.error();
  m.store_ = std::move(*store);
  m.identity_ = m.dir_ + "\n" + *text + "\n" + m.store_.identity();
  const Family& family = *m.spec_.family;
  // Some files put the base model's prefix before the names: the first of the family's prefixes under
  // which the token embedding is found, when it is not found without.
  const TensorName& embedding = *family.tensor(TensorRole::TokenEmbedding);
  if (!m.store_.find(tensorName(embedding, ""))) {
    for (const char* prefix : family.basePrefixes) {
      if (m.store_.find(tensorName(embedding, prefix))) {
        m.prefix_ = prefix;
        break;
      }
    }
  }

  // Every layer has at least nine tensors, so a layer count above the stored tensors cannot fit:
  // refuse it here, before naming every layer's tensors would take memory in proportion to it.
  if (static_cast<std::size_t>(m.spec_.layers) > m.store_.tensors().size()) {
    return fileError(configPath, std::string("'") + family.key(SpecField::Layers) + "' is " + std::to_string(m.spec_.layers) + " but the weights hold only " +
                                     std::to_string(m.store_.tensors().size()) + " tensors (each layer has at least 9)");
  }

  // Likewise each mixture layer holds three tensors per expert, where each expert has tensors of its own.
  bool namedExperts = false;
  for (const TensorName& t : family.tensors) namedExperts = namedExperts || (perExpert(t.role) && t.experts == ExpertStore::Named);
  if (const MixtureSpec& moe = m.spec_.moe; moe.experts > 0 && namedExperts) {
    std::int64_t mixtureLayers = 0;
    for (int l = 0; l < m.spec_.layers; ++l) mixtureLayers += moe.mixtureAt(l) ? 1 : 0;
    if (mixtureLayers * moe.experts > static_cast<std::int64_t>(m.store_.tensors().size())) {
      return fileError(configPath, std::string("'") + moe.expertsKey + "' is " + std::to_string(moe.experts) + " on " +
                                       std::to_string(mixtureLayers) + " mixture layers but the weights hold only " +
                                       std::to_string(m.store_.tensors().size()) + " tensors (each expert has 3 a layer)");
    }
  }

  // Every mismatch in one message: missing, wrong shape, unreadable dtype, unknown extra.
  std::vector<std::string> problems;
  std::set<std::string> used, dtypes;
  for (const Expected& e : expectedTensors(m.spec_, m.prefix_)) {
    used.insert(e.name);
    const StoredTensor* t = m.store_.find(e.name);
    if (!t && e.stackedMatrix && m.store_.hasMxfp4(e.name)) {  // <name>_blocks + <name>_scales
      used.insert(e.name + "_blocks");
      used.insert(e.name + "_scales");
      auto shape = m.store_.mxfp4Shape(e.name);
      if (!shape) {
        problems.push_back(shape.error().message);
      } else if (*shape != transposedLast(e.shape)) {
        problems.push_back("MXFP4 tensor '" + e.name + "' holds " + shapeText(*shape) + ", the config needs " +
                           shapeText(transposedLast(e.shape)) + " (each expert's matrix stored (out, in))");
      } else {
        dtypes.insert("MXFP4");
      }
      continue;
    }
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
    if (!used.count(name) && !ignorable(m.spec_, m.prefix_, name)) problems.push_back("unknown tensor '" + name + "'");
  }
  if (!problems.empty()) {
    std::string list;
    const std::size_t shown = std::min<std::size_t>(problems.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) list += (i ? "; " : "") + problems[i];
    if (problems.size() > shown) list += "; and " + std::to_string(problems.size() - shown) + " more";
    return fileError(m.dir_, std::string("the weights do not fit ") + family.modelType + "'s config.json: " + list);
  }
  for (const auto& d : dtypes) m.dtype_ += (m.dtype_.empty() ? "" : "+") + d;
  return m;
}

const StoredTensor& ModelFolder::tensor(const TensorName& t, int layer, int expert) const {
  return *store_.find(tensorName(t, prefix_, layer, expert));  // open() checked that every needed tensor exists
}

Status ModelFolder::readMatrix(const TensorName& t, const StoredTensor& stored, RowMatrix& out) const {
  out.resize(stored.shape[0], stored.shape[1]);
  if (auto s = store_.read(stored, out.data()); !s) return s;
  if (t.stored == Stored::OutIn) out = out.transpose().eval();  // nn.Linear's (out, in) → (in, out)
  return Ok{};
}

const StoredTensor& ModelFolder::tensor(TensorRole role, int layer) const {
  return tensor(*spec_.family->tensor(role), layer);
}

Result<LayerWeights> ModelFolder::layer(int i) const { return readLayer(i, true); }
Result<LayerWeights> ModelFolder::attentionLayer(int i) const { return readLayer(i, false); }

Status ModelFolder::readExpertPart(const TensorName& t, int i, int e, RowMatrix& out) const {
  if (t.experts == ExpertStore::Named) {
    const StoredTensor& stored = tensor(t, i, e);
    if (stored.shape.size() == 1) {
      out.resize(1, stored.numel);
      return store_.read(stored, out.data());
    }
    return readMatrix(t, stored, out);
  }
  const std::string name = tensorName(t, prefix_, i);
  const Eigen::Index rows = dimSize(t.rows, spec_), cols = t.cols == Dim::None ? 1 : dimSize(t.cols, spec_);
  if (const StoredTensor* stored = store_.find(name)) {  // slice e of (E, rows[, cols])
    out.resize(t.cols == Dim::None ? 1 : rows, t.cols == Dim::None ? rows : cols);
    if (auto s = store_.readRows(*stored, e, 1, out.data()); !s) return s;
  } else {  // MXFP4 (open() checked the pair): slice e stored (cols, rows)
    RowMatrix outIn(cols, rows);
    if (auto s = store_.readMxfp4(name, e, 1, outIn.data()); !s) return s;
    out = outIn.transpose();
  }
  if (t.cols != Dim::None && t.stored == Stored::OutIn) out = out.transpose().eval();  // nn.Linear's (out, in)
  return Ok{};
}

namespace {
// A fused gate and up's columns (or a bias's entries) into the two, in the family's order.
void splitGateUp(GateUpOrder order, const RowMatrix& fused /*(n, 2F)*/, RowMatrix& gate /*(n, F)*/, RowMatrix& up) {
  const Eigen::Index F = fused.cols() / 2;
  if (order == GateUpOrder::Halves) {
    gate = fused.leftCols(F);
    up = fused.rightCols(F);
    return;
  }
  gate.resize(fused.rows(), F);
  up.resize(fused.rows(), F);
  for (Eigen::Index c = 0; c < F; ++c) {
    gate.col(c) = fused.col(2 * c);
    up.col(c) = fused.col(2 * c + 1);
  }
}
}  // namespace

Result<ExpertWeights> ModelFolder::expert(int i, int e) const {
  if (i < 0 || i >= spec_.layers || !spec_.moe.mixtureAt(i) || e < 0 || e >= spec_.moe.experts) {
    return makeError("expert " + std::to_string(e) + " of layer " + std::to_string(i) + " is not in the model (" +
                     std::to_string(spec_.moe.experts) + " experts on its mixture layers)");
  }
  ExpertWeights w;
  RowMatrix part, gate, up;
  for (const TensorName& t : spec_.family->tensors) {
    if (!perExpert(t.role) || !needed(t, spec_)) continue;
    if (auto s = readExpertPart(t, i, e, part); !s) return s.error();
    switch (t.role) {
      case TensorRole::ExpertIn: w.gate = std::move(part); break;
      case TensorRole::ExpertUp: w.up = std::move(part); break;
      case TensorRole::ExpertOut: w.down = std::move(part); break;
      case TensorRole::ExpertOutBias: w.downBias = part.row(0); break;
      case TensorRole::ExpertGateUpFused: splitGateUp(spec_.family->gateUp, part, w.gate, w.up); break;
      case TensorRole::ExpertGateUpBias:
        splitGateUp(spec_.family->gateUp, part, gate, up);
        w.gateBias = gate.row(0);
        w.upBias = up.row(0);
        break;
      default: break;
    }
  }
  return w;
}

namespace {
// The gains of RMSNorm-like norms, which a family may store offset (Family::normGainOffset).
bool normGainRole(TensorRole r) {
  return r == TensorRole::Norm1 || r == TensorRole::Norm2 || r == TensorRole::AttentionOutNorm ||
         r == TensorRole::MlpOutNorm || r == TensorRole::QueryNorm || r == TensorRole::KeyNorm ||
         r == TensorRole::FinalNorm;
}
bool attentionBiasRole(TensorRole r) {
  return r == TensorRole::QkvFusedBias || r == TensorRole::QueryBias || r == TensorRole::KeyBias ||
         r == TensorRole::ValueBias || r == TensorRole::OutputBias;
}
}  // namespace

// Every per-layer tensor of the family's table the spec has, read into its place by its role, in the
// table's order.
Result<LayerWeights> ModelFolder::readLayer(int i, bool withMlp) const {
  if (i < 0 || i >= spec_.layers) {
    return makeError("layer " + std::to_string(i) + " is outside the model's " + std::to_string(spec_.layers) + " layers");
  }
  LayerWeights w;
  auto att = std::make_shared<MhaWeights>();
  const Eigen::Index d = spec_.dModel, kv = static_cast<Eigen::Index>(spec_.kvHeads) * spec_.dk(),
                     hq = static_cast<Eigen::Index>(spec_.heads) * spec_.dk();
  att->dModel = spec_.dModel;
  // A projection without a bias adds zeros.
  att->bq = RowVector::Zero(hq);
  att->bk = RowVector::Zero(kv);
  att->bv = RowVector::Zero(kv);
  att->bo = RowVector::Zero(d);
  att->hasBias = false;
  RowMatrix qkv;      // a fused [W_q | W_k | W_v] (d_model, h d_k + 2 N d_k)
  RowVector qkvBias;  // (1, h d_k + 2 N d_k)
  RowMatrix gateUp;   // a fused [gate | up] (d_model, 2 F)
  // A latent-attention layer's projections are its own (W_q and W_o go there too); it has no W_k, W_v.
  std::shared_ptr<LatentWeights> latent = spec_.latent.enabled() ? std::make_shared<LatentWeights>() : nullptr;
  for (const TensorName& t : spec_.family->tensors) {
    // A mixture's experts are read one at a time, by expert().
    if (!perLayer(t.role) || perExpert(t.role) || !neededAt(t, spec_, i) || (!withMlp && mlpRole(t.role))) continue;
    const StoredTensor& stored = tensor(t, i);
    RowMatrix* matrix = nullptr;
    RowVector* vector = nullptr;
    switch (t.role) {
      case TensorRole::Norm1: vector = &w.norm1; break;
      case TensorRole::Norm1Bias: vector = &w.norm1Bias; break;
      case TensorRole::QkvFused: matrix = &qkv; break;
      case TensorRole::QkvFusedBias: vector = &qkvBias; break;
      case TensorRole::Query: matrix = latent ? &latent->wq : &att->wq; break;
      case TensorRole::QueryBias: vector = &att->bq; break;
      case TensorRole::Key: matrix = &att->wk; break;
      case TensorRole::KeyBias: vector = &att->bk; break;
      case TensorRole::Value: matrix = &att->wv; break;
      case TensorRole::ValueBias: vector = &att->bv; break;
      case TensorRole::QueryNorm: vector = &w.qNorm; break;
      case TensorRole::KeyNorm: vector = &w.kNorm; break;
      case TensorRole::Sinks: vector = &w.sinks; break;
      case TensorRole::Output: matrix = latent ? &latent->wo : &att->wo; break;
      case TensorRole::LatentQueryA: matrix = &latent->wqa; break;
      case TensorRole::LatentQueryNorm: vector = &latent->qNorm; break;
      case TensorRole::LatentQueryB: matrix = &latent->wqb; break;
      case TensorRole::LatentKvA: matrix = &latent->wkva; break;
      case TensorRole::LatentKvNorm: vector = &latent->kvNorm; break;
      case TensorRole::LatentKvB: matrix = &latent->wkvb; break;
      case TensorRole::OutputBias: vector = &att->bo; break;
      case TensorRole::Norm2: vector = &w.norm2; break;
      case TensorRole::Norm2Bias: vector = &w.norm2Bias; break;
      case TensorRole::AttentionOutNorm: vector = &w.attentionOutNorm; break;
      case TensorRole::MlpOutNorm: vector = &w.mlpOutNorm; break;
      case TensorRole::MlpIn: matrix = &w.mlpIn; break;
      case TensorRole::MlpInBias: vector = &w.mlpInBias; break;
      case TensorRole::MlpUp: matrix = &w.mlpUp; break;
      case TensorRole::MlpGateUpFused: matrix = &gateUp; break;
      case TensorRole::MlpOut: matrix = &w.mlpOut; break;
      case TensorRole::MlpOutBias: vector = &w.mlpOutBias; break;
      case TensorRole::Router: matrix = &w.router; break;
      case TensorRole::RouterBias: vector = &w.routerBias; break;
      case TensorRole::RouterChoiceBias: vector = &w.routerChoiceBias; break;
      case TensorRole::SharedIn: matrix = &w.sharedIn; break;
      case TensorRole::SharedUp: matrix = &w.sharedUp; break;
      case TensorRole::SharedOut: matrix = &w.sharedOut; break;
      default: continue;
    }
    if (matrix) {
      if (auto s = readMatrix(t, stored, *matrix); !s) return s.error();
    } else {
      vector->resize(stored.numel);
      if (auto s = store_.read(stored, vector->data()); !s) return s.error();
    }
    if (vector && normGainRole(t.role)) vector->array() += spec_.family->normGainOffset;  // Gemma's (1 + w)
    if (attentionBiasRole(t.role)) att->hasBias = true;
  }
  if (qkv.size() > 0) {  // [W_q | W_k | W_v], y = x W + b
    att->wq = qkv.leftCols(hq);
    att->wk = qkv.middleCols(hq, kv);
    att->wv = qkv.rightCols(kv);
  }
  if (gateUp.size() > 0) splitGateUp(spec_.family->gateUp, gateUp, w.mlpIn, w.mlpUp);  // the gate is the MLP's input
  if (qkvBias.size() > 0) {
    att->bq = qkvBias.leftCols(hq);
    att->bk = qkvBias.middleCols(hq, kv);
    att->bv = qkvBias.rightCols(kv);
  }
  if (latent) {
    w.latent = std::move(latent);
  } else {
    w.attention = std::move(att);
  }
  return w;
}

Status ModelFolder::embed(const std::vector<int>& tokens, RowMatrix& x) const {
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  x.resize(T, spec_.dModel);
  const StoredTensor& table = tensor(TensorRole::TokenEmbedding);
  for (std::int64_t t = 0; t < T; ++t) {
    if (auto s = store_.readRows(table, tokens[static_cast<std::size_t>(t)], 1, x.row(t).data()); !s) return s;
  }
  // Gemma multiplies its embeddings by sqrt(d_model), rounded to float as its normalizer tensor is.
  if (spec_.family->scaleEmbeddings) x *= static_cast<float>(std::sqrt(static_cast<double>(spec_.dModel)));
  if (spec_.family->positions == PositionKind::Learned) {  // learned positions 0 .. T-1
    RowMatrix pos(T, spec_.dModel);
    if (auto s = store_.readRows(tensor(TensorRole::PositionEmbedding), 0, T, pos.data()); !s) return s;
    x += pos;
  }
  return Ok{};
}

Status ModelFolder::finalNorm(RowVector& weight, RowVector& bias) const {
  const StoredTensor& w = tensor(TensorRole::FinalNorm);
  weight.resize(w.numel);
  if (auto s = store_.read(w, weight.data()); !s) return s;
  weight.array() += spec_.family->normGainOffset;  // Gemma's (1 + w)
  const TensorName* b = spec_.family->tensor(TensorRole::FinalNormBias);
  if (!b || !needed(*b, spec_)) {
    bias.resize(0);
    return Ok{};
  }
  const StoredTensor& stored = tensor(*b, -1);
  bias.resize(stored.numel);
  return store_.read(stored, bias.data());
}

const StoredTensor& ModelFolder::embeddingTable() const { return tensor(TensorRole::TokenEmbedding); }

const StoredTensor& ModelFolder::positionTable() const { return tensor(TensorRole::PositionEmbedding); }

const StoredTensor& ModelFolder::unembedding() const {
  return spec_.tiedEmbeddings ? tensor(TensorRole::TokenEmbedding) : tensor(TensorRole::Unembedding);
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
