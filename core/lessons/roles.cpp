// Roles — the score-cell editor behind the specialist heads (hand-set scores in the config).
#include <algorithm>
#include <cmath>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/lessons.hpp"

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

}  // namespace mhascope
