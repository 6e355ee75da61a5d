// The input-script player (see input_script.hpp for the command list): parsing and the
// line-by-line commands (clicks, drags, keys, typing, checks). `random SEED N`, the exploration
// test's seeded event generator, shares its frame clock and lives in input_random.cpp.
#include "testing/input_script.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/resource.h>

#include "io/file_io.hpp"

namespace mhascope::app {
namespace {

// Minor page faults of the calling thread so far (the UI thread's, when a script asks).
long threadPageFaults() {
  rusage ru{};
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

long residentKb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return -1;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}


int toInt(const std::string& s) { return std::stoi(s); }
float toFloat(const std::string& s) { return std::stof(s); }

}  // namespace

int keyIndexOf(const std::string& name, const ImGuiIO& io) {
  if (name == "Right") return io.KeyMap[ImGuiKey_RightArrow];
  if (name == "Left") return io.KeyMap[ImGuiKey_LeftArrow];
  if (name == "Space") return io.KeyMap[ImGuiKey_Space];
  if (name == "Home") return io.KeyMap[ImGuiKey_Home];
  if (name == "End") return io.KeyMap[ImGuiKey_End];
  if (name == "Enter") return io.KeyMap[ImGuiKey_Enter];
  if (name == "Escape") return io.KeyMap[ImGuiKey_Escape];
  if (name == "Tab") return io.KeyMap[ImGuiKey_Tab];
  if (name == "Backspace") return io.KeyMap[ImGuiKey_Backspace];
  if (name == "Delete") return io.KeyMap[ImGuiKey_Delete];
  if (name == "Up") return io.KeyMap[ImGuiKey_UpArrow];
  if (name == "Down") return io.KeyMap[ImGuiKey_DownArrow];
  if (name == "PageUp") return io.KeyMap[ImGuiKey_PageUp];
  if (name == "PageDown") return io.KeyMap[ImGuiKey_PageDown];
  if (name == "A") return io.KeyMap[ImGuiKey_A];
  return -1;
}

Result<InputScript> InputScript::load(const std::string& path) {
  auto text = readFile(path, 1 << 20);
  if (!text) return text.error();
  InputScript script;
  std::istringstream in(*text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    ScriptCommand c;
    c.line = number;
    if (!(words >> c.verb)) continue;
    for (std::string w; words >> w;) c.args.push_back(w);
    script.commands_.push_back(std::move(c));
  }
  return script;
}

bool InputScript::fail(ScriptHost& host, const ScriptCommand& c, const std::string& why) {
  std::fprintf(stderr, "script line %d (%s): %s\n", c.line, c.verb.c_str(), why.c_str());
  host.quit(3);
  next_ = commands_.size();
  phase_ = Phase::None;
  pendingFrames_ = 0;
  return true;
}

// Long (~210 lines) on purpose: one `if (c.verb == …)` branch per script verb, each a few lines,
// in the order of the command list in input_script.hpp — the verbs read as that list does.
// Splitting it into one function per verb would add a declaration per verb and hide nothing.
bool InputScript::start(ScriptHost& host, const ScriptCommand& c, ImGuiIO& io) {
  std::printf("script %d: %s", c.line, c.verb.c_str());  // the test log shows how far it got
  for (const std::string& a : c.args) std::printf(" %s", a.c_str());
  std::printf("\n");
  std::fflush(stdout);
  const auto need = [&](std::size_t n) { return c.args.size() >= n; };
  try {
    if (c.verb == "wait" && need(1)) {
      phase_ = Phase::Wait;
      pendingFrames_ = std::max(1, toInt(c.args[0]));
      return false;
    }
    if ((c.verb == "click" || c.verb == "hover") && need(1)) {
      if (!host.probePoint(c.args[0], 0.5f, 0.5f, mouse_)) return fail(host, c, "no widget named " + c.args[0] + " on screen");
      aim(c, 0.5f, 0.5f);
      mouseActive_ = true;
      phase_ = c.verb == "click" ? Phase::Click : Phase::Wait;
      pendingFrames_ = c.verb == "click" ? 3 : 2;  // move, press, release
      step_ = 0;
      return false;
    }
    if (c.verb == "hover_at" && need(3)) {
      if (!host.probePoint(c.args[0], toFloat(c.args[1]), toFloat(c.args[2]), mouse_)) {
        return fail(host, c, "no widget named " + c.args[0] + " on screen");
      }
      mouseActive_ = true;
      phase_ = Phase::Wait;
      pendingFrames_ = 2;
      return false;
    }
    if (c.verb == "wheel" && need(1)) {
      wheel_ = toFloat(c.args[0]);
      phase_ = Phase::Wait;
      pendingFrames_ = 1;
      return false;
    }
    if (c.verb == "click_at" && need(3)) {
      if (!host.probePoint(c.args[0], toFloat(c.args[1]), toFloat(c.args[2]), mouse_)) {
        return fail(host, c, "no widget named " + c.args[0] + " on screen");
      }
      aim(c, toFloat(c.args[1]), toFloat(c.args[2]));
      mouseActive_ = true;
      phase_ = Phase::Click;
      pendingFrames_ = 3;
      step_ = 0;
      return false;
    }
    if (c.verb == "random" && need(2)) {
      randomSeed_ = std::stoull(c.args[0]);
      rngState_ = randomSeed_;
      randomLeft_ = std::max(1, toInt(c.args[1]));
      randomDone_ = 0;
      randomQueue_.clear();
      scanning_ = false;
      tabCycle_.clear();
      mouseActive_ = true;
      phase_ = Phase::Random;
      pendingFrames_ = 1;  // kept at 1 until the last event's frames are played
      return false;
    }
    if (c.verb == "press_at" && need(3)) {
      if (!host.probePoint(c.args[0], toFloat(c.args[1]), toFloat(c.args[2]), mouse_)) {
        return fail(host, c, "no widget named " + c.args[0] + " on screen");
      }
      aim(c, toFloat(c.args[1]), toFloat(c.args[2]));
      mouseActive_ = true;
      phase_ = Phase::Press;
      pendingFrames_ = 2;  // move, press (held until `release`)
      step_ = 0;
      return false;
    }
    if (c.verb == "move_to" && need(3)) {
      if (!host.probePoint(c.args[0], toFloat(c.args[1]), toFloat(c.args[2]), mouse_)) {
        return fail(host, c, "no widget named " + c.args[0] + " on screen");
      }
      mouseActive_ = true;
      phase_ = Phase::Wait;
      pendingFrames_ = 1;
      return false;
    }
    if (c.verb == "release") {
      mouseDown_ = false;
      phase_ = Phase::Wait;
      pendingFrames_ = 1;
      return false;
    }
    if (c.verb == "type" && need(1)) {
      typeText_ = c.args[0];
      for (char& ch : typeText_) ch = ch == '_' ? ' ' : ch;
      phase_ = Phase::Wait;
      pendingFrames_ = 1;
      return false;
    }
    if (c.verb == "key" && need(1)) {
      keyIndex_ = keyIndexOf(c.args[0], io);
      if (keyIndex_ < 0) return fail(host, c, "unknown key " + c.args[0] + " (Right, Left, Space, Home, End, Enter, ...)");
      phase_ = Phase::Key;
      pendingFrames_ = 2;
      step_ = 0;
      return false;
    }
    if (c.verb == "churn" && need(1)) {
      phase_ = Phase::Churn;
      pendingFrames_ = std::max(1, toInt(c.args[0]));
      step_ = 0;
      return false;
    }
    if (c.verb == "wait_until_idle" && need(1)) {
      phase_ = Phase::UntilIdle;
      pendingFrames_ = std::max(1, toInt(c.args[0]));
      untilIdleStart_ = std::chrono::steady_clock::now();
      untilIdleWork_ = 0.0;
      untilIdleCommand_ = c;
      return false;
    }
    if (c.verb == "wait_until_shown" && need(3)) {
      phase_ = Phase::UntilShown;
      pendingFrames_ = std::max(1, toInt(c.args[0]));
      untilIdleCommand_ = c;
      return false;
    }
    if (c.verb == "set_export_folder" && need(1)) {
      host.setExportFolder(c.args[0]);
    } else if (c.verb == "async") {
      host.setAsync(true);
    } else if (c.verb == "stop_play") {
      host.stopPlay();
    } else if (c.verb == "event_driven") {
      host.setEventDriven(true);
    } else if (c.verb == "press_ctrl" || c.verb == "release_ctrl") {
      ctrlHeld_ = c.verb == "press_ctrl";
    } else if (c.verb == "expect_shown" && need(2)) {
      std::string want = c.args[1];
      for (std::size_t i = 2; i < c.args.size(); ++i) want += " " + c.args[i];
      const std::string shown = host.shownLabel(c.args[0]);
      if (shown.find(want) == std::string::npos) {
        return fail(host, c, "the picture on screen shows " + c.args[0] + " = \"" + shown + "\", expected \"" + want + "\"");
      }
    } else if (c.verb == "drop" && need(1)) {
      host.dropPath(c.args[0]);
    } else if (c.verb == "copy_file" && need(2)) {
      // A learner's save, as their editor makes it: the file replaced by another's text.
      std::error_code ec;
      std::filesystem::copy_file(c.args[0], c.args[1], std::filesystem::copy_options::overwrite_existing, ec);
      if (ec) return fail(host, c, "cannot copy " + c.args[0] + " to " + c.args[1] + ": " + ec.message());
    } else if (c.verb == "remember_place" && need(1)) {
      ImVec2 at;
      if (!host.probePoint(c.args[0], 0.0f, 0.0f, at)) return fail(host, c, "no widget named " + c.args[0] + " on screen");
      places_[c.args[0]] = at;
    } else if (c.verb == "expect_same_place" && need(1)) {
      ImVec2 at;
      auto was = places_.find(c.args[0]);
      if (was == places_.end()) return fail(host, c, "remember_place " + c.args[0] + " first");
      if (!host.probePoint(c.args[0], 0.0f, 0.0f, at)) return fail(host, c, "no widget named " + c.args[0] + " on screen");
      if (std::abs(at.x - was->second.x) > 0.5f || std::abs(at.y - was->second.y) > 0.5f) {
        return fail(host, c, c.args[0] + " moved from (" + std::to_string(was->second.x) + ", " + std::to_string(was->second.y) +
                                 ") to (" + std::to_string(at.x) + ", " + std::to_string(at.y) + ")");
      }
    } else if (c.verb == "print" && need(1)) {
      std::printf("%s: %s\n", c.args[0].c_str(), host.shownLabel(c.args[0]).c_str());
    } else if (c.verb == "preset" && need(1)) {
      if (const std::string err = host.loadPresetByName(c.args[0]); !err.empty()) return fail(host, c, err);
    } else if (c.verb == "expect_computing") {
      if (!host.computing()) return fail(host, c, "no compute is running");
    } else if (c.verb == "expect_lesson_jobs" && need(1)) {
      if (host.lessonJobs() != static_cast<std::uint64_t>(toInt(c.args[0]))) {
        return fail(host, c, std::to_string(host.lessonJobs()) + " lessons were handed to the background thread, expected " +
                                 c.args[0]);
      }
    } else if (c.verb == "expect_tokens" && need(1)) {
      if (host.shownTokens() != toInt(c.args[0])) {
        return fail(host, c, "the shown trace has T_q = " + std::to_string(host.shownTokens()) + ", expected " + c.args[0]);
      }
    } else if (c.verb == "resize" && need(2)) {
      host.resize(toInt(c.args[0]), toInt(c.args[1]));
    } else if (c.verb == "zero_framebuffer" && need(1)) {
      host.zeroFramebuffer(toInt(c.args[0]));
    } else if (c.verb == "stats") {
      rssBaselineKb_ = residentKb();
      std::printf("stats: textures=%d rss_kb=%ld gl_errors=%d\n", host.textureCount(), rssBaselineKb_, host.glErrorCount());
      std::fflush(stdout);
    } else if (c.verb == "expect_text" && need(2)) {
      std::string want;  // the rest of the line, words joined by one space
      for (std::size_t i = 1; i < c.args.size(); ++i) {
        if (i > 1) want += ' ';
        want += c.args[i];
      }
      const std::string got = host.shownLabel(c.args[0]);
      std::printf("text %s: %s\n", c.args[0].c_str(), got.c_str());
      if (got != want) return fail(host, c, c.args[0] + " shows \"" + got + "\", expected \"" + want + "\"");
    } else if (c.verb == "expect_stage" && need(1)) {
      if (host.currentStageName() != c.args[0]) return fail(host, c, "stage is " + host.currentStageName() + ", expected " + c.args[0]);
    } else if (c.verb == "expect_heads" && need(1)) {
      if (host.configHeads() != toInt(c.args[0])) {
        return fail(host, c, "h is " + std::to_string(host.configHeads()) + ", expected " + c.args[0]);
      }
    } else if (c.verb == "expect_config_valid") {
      if (host.configInvalid()) return fail(host, c, "the configuration is invalid (an error is shown)");
    } else if (c.verb == "expect_session" && need(1)) {
      std::string want = c.args[0];
      for (std::size_t i = 1; i < c.args.size(); ++i) want += " " + c.args[i];
      const std::string got = host.sessionSummary();
      std::printf("session: %s\n", got.c_str());
      if (got.find(want) == std::string::npos) return fail(host, c, "the session is \"" + got + "\", expected \"" + want + "\"");
    } else if (c.verb == "expect_config_error") {
      if (!host.configInvalid()) return fail(host, c, "the configuration is valid, expected an error");
    } else if (c.verb == "expect_file" && need(1)) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(c.args[0], ec) || std::filesystem::file_size(c.args[0], ec) == 0) {
        return fail(host, c, c.args[0] + " does not exist or is empty");
      }
    } else if (c.verb == "expect_no_file" && need(1)) {
      std::error_code ec;
      if (std::filesystem::exists(c.args[0], ec)) return fail(host, c, c.args[0] + " exists");
    } else if (c.verb == "expect_export_ok" || c.verb == "expect_export_error") {
      bool isError = false;
      const std::string msg = host.exportMessage(isError);
      std::printf("export message: %s\n", msg.c_str());
      const bool wantError = c.verb == "expect_export_error";
      if (msg.empty() || isError != wantError) return fail(host, c, "export message is \"" + msg + "\"");
    } else if (c.verb == "expect_textures_at_most" && need(1)) {
      if (host.textureCount() > toInt(c.args[0])) {
        return fail(host, c, std::to_string(host.textureCount()) + " textures alive, expected at most " + c.args[0]);
      }
    } else if (c.verb == "expect_rss_growth_below_kb" && need(1)) {
      const long now = residentKb();
      std::printf("rss: %ld KiB -> %ld KiB (growth %ld KiB)\n", rssBaselineKb_, now, now - rssBaselineKb_);
      if (rssBaselineKb_ < 0 || now - rssBaselineKb_ >= toInt(c.args[0])) {
        return fail(host, c, "RSS grew by " + std::to_string(now - rssBaselineKb_) + " KiB");
      }
    } else if (c.verb == "stopwatch_start") {
      stopwatch_ = std::chrono::steady_clock::now();
    } else if (c.verb == "stopwatch" && need(1)) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopwatch_).count();
      std::printf("stopwatch %s: %.0f ms\n", c.args[0].c_str(), ms);
    } else if (c.verb == "frame_times_begin") {
      frameTimes_.clear();
      timingFrames_ = true;
      faultsAtBegin_ = threadPageFaults();
    } else if (c.verb == "frame_times_end" && need(1)) {
      timingFrames_ = false;
      std::vector<double> t = frameTimes_;
      std::sort(t.begin(), t.end());
      if (t.empty()) return fail(host, c, "no frames between frame_times_begin and frame_times_end");
      const std::size_t p95 = std::min(t.size() - 1, static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(t.size()))) - 1);
      // Page faults cost ~15 µs each on these virtual machines: a frame that grows a buffer into
      // fresh memory shows here before it shows in the times.
      const long faults = threadPageFaults() - faultsAtBegin_;
      std::printf("frame times %s: %zu frames, median %.2f ms, p95 %.2f ms, max %.2f ms, min %.2f ms, %ld page faults on the UI thread\n",
                  c.args[0].c_str(), t.size(), t[t.size() / 2], t[p95], t.back(), t.front(), faults);
      std::printf("frame times %s in order (ms):", c.args[0].c_str());  // which frames are the slow ones
      for (double ms : frameTimes_) std::printf(" %.1f", ms);
      std::printf("\n");
      if (c.args.size() > 1 && faults > toInt(c.args[1])) {
        return fail(host, c, std::to_string(faults) + " page faults on the UI thread, more than " + c.args[1]);
      }
    } else if (c.verb == "expect_no_gl_errors") {
      if (host.glErrorCount() != 0) return fail(host, c, std::to_string(host.glErrorCount()) + " GL errors");
    } else if (c.verb == "screenshot" && need(1)) {
      host.requestScreenshot(c.args[0]);
      // This frame is the picture: the next command starts on the next frame, so its input
      // (a hover, the move before a click) is not in the screenshot.
      phase_ = Phase::Wait;
      pendingFrames_ = 1;
      return false;
    } else if (c.verb == "quit") {
      host.quit(0);
      next_ = commands_.size();
    } else {
      return fail(host, c, "unknown command or missing arguments");
    }
  } catch (const std::exception& e) {  // std::stoi on a bad number
    return fail(host, c, std::string("bad argument: ") + e.what());
  }
  return true;
}

