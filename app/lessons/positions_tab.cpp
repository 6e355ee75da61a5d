// The Positions tab — sinusoidal codes, RoPE and ALiBi on the same sentence (one head's weights under
// each), the shift Δ that leaves RoPE's score table as it was and moves the sinusoidal one (their
// difference maps), RoPE's frequency per feature pair and ALiBi's slopes and bias table.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/flow.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

namespace {

struct MapSpec {
  std::string title;
  const Trace* trace = nullptr;  // blocked cells of its mask; null: none drawn
  const float* data = nullptr;
  DataKind kind = DataKind::Probability;
  bool colorbar = false;
  std::optional<ColorRange> range;  // default: by kind
  StageId stage = StageId::Weights;  // what the hover says a cell is ...
  std::string cellMeaning;           // ... unless this says it (a derived table)
};

// Maps in a row, each (T_q, T_k) of batch item b with the tokens as labels; with a probe name, map i
// is the probe "<probe>_<i>" (scripts hover it).
void mapRow(UiContext& ctx, const Trace& t, int b, int head, const std::vector<MapSpec>& maps, int tag, float side,
            const std::string& probe = {}) {
  const float em = ImGui::GetFontSize(), labelsW = 4.5f * em;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    ImGui::PushID(tag + static_cast<int>(i));
    if (i) ImGui::SameLine(0, em);
    ImGui::BeginGroup();
    ImGui::TextUnformatted(maps[i].title.c_str());
    MatrixPicture m;
    m.data = maps[i].data;
    m.rows = t.tq;
    m.cols = t.tk;
    m.rowLabels = t.queryTokens[static_cast<std::size_t>(b)];
    m.colLabels = t.keyTokens[static_cast<std::size_t>(b)];
    m.kind = maps[i].kind;
    m.trace = maps[i].trace;
    m.batchIndex = b;
    m.head = head;
    m.textureTag = tag + static_cast<int>(i);
    m.colorbar = maps[i].colorbar;
    m.range = maps[i].range;
    m.stage = maps[i].stage;
    m.cellMeaning = maps[i].cellMeaning;
    m.numbers = t.tk <= 8;
    drawMatrix(ctx, "m", m, ImVec2(side + labelsW + (m.colorbar ? colorbarWidth() : 0.0f), side + 4.5f * em));
    if (!probe.empty()) ctx.probes.recordLastItem(probe + "_" + std::to_string(i));
    ImGui::EndGroup();
    ImGui::PopID();
  }
}

// A table's rows as text, so its columns can be as wide as their widest cell: the two tables stand
// side by side, and a table as wide as the page (ImGui's default) pushed the second one off it.
using TextRows = std::vector<std::vector<std::string>>;

TextRows frequencyRows(const PositionsLesson& r) {
  TextRows rows;
  for (const RopeFrequency& f : r.frequencies) {
    rows.push_back({formatText("%d", f.pair), formatText("%d, %d", f.featureA, f.featureB), formatText("%.4g", f.invFreq),
                    formatText("%.4g", f.wavelength), formatText("%.4g rad", f.angleAtShift)});
  }
  return rows;
}

TextRows slopeRows(const PositionsLesson& r, int head) {
  TextRows rows;
  for (std::size_t i = 0; i < r.slopes.size(); ++i) {
    rows.push_back({formatText("%zu%s", i, static_cast<int>(i) == head ? " (shown)" : ""),
                    formatText("2^%.3g = %.4g", std::log2(r.slopes[i]), r.slopes[i]), formatText("%.4g", -r.slopes[i])});
  }
  return rows;
}

// Each column's width (its header or its widest cell) and the whole table's, with `scrollbar`.
struct TableWidths {
  std::vector<float> columns;
  float total = 0.0f;
};
TableWidths widthsOf(const std::vector<const char*>& headers, const TextRows& rows, bool scrollbar) {
  const ImGuiStyle& style = ImGui::GetStyle();
  TableWidths w;
  for (std::size_t c = 0; c < headers.size(); ++c) {
    float widest = ImGui::CalcTextSize(headers[c]).x;
    for (const auto& row : rows) widest = std::max(widest, ImGui::CalcTextSize(row[c].c_str()).x);
    w.columns.push_back(widest);
    w.total += widest + 2.0f * style.CellPadding.x + 1.0f;  // + its border
  }
  w.total += 1.0f + (scrollbar ? style.ScrollbarSize : 0.0f);
  return w;
}

const std::vector<const char*> kFrequencyHeaders = {"pair i", "features", "inv_freq (rad / position)",
                                                    "wavelength (tokens)", "angle at Δ"};
