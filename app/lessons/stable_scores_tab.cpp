// The Stable scores tab — q/k norm, the softcap and query_pre_attn_scalar on this sentence: the growth g
// of q and k, a toggle per stabiliser, the textbook and the stabilised scores' histograms on one axis,
// the cap's curve with the textbook scores under it, each stabiliser's numbers, and published
// configurations.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lessons/lesson_tab.hpp"
#include "widgets/colors.hpp"
#include "widgets/drag_slider.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

namespace {

ImU32 axisColor() { return ImGui::GetColorU32(ImGuiCol_TextDisabled); }

// A plot's frame with its title above it; returns the plot's rectangle (inside the axis labels).
struct PlotBox {
  ImVec2 min, max;
  float xOf(double v, double lo, double hi) const {
    return min.x + static_cast<float>((v - lo) / (hi - lo)) * (max.x - min.x);
  }
  float yOf(double v, double lo, double hi) const {
    return max.y - static_cast<float>((v - lo) / (hi - lo)) * (max.y - min.y);
  }
};
PlotBox beginPlot(const char* title, ImVec2 size) {
  ImGui::TextUnformatted(title);
  const float em = ImGui::GetFontSize();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::Dummy(size);
  const float line = ImGui::GetTextLineHeight();
  return {ImVec2(o.x + 0.5f * em, o.y + 0.3f * em), ImVec2(o.x + size.x - 0.5f * em, o.y + size.y - 1.4f * line)};
}
// Ticks under the x axis at lo, 0 and hi.
void xTicks(ImDrawList* dl, const PlotBox& b, double lo, double hi) {
  dl->AddLine(ImVec2(b.min.x, b.max.y), b.max, axisColor());
  for (double v : {lo, 0.0, hi}) {
    const float x = b.xOf(v, lo, hi);
    const std::string s = formatNumber(v, 3);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    const float left = std::clamp(x - 0.5f * ts.x, b.min.x - 0.5f * ImGui::GetFontSize(), b.max.x - ts.x);
    dl->AddLine(ImVec2(x, b.max.y), ImVec2(x, b.max.y + 0.3f * ImGui::GetFontSize()), axisColor());
    dl->AddText(ImVec2(left, b.max.y + 0.35f * ImGui::GetFontSize()), ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
  }
}

// One histogram's bars over [−range, range], scaled to `tallest` (the larger of the two shown).
void histogramPlot(const char* title, const std::vector<int>& counts, double range, int tallest, ImU32 color,
                   ImVec2 size) {
  ImGui::BeginGroup();
  const PlotBox b = beginPlot(title, size);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int n = static_cast<int>(counts.size());
  const float w = (b.max.x - b.min.x) / static_cast<float>(std::max(n, 1));
  for (int i = 0; i < n; ++i) {
    const float top = b.yOf(counts[static_cast<std::size_t>(i)], 0.0, std::max(tallest, 1));
    const float left = b.min.x + static_cast<float>(i) * w;
    dl->AddRectFilled(ImVec2(left + 1.0f, top), ImVec2(left + w, b.max.y), color);
  }
  xTicks(dl, b, -range, range);
  ImGui::EndGroup();
}

// The cap s ↦ c tanh(s / c) against the line s, the bounds ±c, and the textbook scores' histogram
// under it: where the live scores fall on the curve.
void capCurvePlot(const StableScoresLesson& r, ImVec2 size) {
  ImGui::BeginGroup();
  const PlotBox b = beginPlot("softcap c tanh(s / c) (curve), s (grey), the textbook scores (bars)", size);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const double x = r.curveRange;
  const int tallest = std::max(1, *std::max_element(r.rawOnCurve.begin(), r.rawOnCurve.end()));
  const int n = static_cast<int>(r.rawOnCurve.size());
  const float w = (b.max.x - b.min.x) / static_cast<float>(std::max(n, 1));
  for (int i = 0; i < n; ++i) {
    const float h = 0.3f * (b.max.y - b.min.y) * static_cast<float>(r.rawOnCurve[static_cast<std::size_t>(i)]) /
                    static_cast<float>(tallest);
    const float left = b.min.x + static_cast<float>(i) * w;
    dl->AddRectFilled(ImVec2(left + 1.0f, b.max.y - h), ImVec2(left + w, b.max.y), headColor(0, 0.45f));
  }
  for (double c : {-static_cast<double>(r.cap), static_cast<double>(r.cap)}) {
    const float y = b.yOf(c, -x, x);
    dl->AddLine(ImVec2(b.min.x, y), ImVec2(b.max.x, y), axisColor());
  }
  dl->AddLine(ImVec2(b.min.x, b.max.y), ImVec2(b.max.x, b.min.y), axisColor());  // the line s
  std::vector<ImVec2> pts;
  for (const CurvePoint& p : r.curve) pts.emplace_back(b.xOf(p.s, -x, x), b.yOf(p.capped, -x, x));
  dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), headColor(1), 0, 2.0f);
  const std::string c = "±c = ±" + formatNumber(r.cap, 4);
  dl->AddText(ImVec2(b.min.x + 0.3f * ImGui::GetFontSize(), b.yOf(r.cap, -x, x) - ImGui::GetTextLineHeight()),
              ImGui::GetColorU32(ImGuiCol_Text), c.c_str());
  xTicks(dl, b, -x, x);
  ImGui::EndGroup();
}

