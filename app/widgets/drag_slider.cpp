#include "widgets/drag_slider.hpp"

#include <imgui_internal.h>  // ImGuiSliderFlags_ReadOnly, ActiveId: the slider's state before it is drawn

#include <cstdio>
#include <string>

#include "widgets/colors.hpp"

namespace mhascope::app {
namespace {

// The slider's range in words: "tokens T: 0 to 1024" ("##id" parts left out).
std::string rangeWords(const char* label, const std::string& lo, const std::string& hi) {
  std::string name = label;
  if (auto at = name.find("##"); at != std::string::npos) name.resize(at);
  return (name.empty() ? std::string() : name + ": ") + lo + " to " + hi;
}

// Set to `lo` or `hi` by a typed value past that end: said inside the slider's own frame (its value
// then reads "1024 (set to the max)", in the warning colour) and by its tooltip, so saying it never
// moves the controls under the pointer.
template <class Draw, class AtLimit>
SliderEdit dragOnly(const char* label, ImGuiSliderFlags flags, const char* format, const std::string& range, Draw&& draw,
                    AtLimit&& atLimit) {
  const ImGuiID id = ImGui::GetID(label);
  const ImGuiContext& g = *ImGui::GetCurrentContext();
  // A typed value outside the range is set to the nearest end: said until the slider is used again
  // (kept in the window's ImGui storage: 1 the min, 2 the max), never silently.
  ImGuiStorage* store = ImGui::GetStateStorage();
  const ImGuiID noteKey = ImHashStr("typed past the range", 0, id);
  const int note = store->GetInt(noteKey, 0);
  const std::string shownFormat = std::string(format) + (note == 1 ? " (set to the min)" : note == 2 ? " (set to the max)" : "");
  const bool typing = ImGui::TempInputIsActive(id);
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
  if (note != 0 && !typing) ImGui::PushStyleColor(ImGuiCol_Text, kWarningColor);
  r.changed = draw(flags, typing ? format : shownFormat.c_str());
  if (note != 0 && !typing) ImGui::PopStyleColor();
  r.active = ImGui::IsItemActive();
  r.deactivated = ImGui::IsItemDeactivated();
  if (ImGui::IsItemHovered() && !r.active) {
    if (note != 0) {
      ImGui::SetTooltip("The value typed was past the %s, so it was set to the %s (%s).\nDrag to change; Ctrl+click to type a value.",
                        note == 1 ? "min" : "max", note == 1 ? "min" : "max", range.c_str());
    } else {
      ImGui::SetTooltip("Drag to change; Ctrl+click to type a value (%s)", range.c_str());
    }
  }
  if (r.active && !typing) store->SetInt(noteKey, 0);  // used again: the note has been read
  if (typing && r.deactivated) store->SetInt(noteKey, atLimit());
  return r;
}

}  // namespace

SliderEdit dragSliderInt(const char* label, int* v, int lo, int hi, const char* format, ImGuiSliderFlags flags) {
  return dragOnly(label, flags, format, rangeWords(label, std::to_string(lo), std::to_string(hi)),
                  [&](ImGuiSliderFlags f, const char* fmt) { return ImGui::SliderInt(label, v, lo, hi, fmt, f); },
                  [&] { return *v == lo ? 1 : *v == hi ? 2 : 0; });
}

SliderEdit dragSliderFloat(const char* label, float* v, float lo, float hi, const char* format, ImGuiSliderFlags flags) {
  char a[32], b[32];
  std::snprintf(a, sizeof a, "%g", static_cast<double>(lo));
  std::snprintf(b, sizeof b, "%g", static_cast<double>(hi));
  return dragOnly(label, flags, format, rangeWords(label, a, b),
                  [&](ImGuiSliderFlags f, const char* fmt) { return ImGui::SliderFloat(label, v, lo, hi, fmt, f); },
                  [&] { return *v == lo ? 1 : *v == hi ? 2 : 0; });
}

}  // namespace mhascope::app
