// The Train mode in the last workspace: the mode, the task and the setup form come back at the
// next launch ("train" block; files without it give the defaults), all or nothing like the rest;
// and the Train mode's frame pacing while training.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/train_command.hpp"
#include "state/session.hpp"
#include "circuits/circuits_view.hpp"
#include "train_lab/lab_figures.hpp"
#include "train_lab/lab_state.hpp"
#include "train/memory.hpp"
#include "train/trainer.hpp"
#include "analysis/head_roles.hpp"
#include "model_source/training_page.hpp"

namespace mhascope::app {
namespace {

// A whole workspace file holding this train block, as the window writes it.
std::string savedWith(const SavedTrain& t) {
  Workspace ws;
  ws.train = trainBlockJson(t);
  return workspaceToJson(ws);
}

// What the window reads back from such a file.
Result<SavedTrain> parseSavedTrain(const std::string& text, const std::string& what) {
  auto ws = parseWorkspaceJson(text, what);
  if (!ws) return ws.error();
  return savedTrainOf(*ws, what);
}

// The form holds every seed `mhascope train` takes: a checkpoint trained with seed 2^64 - 1 is the same
// run when the window saves it back, and the last workspace keeps the seed exactly.
TEST(TrainSessionJson, TheSeedKeepsAll64Bits) {
  SavedTrain t;
  t.form.seed = 18446744073709551615ull;
  auto back = parseSavedTrain(savedWith(t), "last-workspace.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->form.seed, 18446744073709551615ull);
  nlohmann::json j = nlohmann::json::parse(savedWith(t));
  j["train"]["seed"] = -1;
  auto bad = parseSavedTrain(j.dump(), "last-workspace.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/train/seed must be an integer from 0 to 18446744073709551615, got -1"),
            std::string::npos) << bad.error().message;
}

// The attention variant of the form comes back too; a plain form writes none of its keys (older
// builds keep reading the file), and a bad value is refused with its key.
TEST(TrainSessionJson, TheAttentionVariantRoundTripsAndAPlainFormWritesNone) {
  SavedTrain t;
  EXPECT_EQ(nlohmann::json::parse(trainBlockJson(t)).count("positions"), 0u);
  t.form.positions = 1;  // rope
  t.form.kvHeads = 1;
  t.form.ropeBase = 500.0f;
  auto back = parseSavedTrain(savedWith(t), "last-workspace.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->form.positions, 1);
  EXPECT_EQ(back->form.kvHeads, 1);
  EXPECT_EQ(back->form.ropeBase, 500.0f);
  EXPECT_EQ(settingsFromForm(back->form).model.positions, train::TrainPositions::Rope);
  nlohmann::json j = nlohmann::json::parse(savedWith(t));
  j["train"]["positions"] = "spiral";
  auto bad = parseSavedTrain(j.dump(), "last-workspace.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/train/positions must be learned, rope or alibi, got \"spiral\""),
            std::string::npos) << bad.error().message;
}

// A RoPE base past the float range, zero or negative is refused at its key, naming the file, before
// it is narrowed to a float (1e300 would not convert).
TEST(TrainSessionJson, ARopeBaseOutsideThePositiveFloatRangeIsRefusedWithItsKeyAndFile) {
  SavedTrain t;
  t.form.positions = 1;
  t.form.ropeBase = 500.0f;
  for (const double base : {1e300, 0.0, -5.0}) {
    nlohmann::json j = nlohmann::json::parse(savedWith(t));
    j["train"]["rope_base"] = base;
    auto bad = parseSavedTrain(j.dump(), "workspace 'w.json'");
    ASSERT_FALSE(bad.ok()) << base;
    EXPECT_NE(bad.error().message.find("/train/rope_base must be a positive number within the float range"),
              std::string::npos) << bad.error().message;
    EXPECT_NE(bad.error().message.find("w.json"), std::string::npos) << bad.error().message;
  }
}

TEST(TrainSessionJson, ModeTaskAndSettingsRoundTrip) {
  SavedTrain t;
  t.active = true;
  t.form.task = 3;
  t.form.textPath = "/tmp/some text.txt";
  t.form.layers = 1;
  t.form.heads = 4;
  t.form.dModel = 32;
  t.form.mlp = true;
  t.form.seq = 24;
  t.form.batch = 8;
  t.form.steps = 700;
  t.form.lr = 3e-3f;
  t.form.seed = 7;
  t.form.evalEvery = 25;
  auto back = parseSavedTrain(savedWith(t), "last-workspace.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, t);
  SavedTrain pipeline;  // the defaults, pipeline mode
  auto back2 = parseSavedTrain(savedWith(pipeline), "last-workspace.json");
  ASSERT_TRUE(back2.ok()) << back2.error().message;
  EXPECT_FALSE(back2->active);
  EXPECT_EQ(*back2, pipeline);
}

// The window's form and `mhascope train` start from one set of defaults (core/train's).
TEST(TrainForm, StartsFromTheTrainCommandsSettings) {
  const cli::TrainArgs args;
  const TrainForm form;
  const train::TrainSettings& cmd = args.settings;
  auto kind = train::taskFromName(args.task);
  ASSERT_TRUE(kind);
  EXPECT_EQ(form.task, static_cast<int>(*kind));
  EXPECT_EQ(form.vocab, cmd.task.vocab);
  EXPECT_EQ(form.seq, cmd.task.seq);
  EXPECT_EQ(form.periodMin, cmd.task.periodMin);
  EXPECT_EQ(form.periodMax, cmd.task.periodMax);
  EXPECT_EQ(form.layers, cmd.model.layers);
  EXPECT_EQ(form.heads, cmd.model.heads);
  EXPECT_EQ(form.dModel, cmd.model.dModel);
  EXPECT_EQ(form.mlp, cmd.model.mlp);
  EXPECT_EQ(form.batch, cmd.batch);
  EXPECT_EQ(form.steps, cmd.steps);
  EXPECT_EQ(form.lr, cmd.adam.lr);
  EXPECT_EQ(form.weightDecay, cmd.adam.weightDecay);
  EXPECT_EQ(static_cast<std::uint64_t>(form.seed), cmd.seed);
  EXPECT_EQ(form.evalEvery, args.evalEvery);
  // The documented reference setting (docs/training.md, `bench --train`): induction, 2 layers of h = 2,
  // d_model 64, vocab 64, T 32, batch 16, 1500 steps, AdamW lr 1e-3, wd 1e-4, period 6-16.
  EXPECT_EQ(args.task, "induction");
  EXPECT_EQ(cmd.model.layers, 2);
  EXPECT_EQ(cmd.model.heads, 2);
  EXPECT_EQ(cmd.model.dModel, 64);
  EXPECT_EQ(cmd.task.vocab, 64);
  EXPECT_EQ(cmd.task.seq, 32);
  EXPECT_EQ(cmd.batch, 16);
  EXPECT_EQ(cmd.steps, 1500);
  EXPECT_EQ(cmd.adam.lr, 1e-3f);
  EXPECT_EQ(cmd.adam.weightDecay, 1e-4f);
  EXPECT_EQ(cmd.task.periodMin, 6);
  EXPECT_EQ(cmd.task.periodMax, 16);
}

TEST(TrainSessionJson, AWorkspaceWithoutTheBlockGivesItsDefaults) {
  auto j = nlohmann::json::parse(savedWith(SavedTrain{true, TrainForm{}}));
  j.erase("train");
  auto back = parseSavedTrain(j.dump(), "last-workspace.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, SavedTrain{});
}

TEST(TrainSessionJson, ABadTrainBlockIsRefusedWithItsKey) {
  auto with = [](const char* key, const nlohmann::json& value) {
    auto j = nlohmann::json::parse(savedWith(SavedTrain{}));
    j["train"][key] = value;
    return parseSavedTrain(j.dump(), "last-workspace.json");
  };
  for (auto [key, value, says] : {std::tuple{"mode", nlohmann::json("lab"), "/train/mode"},
                                  {"task", nlohmann::json("copy"), "/train/task"},
                                  {"layers", nlohmann::json(2.5), "/train/layers"},
                                  {"lr", nlohmann::json("fast"), "/train/lr"},
                                  {"mlp", nlohmann::json(1), "/train/mlp"},
                                  {"extra", nlohmann::json(1), "unknown key /train/extra"}}) {
    auto r = with(key, value);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  }
  auto j = nlohmann::json::parse(savedWith(SavedTrain{}));
  j["train"].erase("steps");
  auto r = parseSavedTrain(j.dump(), "last-workspace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("missing key /train/steps"), std::string::npos) << r.error().message;
}

TEST(TrainLabPacing, AtMostFourFramesPerSecondAndDrawingAtMostANinthOfTheTime) {
  TrainLab lab;
  lab.pacing.workSeconds = 0.001;  // a cheap frame still waits 1/4 s
  EXPECT_DOUBLE_EQ(lab.tickSeconds(), 0.25);
  lab.pacing.workSeconds = 0.040;  // 40 ms of work: 320 ms of wait
  EXPECT_NEAR(lab.tickSeconds(), 0.32, 1e-12);
  lab.pacing.workSeconds = 1.0;
  EXPECT_DOUBLE_EQ(lab.tickSeconds(), 0.5);
}

TEST(TrainLabPacing, NoFramesWhenNothingNewWasPublished) {
  TrainLab lab;
  lab.active = true;
  EXPECT_FALSE(lab.animating()) << "no run";
  train::TrainSettings small;  // TrainSettings' defaults, a small model
  small.model.layers = 1;
  small.model.dModel = 16;
  small.task.seq = 32;
  small.task.vocab = 16;
  small.steps = 10;
  lab.run.session.holdSteps(10.0);  // keeps the first evaluation back
  auto st = lab.run.session.reset(small, 50);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(lab.animating()) << "a view not shown yet";
  lab.run.view = lab.run.session.view();
  ASSERT_TRUE(lab.run.view->evaluating);
  EXPECT_TRUE(lab.animating()) << "shown, but the first evaluation is still to come: keep ticking";
  lab.run.session.releaseSteps();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (lab.run.session.view()->evaluating && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_FALSE(lab.run.session.view()->evaluating);
  EXPECT_TRUE(lab.animating()) << "the evaluation was published, not shown yet";
  lab.run.view = lab.run.session.view();
  EXPECT_FALSE(lab.animating()) << "paused and shown: the window waits for input";
}

// While a run goes, a frame holds the training steps until it is swapped (the session's
// holdSteps), at most once per kTrainFrameMinSeconds: input frames in between do not.
TEST(TrainLabPacing, AFrameWhileTrainingHoldsTheStepsAtMostFourTimesASecond) {
  TrainLab lab;
  lab.active = true;
  train::TrainSettings small;
  small.model.layers = 1;
  small.model.dModel = 16;
  small.task.seq = 32;
  small.task.vocab = 16;
  small.steps = 1000000;
  ASSERT_TRUE(lab.run.session.reset(small, 50).ok());
  lab.holdStepsForFrame(10.0);
  EXPECT_FALSE(lab.pacing.holding) << "paused: nothing to hold";
  lab.releaseFrameHold();
  lab.run.session.play();  // `lab.run.view` is still the paused one: the frame right after Train holds
  lab.holdStepsForFrame(10.02);
  EXPECT_TRUE(lab.pacing.holding);
  lab.releaseFrameHold();
  EXPECT_FALSE(lab.pacing.holding) << "released once swapped";
  lab.holdStepsForFrame(10.2);  // input 0.18 s later: drawn without holding
  EXPECT_FALSE(lab.pacing.holding);
  lab.releaseFrameHold();
  lab.holdStepsForFrame(10.27);
  EXPECT_TRUE(lab.pacing.holding);
  lab.releaseFrameHold();
  lab.active = false;  // the pipeline view's frames never hold
  lab.holdStepsForFrame(11.0);
  EXPECT_FALSE(lab.pacing.holding);
  lab.releaseFrameHold();
  lab.run.session.pause();
}

// ---- The Train mode's actions: Train / Reset / Load on a worker thread, what they say.

// A small, quick form (1 layer unless told otherwise).
TrainForm smallForm(int layers = 1, int steps = 4) {
  TrainForm f;
  f.layers = layers;
  f.dModel = 16;
  f.vocab = 16;
  f.seq = 32;
  f.batch = 2;
  f.steps = steps;
  f.evalEvery = 2;
  return f;
}

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("mhascope_train_lab_" + name)).string();
}

// Frames until the session's view satisfies `done` (at most 30 s).
template <class Done>
void updateUntil(TrainLab& lab, Done done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    updateTrainLab(lab);
    if ((lab.run.view && done(*lab.run.view)) || std::chrono::steady_clock::now() > end) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}
bool settled(const train::SessionView& v) {
  return !v.evaluating && v.state != train::RunState::Running && !v.history.empty();
}

// Starts a run of `form` and lets it finish.
void runToTheEnd(TrainLab& lab, const TrainForm& form) {
  lab.setup.form = form;
  trainPlay(lab);
  finishTrainJob(lab);
  updateUntil(lab, [](const train::SessionView& v) { return v.state == train::RunState::Finished && !v.evaluating; });
}

TEST(TrainLabActions, TheTextFileIsNeverReadOnAFormEdit) {
  // 100 times the same character: Task::make refuses it (an alphabet of one), so an empty answer
  // shows the check did not read it; only its size is looked at.
  const std::string path = tempPath("one_char.txt");
  std::ofstream(path) << std::string(100, 'a');
  TrainForm f = smallForm();
  f.task = static_cast<int>(train::TaskKind::Text);
  f.textPath = path;
  EXPECT_EQ(checkForm(f), "");
  f.seq = 200;  // more than the bytes: surely too short
  EXPECT_NE(checkForm(f).find("has 100 bytes; T = 200 needs at least 201 characters"), std::string::npos) << checkForm(f);
  f.textPath = path + ".missing";
  EXPECT_NE(checkForm(f).find("does not exist"), std::string::npos) << checkForm(f);
  // Larger than the task reads: said from the size, no read.
  const std::string big = tempPath("big.txt");
  { std::ofstream(big).close(); }
  std::filesystem::resize_file(big, train::kMaxTextBytes + 1);
  f.textPath = big;
  f.seq = 32;
  EXPECT_NE(checkForm(f).find("the text task reads at most"), std::string::npos) << checkForm(f);
  // Train reads it, on the worker thread, and shows the task's own refusal under the form.
  f.textPath = path;
  TrainLab lab;
  lab.setup.form = f;
  trainPlay(lab);
  ASSERT_TRUE(lab.run.busy());
  finishTrainJob(lab);
  EXPECT_FALSE(lab.run.busy());
  EXPECT_NE(lab.setup.formError.find("character"), std::string::npos) << lab.setup.formError;
  EXPECT_FALSE(lab.run.session.started());
  std::remove(path.c_str());
  std::remove(big.c_str());
}

TEST(TrainLabActions, ARunOverTheBudgetIsRefusedBeforeAllocatingWithTheEstimate) {
  TrainLab lab;
  lab.setup.memoryBudgetBytes = std::uint64_t{64} << 20;
  lab.setup.form = smallForm();
  lab.setup.form.dModel = 1024;
  lab.setup.form.seq = 2048;
  lab.setup.form.batch = 64;
  trainPlay(lab);
  EXPECT_FALSE(lab.run.busy()) << "refused on the UI thread, nothing started";
  EXPECT_FALSE(lab.run.session.started());
  EXPECT_NE(lab.setup.formError.find("this training run needs about"), std::string::npos) << lab.setup.formError;
  EXPECT_NE(lab.setup.formError.find("memory budget of 64.0 MiB"), std::string::npos) << lab.setup.formError;
  EXPECT_NE(lab.setup.formError.find("the memory budget under Sizes"), std::string::npos) << "the window's control, not a flag";
}

TEST(TrainLabActions, TrainOnAFinishedRunSaysWhatHappens) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(1, 4));
  ASSERT_EQ(lab.run.view->step, 4);
  trainPlay(lab);  // same settings: nothing to do, and it says so
  EXPECT_FALSE(lab.run.busy());
  EXPECT_NE(lab.message.find("finished at step 4"), std::string::npos) << lab.message;
  // Only `steps` raised: the same run goes on from step 4.
  lab.setup.form.steps = 6;
  trainPlay(lab);
  finishTrainJob(lab);
  EXPECT_NE(lab.message.find("Continuing this run from step 4 to step 6"), std::string::npos) << lab.message;
  updateUntil(lab, [](const train::SessionView& v) { return v.state == train::RunState::Finished && v.step == 6; });
  EXPECT_EQ(lab.run.view->step, 6);
  EXPECT_EQ(lab.run.view->history.front().step, 0) << "the run's history goes on";
  // Other settings changed: a new run, and it says so.
  lab.setup.form.lr = 2e-3f;
  trainPlay(lab);
  finishTrainJob(lab);
  EXPECT_NE(lab.message.find("new run with the changed settings"), std::string::npos) << lab.message;
  EXPECT_EQ(lab.run.session.view()->settings->adam.lr, 2e-3f);
  lab.run.session.pause();
}

TEST(TrainLabActions, TheLayerSliderFollowsASmallerRun) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(2, 2));
  lab.openLayer = 1;
  updateTrainLab(lab);
  EXPECT_EQ(lab.openLayer, 1);
  lab.setup.form = smallForm(1, 2);
  trainReset(lab);
  finishTrainJob(lab);
  updateUntil(lab, settled);
  EXPECT_EQ(lab.openLayer, 0) << "a 1-layer run has only layer 0";
}

