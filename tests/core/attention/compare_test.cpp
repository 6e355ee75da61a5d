// Two traces side by side (core/attention/compare.hpp): B − A cell by cell against a plain loop,
// the symmetric scale, blocked cells left out, the reasons no difference map is possible, and the
// words tested against the numbers they state.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "attention/compare.hpp"
#include "attention/engine.hpp"
#include "attention/model.hpp"

namespace mhascope {
namespace {

Trace traceOf(const ModelConfig& c) {
  auto m = buildModel(c);
  EXPECT_TRUE(m.ok()) << m.error().message;
  Trace t;
  auto st = forward(m->inputs, m->weights, m->options, t);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return t;
}

ModelConfig base() {
  ModelConfig c;
  c.text = "the cat sat on the mat";
  c.dModel = 8;
  c.heads = 2;
  c.seed = 1;
  return c;
}

Slice2D slice(const Trace& t, StageId s, int head) {
  auto r = sliceStage(t, s, 0, head);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return *r;
}

TEST(Compare, DifferenceIsBMinusAWithOneSymmetricScale) {
  ModelConfig cb = base();
  cb.seed = 2;
  const Trace a = traceOf(base()), b = traceOf(cb);
  ASSERT_EQ(differenceBlocker(a, b, StageId::Weights), "");
  const Slice2D sa = slice(a, StageId::Weights, 1), sb = slice(b, StageId::Weights, 1);
  auto d = sliceDifference(sa, sb);
  ASSERT_TRUE(d.ok()) << d.error().message;
  float maxAbs = 0;
  int mr = -1, mc = -1;
  for (int r = 0; r < sa.rows; ++r) {
    for (int c = 0; c < sa.cols; ++c) {
      const float want = sb.at(r, c) - sa.at(r, c);
      EXPECT_EQ(d->values[static_cast<std::size_t>(r * sa.cols + c)], want) << r << "," << c;
      if (std::fabs(want) > maxAbs) {
        maxAbs = std::fabs(want);
        mr = r;
        mc = c;
      }
    }
  }
  ASSERT_GT(maxAbs, 0.0f);
  EXPECT_EQ(d->max.absDiff, maxAbs);
  EXPECT_EQ(d->max.row, mr);
  EXPECT_EQ(d->max.col, mc);
  EXPECT_EQ(d->max.a, sa.at(mr, mc));
  EXPECT_EQ(d->max.b, sb.at(mr, mc));
  // One scale centred on 0: the largest |B − A| at either end.
  EXPECT_EQ(d->hi, maxAbs);
  EXPECT_EQ(d->lo, -maxAbs);
  EXPECT_FALSE(d->identical);
}

TEST(Compare, SameConfigurationIsIdenticalAndTheScaleNeverCollapses) {
  const Trace a = traceOf(base()), b = traceOf(base());
  auto d = sliceDifference(slice(a, StageId::Scores, 0), slice(b, StageId::Scores, 0));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->identical);
  EXPECT_EQ(d->max.absDiff, 0.0f);
  EXPECT_EQ(d->hi, 1e-6f);
  EXPECT_EQ(d->lo, -1e-6f);
  EXPECT_EQ(differenceWords(d->max, slice(a, StageId::Scores, 0)),
            "max |B − A| = 0: B equals A to the bit in every compared cell");
  EXPECT_EQ(symmetricHalfRange(0.25f), 0.25f);
  EXPECT_EQ(symmetricHalfRange(NAN), 1e-6f);
}

TEST(Compare, BlockedCellsAreNotComparedAndOneSidedOnesAreCounted) {
  ModelConfig cb = base();
  cb.mask = MaskKind::Causal;
  const Trace a = traceOf(base()), b = traceOf(cb);
  ASSERT_EQ(differenceBlocker(a, b, StageId::MaskedScores), "");
  const Slice2D sa = slice(a, StageId::MaskedScores, 0), sb = slice(b, StageId::MaskedScores, 0);
  auto d = sliceDifference(sa, sb);
  ASSERT_TRUE(d.ok());
  const int t = sa.rows;
  EXPECT_EQ(d->oneSided, t * (t - 1) / 2);  // the upper triangle: blocked in B only
  for (int r = 0; r < t; ++r) {
    for (int c = 0; c < t; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * t + c);
      EXPECT_EQ(d->blocked[i], c > r ? 1 : 0);
      EXPECT_TRUE(std::isfinite(d->values[i]));
      // Causal masking changes no score it keeps: the lower triangle subtracts to 0.
      if (c <= r) EXPECT_EQ(d->values[i], 0.0f);
    }
  }
  // The weights: the mask moves weight onto earlier keys, so the rows differ.
  auto w = sliceDifference(slice(a, StageId::Weights, 0), slice(b, StageId::Weights, 0));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->oneSided, t * (t - 1) / 2);
  EXPECT_GT(w->max.absDiff, 0.0f);
  EXPECT_LE(w->max.col, w->max.row);  // only cells both sides compute
}