const std::vector<const char*> kSlopeHeaders = {"head", "slope m", "per token"};

void textTable(const char* id, const std::vector<const char*>& headers, const TextRows& rows, const TableWidths& w,
               int maxRows, bool headColours) {
  const bool scroll = static_cast<int>(rows.size()) > maxRows;
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                (scroll ? ImGuiTableFlags_ScrollY : 0);
  // Up to maxRows rows in full; more scroll inside the table (d_k = 128 has 64 pairs).
  const float rowH = ImGui::GetTextLineHeight() + 2.0f * ImGui::GetStyle().CellPadding.y;
  const float height = scroll ? (static_cast<float>(maxRows) + 1.5f) * rowH : 0.0f;
  if (!ImGui::BeginTable(id, static_cast<int>(headers.size()), flags, ImVec2(w.total, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (std::size_t c = 0; c < headers.size(); ++c) ImGui::TableSetupColumn(headers[c], ImGuiTableColumnFlags_WidthFixed, w.columns[c]);
  ImGui::TableHeadersRow();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ImGui::TableNextRow();
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      ImGui::TableNextColumn();
      if (c == 0 && headColours) {  // a head's number in its colour
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(static_cast<int>(i))), "%s", rows[i][c].c_str());
      } else {
        ImGui::TextUnformatted(rows[i][c].c_str());
      }
    }
  }
  ImGui::EndTable();
}

}  // namespace

