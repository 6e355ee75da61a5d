// A model folder's forward, one block at a time (see forward.hpp): each layer's weights are
// converted from the mapped file just before the layer runs and dropped after it, so the float
// copy of the model never exists whole.
#include "model/forward.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <optional>

#include "model/families/family.hpp"
#include "model/forward_steps.hpp"
#include "util/finite.hpp"
#include "util/format.hpp"

namespace mhascope::model {
namespace {

// The MLP's activations over a whole (T, F) table in place, vectorised (Eigen's packet tanh and exp
// instead of one libm call per element, which took a tenth of a GPT-2-small forward): the formulas
// of geluTanh and silu, within a few float ulps of them.
void geluTanhInPlace(RowMatrix& h /*(T, F)*/) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  h.array() = 0.5f * h.array() * (1.0f + (k * (h.array() + 0.044715f * h.array().cube())).tanh());
}

// GeGLU's gelu_tanh(gate) * up, in place in gate: geluTanhInPlace's formula.
void geluTanhTimesInPlace(RowMatrix& gate /*(T, F)*/, const RowMatrix& up /*(T, F)*/) {
  geluTanhInPlace(gate);
  gate.array() *= up.array();
}

// SwiGLU's silu(gate) * up, in place in gate.
void siluTimesInPlace(RowMatrix& gate /*(T, F)*/, const RowMatrix& up /*(T, F)*/) {
  gate.array() = gate.array() / (1.0f + (-gate.array()).exp()) * up.array();
}

// gpt-oss's clamped SwiGLU (u + 1) · g · σ(1.702 g), g the gate held at most c and u the up within ±c, in place in
// gate, in the order GptOssExperts computes it (g σ(α g) first).
void clampedSwiGluInPlace(RowMatrix& gate /*(T, F)*/, const RowMatrix& up /*(T, F)*/, float c) {
  constexpr float kAlpha = 1.702f;
  const Eigen::ArrayXXf g = gate.array().min(c);
  const Eigen::ArrayXXf glu = g * (1.0f + (-(g * kAlpha)).exp()).inverse();
  gate.array() = (up.array().max(-c).min(c) + 1.0f) * glu;
}

// The MLP's activation of a hidden table h (T, F) in place, by the family's kind: gelu_new of h alone, or a gated
// unit of the gate h and `up`.
void activateInPlace(const ModelSpec& spec, RowMatrix& h /*(T, F)*/, const RowMatrix& up /*(T, F)*/) {
  switch (spec.family->mlp) {
    case MlpKind::GeluTanh: geluTanhInPlace(h); return;
    case MlpKind::SwiGlu: siluTimesInPlace(h, up); return;
    case MlpKind::GeGluTanh: geluTanhTimesInPlace(h, up); return;
    case MlpKind::ClampedSwiGlu: clampedSwiGluInPlace(h, up, static_cast<float>(spec.swigluLimit)); return;
  }
}

// out = the family's norm of each row of x (w, and b for LayerNorm).
void familyNorm(const ModelSpec& spec, const RowMatrix& x, const RowVector& w, const RowVector& b, RowMatrix& out) {
  switch (spec.family->norm) {
    case NormKind::LayerNorm: layerNorm(x, w, b, spec.normEps, out); return;
    case NormKind::RmsNorm: rmsNorm(x, w, spec.normEps, out); return;
  }
}

}  // namespace

void layerNorm(const RowMatrix& x, const RowVector& w, const RowVector& b, double eps, RowMatrix& out) {
  out.resize(x.rows(), x.cols());
  const double n = static_cast<double>(x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    double mean = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) mean += x(r, c);
    mean /= n;
    double var = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) var += (x(r, c) - mean) * (x(r, c) - mean);
    const double inv = 1.0 / std::sqrt(var / n + eps);
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      out(r, c) = static_cast<float>((x(r, c) - mean) * inv) * w(c) + b(c);
    }
  }
}

void rmsNorm(const RowMatrix& x, const RowVector& w, double eps, RowMatrix& out) {
  out.resize(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    double sq = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) sq += static_cast<double>(x(r, c)) * x(r, c);
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(x.cols()) + eps));
    for (Eigen::Index c = 0; c < x.cols(); ++c) out(r, c) = w(c) * (x(r, c) * inv);
  }
}

float geluTanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

namespace detail {
double forwardBytes(const ModelSpec& s, std::int64_t T, const ForwardOptions& opt, bool withLogits) {
  const double f = 4.0, L = s.layers, h = s.heads, d = s.dModel, F = s.dFf, V = s.vocab, t = static_cast<double>(T);
  double bytes = 0;
  if (opt.keepAttention) bytes += L * h * t * t * f;
  if (opt.keepHidden) bytes += L * t * d * f;
  if (withLogits) bytes += t * V * f;
  std::int64_t resident = 0;  // the largest layer's weights in float (a mixture's: one expert at a time)
  for (int l = 0; l < s.layers; ++l) resident = std::max(resident, layerResidentParameters(s, l));
  bytes += static_cast<double>(resident) * f;
  bytes += t * (4 * d + 2 * F) * f + 4096.0 * d * f;           // x, norms, the MLP, an unembedding block
  if (s.moe.experts > 0) {  // the router's logits, the routed sum, one expert's rows and hidden tables, the routing
    const double E = s.moe.experts, Fe = s.moe.expertFf, k = s.moe.perToken;
    bytes += t * (2 * E + 3 * d + 2 * Fe) * f + L * t * k * 8.0;
  }
  const int traces = opt.traceLayer >= 0 ? 2 : 1;
  bytes += traces * estimateTraceBytes(1, T, T, s.dModel, s.heads, s.headDim);
  if (s.latent.enabled()) {  // the absorbed form's weights and both outputs, the expanded keys and values, q
    const double dq = s.latent.nopeDim + s.latent.ropeDim, kvb = s.latent.nopeDim + s.latent.valueDim;
    bytes += (h * t * t + 2 * t * d + t * h * (dq + kvb + s.latent.valueDim) + t * (s.latent.kvRank + 2 * dq)) * f;
  }
  return bytes;
}
}  // namespace detail

double estimateForwardBytes(const ModelSpec& s, std::int64_t T, const ForwardOptions& opt) {
  return detail::forwardBytes(s, T, opt, true);
}

AttentionOptions attentionOptionsFor(const ModelSpec& spec, int layer) {
  const LayerKind kind = spec.layerKind(layer);
  AttentionOptions ao;
  ao.heads = spec.heads;
  ao.kvHeads = spec.kvHeads;
  ao.headDim = spec.headDim;
  ao.causal = true;
  ao.window = kind.window;
  if (spec.queryPreAttnScalar > 0) {  // Gemma's scale, not d_k's
    ao.scale = ScaleKind::Given;
    ao.scaleFactor = static_cast<float>(std::pow(spec.queryPreAttnScalar, -0.5));
  }
  ao.softcap = static_cast<float>(spec.attnSoftcap);
  if (spec.rope() && kind.rope) {
    ModelSpec turned = spec;  // this layer's base (Gemma 3's local layers have their own)
    if (kind.ropeTheta > 0) turned.ropeTheta = kind.ropeTheta;
    ao.positions = AttnPositions::Rope;
    ao.ropeBase = static_cast<float>(turned.ropeTheta);
    ao.ropeStyle = spec.family->ropeStyle;  // every family today: Hugging Face's rotate_half, pairs (i, i + d_k/2)
    // Llama 3.1's stretched frequencies are not base^(-2i/d_k): the engine is given them outright, so the
    // layer still records its rotated q and k.
    if (spec.ropeScaling.enabled || spec.yarn.enabled) ao.ropeInvFreq = ropeInverseFrequencies(turned);
    if (spec.yarn.enabled) ao.ropeGain = static_cast<float>(spec.yarn.attentionFactor);  // cos and sin times it
  }
  return ao;
}

LatentSizes latentSizesOf(const ModelSpec& spec) {
  const LatentSpec& a = spec.latent;
  LatentSizes z;
  z.dModel = spec.dModel;
  z.heads = spec.heads;
  z.qRank = a.qRank;
  z.kvRank = a.kvRank;
  z.ropeDim = a.ropeDim;
  z.nopeDim = a.nopeDim;
  z.valueDim = a.valueDim;
  z.ropeBase = static_cast<float>(spec.ropeTheta);
  z.ropeStyle = a.interleaved ? RopeStyle::Interleaved : RopeStyle::Half;
  if (spec.ropeScaling.enabled || spec.yarn.enabled) {  // the frequencies of the d_r rotary features
    ModelSpec rotary = spec;
    rotary.headDim = a.ropeDim;
    z.ropeInvFreq = ropeInverseFrequencies(rotary);
  }
  if (spec.yarn.enabled) z.ropeGain = static_cast<float>(spec.yarn.attentionFactor);
  z.scale = static_cast<float>(a.scale);
  z.normEps = 1e-6f;  // DeepSeek's q_a_layernorm and kv_a_layernorm keep RMSNorm's default eps
  return z;
}

