// The Train mode's per-frame view update (the step shown, head ablation, snapshots) and its UI-thread actions; the worker-thread jobs are lab_jobs.cpp.
#include "train_lab/lab_state.hpp"


#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <new>
#include <sstream>
#include <system_error>

#include "render/texture_keys.hpp"
#include "state/app_state.hpp"
#include "state/open_file.hpp"
#include "attention/engine.hpp"
#include "model_source/model_source.hpp"  // checkpointLayerConfig: the CLI's --checkpoint --layer config
#include "export/html_view.hpp"
#include "export/training_figures.hpp"
#include "io/file_io.hpp"
#include "train_lab/lab_figures.hpp"
#include "panels/panel.hpp"  // kHeatmapTab
#include "shell/frame_pacing.hpp"  // yieldingTickSeconds, FrameWork
#include "train/layer_model.hpp"
#include "train/memory.hpp"
#include "train/outputs.hpp"
#include "train_lab/lab_figures.hpp"
#include "train_lab/lab_internal.hpp"

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
  s.model.positions = static_cast<TrainPositions>(std::clamp(f.positions, 0, 2));
  s.model.ropeBase = f.ropeBase;
  s.model.kvHeads = f.kvHeads;
  s.batch = f.batch;
  s.steps = f.steps;
  s.adam.lr = f.lr;
  s.adam.weightDecay = f.weightDecay;
  s.seed = f.seed;
  return s;
}

namespace {
// The text task's file, looked at without reading it: what can be told from its size.
std::string checkTextFile(const TrainForm& f) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(f.textPath, ec);
  if (ec || !fs::exists(st)) return "the text file '" + f.textPath + "' does not exist";
  if (!fs::is_regular_file(st)) return "the text file '" + f.textPath + "' is not a regular file";
  const std::uintmax_t bytes = fs::file_size(f.textPath, ec);
  if (ec) return "cannot read the size of the text file '" + f.textPath + "': " + ec.message();
  if (bytes > kMaxTextBytes) {
    return "the text file '" + f.textPath + "' has " + std::to_string(bytes >> 20) + " MiB; the text task reads at most " +
           std::to_string(kMaxTextBytes >> 20) + " MiB";
  }
  // A character is 1 to 4 bytes: fewer bytes than T + 1 is surely too short (fewer characters is
  // found when Train reads it).
  if (f.seq >= 1 && bytes < static_cast<std::uintmax_t>(f.seq) + 1) {
    return "the text file '" + f.textPath + "' has " + std::to_string(bytes) + " bytes; T = " + std::to_string(f.seq) +
           " needs at least " + std::to_string(f.seq + 1) + " characters";
  }
  return {};
}
}  // namespace

std::string checkForm(const TrainForm& f, std::uint64_t budgetBytes) {
  std::string out;
  auto add = [&](const std::string& m) { out += (out.empty() ? "" : "\n") + m; };
  const bool text = f.task == static_cast<int>(TaskKind::Text);
  if (text && f.textPath.empty()) add("the text task needs a UTF-8 text file: type its path");
  if (f.steps < 1) add("steps must be at least 1, got " + std::to_string(f.steps));
  if (f.evalEvery < 1) add("evaluate every N steps needs N >= 1, got " + std::to_string(f.evalEvery));
  if (!(f.lr > 0)) add("the learning rate must be > 0");
  if (text && !f.textPath.empty()) add(checkTextFile(f));
  if (!out.empty()) return out;
  try {
    TrainSettings s = settingsFromForm(f);
    // The memory estimate is checkRunMemory's (below, with the window's budget and wording).
    s.memoryBudgetBytes = UINT64_MAX;
    // The trainer's own checks, every problem in one message. Trainer::make also initialises the
    // parameters (and the text task reads its file), so for the text task and past a few million
    // parameters (a stall on every keystroke) only the sizes are checked here; Train / Reset then
    // runs every check on the worker thread.
    const double d = f.dModel, params = f.layers * (4 * d * d + (f.mlp ? 8 * d * d : 0)) + 2.0 * f.vocab * d + f.seq * d;
    if (text || params > 4e6) {
      GptConfig g = s.model;
      if (text) {
        g.vocab = 2;  // the file decides; at least two characters
      } else {
        auto task = Task::make(s.task);
        if (!task) return task.error().message;
        g.vocab = task->vocab();
      }
      g.seqLen = s.task.seq;
      if (auto v = validateConfig(g); !v) return v.error().message;
    } else if (auto made = Trainer::make(s); !made) {
      return made.error().message;
    }
    return checkRunMemory(s, budgetBytes);
  } catch (const std::exception& e) {
    return std::string("cannot check these settings: ") + e.what();
  }
}

