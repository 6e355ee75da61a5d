// Head-role scores from the recorded attention weights.
#include "train/probes.hpp"

#include <cmath>
#include <cstdio>

namespace mhascope::train {

std::vector<HeadScores> headScores(const ForwardCache& cache, const Batch& b) {
  std::vector<HeadScores> out;
  const int T = b.seq;
  for (const LayerCache& lc : cache.layers) {
    const Tensor& w = lc.attn.tensor(StageId::Weights);  // (B, h, T, T)
    const int h = lc.attn.heads;
    for (int i = 0; i < h; ++i) {
      HeadScores s;
      double nPrev = 0, nInd = 0, nRows = 0;
      for (int item = 0; item < b.batch; ++item) {
        const int* tok = b.tokens.data() + item * T;
        const float* a = w.ptr() + (static_cast<std::int64_t>(item) * h + i) * T * T;
        for (int t = 0; t < T; ++t) {
          const float* row = a + static_cast<std::int64_t>(t) * T;
          s.self += row[t];
          double ent = 0;
          for (int k = 0; k <= t; ++k) {
            if (row[k] > 0) ent -= static_cast<double>(row[k]) * std::log(static_cast<double>(row[k]));
          }
          s.entropy += ent;
          nRows += 1;
          if (t >= 1) {
            s.prevToken += row[t - 1];
            s.firstToken += row[0];
            nPrev += 1;
          }
          for (int j = t - 1; j >= 0; --j) {  // latest earlier occurrence of this token
            if (tok[j] == tok[t]) {
              s.induction += row[j + 1];
              nInd += 1;
              break;
            }
          }
        }
      }
      s.self /= nRows;
      s.entropy /= nRows;
      if (nPrev > 0) {
        s.prevToken /= nPrev;
        s.firstToken /= nPrev;
      }
      if (nInd > 0) s.induction /= nInd;
      out.push_back(s);
    }
  }
  return out;
}

Snapshot takeSnapshot(const ForwardCache& cache, std::int64_t step) {
  Snapshot s;
  s.step = step;
  s.layers = static_cast<int>(cache.layers.size());
  if (cache.layers.empty()) return s;
  s.heads = cache.layers[0].attn.heads;
  s.seq = cache.layers[0].attn.tq;
  const std::size_t per = static_cast<std::size_t>(s.heads) * static_cast<std::size_t>(s.seq * s.seq);
  for (const LayerCache& lc : cache.layers) {
    const float* p = lc.attn.tensor(StageId::Weights).ptr();  // item 0 comes first
    s.weights.insert(s.weights.end(), p, p + per);
  }
  return s;
}

std::string roleOf(const HeadScores& s) {
  const struct {
    const char* name;
    double v;
  } roles[] = {{"previous-token", s.prevToken}, {"induction", s.induction}, {"self", s.self},
               {"first-token", s.firstToken}};
  const auto* best = &roles[0];
  for (const auto& r : roles) {
    if (r.v > best->v) best = &r;
  }
  char buf[64];
  if (best->v < kRoleThreshold) {
    std::snprintf(buf, sizeof buf, "diffuse (entropy %.2f)", s.entropy);
  } else {
    std::snprintf(buf, sizeof buf, "%s %.2f", best->name, best->v);
  }
  return buf;
}

}  // namespace mhascope::train