TEST(TrainLabActions, LoadingACheckpointWithoutHistoryInventsNothing) {
  // A run to step 4, saved with its history, and the same without it (as older files are).
  TrainLab lab;
  runToTheEnd(lab, smallForm(2, 4));
  auto c = lab.run.session.checkpoint();
  ASSERT_TRUE(c);
  const std::string with = tempPath("with_history.safetensors"), without = tempPath("without_history.safetensors");
  ASSERT_TRUE(train::saveCheckpoint(with, *c).ok());
  train::Checkpoint bare = *c;
  bare.history.clear();
  ASSERT_TRUE(train::saveCheckpoint(without, bare).ok());

  TrainLab loaded;
  loaded.files.checkpointPath = without;
  trainLoadCheckpoint(loaded);
  EXPECT_TRUE(loaded.run.busy()) << "read and decoded on the worker thread";
  finishTrainJob(loaded);
  EXPECT_TRUE(loaded.run.historyMissing);
  EXPECT_EQ(loaded.run.runStartStep, 4);
  EXPECT_NE(loaded.message.find("did not save its training history"), std::string::npos) << loaded.message;
  updateUntil(loaded, settled);
  EXPECT_FALSE(loaded.run.view->trainLossKnown) << "no train loss to show";
  // What the lesson would date at the load step says "by step 4".
  EXPECT_EQ(withoutUnsavedHistory("L0 h1 is a previous-token head (0.47 since step 4): each", 4),
            "L0 h1 is a previous-token head (0.47 by step 4): each");
  EXPECT_EQ(withoutUnsavedHistory("The circuit formed at step 4 (probe loss", 4),
            "The circuit had formed by step 4 (when exactly was not saved; probe loss");
  EXPECT_EQ(withoutUnsavedHistory("(0.47 since step 40)", 4), "(0.47 since step 40)");

  TrainLab full;
  full.files.checkpointPath = with;
  trainLoadCheckpoint(full);
  finishTrainJob(full);
  EXPECT_FALSE(full.run.historyMissing);
  EXPECT_EQ(full.message.find("did not save"), std::string::npos) << full.message;
  updateUntil(full, settled);
  EXPECT_EQ(full.run.view->history.front().step, 0) << "the saved curves come back";
  EXPECT_TRUE(full.run.view->trainLossKnown);
  std::remove(with.c_str());
  std::remove(without.c_str());
}