AttentionOptions layerOptions(const ModelSpec& spec, const LayerWeights& lw, int layer) {
  AttentionOptions o = attentionOptionsFor(spec, layer);
  if (lw.qNorm.size() > 0) {  // the q/k norm, with the family's eps (its RMSNorms share one)
    o.qNorm.assign(lw.qNorm.data(), lw.qNorm.data() + lw.qNorm.size());
    o.kNorm.assign(lw.kNorm.data(), lw.kNorm.data() + lw.kNorm.size());
    o.qkNormEps = static_cast<float>(spec.normEps);
  }
  if (lw.sinks.size() > 0) o.sinkLogits.assign(lw.sinks.data(), lw.sinks.data() + lw.sinks.size());  // gpt-oss's
  return o;
}

namespace {
// normed (T, d_model): the model's final norm of the residual stream x.
Status finalNorm(const ModelFolder& model, const RowMatrix& x, RowMatrix& normed) {
  const ModelSpec& spec = model.spec();
  RowVector nw, nb;
  if (auto s = model.finalNorm(nw, nb); !s) return s.error();
  familyNorm(spec, x, nw, nb, normed);
  return Ok{};
}
}  // namespace

// logits = c tanh(logits / c), Gemma's final softcap, over n logits in place (none when the spec has no cap).
void capLogits(const ModelSpec& spec, float* logits, std::size_t n) {
  if (!(spec.finalSoftcap > 0)) return;
  const float c = static_cast<float>(spec.finalSoftcap);
  Eigen::Map<Eigen::ArrayXf> v(logits, static_cast<Eigen::Index>(n));
  v = c * (v / c).tanh();
}

Status finalLogits(const ModelFolder& model, const RowMatrix& x, RowMatrix& logits) {
  RowMatrix normed;  // (T, d_model)
  if (auto s = finalNorm(model, x, normed); !s) return s;
  if (auto s = model.unembed(normed, logits); !s) return s;
  capLogits(model.spec(), logits.data(), static_cast<std::size_t>(logits.size()));
  return Ok{};
}

namespace detail {

Status startForward(const ModelFolder& model, const std::vector<int>& tokens, const ForwardOptions& opt,
                    double estimate, ForwardState& st) {
  const ModelSpec& spec = model.spec();
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  if (T == 0) return makeError("enter at least one token");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= spec.vocab) {
      return makeError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                       " is outside the vocabulary of " + std::to_string(spec.vocab) + " (" + model.dir() + ")");
    }
  }
  if (spec.family->positions == PositionKind::Learned && T > spec.maxPositions) {
    return makeError(std::to_string(T) + " tokens are more than the " + std::to_string(spec.maxPositions) +
                     " positions " + spec.family->displayName + "'s learned table has (" +
                     spec.family->key(SpecField::MaxPositions) + " in " + model.dir() + "/config.json)");
  }
  if (!opt.tokenLabels.empty() && static_cast<std::int64_t>(opt.tokenLabels.size()) != T) {
    return makeError(std::to_string(opt.tokenLabels.size()) + " token labels for " + std::to_string(T) + " tokens");
  }
  if (estimate > static_cast<double>(opt.memoryBudgetBytes)) {
    return makeError("the forward of " + std::to_string(T) + " tokens through " + std::to_string(spec.layers) +
                     " layers needs about " + formatBytes(estimate) + ", more than the memory budget of " +
                     formatBytes(static_cast<double>(opt.memoryBudgetBytes)) + " (raise it with --memory-budget MiB)");
  }

  if (auto s = model.embed(tokens, st.x); !s) return s;
  if (opt.residuals) st.tokens = tokens;
  std::vector<std::string> labels = opt.tokenLabels;
  if (labels.empty()) {
    for (int id : tokens) labels.push_back(std::to_string(id));
  }
  st.in.queryTokens = {labels};
  st.in.keyTokens = {labels};
  st.in.selfAttention = true;
  st.options = attentionOptionsFor(spec);
  st.options.memoryBudgetBytes = opt.memoryBudgetBytes;
  st.options.threads = opt.threads;
  return Ok{};
}

