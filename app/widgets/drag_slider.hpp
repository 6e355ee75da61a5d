// Sliders that change only while dragged. ImGui's SliderInt jumps to wherever the track is
// pressed, so a click meant to focus it could send h from 4 to 60. Here a press without moving
// changes nothing; once the mouse moves past ImGui's drag threshold the value follows it as a
// slider's does; Ctrl+click types an exact value (the hover tooltip says so), clamped to the
// slider's range.
#pragma once

#include <imgui.h>

namespace mhascope::app {

struct SliderEdit {
  bool changed = false;      // *v changed this frame (dragged or typed)
  bool active = false;       // being dragged or typed into
  bool deactivated = false;  // released / Enter this frame: the edit is complete
};

SliderEdit dragSliderInt(const char* label, int* v, int lo, int hi, const char* format = "%d",
                         ImGuiSliderFlags flags = 0);
SliderEdit dragSliderFloat(const char* label, float* v, float lo, float hi, const char* format = "%.3f",
                           ImGuiSliderFlags flags = 0);

}  // namespace mhascope::app