// A checkpoint keeps its sizes, not its batch: when the form's batch would not fit the budget, Load
// halves it until the run fits and says so, instead of refusing a file the commands read.
TEST(TrainLabActions, LoadLowersABatchThatWouldNotFitAndSaysSo) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(1, 2));
  auto c = lab.run.session.checkpoint();
  ASSERT_TRUE(c);
  const std::string path = tempPath("batch_fit.safetensors");
  ASSERT_TRUE(train::saveCheckpoint(path, *c).ok());
  TrainLab loaded;
  loaded.setup.form = smallForm(1, 2);
  loaded.setup.form.batch = 4096;
  TrainForm small = loaded.setup.form;
  small.batch = 2;
  const double fits = train::estimateTrainingMemory(settingsFromForm(small), c->task.vocab, 0).total();
  const double big = train::estimateTrainingMemory(settingsFromForm(loaded.setup.form), c->task.vocab, 0).total();
  ASSERT_LT(2 * fits, big);
  loaded.setup.memoryBudgetBytes = static_cast<std::uint64_t>(2 * fits);
  loaded.files.checkpointPath = path;
  trainLoadCheckpoint(loaded);
  finishTrainJob(loaded);
  EXPECT_FALSE(loaded.messageIsError) << loaded.message;
  EXPECT_LT(loaded.setup.form.batch, 4096);
  EXPECT_GE(loaded.setup.form.batch, 2);
  EXPECT_NE(loaded.message.find("batch lowered from 4096 to " + std::to_string(loaded.setup.form.batch)), std::string::npos)
      << loaded.message;
  std::remove(path.c_str());
}