void attentionInput(const ModelSpec& spec, const LayerWeights& lw, int layer, ForwardState& st) {
  // The layer's own options (its window, positions, base, q/k norm), with the forward's budget and threads.
  AttentionOptions o = layerOptions(spec, lw, layer);
  o.memoryBudgetBytes = st.options.memoryBudgetBytes;
  o.threads = st.options.threads;
  o.recordEveryStage = st.options.recordEveryStage;
  st.options = std::move(o);
  RowMatrix& a = st.a;
  if (spec.family->normsBefore()) {
    familyNorm(spec, st.x, lw.norm1, lw.norm1Bias, a);
  } else {
    a = st.x;  // a post-norm block (OLMo 2): attention reads the stream itself
  }
  st.in.query.reshape({st.batch, a.rows() / st.batch, a.cols()}, {"B", "T_q", "d_model"});
  if (st.batch > 1) {  // the labels are one sequence's: a batch's pass is recorded by nobody
    st.in.queryTokens.clear();
    st.in.keyTokens.clear();
  }
  std::copy(a.data(), a.data() + a.size(), st.in.query.data.begin());
  st.in.key = st.in.query;
  st.in.value = st.in.query;
}

namespace {
// Where float32 first overflowed, once: every later number inherits it.
void noteNonFinite(const float* v, std::size_t n, const std::string& where, std::string& note) {
  if (!note.empty()) return;
  const std::size_t bad = countNonFinite(v, n);
  if (bad > 0) {
    note = where + ": " + withThousands(static_cast<std::int64_t>(bad)) + " of " +
           withThousands(static_cast<std::int64_t>(n)) + " values are NaN or ±Inf (float32 overflowed)";
  }
}

// x += norm(f) for a sublayer's output f (T, d_model) in a family whose blocks norm the outputs (OLMo 2's and
// Gemma's), with that sublayer's norm gain.
void addNormed(const ModelSpec& spec, const RowVector& outNorm, const RowMatrix& f, ForwardState& st) {
  familyNorm(spec, f, outNorm, RowVector(), st.m);
  st.x += st.m;
}

// m (T, d_model): the MLP's input, norm2(x), or x itself in a post-norm block (OLMo 2).
void mlpInput(const ModelSpec& spec, const LayerWeights& lw, const RowMatrix& x, RowMatrix& m) {
  if (spec.family->normsBefore()) {
    familyNorm(spec, x, lw.norm2, lw.norm2Bias, m);
  } else {
    m = x;
  }
}

// The router of mixture layer `layer` on its MLP input m (T, d_model): z = m W_router (+ b_router) (T, E), then the rule.
LayerRouting routeLayer(const ModelSpec& spec, const LayerWeights& lw, const RowMatrix& m) {
  RowMatrix z = m * lw.router;  // (T, E)
  if (lw.routerBias.size() > 0) z.rowwise() += lw.routerBias;
  return routeTokens(spec.moe.rule, z, spec.moe.perToken, lw.routerChoiceBias.size() > 0 ? &lw.routerChoiceBias : nullptr);
}

// st.routed (T, d_model) = sum over each token's k experts of weight · expert(m): each expert the tokens chose is
// converted once and run on those tokens' rows only; an expert no token chose is never read.
Status mixtureOutput(const ModelFolder& model, int layer, const LayerWeights& lw, ForwardState& st, LayerRouting& routing) {
  const ModelSpec& spec = model.spec();
  const RowMatrix& m = st.m;
  const Eigen::Index T = m.rows(), d = m.cols();
  routing = routeLayer(spec, lw, m);
  const int k = routing.k;
  std::vector<std::vector<std::pair<Eigen::Index, float>>> byExpert(static_cast<std::size_t>(spec.moe.experts));
  for (Eigen::Index t = 0; t < T; ++t) {
    for (int j = 0; j < k; ++j) byExpert[static_cast<std::size_t>(routing.expert(t, j))].push_back({t, routing.weight(t, j)});
  }
  st.routed.setZero(T, d);
  RowMatrix rows;  // (T_e, d_model) the rows of the tokens that chose the expert
  for (int e = 0; e < spec.moe.experts; ++e) {
    const auto& chosen = byExpert[static_cast<std::size_t>(e)];
    if (chosen.empty()) continue;
    auto w = model.expert(layer, e);
    if (!w) return w.error();
    rows.resize(static_cast<Eigen::Index>(chosen.size()), d);
    for (std::size_t i = 0; i < chosen.size(); ++i) rows.row(static_cast<Eigen::Index>(i)) = m.row(chosen[i].first);
    st.hmid.noalias() = rows * w->gate;  // (T_e, F_e)
    st.up.noalias() = rows * w->up;
    if (w->gateBias.size() > 0) st.hmid.rowwise() += w->gateBias;
    if (w->upBias.size() > 0) st.up.rowwise() += w->upBias;
    activateInPlace(spec, st.hmid, st.up);
    rows.noalias() = st.hmid * w->down;  // (T_e, d_model): the expert's output on its tokens
    if (w->downBias.size() > 0) rows.rowwise() += w->downBias;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      st.routed.row(chosen[i].first) += chosen[i].second * rows.row(static_cast<Eigen::Index>(i));
    }
  }
  if (lw.sharedIn.size() > 0) {  // DeepSeek's shared experts: one MLP every token goes through, unweighted
    st.hmid.noalias() = m * lw.sharedIn;  // (T, F_s)
    st.up.noalias() = m * lw.sharedUp;
    activateInPlace(spec, st.hmid, st.up);
    st.routed.noalias() += st.hmid * lw.sharedOut;
  }
  return Ok{};
}

