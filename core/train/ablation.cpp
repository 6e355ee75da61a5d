// Head ablation by zeroing W_o columns, and the probe evaluation shared with the trainer.
#include "train/ablation.hpp"

#include <string>

namespace mhascope::train {

HeadMask HeadMask::none(const GptConfig& cfg) {
  HeadMask m;
  m.layers = cfg.layers;
  m.heads = cfg.heads;
  m.off.assign(static_cast<std::size_t>(cfg.layers * cfg.heads), false);
  m.reads.assign(m.off.size(), 0);
  return m;
}

bool HeadMask::any() const {
  for (bool b : off) {
    if (b) return true;
  }
  for (std::uint8_t r : reads) {
    if (r) return true;
  }
  return false;
}

void HeadMask::setReads(int layer, int head, std::uint8_t bits) {
  if (reads.size() != off.size()) reads.assign(off.size(), 0);
  reads[static_cast<std::size_t>(layer * heads + head)] = bits;
}

Result<GptParams> ablateHeads(const GptParams& p, const HeadMask& mask) {
  const GptConfig& c = p.cfg;
  if (mask.layers != c.layers || mask.heads != c.heads ||
      mask.off.size() != static_cast<std::size_t>(c.layers * c.heads)) {
    return makeError("the head mask is for " + std::to_string(mask.layers) + " layers x " +
                     std::to_string(mask.heads) + " heads; the model has " + std::to_string(c.layers) +
                     " layers x " + std::to_string(c.heads) + " heads");
  }
  GptParams out = p;
  const int dk = c.dModel / c.heads;
  for (int l = 0; l < c.layers; ++l) {
    for (int i = 0; i < c.heads; ++i) {
      if (mask.isOff(l, i)) out.blocks[static_cast<std::size_t>(l)].outW.middleCols(i * dk, dk).setZero();
    }
  }
  return out;
}

namespace {

Result<ProbeResult> evaluateWith(const GptParams& p, const Batch& probe, std::int64_t step, ForwardCache& cache,
                                 const std::vector<std::uint8_t>* reads) {
  // Induction and copying first, on the repeated random tokens; then the task's probe, whose
  // forward stays in `cache` for the snapshot.
  const Batch repeats = repeatedTokensProbe(p.cfg.vocab, probe.seq, probe.batch);
  auto rr = forward(p, repeats, cache, reads);
  if (!rr) return rr.error();
  std::vector<HeadScores> fromRepeats(static_cast<std::size_t>(p.cfg.layers * p.cfg.heads));
  inductionScores(p, cache, repeats, fromRepeats);
  auto r = forward(p, probe, cache, reads);
  if (!r) return r.error();
  ProbeResult out;
  Evaluation& e = out.evaluation;
  e.step = step;
  e.layers = p.cfg.layers;
  e.heads = p.cfg.heads;
  e.loss = r->loss;
  e.accuracy = r->count > 0 ? static_cast<double>(r->correct) / r->count : 0.0;
  e.scores = headScores(cache, probe);
  for (std::size_t k = 0; k < e.scores.size() && k < fromRepeats.size(); ++k) {
    e.scores[k].induction = fromRepeats[k].induction;
    e.scores[k].copying = fromRepeats[k].copying;
  }
  out.snapshot = takeSnapshot(cache, step);
  return out;
}

}  // namespace

Result<ProbeResult> evaluateOnProbe(const GptParams& p, const Batch& probe, std::int64_t step, ForwardCache& cache) {
  return evaluateWith(p, probe, step, cache, nullptr);
}

Result<ProbeResult> evaluateAblated(const GptParams& p, const HeadMask& mask, const Batch& probe, std::int64_t step,
                                    ForwardCache& cache) {
  auto off = ablateHeads(p, mask);
  if (!off) return off.error();
  if (mask.reads.empty()) return evaluateWith(*off, probe, step, cache, nullptr);
  if (mask.reads.size() != mask.off.size()) return makeError("the head mask's read cuts do not match its heads");
  return evaluateWith(*off, probe, step, cache, &mask.reads);
}

}  // namespace mhascope::train
