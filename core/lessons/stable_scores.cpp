// Stable scores: the lesson's numbers (stable_scores.hpp), every pass a forward of the engine.
#include "lessons/stable_scores.hpp"

#include <limits>

#include "attention/engine.hpp"
#include "lessons/common.hpp"
#include "lessons/pitfalls.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

namespace {

// q and k times g: W_q, W_k and their biases, so every textbook score is g² times what it was.
void growQueriesAndKeys(MhaWeights& w, float g) {
  w.wq *= g;
  w.bq *= g;
  w.wk *= g;
  w.bk *= g;
}

// The textbook pass's options: the configuration's masks, positions and heads, without any stabiliser
// (nor hand-set scores, which would hide the grown q · k).
AttentionOptions textbookOptions(const AttentionOptions& live) {
  AttentionOptions o = live;
  o.qNorm.clear();
  o.kNorm.clear();
  o.softcap = 0.0f;
  o.scale = ScaleKind::SqrtDk;
  o.scaleFactor = 1.0f;
  o.scoresOverride.reset();
  return o;
}

// One forward and what it hands the softmax at the visible cells.
Result<ScorePass> runPass(Engine& engine, const Model& m, const AttentionOptions& opt, Trace& trace) {
  if (auto st = engine.forward(m.inputs, m.weights, opt, trace); !st) return st.error();
  const StageId last = trace.softcap > 0.0f ? StageId::SoftCapped : StageId::ScaledScores;
  const Tensor s = trace.copyOf(last);  // (B, h, T_q, T_k)
  const bool masks = trace.blocked.size() == idx(std::int64_t{trace.batch} * trace.tq * trace.tk);
  ScorePass p;
  p.scores.reserve(s.data.size());
  for (int b = 0; b < trace.batch; ++b)
    for (int h = 0; h < trace.heads; ++h)
      for (int q = 0; q < trace.tq; ++q)
        for (int k = 0; k < trace.tk; ++k) {
          if (masks && trace.isBlocked(b, q, k)) continue;
          p.scores.push_back(s.data[idx(((std::int64_t{b} * trace.heads + h) * trace.tq + q) * trace.tk + k)]);
        }
  if (p.scores.empty()) return makeError("every score is masked: nothing reaches the softmax");
  const auto [lo, hi] = std::minmax_element(p.scores.begin(), p.scores.end());
  p.minScore = *lo;
  p.maxScore = *hi;
  p.maxAbs = std::max(std::abs(p.minScore), std::abs(p.maxScore));
  p.meanEntropy = checkWeights(trace.tensor(StageId::Weights), trace.fullyMasked).meanRowEntropy;
  return p;
}

}  // namespace

std::vector<int> scoreHistogram(const std::vector<float>& values, double lo, double hi, int bins) {
  std::vector<int> counts(static_cast<std::size_t>(std::max(bins, 1)), 0);
  const double width = (hi - lo) / static_cast<double>(counts.size());
  for (float v : values) {
    const double at = width > 0 ? (static_cast<double>(v) - lo) / width : 0.0;
    const auto bin = static_cast<std::int64_t>(std::floor(std::clamp(at, 0.0, static_cast<double>(counts.size() - 1))));
    ++counts[idx(bin)];
  }
  return counts;
}

std::vector<CurvePoint> softcapCurve(double c, double range, int points) {
  std::vector<CurvePoint> curve;
  const int n = std::max(points, 2);
  for (int i = 0; i < n; ++i) {
    const double s = -range + 2.0 * range * i / (n - 1);
    curve.push_back({s, c * std::tanh(s / c)});
  }
  return curve;
}

std::vector<PublishedStable> publishedStableConfigs() {
  // Each model's config.json on the Hugging Face Hub (google/gemma-2-2b, -9b, -27b; Qwen/Qwen3-0.6B;
  // allenai/OLMo-2-1124-7B). Gemma 2 27B's query_pre_attn_scalar is d_model / h = 4608 / 32, not its d_k.
  return {
      {"Gemma 2 2B", 2304, 8, 256, 256, 50.0f, "none"},
      {"Gemma 2 9B", 3584, 16, 256, 256, 50.0f, "none"},
      {"Gemma 2 27B", 4608, 32, 128, 144, 50.0f, "none"},
      {"Qwen3-0.6B", 1024, 16, 128, 0, 0.0f, "per head"},
      {"OLMo-2-1124-7B", 4096, 32, 128, 0, 0.0f, "whole projection"},
  };
}

