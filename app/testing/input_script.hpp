// Input scripts: drive the real window from a text file, for GUI tests. Mouse and keys go in
// through Dear ImGui 1.86's io (io.MousePos, io.MouseDown, io.KeysDown), right after the GLFW
// backend's NewFrame — the same path real input takes — and widgets are found by name through
// UiProbes, not by pixel positions. One command per line; '#' starts a comment. Only the frames
// whose pixels are read (a screenshot) or timed (after stopwatch_start, between frame_times_begin
// and frame_times_end) are rasterised; the others make every GL call with the rasteriser discarding
// (measuringTime(), App::render), so a script spends its time on the window's logic, not on the
// software renderer. A script waits for what a job makes (wait_until_shown, wait_until_idle),
// never for a number of frames: frames that draw nothing pass in a millisecond or two.
//
//   wait N                      render N frames
//   key Right|Left|Space|Home|End   press and release a key
//   click NAME                  click the centre of the named widget (ui_context.hpp UiProbes)
//   click_at NAME FX FY         click at a fraction of the widget (sliders: FX picks the value);
//                               a click presses where the widget is on the press frame (one that
//                               moved since it was aimed at is aimed at again)
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
//   wait_until_idle MAX         render frames until nothing computes — the pipeline, its lessons, the
//                               Train mode's jobs (fail after MAX); prints
//                               the frames, seconds and the share of them spent drawing
//   expect_computing            fail unless a compute is running while the UI keeps drawing
//   expect_lesson_jobs N        fail unless N lessons have been handed to the lessons' background
//                               thread so far (not computed in a frame)
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
//   random SEED N               exploration: N seeded random events (clicks, double-clicks,
//                               drags, wheel, right-clicks, Ctrl+clicks, keys, typing) inside the
//                               window, biased toward widgets: named widgets, or points of each
//                               column (controls, stepper, main tab, side column, status line)
//                               kept once ImGui reports an item under the mouse; about 2/3 go to
//                               the open tab's content, and the tab changes every 30 events so
//                               every tab gets its share. Each event
//                               is printed ("random SEED #k: ..."); same seed, same events.
//   event_driven                from here on, also track what the real (event-waiting) loop would
//                               have on screen: frames it would not draw (asleep, no new input)
//                               leave the "shown" picture as it was
//   expect_shown NAME TEXT      fail unless widget NAME's label on the shown picture contains
//                               TEXT ("play" → "Play"; "main_tab" → the open tab's id;
//                               "stage" → the stage's name; "popup" → open / none)
//   press_ctrl / release_ctrl   hold or release Ctrl for the following clicks (Ctrl+click a slider)
//   type TEXT                   type TEXT (UTF-8; "_" stands for a space) into the focused field
//   key Enter|Escape|Tab|Backspace   (besides the keys above)
//   press_at NAME FX FY / move_to NAME FX FY / release   a drag in steps: press, move, release
//   expect_config_valid         fail if the config is invalid (an error is shown)
//   stop_play                   stop Play (after `random`, before checking that keys still work)
//   expect_session TEXT...      fail unless sessionSummary() contains TEXT (words joined by spaces)
//   stopwatch_start / stopwatch NAME   print the milliseconds since stopwatch_start
//   frame_times_begin / frame_times_end NAME [MAX_FAULTS]   print median, p95 and max frame time in
//                                        between and the UI thread's page faults (fail above MAX_FAULTS)
//   wait_until_shown MAX NAME TEXT…  render frames until widget NAME's label contains TEXT (fail
//                               after MAX frames): e.g. until training reaches a state
//   drop PATH                   a file dropped on the window (a checkpoint: the Train mode loads it)
//   copy_file SRC DST           replace DST by a copy of SRC (a save in the learner's editor)
//   print NAME                  print widget NAME's label (measurements in scripts/)
//   remember_place NAME / expect_same_place NAME   fail unless widget NAME's top-left corner is
//                               where it was at remember_place (a note must not push it away)
//   quit                        exit with code 0 (a failed expectation exits with 3)
#pragma once

