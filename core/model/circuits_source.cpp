// A model folder as the circuits' source of layers, and the circuits around one head with the text's
// rollout (circuits_source.hpp). The weights' part is analysis::computeOneHeadCircuits; this file
// reads the folder (every layer's attention weights once, folded with norm1's gain), checks the
// request against the model and the memory budget, and runs the forward the rollout reads.
//
// [SECTION] index: the source · estimate · computeModelCircuits
#include "model/circuits_source.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include "analysis/circuit_texts.hpp"  // headName
#include "analysis/rollout.hpp"
#include "model/families/family.hpp"
#include "model/forward.hpp"
#include "util/format.hpp"

namespace mhascope::model {

namespace {

std::string layersName(const ModelSpec& s) { return s.arch == Arch::Gpt2 ? "n_layer" : "num_hidden_layers"; }
std::string headsName(const ModelSpec& s) { return s.arch == Arch::Gpt2 ? "n_head" : "num_attention_heads"; }

}  // namespace

// [SECTION] the source

analysis::SourceShape FolderLayers::shape() const {
  const ModelSpec& s = model_.spec();
  analysis::SourceShape out;
  out.layers = s.layers;
  out.heads = s.heads;
  out.kvHeads = s.kvHeads;
  out.dModel = s.dModel;
  out.vocab = s.vocab;
  out.headDim = s.headDim;
  if (s.latent.enabled()) {  // every head a key of its own; the values padded to the widest of q/k and v
    out.kvHeads = s.heads;
    out.headDim = std::max(s.latent.nopeDim + s.latent.ropeDim, s.latent.valueDim);
  }
  return out;
}

namespace {

// A latent layer as the circuits' four matrices. Head i's query x W_qa diag(g_qa) W_qb^i (or x W_q^i); its key
// [c W_uk^i | k_r] with c = x W_kva,c diag(g_kv) the latent and k_r = x W_kva,r the rotary key every head shares;
// its value c W_uv^i. The two RMS divisions (q_a_layernorm's, kv_a_layernorm's) are left out as the block norm's
// is. Each head's block is w = max(d_n + d_r, d_v) wide, the narrower side padded with zero columns (q and k, or
// v) and W_o with zero rows: a zero column adds nothing to a score, a zero value column meets a zero row of W_o,
// so QK = W_q^i W_k^iᵀ and OV = W_v^i W_o^i are the layer's own.
analysis::CircuitLayer latentCircuitLayer(const ModelSpec& s, const LatentWeights& lw) {
  const LatentSpec& a = s.latent;
  const std::int64_t d = s.dModel, h = s.heads, dn = a.nopeDim, dr = a.ropeDim, dv = a.valueDim, r = a.kvRank;
  const std::int64_t dq = dn + dr, w = std::max(dq, dv);
  RowMatrix wq = a.qRank > 0 ? RowMatrix((lw.wqa.array().rowwise() * lw.qNorm.array()).matrix() * lw.wqb) : lw.wq;
  const RowMatrix c = (lw.wkva.leftCols(r).array().rowwise() * lw.kvNorm.array()).matrix();  // (d, r)
  const RowMatrix kvb = c * lw.wkvb;                                               // (d, h (d_n + d_v))
  analysis::CircuitLayer f;
  f.wq = RowMatrix::Zero(d, h * w);
  f.wk = RowMatrix::Zero(d, h * w);
  f.wv = RowMatrix::Zero(d, h * w);
  f.wo = RowMatrix::Zero(h * w, d);
  for (std::int64_t i = 0; i < h; ++i) {
    f.wq.middleCols(i * w, dq) = wq.middleCols(i * dq, dq);
    f.wk.middleCols(i * w, dn) = kvb.middleCols(i * (dn + dv), dn);
    f.wk.middleCols(i * w + dn, dr) = lw.wkva.middleCols(r, dr);
    f.wv.middleCols(i * w, dv) = kvb.middleCols(i * (dn + dv) + dn, dv);
    f.wo.middleRows(i * w, dv) = lw.wo.middleRows(i * dv, dv);
  }
  return f;
}

}  // namespace

// normed = x̂ · g, so x̂ (g W) for the projections that read it — row r of W_q, W_k, W_v scaled by g_r
// (the textbook layout y = x W). A q/k norm's gains scale the columns of W_q and W_k they multiply
// (each head's d_k, or the whole projection's); a norm on the attention's output (OLMo 2's and
// Gemma's post-attention norm) scales W_o's columns. What the norms divide by (each vector's RMS) is
// left out, as the block norm's is: circuitsFamilyNote says so.
Result<analysis::CircuitLayer> FolderLayers::layer(int l) const {
  auto lw = model_.attentionLayer(l);
  if (!lw) return lw.error();
  if (lw->latent) {
    analysis::CircuitLayer f = latentCircuitLayer(model_.spec(), *lw->latent);
    if (lw->norm1.size() > 0) {
      const Eigen::ArrayXf g = lw->norm1.transpose().array();
      f.wq.array().colwise() *= g;
      f.wk.array().colwise() *= g;
      f.wv.array().colwise() *= g;
    }
    return f;
  }
  analysis::CircuitLayer f;
  MhaWeights& a = *lw->attention;
  if (lw->norm1.size() > 0) {  // a family without a norm before attention (OLMo 2) reads x itself
    const Eigen::ArrayXf g = lw->norm1.transpose().array();  // (d, 1)
    a.wq.array().colwise() *= g;
    a.wk.array().colwise() *= g;
    a.wv.array().colwise() *= g;
  }
  // A gain of d_k entries repeats for every head; one of the projection's width covers it once.
  const auto scaleColumns = [](RowMatrix& w, const RowVector& g) {
    if (g.size() == 0) return;
    for (Eigen::Index c = 0; c < w.cols(); ++c) w.col(c) *= g[c % g.size()];
  };
  scaleColumns(a.wq, lw->qNorm);
  scaleColumns(a.wk, lw->kNorm);
  scaleColumns(a.wo, lw->attentionOutNorm);
  f.wq = std::move(a.wq);
  f.wk = std::move(a.wk);
  f.wv = std::move(a.wv);
  f.wo = std::move(a.wo);
  return f;
}

// As the forward embeds: Gemma's rows times sqrt(d_model) (ModelFolder::embed).
Status FolderLayers::embeddingRows(std::int64_t first, std::int64_t n, float* out) const {
  if (auto st = model_.store().readRows(model_.embeddingTable(), first, n, out); !st) return st;
  if (model_.spec().family->scaleEmbeddings) {
    Eigen::Map<RowMatrix>(out, n, model_.spec().dModel) *= static_cast<float>(std::sqrt(static_cast<double>(model_.spec().dModel)));
  }
  return Ok{};
}

Status FolderLayers::unembeddingRows(std::int64_t first, std::int64_t n, float* out) const {
  return model_.store().readRows(model_.unembeddingTable(), first, n, out);
}

// A scaled embedding is not the unembedding's rows any more, though both are read from one table.
bool FolderLayers::tied() const {
  return &model_.embeddingTable() == &model_.unembeddingTable() && !model_.spec().family->scaleEmbeddings;
}

std::int64_t FolderLayers::learnedPositions() const {
  return model_.spec().family->positions == PositionKind::Learned ? model_.spec().maxPositions : 0;
}

Status FolderLayers::positionRows(std::int64_t first, std::int64_t n, float* out) const {
  if (learnedPositions() == 0) return makeError("this model has no learned position table (" + model_.dir() + ")");
  return model_.store().readRows(model_.positionTable(), first, n, out);
}

Result<RowVector> FolderLayers::finalGain() const {
  RowVector gf, gfBias;
  if (auto st = model_.finalNorm(gf, gfBias); !st) return st.error();
  return gf;
}

std::string circuitsFamilyNote(const ModelSpec& s) {
  const Family& f = *s.family;
  std::string note;
  const auto add = [&note](const std::string& part) { note += (note.empty() ? "" : " ") + part; };
  if (f.qkNorm != QkNormKind::None) {
    add("The q/k norm's gains are folded into W_q and W_k; its division by each query's and key's RMS is left out: "
        "a score is x_t QK x_jᵀ over a positive factor per query and per key, so keys of different RMS can change "
        "places.");
  }
  if (s.latent.enabled()) {
    add("Multi-head latent attention: each head's key is its own content part (from the latent) and the rotary key "
        "every head shares, its value read from the same latent; the latent's and the query's own norms "
        "(kv_a_layernorm, q_a_layernorm) keep their gains and leave out their division by the RMS, as the block's "
        "norm does, and the rotation is left out (QK is the score before positions).");
  }
  if (f.normsAfter()) {
    add("The norm on the attention's output: its gain folded into W_o, its division by the output's RMS left out, "
        "so OV reads what a head writes up to a positive factor per token.");
  }
  if (!f.normsBefore()) add("No norm before attention: W_q, W_k and W_v read the residual stream itself.");
  if (f.scaleEmbeddings) {
    add("E is the embedding times sqrt(d_model) = " + formatGeneral(std::sqrt(static_cast<double>(s.dModel)), 6) +
        ", as the model adds it; U is the table unscaled.");
  }
  if (s.queryPreAttnScalar > 0) {
    add("The scores are scaled by query_pre_attn_scalar^-1/2 = " + formatGeneral(1.0 / std::sqrt(s.queryPreAttnScalar), 6) +
        " instead of 1/sqrt(d_k); QK is before either.");
  }
  if (s.attnSoftcap > 0) {
    add("The scores' softcap c·tanh(s/c), c = " + formatGeneral(s.attnSoftcap, 6) +
        ", is left out: QK gives the scores before it, which it only bends towards ±c.");
  }
  return note;
}

// [SECTION] estimate

double estimateModelCircuitsBytes(const ModelSpec& s, std::int64_t T, const ModelCircuitsOptions& opt) {
  const double f = 4.0, d = s.dModel, dk = s.dk(), kv = static_cast<double>(s.kvHeads) * s.dk(),
               hq = static_cast<double>(s.heads) * s.dk(), t = static_cast<double>(T);
  const double n = std::min<double>(std::max(0, opt.maxTokens), t);
  const double heads = static_cast<double>(s.layers) * s.heads;
  // What the result keeps: QK and OV, the token-space pair, the scores, the rollout pair.
  double kept = 2.0 * d * d * f + 3.0 * n * n * f + heads * (sizeof(double) + sizeof(analysis::Composition)) +
                dk * 16.0 + 2.0 * t * t * f;
  // The weights pass: U·E, a block of E and U rows, one folded layer (+ the transposed copy a
  // Llama read makes), the chosen head's factors, U·E·W_v, the products with the chosen head and
  // the Gram matrices; the token space's rows.
  double pass = d * d * f + 2.0 * analysis::kVocabBlock * d * f + (2.0 * d * hq + 2.0 * d * kv) * f + d * d * f +
                7.0 * d * dk * f + d * kv * f + std::max(3.0 * d * dk, dk * (d + 2.0 * kv)) * f +
                (heads / std::max(1, s.layers) * 3.0 + 8.0) * dk * dk * 8.0 + 4.0 * n * d * f +
                6.0 * dk * d * 8.0;  // the baseline's six factors of one sample (per thread: 2 counted)
  double rollout = 0;
  if (T <= opt.rolloutMaxTokens) {
    ForwardOptions fo;
    fo.keepAttention = false;
    fo.keepHidden = false;
    rollout = estimateForwardBytes(s, T, fo) + 3.0 * t * t * 8.0;  // + rolled, its next, the layer mean
    // A Llama-family layer's nn.Linear weights are transposed as they are read: one more copy of the
    // largest (measured on Llama-3-8B's shape: without it the estimate was 10 % under the peak).
    if (s.arch != Arch::Gpt2) rollout += std::max(d * s.dFf, d * d) * f;
  }
  return kept + std::max(pass, rollout);
}

// [SECTION] computeModelCircuits

Result<analysis::OneHeadCircuits> computeModelCircuits(const ModelFolder& model, const std::vector<int>& tokens,
                                                       const ModelCircuitsOptions& opt) {
  const ModelSpec& s = model.spec();
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  if (T == 0) return makeError("the circuits need at least one token: enter at least one token");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= s.vocab) {
      return makeError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                       " is outside the vocabulary of " + std::to_string(s.vocab) + " (" + model.dir() + ")");
    }
  }
  if (s.arch == Arch::Gpt2 && T > s.maxPositions) {
    return makeError(std::to_string(T) + " tokens are more than the " + std::to_string(s.maxPositions) +
                     " positions GPT-2's learned table has (n_positions in " + model.dir() + "/config.json)");
  }
  if (opt.layer < 0 || opt.layer >= s.layers) {
    return makeError("layer " + std::to_string(opt.layer) + " is outside the model's " + std::to_string(s.layers) +
                     " layers (0 .. " + std::to_string(s.layers - 1) + ", " + layersName(s) + " in " + model.dir() +
                     "/config.json)");
  }
  if (opt.head < 0 || opt.head >= s.heads) {
    return makeError("head " + std::to_string(opt.head) + " is outside the model's " + std::to_string(s.heads) +
                     " heads per layer (0 .. " + std::to_string(s.heads - 1) + ", " + headsName(s) + " in " +
                     model.dir() + "/config.json)");
  }
  if (opt.pair) {
    if (const std::string why = analysis::checkPair(*opt.pair, s.layers, s.heads); !why.empty()) {
      return makeError("the pair " + analysis::headName(opt.pair->fromLayer, opt.pair->fromHead) + " → " +
                       analysis::headName(opt.pair->toLayer, opt.pair->toHead) + ": " + why + " (" + layersName(s) + ", " +
                       headsName(s) + " in " + model.dir() + "/config.json)");
    }
  }
  if (opt.maxTokens < 1) {
    return makeError("the token-space axes need at least 1 token (maxTokens is " + std::to_string(opt.maxTokens) + ")");
  }
  const double estimate = estimateModelCircuitsBytes(s, T, opt);
  if (estimate > static_cast<double>(opt.memoryBudgetBytes)) {
    return makeError("the circuits of " + analysis::headName(opt.layer, opt.head) + " on " + std::to_string(T) +
                     " tokens need an estimated " + formatBytes(estimate) + ", above the memory budget of " +
                     formatBytes(static_cast<double>(opt.memoryBudgetBytes)) +
                     " (raise it with --memory-budget MiB, or shorten the text)");
  }

  try {
    const int threads = std::max(1, opt.threads);
    const bool rolls = T <= opt.rolloutMaxTokens;
    const FolderLayers source(model);
    analysis::OneHeadOptions hopt;
    hopt.layer = opt.layer;
    hopt.head = opt.head;
    hopt.maxTokens = opt.maxTokens;
    hopt.pair = opt.pair;
    hopt.threads = threads;
    hopt.baseline = opt.baseline;
    hopt.progress = opt.progress;
    hopt.laterSteps = rolls ? s.layers : 0;
    auto circuits = analysis::computeOneHeadCircuits(source, tokens, hopt);
    if (!circuits) {
      if (circuits.error().message == analysis::kCircuitsCancelled) return makeError(kForwardCancelled);
      return circuits.error();
    }
    analysis::OneHeadCircuits& out = *circuits;
    const int total = analysis::oneHeadSteps(source.shape(), hopt) + hopt.laterSteps;

    // Rollout: one forward, each layer's mean over heads folded into the running product as it comes.
    if (!rolls) {
      out.rollout.why = "The rollout is left out above " + std::to_string(opt.rolloutMaxTokens) + " tokens (the text has " +
                       std::to_string(T) + "): it runs the whole model and holds T x T matrices.";
    } else {
      ForwardOptions fo;
      fo.traceLayer = -1;
      fo.keepAttention = false;
      fo.keepHidden = false;
      fo.memoryBudgetBytes = opt.memoryBudgetBytes;
      fo.threads = threads;
      fo.residuals = opt.residuals;
      RowMatrixD rolled = RowMatrixD::Identity(T, T);
      fo.onAttention = [&](const LayerHeads& la) {
        const int layer = la.layer;
        const Tensor& weights = *la.weights;  // (1, h, T, T)
        RowMatrixD mean = RowMatrixD::Zero(T, T);  // (T, T) mean over heads
        for (int h = 0; h < s.heads; ++h) {
          mean += Eigen::Map<const RowMatrix>(weights.ptr() + static_cast<std::int64_t>(h) * T * T, T, T).cast<double>();
        }
        mean /= s.heads;
        analysis::rolloutStep(mean, rolled);
        if (layer == s.layers - 1) out.rollout.rawLast = mean.cast<float>();
      };
      const int before = analysis::oneHeadSteps(source.shape(), hopt);
      if (opt.progress) fo.progress = [&](int layersDone) { return opt.progress(before + layersDone, total); };
      auto forward = runForward(model, tokens, fo);
      if (!forward) return forward.error();
      out.rollout.rolled = rolled.cast<float>();
      out.rollout.layers = s.layers;
      out.rollout.heads = s.heads;
    }
    return std::move(out);
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the circuits of " + analysis::headName(opt.layer, opt.head) + " (estimated " +
                     formatBytes(estimate) + ")");
  }
}

}  // namespace mhascope::model
