// Shared helpers of the lesson tabs (see lesson_tab.hpp).
#include "lessons/lesson_tab.hpp"

#include <cstdarg>
#include <cstdio>
#include <limits>

#include "render/texture_keys.hpp"
#include "widgets/colors.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

bool rerunLessonReady(UiContext& ctx, bool hasResult) {
  if (!traceReady(ctx)) return false;
  const double bytes = recordedTraceBytes(ctx.state.shown.trace);
  if (bytes > kRecomputeLimitBytes) {
    textWrapped(formatText("This lesson recomputes the whole pass several times; at %s per trace that would stall the "
                           "window. Use fewer tokens, heads or batch items (below %s).",
                           formatBytes(bytes).c_str(), formatBytes(kRecomputeLimitBytes).c_str()));
    return false;
  }
  if (!hasResult) {
    ImGui::TextDisabled("computing this lesson…");
    return false;
  }
  return true;
}

void drawLessonError(const std::string& message) {
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "%s", message.c_str());
}

MatrixPicture pictureOf(const Slice2D& s) {
  MatrixPicture m;
  m.data = s.data;
  m.rows = s.rows;
  m.cols = s.cols;
  m.rowLabels = s.rowLabels;
  m.colLabels = s.colLabels;
  return m;
}

// A slider's frame alone, `width` wide (set with SetNextItemWidth): the probe a script drags across.
void recordSliderFrame(UiContext& ctx, const char* name, float width) {
  const ImVec2 min = ImGui::GetItemRectMin();
  ctx.probes.recordRect(name, min, ImVec2(min.x + width, ImGui::GetItemRectMax().y));
}

void lessonHeader(UiContext& ctx, const char* title, const char* why) {
  if (ctx.titleFont) ImGui::PushFont(ctx.titleFont);
  ImGui::TextUnformatted(title);
  if (ctx.titleFont) ImGui::PopFont();
  textWrappedDisabled(why);
  ImGui::Spacing();
}

HeatmapHover drawMatrix(UiContext& ctx, const char* id, const MatrixPicture& m, ImVec2 size) {
  Slice2D s;
  s.stage = m.stage;
  s.batchIndex = m.batchIndex;
  s.head = m.head;
  s.rows = m.rows;
  s.cols = m.cols;
  s.data = m.data;
  s.rowAxis = m.rowAxis;
  s.colAxis = m.colAxis;
  s.rowLabels = m.rowLabels;
  s.colLabels = m.colLabels;
  for (int r = static_cast<int>(s.rowLabels.size()); r < m.rows; ++r) s.rowLabels.push_back(std::to_string(r));
  for (int c = static_cast<int>(s.colLabels.size()); c < m.cols; ++c) s.colLabels.push_back(std::to_string(c));
  // Blocked cells look as everywhere else, where this picture's numbers do show the mask took
  // effect (a lesson's broken pipeline may not have applied it).
  if (m.trace && m.rows == m.trace->tq && m.cols == m.trace->tk &&
      (m.stage == StageId::Weights || m.stage == StageId::MaskedScores)) {
    markBlockedCells(*m.trace, s);
    if (s.blockedCells) {  // the trace's flags, less the cells whose numbers say otherwise
      const std::size_t n = static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols);
      std::vector<std::uint8_t> cells(s.blockedCells, s.blockedCells + n);
      for (std::size_t i = 0; i < n; ++i) {
        const float v = m.data[i];
        if (cells[i] && v != 0.0f && v != -std::numeric_limits<float>::infinity()) cells[i] = 0;
      }
      s.setBlockedCells(std::move(cells));
    }
  }
  HeatmapSpec spec;
  spec.slice = &s;
  spec.colormap = defaultColormap(m.kind);
  spec.range = m.range ? *m.range : rangeFor(m.kind, m.data, static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols));
  spec.trace = m.trace;
  spec.showNumbers = m.numbers;
  spec.interactive = false;
  spec.heads = m.heads;
  spec.dk = m.dk;
  if (m.colorbar) spec.colorbarTexture = ctx.textures.colorbar(spec.colormap).imguiId();
  if (m.head >= 0) spec.frameColor = headColor(m.head);
  // Lesson pictures have slots of their own, so they never share a texture with a stage.
  const TextureKey key{ctx.state.shown.traceSerial, kLessonSlot + m.textureTag, m.batchIndex, m.head, spec.colormap, spec.range.lo,
                       spec.range.hi};
  spec.textures = &ctx.textures;
  spec.textureKey = key;
  spec.kind = m.kind;
  spec.cellMeaning = m.cellMeaning;
  return drawHeatmap(id, spec, nullptr, size);
}

std::string formatCount(std::int64_t v) {
  const std::string digits = std::to_string(v);
  const std::size_t start = v < 0 ? 1 : 0;
  std::string out = digits.substr(0, start);
  for (std::size_t i = start; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

bool beginPublishedTable(const char* id, std::initializer_list<const char*> columns, std::size_t rows) {
  const ImGuiTableFlags flags =
      ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float rowH = ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 1.0f;
  const float height = static_cast<float>(rows + 1) * rowH + style.ScrollbarSize + 2.0f;
  if (!ImGui::BeginTable(id, static_cast<int>(columns.size()), flags, ImVec2(0.0f, height))) return false;
  for (const char* c : columns) ImGui::TableSetupColumn(c);
  ImGui::TableHeadersRow();
  return true;
}

std::string formatNumber(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

void coloredSymbol(const char* symbol, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ImGui::PushStyleColor(ImGuiCol_Text, symbolColor(symbol));
  ImGui::TextV(fmt, args);
  ImGui::PopStyleColor();
  va_end(args);
}

}  // namespace mhascope::app
