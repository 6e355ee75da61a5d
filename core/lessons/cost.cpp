// Cost — parameters, FLOPs and score memory as T, d_model or h move.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/cost.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

const char* sweepVariableName(SweepVariable v) {
  switch (v) {
    case SweepVariable::Tokens: return "T";
    case SweepVariable::DModel: return "d_model";
    case SweepVariable::Heads: return "h";
  }
  return "?";
}

CostSizes costSizesOf(const Trace& trace) {
  // N = h is multi-head attention, which a sweep over h keeps multi-head: kvHeads 0.
  const int n = trace.kvHeads > 0 && trace.kvHeads != trace.heads ? trace.kvHeads : 0;
  // d_k is kept only when it is not d_model / h (a width of its own).
  const int dk = trace.heads * trace.dk != trace.dModel ? trace.dk : 0;
  return {std::max(1, trace.batch), std::max(1, trace.tq), std::max(1, trace.tk), std::max(1, trace.dModel),
          std::max(1, trace.heads), n, dk, trace.hasBias};
}

CostPoint costAt(const CostSizes& s) {
  CostPoint p;
  p.sizes = s;
  const LayerCounts layer = layerCounts(s.layer());
  p.params = layer.params();
  const FlopCount f = layer.flops(s.batch, s.tq, s.tk);
  p.projectionFlops = f.projections;
  p.attentionFlops = f.attention;
  p.scoreBytes = layer.scoreBytes(s.batch, s.tq, s.tk);
  // The same figure as `mhascope info`'s "whole recorded trace": stages, mask flags, token labels.
  MemoryUse use;
  use.headDim = s.dk;
  p.traceBytes = estimateMemory(s.batch, s.tq, s.tk, s.dModel, s.heads, use).trace;
  p.scoreCount = layer.scoreCount(s.batch, s.tq, s.tk);
  return p;
}

CostCrossover costCrossover(const CostSizes& s) {
  // With T_q = T_k = T, projections = a * T and attention = c * T^2 (countFlops at T = 1 gives a
  // and c): they are equal at T = a / c.
  const LayerCounts layer = layerCounts(s.layer());
  const FlopCount one = layer.flops(s.batch, 1, 1);
  const FlopCount now = layer.flops(s.batch, s.tq, s.tk);
  CostCrossover c;
  c.crossoverTokens = one.projections / one.attention;
  // A block's MLP, d_model -> 4 d_model -> d_model: two matmuls of 2 * B * T * d_model * 4 d_model FLOPs.
  const double mlpOne = 16.0 * static_cast<double>(s.batch) * static_cast<double>(s.dModel) * static_cast<double>(s.dModel);
  c.blockCrossoverTokens = (one.projections + mlpOne) / one.attention;
  c.projectionsOverAttention = now.projections / now.attention;
  return c;
}


namespace {
bool groupedKv(const CostSizes& s) { return s.kvHeads > 0 && s.kvHeads != s.heads; }
}  // namespace

// With heads of a width of their own (d_k set): the projections cost 4*d_model*(h*d_k + N*d_k) per token and the
// attention matmuls 4*h*d_k per token pair, so they meet at T = d_model*(h + N)/h.
std::string crossoverFormula(const CostSizes& s) {
  if (s.dk > 0) return "d_model*(h + N)/h";
  return groupedKv(s) ? "d_model + N*d_k" : "2*d_model";
}
std::string blockCrossoverFormula(const CostSizes& s) {
  if (s.dk > 0) return "d_model*(h + N)/h + 4*d_model^2/(h*d_k)";
  return groupedKv(s) ? "5*d_model + N*d_k" : "6*d_model";
}

std::string costCrossoverText(const CostSizes& s) {
  const CostCrossover c = costCrossover(s);
  const std::string ratio = costRatioPhrase(c);
  return "Projections cost O(B*T*d_model^2), the attention matmuls O(B*T^2*d_model): with T_q = T_k = T the "
         "attention matmuls cost more than this layer's four projections only once T > " + crossoverFormula(s) +
         " = " + num(c.crossoverTokens, 12) + ". That is the attention layer alone: in a transformer block the MLP "
         "(d_model -> 4*d_model -> d_model) adds 16*B*T*d_model^2 FLOPs, also linear in T, so attention "
         "dominates the block only once T > " + blockCrossoverFormula(s) + " = " + num(c.blockCrossoverTokens, 12) +
         ". Here (T_q = " +
         std::to_string(s.tq) + ", T_k = " + std::to_string(s.tk) + ", d_model = " + std::to_string(s.dModel) +
         ") " + ratio + ".";
}

