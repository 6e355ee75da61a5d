#include "widgets/charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mhascope::app {
namespace {

ImU32 axisColor() { return ImGui::GetColorU32(ImGuiCol_TextDisabled); }

// The y axis: a vertical line, ticks at the given values with their labels right-aligned
// against a gap left of the tick (the tick never touches its label).
void yAxis(ImDrawList* dl, float x, float yTop, float yBottom, double lo, double hi, const std::vector<double>& ticks,
           const ValueFormat& format) {
  const float em = ImGui::GetFontSize();
  dl->AddLine(ImVec2(x, yTop), ImVec2(x, yBottom), axisColor());
  std::vector<float> used;  // label centres drawn so far: labels never overlap each other
  for (double v : ticks) {
    const float y = yBottom - static_cast<float>((v - lo) / (hi - lo)) * (yBottom - yTop);
    dl->AddLine(ImVec2(x - 0.3f * em, y), ImVec2(x, y), axisColor());
    if (std::any_of(used.begin(), used.end(), [&](float u) { return std::abs(u - y) < ImGui::GetTextLineHeight(); })) continue;
    used.push_back(y);
    const std::string s = format(v);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(x - 0.6f * em - ts.x, y - 0.5f * ts.y), ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
  }
}

float yAxisWidth(double lo, double hi, const ValueFormat& format) {
  float w = 0;
  for (double v : {lo, hi, 0.5 * (lo + hi), 0.0}) w = std::max(w, ImGui::CalcTextSize(format(v).c_str()).x);
  return w + 0.9f * ImGui::GetFontSize();
}

}  // namespace

