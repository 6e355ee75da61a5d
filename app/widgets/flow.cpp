#include "widgets/flow.hpp"

#include <imgui.h>

namespace mhascope::app {

void sameLineOrWrap(float nextWidth, float spacing) {
  const float gap = spacing >= 0 ? spacing : ImGui::GetStyle().ItemSpacing.x;
  const float lastRight = ImGui::GetItemRectMax().x;
  const float windowRight = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (lastRight + gap + nextWidth <= windowRight) ImGui::SameLine(0, gap);
}

}  // namespace mhascope::app
