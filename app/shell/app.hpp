// App: the window's lifetime and its frame loop.
//   events → (script input) → compute update → ImGui frame (keys, play, panels) → render
//   → textures.endFrame() → (screenshot) → swap
// It owns the state structs, the texture cache and the compute scheduler; panels only draw. The
// pieces it drives live next to it: compute_scheduler (trace and lesson results), fonts, ini,
// session_store, frame_pacing (idle waiting, settling), frame_bench (--bench-frames); input
// scripts reach the app through testing/script_host.hpp, not through App.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "platform/window.hpp"
#include "render/see_as_pass.hpp"
#include "render/texture_cache.hpp"
#include "shell/compare_compute.hpp"
#include "shell/compute_scheduler.hpp"
#include "shell/fonts.hpp"
#include "shell/frame_bench.hpp"
#include "shell/frame_pacing.hpp"
#include "shell/experiments_compute.hpp"
#include "shell/model_view_compute.hpp"
#include "practice/practice_compute.hpp"
#include "shell/ini.hpp"
#include "shell/launch_options.hpp"
#include "shell/loop_control.hpp"
#include "shell/session_store.hpp"
#include "state/pipeline_session.hpp"
#include "state/ui_context.hpp"
#include "testing/input_script.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

class AppScriptHost;

class App {
 public:
  explicit App(LaunchOptions options);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Opens the window and runs until it closes; returns the process exit code
  // (2: no display / no GL 3.3, with a one-line message and a hint on stderr).
  int run();

 private:
  bool initialise();             // window, ImGui, fonts, ini, first config
  bool initialiseImGui();        // context, style, backends
  void shutdown();
  bool applyLaunchOptions();     // preset, stage, view; false on a bad option (message printed)
  bool applyModelOptions();      // --text, --weights …: resolved as `export` does (message printed)
  bool automated() const;        // a script, a screenshot or the benchmark drives the loop

  void frame();                  // one iteration of the loop
  void updateCompute();
  void render(const FramebufferSize& fb, bool bench, double tUi);  // GL, screenshot, swap
  void handleKeys();
  void advancePlay(double dt);

  LaunchOptions options_;
  std::unique_ptr<Window> window_;
  PipelineSession pipeline_;     // the pipeline's state, view and lesson choices
  TextureCache textures_;
  SeeAsPass seeAs_;              // the "see as" preview over the whole frame
  UiProbes probes_;
  std::unique_ptr<ComputeScheduler> scheduler_;
  std::unique_ptr<CompareCompute> compareCompute_;  // the Compare tab's side B
  std::unique_ptr<ModelViewCompute> modelViewCompute_;  // the Model tab's every layer and head
  std::unique_ptr<ExperimentsCompute> experimentsCompute_;  // the Experiments tab's patching and attribution
  std::unique_ptr<PracticeCompute> practiceCompute_;    // the Practice mode's file watch and check
  std::optional<InputScript> script_;
  std::unique_ptr<AppScriptHost> scriptHost_;
  LoopControl loop_;
  Fonts fonts_;
  IniFile ini_;
  SessionStore session_;
  FramePacer pacer_;
  KeyTaps keyTaps_;
  FrameBench bench_;
  TrainLab trainLab_;             // the Train mode (app/train_lab/)
  CircuitsTab circuitsTab_;       // the pipeline's Circuits tab (app/circuits/)
  PracticeState practice_;        // the Practice mode (app/practice/)
  double lastFrameTime_ = 0.0;
  double frameStart_ = 0.0;        // after the wait: a frame's drawing time starts here
  FrameWork frameWork_;            // smoothed drawing time (the computing tick)
  double sessionCheckedAt_ = -1.0;  // the session is compared with the saved one once a second
  int framesDrawn_ = 0;
  bool heapWarmed_ = false;         // warmHeap() done (after the first frame)
};

}  // namespace mhascope::app
