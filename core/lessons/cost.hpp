// Lesson "Cost" — cost counters: parameters, FLOPs and score memory as T, d_model or h move; and
// the scaling rule's words with their live numbers (shared with the stage texts and the roles lesson).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/layer_counts.hpp"
#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

enum class SweepVariable { Tokens, DModel, Heads };
const char* sweepVariableName(SweepVariable v);  // "T", "d_model", "h"

struct CostSizes {
  std::int64_t batch = 1, tq = 1, tk = 1, dModel = 8, heads = 2;
  std::int64_t kvHeads = 0;  // N K/V heads; 0: N = h (multi-head attention, N follows h in a sweep)
  std::int64_t dk = 0;       // d_k when set (kept in a sweep); 0: d_model / h (follows d_model and h)
  bool bias = true;
  LayerSizes layer() const { return {dModel, heads, kvHeads, dk, bias}; }
};
CostSizes costSizesOf(const Trace& trace);

struct CostPoint {
  std::int64_t value = 0;  // the swept variable's value
  CostSizes sizes;
  std::int64_t params = 0;        // what the layer holds (layerCounts(...).params())
  double projectionFlops = 0;     // Q, K, V, W_o: fewer K/V heads make K and V cheaper
  double attentionFlops = 0;      // Q K^T and A V
  double scoreBytes = 0;          // one (B, h, T_q, T_k) float tensor
  double traceBytes = 0;          // every recorded stage
  // B * h * T_q * T_k: how many scores scale, mask, exp and softmax each touch. Unlike the
  // matmul FLOPs this grows with h.
  std::int64_t scoreCount = 0;
};
// Points from `from` to `to` (inclusive, at most `maxPoints`, evenly spaced; for h only the
// divisors of d_model, and with N K/V heads kept (kvHeads > 0) only the multiples of N among them;
// for d_model only multiples of h). T moves T_q and T_k together; N stays as it is.
Result<std::vector<CostPoint>> costSweep(const CostSizes& base, SweepVariable variable, std::int64_t from,
                                         std::int64_t to, int maxPoints = 32);
CostPoint costAt(const CostSizes& sizes);

// Projections cost O(B*T*d_model^2) FLOPs, the attention matmuls (Q K^T, A V) O(B*T^2*d_model).
// Both from layerCounts(): with T_q = T_k = T the attention matmuls cost more once T > crossoverTokens
// (= 2 * d_model; d_model + N * d_k with N K/V heads).
// With a transformer block's 4x MLP (d_model -> 4 d_model -> d_model: 16*B*T*d_model^2 FLOPs) also
// linear in T, the attention matmuls outgrow projections + MLP only once T > 6 * d_model
// (5 * d_model + N * d_k).
struct CostCrossover {
  double crossoverTokens = 0;           // this attention layer alone: 2 * d_model (d_model + N * d_k)
  double blockCrossoverTokens = 0;      // with the block's 4x MLP counted: 6 * d_model (5 * d_model + N * d_k)
  double projectionsOverAttention = 0;  // at the given sizes (T_q, T_k as they are)
};
CostCrossover costCrossover(const CostSizes& sizes);
// The two crossovers' formulas for these sizes: "2*d_model" and "6*d_model", or with N < h K/V
// heads "d_model + N*d_k" and "5*d_model + N*d_k".
std::string crossoverFormula(const CostSizes& sizes);
std::string blockCrossoverFormula(const CostSizes& sizes);
// The Cost lesson's sentence about it, with the live numbers.
std::string costCrossoverText(const CostSizes& sizes);
// The Cost lesson's opening: what grows with what; T^2 FLOPs always, T^2 memory only when the
// score table is stored.
const char* costLessonIntro();
// What h does to the parameters and the projection FLOPs for these sizes, with the live numbers:
// nothing with N = h; with N K/V heads kept, W_k and W_v (d_model x N*d_model/h) shrink as h grows.
std::string costHeadsText(const CostSizes& sizes);
// The other valid h the lessons compare with (double h, else halve it, else another divisor of
// d_model), N kept when the sizes have one: a multiple of N. 0 when there is none.
std::int64_t otherHeadCount(const CostSizes& sizes);

// The active scaling rule in words with its number: "divided by sqrt(d_k) = 2",
// "divided by sqrt(d_model) = 3.464", "not scaled (factor 1)".
// `given`: ScaleKind::Given's factor (Gemma's query_pre_attn_scalar^-1/2), the trace's scaleFactor.
std::string scalingRuleText(ScaleKind kind, int dModel, int dk, float given = 1.0f);
// The live size of the scaling: "here d_k = 64, so unscaled logits are sqrt(64) = 8 times larger
// than sqrt(d_k)-scaled ones", plus what the trace's own rule does.
std::string unscaledLogitsText(ScaleKind kind, int dModel, int dk, float given = 1.0f);
// The roles lesson's note: what a gap of `gap` between two raw scores does to their
// weights under the trace's scaling rule.
std::string scoreGapText(const Trace& trace, double gap);

// Points the cost lesson's sweep plots.
inline constexpr int kCostSweepPoints = 64;

// What the cost tab shows: the trace's sizes and their cost, and the sweep (which alone can fail).
struct CostCounters {
  CostSizes sizes;
  CostPoint now;
  std::string heads;  // costHeadsText(sizes)
  LessonOutcome<std::vector<CostPoint>> sweep;
};

namespace lessons {

struct Cost {
  static constexpr const char* kId = "cost";
  static constexpr const char* kTitle = "Cost";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "How FLOPs and score memory grow with T, d_model and h, and when the attention matmuls dominate";
  static constexpr LessonCost kCost = LessonCost::Quick;
  struct Choices {
    int variable = 0;                         // the swept SweepVariable ...
    int to = 256;                             // ... from 1 to this (= ends[variable])
    std::array<int, 3> ends = {256, 1024, 64};  // the sweep's end per variable, kept while another is swept
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("sweep_variable", c.variable);
      f("sweep_to", c.to);
      f("sweep_ends", c.ends);
    }
    void keepInRange(const Trace& t) {
      variable = std::clamp(variable, 0, 2);
      const int maxTo = static_cast<SweepVariable>(variable) == SweepVariable::Heads ? std::max(1, t.dModel) : 4096;
      int& end = ends[static_cast<std::size_t>(variable)];
      end = std::clamp(end, 2, std::max(2, maxTo));
      to = end;
    }
    bool operator==(const Choices&) const = default;
  };
  using Result = CostCounters;
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices& c) {
    CostCounters r;
    r.sizes = costSizesOf(in.trace);
    r.now = costAt(r.sizes);
    r.heads = costHeadsText(r.sizes);
    r.sweep.assign(costSweep(r.sizes, static_cast<SweepVariable>(c.variable), 1, c.to, kCostSweepPoints));
    return r;
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