TEST(TrainLabActions, AFailedLoadKeepsThePreviousRun) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(1, 2));
  const auto before = lab.run.session.view()->settings;
  const std::string bad = tempPath("bad.safetensors");
  std::ofstream(bad) << "not a checkpoint";
  lab.files.checkpointPath = bad;
  trainLoadCheckpoint(lab);
  finishTrainJob(lab);
  EXPECT_TRUE(lab.messageIsError);
  EXPECT_NE(lab.message.find(bad), std::string::npos) << lab.message;
  EXPECT_EQ(lab.run.session.view()->settings, before) << "the run on screen is the same";
  EXPECT_EQ(lab.messageAt, TrainLab::Said::Checkpoint) << "said beside Load checkpoint";
  std::remove(bad.c_str());
}

// A read cut (later layers' keys / queries / values only) is evaluated through the forward's read
// cuts, recomputed when only the cut changes (the same heads off), and said in words.
TEST(TrainLabAblation, AReadCutIsEvaluatedThroughTheForwardAndSaid) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(2, 4));
  updateTrainLab(lab);
  ASSERT_TRUE(lab.run.shown.evaluation);
  const auto params = paramsAt(*lab.run.view, lab.run.shown.step);
  ASSERT_TRUE(params);
  auto direct = [&](std::uint8_t bits) {
    train::HeadMask m = train::HeadMask::none(params->cfg);
    m.setReads(0, 1, bits);
    train::ForwardCache cache;
    auto r = train::evaluateAblated(*params, m, *lab.run.view->probe, lab.run.shown.step, cache);
    EXPECT_TRUE(r);
    return r->evaluation;
  };
  const double fullLoss = lab.run.view->history[lab.run.shown.index].loss;

  lab.ablation.setReadCut(0, 1, train::kReadKey, true);
  EXPECT_TRUE(lab.ablation.readCut(0, 1, train::kReadKey));
  updateTrainLab(lab);
  ASSERT_TRUE(lab.ablation.ablated);
  const train::Evaluation keys = direct(train::kReadKey);
  EXPECT_EQ(lab.run.shown.evaluation, &lab.ablation.ablated->evaluation) << "the table shows the cut run";
  EXPECT_DOUBLE_EQ(lab.ablation.ablated->evaluation.loss, keys.loss);
  EXPECT_NE(lab.ablation.ablated->evaluation.loss, fullLoss) << "layer 1's keys no longer read L0 h1's output";
  std::string text;
  for (const auto& p : lab.ablation.ablationText) text += p + " ";
  EXPECT_NE(text.find("layer 0 head 1 cut from later layers' keys"), std::string::npos) << text;
  EXPECT_NE(text.find("ln V"), std::string::npos) << text;

  // Keys back, queries cut: the same heads off, a different mask — recomputed, not the cached run.
  lab.ablation.setReadCut(0, 1, train::kReadKey, false);
  lab.ablation.setReadCut(0, 1, train::kReadQuery, true);
  EXPECT_NE(ablationMaskKey(lab.ablation.mask, 4), [] {
    train::HeadMask m;
    m.layers = 2;
    m.heads = 2;
    m.off.assign(4, false);
    m.setReads(0, 1, train::kReadKey);
    return ablationMaskKey(m, 4);
  }());
  updateTrainLab(lab);
  ASSERT_TRUE(lab.ablation.ablated);
  EXPECT_DOUBLE_EQ(lab.ablation.ablated->evaluation.loss, direct(train::kReadQuery).loss);
  text.clear();
  for (const auto& p : lab.ablation.ablationText) text += p + " ";
  EXPECT_NE(text.find("layer 0 head 1 cut from later layers' queries"), std::string::npos) << text;

  // Nothing cut: the run as trained, no ablation text.
  lab.ablation.setReadCut(0, 1, train::kReadQuery, false);
  updateTrainLab(lab);
  EXPECT_FALSE(lab.ablation.ablated);
  EXPECT_TRUE(lab.ablation.ablationText.empty());
  EXPECT_EQ(lab.run.shown.evaluation, &lab.run.view->history[lab.run.shown.index]);
  // Out of range (a button from a larger run's frame): ignored.
  lab.ablation.setReadCut(5, 0, train::kReadKey, true);
  EXPECT_FALSE(lab.ablation.mask.any());
}

