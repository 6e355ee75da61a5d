// A head's role scores from its attention weights (definitions in head_scores.hpp).
#include "analysis/head_scores.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attention/uniform_share.hpp"

namespace mhascope {

TokenRepeats::TokenRepeats(const int* tokens, int T) : T_(std::max(0, T)) {
  const auto n = static_cast<std::size_t>(T_);
  byToken_.resize(n);
  std::iota(byToken_.begin(), byToken_.end(), 0);
  std::stable_sort(byToken_.begin(), byToken_.end(), [&](int a, int b) { return tokens[a] < tokens[b]; });
  groupStart_.assign(n, 0);
  copies_.assign(n, 0);
  seen_.assign(n, 0);
  std::size_t start = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && tokens[byToken_[i]] != tokens[byToken_[i - 1]]) start = i;
    const int t = byToken_[i];
    const auto rank = static_cast<int>(i - start);  // earlier occurrences of x_t
    groupStart_[static_cast<std::size_t>(t)] = static_cast<std::int64_t>(start);
    seen_[static_cast<std::size_t>(t)] = rank > 0;
    // The occurrence just before t (j = t - 1) has no next key before the query: left out.
    copies_[static_cast<std::size_t>(t)] = rank > 0 && byToken_[i - 1] == t - 1 ? rank - 1 : rank;
  }
}

double prefixMatchingWeight(const float* row, const TokenRepeats& r, int t) {
  double total = 0;
  for (const int* j = r.copiesBegin(t); j != r.copiesEnd(t); ++j) total += row[*j + 1];
  return total;
}

void HeadScoreSums::addRoles(const float* a, const TokenRepeats& r) {
  const int T = r.size();
  for (int t = 0; t < T; ++t) {
    const float* row = a + static_cast<std::int64_t>(t) * T;
    sum_.self += row[t];
    double ent = 0;
    for (int k = 0; k <= t; ++k) {
      if (row[k] > 0) ent -= static_cast<double>(row[k]) * std::log(static_cast<double>(row[k]));
    }
    sum_.entropy += ent;
    rows_ += 1;
    if (t >= 1) {
      sum_.prevToken += row[t - 1];
      sum_.sink += row[0];
      prevRows_ += 1;
      const bool seen = r.seen(t);
      (seen ? sum_.prevTokenSeen : sum_.prevTokenNew) += row[t - 1];
      (seen ? seenRows_ : newRows_) += 1;
    }
  }
}

void HeadScoreSums::addPrefixMatching(const float* a, const TokenRepeats& r) {
  const int T = r.size();
  for (int t = 2; t < T; ++t) {
    if (!r.hasEarlierCopy(t)) continue;
    sum_.induction += prefixMatchingWeight(a + static_cast<std::int64_t>(t) * T, r, t);
    sum_.inductionQueries += 1;
  }
}

HeadScores HeadScoreSums::scores() const {
  HeadScores s = sum_;
  if (rows_ > 0) {
    s.self /= rows_;
    s.entropy /= rows_;
  }
  if (prevRows_ > 0) {
    s.prevToken /= prevRows_;
    s.sink /= prevRows_;
  }
  if (newRows_ > 0) s.prevTokenNew /= newRows_;
  if (seenRows_ > 0) s.prevTokenSeen /= seenRows_;
  if (s.inductionQueries > 0) s.induction /= static_cast<double>(s.inductionQueries);
  return s;
}

void HeadScoreSums::addUniform(const TokenRepeats& r) {
  // addRoles and addPrefixMatching of a pattern whose row t is uniformShare(t + 1) on each of its
  // keys, in closed form per row (no (T, T) pattern is formed): every share is that weight, the
  // row's entropy ln(t + 1), prefix matching the weight times the counted copies.
  const int T = r.size();
  for (int t = 0; t < T; ++t) {
    const double w = uniformShare(t + 1);
    sum_.self += w;
    sum_.entropy += std::log(static_cast<double>(t + 1));
    rows_ += 1;
    if (t >= 1) {
      sum_.prevToken += w;
      sum_.sink += w;
      prevRows_ += 1;
      const bool seen = r.seen(t);
      (seen ? sum_.prevTokenSeen : sum_.prevTokenNew) += w;
      (seen ? seenRows_ : newRows_) += 1;
    }
    if (t >= 2 && r.hasEarlierCopy(t)) {
      sum_.induction += static_cast<double>(r.copiesEnd(t) - r.copiesBegin(t)) * w;
      sum_.inductionQueries += 1;
    }
  }
}

HeadScores uniformHeadScores(const TokenRepeats& r) {
  HeadScoreSums sums;
  sums.addUniform(r);
  return sums.scores();
}

double aboveChance(double score, double chance) {
  if (!(chance < 1.0)) return 0.0;
  return std::clamp((score - chance) / (1.0 - chance), 0.0, 1.0);
}

double evenCausalEntropy(int T) {
  if (T <= 1) return 0.0;
  return std::lgamma(static_cast<double>(T) + 1.0) / static_cast<double>(T);
}

RoleScores roleScoresOf(const HeadScores& s, int layer) {
  return {.layer = layer, .prevToken = s.prevToken, .prevTokenNew = s.prevTokenNew, .self = s.self, .firstToken = s.sink,
          .entropy = s.entropy,
          .prefixMatching = s.inductionQueries > 0 ? std::optional<double>(s.induction) : std::nullopt,
          .copying = s.copying};
}

HeadScores headScores(const float* a, const TokenRepeats& r) {
  HeadScoreSums sums;
  sums.addRoles(a, r);
  sums.addPrefixMatching(a, r);
  return sums.scores();
}

}  // namespace mhascope
