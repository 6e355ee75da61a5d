// Roles — the score-cell editor behind the specialist heads (hand-set scores in the config).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>


#include "lessons/common.hpp"
#include "lessons/roles.hpp"
#include "util/decompositions.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

void setScoreCell(ModelConfig& cfg, int head, int query, int key, float score) {
  for (ScoreCell& c : cfg.scoreOverride.cells) {
    if (c.queryToken.empty() && c.keyToken.empty() && c.head == head && c.query == query && c.key == key) {
      c.score = score;
      return;
    }
  }
  ScoreCell c;
  c.head = head;
  c.query = query;
  c.key = key;
  c.score = score;
  cfg.scoreOverride.cells.push_back(c);  // listed last: it wins over a cell named by token text
}

void clearScoreCell(ModelConfig& cfg, int head, int query, int key) {
  auto& cells = cfg.scoreOverride.cells;
  cells.erase(std::remove_if(cells.begin(), cells.end(),
                             [&](const ScoreCell& c) {
                               return c.queryToken.empty() && c.keyToken.empty() && c.head == head &&
                                      c.query == query && c.key == key;
                             }),
              cells.end());
}

int scoreTableRank(const Trace& trace, int batchIndex, int head) {
  auto s = sliceStage(trace, StageId::Scores, batchIndex, head);
  if (!s) return -1;
  Eigen::MatrixXd m(s->rows, s->cols);  // (T_q, T_k) raw scores, in double for the SVD
  for (int r = 0; r < s->rows; ++r)
    for (int c = 0; c < s->cols; ++c) {
      const float v = s->at(r, c);
      if (!std::isfinite(v)) return -1;  // an overflowed table has no meaningful rank
      m(r, c) = v;
    }
  const Eigen::VectorXd sv = singularValues(m);
  if (sv.size() == 0 || sv(0) == 0.0) return 0;
  int rank = 0;
  for (Eigen::Index i = 0; i < sv.size(); ++i) rank += sv(i) > 1e-4 * sv(0) ? 1 : 0;  // float scores: ~1e-7 noise
  return rank;
}

const char* trainedHeadRolesText() {
  return "Roles found in trained models: previous-token heads (each token looks at the one before it), "
         "duplicate-token heads (a token looks at earlier copies of itself) and induction heads (a token looks at "
         "what followed an earlier copy of itself, and copies it). An induction head needs two layers: its keys "
         "read what a previous-token head wrote into the residual stream (K-composition, the route the Train "
         "mode's runs take); a later head's queries can read an earlier head's output too (Q-composition), and "
         "its values (V-composition). Roles are often redundant: two heads doing one job, so switching one off "
         "changes little and switching both off a lot. A head that puts most of its weight on the first token "
         "is, in small runs like the Train mode's, usually a shortcut (a default while nothing better is "
         "visible); in language models it is often an attention sink: the softmax must put its weight "
         "somewhere, and the first token is where heads park it when they have nothing to read.";
}

std::string scoreRankText(const Trace& trace, int batchIndex) {
  if (trace.tq > kRankMaxTokens || trace.tk > kRankMaxTokens) {
    return "Score-table ranks are worked out for tables up to " + std::to_string(kRankMaxTokens) + " x " +
           std::to_string(kRankMaxTokens) + " (one SVD per head); this one is " + std::to_string(trace.tq) + " x " +
           std::to_string(trace.tk) + ". Whatever its size, a real head's table has rank at most d_k = " +
           std::to_string(trace.dk) + ".";
  }
  std::string ranks;
  std::vector<int> over;
  const int shown = std::min(trace.heads, 6);  // the lesson draws at most six heads
  for (int h = 0; h < shown; ++h) {
    const int r = scoreTableRank(trace, batchIndex, h);
    if (r < 0) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::string("head ") + std::to_string(h) + ": " + std::to_string(r);
    if (r > trace.dk) over.push_back(h);
  }
  if (ranks.empty()) return "";
  const std::string DK = std::to_string(trace.dk);
  std::string s = "Raw score-table ranks here: " + ranks + " (d_k = " + DK + "). A real head's scores are "
                  "q . k = x_q W_q^(i) (x_k W_k^(i))^T, a bilinear form of rank at most d_k, so it must find a few "
                  "low-rank features (d_k directions of d_model) whose products draw its pattern.";
  if (!over.empty()) {
    std::string heads;
    for (std::size_t i = 0; i < over.size(); ++i) heads += (i ? ", " : "") + std::to_string(over[i]);
    s += " The hand-set table" + std::string(over.size() > 1 ? "s of heads " : " of head ") + heads +
         " exceed" + (over.size() > 1 ? "" : "s") + " rank " + DK + ": no real head with d_k = " + DK +
         " could make " + (over.size() > 1 ? "them" : "it") + " exactly.";
  }
  return s;
}

}  // namespace mhascope