// Two heads off: the lesson compares them with each alone (partly redundant heads).
TEST(TrainLabAblation, TwoHeadsOffAreComparedWithEachAlone) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(2, 4));
  updateTrainLab(lab);
  lab.ablation.setHeadOff(1, 0, true);
  lab.ablation.setHeadOff(1, 1, true);
  updateTrainLab(lab);
  std::string text;
  for (const auto& p : lab.ablation.ablationText) text += p + " ";
  EXPECT_NE(text.find("layer 1 head 0 and layer 1 head 1 off"), std::string::npos) << text;
  EXPECT_NE(text.find("Each alone: layer 1 head 0 alone"), std::string::npos) << text;
}

// The previous-token curve is the score at a token's first occurrence (what the circuit needs);
// the second score curve is prefix matching.
TEST(TrainLabFigures, TheCurvesPlotPreviousTokenAtFirstOccurrencesAndPrefixMatching) {
  TrainLab lab;
  runToTheEnd(lab, smallForm(2, 4));
  updateTrainLab(lab);
  const CurvesFigure fig = buildCurves(lab);
  ASSERT_EQ(fig.panels.size(), 4u);
  EXPECT_NE(fig.panels[2].title.find("first occurrences"), std::string::npos) << fig.panels[2].title;
  EXPECT_NE(fig.panels[3].title.find("prefix matching"), std::string::npos) << fig.panels[3].title;
  const auto& h = lab.run.view->history;
  const CurveSeries& l0h1 = fig.panels[2].series[1];
  ASSERT_EQ(l0h1.ys.size(), h.size());
  for (std::size_t k = 0; k < h.size(); ++k) {
    EXPECT_DOUBLE_EQ(l0h1.ys[k], h[k].at(0, 1).prevTokenNew);
    EXPECT_DOUBLE_EQ(fig.panels[3].series[1].ys[k], h[k].at(0, 1).induction);
  }
}

