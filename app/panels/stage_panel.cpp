// "This stage": the current stage's formula, its tensors with their shapes, a short explanation
// in our words, and the whole forward pass as pseudocode with this stage's line lit.
#include <imgui.h>

#include <vector>

#include <string>

#include "lessons/lessons.hpp"
#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

// "(B, h, T_q, T_k)" with every symbol in its colour, then " = (1, 4, 9, 9)".
void coloredShape(const Shape& shape, const std::vector<std::string>& axes) {
  ImGui::TextUnformatted("(");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    ImGui::SameLine(0, 0);
    ImGui::TextColored(symbolColorVec(axes[i]), "%s", axes[i].c_str());
    if (i + 1 < axes.size()) {
      ImGui::SameLine(0, 0);
      ImGui::TextUnformatted(", ");
    }
  }
  ImGui::SameLine(0, 0);
  ImGui::Text(") = %s", shapeToString(shape).c_str());
}

}  // namespace

void drawStagePanel(UiContext& ctx) {
  const StageInfo& info = stageInfo(ctx.view.stage);
  const float em = ImGui::GetFontSize();
  // The title and formula are above the heatmap (stepper); here: shapes, why, and code.

  if (ctx.state.shown.hasTrace()) {
    const Trace& tr = ctx.state.shown.trace;
    ImGui::TextDisabled("tensor");
    ImGui::SameLine();
    coloredShape(tr.shapeOf(ctx.view.stage), tr.axesOf(ctx.view.stage));  // the shape only: a lazy stage stays lazy
    if (ctx.view.stage == StageId::ScaledScores) {
      ImGui::TextDisabled("every score × %.4g (%s)", static_cast<double>(tr.scaleFactor), scaleName(tr.scale));
      const std::string size = unscaledLogitsText(tr.scale, tr.dModel, tr.dk, tr.scaleFactor);
      textWrapped(size);
      ctx.probes.recordLabel("scale_size", size);
    }
  }
  ImGui::Spacing();
  textWrapped(info.explanation);

  ImGui::Spacing();
  ImGui::TextDisabled("The whole forward pass (PyTorch-like):");
  const int lit = pseudocodeLineOf(ctx.view.stage);
  const auto& lines = pseudocodeListing();
  if (ctx.monoFont) ImGui::PushFont(ctx.monoFont);
  // The lines of variant stages this configuration does not record (RoPE, grouped K/V, ALiBi,
  // the window) are left out: the listing is the forward that ran.
  std::vector<bool> hidden(lines.size(), false);
  for (int s = 0; s < kStageCount; ++s) {
    const auto id = static_cast<StageId>(s);
    const int line = pseudocodeLineOf(id);
    if (line >= 0 && stageIsVariant(id) && !stageRecorded(ctx.state.shown.trace, id)) hidden[static_cast<std::size_t>(line)] = true;
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (hidden[i]) continue;
    ImGui::PushID(static_cast<int>(i));
    const bool on = static_cast<int>(i) == lit;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 sz = ImGui::CalcTextSize(lines[i].c_str());
    if (on) {
      dl->AddRectFilled(ImVec2(p.x - 0.2f * em, p.y), ImVec2(p.x + std::max(sz.x, ImGui::GetContentRegionAvail().x), p.y + sz.y),
                        IM_COL32(215, 140, 40, 90));
    }
    ImGui::TextColored(on ? ImVec4(1, 0.9f, 0.6f, 1) : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), "%s", lines[i].c_str());
    ImGui::PopID();
  }
  if (ctx.monoFont) ImGui::PopFont();
  if (lit < 0) ImGui::TextDisabled("(an input: it has no line of its own; it is what the first lines read)");
}

}  // namespace mhascope::app
