// Every lesson result for one configuration and the user's choices (see lesson_results.hpp).
#include "lessons/lesson_results.hpp"

namespace mhascope {

QuickLessons computeQuickLessons(const Trace& trace, const MhaWeights& weights, const LessonChoices& c) {
  QuickLessons out;
  out.params.assign(parameterTable(trace.dModel, trace.heads));
  out.mix.assign(mixThenSplit(trace, weights, c.batch, c.mixToken, c.mixDim));
  out.editCell.assign(cellBreakdown(trace, c.batch, c.editHead, c.editQuery, c.editKey));
  out.costSizes = costSizesOf(trace);
  out.costNow = costAt(out.costSizes);
  out.sweep.assign(costSweep(out.costSizes, static_cast<SweepVariable>(c.sweepVariable), 1, c.sweepTo, kCostSweepPoints));
  out.cell.assign(cellBreakdown(trace, c.batch, c.cellHead, c.cellQuery, c.cellKey));
  return out;
}

int recomputingVariant(RecomputingLesson lesson, const LessonChoices& c) {
  switch (lesson) {
    case RecomputingLesson::Split: return 0;
    case RecomputingLesson::Masks: return c.maskKind * 100000 + c.padKeys;
    case RecomputingLesson::Pitfall: return c.pitfallIndex;
  }
  return 0;
}

void computeRecomputingLesson(const Model& model, RecomputingLesson lesson, const LessonChoices& c,
                              RecomputedLessons& out) {
  switch (lesson) {
    case RecomputingLesson::Split:
      out.split.assign(perHeadLoopVsVectorized(model));
      break;
    case RecomputingLesson::Masks:
      out.masks.assign(maskComparison(model, c.maskKind == 0 ? MaskLesson::Causal : MaskLesson::KeyPadding, c.padKeys));
      break;
    case RecomputingLesson::Pitfall:
      out.pitfall.assign(runPitfall(model, static_cast<Pitfall>(c.pitfallIndex)));
      break;
  }
}

}  // namespace mhascope
