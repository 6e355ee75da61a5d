// The compute scheduler: turns a changed configuration into a new trace (with its model and
// quiz), and changed lesson choices into new lesson results — small jobs right away on the UI
// thread, before the frame is drawn; big ones on background threads, the latest request winning.
// Panels then only read AppState; nothing is computed in a draw call.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "shell/compute_worker.hpp"
#include "shell/jobs.hpp"
#include "state/app_state.hpp"

namespace mhascope::app {

class ComputeScheduler {
 public:
  // Once per frame, before ImGui's frame. `openTab` is the main tab on screen (the Rerun
  // lessons run only for their own tab); `forceSync`: tests, screenshots and the benchmark want
  // the picture of exactly this state, now.
  void update(AppState& state, const ViewState& view, LessonView& lessons, const std::string& openTab, bool forceSync);
  // Called on the worker's thread when a computed trace is ready (ComputeWorker::setResultReady).
  void setResultReady(std::function<void()> wake) { worker_.setResultReady(std::move(wake)); }
  // The model folders' tokenizers and the residual streams their layers leave for the next
  // request of the same folder and text (a change of layer then runs only the layers between);
  // shared with the Model and Circuits tabs' jobs.
  void setCaches(ModelCaches caches) { caches_ = std::move(caches); }

 private:
  // A Rerun lesson's result from lessonJob_: what it is for, and how it goes into its slot.
  struct RerunOutcome {
    LessonKey key;
    std::size_t lesson = 0;  // index in AllLessons
    std::function<void(LessonResults&)> store;
  };

  void applyOutcome(AppState& state, ComputeOutcome& outcome, Trace& computed);
  void updateTrace(AppState& state, const ViewState& view, bool forceSync);
  void updateQuickLessons(AppState& state, const ViewState& view, LessonView& lessons);
  void updateRerunLessons(AppState& state, const LessonView& lessons, const std::string& openTab, bool forceSync);
  template <class L>
  void rerun(AppState& state, const typename L::Choices& choices, bool forceSync);
  static void store(AppState& state, RerunOutcome& outcome);

  ModelCaches caches_;
  ComputeWorker worker_;
  Trace spare_;                  // synchronous computes fill this, then swap with state.shown.trace
  std::uint64_t requestCounter_ = 0;
  std::uint64_t shownRequest_ = 0;
  LatestJob<RerunOutcome> lessonJob_;
  std::array<LessonKey, AllLessons::kCount> lessonRequested_;  // per lesson: submitted to lessonJob_, not yet taken
};

// Whether work of this many multiply-adds (passes forward passes at these sizes) fits within a
// frame on the UI thread. dk 0: d_model / h.
bool fitsUiThread(std::int64_t batch, std::int64_t tq, std::int64_t tk, int dModel, int heads, int dk,
                  double passes = 1.0);

}  // namespace mhascope::app
