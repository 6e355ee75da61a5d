// Head ablation by zeroing W_o columns, and the probe evaluation shared with the trainer.
#include "train/ablation.hpp"

#include <string>

namespace mhascope::train {

HeadMask HeadMask::none(const GptConfig& cfg) {
  HeadMask m;
  m.layers = cfg.layers;
  m.heads = cfg.heads;
  m.off.assign(static_cast<std::size_t>(cfg.layers * cfg.heads), false);
  return m;
}

bool HeadMask::any() const {
  for (bool b : off) {
    if (b) return true;
  }
  return false;
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

Result<ProbeResult> evaluateOnProbe(const GptParams& p, const Batch& probe, std::int64_t step, ForwardCache& cache) {
  auto r = forward(p, probe, cache);
  if (!r) return r.error();
  ProbeResult out;
  Evaluation& e = out.evaluation;
  e.step = step;
  e.layers = p.cfg.layers;
  e.heads = p.cfg.heads;
  e.loss = r->loss;
  e.accuracy = r->count > 0 ? static_cast<double>(r->correct) / r->count : 0.0;
  e.scores = headScores(cache, probe);
  out.snapshot = takeSnapshot(cache, step);
  return out;
}

}  // namespace mhascope::train