void publishedTable(const StableScoresLesson& r) {
  if (!beginPublishedTable("stable_published",
                           {"model", "d_model / h", "d_k", "q_s", "scale", "softcap c", "q/k norm"},
                           r.published.size()))
    return;
  for (const PublishedStable& p : r.published) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.name);
    ImGui::TableNextColumn();
    ImGui::Text("%d / %d = %d", p.dModel, p.heads, p.dModel / p.heads);
    ImGui::TableNextColumn();
    ImGui::Text("%d", p.headDim);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.preAttnScalar > 0 ? std::to_string(p.preAttnScalar).c_str() : "-");
    ImGui::TableNextColumn();
    ImGui::Text("1/sqrt(%d)", p.preAttnScalar > 0 ? p.preAttnScalar : p.headDim);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.softcap > 0 ? formatNumber(p.softcap, 3).c_str() : "-");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(p.qkNorm);
  }
  ImGui::EndTable();
}

// The next item `width` wide beside the last one when the line has room for it, else on a line of its own.
void sameLineIfRoom(float width, float gap) {
  const float right = ImGui::GetItemRectMax().x + gap + width;
  if (right <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine(0, gap);
}
float checkboxWidth(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
}

// A checkbox over a 0/1 choice, recorded as probe `name` for the scripts.
void toggle(UiContext& ctx, const char* label, int* v, const char* name) {
  bool on = *v != 0;
  if (ImGui::Checkbox(label, &on)) *v = on ? 1 : 0;
  ctx.probes.recordLastItem(name);
}

}  // namespace

