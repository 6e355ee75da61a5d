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