#include <imgui.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace mhascope::app {

// What a script can do to the app; AppScriptHost (testing/script_host.hpp) implements it over
// the app's state, so test hooks stay out of App.
class ScriptHost {
 public:
  virtual ~ScriptHost() = default;
  // The point at fractions (fx, fy) of the named widget; false when no such widget is on screen.
  virtual bool probePoint(const std::string& name, float fx, float fy, ImVec2& out) = 0;
  virtual std::string currentStageName() = 0;
  virtual int configHeads() = 0;
  virtual bool configInvalid() = 0;
  virtual void setExportFolder(const std::string& path) = 0;
  // The export popup's last message and whether it is an error (empty: nothing exported yet).
  virtual std::string exportMessage(bool& isError) = 0;
  virtual void resize(int w, int h) = 0;
  // The last finished frame's drawing time (after the wait, up to the swap), seconds.
  virtual double lastFrameWorkSeconds() = 0;
  virtual void zeroFramebuffer(int frames) = 0;
  virtual void churnStep(int i) = 0;
  virtual void setAsync(bool on) = 0;
  virtual std::string loadPresetByName(const std::string& name) = 0;  // error message or ""
  virtual bool computing() = 0;
  virtual std::uint64_t lessonJobs() = 0;
  virtual int shownTokens() = 0;
  virtual int textureCount() = 0;
  virtual int glErrorCount() = 0;
  virtual void requestScreenshot(const std::string& path) = 0;
  virtual void quit(int exitCode) = 0;
  // Exploration (random): the named widgets on screen, the main area's tabs, a way to open one
  // whose tab is scrolled out of view, and whether ImGui saw an item under the mouse last frame.
  virtual std::vector<std::string> probeNames() = 0;
  virtual std::vector<std::string> tabIds() = 0;
  virtual void selectTab(const std::string& id) = 0;
  virtual bool itemHovered() = 0;
  // event_driven / expect_shown: see the command list above.
  virtual void setEventDriven(bool on) = 0;
  virtual std::string shownLabel(const std::string& name) = 0;
  // "preset=… text=… d_model=… h=… seed=… mask=… stage=… tab=…": what the session file keeps.
  virtual std::string sessionSummary() = 0;
  virtual void stopPlay() = 0;
  virtual void dropPath(const std::string& path) = 0;  // as if the file were dropped on the window
};

// The io.KeysDown index of a key named in a script ("Right", "Space", "A" …), -1 if unknown.
int keyIndexOf(const std::string& name, const ImGuiIO& io);

struct ScriptCommand {
  int line = 0;
  std::string verb;
  std::vector<std::string> args;
};

class InputScript {
 public:
  static Result<InputScript> load(const std::string& path);
  bool finished() const { return next_ >= commands_.size() && pendingFrames_ == 0; }
  // After stopwatch_start or between frame_times_begin and frame_times_end: the frames are drawn
  // in full, as for a user, so the times are a user's.
  bool measuringTime() const { return timingFrames_ || stopwatch_.time_since_epoch().count() != 0; }
  // Once per frame, after the platform backend's NewFrame and before ImGui::NewFrame: runs
  // commands until one needs frames to pass, and applies the mouse / keys of this frame.
  // Returns whether this frame brought new input (a mouse move, button, wheel, key or
  // character): for event_driven, that is when the real loop would wake up.
  bool frame(ScriptHost& host, ImGuiIO& io);

