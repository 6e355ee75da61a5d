// Task generators: seeded (same batch for the same step), the induction period varies, and the
// targets mark exactly the predictable positions; bad settings are refused with every problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "train/tasks.hpp"

using namespace mhascope::train;

TEST(TrainTasks, SameStepSameBatchOtherStepOtherBatch) {
  auto t = Task::make({TaskKind::Induction, 64, 32, 6, 16, ""});
  ASSERT_TRUE(t.ok());
  const Batch a = t->batch(1, 5, 8), b = t->batch(1, 5, 8), c = t->batch(1, 6, 8), d = t->batch(2, 5, 8);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, c.tokens);
  EXPECT_NE(a.tokens, d.tokens);
  // Pinned values: step 0's first tokens are the same on every machine (SplitMix64, no std::).
  const Batch z = t->batch(1, 0, 1);
  std::vector<int> first(z.tokens.begin(), z.tokens.begin() + 4);
  EXPECT_EQ(first, (std::vector<int>{40, 1, 34, 4}));
}

// A fixed period would let layer 0 learn "attend to position t-k+1"; ours varies per sequence
// over the whole range, so no single offset predicts the repeats.
TEST(TrainTasks, InductionPeriodVariesAndTargetsStartAfterFirstPeriod) {
  auto t = Task::make({TaskKind::Induction, 64, 32, 6, 16, ""});
  ASSERT_TRUE(t.ok());
  std::set<int> periods;
  for (int step = 0; step < 20; ++step) {
    const Batch b = t->batch(3, step, 16);
    for (int item = 0; item < b.batch; ++item) {
      const int k = Task::periodOf(b, item);
      EXPECT_GE(k, 6);
      EXPECT_LE(k, 16);
      periods.insert(k);
      // The first period's tokens are distinct.
      std::set<int> firstPeriod(b.tokens.begin() + item * 32, b.tokens.begin() + item * 32 + k);
      EXPECT_EQ(static_cast<int>(firstPeriod.size()), k);
      for (int pos = 0; pos < 32; ++pos) {
        const int tgt = b.targets[static_cast<std::size_t>(item * 32 + pos)];
        // Scored exactly where the position's own token occurred before (pos >= k).
        if (pos < k || pos == 31) {
          EXPECT_EQ(tgt, -1) << "position " << pos << " k " << k;
        } else {
          EXPECT_EQ(tgt, b.tokens[static_cast<std::size_t>(item * 32 + pos + 1)]);
        }
      }
    }
  }
  EXPECT_EQ(periods.size(), 11u);  // every k in 6..16 occurs
}

// The shortcut itself: with a fixed period k, "the next token is the one k - 1 positions back"
// (attend to position t - k + 1) would predict every target. With the period varying per
// sequence, the best single offset predicts only a small share of the predictable positions.
TEST(TrainTasks, NoFixedOffsetPredictsTheInductionTargets) {
  auto t = Task::make({TaskKind::Induction, 64, 32, 6, 16, ""});
  ASSERT_TRUE(t.ok());
  double best = 0.0;
  for (int offset = 1; offset < 32; ++offset) {
    int hit = 0, total = 0;
    for (int step = 0; step < 20; ++step) {
      const Batch b = t->batch(5, step, 16);
      for (int item = 0; item < b.batch; ++item) {
        for (int pos = 0; pos < 32; ++pos) {
          const int tgt = b.targets[static_cast<std::size_t>(item * 32 + pos)];
          if (tgt < 0) continue;
          ++total;
          const int src = pos - offset + 1;
          if (src >= 0 && b.tokens[static_cast<std::size_t>(item * 32 + src)] == tgt) ++hit;
        }
      }
    }
    best = std::max(best, static_cast<double>(hit) / total);
  }
  EXPECT_LT(best, 0.3) << "a fixed offset predicts " << best << " of the targets: a positional shortcut";
  // The same check on a fixed period finds the shortcut (so the check can fail).
  auto fixed = Task::make({TaskKind::Induction, 64, 32, 8, 8, ""});
  ASSERT_TRUE(fixed.ok());
  const Batch b = fixed->batch(5, 0, 16);
  int hit = 0, total = 0;
  for (int item = 0; item < b.batch; ++item) {
    for (int pos = 0; pos < 32; ++pos) {
      const int tgt = b.targets[static_cast<std::size_t>(item * 32 + pos)];
      if (tgt < 0) continue;
      ++total;
      hit += b.tokens[static_cast<std::size_t>(item * 32 + pos - 8 + 1)] == tgt;
    }
  }
  EXPECT_EQ(hit, total);
}

TEST(TrainTasks, ReverseAndSort) {
  for (TaskKind kind : {TaskKind::Reverse, TaskKind::Sort}) {
    auto t = Task::make({kind, 10, 9, 6, 16, ""});
    ASSERT_TRUE(t.ok());
    const Batch b = t->batch(1, 0, 4);
    for (int item = 0; item < 4; ++item) {
      const int* tok = b.tokens.data() + item * 9;
      const int* tgt = b.targets.data() + item * 9;
      EXPECT_EQ(tok[4], 9);  // SEP = V - 1 at n = (T-1)/2 = 4
      std::vector<int> a(tok, tok + 4), out(tok + 5, tok + 9);
      if (kind == TaskKind::Reverse) std::reverse(a.begin(), a.end());
      else std::sort(a.begin(), a.end());
      EXPECT_EQ(out, a);
      for (int pos = 0; pos < 9; ++pos) EXPECT_EQ(tgt[pos] >= 0, pos >= 4 && pos <= 7) << pos;
    }
    EXPECT_EQ(t->symbol(9), "SEP");
  }
}

TEST(TrainTasks, TextNextCharacter) {
  const std::string path = testing::TempDir() + "/train_text.txt";
  std::ofstream(path) << "abcabc\xC3\xA9 abc";  // é is one token
  auto t = Task::make({TaskKind::Text, 0, 4, 6, 16, path});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->vocab(), 5);  // ' ', a, b, c, é
  const Batch b = t->batch(1, 0, 3);
  for (int i = 0; i < 3 * 4; ++i) {
    if (i % 4 != 3) EXPECT_EQ(b.targets[static_cast<std::size_t>(i)], b.tokens[static_cast<std::size_t>(i + 1)]);
    EXPECT_GE(b.targets[static_cast<std::size_t>(i)], 0);
  }
  auto tooShort = Task::make({TaskKind::Text, 0, 40, 6, 16, path});
  ASSERT_FALSE(tooShort.ok());
  EXPECT_NE(tooShort.error().message.find("needs at least T + 1 = 41"), std::string::npos);
}

TEST(TrainTasks, SettingsThatCannotWorkListEveryProblem) {
  auto t = Task::make({TaskKind::Induction, 8, 20, 6, 16, ""});
  ASSERT_FALSE(t.ok());
  const std::string& m = t.error().message;
  EXPECT_NE(m.find("T (20) must be at least 2 * k_max = 32"), std::string::npos) << m;
  EXPECT_NE(m.find("vocab (8) must be at least"), std::string::npos) << m;
  auto r = Task::make({TaskKind::Sort, 2, 9, 6, 16, ""});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("vocab (2) must be at least 3"), std::string::npos);
  EXPECT_FALSE(taskFromName("copy").ok());
}
