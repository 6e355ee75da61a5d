#include "widgets/drag_slider.hpp"

#include <imgui_internal.h>  // ImGuiSliderFlags_ReadOnly, ActiveId: the slider's state before it is drawn

#include <cstdio>
#include <string>

namespace mhascope::app {
namespace {

// The slider's range in words: "tokens T: 0 to 1024" ("##id" parts left out).
std::string rangeWords(const char* label, const std::string& lo, const std::string& hi) {
  std::string name = label;
  if (auto at = name.find("##"); at != std::string::npos) name.resize(at);
  return (name.empty() ? std::string() : name + ": ") + lo + " to " + hi;
}

template <class Draw, class AtLimit>
SliderEdit dragOnly(const char* label, ImGuiSliderFlags flags, const std::string& range, Draw&& draw, AtLimit&& atLimit) {
  const ImGuiID id = ImGui::GetID(label);
  const ImGuiContext& g = *ImGui::GetCurrentContext();
  // A typed value outside the range is set to the nearest end: said above the slider (kept in the
  // window's ImGui storage) until the slider is used again, never silently.
  ImGuiStorage* store = ImGui::GetStateStorage();
  const ImGuiID noteKey = ImHashStr("typed past the range", 0, id);
  if (store->GetInt(noteKey, 0) != 0) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s (a typed value past an end is set to that end)", range.c_str());
    ImGui::PopTextWrapPos();
  }
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
  r.changed = draw(flags);
  r.active = ImGui::IsItemActive();
  r.deactivated = ImGui::IsItemDeactivated();
  if (ImGui::IsItemHovered() && !r.active) ImGui::SetTooltip("Drag to change; Ctrl+click to type a value (%s)", range.c_str());
  if (r.active && !typing) store->SetInt(noteKey, 0);  // used again: the note has been read
  if (typing && r.deactivated) store->SetInt(noteKey, atLimit() ? 1 : 0);
  return r;
}

}  // namespace

SliderEdit dragSliderInt(const char* label, int* v, int lo, int hi, const char* format, ImGuiSliderFlags flags) {
  return dragOnly(label, flags, rangeWords(label, std::to_string(lo), std::to_string(hi)),
                  [&](ImGuiSliderFlags f) { return ImGui::SliderInt(label, v, lo, hi, format, f); },
                  [&] { return *v == lo || *v == hi; });
}

SliderEdit dragSliderFloat(const char* label, float* v, float lo, float hi, const char* format, ImGuiSliderFlags flags) {
  char a[32], b[32];
  std::snprintf(a, sizeof a, "%g", static_cast<double>(lo));
  std::snprintf(b, sizeof b, "%g", static_cast<double>(hi));
  return dragOnly(label, flags, rangeWords(label, a, b),
                  [&](ImGuiSliderFlags f) { return ImGui::SliderFloat(label, v, lo, hi, format, f); },
                  [&] { return *v == lo || *v == hi; });
}

}  // namespace mhascope::app
