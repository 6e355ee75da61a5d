#include "widgets/colors.hpp"

#include "util/format.hpp"

#include <algorithm>
#include <cmath>

#include "color/colormap.hpp"

namespace mhascope::app {

ImU32 headColor(int head, float alpha) {
  const RGBA8 c = headLineColor(head);  // the colour exported charts give the head too
  return IM_COL32(c.r, c.g, c.b, static_cast<int>(std::clamp(alpha, 0.0f, 1.0f) * 255.0f + 0.5f));
}

ImVec4 symbolColorVec(std::string_view s) {
  if (s == "T" || s == "T_q" || s == "T_k") return ImVec4(0.45f, 0.78f, 1.00f, 1.0f);  // sky blue
  if (s == "d_model") return ImVec4(1.00f, 0.68f, 0.30f, 1.0f);                       // orange
  if (s == "h·d_k") return ImVec4(0.55f, 0.90f, 0.45f, 1.0f);                         // green, as d_k
  if (s == "h") return ImVec4(0.95f, 0.50f, 0.85f, 1.0f);                             // pink
  if (s == "d_k") return ImVec4(0.55f, 0.90f, 0.45f, 1.0f);                           // green
  if (s == "B") return ImVec4(0.80f, 0.80f, 0.55f, 1.0f);                             // sand
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}

ImU32 symbolColor(std::string_view s) { return ImGui::ColorConvertFloat4ToU32(symbolColorVec(s)); }

ImU32 textColorOn(ImU32 background) {
  const ImVec4 c = ImGui::ColorConvertU32ToFloat4(background);
  const float luma = 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z;
  return luma > 0.5f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
}

void drawResultMessage(const std::string& message, bool isError, float wrapWidth) {
  if (message.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, isError ? kErrorColor : kOkColor);
  ImGui::PushTextWrapPos(wrapWidth > 0.0f ? ImGui::GetCursorPosX() + wrapWidth : 0.0f);
  ImGui::TextUnformatted(printableMessage(message).c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

}  // namespace mhascope::app
