#include "state/lesson_view.hpp"

#include <algorithm>

#include "attention/engine.hpp"

namespace mhascope::app {

void keepLessonChoicesInRange(LessonView& view, const Trace& t, int batch) {
  LessonChoices& c = view.c;
  c.batch = std::clamp(batch, 0, std::max(0, t.batch - 1));
  c.mixToken = std::clamp(c.mixToken, 0, std::max(0, t.tq - 1));
  c.mixDim = std::clamp(c.mixDim, 0, std::max(0, t.dModel - 1));
  c.editHead = std::clamp(c.editHead, 0, std::max(0, t.heads - 1));
  c.editQuery = std::clamp(c.editQuery, 0, std::max(0, t.tq - 1));
  c.editKey = std::clamp(c.editKey, 0, std::max(0, t.tk - 1));
  if (c.maskKind == 1) c.padKeys = std::clamp(c.padKeys, 0, t.tk);
  c.sweepVariable = std::clamp(c.sweepVariable, 0, 2);
  const int maxTo = static_cast<SweepVariable>(c.sweepVariable) == SweepVariable::Heads ? std::max(1, t.dModel) : 4096;
  int& to = view.sweepTo[c.sweepVariable];
  to = std::clamp(to, 2, std::max(2, maxTo));
  c.sweepTo = to;
  c.cellHead = std::clamp(c.cellHead, 0, std::max(0, t.heads - 1));
  c.cellQuery = std::clamp(c.cellQuery, 0, std::max(0, t.tq - 1));
  c.cellKey = std::clamp(c.cellKey, 0, std::max(0, t.tk - 1));
}

double recordedTraceBytes(const Trace& t) { return estimateTraceBytes(t.batch, t.tq, t.tk, t.dModel, t.heads); }

}  // namespace mhascope::app
