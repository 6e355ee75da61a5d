// The Train mode's worker-thread jobs: Train / Step / Reset start a run, checkpoints load and save, and the finished job is applied.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <string>

#include "state/app_state.hpp"
#include "train/memory.hpp"
#include "train/outputs.hpp"
#include "train_lab/lab_internal.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

using namespace mhascope::train;

namespace {

// A checkpoint at step 0 has nothing before it; a later one without evaluations was written before
// checkpoints kept their history.
bool checkpointHistorySaved(const Checkpoint& c) { return c.step == 0 || !c.history.empty(); }

LabJobResult failed(std::string message) {
  LabJobResult r;
  r.error = budgetInWindowWords(std::move(message));
  return r;
}

// The form a checkpoint implies: its sizes, task and seed; the rest (lr, batch, text file, eval
// every) as the form had them, and at least its step as the step count.
TrainForm formOfCheckpoint(TrainForm f, const Checkpoint& c) {
  const GptConfig& g = c.params.cfg;
  f.task = static_cast<int>(c.task.kind);
  f.layers = g.layers;
  f.heads = g.heads;
  f.dModel = g.dModel;
  f.mlp = g.mlp;
  f.positions = static_cast<int>(g.positions);
  f.ropeBase = g.ropeBase;
  f.kvHeads = g.kv() == g.heads ? 0 : g.kv();
  f.vocab = c.task.vocab;
  f.seq = c.task.seq;
  f.periodMin = c.task.periodMin;
  f.periodMax = c.task.periodMax;
  f.seed = c.seed;
  f.steps = static_cast<int>(std::max<std::int64_t>(f.steps, c.step));
  return f;
}

// On the worker thread: the session's reset (Trainer::make reads the text, allocates the model,
// the optimizer's state and the probe). A failure leaves the previous run as it was.
LabJobResult startRun(TrainingSession& session, TrainSettings s, int evalEvery, const std::optional<Checkpoint>& init) {
  LabJobResult r;
  r.step = init ? init->step : 0;
  r.historySaved = !init || checkpointHistorySaved(*init);
  try {
    if (auto st = session.reset(std::move(s), evalEvery, init); !st) return failed(st.error().message);
  } catch (const std::bad_alloc&) {
    return failed("not enough memory for this run: the allocation failed (make d_model, T, batch or vocab smaller)");
  } catch (const std::exception& e) {
    return failed(std::string("cannot start: ") + e.what());
  }
  return r;
}

void launch(TrainLab& lab, LabJob job, std::function<LabJobResult()> work) {
  lab.run.worker.submit([work = std::move(work)]() -> LabJobResult {
    try {
      return work();
    } catch (const std::exception& e) {  // the job must not throw: said as the run's error
      return failed(std::string("cannot start: ") + e.what());
    }
  });
  lab.run.job = std::move(job);
}

// A new run from the form on the worker thread (or the run on screen continued up to a higher
// `steps`); Train plays it, Step takes one step once it exists.
void startFromForm(TrainLab& lab, bool play, int stepAfter, bool continueRun, std::string doneMessage) {
  if (lab.run.busy()) return;
  lab.setup.formError = checkForm(lab.setup.form, lab.setup.memoryBudgetBytes);  // the memory estimate too
  if (!lab.setup.formError.empty()) return;
  TrainSettings s = settingsFromForm(lab.setup.form);
  if (lab.setup.memoryBudgetBytes > 0) s.memoryBudgetBytes = lab.setup.memoryBudgetBytes;
  LabJob job;
  job.kind = LabJob::Kind::Start;
  job.playAfter = play;
  job.stepAfter = stepAfter;
  job.form = lab.setup.form;
  job.doneMessage = std::move(doneMessage);
  job.status = lab.setup.form.task == static_cast<int>(TaskKind::Text) ? "Starting: reading the text file and allocating the model ..."
                                                                 : "Starting: allocating the model ...";
  TrainingSession* session = &lab.run.session;
  const int every = lab.setup.form.evalEvery;
  launch(lab, std::move(job), [session, s, every, continueRun]() mutable {
    std::optional<Checkpoint> init;
    if (continueRun) init = session->checkpoint();
    return startRun(*session, std::move(s), every, init);
  });
}

// Plays the run on screen (it exists and is not finished).
void playRun(TrainLab& lab) {
  lab.holdForThisFrame();
  lab.run.followLatest = true;
  if (auto v = lab.run.session.view()) {
    lab.pacing.playedAt = lab.pacing.frameStart;
    lab.pacing.playedStep = v->step;
    lab.pacing.runningFrameMs.clear();
    lab.pacing.runningFrameAt.clear();
    lab.pacing.frameCursor = 0;
  }
  lab.run.session.play();
}

}  // namespace

