// The Train mode in the last workspace: the mode, the task and the setup form come back at the
// next launch ("train" block; files without it give the defaults), all or nothing like the rest;
// and the Train mode's frame pacing while training.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/train_command.hpp"
#include "state/session.hpp"
#include "train_lab/lab_state.hpp"

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
  // The documented reference setting (README, `bench --train`): induction, 2 layers of h = 2,
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
  lab.workSeconds = 0.001;  // a cheap frame still waits 1/4 s
  EXPECT_DOUBLE_EQ(lab.tickSeconds(), 0.25);
  lab.workSeconds = 0.040;  // 40 ms of work: 320 ms of wait
  EXPECT_NEAR(lab.tickSeconds(), 0.32, 1e-12);
  lab.workSeconds = 1.0;
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
  lab.session.holdSteps(10.0);  // keeps the first evaluation back
  auto st = lab.session.reset(small, 50);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(lab.animating()) << "a view not shown yet";
  lab.view = lab.session.view();
  ASSERT_TRUE(lab.view->evaluating);
  EXPECT_TRUE(lab.animating()) << "shown, but the first evaluation is still to come: keep ticking";
  lab.session.releaseSteps();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (lab.session.view()->evaluating && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_FALSE(lab.session.view()->evaluating);
  EXPECT_TRUE(lab.animating()) << "the evaluation was published, not shown yet";
  lab.view = lab.session.view();
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
  ASSERT_TRUE(lab.session.reset(small, 50).ok());
  lab.holdStepsForFrame(10.0);
  EXPECT_FALSE(lab.holding) << "paused: nothing to hold";
  lab.releaseFrameHold();
  lab.session.play();  // `lab.view` is still the paused one: the frame right after Train holds
  lab.holdStepsForFrame(10.02);
  EXPECT_TRUE(lab.holding);
  lab.releaseFrameHold();
  EXPECT_FALSE(lab.holding) << "released once swapped";
  lab.holdStepsForFrame(10.2);  // input 0.18 s later: drawn without holding
  EXPECT_FALSE(lab.holding);
  lab.releaseFrameHold();
  lab.holdStepsForFrame(10.27);
  EXPECT_TRUE(lab.holding);
  lab.releaseFrameHold();
  lab.active = false;  // the pipeline view's frames never hold
  lab.holdStepsForFrame(11.0);
  EXPECT_FALSE(lab.holding);
  lab.releaseFrameHold();
  lab.session.pause();
}

}  // namespace
}  // namespace mhascope::app
