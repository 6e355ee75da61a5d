// A training run's pictures beyond a single step, from plain run data so the Train mode and
// `mhascope train` make the same ones:
//   runContactSheet      — chosen heads × chosen steps as small attention maps;
//   runCurves            — the curves figure (probe loss, accuracy, each head's previous-token score at
//                          first occurrences and prefix-matching score, the role threshold dotted);
//   trainingTimelinePage — one offline page (export/html_view.hpp) of the run: a slider over the
//                          evaluations whose attention was kept, every head's attention on the probe
//                          sequence at that step with its role then, and the curves with the step marked.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "export/html_view.hpp"
#include "export/training_figures.hpp"
#include "train/probes.hpp"

namespace mhascope {

// `headRgb(layer, head)`: each head's line colour (0xRRGGBB). markStep -1: no step marked.
CurvesFigure runCurves(const std::vector<train::Evaluation>& history, int layers, int heads, const std::string& title,
                       bool logY, std::int64_t markStep, const std::function<std::uint32_t(int, int)>& headRgb);

// The contact sheet: `heads` (layer, head) as rows × `steps` (each a kept picture's) as columns.
// Errors: no head, a step without a kept picture.
Result<ContactSheet> runContactSheet(const std::vector<const train::Snapshot*>& snapshots,
                                     const std::vector<std::int64_t>& steps,
                                     const std::vector<std::pair<int, int>>& heads,
                                     const std::vector<std::string>& tokens, int layers, int heads_, const std::string& title);

// A head's line colour in the curves (core/color's headLineColor of index layer · h + head), 0xRRGGBB.
std::uint32_t headRgb(int layer, int head, int heads);

// `snapshots`: the kept attention pictures (any order; each layers × heads × T × T on the probe
// sequence), `tokens` the probe sequence's T labels. An error when no picture was kept.
Result<HtmlExport> trainingTimelinePage(const std::vector<train::Evaluation>& history,
                                        const std::vector<const train::Snapshot*>& snapshots,
                                        const std::vector<std::string>& tokens, int layers, int heads,
                                        const std::string& title);

}  // namespace mhascope