std::string scalingRuleText(ScaleKind kind, int dModel, int dk, float given) {
  switch (kind) {
    case ScaleKind::Given:
      return "multiplied by the model's own factor " + num(given) + " (divided by " + num(1.0 / given) +
             ", its query_pre_attn_scalar^(1/2), not sqrt(d_k) = " + num(std::sqrt(static_cast<double>(dk))) + ")";
    case ScaleKind::SqrtDk: return "divided by sqrt(d_k) = " + num(std::sqrt(static_cast<double>(dk)));
    case ScaleKind::SqrtDModel: return "divided by sqrt(d_model) = " + num(std::sqrt(static_cast<double>(dModel)));
    case ScaleKind::None: return "not scaled (factor 1)";
  }
  return "?";
}

std::string scoreGapText(const Trace& t, double gap) {
  const double f = static_cast<double>(t.scaleFactor);
  const std::string g = num(gap);
  const std::string divided = t.scale == ScaleKind::None ? g : g + " / " + num(1.0 / f);
  return "Raw scores are " + scalingRuleText(t.scale, t.dModel, t.dk, t.scaleFactor) +
         " before the softmax (the active rule), so a gap of " + g + " between two raw scores becomes a factor of "
         "e^(" + divided + ") = " + num(std::exp(gap * f)) + " between their weights.";
}

std::string unscaledLogitsText(ScaleKind kind, int dModel, int dk, float given) {
  dk = std::max(1, dk);
  const std::string DK = std::to_string(dk);
  std::string s = "Here d_k = " + DK + ", so unscaled logits are sqrt(" + DK + ") = " +
                  num(std::sqrt(static_cast<double>(dk))) + " times larger than sqrt(d_k)-scaled ones";
  switch (kind) {
    case ScaleKind::SqrtDk: s += " (this trace divides by sqrt(d_k))."; break;
    case ScaleKind::None: s += "; this trace is not scaled, so its logits are the larger ones."; break;
    case ScaleKind::Given:
      s += "; this trace divides by the model's own " + num(1.0 / given) + " instead (query_pre_attn_scalar^(1/2))";
      s += given * std::sqrt(static_cast<float>(dk)) == 1.0f ? ", which is sqrt(d_k) here." : ".";
      break;
    case ScaleKind::SqrtDModel:
      s += "; this trace divides by sqrt(d_model) = " + num(std::sqrt(static_cast<double>(dModel))) +
           " instead, sqrt(d_model / d_k) = " + num(std::sqrt(static_cast<double>(dModel) / dk)) +
           " times more than sqrt(d_k).";
      break;
  }
  return s;
}

const char* costLessonIntro() {
  return "Parameters grow with d_model^2 and ignore T. Projection FLOPs grow with T * d_model^2; attention "
         "matmul FLOPs with T^2 * d_model, always. The score tables hold h * T^2 numbers, and memory grows with "
         "T^2 only where they are stored, as here, where every table is recorded: fused kernels such as "
         "FlashAttention compute the softmax block by block and need only O(T) extra memory. With one K/V head per "
         "query head (N = h) more heads cost no parameters and no matmul FLOPs; with fewer K/V heads kept, more "
         "query heads make W_k and W_v narrower. Either way scale, mask, exp and softmax touch all "
         "B * h * T_q * T_k scores, so they and the stored score memory grow with h. Each head's score table has "
         "rank at most d_k.";
}

std::int64_t otherHeadCount(const CostSizes& s) {
  const std::int64_t d = s.dModel, h = s.heads, n = groupedKv(s) ? s.kvHeads : 1;
  auto valid = [&](std::int64_t v) { return v >= 1 && v != h && v <= d && d % v == 0 && v % n == 0; };
  if (valid(2 * h)) return 2 * h;
  if (h % 2 == 0 && valid(h / 2)) return h / 2;
  for (std::int64_t v = d; v >= 1; --v)
    if (valid(v)) return v;
  return 0;
}

