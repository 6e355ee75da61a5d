// The Train mode's exported pictures, built from the session's view: the contact sheet (chosen
// heads × chosen steps) and the curves (loss, accuracy, role scores) for core/export's
// training_figures, plus the series the window's own charts draw — one source for both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "export/html_view.hpp"
#include "export/training_figures.hpp"
#include "model_source/training_page.hpp"  // headRgb
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

// The steps of the contact sheet: lab.sheetSteps parsed ("0 200 400" — each snapped to the
// nearest evaluated step with an attention picture), or six evenly spaced such steps up to the latest.
Result<std::vector<std::int64_t>> sheetStepList(const TrainLab& lab);
Result<ContactSheet> buildContactSheet(const TrainLab& lab);
// The sheet of the chosen heads at these steps (each one with an attention picture).
Result<ContactSheet> buildContactSheet(const TrainLab& lab, const std::vector<std::int64_t>& steps);
// Every kept attention picture's step (at most kDefaultAnimationFrames, evenly spaced, the first
// and the latest kept) as frames, beside the curves.
Result<TrainingAnimation> buildAnimation(const TrainLab& lab);
// Loss (log-y when lab.logY), accuracy, previous-token (at first occurrences) and prefix-matching
// scores of every head, the chosen step marked.
CurvesFigure buildCurves(const TrainLab& lab);
// "induction · 2 layers × 2 heads · seed 1 · probe batch": the curves' and the timeline's title.
std::string runTitle(const train::SessionView& v);
// "induction · 2 layers × 2 heads · attention on the probe sequence": the contact sheet's title.
std::string sheetTitle(const train::SessionView& v);
// The run's timeline page (model_source/training_page.hpp): every kept picture of attention, the curves.
Result<HtmlExport> buildTimelinePage(const TrainLab& lab);
// The note under the probe grids: which tokens the axes name. A heatmap of T x T cells drawn in
// (plotH, plotW) pixels labels every k-th row and column, k = ceil(line height / cell size) (the
// rule of widgets/heatmap_view): "every token labelled", "every 3rd token labelled", …
std::string tokenLabelNote(int T, float plotH, float plotW, float lineHeight);

std::string headTitle(int layer, int head);  // "layer 0 head 1" (analysis::headName)

}  // namespace mhascope::app