bool InputScript::frame(ScriptHost& host, ImGuiIO& io) {
  inputChanged_ = false;
  // frame_times: the time from one frame's start to the next (the whole frame: UI, GL, swap).
  const auto now = std::chrono::steady_clock::now();
  if (timingFrames_ && lastFrameAt_.time_since_epoch().count() != 0) {
    frameTimes_.push_back(std::chrono::duration<double, std::milli>(now - lastFrameAt_).count());
  }
  const auto previousFrameAt = lastFrameAt_;
  lastFrameAt_ = now;
  return advance(host, io, now, previousFrameAt);
}

// The frame's commands. A command that ends starts the next one in the same frame (advance calls
// itself), with the frame's own times: a frame is timed once, however many commands it runs.
bool InputScript::advance(ScriptHost& host, ImGuiIO& io, std::chrono::steady_clock::time_point now,
                          std::chrono::steady_clock::time_point previousFrameAt) {
  // Finish this frame's part of the command in progress.
  if (pendingFrames_ > 0) {
    switch (phase_) {
      case Phase::Click:  // frame 0 move, 1 press, 2 release
      case Phase::Press: {  // frame 0 move, 1 press (held)
        ImVec2 at;
        if (step_ == 1 && host.probePoint(aimCommand_.args[0], aimFx_, aimFy_, at) &&
            (std::fabs(at.x - mouse_.x) > 0.5f || std::fabs(at.y - mouse_.y) > 0.5f)) {
          if (++reaims_ > kMaxReaims) {
            fail(host, aimCommand_, aimCommand_.args[0] + " kept moving for " + std::to_string(kMaxReaims) + " frames: not pressed");
            return false;
          }
          mouse_ = at;  // the widget moved since it was aimed at: aim again, press next frame
          mouseDown_ = false;
          --step_;
          ++pendingFrames_;
          break;
        }
        mouseDown_ = step_ == 1;
        break;
      }
      case Phase::Key:
        if (keyIndex_ >= 0) {
          io.KeysDown[keyIndex_] = step_ == 0;
          inputChanged_ = true;
        }
        break;
      case Phase::Churn: host.churnStep(step_); break;
      case Phase::UntilIdle:
        untilIdleWork_ += host.lastFrameWorkSeconds();
        if (!host.computing()) {
          const double secs = std::chrono::duration<double>(now - untilIdleStart_).count();
          // How much of the wait the window spent drawing, i.e. took from the worker.
          std::printf("idle after %d frames in %.2f s, drawing %.0f %% of the time\n", step_, secs,
                      secs > 0 ? std::min(100.0, 100.0 * untilIdleWork_ / secs) : 0.0);  // a frame begun before the wait
          pendingFrames_ = 1;  // this frame is the last one
        } else if (pendingFrames_ == 1) {
          fail(host, untilIdleCommand_, "still computing after " + std::to_string(step_ + 1) + " frames");
          return false;
        }
        break;
      case Phase::UntilShown: {
        std::string want = untilIdleCommand_.args[2];
        for (std::size_t i = 3; i < untilIdleCommand_.args.size(); ++i) want += " " + untilIdleCommand_.args[i];
        if (host.shownLabel(untilIdleCommand_.args[1]).find(want) != std::string::npos) {
          // When the frame that drew it was done (its start + its work), since stopwatch_start: a
          // `stopwatch` line runs a frame later, and while a worker computes frames are paced apart.
          std::printf("%s shows \"%s\" after %d frames", untilIdleCommand_.args[1].c_str(), want.c_str(), step_);
          if (stopwatch_.time_since_epoch().count() != 0) {
            const double ms = std::chrono::duration<double, std::milli>(previousFrameAt - stopwatch_).count() +
                              1000.0 * host.lastFrameWorkSeconds();
            std::printf(", %.0f ms after stopwatch_start", ms);
          }
          std::printf("\n");
          pendingFrames_ = 1;
        } else if (pendingFrames_ == 1) {
          fail(host, untilIdleCommand_, untilIdleCommand_.args[1] + " still shows \"" +
                                            host.shownLabel(untilIdleCommand_.args[1]) + "\" after " + std::to_string(step_ + 1) + " frames");
          return false;
        }
        break;
      }
      case Phase::Random:
        randomFrame(host, io);
        if (randomLeft_ > 0 || !randomQueue_.empty() || scanning_) ++pendingFrames_;  // more to come
        break;
      default: break;
    }
    ++step_;
    --pendingFrames_;
  } else {
    phase_ = Phase::None;
    while (next_ < commands_.size()) {
      const ScriptCommand& c = commands_[next_++];
      if (!start(host, c, io)) {
        return advance(host, io, now, previousFrameAt);  // the new command's first frame is this one
      }
    }
  }
  if (mouseActive_) {
    io.MousePos = mouse_;
    io.MouseDown[0] = mouseDown_;
    inputChanged_ |= mouse_.x != lastMouse_.x || mouse_.y != lastMouse_.y || mouseDown_ != lastDown_;
    lastMouse_ = mouse_;
    lastDown_ = mouseDown_;
  }
  if (phase_ != Phase::Random) {
    io.KeyCtrl = ctrlHeld_;
    if (!typeText_.empty()) {
      io.AddInputCharactersUTF8(typeText_.c_str());
      typeText_.clear();
      inputChanged_ = true;
    }
  }
  inputChanged_ |= wheel_ != 0.0f;
  io.MouseWheel += wheel_;  // one frame only
  wheel_ = 0.0f;
  return inputChanged_;
}

}  // namespace mhascope::app
