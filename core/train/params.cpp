// Parameter shapes, names (PyTorch state_dict order) and the seeded initialisation.
#include "train/params.hpp"

#include <cmath>
#include <cstdio>

#include "attention/random.hpp"

namespace mhascope::train {

const char* trainPositionsName(TrainPositions p) {
  switch (p) {
    case TrainPositions::Rope: return "rope";
    case TrainPositions::Alibi: return "alibi";
    case TrainPositions::Learned: break;
  }
  return "learned";
}

Result<TrainPositions> trainPositionsFromName(std::string_view name) {
  for (TrainPositions p : {TrainPositions::Learned, TrainPositions::Rope, TrainPositions::Alibi}) {
    if (name == trainPositionsName(p)) return p;
  }
  return makeError("positions '" + std::string(name) + "' is not one of learned, rope, alibi");
}

Status validateConfig(const GptConfig& c) {
  std::vector<std::string> problems;
  if (c.vocab < 2) problems.push_back("vocab must be at least 2, got " + std::to_string(c.vocab));
  if (c.seqLen < 2) problems.push_back("sequence length T must be at least 2, got " + std::to_string(c.seqLen));
  if (c.dModel < 1) problems.push_back("d_model must be at least 1, got " + std::to_string(c.dModel));
  if (c.heads < 1) problems.push_back("heads (h) must be at least 1, got " + std::to_string(c.heads));
  if (c.layers < 1 || c.layers > 4) problems.push_back("layers must be 1 to 4, got " + std::to_string(c.layers));
  if (c.dModel >= 1 && c.heads >= 1 && c.dModel % c.heads != 0) {
    problems.push_back("d_model (" + std::to_string(c.dModel) + ") must be divisible by heads (" +
                       std::to_string(c.heads) + ")");
  }
  if (c.kvHeads < 0 || (c.kvHeads > 0 && c.heads >= 1 && (c.kvHeads > c.heads || c.heads % c.kvHeads != 0))) {
    problems.push_back("kv-heads N (" + std::to_string(c.kvHeads) + ") must divide heads (h = " +
                       std::to_string(c.heads) + "): query head i reads K/V head i / (h/N)");
  }
  if (c.positions == TrainPositions::Rope) {
    if (c.dModel >= 1 && c.heads >= 1 && c.dModel % c.heads == 0 && (c.dModel / c.heads) % 2 != 0) {
      problems.push_back("RoPE turns pairs of features: d_k = d_model / h = " + std::to_string(c.dModel / c.heads) +
                         " must be even");
    }
    if (!(c.ropeBase > 0.0f) || !std::isfinite(c.ropeBase)) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "the RoPE base must be a finite number > 0, got %g", static_cast<double>(c.ropeBase));
      problems.push_back(buf);
    }
  }
  // Limits of a tiny model, each named with its value (a text of 68648 distinct characters says so).
  const struct {
    const char* name;
    int value, max;
  } limits[] = {{"vocab", c.vocab, kMaxVocab}, {"sequence length T", c.seqLen, kMaxSeq},
                {"d_model", c.dModel, kMaxDModel}, {"heads (h)", c.heads, kMaxDModel}};
  for (const auto& l : limits) {
    if (l.value > l.max) {
      problems.push_back(std::string(l.name) + " (" + std::to_string(l.value) + ") is larger than the limit of " +
                         std::to_string(l.max) + " for a tiny model");
    }
  }
  if (problems.empty()) return Ok{};
  if (problems.size() == 1) return makeError("the model settings cannot work: " + problems[0]);  // one line
  std::string msg = "the model settings cannot work:";
  for (const auto& p : problems) msg += "\n  - " + p;
  return makeError(msg);
}

