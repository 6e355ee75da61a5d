// The input scripts' view of the running app (ScriptHost, testing/input_script.hpp): an adapter
// over the app's state, view, probes, window and loop controls, so test hooks like churnStep are
// not part of App's own interface.
#pragma once

#include <string>
#include <vector>

#include "platform/window.hpp"
#include "shell/loop_control.hpp"
#include "shell/window_drop.hpp"
#include "state/pipeline_session.hpp"
#include "state/ui_context.hpp"
#include "testing/input_script.hpp"
#include "train_lab/lab_state.hpp"

namespace mhascope::app {

struct ScriptTargets {
  PipelineSession& pipeline;
  UiProbes& probes;
  Window& window;
  LoopControl& loop;
  TrainLab& trainLab;
  PracticeState& practice;
};

class AppScriptHost final : public ScriptHost {
 public:
  explicit AppScriptHost(ScriptTargets t) : t_(t) {}

  bool probePoint(const std::string& name, float fx, float fy, ImVec2& out) override;
  std::string currentStageName() override;
  int configHeads() override { return t_.pipeline.state.doc.config.heads; }
  bool configInvalid() override { return !t_.pipeline.state.doc.configError.empty(); }
  void setExportFolder(const std::string& path) override { t_.pipeline.view.exportUi.folder = path; }
  std::string exportMessage(bool& isError) override {
    isError = t_.pipeline.view.exportUi.messageIsError;
    return t_.pipeline.view.exportUi.message;
  }
  void resize(int w, int h) override { t_.window.resize(w, h); }
  double lastFrameWorkSeconds() override { return t_.loop.lastFrameWorkSeconds; }
  void zeroFramebuffer(int frames) override { t_.loop.zeroFramesLeft = frames; }
  void churnStep(int i) override;
  void setAsync(bool on) override { t_.loop.scriptAsync = on; }
  std::string loadPresetByName(const std::string& name) override;
  std::uint64_t lessonJobs() override { return t_.pipeline.state.compute.lessonJobs; }
  // The pipeline's compute and lessons, and the Train mode's jobs (a load, an ablation, its circuits)
  // and the session's evaluation of a new or loaded run's starting parameters (its first history
  // entry, which the Train mode's buttons wait for).
  bool computing() override {
    const TrainLab& lab = t_.trainLab;
    return t_.pipeline.state.compute.computing || t_.pipeline.state.compute.lessonComputing || lab.run.busy() ||
           t_.practice.check.busy() ||
           (lab.run.view && lab.run.view->evaluating) || lab.ablation.worker.busy() || lab.circuits.busy();
  }
  int shownTokens() override { return t_.pipeline.state.shown.trace.tq; }
  int textureCount() override;
  int glErrorCount() override { return t_.loop.glErrors; }
  void requestScreenshot(const std::string& path) override { t_.loop.screenshotPath = path; }
  void quit(int exitCode) override { t_.loop.quit(exitCode); }
  std::vector<std::string> probeNames() override { return t_.probes.names(); }
  std::vector<std::string> tabIds() override;
  void selectTab(const std::string& id) override {
    t_.pipeline.view.selectTab = id;
    t_.trainLab.active = id == kTrainModeId;  // the exploration test visits the Train mode as a tab
  }
  bool itemHovered() override;
  void setEventDriven(bool on) override { t_.loop.eventDriven = on; }
  std::string sessionSummary() override;
  void stopPlay() override { t_.pipeline.view.playing = false; }
  std::string shownLabel(const std::string& name) override;
  void dropPath(const std::string& path) override { dropOnWindow(t_.trainLab, t_.practice, t_.pipeline, path); }

 private:
  ScriptTargets t_;
};

}  // namespace mhascope::app