std::string budgetInWindowWords(std::string message) {
  for (const std::string flag : {"(--memory-budget MiB)", "--memory-budget"}) {
    if (auto at = message.find(flag); at != std::string::npos) {
      message.replace(at, flag.size(), "(the memory budget under Sizes, in the Pipeline view)");
      break;
    }
  }
  return message;
}

std::string withoutUnsavedHistory(std::string p, std::int64_t firstStep) {
  const std::string n = std::to_string(firstStep);
  auto replaceAll = [&](const std::string& from, const std::string& to) {
    std::size_t at = p.find(from);
    while (at != std::string::npos) {
      const std::size_t end = at + from.size();
      if (end < p.size() && std::isdigit(static_cast<unsigned char>(p[end]))) {  // "step 15" inside "step 1500"
        at = p.find(from, end);
        continue;
      }
      p.replace(at, from.size(), to);
      at = p.find(from, at + to.size());
    }
  };
  replaceAll("The circuit formed at step " + n + " (", "The circuit had formed by step " + n + " (when exactly was not saved; ");
  replaceAll("The circuit formed at step " + n, "The circuit had formed by step " + n + " (when exactly was not saved)");
  replaceAll(" since step " + n, " by step " + n);
  return p;
}

std::shared_ptr<const GptParams> paramsAt(const SessionView& v, std::int64_t step) {
  std::shared_ptr<const GptParams> best;
  for (const auto& p : v.params) {
    if (p.step <= step) best = p.params;
  }
  return best;
}

namespace {

const Snapshot* snapshotAt(const SessionView& v, std::int64_t step) {
  for (const auto& s : v.snapshots) {
    if (s->step == step) return s.get();
  }
  return nullptr;
}

// Why a step of a checkpoint's saved history has no parameters to switch heads off in or open.
std::string notKeptAt(const SessionView& v, std::int64_t step) {
  const std::string first = v.params.empty() ? std::string("a later step") : "step " + std::to_string(v.params.front().step) + " or later";
  return "no parameters were kept for step " + std::to_string(step) +
         " (a loaded checkpoint keeps its earlier steps' curves and roles only, and a long run keeps an even spread "
         "of its parameters within 256 MiB): choose " + first + " that has them";
}

}  // namespace

std::string ablationMaskKey(const HeadMask& m, std::int64_t step) {
  std::string k = std::to_string(step) + ":";
  for (bool b : m.off) k += b ? '1' : '0';
  k += ":";
  for (std::uint8_t r : m.reads) k += static_cast<char>('0' + r);  // 0..7: the query/key/value bits
  return k;
}

float TrainPacing::frameP95() const {
  if (runningFrameMs.empty()) return 0;
  std::vector<float> t = runningFrameMs;
  std::sort(t.begin(), t.end());
  return t[std::min(t.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(t.size())))];
}