// The finished job's result, applied on the UI thread: the new run's form and history state, or
// the error (the previous run is still the one on screen).
void applyJob(TrainLab& lab) {
  if (!lab.run.job) return;
  std::optional<LabJobResult> done = lab.run.worker.take();
  if (!done) return;
  LabJob job = std::move(*lab.run.job);
  lab.run.job.reset();
  LabJobResult r = std::move(*done);
  const bool load = job.kind == LabJob::Kind::Load;
  if (!r.error.empty()) {
    if (load) return say(lab, r.error, true, TrainLab::Said::Checkpoint);
    lab.setup.formError = r.error;
    return;
  }
  if (r.form) lab.setup.form = *r.form;
  lab.run.runForm = load ? *r.form : job.form;
  lab.run.runStartStep = r.step;
  lab.run.historyMissing = !r.historySaved;
  lab.setup.formError.clear();
  lab.run.followLatest = true;
  lab.ablation.mask = {};
  lab.ablation.ablated.reset();
  lab.ablation.ablationKey.clear();
  lab.ablation.ablationText.clear();
  lab.pacing.runStepsPerSecond = lab.pacing.runWallStepsPerSecond = 0;
  lab.pacing.runningFrameMs.clear();
  lab.pacing.runningFrameAt.clear();
  lab.pacing.frameCursor = 0;
  say(lab, job.doneMessage, false, load ? TrainLab::Said::Checkpoint : TrainLab::Said::Run);
  if (load) {
    const bool more = lab.setup.form.steps > r.step;
    std::string m = "Loaded " + job.status + " (step " + std::to_string(r.step) + "); " +
                    (more ? "Train continues from it" : "raise steps and press Train to continue from it");
    if (!r.historySaved) m += ". This checkpoint did not save its training history: nothing before step " + std::to_string(r.step) + " is shown";
    if (!r.note.empty()) m += "; " + r.note;
    say(lab, m, false, TrainLab::Said::Checkpoint);
  }
  if (job.playAfter) playRun(lab);
  if (job.stepAfter > 0) {
    lab.holdForThisFrame();
    lab.run.session.step(job.stepAfter);
  }
}

void finishTrainJob(TrainLab& lab) {
  if (lab.run.job) lab.run.worker.waitUntilIdle();
  applyJob(lab);
}

void trainReset(TrainLab& lab) { startFromForm(lab, false, 0, false, ""); }

void trainStep(TrainLab& lab) {
  if (lab.run.busy()) return;
  if (!lab.run.session.started()) return startFromForm(lab, false, 1, false, "");
  lab.run.followLatest = true;
  lab.run.session.step(1);
}

void trainPlay(TrainLab& lab) {
  if (lab.run.busy()) return;
  const auto v = lab.run.session.view();
  if (!v || !lab.run.runForm) return startFromForm(lab, true, 0, false, "");
  if (!(lab.setup.form == *lab.run.runForm)) {
    TrainForm moreSteps = *lab.run.runForm;
    moreSteps.steps = lab.setup.form.steps;
    if (lab.setup.form == moreSteps) {
      if (lab.setup.form.steps > v->step) {
        return startFromForm(lab, true, 0, true, "Continuing this run from step " + std::to_string(v->step) + " to step " +
                                                     std::to_string(lab.setup.form.steps));
      }
      return say(lab, "steps (" + std::to_string(lab.setup.form.steps) + ") is not past this run's step " +
                          std::to_string(v->step) + ": raise it to train further, or press Reset for a new run",
                 true, TrainLab::Said::Run);
    }
    return startFromForm(lab, true, 0, false,
                         "Started a new run with the changed settings (the previous run stopped at step " +
                             std::to_string(v->step) + "; Save checkpoint keeps a run)");
  }
  if (v->state == RunState::Finished) {
    return say(lab, "This run finished at step " + std::to_string(v->step) +
                        ": raise steps to train further, or press Reset for a new run", false, TrainLab::Said::Run);
  }
  if (v->state == RunState::Failed) {
    return say(lab, "This run failed (see above): change the settings and press Train, or press Reset", true,
               TrainLab::Said::Run);
  }
  playRun(lab);
}

