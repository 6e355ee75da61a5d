// Lesson "Roles" — the roles heads take: hand-set score cells (the "specialists" preset holds
// some) and an editor for any head's cell; everything downstream recomputes through the normal
// config → trace path. Its result is the edited cell taken apart (cell.hpp).
#pragma once

#include <algorithm>
#include <string>

#include "attention/model.hpp"
#include "lessons/cell.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// Sets (or replaces) the hand-set raw score of cell (head, query position, key position).
void setScoreCell(ModelConfig& cfg, int head, int query, int key, float score);
// Removes the hand-set cell at these positions, if one names them by position.
void clearScoreCell(ModelConfig& cfg, int head, int query, int key);

// The numerical rank of head `head`'s raw score table (T_q, T_k) of batch item b: singular values
// above 1e-4 of the largest. A q . k table has rank <= d_k; hand-set cells can exceed it.
int scoreTableRank(const Trace& trace, int batchIndex, int head);
// The roles lesson's note: each shown head's score-table rank against d_k, and why a real
// head (a bilinear form of rank <= d_k) cannot draw a table of higher rank. One SVD per head:
// tables longer than kRankMaxTokens on a side are not taken apart (the note says so).
constexpr int kRankMaxTokens = 256;
std::string scoreRankText(const Trace& trace, int batchIndex);
// Roles trained heads are found to take, for the roles lesson: previous-token, duplicate-token
// and induction heads, the ways two layers compose (K-, Q-, V-composition), redundancy, and what a
// head that looks at the first token is (a shortcut in small runs; an attention sink in language models).
const char* trainedHeadRolesText();

namespace lessons {

struct Roles {
  static constexpr const char* kId = "roles";
  static constexpr const char* kTitle = "Roles";
  static constexpr LessonGroup kGroup = LessonGroup::Basics;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "The roles heads take (previous-token, induction, sink), set by hand in the score table";
  static constexpr LessonCost kCost = LessonCost::Quick;
  struct Choices {
    int head = 0, query = 0, key = 0;  // the score editor's cell
    float score = 16.0f;               // the raw score "Set cell" writes
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("edit_head", c.head);
      f("edit_query", c.query);
      f("edit_key", c.key);
      f("edit_score", c.score);
    }
    void keepInRange(const Trace& t) { keepCellInRange(t, head, query, key); }
    bool operator==(const Choices&) const = default;
  };
  struct Result {
    CellBreakdown cell;    // the editor's cell as it is now
    std::string rankNote;  // scoreRankText: SVDs, so made once per trace and choice, never per frame
  };
  static mhascope::Result<Result> compute(const LessonInput& in, const Choices& c) {
    auto cell = cellBreakdown(in.trace, in.batch, c.head, c.query, c.key);
    if (!cell) return cell.error();
    return Result{std::move(cell).value(), scoreRankText(in.trace, in.batch)};
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
