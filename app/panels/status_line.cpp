// The status line: the sizes that matter (T, d_model, h, d_k), the parameter count, the last
// compute time and where it ran, and "computing…" while a worker job is under way.
#include <imgui.h>

#include <cstdio>
#include <string>

#include "attention/layer_counts.hpp"
#include "panels/panel.hpp"
#include "util/format.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {
namespace {

void item(const char* symbol, const std::string& text) {
  ImGui::SameLine(0, ImGui::GetFontSize());
  ImGui::TextColored(symbolColorVec(symbol), "%s", text.c_str());
}

// The variants the shown pass used, one word each (scripts check it: expect_text trace_variants).
std::string variantsText(const Trace& t, const ModelConfig& cfg) {
  std::string s = "N=" + std::to_string(t.kvHeads > 0 ? t.kvHeads : t.heads) + " positions=" + positionsName(cfg);
  if (t.positions == AttnPositions::Rope) {
    char base[32];
    std::snprintf(base, sizeof base, "%g", static_cast<double>(t.ropeBase));
    s += std::string("(") + ropeStyleName(t.ropeStyle) + "," + base + ")";
  }
  s += " window=" + std::to_string(t.window) + " sinks=" + std::to_string(t.sinks);
  // The stabilisers only when used, so the words of a pass without them stay as they were.
  if (t.softcap > 0.0f) s += " softcap=" + formatGeneral(t.softcap, 6);
  if (stageRecorded(t, StageId::QNormed)) s += " qk_norm";
  if (!t.sinkLogits.empty()) s += " sink=" + formatGeneral(t.sinkLogits.front(), 6);
  return s;
}

}  // namespace

void drawStatusLine(UiContext& ctx) {
  const AppState& st = ctx.state;
  if (!st.shown.hasTrace()) {
    ImGui::TextDisabled(st.compute.computing ? "computing…" : "no trace");
    return;
  }
  const Trace& t = st.shown.trace;
  ImGui::TextColored(symbolColorVec("T"), "T_q = %d", t.tq);
  if (t.tk != t.tq || !t.selfAttention) item("T", "T_k = " + std::to_string(t.tk));
  item("d_model", "d_model = " + std::to_string(t.dModel));
  item("h", "h = " + std::to_string(t.heads));
  item("d_k", "d_k = " + std::to_string(t.dk));
  item("B", "B = " + std::to_string(t.batch));
  const int n = t.kvHeads > 0 ? t.kvHeads : t.heads;
  if (n != t.heads) item("h", "N = " + std::to_string(n) + (n == 1 ? " (MQA)" : " (GQA)"));
  // The parameters of the shown pass, with its N K/V heads and biases (attention/layer_counts.hpp); a latent layer's
  // projections are no W_q, W_k, W_v to count so: what it caches instead.
  const Shape& heads = t.shapeOf(StageId::HeadOutputs);  // (B, h, T_q, d_v)
  const std::int64_t dv = heads.size() == 4 ? heads[3] : t.dk;
  const std::string params =
      t.latentRank > 0 ? "latent attention: the cache holds r + d_r = " + std::to_string(t.latentRank + t.latentRopeDim) +
                             " numbers per token and layer, against h·(d_k + d_v) = " +
                             std::to_string(t.heads * (t.dk + dv)) + " for MHA"
                       : parameterText(layerCounts(layerSizesOf(t)));
  item("", params);
  ctx.probes.recordLabel("status_parameters", params);
  ctx.probes.recordLabel("trace_variants", variantsText(t, st.shown.traceConfig));
  char ms[96];
  std::snprintf(ms, sizeof ms, "last compute %.2f ms (%s, %d thread%s)", st.compute.lastComputeMs,
                st.compute.lastComputeOnWorker ? "worker thread" : "UI thread", st.compute.lastComputeThreads,
                st.compute.lastComputeThreads == 1 ? "" : "s");
  ImGui::SameLine(0, ImGui::GetFontSize());
  ImGui::TextDisabled("%s", ms);
  if (st.compute.computing) {
    ImGui::SameLine(0, ImGui::GetFontSize());
    const char* dots[] = {"computing   ", "computing.  ", "computing.. ", "computing…"};
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s (showing the previous result)",
                       dots[static_cast<int>(ImGui::GetTime() * 3.0) % 4]);
  } else if (!st.doc.configError.empty()) {
    ImGui::SameLine(0, ImGui::GetFontSize());
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "invalid configuration: showing the last valid one");
  }
}

}  // namespace mhascope::app
