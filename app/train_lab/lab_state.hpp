// The Train mode's state: the setup form, the TrainingSession (a run on its own thread), what
// the user looks at (chosen step, ablated heads, log-y, paths) and what update() computed from
// the session's latest view for the panels to draw (panels only draw; update() runs first in
// every Train-mode frame and is the only place that evaluates anything).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "export/training_figures.hpp"
#include "shell/jobs.hpp"
#include "train/ablation.hpp"
#include "train/circuit.hpp"
#include "state/lesson_view.hpp"
#include "train/session.hpp"
#include "circuits/circuits_view.hpp"

namespace mhascope::app {

// The Train mode's id, as --view names it; the exploration test visits it as one more tab ("tab_train").
inline constexpr const char* kTrainModeId = "train";

struct AppState;
struct ViewState;

// The setup form: core/train's settings and defaults (TrainSettings, as `mhascope train` starts
// from), in the types its widgets edit (int steps and seed; the task as an index).
struct TrainForm {
  inline static const train::TrainSettings kDefaults{};
  int task = static_cast<int>(kDefaults.task.kind);  // index into TaskKind: induction, reverse, sort, text
  int layers = kDefaults.model.layers, heads = kDefaults.model.heads, dModel = kDefaults.model.dModel;
  int vocab = kDefaults.task.vocab, seq = kDefaults.task.seq, batch = kDefaults.batch;
  bool mlp = kDefaults.model.mlp;
  // The attention variant: positions index into TrainPositions (learned, rope, alibi); N K/V heads
  // (0: N = h, multi-head attention). Workspaces keep them only when not the plain model's.
  int positions = static_cast<int>(kDefaults.model.positions);
  float ropeBase = kDefaults.model.ropeBase;
  int kvHeads = kDefaults.model.kvHeads;
  int steps = static_cast<int>(kDefaults.steps);
  float lr = kDefaults.adam.lr, weightDecay = kDefaults.adam.weightDecay;
  std::uint64_t seed = kDefaults.seed;  // every seed `mhascope train` takes, 0 .. 2^64 - 1
  int evalEvery = train::kDefaultEvalEvery;
  int periodMin = kDefaults.task.periodMin, periodMax = kDefaults.task.periodMax;
  std::string textPath;
  friend bool operator==(const TrainForm&, const TrainForm&) = default;
};
train::TrainSettings settingsFromForm(const TrainForm& f);
// Every problem with the form in one message (empty when it can run): the trainer's own checks.
// Cheap enough for every keystroke: the text task's file is only looked at (it exists, is a
// regular file and its size fits), never read — reading and decoding a large text takes tens of
// seconds, which Train / Reset spend on a worker thread. With a budget (the window's), the run's
// memory estimate too (checkRunMemory).
std::string checkForm(const TrainForm& f, std::uint64_t budgetBytes = 0);

// What a Load checkpoint or a Train / Reset hands back from its worker thread: reading and decoding
// a checkpoint, reading a text file and allocating the trainer never run on the UI thread.
struct LabJobResult {
  std::string error;               // empty: the session now runs the new settings
  std::optional<TrainForm> form;   // Load: the form the checkpoint implies
  std::int64_t step = 0;           // the step the new run starts at (0, or the checkpoint's)
  bool historySaved = true;        // the evaluations before `step` came with the checkpoint
  std::string note;                // Load: what was changed to make it fit ("" = nothing)
};
struct LabJob {
  enum class Kind { Start, Load } kind = Kind::Start;
  bool playAfter = false;          // Train: play once the run exists
  int stepAfter = 0;               // Step: this many steps once the run exists
  std::string status;              // what the run line says meanwhile ("loading …")
  std::string doneMessage;         // said when it succeeds ("" = nothing)
  TrainForm form;                  // Start: the form the run is made from
};

// The pictures of one step: the evaluation and snapshot the panels show (ablated or not).
struct ShownStep {
  std::size_t index = 0;             // into view->history
  std::int64_t step = 0;
  const train::Evaluation* evaluation = nullptr;  // points into `view` or `ablated`
  const train::Snapshot* snapshot = nullptr;
  std::uint64_t pictureSerial = 0;   // changes whenever the snapshot shown changes (texture key)
};

// The setup form and what is wrong with it.
struct TrainSetup {
  TrainForm form;
  std::string formError;               // why Train / Reset cannot start (shown under the form)
  // The window's memory budget (Document::memoryBudgetBytes, the pipeline's control): a run whose
  // estimate exceeds it is refused before anything is allocated. 0: no limit known.
  std::uint64_t memoryBudgetBytes = 0;
};

// The run on screen: the session training it, its latest view, a job that may replace it, and
// which of its evaluations the panels show.
struct TrainRun {
  train::TrainingSession session;
  std::shared_ptr<const train::SessionView> view;  // taken once per frame
  // A Load checkpoint or Train / Reset on the worker (declared after `session`, so it is
  // destroyed, and waited for, first). The previous run stays on screen until it succeeds.
  std::optional<LabJob> job;
  LatestJob<LabJobResult> worker;
  bool busy() const { return job.has_value(); }
  // The form the run was made from (Train with a different form starts a new run), the step it
  // started at, and whether what came before that step is known.
  std::optional<TrainForm> runForm;
  std::int64_t runStartStep = 0;
  bool historyMissing = false;  // loaded from a checkpoint that did not save its evaluations

