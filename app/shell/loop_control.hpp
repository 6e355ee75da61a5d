// What the frame loop and its test adapter (testing/script_host.hpp) share: requests a script
// makes of the loop (screenshot, quit, a pretend-minimised window, the worker path,
// event-driven frames) and what the loop reports back (GL errors, the layout, the labels on screen).
#pragma once

#include <map>
#include <string>

namespace mhascope::app {

struct LoopControl {
  std::string screenshotPath;   // save after this frame's render
  int exitCode = 0;
  bool quitRequested = false;
  int zeroFramesLeft = 0;       // script: pretend the window is minimised
  bool scriptAsync = false;     // script asked for the worker path
  // event_driven scripts: what the real, event-waiting loop would have on screen
  bool eventDriven = false;
  std::map<std::string, std::string> shownLabels;
  int glErrors = 0;
  double lastFrameWorkSeconds = 0.0;  // the last frame from after its wait to after its swap
  bool wide = true;             // three columns (else the side panels are main tabs)

  void quit(int code) {
    if (exitCode == 0) exitCode = code;
    quitRequested = true;
  }
};

}  // namespace mhascope::app