// x += mlp(norm2(x)): GPT-2's gelu_new MLP with biases, Llama's SwiGLU down(silu(gate m) * up m), or a mixture of
// experts (mixtureOutput, its routing into `routing`); a bias is added only where the layer has one. A post-norm
// block (OLMo 2) reads x itself and norms the output.
Status addMlp(const ModelFolder& model, int layer, const LayerWeights& lw, ForwardState& st, LayerRouting* routing,
              const ForwardHook& hook) {
  const ModelSpec& spec = model.spec();
  auto visit = [&](RowMatrix& out) {
    if (hook) hook({HookPoint::MlpOut, layer}, MatrixMap(out.data(), out.rows(), out.cols()));
  };
  RowMatrix& x = st.x;
  mlpInput(spec, lw, x, st.m);
  if (spec.moe.mixtureAt(layer)) {
    LayerRouting r;
    if (auto s = mixtureOutput(model, layer, lw, st, r); !s) return s;
    if (routing) *routing = std::move(r);
    visit(st.routed);
    if (!spec.family->normsAfter()) {
      x += st.routed;
    } else {
      addNormed(spec, lw.mlpOutNorm, st.routed, st);
    }
    return Ok{};
  }
  st.hmid.noalias() = st.m * lw.mlpIn;  // SwiGLU: the gate
  if (lw.mlpInBias.size() > 0) st.hmid.rowwise() += lw.mlpInBias;
  if (spec.family->gatedMlp()) st.up.noalias() = st.m * lw.mlpUp;
  activateInPlace(spec, st.hmid, st.up);
  if (!spec.family->normsAfter() && !hook) {
    x.noalias() += st.hmid * lw.mlpOut;
    if (lw.mlpOutBias.size() > 0) x.rowwise() += lw.mlpOutBias;
    return Ok{};
  }
  st.up.noalias() = st.hmid * lw.mlpOut;  // (T, d_model): the MLP's output as a table (for the hook; a post-norm block norms it)
  if (lw.mlpOutBias.size() > 0) st.up.rowwise() += lw.mlpOutBias;
  visit(st.up);
  if (!spec.family->normsAfter()) {
    x += st.up;
  } else {
    addNormed(spec, lw.mlpOutNorm, st.up, st);
  }
  return Ok{};
}
}  // namespace

