// Lesson "Cell" — one score cell taken apart (q . k, scaled, masked) and its row's softmax
// written out.
#pragma once

#include <algorithm>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

struct CellBreakdown {
  int batchIndex = 0, head = 0, query = 0, key = 0;
  std::vector<float> q, k;        // (d_k) q_heads[b, h, q, :] and k_heads[b, h, k, :]
  std::vector<double> products;   // (d_k) q_i * k_i
  double dot = 0;                 // sum of the products
  float recordedScore = 0;        // scores[b, h, q, k]
  bool handSet = false;           // recorded score differs from q . k: set by hand (score override)
  float scaleFactor = 1;          // the trace's factor, e.g. 1 / sqrt(d_k)
  double scaled = 0;              // recordedScore * scaleFactor
  float recordedScaled = 0;       // scaled_scores[b, h, q, k]
  bool blocked = false;           // the mask blocks this cell
  // The whole row (query q over all T_k keys), max-subtracted softmax written out:
  std::vector<float> rowLogits;   // masked scores (-inf where blocked)
  double rowMax = 0;
  std::vector<double> rowExp;     // exp(logit - max)
  double rowExpSum = 0;
  std::vector<double> rowSoftmax;  // rowExp / rowExpSum (0 for a fully masked row)
  std::vector<float> rowRecorded;  // weights[b, h, q, :]
  double rowMaxAbsDiff = 0;        // |rowSoftmax - rowRecorded|
};
Result<CellBreakdown> cellBreakdown(const Trace& trace, int batchIndex, int head, int query, int key);
// The cell lesson's opening: a dot product, scaled (what the scaling keeps, and under which
// assumption), then compared with its row by the softmax.
const char* cellLessonIntro();

namespace lessons {

struct Cell {
  static constexpr const char* kId = "cell";
  static constexpr const char* kTitle = "Cell";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "How one attention weight is made: q · k, scaled by √d_k, masked, then its row's softmax";
  static constexpr LessonCost kCost = LessonCost::Quick;
  struct Choices {
    int head = 0, query = 0, key = 0;  // the cell taken apart
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("cell_head", c.head);
      f("cell_query", c.query);
      f("cell_key", c.key);
    }
    void keepInRange(const Trace& t) { keepCellInRange(t, head, query, key); }
    bool operator==(const Choices&) const = default;
  };
  using Result = CellBreakdown;
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices& c) {
    return cellBreakdown(in.trace, in.batch, c.head, c.query, c.key);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
