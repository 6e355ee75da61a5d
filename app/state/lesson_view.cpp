#include "state/lesson_view.hpp"

#include "attention/engine.hpp"

namespace mhascope::app {

double recordedTraceBytes(const Trace& t) {
  return estimateTraceBytes(t.batch, t.tq, t.tk, t.dModel, t.heads, t.heads * t.dk != t.dModel ? t.dk : 0);
}

}  // namespace mhascope::app
