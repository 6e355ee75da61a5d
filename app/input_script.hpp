// Input scripts: drive the real window from a text file, for GUI tests. Mouse and keys go in
// through Dear ImGui 1.86's io (io.MousePos, io.MouseDown, io.KeysDown), right after the GLFW
// backend's NewFrame — the same path real input takes — and widgets are found by name through
// UiProbes, not by pixel positions. One command per line; '#' starts a comment.
//
//   wait N                      render N frames
//   key Right|Left|Space|Home|End   press and release a key
//   click NAME                  click the centre of the named widget (ui_context.hpp UiProbes)
//   click_at NAME FX FY         click at a fraction of the widget (sliders: FX picks the value)
//   hover NAME                  move the mouse over the widget
//   hover_at NAME FX FY         move the mouse to a fraction of the widget (a heatmap cell)
//   wheel N                     turn the mouse wheel by N notches (zoom a heatmap)
//   set_export_folder PATH      the folder the export popup proposes
//   resize W H                  resize the window
//   zero_framebuffer N          pretend the framebuffer is 0x0 for N frames (minimised)
//   churn N                     change the configuration N times, one per frame
//   async                       big configs go to the worker thread, as for a user (scripts
//                               otherwise compute everything at once, for exact expectations)
//   preset NAME                 load a preset (name or .json path), as the preset picker does
//   wait_until_idle MAX         render frames until no compute is running (fail after MAX)
//   expect_computing            fail unless a compute is running while the UI keeps drawing
//   expect_tokens N             fail unless the shown trace has T_q = N
//   stats                       print texture count and RSS; the baseline for expect_rss_growth
//   expect_stage NAME           fail unless the current stage is NAME
//   expect_text NAME WORDS…     fail unless the panel text recorded as NAME is WORDS (e.g. the
//                               heatmap's label, "heatmap_label")
//   expect_heads N              fail unless the config's h is N
//   expect_config_error         fail unless the config is invalid (and the UI shows why)
//   expect_file PATH            fail unless PATH exists and is not empty
//   expect_no_file PATH         fail if PATH exists
//   expect_export_ok / expect_export_error   the export popup's last message is a success / an error
//   expect_textures_at_most N   fail if more than N heatmap textures are alive
//   expect_rss_growth_below_kb N  fail if RSS grew by N KiB or more since `stats`
//   expect_no_gl_errors         fail if any GL error was seen so far
//   screenshot PATH             save the window as PNG
//   quit                        exit with code 0 (a failed expectation exits with 3)
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "mhascope/result.hpp"

namespace mhascope::app {

// What a script can do to the app; App implements it.
class ScriptHost {
 public:
  virtual ~ScriptHost() = default;
  // The point at fractions (fx, fy) of the named widget; false when no such widget is on screen.
  virtual bool probePoint(const std::string& name, float fx, float fy, ImVec2& out) = 0;
  virtual std::string currentStageName() = 0;
  virtual std::string probeText(const std::string& name) = 0;  // UiProbes::text
  virtual int configHeads() = 0;
  virtual bool configInvalid() = 0;
  virtual void setExportFolder(const std::string& path) = 0;
  // The export popup's last message and whether it is an error (empty: nothing exported yet).
  virtual std::string exportMessage(bool& isError) = 0;
  virtual void resize(int w, int h) = 0;
  virtual void zeroFramebuffer(int frames) = 0;
  virtual void churnStep(int i) = 0;
  virtual void setAsync(bool on) = 0;
  virtual std::string loadPresetByName(const std::string& name) = 0;  // error message or ""
  virtual bool computing() = 0;
  virtual int shownTokens() = 0;
  virtual int textureCount() = 0;
  virtual int glErrorCount() = 0;
  virtual void requestScreenshot(const std::string& path) = 0;
  virtual void quit(int exitCode) = 0;
};

struct ScriptCommand {
  int line = 0;
  std::string verb;
  std::vector<std::string> args;
};

class InputScript {
 public:
  static Result<InputScript> load(const std::string& path);
  bool finished() const { return next_ >= commands_.size() && pendingFrames_ == 0; }
  // Once per frame, after the platform backend's NewFrame and before ImGui::NewFrame: runs
  // commands until one needs frames to pass, and applies the mouse / keys of this frame.
  void frame(ScriptHost& host, ImGuiIO& io);

 private:
  bool fail(ScriptHost& host, const ScriptCommand& c, const std::string& why);
  bool start(ScriptHost& host, const ScriptCommand& c, ImGuiIO& io);  // false: command needs frames

  std::vector<ScriptCommand> commands_;
  std::size_t next_ = 0;
  // The command in progress and its frame counter.
  enum class Phase { None, Wait, Click, Key, Churn, UntilIdle };
  Phase phase_ = Phase::None;
  int pendingFrames_ = 0;
  int step_ = 0;
  int keyIndex_ = -1;
  ImVec2 mouse_{-1.0f, -1.0f};
  bool mouseDown_ = false;
  float wheel_ = 0.0f;
  bool mouseActive_ = false;  // once the script moved the mouse, it owns io.MousePos
  long rssBaselineKb_ = -1;
  ScriptCommand untilIdleCommand_;  // for its line number in a failure
};

}  // namespace mhascope::app
