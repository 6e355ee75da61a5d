// The Train mode's update step and actions (everything that computes; the panels only draw).
#include "train_lab/lab_state.hpp"

#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <sstream>

#include "state/app_state.hpp"
#include "state/open_file.hpp"
#include "attention/engine.hpp"
#include "model_source/model_source.hpp"  // checkpointLayerConfig: the CLI's --checkpoint --layer config
#include "export/training_figures.hpp"
#include "panels/panel.hpp"  // kHeatmapTab
#include "shell/frame_pacing.hpp"  // yieldingTickSeconds, FrameWork
#include "train/layer_model.hpp"
#include "train_lab/lab_figures.hpp"

namespace mhascope::app {

using namespace mhascope::train;

TrainSettings settingsFromForm(const TrainForm& f) {
  TrainSettings s;
  s.task.kind = static_cast<TaskKind>(std::clamp(f.task, 0, 3));
  s.task.vocab = f.vocab;
  s.task.seq = f.seq;
  s.task.periodMin = f.periodMin;
  s.task.periodMax = f.periodMax;
  s.task.textPath = f.textPath;
  s.model.layers = f.layers;
  s.model.heads = f.heads;
  s.model.dModel = f.dModel;
  s.model.mlp = f.mlp;
  s.batch = f.batch;
  s.steps = f.steps;
  s.adam.lr = f.lr;
  s.adam.weightDecay = f.weightDecay;
  s.seed = static_cast<std::uint64_t>(std::max(0, f.seed));
  return s;
}

std::string checkForm(const TrainForm& f) {
  std::string out;
  auto add = [&](const std::string& m) { out += (out.empty() ? "" : "\n") + m; };
  if (f.task == static_cast<int>(TaskKind::Text) && f.textPath.empty()) add("the text task needs a UTF-8 text file: type its path");
  if (f.steps < 1) add("steps must be at least 1, got " + std::to_string(f.steps));
  if (f.evalEvery < 1) add("evaluate every N steps needs N >= 1, got " + std::to_string(f.evalEvery));
  if (!(f.lr > 0)) add("the learning rate must be > 0");
  if (!out.empty()) return out;
  try {
    const TrainSettings s = settingsFromForm(f);
    // The trainer's own checks, every problem in one message. Trainer::make also initialises the
    // parameters, so past a few million of them (a stall on every keystroke) only the task and
    // the sizes are checked here; Train / Reset then runs every check.
    const double d = f.dModel, params = f.layers * (4 * d * d + (f.mlp ? 8 * d * d : 0)) + 2.0 * f.vocab * d + f.seq * d;
    if (params > 4e6) {
      auto task = Task::make(s.task);
      if (!task) return task.error().message;
      GptConfig g = s.model;
      g.vocab = task->vocab();
      g.seqLen = s.task.seq;
      auto v = validateConfig(g);
      return v ? std::string() : v.error().message;
    }
    auto made = Trainer::make(s);
    return made ? std::string() : made.error().message;
  } catch (const std::exception& e) {
    return std::string("cannot check these settings: ") + e.what();
  }
}

std::shared_ptr<const GptParams> paramsAt(const SessionView& v, std::int64_t step) {
  std::shared_ptr<const GptParams> best;
  for (const auto& p : v.params) {
    if (p.step <= step) best = p.params;
  }
  return best ? best : (v.params.empty() ? nullptr : v.params.front().params);
}

namespace {

const Snapshot* snapshotAt(const SessionView& v, std::int64_t step) {
  for (const auto& s : v.snapshots) {
    if (s->step == step) return s.get();
  }
  return nullptr;
}

std::string maskKey(const HeadMask& m, std::int64_t step) {
  std::string k = std::to_string(step) + ":";
  for (bool b : m.off) k += b ? '1' : '0';
  return k;
}

void say(TrainLab& lab, const std::string& text, bool error) {
  lab.message = text;
  lab.messageIsError = error;
}

}  // namespace

float TrainLab::frameP95() const {
  if (runningFrameMs.empty()) return 0;
  std::vector<float> t = runningFrameMs;
  std::sort(t.begin(), t.end());
  return t[std::min(t.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(t.size())))];
}