namespace {
// The forward's hook on the engine's tables of layer `layer` (HookPoint's shapes: one (rows, columns) table each).
std::function<void(StageId, Tensor&)> engineHook(const ForwardHook& hook, int layer) {
  return [hook, layer](StageId id, Tensor& t) {
    HookPoint p = HookPoint::HeadOut;
    switch (id) {
      case StageId::QHeads: case StageId::QNormed: case StageId::QRotated: p = HookPoint::Query; break;
      case StageId::KHeads: case StageId::KNormed: case StageId::KRotated: p = HookPoint::Key; break;
      case StageId::VHeads: p = HookPoint::Value; break;
      case StageId::Weights: p = HookPoint::Pattern; break;
      case StageId::Concat: p = HookPoint::HeadOut; break;
      default: return;
    }
    const std::int64_t cols = t.dim(t.rank() - 1);
    hook({p, layer}, MatrixMap(t.ptr(), static_cast<Eigen::Index>(t.numel() / cols), static_cast<Eigen::Index>(cols)));
  };
}
}  // namespace

Status runLayers(const ModelFolder& model, int stop, const ForwardOptions& opt, ForwardState& st, ForwardResult& out) {
  const ModelSpec& spec = model.spec();
  const std::int64_t T = st.x.rows(), d = spec.dModel;
  if (st.batch > 1 && (spec.family->latentAttention() || opt.keepAttention || opt.traceLayer >= 0 || opt.residuals)) {
    return makeError("a forward of several stacked sequences keeps no attention, trace or residual cache and runs no "
                     "latent-attention layer");
  }
  ResidualCache* kept = opt.hook ? nullptr : opt.residuals.get();
  int first = st.firstLayer;
  // Nothing of the layers before the traced one (or before `stop`) is wanted: start from the
  // deepest kept stream.
  if (kept && !opt.keepAttention && !opt.keepHidden && !opt.onAttention) {
    const int upTo = opt.traceLayer >= 0 ? std::min(stop, opt.traceLayer) : stop;
    if (auto from = kept->deepest(model.identity(), st.tokens, upTo)) {
      first = from->first;
      st.x = std::move(from->second);
      if (opt.progress && !opt.progress(first)) return makeError(kForwardCancelled);
    }
  }
  if (spec.moe.experts > 0) out.routing.resize(static_cast<std::size_t>(spec.layers));
  for (int l = first; l < stop; ++l) {
    std::optional<LayerWeights> converted;
    const LayerWeights* lw = st.layers ? &(*st.layers)[static_cast<std::size_t>(l)] : nullptr;
    if (!lw) {
      auto read = model.layer(l);
      if (!read) return read.error();
      lw = &converted.emplace(std::move(*read));
    }
    if (opt.hook) opt.hook({HookPoint::ResidPre, l}, MatrixMap(st.x.data(), T, d));
    // Attention on the normed stream, through the engine.
    attentionInput(spec, *lw, l, st);
    st.options.recordEveryStage = l == opt.traceLayer || opt.recordScores;
    if (opt.hook) st.options.stageHook = engineHook(opt.hook, l);
    Trace& trace = l == opt.traceLayer ? out.trace : st.scratch;
    if (lw->latent) {  // multi-head latent attention: its own projections, recorded in the pipeline's stages
      LatentRecord rec;
      rec.trace = &trace;
      rec.tokens = st.in.queryTokens.at(0);
      rec.layer = l;  // the trace is this layer's: its titles and file names say so
      rec.everyStage = st.options.recordEveryStage;
      auto lr = latentAttention(st.a, *lw->latent, latentSizesOf(spec), rec);
      if (!lr) return makeError("layer " + std::to_string(l) + ": " + lr.error().message);
      out.absorbedWeightDiff = std::max(out.absorbedWeightDiff, lr->maxWeightDiff);
      out.absorbedOutputDiff = std::max(out.absorbedOutputDiff, lr->maxOutputDiff);
    } else if (auto s = forward(st.in, std::shared_ptr<const MhaWeights>(lw->attention), st.options, trace); !s) {
      return makeError("layer " + std::to_string(l) + ": " + s.error().message);
    }
    if (opt.hook) opt.hook({HookPoint::AttnOut, l}, MatrixMap(trace.tensor(StageId::Output).ptr(), T, d));
    std::optional<RowMatrix> next;
    if (kept) next = kept->at(model.identity(), st.tokens, l + 1);
    LayerRouting* routing = spec.moe.mixtureAt(l) ? &out.routing[static_cast<std::size_t>(l)] : nullptr;
    if (next) {
      if (routing) {  // the experts are not run, but which ones each token goes to is still said: the router alone
        RowMatrix afterAttention = st.x + ConstMatrixMap(trace.tensor(StageId::Output).ptr(), T, d);
        if (spec.family->normsAfter()) {
          familyNorm(spec, ConstMatrixMap(trace.tensor(StageId::Output).ptr(), T, d), lw->attentionOutNorm, RowVector(), st.m);
          afterAttention = st.x + st.m;
        }
        mlpInput(spec, *lw, afterAttention, st.m);
        *routing = routeLayer(spec, *lw, st.m);
      }
      st.x = std::move(*next);  // the residual update and the MLP, as an earlier forward computed them
    } else {
      if (spec.family->normsAfter()) {
        st.up = ConstMatrixMap(trace.tensor(StageId::Output).ptr(), T, d);
        addNormed(spec, lw->attentionOutNorm, st.up, st);
      } else {
        st.x += ConstMatrixMap(trace.tensor(StageId::Output).ptr(), T, d);
      }
      noteNonFinite(st.x.data(), static_cast<std::size_t>(st.x.size()), "layer " + std::to_string(l) + "'s attention output", out.nonFinite);
    }
    if (opt.onAttention) {
      opt.onAttention({l, &trace.tensor(StageId::Weights), &trace.tensor(StageId::Concat), lw->attention.get(),
                       lw->latent.get(), &trace, &st.options});
    }
    if (opt.keepAttention) {
      const Tensor& w = trace.tensor(StageId::Weights);  // (1, h, T, T)
      Tensor keptWeights({spec.heads, T, T}, {"h", "T_q", "T_k"});
      std::copy(w.data.begin(), w.data.end(), keptWeights.data.begin());
      out.attention.push_back(std::move(keptWeights));
    }

    if (!next) {
      if (auto s = addMlp(model, l, *lw, st, routing, opt.hook); !s) return makeError("layer " + std::to_string(l) + ": " + s.error().message);
      noteNonFinite(st.x.data(), static_cast<std::size_t>(st.x.size()), "layer " + std::to_string(l) + "'s MLP output", out.nonFinite);
      if (kept) kept->put(model.identity(), st.tokens, l + 1, st.x);
    }
    if (opt.keepHidden) {
      Tensor hs({T, d}, {"T", "d_model"});
      std::copy(st.x.data(), st.x.data() + st.x.size(), hs.data.begin());
      out.hidden.push_back(std::move(hs));
    }
    if (opt.progress && !opt.progress(l + 1)) return makeError(kForwardCancelled);
  }
  return Ok{};
}

}  // namespace detail

