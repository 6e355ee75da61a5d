// The Train mode's panels (each only draws from TrainLab, which updateTrainLab filled) and the
// mode switch that puts the Train mode beside the pipeline view.
//   left column:  setup, run controls, roles table (+ ablation and contact-sheet choices), lesson,
//                 keep it (checkpoints, exports, Open in pipeline)
//   right column: curves, role-score timelines, timeline scrubber, attention grid
// Probes for input scripts: mode_pipeline, mode_train, train_play, train_pause, train_step,
// train_reset, train_scrubber, train_off_L{l}_h{i}, train_open_pipeline, train_export_sheet,
// train_export_curves, train_save, train_load, train_logy; labels train_state, train_step_label,
// train_circuit ("formed at step N" / "not formed"), train_probe_loss, train_message.
#pragma once

#include "state/practice_state.hpp"
#include "train_lab/lab_state.hpp"
#include "state/ui_context.hpp"

namespace mhascope::app {

// The switch "Pipeline | Train" at the top of the window. In Train mode it also draws the whole
// Train mode and returns true (the caller then skips the pipeline layout).
bool drawModeSwitch(TrainLab& lab, PracticeState& practice, UiContext& ctx);

void drawTrainSetup(TrainLab& lab, UiContext& ctx);
void drawTrainRun(TrainLab& lab, UiContext& ctx);
void drawTrainRoles(TrainLab& lab, UiContext& ctx);
void drawTrainKeep(TrainLab& lab, UiContext& ctx);
void drawTrainCurves(TrainLab& lab, UiContext& ctx);
void drawTrainScrubber(TrainLab& lab, UiContext& ctx);
void drawTrainGrid(TrainLab& lab, UiContext& ctx);

}  // namespace mhascope::app