void drawBarChart(const char* id, const char* title, const std::vector<double>& values,
                  const std::vector<std::string>& labels, const std::vector<ImU32>& colors, ImVec2 size,
                  const ValueFormat& format) {
  ImGui::PushID(id);
  ImGui::BeginGroup();  // title + plot are one item (SameLine puts the next chart beside it)
  ImGui::TextUnformatted(title);
  const float em = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  double lo = 0, hi = 0;
  for (double v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (hi == lo) hi = lo + 1;
  const float axisW = yAxisWidth(lo, hi, format);
  const float labelH = ImGui::GetTextLineHeightWithSpacing();
  const float valueH = ImGui::GetTextLineHeight();
  const float x0 = origin.x + axisW, x1 = origin.x + size.x;
  const float yTop = origin.y + valueH, yBottom = origin.y + size.y - labelH;
  const int n = static_cast<int>(values.size());
  const float slot = n > 0 ? (x1 - x0) / static_cast<float>(n) : 1.0f;
  auto yOf = [&](double v) { return yBottom - static_cast<float>((v - lo) / (hi - lo)) * (yBottom - yTop); };
  std::vector<double> ticks = {lo, hi};
  if (lo < 0 && hi > 0) ticks.push_back(0.0);
  yAxis(dl, x0 - 0.2f * em, yTop, yBottom, lo, hi, ticks, format);
  dl->AddLine(ImVec2(x0, yOf(0)), ImVec2(x1, yOf(0)), axisColor());
  // Labels every k-th bar so neighbours never touch.
  float widest = 0, widestValue = 0;
  for (const std::string& l : labels) widest = std::max(widest, ImGui::CalcTextSize(l.c_str()).x);
  for (double v : values) widestValue = std::max(widestValue, ImGui::CalcTextSize(format(v).c_str()).x);
  const int stride = std::max(1, static_cast<int>(std::ceil((widest + 0.6f * em) / slot)));
  const bool showValues = widestValue + 0.3f * em <= slot;
  for (int i = 0; i < n; ++i) {
    const float a = x0 + slot * static_cast<float>(i) + 0.15f * slot, b = x0 + slot * static_cast<float>(i + 1) - 0.15f * slot;
    const double v = values[static_cast<std::size_t>(i)];
    const ImU32 col = i < static_cast<int>(colors.size()) ? colors[static_cast<std::size_t>(i)] : ImGui::GetColorU32(ImGuiCol_PlotHistogram);
    dl->AddRectFilled(ImVec2(a, std::min(yOf(0), yOf(v))), ImVec2(b, std::max(yOf(0), yOf(v))), col);
    const float mid = 0.5f * (a + b);
    if (showValues) {
      const std::string s = format(v);
      const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
      const float y = v >= 0 ? yOf(v) - ts.y : yOf(v);
      dl->AddText(ImVec2(mid - 0.5f * ts.x, std::clamp(y, origin.y, yBottom - ts.y)), ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
    }
    if (i % stride == 0 && i < static_cast<int>(labels.size())) {
      const std::string& l = labels[static_cast<std::size_t>(i)];
      const ImVec2 ts = ImGui::CalcTextSize(l.c_str());
      dl->AddText(ImVec2(mid - 0.5f * ts.x, yBottom + 0.2f * em), ImGui::GetColorU32(ImGuiCol_Text), l.c_str());
    }
  }
  ImGui::Dummy(size);
  ImGui::EndGroup();
  ImGui::PopID();
}

void drawLinePlot(const char* id, const char* title, const std::vector<double>& xs, const std::vector<double>& ys,
                  const char* xName, ImVec2 size, const ValueFormat& format) {
  ImGui::PushID(id);
  ImGui::BeginGroup();  // title + plot are one item (SameLine puts the next chart beside it)
  ImGui::TextUnformatted(title);
  const float em = ImGui::GetFontSize();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  double top = 0;
  for (double v : ys) top = std::max(top, v);
  if (top <= 0) top = 1;
  const float axisW = yAxisWidth(0, top, format);
  const float labelH = ImGui::GetTextLineHeightWithSpacing();
  const float x0 = origin.x + axisW, x1 = origin.x + size.x - 1.5f * em;
  const float yTop = origin.y + 0.5f * em, yBottom = origin.y + size.y - labelH;
  yAxis(dl, x0, yTop, yBottom, 0, top, {0.0, 0.5 * top, top}, format);
  dl->AddLine(ImVec2(x0, yBottom), ImVec2(x1, yBottom), axisColor());
  const std::size_t n = std::min(xs.size(), ys.size());
  if (n >= 2) {
    const double xlo = xs.front(), xhi = xs.back() > xs.front() ? xs.back() : xs.front() + 1;
    auto px = [&](double x) { return x0 + static_cast<float>((x - xlo) / (xhi - xlo)) * (x1 - x0); };
    auto py = [&](double y) { return yBottom - static_cast<float>(y / top) * (yBottom - yTop); };
    std::vector<ImVec2> pts;
    for (std::size_t i = 0; i < n; ++i) pts.emplace_back(px(xs[i]), py(ys[i]));
    dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), ImGui::GetColorU32(ImGuiCol_PlotLines), 0, 2.0f);
    // x ticks: first, middle, last sample, then the axis name.
    float lastRight = -1e9f;
    for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
      const float x = px(xs[i]);
      dl->AddLine(ImVec2(x, yBottom), ImVec2(x, yBottom + 0.3f * em), axisColor());
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", xs[i]);
      const ImVec2 ts = ImGui::CalcTextSize(buf);
      const float left = std::clamp(x - 0.5f * ts.x, x0, x1 - ts.x);
      if (left < lastRight + 0.5f * em) continue;
      dl->AddText(ImVec2(left, yBottom + 0.35f * em), ImGui::GetColorU32(ImGuiCol_Text), buf);
      lastRight = left + ts.x;
    }
    dl->AddText(ImVec2(x1 + 0.3f * em, yBottom - 0.5f * em), ImGui::GetColorU32(ImGuiCol_TextDisabled), xName);
  }
  ImGui::Dummy(size);
  ImGui::EndGroup();
  ImGui::PopID();
}

}  // namespace mhascope::app