TEST(Compare, BlockersSayExactlyWhy) {
  ModelConfig longer = base();
  longer.text = "the cat sat on the mat today";
  const Trace a = traceOf(base()), t7 = traceOf(longer);
  EXPECT_EQ(differenceBlocker(a, t7, StageId::Weights),
            "different T: A has T = 6 tokens, B has T = 7, so a cell of one has no partner in the other (both are "
            "shown side by side)");
  EXPECT_FALSE(stageMaxDifference(a, t7, StageId::Weights, 0).ok());

  ModelConfig h4 = base();
  h4.heads = 4;
  const Trace b4 = traceOf(h4);
  EXPECT_EQ(differenceBlocker(a, b4, StageId::Weights),
            "different h: A has h = 2 heads (d_k = 4), B has h = 4 (d_k = 2), so head i of one does not do the work "
            "of head i of the other");
  // A stage without a head axis keeps its shape (B, T, d_model): it can be compared.
  EXPECT_EQ(differenceBlocker(a, b4, StageId::Output), "");
  EXPECT_TRUE(stageMaxDifference(a, b4, StageId::Output, 0).ok());

  ModelConfig rope = base();
  ASSERT_TRUE(setPositions(rope, "rope").ok());
  const Trace r = traceOf(rope);
  EXPECT_EQ(differenceBlocker(a, r, StageId::QRotated),
            "A records no 'q_rotated' stage (its configuration does not use it); B does");
  EXPECT_EQ(differenceBlocker(r, a, StageId::QRotated),
            "B records no 'q_rotated' stage (its configuration does not use it); A does");
  EXPECT_EQ(differenceBlocker(a, a, StageId::QRotated),
            "neither side records the 'q_rotated' stage: neither configuration uses it");
  EXPECT_EQ(differenceBlocker(a, r, StageId::Weights), "");

  auto mismatch = sliceDifference(slice(a, StageId::Weights, 0), slice(t7, StageId::Weights, 0));
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().message, "no difference map: A's slice is 6 × 6, B's 7 × 7");
}

TEST(Compare, StageMaximumIsTheLargestOverHeadsAndItsWordsStateIt) {
  ModelConfig cb = base();
  cb.seed = 7;
  const Trace a = traceOf(base()), b = traceOf(cb);
  auto m = stageMaxDifference(a, b, StageId::Weights, 0);
  ASSERT_TRUE(m.ok()) << m.error().message;
  float best = 0;
  int bh = -1;
  for (int h = 0; h < a.heads; ++h) {
    auto d = sliceDifference(slice(a, StageId::Weights, h), slice(b, StageId::Weights, h));
    ASSERT_TRUE(d.ok());
    if (d->max.absDiff > best) {
      best = d->max.absDiff;
      bh = h;
    }
  }
  EXPECT_EQ(m->absDiff, best);
  EXPECT_EQ(m->head, bh);
  const Slice2D labels = slice(a, StageId::Weights, m->head);
  EXPECT_EQ(std::fabs(slice(b, StageId::Weights, m->head).at(m->row, m->col) - labels.at(m->row, m->col)), best);
  const std::string words = differenceWords(*m, labels);
  const std::string want = "max |B − A| = " + formatDifference(best) + " at head " + std::to_string(bh) + ", query " +
                           std::to_string(m->row) + " '" + labels.rowLabels[static_cast<std::size_t>(m->row)] +
                           "', key " + std::to_string(m->col) + " '" +
                           labels.colLabels[static_cast<std::size_t>(m->col)] + "' (A " + formatDifference(m->a) +
                           ", B " + formatDifference(m->b) + ")";
  EXPECT_EQ(words, want);
  // The number in the words is the number, to 3 significant digits.
  EXPECT_NEAR(std::stod(words.substr(std::string("max |B − A| = ").size())), best, 0.0051 * best);
  // A stage without heads names no head, and features are features.
  auto o = stageMaxDifference(a, b, StageId::Output, 0);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->head, -1);
  const std::string ow = differenceWords(*o, slice(a, StageId::Output, 0));
  EXPECT_EQ(ow.find("head"), std::string::npos) << ow;
  EXPECT_NE(ow.find(", feature " + std::to_string(o->col) + " (A "), std::string::npos) << ow;
  // A batch item one side lacks.
  EXPECT_EQ(stageMaxDifference(a, b, StageId::Weights, 1).error().message,
            "batch item 1 is not on both sides: A has B = 1, B has B = 1");
}

TEST(Compare, HoverWordsStateBothValuesAndTheirDifference) {
  ModelConfig cb = base();
  cb.mask = MaskKind::Causal;
  const Trace a = traceOf(base()), b = traceOf(cb);
  const Slice2D sa = slice(a, StageId::Weights, 0), sb = slice(b, StageId::Weights, 0);
  const std::string w = hoverWords(sa, &sb, 3, 1);
  EXPECT_EQ(w, "query 3 '" + sa.rowLabels[3] + "', key 1 '" + sa.colLabels[1] + "': A " + formatDifference(sa.at(3, 1)) +
                   ", B " + formatDifference(sb.at(3, 1)) + ", B − A " + formatDifference(sb.at(3, 1) - sa.at(3, 1)));
  EXPECT_NE(hoverWords(sa, &sb, 1, 3).find(", B blocked, B − A not compared (blocked or not finite)"), std::string::npos);
  ModelConfig longer = base();
  longer.text = "the cat sat on the mat today";
  const Trace t7 = traceOf(longer);
  const Slice2D s7 = slice(t7, StageId::Weights, 0);
  EXPECT_NE(hoverWords(sa, &s7, 0, 0).find(" (no difference map)"), std::string::npos);
  EXPECT_EQ(hoverWords(sa, &sb, 3, 1, false), "query 3 '" + sa.rowLabels[3] + "', key 1 '" + sa.colLabels[1] + "': A " +
                                                  formatDifference(sa.at(3, 1)) + ", B " + formatDifference(sb.at(3, 1)) +
                                                  " (no difference map)");
  EXPECT_EQ(hoverWords(sa, nullptr, 9, 0), "");
}

}  // namespace
}  // namespace mhascope