// Over 60 lines on purpose: one tab drawn top to bottom in reading order — the choices, the two
// distributions, each stabiliser with its numbers, the published models — every part using the result
// fetched at the top.
void drawStableScoresTab(UiContext& ctx, const LessonOutcome<StableScoresLesson>& outcome,
                         lessons::StableScores::Choices& pick) {
  lessonHeader(ctx, "Stable scores: keeping attention scores bounded", stableScoresIntro());
  if (!rerunLessonReady<lessons::StableScores>(ctx)) return;
  const Trace& t = ctx.state.shown.trace;
  const float em = ImGui::GetFontSize();
  pick.keepInRange(t);
  ImGui::SetNextItemWidth(14 * em);
  if (dragSliderFloat("##growth", &pick.growth, 0.1f, 100.0f, "q, k grown by g = %.2f", ImGuiSliderFlags_Logarithmic)
          .changed)
    pick.keepInRange(t);
  recordSliderFrame(ctx, "stable_growth", 14 * em);
  const char* whole = "over the whole projection (OLMo 2)";
  sameLineIfRoom(checkboxWidth("q/k norm") + em + checkboxWidth(whole), em);
  toggle(ctx, "q/k norm", &pick.qkNorm, "stable_qk_norm");
  sameLineIfRoom(checkboxWidth(whole), em);
  // A model folder's layer brings its own gains, which decide the width: the toggle is for gains of 1.
  const bool ownGains = outcome.get() != nullptr && outcome.get()->bound.learnedGains;
  ImGui::BeginDisabled(ownGains);
  toggle(ctx, whole, &pick.wholeProjection, "stable_whole_projection");
  ImGui::EndDisabled();
  toggle(ctx, "softcap", &pick.softcap, "stable_softcap");
  ImGui::SameLine(0, 0.5f * em);
  ImGui::SetNextItemWidth(10 * em);
  if (dragSliderFloat("##cap", &pick.cap, 0.5f, 500.0f, "c = %.1f", ImGuiSliderFlags_Logarithmic).changed)
    pick.keepInRange(t);
  recordSliderFrame(ctx, "stable_cap", 10 * em);
  sameLineIfRoom(checkboxWidth("query_pre_attn_scalar") + 10.5f * em, em);
  toggle(ctx, "query_pre_attn_scalar", &pick.scalar, "stable_scalar");
  ImGui::SameLine(0, 0.5f * em);
  ImGui::SetNextItemWidth(10 * em);
  if (dragSliderInt("##scalar", &pick.preAttnScalar, 1, 4096, "q_s = %d", ImGuiSliderFlags_Logarithmic).changed)
    pick.keepInRange(t);
  recordSliderFrame(ctx, "stable_pre_attn_scalar", 10 * em);
  if (!lessonOk(outcome)) return;
  const StableScoresLesson* r = outcome.get();

  const std::string summary = stableSummaryText(*r);
  textWrapped(summary);
  ctx.probes.recordLabel("stable_summary", summary);
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool sideBySide = avail >= 29.0f * em;  // two histograms of 14 em at least, else one under the other
  const ImVec2 histSize(sideBySide ? std::min((avail - em) / 2.0f, 30.0f * em) : avail, 8.0f * em);
  const int tallest = std::max(*std::max_element(r->rawHistogram.begin(), r->rawHistogram.end()),
                               *std::max_element(r->stableHistogram.begin(), r->stableHistogram.end()));
  histogramPlot("textbook scores (1/sqrt(d_k))", r->rawHistogram, r->histRange, tallest, headColor(0, 0.8f),
                histSize);
  if (sideBySide) ImGui::SameLine(0, em);
  histogramPlot("stabilised (the ticked ones)", r->stableHistogram, r->histRange, tallest, headColor(1, 0.8f),
                histSize);

  ImGui::Separator();
  const std::string qk = stableQkNormText(*r);
  textWrapped(qk);
  ctx.probes.recordLabel("stable_qk_bound", qk);
  ctx.probes.recordLabel("stable_bound", formatNumber(r->bound.value(), 4));
  ImGui::Separator();
  capCurvePlot(*r, ImVec2(std::min(avail, 40.0f * em), 11.0f * em));
  const std::string cap = stableSoftcapText(*r);
  textWrapped(cap);
  ctx.probes.recordLabel("stable_softcap_text", cap);
  ImGui::Separator();
  const std::string scalar = stableScalarText(*r);
  textWrapped(scalar);
  ctx.probes.recordLabel("stable_scalar_text", scalar);

  ImGui::Separator();
  ImGui::TextUnformatted("Published configurations (config.json):");
  publishedTable(*r);
}

}  // namespace mhascope::app

// The lesson's tab (core/lessons/stable_scores.hpp), for the window's UiContext.
template <class Ui>
void mhascope::lessons::StableScores::drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices) {
  app::drawStableScoresTab(ui, shown, choices);
}
template void mhascope::lessons::StableScores::drawTab(app::UiContext&, const LessonOutcome<Result>&, Choices&);