void TrainLab::frameEnded(double now) {
  releaseFrameHold();
  const double work = now - frameStart;
  FrameWork smoothed{workSeconds};
  smoothed.add(work);
  workSeconds = smoothed.seconds;
  if (!active || !running()) return;
  const float ms = static_cast<float>(work * 1000.0);
  if (runningFrameMs.size() < 600) {
    runningFrameMs.push_back(ms);
  } else {
    runningFrameMs[frameCursor++ % 600] = ms;
  }
}


namespace {
// The run's speed once it finishes (what the README reports), from the session's own clock: the
// steps trained since Train over the time spent inside them (the definition `mhascope train`
// prints, so the two compare like with like), and the wall time from Train to the last step.
void measure(TrainLab& lab) {
  const SessionView& v = *lab.view;
  if (v.state == RunState::Finished && lab.playedAt >= 0) {
    const double steps = static_cast<double>(v.runSteps);
    lab.runStepsPerSecond = v.runStepSeconds > 0 ? steps / v.runStepSeconds : 0.0;
    lab.runWallStepsPerSecond = v.runWallSeconds > 0 ? steps / v.runWallSeconds : 0.0;
    std::printf("mhascope: training finished at step %lld: %.1f steps/s (%lld steps in %.2f s inside the steps, as "
                "`mhascope train` counts); %.1f steps/s wall from Train to the last step (%.2f s, evaluations "
                "included); window frame work p95 %.1f ms over %zu frames while training\n",
                static_cast<long long>(v.step), lab.runStepsPerSecond, static_cast<long long>(v.runSteps),
                v.runStepSeconds, lab.runWallStepsPerSecond, v.runWallSeconds, static_cast<double>(lab.frameP95()),
                lab.runningFrameMs.size());
    std::fflush(stdout);
    lab.playedAt = -1;
  } else if (v.state != RunState::Finished && v.state != RunState::Running) {
    lab.playedAt = -1;  // paused or failed: the mean would include the pause
  }
}
}  // namespace

void updateTrainLab(TrainLab& lab) {
  lab.view = lab.session.view();
  if (!lab.view || lab.view->history.empty()) {
    lab.shown = {};
    return;
  }
  measure(lab);
  const SessionView& v = *lab.view;
  const int last = static_cast<int>(v.history.size()) - 1;
  if (lab.followLatest) lab.chosenIndex = last;
  lab.chosenIndex = std::clamp(lab.chosenIndex, 0, last);
  const Evaluation& e = v.history[static_cast<std::size_t>(lab.chosenIndex)];
  if (lab.ablation.layers != e.layers || lab.ablation.heads != e.heads) {
    lab.ablation = HeadMask::none(v.settings->model);
    lab.sheetHeads.assign(static_cast<std::size_t>(e.layers * e.heads), true);
  }
  ShownStep shown;
  shown.index = static_cast<std::size_t>(lab.chosenIndex);
  shown.step = e.step;
  shown.evaluation = &e;
  shown.snapshot = snapshotAt(v, e.step);
  if (lab.ablation.any()) {
    const std::string key = maskKey(lab.ablation, e.step);
    if (key != lab.ablationKey) {
      lab.ablationKey = key;
      lab.ablated.reset();
      if (auto p = paramsAt(v, e.step)) {
        auto off = ablateHeads(*p, lab.ablation);
        if (off) {
          auto r = evaluateOnProbe(*off, *v.probe, e.step, lab.cache);
          if (r) lab.ablated = std::move(*r);
          else say(lab, r.error().message, true);
        }
      }
    }
    if (lab.ablated) {
      shown.evaluation = &lab.ablated->evaluation;
      shown.snapshot = &lab.ablated->snapshot;
    }
  } else {
    lab.ablationKey.clear();
    lab.ablated.reset();
  }
  if (shown.snapshot != lab.lastSnapshot) {
    lab.lastSnapshot = shown.snapshot;
    ++lab.serialCounter;
  }
  shown.pictureSerial = (std::uint64_t{1} << 62) | lab.serialCounter;  // never an AppState::traceSerial
  lab.shown = shown;
}