Result<StableScoresLesson> stableScoresLesson(const Model& model, float growth, bool qkNorm, bool wholeProjection,
                                              bool softcap, float cap, bool scalar, int preAttnScalar) {
  if (!(growth > 0.0f) || !std::isfinite(growth)) return makeError("the growth g must be a positive number");
  if (!(cap > 0.0f) || !std::isfinite(cap)) return makeError("the softcap c must be a positive number");
  StableScoresLesson r;
  r.dModel = static_cast<int>(model.inputs.query.dim(2));
  r.heads = model.options.heads;
  r.kvHeads = kvHeadsOf(model.options);
  r.dk = static_cast<int>(headDimOf(model.options, r.dModel));
  r.growth = growth;
  r.cap = cap;
  r.preAttnScalar = preAttnScalar > 0 ? preAttnScalar : std::max(1, r.dModel / std::max(1, r.heads));
  r.rawScale = scaleFactorFor(ScaleKind::SqrtDk, r.dModel, r.dk);
  r.scalarScale = 1.0 / std::sqrt(static_cast<double>(r.preAttnScalar));
  r.useQkNorm = qkNorm;
  r.useSoftcap = softcap;
  r.useScalar = scalar;

  Model grown = model;
  growQueriesAndKeys(grown.weights, growth);
  const AttentionOptions base = textbookOptions(model.options);
  // The layer's own gains when it has them (a model folder's Qwen3, Gemma 3 or OLMo 2 layer), else gains
  // of 1 per head or over the whole projection.
  AttentionOptions normed = base;
  const bool learnedGains = !model.options.qNorm.empty();
  if (learnedGains) {
    normed.qNorm = model.options.qNorm;
    normed.kNorm = model.options.kNorm;
  } else {
    const int qWidth = wholeProjection ? r.heads * r.dk : r.dk, kWidth = wholeProjection ? r.kvHeads * r.dk : r.dk;
    normed.qNorm.assign(idx(qWidth), 1.0f);
    normed.kNorm.assign(idx(kWidth), 1.0f);
  }
  r.bound = qkNormBound(normed, r.rawScale);
  r.bound.learnedGains = learnedGains;
  AttentionOptions capped = base;
  capped.softcap = cap;
  AttentionOptions rescaled = base;
  rescaled.scale = ScaleKind::Given;
  rescaled.scaleFactor = static_cast<float>(r.scalarScale);
  AttentionOptions together = base;
  if (qkNorm) {
    together.qNorm = normed.qNorm;
    together.kNorm = normed.kNorm;
  }
  if (softcap) together.softcap = cap;
  if (scalar) {
    together.scale = ScaleKind::Given;
    together.scaleFactor = rescaled.scaleFactor;
  }

  Engine engine;
  Trace trace;
  ScorePass* passes[] = {&r.raw, &r.qkNorm, &r.softcap, &r.scalar, &r.stabilised};
  const AttentionOptions* options[] = {&base, &normed, &capped, &rescaled, &together};
  for (int i = 0; i < 5; ++i) {
    auto p = runPass(engine, grown, *options[i], trace);
    if (!p) return p.error();
    *passes[i] = std::move(*p);
  }

  // The cap against the textbook scores, cell by cell (the same cells in the same order).
  std::int64_t bent = 0;
  for (std::size_t i = 0; i < r.raw.scores.size(); ++i) {
    const double s = r.raw.scores[i], cut = std::abs(s - r.softcap.scores[i]);
    r.capLargestCut = std::max(r.capLargestCut, cut);
    if (cut > 0.01 * std::abs(s)) ++bent;
  }
  r.capShareBent = static_cast<double>(bent) / static_cast<double>(r.raw.scores.size());

  r.histRange = std::max({r.raw.maxAbs, r.stabilised.maxAbs, 1e-6});
  r.rawHistogram = scoreHistogram(r.raw.scores, -r.histRange, r.histRange, kStableBins);
  r.stableHistogram = scoreHistogram(r.stabilised.scores, -r.histRange, r.histRange, kStableBins);
  r.curveRange = std::max(2.0 * cap, r.raw.maxAbs) * 1.05;
  r.curve = softcapCurve(cap, r.curveRange, 161);
  r.rawOnCurve = scoreHistogram(r.raw.scores, -r.curveRange, r.curveRange, kStableBins);
  r.published = publishedStableConfigs();
  return r;
}

