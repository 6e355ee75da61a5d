// A head's role scores (analysis/head_scores.hpp): hand-computed values on a tiny attention, the
// prefix-matching query count (0 = n/a), and equality with a plain loop over the definitions on
// random causal attention (the loop the Train mode's probes used before the scores were shared).
#include "analysis/head_scores.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention/random.hpp"

namespace mhascope {
namespace {

TEST(HeadScores, HandComputedOnFourTokens) {
  // Tokens A B A B: query 3 (B) has the earlier copy j = 1, whose next key is 2.
  const std::vector<int> x = {7, 8, 7, 8};
  // (T, T) causal rows summing to 1.
  const std::vector<float> a = {1.0f, 0, 0, 0,
                                0.5f, 0.5f, 0, 0,
                                0.25f, 0.75f, 0, 0,
                                0.1f, 0.2f, 0.6f, 0.1f};
  const TokenRepeats r(x.data(), 4);
  EXPECT_FALSE(r.seen(1));
  EXPECT_TRUE(r.seen(2));
  EXPECT_TRUE(r.hasEarlierCopy(2));  // its copy j = 0 has its next key 1 before the query
  const HeadScores s = headScores(a.data(), r);
  // previous-token over t = 1, 2, 3: (0.5 + 0.75 + 0.6) / 3
  EXPECT_DOUBLE_EQ(s.prevToken, (0.5 + 0.75 + static_cast<double>(0.6f)) / 3);
  // new tokens: t = 1 (B first); repeats: t = 2, 3
  EXPECT_DOUBLE_EQ(s.prevTokenNew, 0.5);
  EXPECT_DOUBLE_EQ(s.prevTokenSeen, (0.75 + static_cast<double>(0.6f)) / 2);
  EXPECT_DOUBLE_EQ(s.self, (1.0 + 0.5 + 0 + static_cast<double>(0.1f)) / 4);
  EXPECT_DOUBLE_EQ(s.sink, (0.5 + 0.25 + static_cast<double>(0.1f)) / 3);
  const auto plogp = [](double p) { return p > 0 ? -p * std::log(p) : 0.0; };
  const double ent = 0 + 2 * plogp(0.5) + plogp(0.25) + plogp(0.75) +
                     plogp(0.1f) + plogp(0.2f) + plogp(0.6f) + plogp(0.1f);
  EXPECT_NEAR(s.entropy, ent / 4, 1e-12);
  // Prefix matching: query 2 (A) has copy j = 0 with next key 1 < 2: weight a[2][1] = 0.75;
  // query 3 (B) has copy j = 1 with next key 2 < 3: weight a[3][2] = 0.6.
  EXPECT_EQ(s.inductionQueries, 2);
  EXPECT_DOUBLE_EQ(s.induction, (0.75 + static_cast<double>(0.6f)) / 2);
}

TEST(HeadScores, NoRepeatedTokenLeavesInductionUndefined) {
  const std::vector<int> x = {1, 2, 3};
  const std::vector<float> a = {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f};
  const HeadScores s = headScores(a.data(), TokenRepeats(x.data(), 3));
  EXPECT_EQ(s.inductionQueries, 0);
  EXPECT_EQ(s.induction, 0.0);
}

TEST(HeadScores, ACopyJustBeforeTheQueryIsNoPrefixMatch) {
  // x = A A: query 1's copy j = 0 has its next key 1 = the query itself, not an earlier one.
  const std::vector<int> x = {4, 4, 4};
  const TokenRepeats r(x.data(), 3);
  EXPECT_FALSE(r.hasEarlierCopy(1));
  ASSERT_TRUE(r.hasEarlierCopy(2));
  EXPECT_EQ(r.copiesEnd(2) - r.copiesBegin(2), 1);  // j = 0 only; j = 1 is just before
  EXPECT_EQ(*r.copiesBegin(2), 0);
}

// The definitions written as plain loops, with the earlier copies searched for every query.
HeadScores plainScores(const float* a, const int* tok, int T) {
  HeadScores s;
  double nPrev = 0, nNew = 0, nSeen = 0, matched = 0, n = 0;
  for (int t = 0; t < T; ++t) {
    const float* row = a + t * T;
    s.self += row[t];
    double ent = 0;
    for (int k = 0; k <= t; ++k) {
      if (row[k] > 0) ent -= static_cast<double>(row[k]) * std::log(static_cast<double>(row[k]));
    }
    s.entropy += ent;
    if (t >= 1) {
      s.prevToken += row[t - 1];
      s.sink += row[0];
      nPrev += 1;
      bool seen = false;
      for (int j = t - 1; j >= 0 && !seen; --j) seen = tok[j] == tok[t];
      (seen ? s.prevTokenSeen : s.prevTokenNew) += row[t - 1];
      (seen ? nSeen : nNew) += 1;
    }
    bool copy = false;
    double total = 0;
    for (int j = 0; j + 1 < t; ++j) {
      if (tok[j] == tok[t]) {
        copy = true;
        total += row[j + 1];
      }
    }
    if (copy) {
      matched += total;
      n += 1;
    }
  }
  s.self /= T;
  s.entropy /= T;
  if (nPrev > 0) {
    s.prevToken /= nPrev;
    s.sink /= nPrev;
  }
  if (nNew > 0) s.prevTokenNew /= nNew;
  if (nSeen > 0) s.prevTokenSeen /= nSeen;
  s.induction = n > 0 ? matched / n : 0;
  s.inductionQueries = static_cast<std::int64_t>(n);
  return s;
}

TEST(HeadScores, EqualThePlainLoopsOnRandomCausalAttention) {
  SplitMix64 rng(11);
  for (int T : {1, 2, 5, 33, 80}) {
    std::vector<int> x(static_cast<std::size_t>(T));
    for (int& v : x) v = static_cast<int>(rng.next() % 6);  // few ids: many repeats
    std::vector<float> a(static_cast<std::size_t>(T * T), 0.0f);
    for (int t = 0; t < T; ++t) {
      float sum = 0;
      for (int k = 0; k <= t; ++k) sum += a[static_cast<std::size_t>(t * T + k)] = rng.uniform01();
      for (int k = 0; k <= t; ++k) a[static_cast<std::size_t>(t * T + k)] /= sum;
    }
    const HeadScores got = headScores(a.data(), TokenRepeats(x.data(), T));
    const HeadScores want = plainScores(a.data(), x.data(), T);
    SCOPED_TRACE("T = " + std::to_string(T));
    // The same sums in the same order: equal, not merely close.
    EXPECT_EQ(got.prevToken, want.prevToken);
    EXPECT_EQ(got.prevTokenNew, want.prevTokenNew);
    EXPECT_EQ(got.prevTokenSeen, want.prevTokenSeen);
    EXPECT_EQ(got.self, want.self);
    EXPECT_EQ(got.sink, want.sink);
    EXPECT_EQ(got.entropy, want.entropy);
    EXPECT_EQ(got.induction, want.induction);
    EXPECT_EQ(got.inductionQueries, want.inductionQueries);
  }
}

TEST(HeadScores, SumsOverSequencesAreMeansOverAllQueries) {
  // Two sequences summed: the score is the mean over both sequences' queries, not a mean of means.
  const std::vector<int> x1 = {1, 2}, x2 = {1, 2, 3};
  const std::vector<float> a1 = {1, 0, 1, 0};                          // query 1: prev 1
  const std::vector<float> a2 = {1, 0, 0, 0, 0, 1, 0, 0, 1};           // queries 1, 2: prev 0
  HeadScoreSums sums;
  sums.addRoles(a1.data(), TokenRepeats(x1.data(), 2));
  sums.addRoles(a2.data(), TokenRepeats(x2.data(), 3));
  EXPECT_DOUBLE_EQ(sums.scores().prevToken, 1.0 / 3);
}

// A uniform causal head (row t even over its t + 1 keys) scores ln(T!) / T, the reference the
// Model tab measures a head's entropy against: below ln T, the reference of a full (non-causal) row.
TEST(HeadScores, EvenCausalEntropyIsTheUniformCausalHeadsScore) {
  for (int T : {1, 2, 5, 64}) {
    std::vector<float> a(static_cast<std::size_t>(T) * T, 0.0f);
    std::vector<int> x(static_cast<std::size_t>(T));
    for (int t = 0; t < T; ++t) {
      x[static_cast<std::size_t>(t)] = t;
      for (int k = 0; k <= t; ++k) a[static_cast<std::size_t>(t * T + k)] = 1.0f / static_cast<float>(t + 1);
    }
    const double got = headScores(a.data(), TokenRepeats(x.data(), T)).entropy;
    EXPECT_NEAR(evenCausalEntropy(T), got, 1e-5) << "T = " << T;
  }
  EXPECT_NEAR(evenCausalEntropy(2), std::log(2.0) / 2, 1e-12);  // rows: ln 1, ln 2
  EXPECT_LT(evenCausalEntropy(64), std::log(64.0) - 0.9);
}

// The chance level (uniformHeadScores, closed form per row) against headScores of an explicit
// uniform causal pattern on the same tokens, and previous-token against the harmonic formula
// (H_T − 1) / (T − 1) summed here independently; on tokens with repeats so every split and
// prefix matching have queries.
TEST(HeadScores, UniformHeadScoresAreAUniformPatternsScores) {
  for (int T : {2, 3, 10, 32, 77}) {
    std::vector<int> x(static_cast<std::size_t>(T));
    for (int t = 0; t < T; ++t) x[static_cast<std::size_t>(t)] = (t * 7) % 5;  // repeats from t = 5 on
    std::vector<float> a(static_cast<std::size_t>(T) * T, 0.0f);
    for (int t = 0; t < T; ++t)
      for (int k = 0; k <= t; ++k) a[static_cast<std::size_t>(t * T + k)] = 1.0f / static_cast<float>(t + 1);
    const TokenRepeats r(x.data(), T);
    const HeadScores want = headScores(a.data(), r), got = uniformHeadScores(r);
    EXPECT_NEAR(got.prevToken, want.prevToken, 1e-6) << "T = " << T;
    EXPECT_NEAR(got.prevTokenNew, want.prevTokenNew, 1e-6) << "T = " << T;
    EXPECT_NEAR(got.prevTokenSeen, want.prevTokenSeen, 1e-6) << "T = " << T;
    EXPECT_NEAR(got.sink, want.sink, 1e-6) << "T = " << T;
    EXPECT_NEAR(got.self, want.self, 1e-6) << "T = " << T;
    EXPECT_NEAR(got.entropy, want.entropy, 1e-5) << "T = " << T;
    EXPECT_EQ(got.inductionQueries, want.inductionQueries) << "T = " << T;
    EXPECT_NEAR(got.induction, want.induction, 1e-6) << "T = " << T;
    double harmonic = 0;  // H_T
    for (int n = 1; n <= T; ++n) harmonic += 1.0 / n;
    EXPECT_NEAR(got.prevToken, (harmonic - 1) / (T - 1), 1e-12) << "T = " << T;
    EXPECT_NEAR(got.sink, (harmonic - 1) / (T - 1), 1e-12) << "T = " << T;
    EXPECT_NEAR(got.self, harmonic / T, 1e-12) << "T = " << T;
  }
  // The figures the header states.
  std::vector<int> ten(10), thirtyTwo(32);
  EXPECT_NEAR(uniformHeadScores(TokenRepeats(ten.data(), 10)).prevToken, 0.214, 5e-4);
  EXPECT_NEAR(uniformHeadScores(TokenRepeats(thirtyTwo.data(), 32)).prevToken, 0.099, 5e-4);
}

TEST(HeadScores, AboveChanceIsZeroAtChanceAndOneAtOne) {
  EXPECT_DOUBLE_EQ(aboveChance(0.1, 0.1), 0.0);
  EXPECT_DOUBLE_EQ(aboveChance(0.05, 0.1), 0.0);
  EXPECT_DOUBLE_EQ(aboveChance(1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(aboveChance(0.55, 0.1), 0.5);
  EXPECT_DOUBLE_EQ(aboveChance(1.0, 1.0), 0.0);
}

}  // namespace
}  // namespace mhascope
