// "Shapes": every stage's tensor shape with axis names (the current stage lit, a click goes
// there), and a drawing of the split (B, T, d_model) → (B, T, h, d_k) → (B, h, T, d_k) — and the
// merge back — in the heads' colours, the same as the heatmaps.
#include <imgui.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/flow.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {
namespace {

// "(B,h,T_q,T_k)" with each symbol in its colour.
void axesText(const std::vector<std::string>& axes) {
  ImGui::TextUnformatted("(");
  for (std::size_t a = 0; a < axes.size(); ++a) {
    ImGui::SameLine(0, 0);
    ImGui::TextColored(symbolColorVec(axes[a]), "%s%s", axes[a].c_str(), a + 1 < axes.size() ? "," : "");
  }
  ImGui::SameLine(0, 0);
  ImGui::TextUnformatted(")");
}

std::string axesString(const std::vector<std::string>& axes) {
  std::string out = "(";
  for (std::size_t a = 0; a < axes.size(); ++a) out += axes[a] + (a + 1 < axes.size() ? "," : "");
  return out + ")";
}

// Columns as wide as their widest entry, so "(2, 16, 1024, 1024)" is never cut; when the three do
// not fit side by side the shape goes under its axes (two columns), still whole.
void shapeTable(UiContext& ctx) {
  const Trace& t = ctx.state.shown.trace;
  const ImGuiStyle& style = ImGui::GetStyle();
  float stageW = ImGui::CalcTextSize("stage").x, axesW = ImGui::CalcTextSize("axes").x, shapeW = ImGui::CalcTextSize("shape").x;
  for (int i = 0; i < kStageCount; ++i) {
    const StageId id = static_cast<StageId>(i);
    stageW = std::max(stageW, ImGui::CalcTextSize(stageInfo(id).title).x);
    axesW = std::max(axesW, ImGui::CalcTextSize(axesString(t.axesOf(id)).c_str()).x);
    shapeW = std::max(shapeW, ImGui::CalcTextSize(shapeToString(t.shapeOf(id)).c_str()).x);
  }
  const float cellPad = 2.0f * style.CellPadding.x + 2.0f;
  const bool threeColumns = stageW + axesW + shapeW + 3.0f * cellPad <= ImGui::GetContentRegionAvail().x;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH;
  if (!ImGui::BeginTable("shapes", threeColumns ? 3 : 2, flags)) return;
  ImGui::TableSetupColumn("stage", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn(threeColumns ? "axes" : "axes, shape", ImGuiTableColumnFlags_WidthFixed,
                          threeColumns ? axesW : std::max(axesW, shapeW));
  if (threeColumns) ImGui::TableSetupColumn("shape", ImGuiTableColumnFlags_WidthFixed, shapeW);
  ImGui::TableHeadersRow();
  std::string cut;  // tests: the first entry wider than its cell ("" = all whole)
  auto whole = [&](const std::string& text) {
    if (cut.empty() && ImGui::CalcTextSize(text.c_str()).x > ImGui::GetContentRegionAvail().x + 0.5f) cut = text;
  };
  for (int i = 0; i < kStageCount; ++i) {
    const StageId id = static_cast<StageId>(i);
    if (!stageRecorded(t, id)) continue;  // a variant not in use
    ImGui::PushID(i);
    const std::vector<std::string>& axes = t.axesOf(id);  // shapes only: a lazy stage stays lazy
    const bool current = id == ctx.view.stage;
    ImGui::TableNextRow();
    if (current) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(215, 140, 40, 110));
    ImGui::TableNextColumn();
    if (ImGui::Selectable(stageInfo(id).title, current, ImGuiSelectableFlags_SpanAllColumns)) goToStage(ctx.view, id);
    ImGui::TableNextColumn();
    whole(axesString(axes));
    axesText(axes);
    if (threeColumns) ImGui::TableNextColumn();
    const std::string shape = shapeToString(t.shapeOf(id));
    whole(shape);
    ImGui::TextUnformatted(shape.c_str());
    ImGui::PopID();
  }
  ImGui::EndTable();
  ctx.probes.recordLabel("shapes_cut", cut.empty() ? "none" : cut);
}

// Which part of the drawing the current stage lives in: 0 = a projection (B, T, d_model),
// 2 = per head, -1 = none (the inputs and the output: no head owns their columns).
int drawingRowOf(StageId s) {
  if (s == StageId::Query || s == StageId::Key || s == StageId::Value || s == StageId::Output) return -1;
  return stageHasHeads(s) ? 2 : 0;  // core/attention/stages.cpp: the stages with a head axis
}

// T rows x d_model columns of little cells; `gaps` separates head blocks inside each row
// ((B, T, h, d_k)), `perHead` lays the heads out as separate T x d_k matrices ((B, h, T, d_k)).
// Token rows alternate in brightness so one can follow a token through the transpose.
// `cell` is a column's width; rows are at least rowH tall so wide models (d_model 512: under a
// pixel per column) still show their token rows.
float drawLayout(ImDrawList* dl, ImVec2 p, int tokens, int heads, int dk, float cell, float rowH, float gap, bool gaps,
                 bool perHead) {
  float bottom = p.y;
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < tokens; ++t) {
      const float alpha = (t % 2 == 0) ? 1.0f : 0.6f;
      float x = 0, y = 0, w = cell * static_cast<float>(dk);
      if (perHead) {  // head i's own matrix, heads side by side
        x = p.x + static_cast<float>(h) * (w + 2 * gap);
      } else {
        x = p.x + static_cast<float>(h) * (w + (gaps ? gap : 0.0f));
      }
      y = p.y + static_cast<float>(t) * rowH;
      dl->AddRectFilled(ImVec2(x, y), ImVec2(x + w, y + rowH - 1), headColor(h, alpha));
      if (cell >= 3.0f) {  // column lines only when columns are wide enough to tell apart
        for (int k = 1; k < dk; ++k) {
          const float cx = x + cell * static_cast<float>(k);
          dl->AddLine(ImVec2(cx, y), ImVec2(cx, y + rowH - 1), IM_COL32(0, 0, 0, 60));
        }
      }
      bottom = std::max(bottom, y + rowH);
    }
  }
  return bottom;
}