// Over 80 lines on purpose: one tab drawn top to bottom in reading order — the three schemes' weights,
// the shift and its two difference maps, then RoPE's frequencies and ALiBi's slopes — every part using
// the result fetched at the top.
void drawPositionsTab(UiContext& ctx, const LessonOutcome<PositionsLesson>& outcome, lessons::Positions::Choices& pick) {
  lessonHeader(ctx, "Positions: sinusoidal, RoPE, ALiBi", positionsLessonIntro());
  // The shown inputs carry sinusoidal codes when its configuration added them to its text's
  // embeddings; inputs read from files or a trained layer are taken as they are.
  const Document& doc = ctx.state.doc;
  pick.inputsHaveCodes = ctx.state.shown.traceConfig.positions && doc.files.query.empty() &&
                         doc.files.checkpoint.empty() && doc.trainedLayer == nullptr;
  if (!rerunLessonReady<lessons::Positions>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  pick.keepInRange(t);
  ImGui::SetNextItemWidth(16 * em);
  dragSliderInt("shift every position by Δ", &pick.shift, 0, lessons::Positions::Choices::kMaxShift, "%d",
                ImGuiSliderFlags_Logarithmic);
  recordSliderFrame(ctx, "positions_shift", 16 * em);
  if (!lessonOk(outcome)) return;
  const PositionsLesson* r = outcome.get();
  const int b = std::clamp(ctx.view.batch, 0, t.batch - 1);
  const int head = std::clamp(ctx.view.head, 0, t.heads - 1);
  const std::size_t table = static_cast<std::size_t>(t.tq) * static_cast<std::size_t>(t.tk);
  const std::size_t off = (static_cast<std::size_t>(b) * static_cast<std::size_t>(t.heads) + static_cast<std::size_t>(head)) * table;
  const bool rope = r->ropeError.empty();
  // This tab's own range of texture tags, 8 per result (the maps change with Δ and the inputs' codes).
  const int tagBase = 805306368 + 8 * (2 * r->shift + (r->codesRemoved ? 1 : 0));
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(headColor(head)), "head %d (pick it in the Heatmap tab), weights:", head);
  if (r->codesRemoved) {  // beside it when it fits, else on a line of its own: never cut at the edge
    const char* note = "(this configuration's codes taken off the inputs for RoPE and ALiBi)";
    sameLineOrWrap(ImGui::CalcTextSize(note).x, em);
    textWrappedDisabled(note);
  }
  const float avail = ImGui::GetContentRegionAvail().x;
  const float side = std::clamp((avail - colorbarWidth() - 3.0f * 5.5f * em) / 3.0f, 7.0f * em, 15.0f * em);
  std::vector<MapSpec> weights = {
      {"sinusoidal codes on the inputs", &r->sinusoidal, r->sinusoidal.tensor(StageId::Weights).ptr() + off,
       DataKind::Probability, false, std::nullopt, StageId::Weights, {}}};
  if (rope) {
    weights.push_back({"RoPE (q, k turned)", &r->rope, r->rope.tensor(StageId::Weights).ptr() + off,
                       DataKind::Probability, false, std::nullopt, StageId::Weights, {}});
  }
  weights.push_back({"ALiBi (bias on the scores)", &r->alibi, r->alibi.tensor(StageId::Weights).ptr() + off,
                     DataKind::Probability, true, std::nullopt, StageId::Weights, {}});
  mapRow(ctx, t, b, head, weights, tagBase, side);
  if (!rope) drawLessonError("RoPE: " + r->ropeError);

  ImGui::Separator();
  // Both difference maps on the sinusoidal map's colour scale: what RoPE's shift changes is then
  // seen to be nothing, not read off a colour bar of its own that would blow rounding up to full colour.
  const float shared = static_cast<float>(std::max(r->sinusoidalShiftMax, 1e-6));
  // Their hover says what a cell is (a change of a raw score, not a weight) and when the mask blocks it.
  std::vector<MapSpec> diffs;
  if (rope) {
    diffs.push_back({"RoPE: shifted − unshifted, max " + formatNumber(r->ropeShiftMax, 2), &r->rope,
                     r->ropeShiftDiff.ptr() + off, DataKind::Signed, false, ColorRange{-shared, shared}, StageId::Scores,
                     positionsDifferenceMeaning(*r, true)});
  }
  diffs.push_back({"sinusoidal: shifted − unshifted, max " + formatNumber(r->sinusoidalShiftMax, 3), &r->sinusoidal,
                   r->sinusoidalShiftDiff.ptr() + off, DataKind::Signed, true, ColorRange{-shared, shared},
                   StageId::Scores, positionsDifferenceMeaning(*r, false)});
  mapRow(ctx, t, b, head, diffs, tagBase + 3, side, "positions_diff");
  const std::string shiftNote = positionsShiftText(*r);
  textWrapped(shiftNote);
  ctx.probes.recordLabel("positions_shift_note", shiftNote);

  ImGui::Separator();
  const TextRows freqRows = frequencyRows(*r), slopeTable = slopeRows(*r, head);
  constexpr int kMaxFrequencyRows = 8;
  const TableWidths freqW = widthsOf(kFrequencyHeaders, freqRows, static_cast<int>(freqRows.size()) > kMaxFrequencyRows);
  const TableWidths slopesW = widthsOf(kSlopeHeaders, slopeTable, false);
  ImGui::BeginGroup();
  ImGui::TextUnformatted("RoPE's frequency per feature pair");
  textTable("freq", kFrequencyHeaders, freqRows, freqW, kMaxFrequencyRows, false);
  ImGui::EndGroup();
  const float pageRight = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  bool cut = ImGui::GetItemRectMax().x > pageRight + 0.5f;
  // Side by side when both fit, else one under the other.
  if (ImGui::GetItemRectMax().x + 2 * em + slopesW.total <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) {
    ImGui::SameLine(0, 2 * em);
  }
  ImGui::BeginGroup();
  ImGui::TextUnformatted("ALiBi's slopes");
  textTable("slopes", kSlopeHeaders, slopeTable, slopesW, static_cast<int>(slopeTable.size()), true);
  ImGui::EndGroup();
  cut = cut || ImGui::GetItemRectMax().x > pageRight + 0.5f;
  ctx.probes.recordLabel("positions_tables_cut", cut ? "yes" : "no");  // either table past the page's edge
  // The viewed head's bias table, with the two tables' sentences beside it.
  const Tensor& bias = r->alibi.tensor(StageId::PositionBias);  // (1, h, T_q, T_k)
  std::vector<MapSpec> biasMap = {{"ALiBi bias, head " + std::to_string(head), nullptr,
                                   bias.ptr() + static_cast<std::size_t>(head) * table, DataKind::Signed, true,
                                   std::nullopt, StageId::PositionBias, {}}};
  ImGui::BeginGroup();
  mapRow(ctx, t, b, head, biasMap, tagBase + 5, std::min(side, 10.0f * em));
  ImGui::EndGroup();
  ImGui::SameLine(0, 2 * em);
  ImGui::BeginGroup();
  const std::string freq = ropeFrequencyText(*r), slopes = alibiSlopesText(*r);
  textWrappedDisabled(freq);
  textWrappedDisabled(slopes);
  ImGui::EndGroup();
  ctx.probes.recordLabel("positions_frequencies", freq);
  ctx.probes.recordLabel("positions_slopes", slopes);
  ImGui::Separator();
  const std::string theory = positionsTheoryText(*r);
  textWrappedDisabled(theory);
  ctx.probes.recordLabel("positions_theory", theory);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/positions.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::Positions::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawPositionsTab(ui, shown, choices);
}
template void mhascope::lessons::Positions::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
