// The input scripts' adapter over the app (see script_host.hpp).
#include "testing/script_host.hpp"

#include <imgui.h>
#include <imgui_internal.h>  // HoveredId, for itemHovered

#include "panels/panel.hpp"
#include "render/texture.hpp"
#include "shell/session_store.hpp"
#include "io/presets.hpp"

namespace mhascope::app {

bool AppScriptHost::probePoint(const std::string& name, float fx, float fy, ImVec2& out) {
  const ItemRect* r = t_.probes.find(name);
  if (!r) return false;
  out = ImVec2(r->min.x + (r->max.x - r->min.x) * fx, r->min.y + (r->max.y - r->min.y) * fy);
  return true;
}

std::string AppScriptHost::currentStageName() { return stageInfo(t_.pipeline.view.stage).name; }

std::vector<std::string> AppScriptHost::tabIds() {
  std::vector<std::string> out;
  for (const PanelInfo& p : allPanels()) {
    if (p.area == PanelArea::Main || (!t_.loop.wide && p.area == PanelArea::Right)) out.push_back(p.id);
  }
  out.push_back(kTrainModeId);
  return out;
}

bool AppScriptHost::itemHovered() { return ImGui::GetCurrentContext()->HoveredId != 0; }

std::string AppScriptHost::shownLabel(const std::string& name) {
  const auto& labels = t_.loop.eventDriven ? t_.loop.shownLabels : t_.probes.labels();
  auto it = labels.find(name);
  return it == labels.end() ? std::string() : it->second;
}

int AppScriptHost::textureCount() { return Texture::liveCount(); }

std::string AppScriptHost::loadPresetByName(const std::string& name) {
  auto preset = loadPreset(name);
  if (!preset) return preset.error().message;
  t_.pipeline.state.doc.config = std::move(preset.value());
  t_.pipeline.state.doc.presetName = name;
  t_.pipeline.state.doc.files = {};  // as the preset picker: a text + seed model
  t_.pipeline.state.doc.trainedLayer.reset();
  t_.pipeline.state.doc.configDirty = true;
  return {};
}

void AppScriptHost::churnStep(int i) {
  // A walk through sizes, masks and stages, as a user dragging sliders would.
  constexpr int kModels[] = {8, 12, 16, 24, 32, 48};
  ModelConfig& c = t_.pipeline.state.doc.config;
  c.dModel = kModels[i % 6];
  c.heads = (i / 6) % 2 == 0 ? 2 : 4;
  c.tokens = 3 + (i * 7) % 40;
  c.seed = static_cast<std::uint64_t>(i);
  c.mask = i % 3 == 0 ? MaskKind::Causal : MaskKind::None;
  t_.pipeline.state.doc.configDirty = true;
  t_.pipeline.view.stage = static_cast<StageId>(i % kStageCount);
  if (stageIsVariant(t_.pipeline.view.stage)) t_.pipeline.view.stage = StageId::Weights;  // not recorded for these configs
  if (i % 50 == 0) t_.pipeline.view.selectTab = (i / 50) % 2 == 0 ? kAllHeadsTab : kHeatmapTab;
}

std::string AppScriptHost::sessionSummary() {
  return mhascope::app::sessionSummary(t_.pipeline.state, t_.pipeline.view, t_.pipeline.view.tab);
}

}  // namespace mhascope::app
