// The input-script host (see input_script.hpp for the command list). Over 500 lines because it
// holds two players that share one frame clock: the line-by-line script commands (clicks, drags,
// keys, typing, checks) and `random SEED N`, the exploration test's seeded event generator.
//   parsing and the command player   — top of the file
//   random SEED N                    — the section marked below
#include "input_script.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/file_io.hpp"

namespace mhascope::app {
namespace {

long residentKb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return -1;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

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

// Keys the exploration presses (names of keyIndexOf).
constexpr const char* kRandomKeys[] = {"Right", "Left", "Up", "Down", "Space", "Home", "End", "Enter", "Escape",
                                       "Tab", "Backspace", "Delete", "PageUp", "PageDown", "A"};
// What the exploration types: words, digits, the batch separator, non-ASCII, a code point above
// U+FFFF, signs and a long number (pasted into a Ctrl+clicked slider it must be clamped).
constexpr const char* kRandomTexts[] = {"cat", "the dog ran", "|", "0", "7", "12", "-3", "999999", "1e9", " ",
                                        "é", "猫", "😀", "a|b", "<pad>", "..", "x y z", "nan", "64", "3.5"};

int toInt(const std::string& s) { return std::stoi(s); }
float toFloat(const std::string& s) { return std::stof(s); }

}  // namespace

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
    } else if (c.verb == "print" && need(1)) {
      std::printf("%s: %s\n", c.args[0].c_str(), host.shownLabel(c.args[0]).c_str());
    } else if (c.verb == "preset" && need(1)) {
      if (const std::string err = host.loadPresetByName(c.args[0]); !err.empty()) return fail(host, c, err);
    } else if (c.verb == "expect_computing") {
      if (!host.computing()) return fail(host, c, "no compute is running");
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
  // Finish this frame's part of the command in progress.
  if (pendingFrames_ > 0) {
    switch (phase_) {
      case Phase::Click: mouseDown_ = step_ == 1; break;  // frame 0 move, 1 press, 2 release
      case Phase::Press: mouseDown_ = step_ == 1; break;  // frame 0 move, 1 press (held)
      case Phase::Key:
        if (keyIndex_ >= 0) {
          io.KeysDown[keyIndex_] = step_ == 0;
          inputChanged_ = true;
        }
        break;
      case Phase::Churn: host.churnStep(step_); break;
      case Phase::UntilIdle:
        if (!host.computing()) {
          std::printf("idle after %d frames\n", step_);
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
          std::printf("%s shows \"%s\" after %d frames\n", untilIdleCommand_.args[1].c_str(), want.c_str(), step_);
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
        return frame(host, io);  // the new command's first frame is this one
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

// ---------------------------------------------------------------------------------------------
// random SEED N: the exploration test's input
// ---------------------------------------------------------------------------------------------

unsigned InputScript::randomBelow(unsigned n) {
  // splitmix64 (Steele, Lea, Flood 2014): fixed arithmetic, so a seed means the same events
  // everywhere (std::uniform_int_distribution is not specified bit-for-bit across libraries).
  rngState_ += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = rngState_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return n == 0 ? 0u : static_cast<unsigned>(z % n);
}

float InputScript::randomUnit() { return static_cast<float>(randomBelow(1u << 24)) / static_cast<float>(1u << 24); }

void InputScript::logEvent(const std::string& text) {
  std::printf("random %llu #%d: %s\n", randomSeed_, randomDone_, text.c_str());
  std::fflush(stdout);
}

ImVec2 InputScript::randomPointIn(ScriptHost& host, const std::string& probe, ImGuiIO& io) {
  ImVec2 p(io.DisplaySize.x * randomUnit(), io.DisplaySize.y * randomUnit());
  host.probePoint(probe, randomUnit(), randomUnit(), p);
  // Always inside the window (a point outside would only test that nothing happens).
  p.x = std::clamp(p.x, 1.0f, std::max(1.0f, io.DisplaySize.x - 2.0f));
  p.y = std::clamp(p.y, 1.0f, std::max(1.0f, io.DisplaySize.y - 2.0f));
  return p;
}

void InputScript::randomEmit(Action action, ImVec2 at, const std::string& where, ImGuiIO& io) {
  // Frames are pushed in reverse: randomQueue_.back() plays first.
  std::vector<FrameInput> frames;
  auto at_ = [&](ImVec2 p) {
    FrameInput f;
    f.pos = p;
    return f;
  };
  auto pt = [](ImVec2 p) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "(%.0f, %.0f)", p.x, p.y);
    return std::string(buf);
  };
  switch (action) {
    case Action::Click:
    case Action::CtrlClick:
    case Action::RightClick: {
      FrameInput move = at_(at), down = at_(at), up = at_(at);
      move.ctrl = down.ctrl = up.ctrl = action == Action::CtrlClick;
      (action == Action::RightClick ? down.right : down.left) = true;
      frames = {move, down, up, at_(at)};
      logEvent(std::string(action == Action::Click ? "click" : action == Action::CtrlClick ? "ctrl+click" : "right-click") +
               " at " + pt(at) + " on " + where);
      if (action == Action::CtrlClick && randomBelow(2) == 0) {  // then type a value and Enter
        FrameInput typed = at_(at);
        typed.chars = kRandomTexts[randomBelow(static_cast<unsigned>(std::size(kRandomTexts)))];
        FrameInput enter = at_(at);
        enter.key = io.KeyMap[ImGuiKey_Enter];
        frames.push_back(typed);
        frames.push_back(enter);
        frames.push_back(at_(at));
        logEvent("  then types \"" + typed.chars + "\" and Enter");
      }
      break;
    }
    case Action::DoubleClick: {
      FrameInput down = at_(at);
      down.left = true;
      frames = {at_(at), down, at_(at), down, at_(at), at_(at)};
      logEvent("double-click at " + pt(at) + " on " + where);
      break;
    }
    case Action::Drag: {
      const float em = ImGui::GetFontSize();
      ImVec2 to(at.x + (randomUnit() - 0.5f) * 24.0f * em, at.y + (randomUnit() - 0.5f) * 12.0f * em);
      to.x = std::clamp(to.x, 1.0f, std::max(1.0f, io.DisplaySize.x - 2.0f));
      to.y = std::clamp(to.y, 1.0f, std::max(1.0f, io.DisplaySize.y - 2.0f));
      const int steps = 3 + static_cast<int>(randomBelow(6));
      frames.push_back(at_(at));
      for (int i = 0; i <= steps; ++i) {
        const float t = static_cast<float>(i) / static_cast<float>(steps);
        FrameInput f = at_(ImVec2(at.x + (to.x - at.x) * t, at.y + (to.y - at.y) * t));
        f.left = true;
        frames.push_back(f);
      }
      frames.push_back(at_(to));
      logEvent("drag from " + pt(at) + " on " + where + " to " + pt(to) + " in " + std::to_string(steps) + " steps");
      break;
    }
    case Action::Wheel: {
      FrameInput f = at_(at);
      f.wheel = static_cast<float>(static_cast<int>(randomBelow(7)) - 3);
      if (f.wheel == 0.0f) f.wheel = 1.0f;
      f.ctrl = randomBelow(4) == 0;
      frames = {at_(at), f, at_(at)};
      logEvent(std::string("wheel ") + std::to_string(static_cast<int>(f.wheel)) + (f.ctrl ? " with ctrl" : "") + " at " +
               pt(at) + " on " + where);
      break;
    }
    case Action::Hover:
      frames = {at_(at), at_(at), at_(at)};
      logEvent("hover at " + pt(at) + " on " + where);
      break;
    case Action::Key: {
      const char* name = kRandomKeys[randomBelow(static_cast<unsigned>(std::size(kRandomKeys)))];
      FrameInput f = at_(at);
      f.key = keyIndexOf(name, io);
      f.ctrl = std::string(name) == "A" || randomBelow(8) == 0;
      frames = {f, at_(at)};
      logEvent(std::string("key ") + (f.ctrl ? "Ctrl+" : "") + name);
      break;
    }
    case Action::Type: {
      FrameInput f = at_(at);
      f.chars = kRandomTexts[randomBelow(static_cast<unsigned>(std::size(kRandomTexts)))];
      frames = {f, at_(at)};
      logEvent("type \"" + f.chars + "\"");
      break;
    }
    case Action::Tab: break;  // handled by randomNextEvent
  }
  std::reverse(frames.begin(), frames.end());
  randomQueue_.insert(randomQueue_.end(), frames.begin(), frames.end());
}

void InputScript::randomNextEvent(ScriptHost& host, ImGuiIO& io) {
  if (scanning_) {
    // The previous frame moved the mouse to a grid point: act there when ImGui found an item
    // under it (or after a few tries, so empty space gets clicked too).
    if (host.itemHovered() || scanTries_ >= 4) {
      scanning_ = false;
      randomEmit(scanAction_, mouse_, scanWhere_, io);
      return;
    }
    ++scanTries_;
    FrameInput f;
    f.pos = randomPointIn(host, scanWhere_, io);
    randomQueue_.push_back(f);
    return;
  }
  if (randomLeft_ <= 0) return;
  --randomLeft_;
  ++randomDone_;
  // Every 30 events the main tab changes, visiting every tab in a shuffled order per round.
  if (randomDone_ % 30 == 1) {
    if (tabCycle_.empty()) {
      tabCycle_ = host.tabTitles();
      for (std::size_t i = tabCycle_.size(); i > 1; --i) std::swap(tabCycle_[i - 1], tabCycle_[randomBelow(static_cast<unsigned>(i))]);
    }
    if (!tabCycle_.empty()) {
      const std::string title = tabCycle_.back();
      tabCycle_.pop_back();
      std::string probe = "tab_" + title;
      std::replace(probe.begin(), probe.end(), ' ', '_');
      // Clicked when the whole tab is in view; a tab scrolled (partly) out of the tab bar, under
      // its scroll arrows, is opened as --view does.
      ImVec2 p, tabRight, barRight;
      const float arrows = 3.0f * ImGui::GetFontSize();
      if (host.probePoint(probe, 0.5f, 0.5f, p) && host.probePoint(probe, 1.0f, 1.0f, tabRight) &&
          host.probePoint("column_main", 1.0f, 0.0f, barRight) && tabRight.x <= barRight.x - arrows) {
        randomEmit(Action::Click, p, probe, io);
      } else {
        host.selectTab(title);  // scrolled out of the tab bar: opened as --view does
        logEvent("open tab " + title);
        FrameInput f;
        f.pos = mouse_;
        randomQueue_.push_back(f);
      }
      return;
    }
  }
  // The action: mostly pointer work, some keys and typing.
  static constexpr Action kActions[] = {Action::Click,  Action::Click,      Action::Click,     Action::Click,
                                        Action::Click,  Action::DoubleClick, Action::Drag,     Action::Drag,
                                        Action::Drag,   Action::RightClick, Action::CtrlClick, Action::Wheel,
                                        Action::Wheel,  Action::Hover,      Action::Key,       Action::Key,
                                        Action::Key,    Action::Type,       Action::Type};
  const Action action = kActions[randomBelow(static_cast<unsigned>(std::size(kActions)))];
  if (action == Action::Key || action == Action::Type) {
    randomEmit(action, mouse_, "", io);
    return;
  }
  // Where: the open tab's content gets about two thirds of the events, so each tab is really
  // used while it is open. A named widget (50 %: 30 inside the tab, 20 anywhere), else a point
  // of a column (the tab's 38 %, the others 12 %), kept once ImGui reports an item under it.
  const std::vector<std::string> names = host.probeNames();
  std::vector<std::string> widgets, inTab, columns;
  ImVec2 tabMin, tabMax;
  const bool haveTab = host.probePoint("column_main", 0.0f, 0.0f, tabMin) && host.probePoint("column_main", 1.0f, 1.0f, tabMax);
  for (const std::string& n : names) {
    if (n.rfind("column_", 0) == 0) {
      if (n != "column_main") columns.push_back(n);
      continue;
    }
    // Tabs change by the cycle above (and by points of the tab bar): as widgets among others
    // they would switch the tab every few events and no tab would be used for long.
    if (n.rfind("tab_", 0) == 0) continue;
    widgets.push_back(n);
    ImVec2 c;
    if (haveTab && host.probePoint(n, 0.5f, 0.5f, c) && c.x >= tabMin.x && c.x <= tabMax.x && c.y >= tabMin.y &&
        c.y <= tabMax.y) {
      inTab.push_back(n);
    }
  }
  const unsigned where = randomBelow(100);
  if (!widgets.empty() && where < 50) {
    const std::vector<std::string>& pool = !inTab.empty() && where < 30 ? inTab : widgets;
    const std::string& name = pool[randomBelow(static_cast<unsigned>(pool.size()))];
    randomEmit(action, randomPointIn(host, name, io), name, io);
    return;
  }
  if (haveTab && (where < 88 || columns.empty())) {
    scanWhere_ = "column_main";
  } else {
    scanWhere_ = columns.empty() ? std::string("window") : columns[randomBelow(static_cast<unsigned>(columns.size()))];
  }
  scanAction_ = action;
  scanning_ = true;
  scanTries_ = 1;
  FrameInput f;
  f.pos = randomPointIn(host, scanWhere_, io);
  randomQueue_.push_back(f);
}

void InputScript::randomFrame(ScriptHost& host, ImGuiIO& io) {
  io.DeltaTime = 1.0f / 60.0f;  // ImGui's clock (double-click time, key repeat) by frames, not by load
  if (randomQueue_.empty()) randomNextEvent(host, io);
  // The keys the last frame held go up; this frame's input goes in.
  for (const char* name : kRandomKeys) {
    const int k = keyIndexOf(name, io);
    if (k >= 0) io.KeysDown[k] = false;
  }
  io.KeyCtrl = false;
  if (randomQueue_.empty()) {  // finished: everything released
    mouseDown_ = false;
    io.MouseDown[1] = false;
    inputChanged_ = true;
    std::printf("random %llu: %d events done\n", randomSeed_, randomDone_);
    std::fflush(stdout);
    return;
  }
  const FrameInput f = randomQueue_.back();
  randomQueue_.pop_back();
  if (f.pos.x >= 0.0f) mouse_ = f.pos;
  mouseDown_ = f.left;
  io.MouseDown[1] = f.right;
  io.KeyCtrl = f.ctrl;
  if (f.key >= 0) io.KeysDown[f.key] = true;
  if (!f.chars.empty()) io.AddInputCharactersUTF8(f.chars.c_str());
  io.MouseWheel += f.wheel;
  inputChanged_ = true;
}

}  // namespace mhascope::app
