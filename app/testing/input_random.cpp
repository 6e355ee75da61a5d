// `random SEED N`, the exploration test's input (see input_script.hpp): seeded random clicks,
// drags, wheel, keys and typing on the widgets and tabs on screen, logged so a failure can be
// replayed. Shares InputScript's frame clock with the command player (input_script.cpp).
#include "testing/input_script.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace mhascope::app {
namespace {

// Keys the exploration presses (names of keyIndexOf).
constexpr const char* kRandomKeys[] = {"Right", "Left", "Up", "Down", "Space", "Home", "End", "Enter", "Escape",
                                       "Tab", "Backspace", "Delete", "PageUp", "PageDown", "A"};
// What the exploration types: words, digits, the batch separator, non-ASCII, a code point above
// U+FFFF, signs and a long number (pasted into a Ctrl+clicked slider it must be clamped).
constexpr const char* kRandomTexts[] = {"cat", "the dog ran", "|", "0", "7", "12", "-3", "999999", "1e9", " ",
                                        "é", "猫", "😀", "a|b", "<pad>", "..", "x y z", "nan", "64", "3.5"};

}  // namespace


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

// ~90 lines: one short case per Action, each spelling out the frames of input it plays.
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

// ~95 lines: picks where (a probe, a tab, a column) and what (the action mix), in the order the
// exploration test's log prints them; the two choices share the seeded generator's sequence, so
// splitting them would make it easy to change the order of draws and break every seed's replay.
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
      tabCycle_ = host.tabIds();
      for (std::size_t i = tabCycle_.size(); i > 1; --i) std::swap(tabCycle_[i - 1], tabCycle_[randomBelow(static_cast<unsigned>(i))]);
    }
    if (!tabCycle_.empty()) {
      const std::string id = tabCycle_.back();
      tabCycle_.pop_back();
      const std::string probe = "tab_" + id;
      // Clicked when the whole tab is in view; a tab scrolled (partly) out of the tab bar, under
      // its scroll arrows, is opened as --view does.
      ImVec2 p, tabRight, barRight;
      const float arrows = 3.0f * ImGui::GetFontSize();
      if (host.probePoint(probe, 0.5f, 0.5f, p) && host.probePoint(probe, 1.0f, 1.0f, tabRight) &&
          host.probePoint("column_main", 1.0f, 0.0f, barRight) && tabRight.x <= barRight.x - arrows) {
        randomEmit(Action::Click, p, probe, io);
      } else {
        host.selectTab(id);  // scrolled out of the tab bar: opened as --view does
        logEvent("open tab " + id);
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
