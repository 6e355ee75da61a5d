// The training session: a run on its own thread, driven by play / pause / step / reset, read
// through published views; the same seed gives the same parameters as the plain Trainer.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "train/session.hpp"
#include <vector>

#include "small_settings.hpp"

using namespace mhascope;
using namespace mhascope::train;

namespace {
TrainSettings small(std::int64_t steps) { return fixtures::smallInduction(steps); }

// Waits (bounded) until pred(view) holds; returns the view that satisfied it (or the last one).
template <class Pred>
std::shared_ptr<const SessionView> waitFor(const TrainingSession& s, Pred pred, double seconds = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto v = s.view();
  while (!pred(*v) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    v = s.view();
  }
  return v;
}
}  // namespace

// reset() returns before the starting parameters are evaluated (a window's Train click must not
// wait ~20 ms for it): the thread evaluates them first, and a held frame delays that like a step.
TEST(TrainSession, ResetReturnsBeforeTheFirstEvaluationWhichTheThreadPublishes) {
  TrainingSession s;
  s.holdSteps(10.0);
  ASSERT_TRUE(s.reset(small(40), 10).ok());
  auto v = s.view();
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->evaluating);
  EXPECT_TRUE(v->history.empty());
  EXPECT_TRUE(v->snapshots.empty());
  ASSERT_NE(v->probe, nullptr) << "settings, task and probe are there at once";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(s.view()->history.empty()) << "held: the evaluation waits for the frame";
  s.releaseSteps();
  v = waitFor(s, [](const SessionView& x) { return !x.history.empty(); });
  EXPECT_FALSE(v->evaluating);
  ASSERT_EQ(v->history.size(), 1u);
  EXPECT_EQ(v->history[0].step, 0);
  ASSERT_EQ(v->snapshots.size(), 1u);
  EXPECT_EQ(s.view()->step, 0) << "evaluated, not trained";
}

TEST(TrainSession, ResetEvaluatesStepZeroAndWaitsPaused) {
  TrainingSession s;
  EXPECT_FALSE(s.started());
  EXPECT_EQ(s.view(), nullptr);
  ASSERT_TRUE(s.reset(small(40), 10).ok());
  auto v = waitFor(s, [](const SessionView& x) { return !x.evaluating; });
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->state, RunState::Paused);
  EXPECT_EQ(v->step, 0);
  EXPECT_EQ(v->lastStep, 40);
  ASSERT_EQ(v->history.size(), 1u);
  ASSERT_EQ(v->snapshots.size(), 1u);
  ASSERT_EQ(v->params.size(), 1u);
  EXPECT_EQ(v->probe->batch, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(s.view()->step, 0) << "a paused session must not train";
}

TEST(TrainSession, PlayRunsToTheEndWithTheTrainersParameters) {
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(40), 10).ok());
  s.play();
  auto v = waitFor(s, [](const SessionView& x) { return x.state == RunState::Finished; });
  ASSERT_EQ(v->state, RunState::Finished) << runStateName(v->state);
  EXPECT_EQ(v->step, 40);
  ASSERT_EQ(v->history.size(), 5u);  // steps 0, 10, 20, 30, 40
  EXPECT_EQ(v->history.back().step, 40);
  EXPECT_EQ(v->snapshots.back()->step, 40);
  ASSERT_EQ(v->snapshots.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(v->snapshots[i]->step, static_cast<std::int64_t>(10 * i));
  EXPECT_EQ(v->params.back().step, 40);
  auto t = Trainer::make(small(40));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(t->step().ok());
  EXPECT_EQ(v->params.back().params->outW, t->params().outW);
  auto c = s.checkpoint();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->step, 40);
  EXPECT_EQ(c->params.emb, t->params().emb);
  s.play();  // finished: nothing more
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(s.view()->step, 40);
}

