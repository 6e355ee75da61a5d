// The "Learned" tab: the learned parameters as heatmaps: W_q, W_k, W_v, W_o and the biases, exactly as the shown
// trace recorded them (Trace::weights — the numbers the pass multiplied by, not recomputed here),
// with the same export as every other heatmap.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "render/texture_keys.hpp"
#include "lessons/lessons.hpp"
#include "panels/panel.hpp"
#include "widgets/colors.hpp"
#include "widgets/export_button.hpp"
#include "widgets/flow.hpp"
#include "widgets/heatmap_view.hpp"
#include "widgets/wrapped_text.hpp"

namespace mhascope::app {

void drawWeightsPanel(UiContext& ctx) {
  AppState& st = ctx.state;
  ViewState& view = ctx.view;
  if (!traceReady(ctx)) return;
  const Trace& t = st.shown.trace;
  const float em = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("learned");
  for (int i = 0; i < kWeightCount; ++i) {
    const auto id = static_cast<WeightId>(i);
    ImGui::PushID(i);
    sameLineOrWrap(3.0f * em, i == 0 ? -1.0f : 2.0f);
    if (i == static_cast<int>(WeightId::Bq)) {
      ImGui::TextDisabled("|");
      ImGui::SameLine();
    }
    if (ImGui::RadioButton(weightSymbol(id), view.weight == id)) {
      view.weight = id;
      view.weightZoom = {};
    }
    ctx.probes.recordLastItem(std::string("weight_") + weightName(id));
    ImGui::PopID();
  }
  auto slice = sliceWeight(t, view.weight);
  if (!slice) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kErrorColor), "%s", slice.error().message.c_str());
    return;
  }
  const Slice2D& s = *slice;
  HeatmapSpec spec;
  spec.slice = &s;
  spec.colormap = view.colormap.value_or(defaultColormap(DataKind::Signed));
  spec.range = rangeFor(DataKind::Signed, s.data, static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols));
  spec.heads = t.heads;
  spec.dk = t.dk;
  spec.showNumbers = view.showNumbers;
  spec.colorbarTexture = ctx.textures.colorbar(spec.colormap).imguiId();
  const TextureKey key{st.shown.traceSerial, kWeightSlot + static_cast<int>(view.weight), 0, -1, spec.colormap, spec.range.lo,
                       spec.range.hi};
  spec.textures = &ctx.textures;
  spec.textureKey = key;
  spec.kind = DataKind::Signed;

  sameLineOrWrap(ImGui::CalcTextSize("Export…").x + 2 * ImGui::GetStyle().FramePadding.x, em);
  ExportTarget target;
  target.slices = {&s};
  target.colormap = spec.colormap;
  target.range = spec.range;
  drawExportButton(ctx, "export_weight", target);

  const std::string what = nameSlice(s).title + "   " + s.rowAxis + " × " + s.colAxis + " = " + std::to_string(s.rows) +
                           " × " + std::to_string(s.cols);
  ImGui::TextUnformatted(what.c_str());
  ctx.probes.recordLabel("weight_label", nameSlice(s).title);
  textWrappedDisabled(weightMeaning(view.weight));
  if (view.weight <= WeightId::Wo) textWrappedDisabled(headCircuitsText(t.dModel, t.dk, t.hasBias));
  if (view.weight >= WeightId::Bq && !t.hasBias) textWrappedDisabled("This model has no biases (--no-bias): all zero.");

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  drawHeatmap("weight", spec, &view.weightZoom, ImVec2(avail.x, std::max(avail.y, 4.0f * em)));
}

}  // namespace mhascope::app
