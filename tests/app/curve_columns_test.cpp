// The Train mode's charts draw at most four points per pixel column (the M4 rule): what is lost
// are only points inside a column between its first, last, lowest and highest — spikes stay.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "train_lab/curve_columns.hpp"

namespace mhascope::app {
namespace {

struct ColumnFacts {
  ImVec2 first, last;
  float lo = 1e30f, hi = -1e30f;
  int count = 0;
};

std::map<int, ColumnFacts> columns(const std::vector<ImVec2>& pts) {
  std::map<int, ColumnFacts> out;
  for (const ImVec2& p : pts) {
    ColumnFacts& c = out[static_cast<int>(std::floor(p.x))];
    if (c.count++ == 0) c.first = p;
    c.last = p;
    c.lo = std::min(c.lo, p.y);
    c.hi = std::max(c.hi, p.y);
  }
  return out;
}

TEST(CurveColumns, FewPointsStayAsTheyAre) {
  const std::vector<ImVec2> pts = {{10.0f, 5.0f}, {10.5f, 7.0f}, {12.0f, 1.0f}, {30.0f, 9.0f}};
  const auto out = m4Columns(pts);
  ASSERT_EQ(out.size(), pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(out[i].x, pts[i].x);
    EXPECT_EQ(out[i].y, pts[i].y);
  }
  EXPECT_TRUE(m4Columns({}).empty());
}

// 1500 evaluations on a chart 100 pixels wide: a noisy falling loss with one spike and a drop
// (the phase change) inside a column.
TEST(CurveColumns, ManyPointsKeepFirstLastLowestAndHighestOfEveryColumn) {
  std::vector<ImVec2> pts;
  for (int i = 0; i < 1500; ++i) {
    float y = 50.0f + 30.0f * std::sin(0.37f * static_cast<float>(i)) + (i >= 700 ? 40.0f : 0.0f);
    if (i == 1003) y = -200.0f;  // one spike
    pts.emplace_back(20.0f + 100.0f * static_cast<float>(i) / 1500.0f, y);
  }
  const auto out = m4Columns(pts);
  EXPECT_LE(out.size(), 4u * 101u);
  EXPECT_GE(out.size(), 2u * 100u);
  const auto in = columns(pts), kept = columns(out);
  ASSERT_EQ(in.size(), kept.size());
  for (const auto& [col, c] : in) {
    const ColumnFacts& k = kept.at(col);
    EXPECT_EQ(k.first.x, c.first.x) << "column " << col;
    EXPECT_EQ(k.first.y, c.first.y) << "column " << col;
    EXPECT_EQ(k.last.x, c.last.x) << "column " << col;
    EXPECT_EQ(k.last.y, c.last.y) << "column " << col;
    EXPECT_EQ(k.lo, c.lo) << "column " << col;
    EXPECT_EQ(k.hi, c.hi) << "column " << col;
    EXPECT_LE(k.count, 4);
  }
  for (std::size_t i = 1; i < out.size(); ++i) EXPECT_LE(out[i - 1].x, out[i].x) << "order along the curve";
  bool spike = false;
  for (const ImVec2& p : out) spike = spike || p.y == -200.0f;
  EXPECT_TRUE(spike);
}

// The lowest point after the highest in a column: they keep the curve's order.
TEST(CurveColumns, LowAndHighKeepTheCurvesOrder) {
  const std::vector<ImVec2> pts = {{5.0f, 3.0f}, {5.1f, 9.0f}, {5.2f, 4.0f}, {5.3f, 0.0f}, {5.4f, 2.0f}, {5.5f, 2.5f}};
  const auto out = m4Columns(pts);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].y, 3.0f);
  EXPECT_EQ(out[1].y, 9.0f);
  EXPECT_EQ(out[2].y, 0.0f);
  EXPECT_EQ(out[3].y, 2.5f);
}

}  // namespace
}  // namespace mhascope::app
