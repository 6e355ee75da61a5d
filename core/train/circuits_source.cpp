// A trained model as the circuits' source of layers (circuits_source.hpp).
#include "train/circuits_source.hpp"

#include <algorithm>

#include "train/layer_model.hpp"

namespace mhascope::train {

analysis::SourceShape ParamsLayers::shape() const {
  analysis::SourceShape s;
  s.layers = p_.cfg.layers;
  s.heads = p_.cfg.heads;
  s.kvHeads = p_.cfg.kv();
  s.dModel = p_.cfg.dModel;
  s.vocab = p_.cfg.vocab;
  return s;
}

Result<analysis::CircuitLayer> ParamsLayers::layer(int l) const {
  if (l < 0 || static_cast<std::size_t>(l) >= p_.blocks.size()) {
    return makeError("layer " + std::to_string(l) + " is outside the model's " + std::to_string(p_.blocks.size()) + " layers");
  }
  const BlockParams& b = p_.blocks[static_cast<std::size_t>(l)];
  const Eigen::Index d = p_.cfg.dModel, kvw = static_cast<Eigen::Index>(p_.cfg.kv()) * p_.cfg.dk();
  analysis::CircuitLayer w;
  w.wq = b.inW.middleRows(0, d).transpose();        // (d, h d_k)
  w.wk = b.inW.middleRows(d, kvw).transpose();      // (d, N d_k)
  w.wv = b.inW.middleRows(d + kvw, kvw).transpose();  // (d, N d_k)
  w.wo = b.outW.transpose();                        // (h d_k, d)
  return w;
}

Status ParamsLayers::embeddingRows(std::int64_t first, std::int64_t n, float* out) const {
  if (first < 0 || n < 0 || first + n > p_.emb.rows()) return makeError("embedding rows out of range");
  std::copy_n(p_.emb.data() + first * p_.emb.cols(), n * p_.emb.cols(), out);
  return Ok{};
}

Status ParamsLayers::unembeddingRows(std::int64_t first, std::int64_t n, float* out) const {
  if (first < 0 || n < 0 || first + n > p_.outW.rows()) return makeError("unembedding rows out of range");
  std::copy_n(p_.outW.data() + first * p_.outW.cols(), n * p_.outW.cols(), out);
  return Ok{};
}

Result<RowVector> ParamsLayers::finalGain() const { return RowVector(RowVector::Ones(p_.cfg.dModel)); }

std::int64_t ParamsLayers::learnedPositions() const { return p_.pos.rows(); }

Status ParamsLayers::positionRows(std::int64_t first, std::int64_t n, float* out) const {
  if (first < 0 || n < 0 || first + n > p_.pos.rows()) return makeError("position rows out of range");
  std::copy_n(p_.pos.data() + first * p_.pos.cols(), n * p_.pos.cols(), out);
  return Ok{};
}

Status checkCircuitsInput(const GptParams& p) {
  const int d = p.cfg.dModel;
  if (p.cfg.heads < 1 || d < 1 || d % p.cfg.heads != 0 || p.blocks.size() != static_cast<std::size_t>(p.cfg.layers)) {
    return makeError("the circuits need d_model (" + std::to_string(d) + ") divisible by h (" +
                     std::to_string(p.cfg.heads) + ") and one block per layer");
  }
  for (std::size_t l = 0; l < p.blocks.size(); ++l) {
    const auto& b = p.blocks[l];
    if (b.inW.rows() != 3 * d || b.inW.cols() != d || b.outW.rows() != d || b.outW.cols() != d) {
      return makeError("the circuits read W_q, W_k and W_v of every head (3 d_model = " + std::to_string(3 * d) +
                       " rows of in_proj_weight); layer " + std::to_string(l) + " has " + std::to_string(b.inW.rows()) +
                       " (K/V heads shared by groups of query heads are not supported by the circuits yet)");
    }
  }
  return Ok{};
}

analysis::Circuits computeCircuits(const GptParams& p, std::optional<double> baseline) {
  // ParamsLayers reads memory it holds: it cannot fail once checkCircuitsInput passed.
  auto c = analysis::computeCircuits(ParamsLayers(p), baseline);
  return c ? std::move(*c) : analysis::Circuits{};
}

Result<Snapshot> sequenceSnapshot(const GptParams& p, const Batch& batch, std::uint64_t budgetBytes) {
  ForwardCache cache;
  cache.memoryBudgetBytes = budgetBytes;
  auto r = forward(p, batch, cache);
  if (!r) return r.error();
  return takeSnapshot(cache, 0);
}

ProbeRollout checkpointRollout(const Checkpoint& ck, const std::string& text, std::uint64_t budgetBytes) {
  ProbeRollout out;
  auto probe = checkpointProbe(ck, 1, text);
  if (!probe) {
    out.rollout.why = probe.error().message;
    return out;
  }
  auto snap = sequenceSnapshot(ck.params, probe->batch, budgetBytes);
  if (!snap) {
    out.rollout.why = snap.error().message;
    return out;
  }
  out.tokens = probe->labels.front();
  out.input = ck.task.kind == TaskKind::Text ? "--text" : "the task's probe sequence";
  out.rollout = analysis::rolloutOf(*snap);
  return out;
}

}  // namespace mhascope::train
