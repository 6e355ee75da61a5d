// The score rules shared by the engine and the lessons (core/attention/score_rules.cpp): one
// copy of the scale factor, the mask's polarity and the hand-set scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "attention/engine.hpp"

namespace mhascope {
namespace {

TEST(ScoreRules, ScaleFactorForEachKind) {
  EXPECT_FLOAT_EQ(scaleFactorFor(ScaleKind::SqrtDk, 16, 4), 0.5f);        // d_k = 4
  EXPECT_FLOAT_EQ(scaleFactorFor(ScaleKind::SqrtDModel, 16, 4), 0.25f);  // d_model = 16
  EXPECT_FLOAT_EQ(scaleFactorFor(ScaleKind::None, 16, 4), 1.0f);
}

TEST(ScoreRules, BlockedCellsCausalPaddingAndAttnMaskPolarity) {
  AttentionOptions opt;
  const std::int64_t B = 2, T = 3;
  EXPECT_EQ(blockedCells(opt, B, T, T), std::vector<std::uint8_t>(B * T * T, 0)) << "no mask: nothing blocked";
  opt.causal = true;
  auto c = blockedCells(opt, 1, T, T);
  EXPECT_EQ(c, (std::vector<std::uint8_t>{0, 1, 1, 0, 0, 1, 0, 0, 0})) << "causal: key k > query q";
  opt.causal = false;
  opt.keyPaddingMask = Tensor({B, T}, {"B", "T_k"});
  opt.keyPaddingMask->data = {0, 0, 1, 0, 0, 0};  // nonzero = ignore (PyTorch polarity)
  auto p = blockedCells(opt, B, T, T);
  for (int q = 0; q < T; ++q) {
    EXPECT_EQ(p[static_cast<std::size_t>(q * T + 2)], 1) << "item 0 ignores its last key";
    for (int k = 0; k < T; ++k) EXPECT_EQ(p[static_cast<std::size_t>((T + q) * T + k)], 0) << "item 1 pads nothing";
  }
  opt.keyPaddingMask.reset();
  opt.attnMask = Tensor({T, T}, {"T_q", "T_k"});
  opt.attnMask->data = {0, 1, 0, 0, 0, 0, 1, 1, 1};  // nonzero = blocked (bool polarity)
  std::vector<std::uint8_t> blocked, rowAny;
  buildBlocked(opt, 1, T, T, blocked, rowAny);
  EXPECT_EQ(blocked, (std::vector<std::uint8_t>{0, 1, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(rowAny, (std::vector<std::uint8_t>{1, 0, 2})) << "some, none, every key blocked";
}

// The causal mask alone takes a fast path (two runs of bytes a row); with a key padding mask that
// pads nothing it takes the cell-by-cell loop. Both must agree on every cell and row kind, for
// T_q above, equal to and below T_k (cross-attention), and with no keys at all; and a buffer
// reused from a bigger or differently masked forward must be written over entirely.
TEST(ScoreRules, CausalFastPathEqualsTheCellByCellRule) {
  for (const auto& [B, Tq, Tk] : {std::array<std::int64_t, 3>{2, 5, 5}, {1, 7, 4}, {3, 4, 9}, {1, 3, 0}, {1, 130, 130}}) {
    AttentionOptions fast, slow;
    fast.causal = slow.causal = true;
    slow.keyPaddingMask = Tensor({B, Tk}, {"B", "T_k"});  // all zeros: pads nothing
    std::vector<std::uint8_t> fb(B * Tq * Tk + 17, 7), fr, sb, sr;
    fb.resize(static_cast<std::size_t>(B * Tq * Tk));  // stale bytes left from a previous forward
    if (!fb.empty()) fb[0] = 9;
    std::vector<std::int64_t> fromFast, fromSlow;
    buildBlocked(fast, B, Tq, Tk, fb, fr, &fromFast);
    buildBlocked(slow, B, Tq, Tk, sb, sr, &fromSlow);
    EXPECT_EQ(fb, sb) << "B=" << B << " Tq=" << Tq << " Tk=" << Tk;
    EXPECT_EQ(fr, sr) << "B=" << B << " Tq=" << Tq << " Tk=" << Tk;
    EXPECT_EQ(fromFast, fromSlow) << "B=" << B << " Tq=" << Tq << " Tk=" << Tk;
    for (std::int64_t q = 0; q < Tq; ++q) EXPECT_EQ(fromFast[static_cast<std::size_t>(q)], std::min(q + 1, Tk));
  }
}

// runFrom: where a row's blocked keys begin when they are one run to its end, else -1; the kernels
// then compute the blocked lanes instead of reading bytes.
TEST(ScoreRules, RunFromNamesRowsWhoseBlockedKeysRunToTheEnd) {
  AttentionOptions opt;
  const std::int64_t T = 4;
  std::vector<std::uint8_t> blocked, rowAny;
  std::vector<std::int64_t> from;
  buildBlocked(opt, 1, T, T, blocked, rowAny, &from);
  EXPECT_EQ(from, (std::vector<std::int64_t>{4, 4, 4, 4})) << "no mask: nothing blocked";
  opt.causal = true;
  opt.keyPaddingMask = Tensor({1, T}, {"B", "T_k"});
  opt.keyPaddingMask->data = {0, 0, 0, 1};  // the last key padded: still one run with the causal part
  buildBlocked(opt, 1, T, T, blocked, rowAny, &from);
  EXPECT_EQ(from, (std::vector<std::int64_t>{1, 2, 3, 3}));
  opt.keyPaddingMask->data = {0, 1, 0, 0};  // a hole: rows that see key 2 or 3 after it are no run
  buildBlocked(opt, 1, T, T, blocked, rowAny, &from);
  EXPECT_EQ(from, (std::vector<std::int64_t>{1, 1, -1, -1}));
  opt.keyPaddingMask->data = {1, 1, 1, 1};  // every key blocked: a run from 0
  buildBlocked(opt, 1, T, T, blocked, rowAny, &from);
  EXPECT_EQ(from, (std::vector<std::int64_t>{0, 0, 0, 0}));
}

TEST(ScoreRules, OverrideScoresKeepsNaNCellsAndRespectsTheRowRange) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor o({2, 2, 2}, {"h", "T_q", "T_k"});  // (h, T_q, T_k): the same for every batch item
  o.data = {nan, nan, nan, nan, /*head 1*/ 7, nan, nan, 9};
  float s[4] = {1, 2, 3, 4};
  overrideScores(o, 5, 1, s, 2, 2, 0, 2);
  EXPECT_EQ(s[0], 7);
  EXPECT_EQ(s[1], 2);
  EXPECT_EQ(s[2], 3);
  EXPECT_EQ(s[3], 9);
  float r[4] = {1, 2, 3, 4};
  overrideScores(o, 0, 1, r, 2, 2, 1, 1);  // only query row 1
  EXPECT_EQ(r[0], 1);
  EXPECT_EQ(r[3], 9);
  Tensor perItem({2, 1, 1, 1}, {"B", "h", "T_q", "T_k"});  // (B, h, T_q, T_k)
  perItem.data = {nan, 5};
  float a = 0, b = 0;
  overrideScores(perItem, 0, 0, &a, 1, 1, 0, 1);
  overrideScores(perItem, 1, 0, &b, 1, 1, 0, 1);
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 5);
}

}  // namespace
}  // namespace mhascope
