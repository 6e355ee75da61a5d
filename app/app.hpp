// App: the window's lifetime and its frame loop.
//   events → (script input) → compute update → ImGui frame (keys, play, panels) → render
//   → textures.endFrame() → (screenshot) → swap
// It owns the state structs, the texture cache and the compute worker; panels only draw.
#pragma once

#include <imgui.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "compute_worker.hpp"
#include "input_script.hpp"
#include "launch_options.hpp"
#include "panels/lesson_common.hpp"
#include "platform/window.hpp"
#include "train/lab_state.hpp"
#include "render/texture_cache.hpp"
#include "ui_context.hpp"

namespace mhascope::app {

class App final : public ScriptHost {
 public:
  explicit App(LaunchOptions options);
  ~App() override;
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Opens the window and runs until it closes; returns the process exit code
  // (2: no display / no GL 3.3, with a one-line message and a hint on stderr).
  int run();

  // ScriptHost
  bool probePoint(const std::string& name, float fx, float fy, ImVec2& out) override;
  std::string currentStageName() override;
  int configHeads() override { return state_.config.heads; }
  bool configInvalid() override { return !state_.configError.empty(); }
  void setExportFolder(const std::string& path) override { view_.exportUi.folder = path; }
  std::string exportMessage(bool& isError) override {
    isError = view_.exportUi.messageIsError;
    return view_.exportUi.message;
  }
  void resize(int w, int h) override;
  void zeroFramebuffer(int frames) override { zeroFramesLeft_ = frames; }
  void churnStep(int i) override;
  void setAsync(bool on) override { scriptAsync_ = on; }
  std::string loadPresetByName(const std::string& name) override;
  bool computing() override { return state_.computing; }
  int shownTokens() override { return state_.trace.tq; }
  int textureCount() override;
  int glErrorCount() override { return glErrors_; }
  void requestScreenshot(const std::string& path) override { screenshotPath_ = path; }
  void quit(int exitCode) override;
  std::vector<std::string> probeNames() override { return probes_.names(); }
  std::vector<std::string> tabTitles() override;
  void selectTab(const std::string& title) override {
    view_.selectTab = title;
    trainLab_.active = title == kTrainModeTitle;  // the exploration test visits the Train mode as a tab
  }
  bool itemHovered() override;
  void setEventDriven(bool on) override { eventDriven_ = on; }
  std::string sessionSummary() override;
  void stopPlay() override { view_.playing = false; }
  std::string shownLabel(const std::string& name) override;
  void dropPath(const std::string& path) override { trainDropPath(trainLab_, path); }

 private:
  bool initialise();             // window, ImGui, fonts, ini, first config
  void shutdown();
  bool applyLaunchOptions();     // preset, stage, view; false on a bad option (message printed)
  void setupFonts(float scale);  // DejaVu from fonts-dejavu-core, or ImGui's default font
  void loadIni();
  void saveIni();
  bool sessionEnabled() const;   // interactive and scripted runs; not screenshots, benchmarks, --fresh
  void restoreSession();         // the last session, where no launch option says otherwise
  void saveSession();            // atomically, next to imgui.ini

  void frame();                  // one iteration of the loop
  void updateCompute();          // take worker results; turn a dirty config into a request
  void applyOutcome(const ComputeOutcome& outcome, Trace& computed);
  bool computeSynchronously(const ModelConfig& config) const;
  void handleKeys();
  void advancePlay(double dt);
  void drawUi();
  bool wantsAnimation() const;   // playing or computing: poll instead of waiting for events
  // How the loop waits before the next frame (and the settle frames that follow any wake-up).
  enum class Wake { Now, Tick, TrainTick, Event };
  Wake scheduleFrame();
  bool pictureChanged();         // this frame's draw data differs from the last one's
  void clickThroughPopups();     // before NewFrame: a press outside open popups closes them first

  LaunchOptions options_;
  std::unique_ptr<Window> window_;
  AppState state_;
  ViewState view_;
  TextureCache textures_;
  UiProbes probes_;
  LessonState lessons_;  // the lesson tabs' caches and choices, one per window
  TrainLab trainLab_;    // the Train mode (train/lab_state.hpp)
  std::unique_ptr<ComputeWorker> worker_;
  Trace spare_;                  // synchronous computes fill this, then swap with state_.trace
  std::optional<InputScript> script_;

  ImFont* mainFont_ = nullptr;
  ImFont* monoFont_ = nullptr;
  ImFont* titleFont_ = nullptr;
  ImVector<ImWchar> glyphRanges_;  // must outlive the font atlas build
  ImGuiStyle baseStyle_;           // unscaled, so a scale change never compounds
  float uiScale_ = 1.0f;
  float requestedUiScale_ = 1.0f;  // what setupFonts was asked for (uiScale_ may be smaller to fit the GPU)
  std::string iniPath_;
  std::string sessionPath_;     // empty: the session is neither restored nor saved
  std::string savedSessionJson_;  // what was last written (skip identical writes)
  double sessionCheckedAt_ = -1.0;  // the session is compared with the saved one once a second

  std::uint64_t requestCounter_ = 0;
  std::uint64_t shownRequest_ = 0;
  double lastFrameTime_ = 0.0;
  int settleFrames_ = 0;        // frames still to draw after an event (hover, popups settle)
  std::vector<int> heldTaps_;   // keys pressed and released within one poll, held for a frame
  int changingFrames_ = 0;      // consecutive frames whose picture changed (bounded settling)
  std::uint64_t lastPictureHash_ = 0;
  bool wide_ = true;            // three columns (else the side panels are main tabs)
  // event_driven scripts: what the real, event-waiting loop would have on screen
  bool eventDriven_ = false;
  std::map<std::string, std::string> shownLabels_;
  int zeroFramesLeft_ = 0;      // script: pretend the window is minimised
  int glErrors_ = 0;
  int framesDrawn_ = 0;
  std::string screenshotPath_;  // save after this frame's render
  int exitCode_ = 0;
  bool quitRequested_ = false;
  bool scriptAsync_ = false;    // script asked for the worker path
  // --bench-frames: whole frames, and where the time goes (ms)
  std::vector<double> frameTimes_, uiTimes_, glTimes_, swapTimes_;
};

}  // namespace mhascope::app