const char* stableScoresIntro() {
  return "A score is q . k times a scale, and nothing in the textbook pipeline bounds it: if training makes W_q "
         "and W_k larger, every score grows with the square of that growth, and the softmax of large scores gives "
         "one key almost all of a row's weight. Training reports name this attention logit growth (Dehghani et "
         "al. 2023, Wortsman et al. 2023) and attention entropy collapse (Zhai et al. 2023), the weights' "
         "entropy falling towards 0 before the loss diverges. Today's models answer in three ways. q/k norm "
         "(Qwen3 and Gemma 3 per head, OLMo 2 over the whole projection) RMS-normalises q and k, so a score can "
         "no longer grow with them. The softcap (Gemma 2) bends the scaled scores into (-c, c) with c tanh(s / c) "
         "before the mask. query_pre_attn_scalar (Gemma 2 and 3) sets the scale to 1/sqrt(q_s) instead of "
         "1/sqrt(d_k): a constant factor, which bounds nothing. Below, each runs through the engine on this "
         "sentence with q and k grown by g (W_q, b_q, W_k and b_k times g).";
}

std::string stableQkNormText(const StableScoresLesson& r) {
  const QkNormBound& b = r.bound;
  const std::string gains = b.learnedGains ? "the layer's own gains" : "gains of 1";
  const std::string width =
      b.nq == r.dk ? "each head's d_k = " + std::to_string(r.dk) + " features"
                   : "the whole projection's " + std::to_string(b.nq) + " (keys: " + std::to_string(b.nk) +
                         ") features, which one head's part may hold all of";
  return "q/k norm over " + width + ", with " + gains +
         ": q_n = q / rms(q) has |q_n|² < n_q, so |s| <= |q_n ⊙ g_q| |k_n ⊙ "
         "g_k| · scale <= sqrt(" + std::to_string(b.nq) + ") · " + num(b.maxGainQ, 3) + " · sqrt(" +
         std::to_string(b.nk) + ") · " + num(b.maxGainK, 3) + " · " + num(b.scale, 4) + " = " + num(b.value(), 4) +
         ". Largest |score| here: " + num(r.qkNorm.maxAbs, 4) + " (without the norm: " + num(r.raw.maxAbs, 4) +
         "), whatever g is: q and k lose their length, only their directions meet.";
}

std::string stableSoftcapText(const StableScoresLesson& r) {
  return "Softcap c = " + num(r.cap, 4) + ": every score stays inside (-" + num(r.cap, 4) + ", " + num(r.cap, 4) +
         ") (in float, one far past c rounds to c itself); largest |score| " + num(r.softcap.maxAbs, 4) +
         " (without it: " + num(r.raw.maxAbs, 4) + "). Near 0 the curve is the line s (c tanh(s / c) = s - s³/(3c²) "
         "+ ...): the cap moved " + num(100.0 * r.capShareBent, 3) + " % of the scores by more than 1 %, the largest "
         "by " + num(r.capLargestCut, 4) + ". tanh is increasing, so unlike q/k norm the cap keeps each row's order "
         "of keys; it acts before the mask, so a blocked key stays blocked. Gemma 2 caps its scores at c = 50 and "
         "its output logits the same way at 30 (final_logit_softcapping).";
}

std::string stableScalarText(const StableScoresLesson& r) {
  return "query_pre_attn_scalar q_s = " + std::to_string(r.preAttnScalar) + ": scale 1/sqrt(" +
         std::to_string(r.preAttnScalar) + ") = " + num(r.scalarScale, 4) + " instead of 1/sqrt(d_k) = 1/sqrt(" +
         std::to_string(r.dk) + ") = " + num(r.rawScale, 4) + ", every score times " +
         num(r.scalarScale / r.rawScale, 4) + ": largest |score| " + num(r.scalar.maxAbs, 4) + " against " +
         num(r.raw.maxAbs, 4) + ". It grows with g² like the textbook's; Gemma 2 27B uses q_s = 144 = d_model / h "
         "(4608 / 32) with heads of d_k = 128.";
}

std::string stableSummaryText(const StableScoresLesson& r) {
  std::string used;
  for (const auto& [on, name] : {std::pair{r.useQkNorm, "q/k norm"}, std::pair{r.useSoftcap, "softcap"},
                                 std::pair{r.useScalar, "q_s"}}) {
    if (on) used += (used.empty() ? "" : " + ") + std::string(name);
  }
  if (used.empty()) used = "none";
  return "g = " + num(r.growth, 3) + ": textbook scores in [" + num(r.raw.minScore, 4) + ", " + num(r.raw.maxScore, 4) +
         "], weights' mean entropy " + num(r.raw.meanEntropy, 3) + " nats; stabilised (" + used + ") in [" +
         num(r.stabilised.minScore, 4) + ", " + num(r.stabilised.maxScore, 4) + "], entropy " +
         num(r.stabilised.meanEntropy, 3) + " nats.";
}

}  // namespace mhascope