// The one rule of `mhascope train` and the window: a run continued from a checkpoint at step 20
// ends at `steps` (31), and its evaluations fall on the multiples of eval-every counted from step
// 0, plus the last step — the command line's test checks the same run's printed steps.
TEST(TrainSession, AContinuedRunEndsAtStepsAndEvaluatesOnTheMultiplesFromZero) {
  auto first = Trainer::make(small(20));
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(first->step().ok());
  ASSERT_TRUE(first->evaluate().ok());
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(31), 4, first->checkpoint()).ok());
  s.play();
  auto v = waitFor(s, [](const SessionView& x) { return x.state == RunState::Finished; });
  ASSERT_EQ(v->state, RunState::Finished) << runStateName(v->state);
  EXPECT_EQ(v->step, 31);
  std::vector<std::int64_t> steps;
  for (const Evaluation& e : v->history)
    if (e.step >= 20) steps.push_back(e.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{20, 24, 28, 31}));
}

TEST(TrainRule, EvaluationsAtTheMultiplesFromZeroAndAtTheLastStep) {
  EXPECT_TRUE(evaluationDue(24, 31, 4));
  EXPECT_FALSE(evaluationDue(25, 31, 4));
  EXPECT_TRUE(evaluationDue(31, 31, 4)) << "the last step";
  EXPECT_TRUE(evaluationDue(40, 31, 4)) << "past the end (a run loaded beyond it)";
  EXPECT_FALSE(evaluationDue(7, 31, 0)) << "no multiples: only the last step";
}

// A long run's kept pictures and parameters stay within their limits: every other old one is dropped,
// the first and the last stay.
TEST(TrainSession, KeptPicturesAndParametersStayWithinTheirLimits) {
  TrainingSession s;
  const TrainSettings settings = small(60);
  auto probe = Trainer::make(settings);
  ASSERT_TRUE(probe.ok());
  const std::size_t picture = static_cast<std::size_t>(settings.model.layers) * settings.model.heads *
                              settings.task.seq * settings.task.seq * sizeof(float);
  const std::size_t params = static_cast<std::size_t>(probe->params().count()) * sizeof(float);
  s.keepWithin(5 * params, 4 * picture);
  ASSERT_TRUE(s.reset(settings, 2).ok());
  s.play();
  auto v = waitFor(s, [](const SessionView& x) { return x.state == RunState::Finished; });
  ASSERT_EQ(v->state, RunState::Finished) << runStateName(v->state);
  EXPECT_EQ(v->history.size(), 31u) << "every evaluation's scores are kept";
  ASSERT_GE(v->snapshots.size(), 2u);
  EXPECT_LE(v->snapshots.size(), 4u);
  EXPECT_EQ(v->snapshots.front()->step, 0);
  EXPECT_EQ(v->snapshots.back()->step, 60);
  EXPECT_LE(v->params.size(), 5u);
  EXPECT_EQ(v->params.front().step, 0);
  EXPECT_EQ(v->params.back().step, 60);
}

TEST(TrainSession, StepAdvancesExactlyAndPauseStops) {
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(100000), 25).ok());
  s.step(3);
  auto v = waitFor(s, [](const SessionView& x) { return x.step >= 3; });
  EXPECT_EQ(v->step, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(s.view()->step, 3);
  EXPECT_EQ(s.view()->state, RunState::Paused);
  s.play();
  v = waitFor(s, [](const SessionView& x) { return x.step >= 60; });
  EXPECT_GE(v->step, 60);
  s.pause();
  const std::int64_t at = s.view()->step;
  EXPECT_EQ(s.view()->state, RunState::Paused);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(s.view()->step, at) << "pause() returns only once no step is in flight";
  auto c = s.checkpoint();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->step, at);
}