 private:
  bool advance(ScriptHost& host, ImGuiIO& io, std::chrono::steady_clock::time_point now,
               std::chrono::steady_clock::time_point previousFrameAt);
  // One frame of generated input for `random`.
  struct FrameInput {
    ImVec2 pos{-1.0f, -1.0f};
    bool left = false, right = false, ctrl = false;
    float wheel = 0.0f;
    int key = -1;        // io.KeysDown index, down for this frame
    std::string chars;   // typed this frame (UTF-8)
  };
  enum class Action { Click, DoubleClick, Drag, RightClick, CtrlClick, Wheel, Hover, Key, Type, Tab };
  void randomFrame(ScriptHost& host, ImGuiIO& io);
  void randomNextEvent(ScriptHost& host, ImGuiIO& io);
  void randomEmit(Action action, ImVec2 at, const std::string& where, ImGuiIO& io);
  ImVec2 randomPointIn(ScriptHost& host, const std::string& probe, ImGuiIO& io);
  void logEvent(const std::string& text);
  unsigned randomBelow(unsigned n);  // uniform in [0, n)
  float randomUnit();                // uniform in [0, 1)


  bool fail(ScriptHost& host, const ScriptCommand& c, const std::string& why);
  void aim(const ScriptCommand& c, float fx, float fy) {
    aimCommand_ = c;
    aimFx_ = fx;
    aimFy_ = fy;
    reaims_ = 0;
  }
  bool start(ScriptHost& host, const ScriptCommand& c, ImGuiIO& io);  // false: command needs frames

  std::vector<ScriptCommand> commands_;
  std::size_t next_ = 0;
  // The command in progress and its frame counter.
  enum class Phase { None, Wait, Click, Press, Key, Churn, UntilIdle, UntilShown, Random };
  Phase phase_ = Phase::None;
  int pendingFrames_ = 0;
  int step_ = 0;
  int keyIndex_ = -1;
  ImVec2 mouse_{-1.0f, -1.0f};
  bool mouseDown_ = false;
  float wheel_ = 0.0f;
  bool mouseActive_ = false;  // once the script moved the mouse, it owns io.MousePos
  long rssBaselineKb_ = -1;
  std::map<std::string, ImVec2> places_;  // remember_place
  ScriptCommand untilIdleCommand_;  // for its line number in a failure
  // click / click_at / press_at: the widget and the point in it the mouse aims at, aimed again on
  // the press frame (a layout that moved since — a job's result came, a panel grew — moves the
  // mouse there and the press waits a frame), at most kMaxReaims times.
  static constexpr int kMaxReaims = 120;
  ScriptCommand aimCommand_;
  float aimFx_ = 0.5f, aimFy_ = 0.5f;
  int reaims_ = 0;
  bool ctrlHeld_ = false;           // press_ctrl
  std::string typeText_;            // type: delivered on the command's frame
  bool inputChanged_ = false;       // this frame brought new input (event_driven)
  ImVec2 lastMouse_{-1.0f, -1.0f};  // what was applied last frame, to tell new input
  bool lastDown_ = false;

  // random SEED N
  std::uint64_t rngState_ = 0;      // splitmix64: same sequence on every machine and library
  unsigned long long randomSeed_ = 0;
  int randomLeft_ = 0, randomDone_ = 0;
  std::vector<FrameInput> randomQueue_;  // frames still to play for the current event (front = back())
  bool scanning_ = false;           // moving to grid points until ImGui reports an item hovered
  int scanTries_ = 0;
  Action scanAction_ = Action::Click;
  std::string scanWhere_;
  std::vector<std::string> tabCycle_;  // tabs still to visit in this round, shuffled
  bool randomRightDown_ = false;

  // stopwatch, frame_times
  std::chrono::steady_clock::time_point stopwatch_{}, lastFrameAt_{};
  bool timingFrames_ = false;
  std::vector<double> frameTimes_;
  long faultsAtBegin_ = 0;  // the UI thread's minor page faults at frame_times_begin
  // wait_until_idle: the share of the time spent drawing (the rest was left to the worker)
  std::chrono::steady_clock::time_point untilIdleStart_{};
  double untilIdleWork_ = 0.0;
};

}  // namespace mhascope::app