std::string costHeadsText(const CostSizes& s) {
  const LayerCounts now = layerCounts(s.layer());
  const std::int64_t h2 = otherHeadCount(s);
  CostSizes other = s;
  other.heads = h2;
  const std::string H = std::to_string(s.heads), H2 = std::to_string(h2), D = std::to_string(s.dModel);
  if (s.dk > 0) {  // heads of a width of their own: d_k stays when h changes, so every matrix grows with h
    const std::string DK = std::to_string(s.dk);
    return "Here every head is d_k = " + DK + " wide whatever h is (set for this layer, not d_model / h): W_q and "
           "W_o are d_model x h*d_k, W_k and W_v d_model x N*d_k, so each extra query head adds 2 * d_model * d_k = " +
           grouped(2 * s.dModel * s.dk) + " weights and its projection FLOPs, on top of its B * T_q * T_k scores (" +
           parameterFormula(now) + " = " + grouped(now.params()) + " now).";
  }
  if (!groupedKv(s)) {
    std::string t = "Here N = h = " + H + ": each of W_q, W_k, W_v and W_o is one d_model x d_model matrix that the "
                    "heads cut into blocks of d_k columns, so h changes neither the " + grouped(now.params()) +
                    " parameters nor the projection FLOPs";
    if (h2 > 0) t += " (h = " + H2 + " with N = h gives " + grouped(layerCounts(other.layer()).params()) + " too)";
    return t + ".";
  }
  const std::string N = std::to_string(s.kvHeads);
  std::string t = "Here N = " + N + " K/V heads for h = " + H + " query heads: W_q and W_o stay d_model x d_model, but "
                  "W_k and W_v are d_model x N*d_k = d_model x N*d_model/h = " + D + " x " +
                  std::to_string(s.kvHeads * now.dk) + ", so with N kept, more query heads make them smaller and fewer "
                  "make them larger; the projection FLOPs follow.";
  if (h2 > 0) {
    const LayerCounts then = layerCounts(other.layer());
    t += " With N = " + N + " kept, h = " + H + " -> " + H2 + " takes this layer from " + grouped(now.params()) +
         " to " + grouped(then.params()) + " parameters (W_k and W_v " + grouped(now.wk) + " -> " + grouped(then.wk) +
         " each).";
  }
  return t;
}

Result<std::vector<CostPoint>> costSweep(const CostSizes& base, SweepVariable variable, std::int64_t from,
                                         std::int64_t to, int maxPoints) {
  constexpr std::int64_t kLimit = 1 << 20;
  if (from < 1 || to < from || to > kLimit) {
    return makeError(std::string("sweep range for ") + sweepVariableName(variable) + " must satisfy 1 <= from <= to <= " +
                     std::to_string(kLimit) + ", got " + std::to_string(from) + ".." + std::to_string(to));
  }
  if (maxPoints < 2) return makeError("a sweep needs at least 2 points, got " + std::to_string(maxPoints));
  std::vector<std::int64_t> candidates;  // sorted values the variable may take
  auto evenly = [&](std::int64_t lo, std::int64_t hi, std::int64_t step) {
    const std::int64_t n = hi >= lo ? (hi - lo) / step + 1 : 0;
    if (n <= maxPoints) {
      for (std::int64_t i = 0; i < n; ++i) candidates.push_back(lo + i * step);
      return;
    }
    for (int i = 0; i < maxPoints; ++i) {
      const std::int64_t j = (n - 1) * i / (maxPoints - 1);
      if (candidates.empty() || candidates.back() != lo + j * step) candidates.push_back(lo + j * step);
    }
  };
  switch (variable) {
    case SweepVariable::Tokens: evenly(from, to, 1); break;
    case SweepVariable::DModel: {  // multiples of h, so d_k stays whole
      const std::int64_t h = base.heads;
      evenly((from + h - 1) / h * h, to / h * h, h);
      break;
    }
    case SweepVariable::Heads: {  // divisors of d_model only; with N K/V heads kept, multiples of N
      const std::int64_t kv = groupedKv(base) ? base.kvHeads : 1;
      std::vector<std::int64_t> divisors;
      for (std::int64_t v = from; v <= std::min(to, base.dModel); ++v)
        if (base.dModel % v == 0 && v % kv == 0) divisors.push_back(v);
      const auto n = static_cast<std::int64_t>(divisors.size());
      for (int i = 0; i < std::min<std::int64_t>(n, maxPoints); ++i) {
        const std::int64_t j = n <= maxPoints ? i : (n - 1) * i / (maxPoints - 1);
        candidates.push_back(divisors[idx(j)]);
      }
      break;
    }
  }
  if (candidates.empty()) {
    return makeError(std::string("no valid ") + sweepVariableName(variable) + " in " + std::to_string(from) + ".." +
                     std::to_string(to) + " for d_model = " + std::to_string(base.dModel) + ", h = " +
                     std::to_string(base.heads) + (groupedKv(base) ? ", N = " + std::to_string(base.kvHeads) +
                     " (d_model must stay divisible by h, and h by the N K/V heads kept)" : " (d_model must stay divisible by h)"));
  }
  std::vector<CostPoint> points;
  for (std::int64_t v : candidates) {
    CostSizes s = base;
    if (variable == SweepVariable::Tokens) s.tq = s.tk = v;
    if (variable == SweepVariable::DModel) s.dModel = v;
    if (variable == SweepVariable::Heads) s.heads = v;
    CostPoint p = costAt(s);
    p.value = v;
    points.push_back(p);
  }
  return points;
}

}  // namespace mhascope