TEST(TrainLabFigures, TheGridSaysWhichTokensItLabels) {
  EXPECT_EQ(tokenLabelNote(32, 416, 416, 13), "every token labelled");
  EXPECT_EQ(tokenLabelNote(32, 128, 128, 13), "every 4th token labelled (hover a cell for its tokens)");
  EXPECT_EQ(tokenLabelNote(32, 150, 150, 13), "every 3rd token labelled (hover a cell for its tokens)");
  EXPECT_EQ(tokenLabelNote(32, 230, 150, 13), "every 2nd query and every 3rd key labelled (hover a cell for its tokens)");
}

// The pipeline's Circuits tab keeps a checkpoint's result per (path, text, file size + mtime): an
// edited text or a re-saved file gives another key, so the checkpoint is read again.
TEST(CircuitsCheckpointKey, ChangesWithTheTextAndARewriteOfTheFile) {
  const std::string path = ::testing::TempDir() + "mhascope_circuits_key.safetensors";
  { std::ofstream(path) << "first"; }
  const std::string first = checkpointCircuitsKey(path, "abc");
  EXPECT_EQ(checkpointCircuitsKey(path, "abc"), first);
  EXPECT_NE(checkpointCircuitsKey(path, "abd"), first);
  { std::ofstream(path) << "re-saved, longer"; }
  EXPECT_NE(checkpointCircuitsKey(path, "abc"), first);
  std::remove(path.c_str());
  EXPECT_NE(checkpointCircuitsKey(path, "abc").find("missing"), std::string::npos);
}

}  // namespace
}  // namespace mhascope::app

