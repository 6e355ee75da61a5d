// Taking a trained model apart: switch heads off and measure what changes.
// A head is switched off by zeroing its output before W_o. Since the output projection is
// y = concat · W_oᵀ + b, and head i fills concat columns i·d_k … (i+1)·d_k − 1, that is exactly
// the same as zeroing those columns of W_o (out_proj.weight) — so an ablated model is an
// ordinary GptParams and runs through the same forward (the engine's MHA), no second code path.
#pragma once

#include <cstdint>
#include <vector>

#include "train/model.hpp"
#include "train/probes.hpp"

namespace mhascope::train {

// One flag per (layer, head), index layer * heads + head; true = switched off (its output zeroed
// before W_o). `reads` (same index; empty = none) cuts less: kReadQuery / kReadKey / kReadValue
// bits (model.hpp) take the head's output out of what later layers' queries / keys / values read,
// and nothing else — the test of K-composition: an induction head whose keys no longer see the
// previous-token head's output loses its target, while its queries do not need it.
struct HeadMask {
  int layers = 0, heads = 0;
  std::vector<bool> off;
  std::vector<std::uint8_t> reads;
  static HeadMask none(const GptConfig& cfg);
  bool any() const;  // a head off or a read cut
  bool isOff(int layer, int head) const { return off[static_cast<std::size_t>(layer * heads + head)]; }
  void set(int layer, int head, bool value) { off[static_cast<std::size_t>(layer * heads + head)] = value; }
  std::uint8_t readsCut(int layer, int head) const {
    return reads.empty() ? std::uint8_t{0} : reads[static_cast<std::size_t>(layer * heads + head)];
  }
  void setReads(int layer, int head, std::uint8_t bits);
};

// A copy of `p` with the masked heads' W_o columns zeroed. The mask must match p's sizes.
Result<GptParams> ablateHeads(const GptParams& p, const HeadMask& mask);

// Probe loss, accuracy, head scores and the probe sequence's attention (snapshot) of `p` on
// `probe` — what Trainer::evaluate records, for any parameters (ablated ones included). Induction
// and copying are measured on repeatedTokensProbe(V, T, B) of the probe's sizes (probes.hpp).
struct ProbeResult {
  Evaluation evaluation;
  Snapshot snapshot;
};
Result<ProbeResult> evaluateOnProbe(const GptParams& p, const Batch& probe, std::int64_t step, ForwardCache& cache);
// The same with `mask` applied: heads off (ablateHeads) and read cuts (both forwards).
Result<ProbeResult> evaluateAblated(const GptParams& p, const HeadMask& mask, const Batch& probe, std::int64_t step,
                                    ForwardCache& cache);

}  // namespace mhascope::train
