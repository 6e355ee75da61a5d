// How the loop paces itself. Idle, it sleeps until input arrives; after any wake-up it keeps
// drawing until the picture is settled (the frame that handles a click draws the old state of what
// the click changed), a bounded number of frames. Play, a running worker and a blinking text
// cursor need steady frames.
#pragma once

#include <cstdint>
#include <vector>

#include "platform/window.hpp"

namespace mhascope::app {

class FramePacer {
 public:
  // How the loop waits before the next frame (and the settle frames that follow any wake-up).
  enum class Wake { Now, Tick, Event };
  Wake schedule(bool animating);  // animating: playing or computing, poll instead of waiting
  // After ImGui::Render: more settle frames while this frame's picture differs from the last.
  void afterRender(bool realFrame);
  void cancelSettling() { settleFrames_ = 0; }  // an event_driven wake-up that never happened

 private:
  bool pictureChanged();  // this frame's draw data differs from the last one's
  int settleFrames_ = 0;   // frames still to draw after an event (hover, popups settle)
  int changingFrames_ = 0;  // consecutive frames whose picture changed (bounded settling)
  std::uint64_t lastPictureHash_ = 0;
};

// While another thread does the work (training, a long compute), the window draws one frame per
// tick, the tick long enough that drawing takes at most a fifth of the time (1/30 … 0.5 s):
// a software renderer drawing 60 frames a second would take one of the machine's cores from that
// thread. `workSeconds`: a frame's smoothed drawing time (FrameWork). Input still wakes the loop.
double yieldingTickSeconds(double workSeconds);

// A frame's drawing time (from after the wait to after the swap), smoothed over frames.
struct FrameWork {
  double seconds = 0.0;
  void add(double work) { seconds = seconds <= 0 ? work : 0.8 * seconds + 0.2 * work; }
};

// Keys pressed and released within one poll, held down for one frame so ImGui 1.86 sees them.
class KeyTaps {
 public:
  void apply(Window& window);  // after polling events, before the ImGui frame
 private:
  std::vector<int> held_;
};

// Before NewFrame: a press outside open popups closes them first, so the same press reaches
// what is under it.
void clickThroughPopups();

}  // namespace mhascope::app