Result<ForwardResult> runForward(const ModelFolder& model, const std::vector<int>& tokens, const ForwardOptions& opt) {
  const ModelSpec& spec = model.spec();
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  if (opt.traceLayer >= spec.layers) {
    return makeError("layer " + std::to_string(opt.traceLayer) + " is outside the model's " +
                     std::to_string(spec.layers) + " layers (0 .. " + std::to_string(spec.layers - 1) + ")");
  }
  const double estimate = estimateForwardBytes(spec, T, opt);
  try {
    detail::ForwardState st;
    if (auto s = detail::startForward(model, tokens, opt, estimate, st); !s) return s.error();
    ForwardResult out;
    out.traceLayer = opt.traceLayer;
    if (auto s = detail::runLayers(model, spec.layers, opt, st, out); !s) return s.error();

    // Written straight into the result: one (T, V) table, as estimateForwardBytes counts it.
    RowMatrix normed;  // (T, d_model)
    if (auto s = finalNorm(model, st.x, normed); !s) return s.error();
    out.logits = Tensor({T, spec.vocab}, {"T", "V"});
    if (auto s = model.unembedInto(normed, out.logits.data.data()); !s) return s.error();
    capLogits(spec, out.logits.data.data(), out.logits.data.size());
    detail::noteNonFinite(out.logits.data.data(), out.logits.data.size(), "the logits", out.nonFinite);
    return out;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the forward of " + std::to_string(T) + " tokens (estimated " +
                     formatBytes(estimate) + ")");
  }
}

}  // namespace mhascope::model
