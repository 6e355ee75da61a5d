// What the lesson files (core/lessons/*.cpp) share and nobody else needs: the second, slower
// per-head formulation of the pipeline the lessons compare the engine against, difference
// measures and number formatting. Not part of the public API (that is lessons.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "lessons/cost.hpp"

namespace mhascope::lesson_detail {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// The per-head attention of the lessons, stage by stage, (B, h, ...) tensors.
struct HeadPipeline {
  Tensor qh, kh, vh;                        // (B, h, T, d_k)
  Tensor scores, scaled, masked, weights;   // (B, h, T_q, T_k)
  Tensor headOut;                           // (B, h, T_q, d_k)
  Tensor concat, output;                    // (B, T_q, d_model)
  const Tensor& stage(StageId id) const {
    switch (id) {
      case StageId::QHeads: return qh;
      case StageId::KHeads: return kh;
      case StageId::VHeads: return vh;
      case StageId::Scores: return scores;
      case StageId::ScaledScores: return scaled;
      case StageId::MaskedScores: return masked;
      case StageId::Weights: return weights;
      case StageId::HeadOutputs: return headOut;
      case StageId::Concat: return concat;
      default: return output;
    }
  }
};

inline constexpr StageId kPerHeadStages[] = {StageId::QHeads,      StageId::KHeads,       StageId::VHeads,
                                      StageId::Scores,      StageId::ScaledScores, StageId::MaskedScores,
                                      StageId::Weights,     StageId::HeadOutputs,  StageId::Concat,
                                      StageId::Output};


// Max |a - b| over n values; equal infinities (a masked -inf on both sides) count as 0, a NaN or
// an infinity on one side only as +inf.
double maxAbsDiff(const float* a, const float* b, std::size_t n);

// Max |a - b| over the cells where both are finite (the pitfall lab reports NaN/Inf separately).
// Largest |a - b|; a cell that is finite in the reference but NaN/inf in the other counts as an
// infinite difference, so a pipeline that lost rows never looks "almost right".
double maxFiniteAbsDiff(const Tensor& a, const Tensor& b);

// Softmax of one row with the max subtracted (exp never overflows); a fully blocked row (all
// -inf) gets weights 0 rather than 0/0.
void stableSoftmax(const float* logits, float* out, std::int64_t n, std::int64_t stride = 1);

// out = concat W_o + b_o: (B, T_q, d_model).
Tensor outputProjection(const Tensor& concat, const MhaWeights& w);

// (B, h, T_q, d_k) → (B, T_q, d_model), head i in columns i*d_k .. (i+1)*d_k - 1 (the right merge).
Tensor concatHeads(const Tensor& headOut);

// Everything after the weights, for a pitfall's weights: A V per head, concatenate, W_o.
Tensor outputFromWeights(const Trace& t, const Tensor& weights /*(B,h,T_q,T_k)*/, const MhaWeights& w);

std::string num(double v, int precision = 4);
// 1234567 -> "1,234,567"
std::string grouped(std::int64_t v);

// "the projections cost 102.4x the attention matmuls", or the other way round.
std::string costRatioPhrase(const CostCrossover& c);

}  // namespace mhascope::lesson_detail
