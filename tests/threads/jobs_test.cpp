// The window's one job system (shell/jobs.hpp, state/job_slot.hpp): latest request wins, cancel
// through the ticket, the previous result kept beside an error, stopped inputs not rerun by
// themselves, sync for tests and screenshots — on a real worker thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "shell/jobs.hpp"
#include "state/job_slot.hpp"

namespace mhascope::app {
namespace {

using Slot = JobSlot<int, std::string>;
using Job = KeyedJob<int, std::string>;

// A job for key k: waits until released (or cancelled) step by step, then says "result k";
// a negative key fails.
struct Gate {
  std::atomic<bool> open{false};
};

auto makeWork(std::shared_ptr<Gate> gate) {
  return [gate](int key) {
    return [gate, key](const std::shared_ptr<JobTicket>& t) {
      Slot::Outcome out;
      out.key = key;
      for (int step = 0; step < 1000 && !gate->open; ++step) {
        if (!t->step(step, 1000)) {
          out.cancelled = true;
          return out;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (key < 0) out.error = "key " + std::to_string(key) + " is negative";
      else out.result = std::make_shared<const std::string>("result " + std::to_string(key));
      return out;
    };
  };
}

// Runs update until no job is under way.
void settle(Job& job, Slot& s, const std::optional<int>& want, const std::shared_ptr<Gate>& gate, JobRule rule = {}) {
  for (int i = 0; i < 4000 && (s.busy() || job.busy()); ++i) {
    job.collect(s);
    job.request(s, want, makeWork(gate), rule);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  job.collect(s);
}

TEST(KeyedJob, TheLatestRequestWinsAndAReplacedJobIsCancelled) {
  Job job;
  Slot s;
  auto gate = std::make_shared<Gate>();
  job.request(s, 1, makeWork(gate));
  ASSERT_TRUE(s.busy());
  const auto first = s.job;
  job.request(s, 1, makeWork(gate));  // the running job is the wanted one: nothing new
  EXPECT_EQ(s.job, first);
  job.request(s, 2, makeWork(gate));
  EXPECT_TRUE(first->cancel.load()) << "a replaced job stops at its next step";
  EXPECT_EQ(s.jobKey, 2);
  gate->open = true;
  settle(job, s, 2, gate);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(*s.result, "result 2");
  EXPECT_EQ(s.resultKey, 2);
  EXPECT_EQ(s.status(2, ""), "ready");
  EXPECT_EQ(s.resultSerial, 1u) << "the cancelled job's outcome was dropped";
}

TEST(KeyedJob, AnErrorKeepsThePreviousResultAndIsNotRerunUntilAskedAgain) {
  Job job;
  Slot s;
  auto gate = std::make_shared<Gate>();
  gate->open = true;
  job.request(s, 3, makeWork(gate));
  settle(job, s, 3, gate);
  ASSERT_TRUE(s.result);
  job.request(s, -1, makeWork(gate));
  settle(job, s, -1, gate);
  EXPECT_EQ(*s.result, "result 3");
  EXPECT_EQ(s.status(-1, ""), "error: key -1 is negative");
  job.request(s, -1, makeWork(gate));
  EXPECT_FALSE(s.busy()) << "failed inputs are said again, not rerun";
  job.request(s, 3, makeWork(gate));  // back to what is shown: no error, nothing runs
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(s.status(3, ""), "ready");
  s.computeAgain();
  job.request(s, -1, makeWork(gate));
  EXPECT_TRUE(s.busy());
  settle(job, s, -1, gate);
}

TEST(KeyedJob, CancelledInputsStayStoppedWhileOthersSucceed) {
  Job job;
  Slot s;
  auto gate = std::make_shared<Gate>();
  job.request(s, 4, makeWork(gate));
  s.requestCancel();
  settle(job, s, 4, gate);
  EXPECT_EQ(s.status(4, ""), "cancelled");
  gate->open = true;
  job.request(s, 5, makeWork(gate));
  settle(job, s, 5, gate);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(*s.result, "result 5");
  job.request(s, 4, makeWork(gate));  // back to the cancelled inputs: still cancelled
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(s.status(4, ""), "cancelled");
}

TEST(KeyedJob, RulesHoldClearWhenIdleAndSync) {
  Job job;
  Slot s;
  auto gate = std::make_shared<Gate>();
  JobRule sync;
  sync.sync = true;
  gate->open = true;
  job.request(s, 6, makeWork(gate), sync);  // ran here: the result is in at once
  ASSERT_TRUE(s.result);
  EXPECT_FALSE(s.busy());
  gate->open = false;
  job.request(s, 7, makeWork(gate));
  const auto running = s.job;
  JobRule hold;
  hold.hold = true;
  job.request(s, 8, makeWork(gate), hold);
  EXPECT_EQ(s.job, running) << "held: the running job goes on";
  EXPECT_FALSE(running->cancel.load());
  job.request(s, std::nullopt, makeWork(gate));  // nothing wanted: cancelled, the result stays
  EXPECT_TRUE(running->cancel.load());
  EXPECT_FALSE(s.busy());
  EXPECT_TRUE(s.result);
  JobRule clear;
  clear.clearWhenIdle = true;
  const auto serial = s.resultSerial;
  job.request(s, std::nullopt, makeWork(gate), clear);
  EXPECT_FALSE(s.result);
  EXPECT_GT(s.resultSerial, serial) << "texture keys of the cleared result are not reused";
}

TEST(LatestJob, WaitsUntilIdleAndKeepsOnlyTheLastResult) {
  LatestJob<int> worker;
  std::atomic<bool> started{false}, go{false};
  worker.submit([&] {
    started = true;
    while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 1;
  });
  // The next submit would replace the first job if the worker had not taken it yet (then job 3
  // could finish before busy() is asked): wait until it runs.
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  worker.submit([] { return 2; });  // replaces nothing running, waits behind it
  worker.submit([] { return 3; });  // replaces the queued one
  EXPECT_TRUE(worker.busy());
  go = true;
  worker.waitUntilIdle();
  EXPECT_FALSE(worker.busy());
  EXPECT_EQ(worker.take(), std::optional<int>(3));
  EXPECT_EQ(worker.take(), std::nullopt);
}

// One result at a time (the trace's job: a result holds its buffers): the next job starts only
// once the last result was taken; the result callback runs when take() can already return it.
TEST(LatestJob, OneResultAtATimeHoldsTheNextJobUntilTheResultIsTaken) {
  LatestJob<int> worker(LatestJobOptions{true});
  std::atomic<int> calls{0};
  std::atomic<bool> waitingAtCallback{false};
  worker.setOnResult([&] {
    // The first result: nothing here takes it before the 50 ms below.
    if (calls == 0) waitingAtCallback = worker.resultWaiting();
    ++calls;
  });
  worker.submit([] { return 1; });
  while (!worker.resultWaiting()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> secondRan{false};
  worker.submit([&] {
    secondRan = true;
    return 2;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(secondRan) << "started while the first result waited";
  EXPECT_TRUE(worker.busy());
  EXPECT_EQ(worker.take(), std::optional<int>(1));
  worker.waitUntilIdle();
  EXPECT_TRUE(secondRan);
  EXPECT_EQ(worker.take(), std::optional<int>(2));
  while (calls < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(waitingAtCallback) << "the callback came before the result could be taken";
}

// Chores run on the job's thread, before the next job, never replaced by a submit; one due later
// waits until its time.
TEST(LatestJob, ChoresRunOnItsThreadInOrderAndADueOneWaitsUntilItsTime) {
  LatestJob<int> worker;
  std::thread::id jobThread, choreThread;
  std::atomic<int> chores{0};
  std::atomic<bool> late{false};
  std::chrono::steady_clock::time_point lateAt;
  worker.submit([&] {
    jobThread = std::this_thread::get_id();
    return 1;
  });
  worker.waitUntilIdle();
  ASSERT_EQ(worker.take(), std::optional<int>(1));
  const auto start = std::chrono::steady_clock::now();
  worker.post([&] {
    lateAt = std::chrono::steady_clock::now();
    late = true;
  }, start + std::chrono::milliseconds(150));
  worker.post([&] {
    choreThread = std::this_thread::get_id();
    ++chores;
  });
  worker.post([&] { ++chores; });
  worker.submit([] { return 2; });
  worker.waitUntilIdle();
  while (chores < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(choreThread, jobThread);
  EXPECT_NE(choreThread, std::this_thread::get_id());
  EXPECT_EQ(worker.take(), std::optional<int>(2));
  while (!late && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(late);
  EXPECT_GE(lateAt - start, std::chrono::milliseconds(150)) << "a chore ran before its time";
}

}  // namespace
}  // namespace mhascope::app
