// Attention rollout and the two-layer per-head path (definitions in rollout.hpp), in double: the
// products of L row-stochastic matrices stay row-stochastic only up to rounding.
#include "analysis/rollout.hpp"

#include <algorithm>
#include <cstdio>

namespace mhascope::analysis {

namespace {

RowMatrixD rowNormalised(RowMatrixD m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    const double s = m.row(r).sum();
    if (s > 0) m.row(r) /= s;
  }
  return m;
}

// A as stored in the snapshot: layer l, head h, (T, T).
Eigen::Map<const RowMatrix> headWeights(const AttentionStack& s, int layer, int head) {
  const std::size_t per = static_cast<std::size_t>(s.seq) * static_cast<std::size_t>(s.seq);
  const std::size_t at = (static_cast<std::size_t>(layer) * static_cast<std::size_t>(s.heads) + static_cast<std::size_t>(head)) * per;
  return Eigen::Map<const RowMatrix>(s.weights.data() + at, s.seq, s.seq);
}

bool wellFormed(const AttentionStack& s) {
  return s.layers >= 1 && s.heads >= 1 && s.seq >= 1 &&
         s.weights.size() == static_cast<std::size_t>(s.layers) * static_cast<std::size_t>(s.heads) *
                                 static_cast<std::size_t>(s.seq) * static_cast<std::size_t>(s.seq);
}

RowMatrixD meanD(const AttentionStack& s, int layer) {
  RowMatrixD mean = RowMatrixD::Zero(s.seq, s.seq);  // (T, T) mean over heads
  for (int h = 0; h < s.heads; ++h) mean += headWeights(s, layer, h).cast<double>();
  return mean / s.heads;
}

// rownorm(½ (A + I)): what one step of attention plus the residual passes on.
RowMatrixD withResidual(const RowMatrixD& a) {
  return rowNormalised(0.5 * (a + RowMatrixD::Identity(a.rows(), a.cols())));
}

}  // namespace

void rolloutStep(const RowMatrixD& meanA, RowMatrixD& rolled) {
  const RowMatrixD step = withResidual(meanA);
  RowMatrixD next;
  next.noalias() = step * rolled;  // Â_l (Â_{l-1} … Â_0)
  rolled = std::move(next);
}

std::vector<RowMatrix> attentionRollout(const AttentionStack& s) {
  std::vector<RowMatrix> out;
  if (!wellFormed(s)) return out;
  RowMatrixD rolled = RowMatrixD::Identity(s.seq, s.seq);
  for (int l = 0; l < s.layers; ++l) {
    rolloutStep(meanD(s, l), rolled);
    out.push_back(rolled.cast<float>());
  }
  return out;
}

Rollout rolloutOf(const AttentionStack& s) {
  Rollout r;
  std::vector<RowMatrix> rolled = attentionRollout(s);
  if (rolled.empty()) return r;
  r.layers = static_cast<int>(rolled.size());
  r.heads = s.heads;
  r.rolled = std::move(rolled.back());
  r.rawLast = meanHeadWeights(s, s.layers - 1);
  return r;
}

RowMatrix meanHeadWeights(const AttentionStack& s, int layer) {
  if (!wellFormed(s) || layer < 0 || layer >= s.layers) return {};
  return meanD(s, layer).cast<float>();
}

RowMatrix pathRollout(const AttentionStack& s, int layer, int headA, int headB) {
  if (!wellFormed(s) || layer < 0 || layer + 1 >= s.layers || headA < 0 || headA >= s.heads || headB < 0 ||
      headB >= s.heads) {
    return {};
  }
  const RowMatrixD a = withResidual(headWeights(s, layer, headA).cast<double>());
  const RowMatrixD b = withResidual(headWeights(s, layer + 1, headB).cast<double>());
  RowMatrixD path;
  path.noalias() = b * a;
  return path.cast<float>();
}

std::vector<std::pair<int, float>> strongestSources(const RowMatrix& rollout, int row, int count) {
  std::vector<std::pair<int, float>> out;
  if (row < 0 || row >= rollout.rows() || count < 1) return out;
  for (int j = 0; j < rollout.cols(); ++j) out.emplace_back(j, rollout(row, j));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > static_cast<std::size_t>(count)) out.resize(static_cast<std::size_t>(count));
  return out;
}

namespace {

std::string tokenName(int j, float share, const std::vector<std::string>& labels) {
  char buf[48];
  std::snprintf(buf, sizeof buf, " %.3f", static_cast<double>(share));
  std::string s = "token " + std::to_string(j);
  if (static_cast<std::size_t>(j) < labels.size()) s += " '" + labels[static_cast<std::size_t>(j)] + "'";
  return s + buf;
}

}  // namespace

std::string rolloutText(const Rollout& r, const std::vector<std::string>& labels, int row) {
  if (r.empty()) return "";
  return rolloutText(r.rolled, r.layers, r.rawLast, labels, row);
}

std::string rolloutText(const std::vector<RowMatrix>& rolled, const RowMatrix& rawLast,
                        const std::vector<std::string>& labels, int row) {
  if (rolled.empty()) return "";
  return rolloutText(rolled.back(), static_cast<int>(rolled.size()), rawLast, labels, row);
}

std::string rolloutText(const RowMatrix& rolledLast, int layers, const RowMatrix& rawLast,
                        const std::vector<std::string>& labels, int row) {
  if (layers < 1 || row < 0 || row >= rolledLast.rows()) return "";
  const auto top = strongestSources(rolledLast, row, 3);
  std::string s = "Rollout (Abnar & Zuidema 2020): position " + std::to_string(row) + " after all " +
                  std::to_string(layers) + " layer" + (layers == 1 ? "" : "s") + " draws most on ";
  for (std::size_t i = 0; i < top.size(); ++i) {
    if (i > 0) s += i + 1 == top.size() ? " and " : ", ";
    s += tokenName(top[i].first, top[i].second, labels);
  }
  s += ".";
  const auto raw = strongestSources(rawLast, row, 1);
  if (!raw.empty()) {
    s += " The last layer's raw weights (mean over heads) put most on " + tokenName(raw[0].first, raw[0].second, labels) + ".";
  }
  s += " Each layer is ½ (mean over heads of A + I), rows summing to 1, so a token's own share stays in: rollout "
       "traces attention through the residual stream across layers, which one layer's weights cannot show. A "
       "heuristic, not a faithful account: it ignores the value vectors' sizes and the MLPs, and the ½ on the "
       "identity is a choice.";
  return s;
}

}  // namespace mhascope::analysis