namespace mhascope::app {

// The run's timeline page (Export timeline, train --timeline): a frame per kept picture, by step,
// each head's attention then as the snapshot holds it (keys after the query blocked) and its role
// then; the curves the Train mode draws, every evaluation.
TEST(TrainTimeline, AFramePerKeptPictureWithEachHeadsRoleThenAndTheCurves) {
  train::TrainSettings s;
  s.model.layers = 2;
  s.model.heads = 2;
  s.model.dModel = 16;
  s.task.seq = 12;
  s.task.vocab = 16;
  s.task.periodMin = 3;
  s.task.periodMax = 5;
  s.batch = 4;
  s.steps = 20;
  auto tr = train::Trainer::make(s);
  ASSERT_TRUE(tr) << tr.error().message;
  std::vector<train::Snapshot> kept;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      for (int k = 0; k < 10; ++k) ASSERT_TRUE(tr->step());
    }
    ASSERT_TRUE(tr->evaluate());
    for (train::Snapshot& p : tr->takeSnapshots()) kept.push_back(std::move(p));
  }
  ASSERT_EQ(kept.size(), 3u);
  std::vector<const train::Snapshot*> snaps{&kept[2], &kept[0], &kept[1]};  // any order
  std::vector<std::string> tokens;
  for (int t = 0; t < 12; ++t) tokens.push_back(tr->task().symbol(tr->probeBatch().tokens[static_cast<std::size_t>(t)]));
  auto page = trainingTimelinePage(tr->history(), snaps, tokens, 2, 2, "run");
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->frames.size(), 3u);
  EXPECT_EQ(page->gridColumns, 2);
  for (std::size_t f = 0; f < 3; ++f) {
    EXPECT_EQ(page->frames[f].step, static_cast<std::int64_t>(10 * f));
    ASSERT_EQ(page->frames[f].slices.size(), 4u);
    const train::Snapshot& snap = kept[f];
    const Slice2D& s10 = page->frames[f].slices[2];  // layer 1 head 0
    for (int q = 0; q < 12; ++q) {
      for (int k = 0; k < 12; ++k) {
        ASSERT_EQ(s10.at(q, k), snap.weights[(2u * 144u) + static_cast<std::size_t>(q * 12 + k)]);
        ASSERT_EQ(s10.isBlockedCell(q, k), k > q);
      }
    }
    const auto& e = tr->history()[f];
    EXPECT_EQ(page->frames[f].notes[2], "step " + std::to_string(e.step) + ": " + roleOf(roleScoresOf(e.at(1, 0), 1)));
  }
  // probe loss, accuracy, then each head's previous-token and prefix-matching lines, each over 3 steps
  ASSERT_EQ(page->curves.size(), 2u + 4u + 4u);
  EXPECT_EQ(page->curves[0].name, "probe loss");
  EXPECT_EQ(page->curves[0].values[2], tr->history()[2].loss);
  EXPECT_EQ(page->curves.back().values[1], tr->history()[1].at(1, 1).induction);
  auto html = renderHtml(*page);
  ASSERT_TRUE(html) << html.error().message;
  // No picture kept: said.
  auto none = trainingTimelinePage(tr->history(), {}, tokens, 2, 2, "run");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no attention pictures"), std::string::npos);
}

}  // namespace mhascope::app