void trainSaveCheckpoint(TrainLab& lab) {
  constexpr auto at = TrainLab::Said::Checkpoint;
  if (lab.run.busy()) return;
  if (lab.files.checkpointPath.empty()) return say(lab, "type a path for the checkpoint (.safetensors)", true, at);
  auto c = lab.run.session.checkpoint();
  if (!c) return say(lab, "nothing to save yet: press Train or Reset first", true, at);
  TrainOutputs out;  // the same rule as `train --save` (train/outputs.hpp)
  out.continueHint = "or load it with Load checkpoint to continue it";
  out.checkpoint = lab.files.checkpointPath;
  out.checkpointName = "the checkpoint path";
  out.inputs = {{"the text file", c->task.kind == TaskKind::Text ? c->task.textPath : std::string()}};
  if (auto st = checkTrainOutputs(out, runIdentity(*c)); !st) return say(lab, st.error().message, true, at);
  if (auto st = saveCheckpoint(lab.files.checkpointPath, *c); !st) return say(lab, st.error().message, true, at);
  say(lab, "Saved step " + std::to_string(c->step) + " to " + lab.files.checkpointPath, false, at);
}

void trainLoadCheckpoint(TrainLab& lab) {
  if (lab.run.busy()) return;
  if (lab.files.checkpointPath.empty()) {
    return say(lab, "type the path of a checkpoint (.safetensors)", true, TrainLab::Said::Checkpoint);
  }
  LabJob job;
  job.kind = LabJob::Kind::Load;
  job.status = lab.files.checkpointPath;
  TrainingSession* session = &lab.run.session;
  const std::string path = lab.files.checkpointPath;
  const TrainForm form = lab.setup.form;
  const std::uint64_t budget = lab.setup.memoryBudgetBytes;
  say(lab, "", false, TrainLab::Said::Checkpoint);
  launch(lab, std::move(job), [session, path, form, budget]() -> LabJobResult {
    try {
      auto c = budget > 0 ? loadCheckpoint(path, budget) : loadCheckpoint(path);
      if (!c) return failed(c.error().message);
      TrainForm f = formOfCheckpoint(form, *c);
      TrainSettings s = settingsFromForm(f);
      if (budget > 0) s.memoryBudgetBytes = budget;
      // A checkpoint keeps its sizes, not its batch: the form's batch may not fit a checkpoint that
      // was trained with a smaller one (T = 2048 at batch 1). Halve it until the run fits, and say so.
      std::string note;
      std::string m = checkRunMemory(s, budget);
      while (!m.empty() && s.batch > 1) {
        s.batch = std::max(1, s.batch / 2);
        m = checkRunMemory(s, budget);
      }
      if (!m.empty()) return failed("cannot load '" + path + "': " + m);
      if (s.batch != f.batch) {
        note = "batch lowered from " + std::to_string(f.batch) + " to " + std::to_string(s.batch) +
               " so that training it fits the memory budget";
        f.batch = s.batch;
      }
      LabJobResult r = startRun(*session, s, f.evalEvery, *c);
      r.form = f;
      r.note = note;
      return r;
    } catch (const std::bad_alloc&) {
      return failed("cannot load '" + path + "': not enough memory (the allocation failed)");
    } catch (const std::exception& e) {
      return failed("cannot load '" + path + "': " + e.what());
    }
  });
}

void trainDropPath(TrainLab& lab, const std::string& path) {
  lab.active = true;
  std::string ext = path.size() >= 12 ? path.substr(path.size() - 12) : std::string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".safetensors") {
    return say(lab, "dropped '" + path + "': only checkpoints (.safetensors, from Save checkpoint or `mhascope train "
                    "--save`) can be dropped here", true,
               TrainLab::Said::Checkpoint);
  }
  lab.files.checkpointPath = path;
  trainLoadCheckpoint(lab);
}

}  // namespace mhascope::app
