// What a pass did to its scores, per head, from a recorded trace: how large the scores grew before and
// after a softcap, how many the cap bent, the learned sink's share of each row, and the bound q/k norm
// puts on every score. The Model tab says these beside each head of a Gemma 2, gpt-oss, Qwen3, Gemma 3 or
// OLMo 2 layer; the Stable scores lesson states the same bound. Pure core.
#pragma once

#include <cmath>
#include <cstdint>

#include "attention/engine.hpp"
#include "attention/trace.hpp"

namespace mhascope {

// q/k norm's bound: with q̂ = q / rms(q) over the n_q features normalised together (so |q̂|² < n_q; for one
// head's slice of a norm over the whole projection as well), |s| = |(q̂ ⊙ g_q) · (k̂ ⊙ g_k)| · scale
//   ≤ |q̂ ⊙ g_q| |k̂ ⊙ g_k| · scale ≤ √n_q · max|g_q| · √n_k · max|g_k| · scale.
// RoPE turns q̂ and k̂ without changing their lengths, so it holds after RoPE as well.
struct QkNormBound {
  int nq = 0, nk = 0;                // d_k per head; h·d_k and N·d_k over the whole projection
  double maxGainQ = 1, maxGainK = 1; // max |g|
  double scale = 1;                  // the pass's factor, 1/√d_k
  bool learnedGains = false;         // the layer's own gains (a model folder's), else gains of 1
  double value() const {
    return std::sqrt(static_cast<double>(nq)) * maxGainQ * std::sqrt(static_cast<double>(nk)) * maxGainK * scale;
  }
};
// The bound of a pass with q/k norm (o.qNorm and o.kNorm set) and scale factor `scale`; nq 0 when o has none.
QkNormBound qkNormBound(const AttentionOptions& o, double scale);

// One head's scores at the cells its mask leaves visible (batch item b).
struct HeadScoreStats {
  std::int64_t visible = 0;   // cells that reach the softmax
  double maxAbsScaled = 0;    // max |S'| (scaled, before any softcap)
  double maxAbsCapped = 0;    // max |c tanh(S' / c)|: what reaches the softmax (= maxAbsScaled without a cap)
  double shareBent = 0;       // share of the visible cells the cap moved by more than 1 % of |S'|
  double largestCut = 0;      // max |S' − c tanh(S' / c)|
  bool sink = false;          // the pass has a learned sink
  double sinkMean = 0, sinkMax = 0;  // the sink's share of a row, mean and largest over the rows that see a key
};
// `t` must hold its scores (recorded with every stage); a head out of range gives visible 0.
HeadScoreStats headScoreStats(const Trace& t, int b, int head);

}  // namespace mhascope