std::vector<NamedParam> GptParams::list() {
  std::vector<NamedParam> out{{"emb.weight", &emb, false}};
  if (cfg.learnedPositions()) out.push_back({"pos.weight", &pos, false});
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    BlockParams& b = blocks[i];
    out.push_back({p + "ln1.weight", &b.ln1w, true});
    out.push_back({p + "ln1.bias", &b.ln1b, true});
    out.push_back({p + "attn.in_proj_weight", &b.inW, false});
    out.push_back({p + "attn.in_proj_bias", &b.inB, true});
    out.push_back({p + "attn.out_proj.weight", &b.outW, false});
    out.push_back({p + "attn.out_proj.bias", &b.outB, true});
    if (cfg.mlp) {
      out.push_back({p + "ln2.weight", &b.ln2w, true});
      out.push_back({p + "ln2.bias", &b.ln2b, true});
      out.push_back({p + "mlp.0.weight", &b.fc1W, false});
      out.push_back({p + "mlp.0.bias", &b.fc1b, true});
      out.push_back({p + "mlp.2.weight", &b.fc2W, false});
      out.push_back({p + "mlp.2.bias", &b.fc2b, true});
    }
  }
  out.push_back({"lnf.weight", &lnfW, true});
  out.push_back({"lnf.bias", &lnfB, true});
  out.push_back({"out.weight", &outW, false});
  out.push_back({"out.bias", &outB, true});
  return out;
}

std::int64_t GptParams::count() const {
  std::int64_t n = 0;
  for (const auto& p : const_cast<GptParams*>(this)->list()) n += p.value->size();
  return n;
}

namespace {
// The separate projections' names and row ranges inside in_proj: q_proj rows [0, d), k_proj
// [d, d + N d_k), v_proj [d + N d_k, d + 2 N d_k).
struct ProjectionPart {
  const char* name;
  std::int64_t first, count;
};
std::vector<ProjectionPart> projectionParts(const GptConfig& cfg) {
  const std::int64_t d = cfg.dModel, kvw = static_cast<std::int64_t>(cfg.kv()) * cfg.dk();
  return {{"q_proj", 0, d}, {"k_proj", d, kvw}, {"v_proj", d + kvw, kvw}};
}
}  // namespace

std::vector<TensorView> checkpointTensors(GptParams& p) {
  std::vector<TensorView> out;
  const bool separate = p.cfg.separateProjections();
  const std::string in = ".attn.in_proj_", outProj = ".attn.out_proj.";
  for (const NamedParam& np : p.list()) {
    const Eigen::Index n = np.isVector ? np.value->cols() : np.value->rows();
    const bool inProj = np.name.find(in) != std::string::npos;
    const auto outAt = np.name.find(outProj);
    if (!separate || (!inProj && outAt == std::string::npos)) {
      out.push_back({np.name, np.value, np.isVector, 0, n});
    } else if (inProj) {  // blocks.i.attn.in_proj_weight -> blocks.i.attn.{q,k,v}_proj.weight
      const std::string prefix = np.name.substr(0, np.name.find(in)) + ".attn.";
      for (const ProjectionPart& part : projectionParts(p.cfg)) {
        out.push_back({prefix + part.name + (np.isVector ? ".bias" : ".weight"), np.value, np.isVector, part.first,
                       part.count});
      }
    } else {  // blocks.i.attn.out_proj.* -> blocks.i.attn.o_proj.*
      out.push_back({np.name.substr(0, outAt) + ".attn.o_proj." + np.name.substr(outAt + outProj.size()), np.value,
                     np.isVector, 0, n});
    }
  }
  return out;
}

std::vector<ParamShape> paramShapes(const GptConfig& cfg) {
  const std::int64_t d = cfg.dModel, V = cfg.vocab, m = cfg.dMlp(), qkv = cfg.qkvRows();
  std::vector<ParamShape> out{{"emb.weight", {V, d}}};
  if (cfg.learnedPositions()) out.push_back({"pos.weight", {cfg.seqLen, d}});
  for (int i = 0; i < cfg.layers; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    out.push_back({p + "ln1.weight", {d}});
    out.push_back({p + "ln1.bias", {d}});
    if (cfg.separateProjections()) {
      for (const ProjectionPart& part : projectionParts(cfg)) out.push_back({p + "attn." + part.name + ".weight", {part.count, d}});
      for (const ProjectionPart& part : projectionParts(cfg)) out.push_back({p + "attn." + part.name + ".bias", {part.count}});
      out.push_back({p + "attn.o_proj.weight", {d, d}});
      out.push_back({p + "attn.o_proj.bias", {d}});
    } else {
      out.push_back({p + "attn.in_proj_weight", {qkv, d}});
      out.push_back({p + "attn.in_proj_bias", {qkv}});
      out.push_back({p + "attn.out_proj.weight", {d, d}});
      out.push_back({p + "attn.out_proj.bias", {d}});
    }
    if (cfg.mlp) {
      out.push_back({p + "ln2.weight", {d}});
      out.push_back({p + "ln2.bias", {d}});
      out.push_back({p + "mlp.0.weight", {m, d}});
      out.push_back({p + "mlp.0.bias", {m}});
      out.push_back({p + "mlp.2.weight", {d, m}});
      out.push_back({p + "mlp.2.bias", {d}});
    }
  }
  out.push_back({"lnf.weight", {d}});
  out.push_back({"lnf.bias", {d}});
  out.push_back({"out.weight", {V, d}});
  out.push_back({"out.bias", {V}});
  return out;
}