  // Timeline: the chosen evaluation; follows the latest while `followLatest`.
  bool followLatest = true;
  int chosenIndex = 0;

  ShownStep shown;
  std::uint64_t serialCounter = 0;
  const void* lastSnapshot = nullptr;

  // The curves of the history (built by updateTrainLab, drawn every frame): rebuilt only when
  // what they show changed — another run, a new evaluation, the marked step, log-y.
  struct CurvesKey {
    const void* settings = nullptr;
    std::size_t evaluations = 0;
    std::int64_t lastStep = -1, markStep = -1;
    bool logY = false;
    bool operator==(const CurvesKey&) const = default;
  };
  std::shared_ptr<const CurvesFigure> curves;
  CurvesKey curvesKey;

  bool running() const { return view && view->state == train::RunState::Running; }
};

// An ablated evaluation from the ablation worker: the probe with the heads off, the lesson's words.
struct AblationOutcome {
  std::string key;                            // ablationMaskKey it was computed for
  std::optional<train::ProbeResult> ablated;  // null: `error` says why
  std::vector<std::string> text;
  std::string error;
};

// Take it apart: heads switched off at the chosen step (their output zeroed before W_o), or only
// cut from what later layers' keys / queries / values read (HeadMask::reads), and the probe
// evaluated with them.
struct TrainAblation {
  train::HeadMask mask;
  std::optional<train::ProbeResult> ablated;  // the probe with those heads off (at ablatedStep)
  std::int64_t ablatedStep = -1;
  std::string ablationKey;                    // what `ablated` was computed for
  // What the ablated run shows, in words (train::ablationLesson on the same parameters): the loss
  // against ln V, redundancy of heads switched off together, which later heads' prefix matching
  // moved under a read cut. Empty while nothing is switched off or cut.
  std::vector<std::string> ablationText;
  train::ForwardCache cache;                  // reused by every ablation evaluation (the worker's)
  LatestJob<AblationOutcome> worker;          // last: joined before the cache it uses goes