TEST(TrainSession, HoldStepsStartsNoStepUntilReleasedOrExpired) {
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(100000), 25).ok());
  s.holdSteps(60.0);  // a frame being drawn
  s.step(5);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(s.view()->step, 0) << "no step may start while the window holds them";
  s.releaseSteps();
  auto v = waitFor(s, [](const SessionView& x) { return x.step >= 5; });
  EXPECT_EQ(v->step, 5);
  // A hold never released ends by itself (a frame that never finished must not stop the run).
  const auto held = std::chrono::steady_clock::now();
  s.holdSteps(0.15);
  s.step(3);
  v = waitFor(s, [](const SessionView& x) { return x.step >= 8; });
  EXPECT_EQ(v->step, 8);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - held).count(), 0.14);
  s.play();  // pause() and a hold together: pause still returns
  s.holdSteps(60.0);
  s.pause();
  EXPECT_EQ(s.view()->state, RunState::Paused);
}

TEST(TrainSession, ReportsStepsPerSecondWhileRunning) {
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(100000), 50).ok());
  s.play();
  auto v = waitFor(s, [](const SessionView& x) { return x.stepsPerSecond > 0; });
  EXPECT_GT(v->stepsPerSecond, 0);
  s.pause();
  EXPECT_EQ(s.view()->stepsPerSecond, 0);
}

TEST(TrainSession, TimesTheRunLikeTheCommandLine) {
  // The steps since play(), the time inside Trainer::step (what `mhascope train` divides by) and
  // the wall time from play() to the last step, which also holds the evaluations.
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(30), 10).ok());
  ASSERT_TRUE(s.view()->runSteps == 0 && s.view()->runStepSeconds == 0);
  s.step(5);
  waitFor(s, [](const SessionView& x) { return x.step == 5 && x.state == RunState::Paused; });
  s.play();  // the counts start again at play()
  auto v = waitFor(s, [](const SessionView& x) { return x.state == RunState::Finished; });
  ASSERT_EQ(v->state, RunState::Finished);
  EXPECT_EQ(v->runSteps, 25);
  EXPECT_GT(v->runStepSeconds, 0);
  EXPECT_GE(v->runWallSeconds, v->runStepSeconds);
}

TEST(TrainSession, ADivergingRunFailsWithTheReasonAndKeepsItsLastGoodStep) {
  TrainingSession s;
  TrainSettings bad = small(1000);
  bad.adam.lr = 1e30f;
  bad.adam.weightDecay = 0;  // lr × wd must stay below 1
  ASSERT_TRUE(s.reset(bad, 5).ok());
  s.play();
  auto v = waitFor(s, [](const SessionView& x) { return x.state == RunState::Failed; });
  ASSERT_EQ(v->state, RunState::Failed);
  EXPECT_NE(v->error.find("learning rate"), std::string::npos) << v->error;
  EXPECT_LT(v->step, 1000);
  s.play();  // failed: stays failed until reset
  EXPECT_EQ(s.view()->state, RunState::Failed);
  ASSERT_TRUE(s.reset(small(10), 5).ok());
  EXPECT_EQ(s.view()->state, RunState::Paused);
  EXPECT_TRUE(s.view()->error.empty());
}

TEST(TrainSession, InvalidSettingsAreRefusedAndTheRunningSessionIsKept) {
  TrainingSession s;
  ASSERT_TRUE(s.reset(small(50), 10).ok());
  s.step(2);
  waitFor(s, [](const SessionView& x) { return x.step >= 2; });
  TrainSettings bad = small(50);
  bad.batch = 0;
  Status r = s.reset(bad, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("batch"), std::string::npos) << r.error().message;
  EXPECT_EQ(s.view()->step, 2);
  EXPECT_FALSE(s.reset(small(50), 0).ok());
}

TEST(TrainSession, DestroyingARunningSessionStopsItsThread) {
  for (int i = 0; i < 3; ++i) {
    TrainingSession s;
    ASSERT_TRUE(s.reset(small(100000), 25).ok());
    s.play();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }  // the destructor joins; a hang here times the test out
  SUCCEED();
}
