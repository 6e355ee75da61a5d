// Per-head score statistics of a recorded trace and q/k norm's bound (score_stats.hpp).
#include "attention/score_stats.hpp"

#include <algorithm>
#include <vector>

namespace mhascope {

namespace {

double maxAbsOf(const std::vector<float>& g) {
  double m = 0;
  for (float v : g) m = std::max(m, static_cast<double>(std::abs(v)));
  return m;
}

}  // namespace

QkNormBound qkNormBound(const AttentionOptions& o, double scale) {
  QkNormBound b;
  if (o.qNorm.empty() || o.kNorm.empty()) return b;
  b.nq = static_cast<int>(o.qNorm.size());
  b.nk = static_cast<int>(o.kNorm.size());
  b.maxGainQ = maxAbsOf(o.qNorm);
  b.maxGainK = maxAbsOf(o.kNorm);
  b.scale = scale;
  b.learnedGains = true;
  return b;
}

HeadScoreStats headScoreStats(const Trace& t, int b, int head) {
  HeadScoreStats r;
  if (b < 0 || b >= t.batch || head < 0 || head >= t.heads || t.shapeOf(StageId::Scores).empty() ||
      t.shapeOf(StageId::Scores)[0] == 0) {
    return r;
  }
  const std::int64_t Tq = t.tq, Tk = t.tk, cells = Tq * Tk, first = (std::int64_t{b} * t.heads + head) * cells;
  const bool capped = t.softcap > 0.0f;
  const bool masks = t.blocked.size() == static_cast<std::size_t>(std::int64_t{t.batch} * Tq * Tk);
  std::vector<float> scaled(static_cast<std::size_t>(cells)), shown;
  t.readCells(StageId::ScaledScores, first, cells, scaled.data());
  if (capped) {
    shown.resize(scaled.size());
    t.readCells(StageId::SoftCapped, first, cells, shown.data());
  }
  std::int64_t bent = 0;
  for (std::int64_t q = 0; q < Tq; ++q) {
    for (std::int64_t k = 0; k < Tk; ++k) {
      if (masks && t.isBlocked(b, static_cast<int>(q), static_cast<int>(k))) continue;
      const std::size_t i = static_cast<std::size_t>(q * Tk + k);
      const double s = scaled[i], c = capped ? shown[i] : scaled[i];
      ++r.visible;
      r.maxAbsScaled = std::max(r.maxAbsScaled, std::abs(s));
      r.maxAbsCapped = std::max(r.maxAbsCapped, std::abs(c));
      const double cut = std::abs(s - c);
      r.largestCut = std::max(r.largestCut, cut);
      if (cut > 0.01 * std::abs(s)) ++bent;
    }
  }
  if (r.visible > 0) r.shareBent = static_cast<double>(bent) / static_cast<double>(r.visible);
  const Shape& sinkShape = t.shapeOf(StageId::SinkShare);
  if (!t.sinkLogits.empty() && !sinkShape.empty() && sinkShape[0] > 0) {
    r.sink = true;
    const Tensor& share = t.tensor(StageId::SinkShare);  // (B, h, T_q, 1)
    const float* row = share.ptr() + (std::int64_t{b} * t.heads + head) * Tq;
    std::int64_t rows = 0;
    const bool fully = t.fullyMasked.size() == static_cast<std::size_t>(std::int64_t{t.batch} * Tq);
    for (std::int64_t q = 0; q < Tq; ++q) {
      if (fully && t.fullyMasked[static_cast<std::size_t>(std::int64_t{b} * Tq + q)]) continue;
      r.sinkMean += row[q];
      r.sinkMax = std::max(r.sinkMax, static_cast<double>(row[q]));
      ++rows;
    }
    if (rows > 0) r.sinkMean /= static_cast<double>(rows);
  }
  return r;
}

}  // namespace mhascope