void splitDrawing(UiContext& ctx) {
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  const int tokens = std::min(t.tq, 6);
  const int heads = t.heads;
  const int dk = t.dk;
  const float availW = ImGui::GetContentRegionAvail().x;
  // Cell size so the widest layout (heads apart) fits; whole blocks when columns get too thin.
  const float gap = std::min(0.5f * em, 0.15f * availW / static_cast<float>(heads));  // many heads: thinner gaps
  // Q's width: h·d_k, d_model unless the heads have a width of their own.
  const int width = heads * dk;
  const std::string wide = width == t.dModel ? "d_model" : "h·d_k = " + std::to_string(width);
  const float cell = std::clamp((availW - 2 * gap * static_cast<float>(heads)) / static_cast<float>(std::max(1, width)),
                                0.25f, 0.8f * em);
  const float rowH = std::max(cell, 0.45f * em);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int lit = drawingRowOf(ctx.view.stage);
  const std::string first = width == t.dModel ? "Q = X_q W_q: (B, T, d_model)   one row of d_model numbers per token"
                                               : "Q = X_q W_q: (B, T, h·d_k)   one row of " + wide +
                                                     " numbers per token (not d_model = " + std::to_string(t.dModel) + ")";
  const char* captions[3] = {first.c_str(), "view → (B, T, h, d_k)   same numbers, grouped by head",
                             "transpose(1, 2) → (B, h, T, d_k)   each head its own T × d_k matrix"};
  for (int row = 0; row < 3; ++row) {
    ImGui::PushID(row);
    // the side column is narrow: wrap, never cut
    textWrappedColored(row == lit ? ImVec4(1, 0.85f, 0.45f, 1) : ImGui::GetStyleColorVec4(ImGuiCol_Text), captions[row]);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float bottom = drawLayout(dl, p, tokens, heads, dk, cell, rowH, gap, row >= 1, row == 2);
    if (row == lit) {
      const float w = row == 2 ? static_cast<float>(heads) * (cell * static_cast<float>(dk) + 2 * gap)
                               : static_cast<float>(heads) * (cell * static_cast<float>(dk) + (row ? gap : 0));
      dl->AddRect(ImVec2(p.x - 3, p.y - 3), ImVec2(p.x + w + 3, bottom + 2), IM_COL32(255, 200, 90, 255), 3.0f, 0, 2.0f);
    }
    ImGui::Dummy(ImVec2(availW, bottom - p.y + 0.3f * em));
    ImGui::PopID();
  }
  if (t.tq > tokens) ImGui::TextDisabled("(first %d of T = %d tokens drawn)", tokens, t.tq);
  if (lit < 0) {
    textWrapped(formatText("This stage (%s): %s. The colours above start at the projections.",
                           stageInfo(ctx.view.stage).title, noHeadOwnerNote(ctx.view.stage)));
  }
  textWrapped("After attention each head's T × d_k output goes back the same way: transpose(1, 2), then "
              "reshape to (B, T, h·d_k), so head i fills columns i·d_k … (i+1)·d_k − 1 again (Merge heads); W_o "
              "maps the h·d_k columns back to d_model.");
}

}  // namespace

void drawShapeTracePanel(UiContext& ctx) {
  if (!ctx.state.shown.hasTrace()) {
    ImGui::TextDisabled("no trace yet");
    return;
  }
  const Trace& t = ctx.state.shown.trace;
  // The sizes wrap onto a second line rather than losing "d_k = 64" at the column's edge.
  const std::pair<const char*, std::string> sizes[] = {
      {"B", "B = " + std::to_string(t.batch)}, {"T", "T_q = " + std::to_string(t.tq) + "  T_k = " + std::to_string(t.tk)},
      {"d_model", "d_model = " + std::to_string(t.dModel)}, {"h", "h = " + std::to_string(t.heads)},
      {"d_k", "d_k = " + std::to_string(t.dk)},
      // N K/V heads only when grouped (N = h is multi-head attention, said by h alone)
      {"h", t.kvHeads > 0 && t.kvHeads != t.heads ? "N = " + std::to_string(t.kvHeads) : std::string()}};
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    if (sizes[i].second.empty()) continue;
    if (i > 0) sameLineOrWrap(ImGui::CalcTextSize(sizes[i].second.c_str()).x);
    ImGui::TextColored(symbolColorVec(sizes[i].first), "%s", sizes[i].second.c_str());
  }
  shapeTable(ctx);
  ImGui::Spacing();
  splitDrawing(ctx);
}

}  // namespace mhascope::app