void trainReset(TrainLab& lab) {
  lab.formError = checkForm(lab.form);
  if (!lab.formError.empty()) return;
  lab.holdForThisFrame();
  try {
    if (auto st = lab.session.reset(settingsFromForm(lab.form), lab.form.evalEvery); !st) {
      lab.formError = st.error().message;
      return;
    }
  } catch (const std::exception& e) {
    lab.formError = std::string("cannot start: ") + e.what();
    return;
  }
  lab.followLatest = true;
  lab.ablation = {};
  lab.ablated.reset();
  lab.ablationKey.clear();
  say(lab, "", false);
}

void trainPlay(TrainLab& lab) {
  lab.holdForThisFrame();
  if (!lab.session.started()) trainReset(lab);
  if (!lab.session.started()) return;
  lab.followLatest = true;
  if (auto v = lab.session.view()) {
    lab.playedAt = ImGui::GetTime();
    lab.playedStep = v->step;
    lab.runningFrameMs.clear();
    lab.frameCursor = 0;
  }
  lab.session.play();
}

void trainSaveCheckpoint(TrainLab& lab) {
  if (lab.checkpointPath.empty()) return say(lab, "type a path for the checkpoint (.safetensors)", true);
  auto c = lab.session.checkpoint();
  if (!c) return say(lab, "nothing to save yet: press Train or Reset first", true);
  if (auto st = saveCheckpoint(lab.checkpointPath, *c); !st) return say(lab, st.error().message, true);
  say(lab, "Saved step " + std::to_string(c->step) + " to " + lab.checkpointPath, false);
}

void trainLoadCheckpoint(TrainLab& lab) {
  if (lab.checkpointPath.empty()) return say(lab, "type the path of a checkpoint (.safetensors)", true);
  try {
    auto c = loadCheckpoint(lab.checkpointPath);
    if (!c) return say(lab, c.error().message, true);
    TrainForm f = lab.form;
    const GptConfig& g = c->params.cfg;
    f.task = static_cast<int>(c->task.kind);
    f.layers = g.layers;
    f.heads = g.heads;
    f.dModel = g.dModel;
    f.mlp = g.mlp;
    f.vocab = c->task.vocab;
    f.seq = c->task.seq;
    f.periodMin = c->task.periodMin;
    f.periodMax = c->task.periodMax;
    f.seed = static_cast<int>(c->seed);
    f.steps = static_cast<int>(std::max<std::int64_t>(f.steps, c->step));
    if (auto st = lab.session.reset(settingsFromForm(f), f.evalEvery, *c); !st) return say(lab, st.error().message, true);
    lab.form = f;
    lab.formError.clear();
    lab.followLatest = true;
    lab.ablation = {};
    say(lab, "Loaded " + lab.checkpointPath + " (step " + std::to_string(c->step) + "); Train continues from it", false);
  } catch (const std::exception& e) {
    say(lab, std::string("cannot load: ") + e.what(), true);
  }
}

void trainDropPath(TrainLab& lab, const std::string& path) {
  lab.active = true;
  std::string ext = path.size() >= 12 ? path.substr(path.size() - 12) : std::string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".safetensors") {
    return say(lab, "dropped '" + path + "': only checkpoints (.safetensors, from Save checkpoint or `mhascope train "
                    "--save`) can be dropped here", true);
  }
  lab.checkpointPath = path;
  trainLoadCheckpoint(lab);
}

void dropOnWindow(TrainLab& lab, AppState& state, ViewState& view, LessonView& lessons, const std::string& path) {
  if (lab.active) return trainDropPath(lab, path);
  if (!beginOpen(state, view, lessons, path)) state.actionError = "dropped file: " + view.openUi.message;
}