double TrainPacing::redrawsPerSecond() const {
  if (runningFrameAt.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(runningFrameAt.begin(), runningFrameAt.end());
  return *hi > *lo ? static_cast<double>(runningFrameAt.size() - 1) / (*hi - *lo) : 0.0;
}

void TrainLab::frameEnded(double now) {
  releaseFrameHold();
  const double work = now - pacing.frameStart;
  FrameWork smoothed{pacing.workSeconds};
  smoothed.add(work);
  pacing.workSeconds = smoothed.seconds;
  if (!active || !run.running()) return;
  const float ms = static_cast<float>(work * 1000.0);
  if (pacing.runningFrameMs.size() < 600) {
    pacing.runningFrameMs.push_back(ms);
    pacing.runningFrameAt.push_back(pacing.frameStart);
  } else {
    pacing.runningFrameMs[pacing.frameCursor % 600] = ms;
    pacing.runningFrameAt[pacing.frameCursor++ % 600] = pacing.frameStart;
  }
}


namespace {
// The run's speed once it finishes (what docs/training.md reports), from the session's own clock: the
// steps trained since Train over the time spent inside them (the definition `mhascope train`
// prints, so the two compare like with like), and the wall time from Train to the last step.
void measure(TrainLab& lab) {
  const SessionView& v = *lab.run.view;
  if (v.state == RunState::Finished && lab.pacing.playedAt >= 0) {
    const double steps = static_cast<double>(v.runSteps);
    lab.pacing.runStepsPerSecond = v.runStepSeconds > 0 ? steps / v.runStepSeconds : 0.0;
    lab.pacing.runWallStepsPerSecond = v.runWallSeconds > 0 ? steps / v.runWallSeconds : 0.0;
    std::printf("mhascope: training finished at step %lld: %.1f steps/s (%lld steps in %.2f s inside the steps, as "
                "`mhascope train` counts); %.1f steps/s wall from Train to the last step (%.2f s, evaluations "
                "included); window frame work p95 %.1f ms over %zu frames while training\n",
                static_cast<long long>(v.step), lab.pacing.runStepsPerSecond, static_cast<long long>(v.runSteps),
                v.runStepSeconds, lab.pacing.runWallStepsPerSecond, v.runWallSeconds, static_cast<double>(lab.pacing.frameP95()),
                lab.pacing.runningFrameMs.size());
    std::fflush(stdout);
    lab.pacing.playedAt = -1;
  } else if (v.state != RunState::Finished && v.state != RunState::Running) {
    lab.pacing.playedAt = -1;  // paused or failed: the mean would include the pause
  }
}
// Heads off and read cuts in one evaluation (a read cut is no parameter change: it acts inside
// the forward). The lesson compares it with the same parameters unmasked — the kept parameters
// may be an earlier step's than the history row shown. On the ablation worker; never throws.
AblationOutcome evaluateAblation(const std::string& key, const GptParams& p, const HeadMask& mask, const Batch& probe,
                                 std::int64_t step, ForwardCache& cache) {
  AblationOutcome out;
  out.key = key;
  try {
    auto r = evaluateAblated(p, mask, probe, step, cache);
    auto full = r ? evaluateOnProbe(p, probe, step, cache) : r;
    if (!r || !full) {
      out.error = (r ? full : r).error().message;
      return out;
    }
    std::vector<Evaluation> alone;  // each switched-off head alone, when two or more are off
    int offCount = 0;
    for (bool b : mask.off) offCount += b ? 1 : 0;
    for (int l = 0; offCount >= 2 && l < mask.layers; ++l) {
      for (int i = 0; i < mask.heads; ++i) {
        if (!mask.isOff(l, i)) continue;
        HeadMask one = HeadMask::none(p.cfg);
        one.set(l, i, true);
        auto a = evaluateAblated(p, one, probe, step, cache);
        if (!a) break;
        alone.push_back(std::move(a->evaluation));
      }
    }
    if (alone.size() != static_cast<std::size_t>(offCount)) alone.clear();
    out.text = ablationLesson(full->evaluation, r->evaluation, mask, p.cfg.vocab, alone);
    out.ablated = std::move(*r);
  } catch (const std::exception& e) {  // bad_alloc on a big run: said, the window keeps running
    out.error = std::string("cannot evaluate with these heads off: ") + e.what();
  }
  return out;
}

void applyAblation(TrainLab& lab, AblationOutcome out) {
  if (out.key != lab.ablation.ablationKey) return;  // the heads or the step changed meanwhile
  if (!out.error.empty()) return say(lab, out.error, true, TrainLab::Said::Run);
  lab.ablation.ablationText = std::move(out.text);
  lab.ablation.ablated = std::move(out.ablated);
}

}  // namespace

void updateTrainLab(TrainLab& lab, bool sync) {
  applyJob(lab);
  lab.run.view = lab.run.session.view();
  if (!lab.run.view || lab.run.view->history.empty()) {
    lab.run.shown = {};
    lab.run.curves.reset();
    return;
  }
  measure(lab);
  const SessionView& v = *lab.run.view;
  const int last = static_cast<int>(v.history.size()) - 1;
  if (lab.run.followLatest) lab.run.chosenIndex = last;
  lab.run.chosenIndex = std::clamp(lab.run.chosenIndex, 0, last);
  const Evaluation& e = v.history[static_cast<std::size_t>(lab.run.chosenIndex)];
  // A smaller run (fewer layers) must not leave the slider on a layer it does not have.
  lab.openLayer = std::clamp(lab.openLayer, 0, std::max(0, e.layers - 1));
  if (lab.ablation.mask.layers != e.layers || lab.ablation.mask.heads != e.heads) {
    lab.ablation.mask = HeadMask::none(v.settings->model);
    lab.files.sheetHeads.assign(static_cast<std::size_t>(e.layers * e.heads), true);
  }
  ShownStep shown;
  shown.index = static_cast<std::size_t>(lab.run.chosenIndex);
  shown.step = e.step;
  shown.evaluation = &e;
  shown.snapshot = snapshotAt(v, e.step);
  if (lab.ablation.mask.any()) {
    TrainAblation& ab = lab.ablation;
    if (auto done = ab.worker.take(); done && done->key == ab.ablationKey) applyAblation(lab, std::move(*done));
    const std::string key = ablationMaskKey(ab.mask, e.step);
    if (key != ab.ablationKey) {
      ab.ablationKey = key;
      ab.ablated.reset();
      ab.ablationText.clear();
      if (auto p = paramsAt(v, e.step)) {
        // The evaluations run on the Train mode's ablation worker (the cache is that thread's
        // alone), or here when the frame must show their result (tests, screenshots).
        ab.cache.memoryBudgetBytes = v.settings->memoryBudgetBytes;  // the run's budget, not a fixed one
        auto work = [key, p, mask = ab.mask, view = lab.run.view, step = e.step, cache = &ab.cache] {
          return evaluateAblation(key, *p, mask, *view->probe, step, *cache);
        };
        if (sync) applyAblation(lab, work());
        else ab.worker.submit(std::move(work));
      } else {
        say(lab, notKeptAt(v, e.step), true, TrainLab::Said::Run);
      }
    }
    if (ab.ablated) {
      shown.evaluation = &ab.ablated->evaluation;
      shown.snapshot = &ab.ablated->snapshot;
    }
  } else {
    lab.ablation.ablationKey.clear();
    lab.ablation.ablated.reset();
    lab.ablation.ablationText.clear();
  }
  if (shown.snapshot != lab.run.lastSnapshot) {
    lab.run.lastSnapshot = shown.snapshot;
    ++lab.run.serialCounter;
  }
  shown.pictureSerial = kTrainPictureSpace | lab.run.serialCounter;  // never a ShownResult::traceSerial
  lab.run.shown = shown;
  const TrainRun::CurvesKey curvesKey{v.settings.get(), v.history.size(), v.history.back().step,
                                      shown.evaluation ? shown.step : -1, lab.logY};
  if (!lab.run.curves || curvesKey != lab.run.curvesKey) {
    lab.run.curves = std::make_shared<const CurvesFigure>(buildCurves(lab));
    lab.run.curvesKey = curvesKey;
  }
}

std::string checkRunMemory(const TrainSettings& settings, std::uint64_t budgetBytes) {
  if (budgetBytes == 0) return {};
  TrainSettings s = settings;
  s.memoryBudgetBytes = budgetBytes;
  Status st = Ok{};
  if (s.task.kind == TaskKind::Text) {
    // Without reading the file: its size bounds its characters from above, and V >= 2 from below
    // (Trainer::make checks again with the real V and length before it allocates).
    std::error_code ec;
    const std::uintmax_t bytes = std::filesystem::file_size(s.task.textPath, ec);
    st = checkTrainingMemory(s, 2, ec ? 0 : static_cast<std::uint64_t>(bytes));
  } else {
    auto task = Task::make(s.task);
    if (!task) return task.error().message;
    st = checkTrainingMemory(s, task->vocab(), 0);
  }
  return st ? std::string() : budgetInWindowWords(st.error().message);
}

void trainExportSheet(TrainLab& lab, SeeAs seeAs) {
  if (!lab.run.view || lab.run.view->history.empty()) return say(lab, "nothing to export yet: press Train first", true, TrainLab::Said::Export);
  auto sheet = buildContactSheet(lab);
  if (!sheet) return say(lab, sheet.error().message, true, TrainLab::Said::Export);
  sheet->seeAs = seeAs;
  if (auto st = exportContactSheet(lab.files.sheetPath, *sheet); !st) return say(lab, st.error().message, true, TrainLab::Said::Export);
  say(lab, "Saved " + lab.files.sheetPath, false, TrainLab::Said::Export);
}

void trainExportAnimation(TrainLab& lab, SeeAs seeAs) {
  if (!lab.run.view || lab.run.view->history.empty()) return say(lab, "nothing to export yet: press Train first", true, TrainLab::Said::Export);
  auto a = buildAnimation(lab);
  if (!a) return say(lab, a.error().message, true, TrainLab::Said::Export);
  a->sheet.seeAs = seeAs;
  a->curves.seeAs = seeAs;
  if (auto st = exportTrainingGif(lab.files.animationPath, *a); !st) return say(lab, st.error().message, true, TrainLab::Said::Export);
  say(lab, "Saved " + lab.files.animationPath + " (" + std::to_string(a->sheet.steps.size()) + " frames)", false,
      TrainLab::Said::Export);
}

void trainExportCurves(TrainLab& lab, SeeAs seeAs) {
  if (!lab.run.curves) return say(lab, "nothing to export yet: press Train first", true, TrainLab::Said::Export);
  CurvesFigure curves = *lab.run.curves;
  curves.seeAs = seeAs;
  if (auto st = exportCurves(lab.files.curvesPath, curves); !st) return say(lab, st.error().message, true, TrainLab::Said::Export);
  say(lab, "Saved " + lab.files.curvesPath, false, TrainLab::Said::Export);
}

void trainExportTimeline(TrainLab& lab) {
  if (!lab.run.view || lab.run.view->history.empty()) return say(lab, "nothing to export yet: press Train first", true, TrainLab::Said::Export);
  if (!isHtmlPath(lab.files.timelinePath)) {
    return say(lab, "the timeline is one page: its name ends in .html, not '" + lab.files.timelinePath + "'", true,
               TrainLab::Said::Export);
  }
  if (auto st = refuseToReplace(lab.files.timelinePath, "export"); !st) return say(lab, st.error().message, true, TrainLab::Said::Export);
  auto page = buildTimelinePage(lab);
  if (!page) return say(lab, page.error().message, true, TrainLab::Said::Export);
  if (auto st = exportHtml(lab.files.timelinePath, *page); !st) return say(lab, st.error().message, true, TrainLab::Said::Export);
  say(lab, "Saved " + lab.files.timelinePath, false, TrainLab::Said::Export);
}

void trainOpenInPipeline(TrainLab& lab, AppState& state, ViewState& view) {
  if (!lab.run.view || !lab.run.shown.evaluation) return say(lab, "nothing to open yet: press Train first", true, TrainLab::Said::Pipeline);
  const SessionView& v = *lab.run.view;
  auto p = paramsAt(v, lab.run.shown.step);
  if (!p) return say(lab, notKeptAt(v, lab.run.shown.step), true, TrainLab::Said::Pipeline);
  // The slider may still name a layer of a larger run drawn before this frame's clamp.
  lab.openLayer = std::clamp(lab.openLayer, 0, p->cfg.layers - 1);
  // Heads off are a parameter change (zeroed W_o columns) and travel with the layer; a read cut
  // acts only inside the Train mode's forward, so the pipeline's layer input is the uncut stream.
  const bool anyOff = std::find(lab.ablation.mask.off.begin(), lab.ablation.mask.off.end(), true) != lab.ablation.mask.off.end();
  const bool anyCut = std::any_of(lab.ablation.mask.reads.begin(), lab.ablation.mask.reads.end(), [](std::uint8_t r) { return r != 0; });
  try {
    GptParams params = *p;
    if (anyOff) {
      auto off = ablateHeads(params, lab.ablation.mask);
      if (!off) return say(lab, off.error().message, true, TrainLab::Said::Pipeline);
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
    if (!model) return say(lab, model.error().message, true, TrainLab::Said::Pipeline);
    // The pipeline recomputes from this layer (Document::trainedLayer) whatever changes later, so
    // its weights and subtitle stay until the layer is closed under "Files in use".
    auto layer = std::make_shared<SourcedModel>();
    layer->model = std::move(*model);
    layer->config = checkpointLayerConfig(params.cfg, one, labels);
    layer->config.name = "trained layer";
    layer->seedUsed = false;
    layer->describeNote = "; trained layer " + std::to_string(lab.openLayer) + " (L = " +
                          std::to_string(params.cfg.layers) + "; " + taskName(v.settings->task.kind) + ", step " +
                          std::to_string(lab.run.shown.step) + (anyOff ? ", switched-off heads zeroed" : "") +
                          ", input LN1 of the residual stream)";
    state.doc.beforeOpen = Document::BeforeOpen{state.doc.config, state.doc.files, state.doc.trainedLayer, state.doc.presetName,
                                            "cannot open the trained layer"};
    state.doc.config = layer->config;
    state.doc.config.memoryBudgetBytes = state.doc.beforeOpen->config.memoryBudgetBytes;
    state.doc.files = {};
    state.doc.trainedLayer = std::move(layer);
    state.doc.configDirty = true;  // the scheduler computes it (on the UI thread: a trained layer is small)
    state.doc.configError.clear();
    state.doc.presetName = std::string(taskName(v.settings->task.kind)) + " layer " + std::to_string(lab.openLayer) +
                       " at step " + std::to_string(lab.run.shown.step);
    view.head = std::clamp(view.head, 0, params.cfg.heads - 1);
    view.batch = 0;
    view.stage = StageId::Weights;
    view.selectTab = kHeatmapTab;
    lab.active = false;
    say(lab, "Opened layer " + std::to_string(lab.openLayer) + " at step " + std::to_string(lab.run.shown.step) +
             " in the pipeline" + (anyOff ? " (with the switched-off heads zeroed)" : "") +
             (anyCut ? "; the read cuts stay in the Train mode: the pipeline's layer reads the uncut residual stream"
                     : ""),
             false,
        TrainLab::Said::Pipeline);
  } catch (const std::exception& e) {
    say(lab, std::string("cannot open this layer: ") + e.what(), true, TrainLab::Said::Pipeline);
  }
}

}  // namespace mhascope::app
