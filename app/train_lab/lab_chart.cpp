// Multi-line step charts drawn with ImGui's draw list.
#include "train_lab/lab_chart.hpp"

#include <algorithm>
#include <string>

#include "export/axis_ticks.hpp"
#include "train_lab/curve_columns.hpp"

namespace mhascope::app {
namespace {

ImU32 fromRgb(std::uint32_t rgb, float alpha = 1.0f) {
  return IM_COL32((rgb >> 16) & 0xff, (rgb >> 8) & 0xff, rgb & 0xff, static_cast<int>(alpha * 255));
}

// The series' names with their colours, one per line, right of the plot.
void drawLegend(ImDrawList* dl, const CurvePanel& panel, float x, float y) {
  const float em = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeight();
  for (const auto& s : panel.series) {
    const ImU32 col = fromRgb(s.rgb);
    dl->AddLine(ImVec2(x + 0.4f * em, y + 0.5f * lineH), ImVec2(x + 1.6f * em, y + 0.5f * lineH), col, s.dashed ? 1.0f : 2.5f);
    dl->AddText(ImVec2(x + 1.9f * em, y), ImGui::GetColorU32(ImGuiCol_Text), s.name.c_str());
    y += lineH;
  }
}

}  // namespace

std::optional<double> drawStepChart(const char* id, const CurvePanel& panel, double xLo, double xHi,
                                    std::int64_t markStep, ImVec2 size) {
  ImGui::PushID(id);
  const float em = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 axis = ImGui::GetColorU32(ImGuiCol_TextDisabled), textCol = ImGui::GetColorU32(ImGuiCol_Text);
  std::vector<double> all;
  for (const auto& s : panel.series) all.insert(all.end(), s.ys.begin(), s.ys.end());
  for (double h : panel.hLines) all.push_back(h);
  const AxisRange yr = axisRange(all, panel.logY, panel.fromZero);
  const std::vector<double> yTicks = axisTicks(yr, panel.logY, 4);
  float axisW = 0;
  for (double t : yTicks) axisW = std::max(axisW, ImGui::CalcTextSize(tickLabel(t).c_str()).x);
  axisW += 0.8f * em;
  float legendW = 0;
  for (const auto& s : panel.series) legendW = std::max(legendW, ImGui::CalcTextSize(s.name.c_str()).x);
  legendW += 2.2f * em;
  const float lineH = ImGui::GetTextLineHeight();
  const float x0 = origin.x + axisW, x1 = std::max(x0 + 4 * em, origin.x + size.x - legendW);
  const float yTop = origin.y + lineH + 0.4f * em, yBot = origin.y + size.y - lineH - 0.4f * em;
  const std::string title = panel.title + (panel.logY ? " (log scale)" : "");
  dl->AddText(origin, textCol, title.c_str());
  const AxisRange xr{xLo, xHi > xLo ? xHi : xLo + 1};
  auto px = [&](double x) { return x0 + static_cast<float>(axisFraction(xr, false, x)) * (x1 - x0); };
  auto py = [&](double y) {
    return yBot - static_cast<float>(std::clamp(axisFraction(yr, panel.logY, y), -0.02, 1.02)) * (yBot - yTop);
  };
  dl->AddRect(ImVec2(x0, yTop), ImVec2(x1, yBot), axis);
  for (double t : yTicks) {
    const float y = py(t);
    dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), IM_COL32(255, 255, 255, 22));
    const std::string s = tickLabel(t);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(x0 - 0.4f * em - ts.x, y - 0.5f * ts.y), textCol, s.c_str());
  }
  float lastRight = -1e9f;
  for (double t : axisTicks(xr, false, 6)) {
    const float x = px(t);
    dl->AddLine(ImVec2(x, yBot), ImVec2(x, yBot + 0.3f * em), axis);
    const std::string s = tickLabel(t);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    const float left = std::clamp(x - 0.5f * ts.x, x0, x1 - ts.x);
    if (left < lastRight + 0.4f * em) continue;
    dl->AddText(ImVec2(left, yBot + 0.3f * em), textCol, s.c_str());
    lastRight = left + ts.x;
  }
  dl->PushClipRect(ImVec2(x0, yTop - 2), ImVec2(x1, yBot + 2), true);
  for (double h : panel.hLines) {
    for (float x = x0; x < x1; x += 6) dl->AddLine(ImVec2(x, py(h)), ImVec2(std::min(x + 2.5f, x1), py(h)), axis);
  }
  for (const auto& s : panel.series) {
    std::vector<ImVec2> onScreen;
    for (std::size_t i = 0; i < std::min(s.xs.size(), s.ys.size()); ++i) onScreen.emplace_back(px(s.xs[i]), py(s.ys[i]));
    const std::vector<ImVec2> pts = m4Columns(onScreen);  // at most 4 points per pixel column, same pixels
    const ImU32 col = fromRgb(s.rgb);
    if (pts.size() >= 2) {  // layer 1 and up thinner (the export dashes them)
      dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), col, 0, s.dashed ? 1.5f : 2.2f);
    } else if (pts.size() == 1) {
      dl->AddCircleFilled(pts[0], 2.5f, col);
    }
  }
  if (markStep >= 0) {
    const float x = px(static_cast<double>(markStep));
    dl->AddLine(ImVec2(x, yTop), ImVec2(x, yBot), IM_COL32(235, 80, 80, 230), 1.5f);
  }
  dl->PopClipRect();
  drawLegend(dl, panel, x1, yTop + 0.2f * em);
  ImGui::InvisibleButton("plot", size);
  std::optional<double> clicked;
  if (ImGui::IsItemActive() && ImGui::GetIO().MousePos.x >= x0 && ImGui::GetIO().MousePos.x <= x1) {
    clicked = xr.lo + (ImGui::GetIO().MousePos.x - x0) / (x1 - x0) * (xr.hi - xr.lo);
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("click or drag to show that step everywhere in the Train mode");
  ImGui::PopID();
  return clicked;
}

}  // namespace mhascope::app