  // Bounds-checked: a button may reset the run (new sizes) halfway through a frame's drawing.
  bool headOff(int layer, int head) const {
    return layer < mask.layers && head < mask.heads && mask.isOff(layer, head);
  }
  void setHeadOff(int layer, int head, bool off) {
    if (layer < mask.layers && head < mask.heads) mask.set(layer, head, off);
  }
  // The read cuts of one head: bit train::kReadKey / kReadQuery / kReadValue set = that read cut.
  bool readCut(int layer, int head, std::uint8_t bit) const {
    return layer < mask.layers && head < mask.heads && (mask.readsCut(layer, head) & bit) != 0;
  }
  void setReadCut(int layer, int head, std::uint8_t bit, bool cut) {
    if (layer >= mask.layers || head >= mask.heads) return;
    const std::uint8_t r = mask.readsCut(layer, head);
    mask.setReads(layer, head, static_cast<std::uint8_t>(cut ? (r | bit) : (r & ~bit)));
  }
};

// Keep it: checkpoint and export paths.
struct TrainFiles {
  std::string checkpointPath;
  std::string sheetPath, curvesPath, animationPath;
  std::string timelinePath;  // the run as one offline page (never replaced)
  std::string sheetSteps;               // "0 200 400 800" or empty: six evenly spaced
  std::vector<bool> sheetHeads;         // layers * heads; empty: all
  std::string lastFolder;              // the export folder the default paths were made from
  // The default paths last proposed: a path still equal to its default follows the task and the
  // folder; one the user typed stays.
  std::string defaultCheckpoint, defaultSheet, defaultCurves, defaultAnimation, defaultTimeline;
};

// How the window keeps up while training (measured, shown in the run line): the frame work
// times (events handled to buffers swapped, without the wait before) of the last ≈600 frames
// drawn while running, and the run's mean steps/s from Train to the end.
struct TrainPacing {
  std::vector<float> runningFrameMs;
  std::vector<double> runningFrameAt;  // when those frames began (how often the window redraws)
  double frameStart = 0, workSeconds = 0.0;  // this frame's start; smoothed work per frame
  // While a run goes, a frame drawn at least kTrainFrameMinSeconds after the last held one holds
  // the training steps (TrainingSession::holdSteps) until its buffers are swapped, at most
  // kFrameHoldSeconds: with a software renderer (llvmpipe rasterises on one thread per core) the
  // training thread would take one of two cores from every frame. At most 4 holds of at most
  // 30 ms a second, so the run loses at most 12 % of its wall time and none of its time inside
  // the steps (docs/training.md, "Keeping up with training").
  static constexpr double kFrameHoldSeconds = 0.03;
  double heldAt = -1;                   // when the last frame held the steps
  bool holding = false;
  // While training, the wait between frames: 8 times the work of a frame, at least
  // kTrainFrameMinSeconds (at most 4 frames/s) and at most 1/2 s. Each tick draws only when the
  // session published something not shown yet (TrainLab::animating()); input wakes the loop at once.
  // With a software renderer every frame's CPU (the app, llvmpipe's threads and the X server) is
  // taken from the training thread, so fewer frames train faster; scripts/measure_train_window.sh
  // measures it (docs/training.md, "Keeping up with training").
  static constexpr double kTrainFrameMinSeconds = 0.25;
  double tickSeconds() const { return std::clamp(8.0 * workSeconds, kTrainFrameMinSeconds, 0.5); }
  std::size_t frameCursor = 0;
  double playedAt = -1;                 // ImGui time when Train was pressed (-1: not measuring)
  std::int64_t playedStep = 0;
  // Set when a run started by Train finishes (SessionView::runStepSeconds / runWallSeconds).
  double runStepsPerSecond = 0, runWallStepsPerSecond = 0;
  float frameP95() const;
  double redrawsPerSecond() const;  // frames drawn per second while training (0: not measured)
};

// The Train mode: its parts, which mode is shown, the view options and the last message.
struct TrainLab {
  bool active = false;                 // the window shows the Train mode
  TrainSetup setup;
  TrainRun run;
  TrainAblation ablation;
  TrainFiles files;
  TrainPacing pacing;
  CircuitsView circuits;               // the Train mode's Circuits panel: choices, caches, its worker
  bool logY = false;
  int openLayer = 0;                   // the layer "Open in pipeline" sends (< the run's layers)
  // Frames left for the Circuits panel to scroll into view (its pictures make the column long enough).
  static constexpr int kScrollToCircuitsFrames = 120;
  int scrollToCircuitsFrames = 0;
  std::string message;
  bool messageIsError = false;
  // Where the message is drawn: beside the control whose click made it, not below the fold.
  enum class Said { Run, Checkpoint, Export, Pipeline } messageAt = Said::Run;