std::int64_t paramCount(const GptConfig& cfg) {
  const std::int64_t d = cfg.dModel, V = cfg.vocab, m = cfg.dMlp();
  const std::int64_t qkv = cfg.qkvRows();
  const std::int64_t block = 2 * d + qkv * d + qkv + d * d + d + (cfg.mlp ? 2 * d + m * d + m + d * m + d : 0);
  const std::int64_t pos = cfg.learnedPositions() ? static_cast<std::int64_t>(cfg.seqLen) * d : 0;
  return V * d + pos + cfg.layers * block + 2 * d + V * d + V;
}

GptParams zeroParams(const GptConfig& cfg) {
  GptParams p;
  p.cfg = cfg;
  const Eigen::Index d = cfg.dModel, V = cfg.vocab, m = cfg.dMlp();
  p.emb.setZero(V, d);
  p.pos.setZero(cfg.learnedPositions() ? cfg.seqLen : 0, d);
  const Eigen::Index qkv = cfg.qkvRows();
  p.blocks.resize(static_cast<std::size_t>(cfg.layers));
  for (auto& b : p.blocks) {
    b.ln1w.setZero(1, d);
    b.ln1b.setZero(1, d);
    b.inW.setZero(qkv, d);
    b.inB.setZero(1, qkv);
    b.outW.setZero(d, d);
    b.outB.setZero(1, d);
    if (cfg.mlp) {
      b.ln2w.setZero(1, d);
      b.ln2b.setZero(1, d);
      b.fc1W.setZero(m, d);
      b.fc1b.setZero(1, m);
      b.fc2W.setZero(d, m);
      b.fc2b.setZero(1, d);
    }
  }
  p.lnfW.setZero(1, d);
  p.lnfB.setZero(1, d);
  p.outW.setZero(V, d);
  p.outB.setZero(1, V);
  return p;
}

namespace {
void fillUniform(RowMatrix& m, SplitMix64& rng, float bound) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(-bound, bound);
}
void fillNormal(RowMatrix& m, SplitMix64& rng) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
}
}  // namespace

GptParams initParams(const GptConfig& cfg, std::uint64_t seed) {
  GptParams p = zeroParams(cfg);
  SplitMix64 rng(seed ^ 0x747261696E677074ull);  // "traingpt": its own stream
  const float d = static_cast<float>(cfg.dModel), m = static_cast<float>(cfg.dMlp());
  fillNormal(p.emb, rng);
  fillNormal(p.pos, rng);  // nothing drawn without learned positions
  // Xavier-uniform over the stacked (d + 2 N d_k, d) matrix, as PyTorch's in_proj (3d, d) when N = h.
  const float qkv = static_cast<float>(cfg.qkvRows());
  for (auto& b : p.blocks) {
    b.ln1w.setOnes();
    fillUniform(b.inW, rng, std::sqrt(6.0f / (d + qkv)));
    fillUniform(b.outW, rng, 1.0f / std::sqrt(d));
    if (cfg.mlp) {
      b.ln2w.setOnes();
      fillUniform(b.fc1W, rng, 1.0f / std::sqrt(d));
      fillUniform(b.fc1b, rng, 1.0f / std::sqrt(d));
      fillUniform(b.fc2W, rng, 1.0f / std::sqrt(m));
      fillUniform(b.fc2b, rng, 1.0f / std::sqrt(m));
    }
  }
  p.lnfW.setOnes();
  fillUniform(p.outW, rng, 1.0f / std::sqrt(d));
  fillUniform(p.outB, rng, 1.0f / std::sqrt(d));
  return p;
}

}  // namespace mhascope::train