void trainExportSheet(TrainLab& lab) {
  if (!lab.view || lab.view->history.empty()) return say(lab, "nothing to export yet: press Train first", true);
  auto sheet = buildContactSheet(lab);
  if (!sheet) return say(lab, sheet.error().message, true);
  if (auto st = exportContactSheet(lab.sheetPath, *sheet); !st) return say(lab, st.error().message, true);
  say(lab, "Saved " + lab.sheetPath, false);
}

void trainExportCurves(TrainLab& lab) {
  if (!lab.view || lab.view->history.empty()) return say(lab, "nothing to export yet: press Train first", true);
  if (auto st = exportCurves(lab.curvesPath, buildCurves(lab)); !st) return say(lab, st.error().message, true);
  say(lab, "Saved " + lab.curvesPath, false);
}

void trainOpenInPipeline(TrainLab& lab, AppState& state, ViewState& view) {
  if (!lab.view || !lab.shown.evaluation) return say(lab, "nothing to open yet: press Train first", true);
  const SessionView& v = *lab.view;
  auto p = paramsAt(v, lab.shown.step);
  if (!p) return say(lab, "no parameters kept at this step", true);
  try {
    GptParams params = *p;
    if (lab.ablation.any()) {
      auto off = ablateHeads(params, lab.ablation);
      if (!off) return say(lab, off.error().message, true);
      params = std::move(*off);
    }
    Batch one;  // the probe sequence (batch item 0), as `--checkpoint --layer` uses by default
    one.batch = 1;
    one.seq = v.probe->seq;
    one.tokens.assign(v.probe->tokens.begin(), v.probe->tokens.begin() + one.seq);
    one.targets.assign(v.probe->targets.begin(), v.probe->targets.begin() + one.seq);
    std::vector<std::vector<std::string>> labels(1);
    for (int t : one.tokens) labels[0].push_back(v.task->symbol(t));
    auto model = trainedLayerModel(params, one, lab.openLayer, labels);
    if (!model) return say(lab, model.error().message, true);
    // The pipeline recomputes from this layer (AppState::trainedLayer) whatever changes later, so
    // its weights and subtitle stay until the layer is closed under "Files in use".
    auto layer = std::make_shared<SourcedModel>();
    layer->model = std::move(*model);
    layer->config = checkpointLayerConfig(params.cfg, one, labels);
    layer->config.name = "trained layer";
    layer->seedUsed = false;
    layer->describeNote = "; trained layer " + std::to_string(lab.openLayer) + " of " +
                          std::to_string(params.cfg.layers) + " (" + taskName(v.settings->task.kind) + ", step " +
                          std::to_string(lab.shown.step) + (lab.ablation.any() ? ", switched-off heads zeroed" : "") +
                          ", input LN1 of the residual stream)";
    state.beforeOpen = AppState::BeforeOpen{state.config, state.files, state.trainedLayer, state.presetName,
                                            "cannot open the trained layer"};
    state.config = layer->config;
    state.config.memoryBudgetBytes = state.beforeOpen->config.memoryBudgetBytes;
    state.files = {};
    state.trainedLayer = std::move(layer);
    state.configDirty = true;  // the scheduler computes it (on the UI thread: a trained layer is small)
    state.configError.clear();
    state.presetName = std::string(taskName(v.settings->task.kind)) + " layer " + std::to_string(lab.openLayer) +
                       " at step " + std::to_string(lab.shown.step);
    view.head = std::clamp(view.head, 0, params.cfg.heads - 1);
    view.batch = 0;
    view.stage = StageId::Weights;
    view.selectTab = kHeatmapTab;
    lab.active = false;
    say(lab, "Opened layer " + std::to_string(lab.openLayer) + " at step " + std::to_string(lab.shown.step) +
             " in the pipeline" + (lab.ablation.any() ? " (with the switched-off heads zeroed)" : ""), false);
  } catch (const std::exception& e) {
    say(lab, std::string("cannot open this layer: ") + e.what(), true);
  }
}

}  // namespace mhascope::app
