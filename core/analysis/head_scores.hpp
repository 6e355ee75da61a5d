// What one attention head does, measured from its attention weights — the one definition the
// Train mode (core/train/probes) and a real model's view (core/model/model_view) both use.
//
// Input: one head's causal attention on one sequence, a (T, T) row-major (row t = query t,
// a[t][k] = 0 for k > t, each row sums to 1), and the sequence's token ids x (T).
//   previous-token  mean a[t][t-1] over queries t >= 1; also split by whether x_t occurred before:
//                   prevTokenNew (its first occurrence) and prevTokenSeen (a repeat)
//   self            mean a[t][t] over every query
//   sink            mean a[t][0] over queries t >= 1: the share of attention parked on the first
//                   token. Trained models put much of many heads' weight there whatever the token
//                   is (the "attention sink"): softmax must put its weight somewhere, and the first
//                   key, seen by every query, becomes a no-op place to park it.
//   entropy         mean over rows of -sum_k a[t][k] ln a[t][k] (nats; 0 = one key, ln(t+1) = even)
//   induction       prefix matching (Olsson et al. 2022): for a query t whose token has an earlier
//                   copy j (x_j = x_t, j + 1 < t), the TOTAL weight on the keys j + 1 after every
//                   such copy — where an induction head looks to predict "what came next last time";
//                   the mean over those queries only (inductionQueries of them; the others are left
//                   out, not counted as 0, and with none the score is undefined, not 0)
// Every score but the entropy is in [0, 1]. What the scores make a head (its role, the induction
// rule) is head_roles.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/head_roles.hpp"

namespace mhascope {

struct HeadScores {
  double prevToken = 0, prevTokenNew = 0, prevTokenSeen = 0;
  double self = 0;
  double sink = 0;  // first-token share
  double entropy = 0;
  double induction = 0;              // prefix matching, over inductionQueries queries
  std::int64_t inductionQueries = 0;  // 0: no query has an earlier copy of its token — induction is n/a
  // Copying (head_roles.hpp) over the same queries as prefix matching. It needs the model's
  // weights, not only the attention, so the scores below leave it unset; the model view measures
  // it where the induction rule needs it (unset there: not measured).
  std::optional<double> copying;
};

// What the scores need to know about the tokens, found once per sequence rather than once per head.
class TokenRepeats {
 public:
  TokenRepeats(const int* tokens /*(T)*/, int T);
  int size() const { return T_; }
  // x_t occurred at some j < t.
  bool seen(int t) const { return seen_[static_cast<std::size_t>(t)] != 0; }
  // The earlier copies j of x_t with j + 1 < t, ascending, as [copiesBegin(t), copiesEnd(t)).
  const int* copiesBegin(int t) const { return byToken_.data() + groupStart_[static_cast<std::size_t>(t)]; }
  const int* copiesEnd(int t) const { return copiesBegin(t) + copies_[static_cast<std::size_t>(t)]; }
  // Query t counts for prefix matching (it has such a copy).
  bool hasEarlierCopy(int t) const { return copies_[static_cast<std::size_t>(t)] > 0; }

 private:
  // Positions grouped by token, ascending within a group: x_t's earlier copies are the start of
  // its group, so T ints hold every query's copies (a list per query would grow as T^2 on a
  // text of one repeated token).
  int T_ = 0;
  std::vector<int> byToken_;            // (T) positions sorted by (token, position)
  std::vector<std::int64_t> groupStart_;  // (T) where x_t's group starts in byToken_
  std::vector<int> copies_;             // (T) how many of the group's first entries are copies for t
  std::vector<std::uint8_t> seen_;      // (T)
};

// Query t's prefix-matching weight: sum of row[j + 1] over its earlier copies j (row = a[t], (T)).
double prefixMatchingWeight(const float* row /*(T)*/, const TokenRepeats& r, int t);

// Sums over one or more sequences (the Train mode's probe batch has several), divided at the end,
// so a batch's score is the mean over all its queries, not a mean of per-sequence means.
class HeadScoreSums {
 public:
  // Previous-token (and its split), self, sink and entropy of one sequence's a (T, T).
  void addRoles(const float* a /*(T, T)*/, const TokenRepeats& r);
  // Prefix matching of one sequence's a (T, T).
  void addPrefixMatching(const float* a /*(T, T)*/, const TokenRepeats& r);
  // Both for a head spreading every row evenly over its causal keys (uniformHeadScores).
  void addUniform(const TokenRepeats& r);
  HeadScores scores() const;

 private:
  HeadScores sum_;
  double rows_ = 0, prevRows_ = 0, newRows_ = 0, seenRows_ = 0;
};

// What the role rule reads of these scores in layer `layer` (analysis/head_roles.hpp): the sink is
// the first-token score; prefix matching is none when no query counts for it.
RoleScores roleScoresOf(const HeadScores& s, int layer);

// Every score of one head on one sequence.
HeadScores headScores(const float* a /*(T, T)*/, const TokenRepeats& r);

// Chance level: the scores of a causal head that spreads every row evenly over the keys it may see
// (row t sees t + 1 keys, each uniformShare(t + 1) = 1 / (t + 1), the rule the Windows lesson reads
// the first key's share against), on the same tokens, so each score averages over the same queries
// as a real head's. A score is read against it: a head scoring 0.21 on previous-token at T = 10 does
// no better than ignoring its scores.
//   previous-token, sink  mean over t = 1 … T−1 of 1/(t + 1) = (H_T − 1) / (T − 1), H_T the harmonic
//                         number: 0.214 at T = 10, 0.099 at T = 32; prevTokenNew and prevTokenSeen
//                         the same mean over their own queries
//   self                  mean over t = 0 … T−1 of 1/(t + 1) = H_T / T
//   induction             mean of (x_t's counted earlier copies) / (t + 1) over the queries that have one
//   entropy               evenCausalEntropy(T)
HeadScores uniformHeadScores(const TokenRepeats& r);

// How far above chance a score is, in [0, 1]: (score − chance) / (1 − chance), 0 at or below chance,
// 1 for a score of 1 (chance of 1 or more: 0, nothing can beat it).
double aboveChance(double score, double chance);

// The entropy score of a causal head spreading every row evenly over the keys it may see: row t
// has t + 1 of them, H = ln(t + 1), so the mean over T rows is ln(T!) / T = lgamma(T + 1) / T
// (about ln T − 1 for long sequences, not ln T). The reference "even" for a causal head's
// entropy; 0 for T <= 1.
double evenCausalEntropy(int T);

}  // namespace mhascope
