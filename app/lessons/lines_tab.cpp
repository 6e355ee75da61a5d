// The Lines tab — token lines: queries on the left, keys on the right, a line from each query to each
// key whose opacity is the weight, one colour per head. Click a head to switch it off; hover a
// token to keep only its lines.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/labels.hpp"

namespace mhascope::app {

// Over 80 lines (108) on purpose: one tab drawn top to bottom in reading order — the head switches,
// the two token rows and the lines between them — every part using the trace, batch item, sizes and
// result fetched at the top.
void drawLinesTab(UiContext& ctx, const LessonOutcome<NoResult>& /*the recorded weights are drawn*/, lessons::Lines::Choices& pick) {
  lessonHeader(ctx, "Token lines",
               "The same weights as the heatmaps, drawn as lines: each query (left) sends a line to each key (right), "
               "as opaque as its weight. Heads overlap in their own colours; hover a token to see only its lines.");
  if (!traceReady(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  if (static_cast<int>(pick.hidden.size()) != t.heads) pick.hidden.assign(static_cast<std::size_t>(t.heads), 0);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("heads:");
  for (int h = 0; h < t.heads && h < 64; ++h) {
    ImGui::SameLine();
    ImGui::PushID(h);
    const bool off = pick.hidden[static_cast<std::size_t>(h)] != 0;
    ImGui::PushStyleColor(ImGuiCol_Button, headColor(h, off ? 0.15f : 0.85f));
    ImGui::PushStyleColor(ImGuiCol_ButtonHovered, headColor(h, 1.0f));
    ImGui::PushStyleColor(ImGuiCol_Text, off ? ImGui::GetColorU32(ImGuiCol_TextDisabled) : textColorOn(headColor(h)));
    if (ImGui::Button(std::to_string(h).c_str())) pick.hidden[static_cast<std::size_t>(h)] = off ? 0 : 1;
    ctx.probes.recordLastItem("lines_head_" + std::to_string(h));
    ImGui::PopStyleColor(3);
    ImGui::PopID();
  }
  ImGui::SameLine(0, em);
  if (ImGui::SmallButton("all")) std::fill(pick.hidden.begin(), pick.hidden.end(), 0);

  // Layout: two columns of token labels, lines between them.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const int rows = std::max(t.tq, t.tk);
  const float rowH = std::clamp((avail.y - em) / static_cast<float>(rows), 2.0f, 2.0f * em);
  const float labelW = 9.0f * em;
  const float width = std::min(avail.x, 42.0f * em);
  const float leftX = origin.x + labelW, rightX = origin.x + width - labelW;
  const auto& qt = t.queryTokens[static_cast<std::size_t>(b)];
  const auto& kt = t.keyTokens[static_cast<std::size_t>(b)];
  auto yOf = [&](int i) { return origin.y + (static_cast<float>(i) + 0.5f) * rowH; };
  // Which token the mouse is over (side 0 = query, 1 = key).
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  int hoverSide = -1, hoverIndex = -1;
  if (ImGui::IsWindowHovered() && mouse.y >= origin.y && mouse.y < origin.y + rowH * static_cast<float>(rows)) {
    const int i = static_cast<int>((mouse.y - origin.y) / rowH);
    if (mouse.x >= origin.x && mouse.x < leftX && i < t.tq) hoverSide = 0, hoverIndex = i;
    if (mouse.x > rightX && mouse.x <= rightX + labelW && i < t.tk) hoverSide = 1, hoverIndex = i;
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const Tensor& w = t.tensor(StageId::Weights);
  const bool showText = rowH >= em * 0.9f;
  // At most kMaxLines lines, the strongest: at T = 512 there can be 10^5 lines above 0.01, and
  // drawing them took seconds per frame (found by the exploration test). A histogram of the
  // weights (bins of 1/256) gives the threshold in one pass.
  constexpr int kMaxLines = 1500;
  float threshold = 0.01f;
  {
    int bins[257] = {};
    for (int h = 0; h < t.heads; ++h) {
      if (pick.hidden[static_cast<std::size_t>(h)]) continue;
      const float* wh = w.ptr() + (static_cast<std::size_t>(b) * static_cast<std::size_t>(t.heads) + static_cast<std::size_t>(h)) *
                                      static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk);
      for (std::size_t i = 0, n = static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk); i < n; ++i) {
        if (wh[i] > 0.01f) ++bins[std::min(256, static_cast<int>(wh[i] * 256.0f))];
      }
    }
    int kept = 0;
    for (int bin = 256; bin >= 0; --bin) {
      if (kept + bins[bin] > kMaxLines) {
        threshold = std::max(threshold, static_cast<float>(bin + 1) / 256.0f);
        break;
      }
      kept += bins[bin];
    }
  }
  for (int h = 0; h < t.heads; ++h) {
    if (pick.hidden[static_cast<std::size_t>(h)]) continue;
    const float* wh = w.ptr() + (static_cast<std::size_t>(b) * static_cast<std::size_t>(t.heads) + static_cast<std::size_t>(h)) *
                                     static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk);
    for (int q = 0; q < t.tq; ++q) {
      if (hoverSide == 0 && q != hoverIndex) continue;
      for (int k = 0; k < t.tk; ++k) {
        if (hoverSide == 1 && k != hoverIndex) continue;
        const float a = wh[static_cast<std::size_t>(q) * static_cast<std::size_t>(t.tk) + static_cast<std::size_t>(k)];
        if (!(a > threshold)) continue;  // invisible anyway (or too many); also skips masked (0) cells
        dl->AddLine(ImVec2(leftX + 0.3f * em, yOf(q)), ImVec2(rightX - 0.3f * em, yOf(k)), headColor(h, std::min(1.0f, a)),
                    std::max(1.0f, 0.15f * em));
      }
    }
  }
  if (showText) {
    for (int q = 0; q < t.tq; ++q) {
      const std::string s = fitText(readableToken(qt[static_cast<std::size_t>(q)], ImGui::GetFont()), labelW - 0.6f * em);
      const bool lit = hoverSide == 0 && hoverIndex == q;
      const float tw = ImGui::CalcTextSize(s.c_str()).x;
      dl->AddText(ImVec2(leftX - 0.4f * em - tw, yOf(q) - 0.5f * em),
                  lit ? IM_COL32(255, 255, 255, 255) : ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
    }
    for (int k = 0; k < t.tk; ++k) {
      const std::string s = fitText(readableToken(kt[static_cast<std::size_t>(k)], ImGui::GetFont()), labelW - 0.6f * em);
      const bool lit = hoverSide == 1 && hoverIndex == k;
      dl->AddText(ImVec2(rightX + 0.4f * em, yOf(k) - 0.5f * em),
                  lit ? IM_COL32(255, 255, 255, 255) : ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
    }
  }
  ImGui::Dummy(ImVec2(width, rowH * static_cast<float>(rows)));
  ImGui::TextDisabled("queries (T_q = %d) on the left, keys (T_k = %d) on the right%s", t.tq, t.tk,
                      showText ? "" : "; too many tokens for labels: widen the window or use fewer tokens");
  if (threshold > 0.01f) ImGui::TextDisabled("only the %d strongest lines (weight > %.3f) are drawn", kMaxLines, threshold);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/lines.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Lines::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawLinesTab(ui, shown, choices);
}
template void mhascope::lessons::Lines::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