  void holdStepsForFrame(double now) {
    if (!active || (pacing.heldAt >= 0 && now - pacing.heldAt < TrainPacing::kTrainFrameMinSeconds)) return;
    const auto latest = run.session.view();  // not `run.view`: the frame right after Train holds too
    if (latest && latest->state == train::RunState::Running) {
      holdForThisFrame();
      pacing.heldAt = now;
    }
  }
  // The frame whose click starts a run (Train, Reset): the new run's first
  // evaluation and steps wait for this frame's swap too, like any frame drawn while training.
  void holdForThisFrame() {
    run.session.holdSteps(TrainPacing::kFrameHoldSeconds);
    pacing.holding = true;
  }
  void releaseFrameHold() {
    if (pacing.holding) run.session.releaseSteps();
    pacing.holding = false;
  }
  void frameBegan(double now) {
    pacing.frameStart = now;
    holdStepsForFrame(now);
  }
  void frameEnded(double now);  // releases the hold
  double tickSeconds() const { return pacing.tickSeconds(); }
  // The window must keep drawing: a run is going, or the session published what is not shown yet.
  // Also while the Circuits panel's worker computes: its result is drawn within a tick, not at the
  // next input.
  bool animating() const {
    const auto latest = run.session.view();
    return (active && latest && (latest->state == train::RunState::Running || latest->evaluating || latest != run.view)) ||
           circuits.busy() || ablation.worker.busy();
  }
};

// Once per Train-mode frame, in the app's update step before any panel draws: takes the latest
// view, resolves the chosen step, and recomputes the ablated probe (and its lesson) when the chosen
// step, the switched-off heads or the read cuts changed — on the ablation worker, or here when
// `sync` (tests, screenshots: this frame's picture). Meanwhile the unablated step is shown.
void updateTrainLab(TrainLab& lab, bool sync = true);

// Actions (buttons). Each catches what it can throw and reports through lab.message / formError.
// Train, Reset and Load hand their work to a worker thread (lab.job); updateTrainLab applies the
// result on a later frame.
void trainReset(TrainLab& lab);  // a new run from the form, paused at step 0
// Plays the run on screen; starts a run first when none exists or when the form differs from the
// run's (a changed `steps` alone continues the same run up to it). A finished run says so.
void trainPlay(TrainLab& lab);
void trainStep(TrainLab& lab);   // one step (starts a paused run first when none exists)
void trainSaveCheckpoint(TrainLab& lab);
void trainLoadCheckpoint(TrainLab& lab);  // continues from it (sizes and task from the file)
// Waits for the job in flight (tests; the window polls it in updateTrainLab).
void finishTrainJob(TrainLab& lab);
// The memory a run of these settings needs against the budget, on the UI thread and without reading
// the text task's file: "" when it fits (or no budget is known), else the estimate and the budget.
std::string checkRunMemory(const train::TrainSettings& s, std::uint64_t budgetBytes);
// A file dropped on the window while the Train mode is shown (shell/window_drop.cpp routes the
// drops): a .safetensors checkpoint opens the Train mode and loads it; anything else is named in
// the Train mode's message.
void trainDropPath(TrainLab& lab, const std::string& path);
void trainExportSheet(TrainLab& lab, SeeAs seeAs = SeeAs::Normal);
void trainExportCurves(TrainLab& lab, SeeAs seeAs = SeeAs::Normal);
// The run as an animated GIF: the kept attention pictures (at most kDefaultAnimationFrames of
// them, evenly spaced) beside the curves, the step marked in each frame.
void trainExportAnimation(TrainLab& lab, SeeAs seeAs = SeeAs::Normal);
// The run as one offline page (lab.files.timelinePath, .html, never replacing a file): every kept
// picture of attention on a slider, each head's role then, the curves with the step marked.
void trainExportTimeline(TrainLab& lab);
// The chosen step's parameters (ablation applied) → the pipeline's trace: layer `lab.openLayer`'s
// MHA on its real input, exactly as `--checkpoint --layer` (cli/checkpoint_layer.cpp).
void trainOpenInPipeline(TrainLab& lab, AppState& state, ViewState& view);

// Core's messages name the command line's `--memory-budget`; the window's budget is the control
// under Sizes (the pipeline's).
std::string budgetInWindowWords(std::string message);

// A lesson paragraph about a run loaded from a checkpoint without its history, whose evaluations
// start at `firstStep`: "since step N" and "formed at step N" with N = firstStep would date what was
// only first seen there, so they say "by step N".
std::string withoutUnsavedHistory(std::string paragraph, std::int64_t firstStep);

// What the ablated probe was computed for: the step, the heads off and every head's read cuts (a
// change of any of them recomputes it).
std::string ablationMaskKey(const train::HeadMask& m, std::int64_t step);

// The parameters kept at the evaluation nearest at or before `step` (null when none: a step from a
// checkpoint's saved history, before the run kept any parameters).
std::shared_ptr<const train::GptParams> paramsAt(const train::SessionView& v, std::int64_t step);

}  // namespace mhascope::app
