#include "widgets/drag_slider.hpp"

#include <imgui_internal.h>  // ImGuiSliderFlags_ReadOnly, ActiveId: the slider's state before it is drawn

namespace mhascope::app {
namespace {

template <class Draw>
SliderEdit dragOnly(const char* label, ImGuiSliderFlags flags, Draw&& draw) {
  const ImGuiID id = ImGui::GetID(label);
  const ImGuiContext& g = *ImGui::GetCurrentContext();
  // A read-only slider never reaches the code that lets go of it when the button is released:
  // let go here (then IsItemDeactivated reports the end of the edit as usual).
  if (g.ActiveId == id && !ImGui::TempInputIsActive(id) && !ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    ImGui::ClearActiveID();
  }
  // Read-only for ImGui's slider behaviour unless it is being dragged: the press that activates
  // it (and any hold without moving) leaves the value alone. Typing (Ctrl+click) is not affected.
  const bool dragging = g.ActiveId == id && ImGui::IsMouseDragging(ImGuiMouseButton_Left);
  if (!dragging) flags |= ImGuiSliderFlags_ReadOnly;
  // A typed value is clamped to the slider's range too: without this ImGui takes any number
  // (the exploration test typed batch B = 999999 and the configuration check ran out of memory).
  flags |= ImGuiSliderFlags_AlwaysClamp;
  SliderEdit r;
  r.changed = draw(flags);
  r.active = ImGui::IsItemActive();
  r.deactivated = ImGui::IsItemDeactivated();
  if (ImGui::IsItemHovered() && !r.active) ImGui::SetTooltip("Drag to change; Ctrl+click to type a value");
  return r;
}

}  // namespace

SliderEdit dragSliderInt(const char* label, int* v, int lo, int hi, const char* format, ImGuiSliderFlags flags) {
  return dragOnly(label, flags, [&](ImGuiSliderFlags f) { return ImGui::SliderInt(label, v, lo, hi, format, f); });
}

SliderEdit dragSliderFloat(const char* label, float* v, float lo, float hi, const char* format, ImGuiSliderFlags flags) {
  return dragOnly(label, flags, [&](ImGuiSliderFlags f) { return ImGui::SliderFloat(label, v, lo, hi, format, f); });
}

}  // namespace mhascope::app
