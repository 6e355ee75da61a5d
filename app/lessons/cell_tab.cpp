// The Cell tab — one cell, taken apart: click a score cell; see q and k, their elementwise product,
// the sum, the scale factor, and the whole row's softmax with the max subtracted.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "widgets/drag_slider.hpp"
#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {

// Over 80 lines (120) on purpose: one tab drawn top to bottom in reading order — the score map, the
// q·k table, the scaling line and the row softmax table — every part using the trace, batch item,
// sizes and result fetched at the top.
void drawCellTab(UiContext& ctx, const LessonOutcome<CellBreakdown>& outcome, lessons::Cell::Choices& pick) {
  lessonHeader(ctx, "One cell, taken apart", cellLessonIntro());
  if (!traceReady(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  pick.head = std::clamp(pick.head, 0, t.heads - 1);
  pick.query = std::clamp(pick.query, 0, t.tq - 1);
  pick.key = std::clamp(pick.key, 0, t.tk - 1);
  ImGui::SetNextItemWidth(8 * em);
  dragSliderInt("head i", &pick.head, 0, t.heads - 1);  // 0-based, as everywhere
  ImGui::SameLine();
  ImGui::TextDisabled("click a cell of the scaled scores");

  {
    ImGui::BeginGroup();
    const Slice2D* s = ctx.state.shown.slice(StageId::ScaledScores, b, pick.head);
    if (s) {
      MatrixPicture m = pictureOf(*s);
      m.kind = DataKind::Signed;
      m.stage = StageId::ScaledScores;
      m.batchIndex = b;
      m.head = pick.head;
      m.textureTag = 90;
      m.numbers = t.tk <= 10;
      const float side = std::clamp(ImGui::GetContentRegionAvail().x * 0.45f - colorbarWidth(), 10.0f * em, 22.0f * em);
      const HeatmapHover hov = drawMatrix(ctx, "scores", m, ImVec2(side + colorbarWidth() + 0.5f * em, side));
      ctx.probes.recordLastItem("cell_heatmap");
      if (hov.clicked) {
        pick.query = hov.row;
        pick.key = hov.col;
      }
    }
    ImGui::EndGroup();
    ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    // The breakdown of the cell chosen above (after a click, of the previous cell for the
    // frame until the scheduler has recomputed it).
      if (!lessonOk(outcome)) {
      ImGui::EndGroup();
      return;
    }
    const CellBreakdown* c = outcome.get();
    const auto& qt = t.queryTokens[static_cast<std::size_t>(b)];
    const auto& kt = t.keyTokens[static_cast<std::size_t>(b)];
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(c->head)), "head %d: query %d '%s' . key %d '%s'",
                       c->head, c->query, qt[static_cast<std::size_t>(c->query)].c_str(), c->key,
                       kt[static_cast<std::size_t>(c->key)].c_str());
    if (ImGui::BeginTable("qk", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                       ImGuiTableFlags_ScrollY,
                          ImVec2(24.0f * em, std::min(static_cast<float>(c->q.size() + 2) * ImGui::GetFrameHeight(), 12.0f * em)))) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("d_k feature");
      ImGui::TableSetupColumn("q");
      ImGui::TableSetupColumn("k");
      ImGui::TableSetupColumn("q * k");
      ImGui::TableHeadersRow();
      for (std::size_t i = 0; i < c->q.size(); ++i) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%zu", i);
        ImGui::TableNextColumn();
        ImGui::Text("%+.4f", static_cast<double>(c->q[i]));
        ImGui::TableNextColumn();
        ImGui::Text("%+.4f", static_cast<double>(c->k[i]));
        ImGui::TableNextColumn();
        ImGui::Text("%+.5f", c->products[i]);
      }
      ImGui::EndTable();
    }
    ImGui::Text("sum = q . k = %+.5f", c->dot);
    if (c->handSet)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "recorded score %+.4f: this cell was set by hand",
                         static_cast<double>(c->recordedScore));
    ImGui::Text("x %.5g (%s) = %+.5f   (recorded %+.5f)", static_cast<double>(c->scaleFactor), scaleName(t.scale),
                c->scaled, static_cast<double>(c->recordedScaled));
    if (c->blocked) {  // the blocked look every view shares: blocked colour + cross
      drawBlockedSwatch(ImGui::GetWindowDrawList(), ImGui::GetCursorScreenPos(), defaultColormap(DataKind::Probability));
      ImGui::Dummy(ImVec2(1.1f * em, em));
      ImGui::SameLine(0, 0.2f * em);
      ImGui::TextUnformatted("blocked by the mask: score -inf, weight exactly 0");
    }
    ImGui::EndGroup();
    // The row's softmax.
    ImGui::Separator();
    ImGui::Text("Row softmax: max = %.4f, sum of exp(x - max) = %.5f", c->rowMax, c->rowExpSum);
    if (ImGui::BeginTable("row", static_cast<int>(std::min<std::size_t>(c->rowLogits.size(), 16)) + 1,
                          ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX)) {
      const int n = static_cast<int>(std::min<std::size_t>(c->rowLogits.size(), 16));
      ImGui::TableSetupColumn("key");
      for (int k = 0; k < n; ++k) ImGui::TableSetupColumn(kt[static_cast<std::size_t>(k)].c_str());
      ImGui::TableHeadersRow();
      auto line = [&](const char* name, auto value) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(name);
        for (int k = 0; k < n; ++k) {
          ImGui::TableNextColumn();
          const bool blocked = t.isBlocked(b, c->query, k);
          if (blocked) {  // the blocked colour, as in every heatmap
            const RGBA8 g = blockedColor(defaultColormap(DataKind::Probability));
            ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, IM_COL32(g.r, g.g, g.b, 255));
          }
          if (k == c->key) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, headColor(c->head, 0.35f));
          ImGui::TextUnformatted(((blocked ? "× " : "") + value(static_cast<std::size_t>(k))).c_str());
        }
      };
      line("logit", [&](std::size_t k) { return std::isinf(c->rowLogits[k]) ? std::string("-inf") : formatNumber(c->rowLogits[k], 3); });
      line("exp(x - max)", [&](std::size_t k) { return formatNumber(c->rowExp[k], 3); });
      line("weight", [&](std::size_t k) { return formatNumber(c->rowSoftmax[k], 3); });
      ImGui::EndTable();
    }
    ImGui::TextDisabled("Recomputed row vs recorded weights: max |difference| %.2g", c->rowMaxAbsDiff);
  }
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/cell.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Cell::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawCellTab(ui, shown, choices);
}
template void mhascope::lessons::Cell::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
