#include "state/app_state.hpp"
#include "attention/tokenizer.hpp"
#include "util/utf8.hpp"
#include "io/presets.hpp"
#include "panels/panel.hpp"  // kHeatmapTab

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

namespace mhascope::app {

void refreshTokenChips(TokenChips& chips, const std::string& text, int limit) {
  if (chips.limit == limit && chips.text == text) return;
  chips = TokenChips{};
  chips.text = text;
  chips.limit = limit;
  const auto items = splitBatch(replaceInvalidUtf8(text));
  if (items.empty()) return;
  chips.items = items.size();
  auto tokens = splitWords(items.front());
  chips.count = limit > 0 ? static_cast<std::size_t>(limit) : tokens.size();
  const std::size_t shown = std::min(chips.count, kShownChips);
  // Only the chips shown are made: cut or extended to T, the first ones are the same (filler words
  // follow the sentence), so T = 4096 makes 24 strings, not 4096.
  chips.shown = limit > 0 ? resizeTokens(std::move(tokens), static_cast<int>(shown))
                          : std::vector<std::string>(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(shown));
}

const Slice2D* ShownResult::slice(StageId stage, int batch, int head) {
  if (!hasTrace()) return nullptr;
  if (!stageHasHeads(stage)) head = -1;
  const auto key = std::make_tuple(static_cast<int>(stage), batch, head);
  if (auto it = sliceCache_.find(key); it != sliceCache_.end()) {
    it->second.lastFrame = frame_;
    return &it->second.slice;
  }
  auto s = sliceStage(trace, stage, batch, stageHasHeads(stage) ? head : 0);
  if (!s) return nullptr;
  return &sliceCache_.emplace(key, CachedSlice{std::move(s.value()), frame_}).first->second.slice;
}

void ShownResult::beginFrame() {
  for (auto it = sliceCache_.begin(); it != sliceCache_.end();) {
    const bool unused = it->second.slice.owned && it->second.lastFrame < frame_;
    it = unused ? sliceCache_.erase(it) : std::next(it);
  }
  ++frame_;
}

std::uint64_t ShownResult::ownedSliceBytes() const {
  std::uint64_t n = 0;
  for (const auto& [key, c] : sliceCache_) {
    if (c.slice.owned) n += c.slice.owned->capacity() * sizeof(float);
  }
  return n;
}

ColorRange ShownResult::stageRange(StageId stage, int batch) {
  const auto key = std::make_pair(static_cast<int>(stage), batch);
  if (auto it = rangeCache_.find(key); it != rangeCache_.end()) return it->second;
  ColorRange r;
  if (hasTrace() && batch >= 0 && batch < trace.batch) {
    const std::int64_t perItem = Tensor::numelOf(trace.shapeOf(stage)) / trace.batch;
    RangeAccumulator acc(stageInfo(stage).kind);  // a lazy stage is read a block at a time, never made whole
    trace.forEachBlock(stage, perItem * batch, perItem,
                       [&](const float* v, std::int64_t n, std::int64_t) { acc.add(v, static_cast<std::size_t>(n)); });
    r = acc.range();
  }
  rangeCache_.emplace(key, r);
  return r;
}

void ShownResult::traceReplaced() {
  ++traceSerial;
  sliceCache_.clear();
  rangeCache_.clear();
}

ColormapId effectiveColormap(const ViewState& view, StageId stage) {
  return view.colormap.value_or(defaultColormap(stageInfo(stage).kind));
}

ColormapId probabilityColormap(const ViewState& view) { return view.colormap.value_or(defaultColormap(DataKind::Probability)); }

ColorRange viewRange(AppState& state, const ViewState& view, StageId stage, int batch, int head) {
  if (view.sharedScale || !stageHasHeads(stage)) return state.shown.stageRange(stage, batch);
  const Slice2D* s = state.shown.slice(stage, batch, head);
  if (!s) return {};
  return rangeFor(stageInfo(stage).kind, s->data, static_cast<std::size_t>(s->rows) * s->cols);
}

}  // namespace mhascope::app

namespace mhascope::app {

void goToStage(ViewState& view, StageId stage) {
  if (view.stage == stage) return;
  view.stage = stage;
  view.zoom = {};  // another matrix, another size: start from the fitted view
}

void fitZoomToNewShape(const AppState& state, ViewState& view) {
  if (!state.shown.hasTrace()) return;
  if (view.zoomAdoptAfterSerial) {
    if (state.shown.traceSerial <= *view.zoomAdoptAfterSerial) return;  // still the trace before the workspace
    view.zoomAdoptAfterSerial.reset();
    view.zoomShape = {};  // adopt this one as it is
  }
  const std::array<int, 3> shape{state.shown.trace.tq, state.shown.trace.tk, state.shown.trace.dModel};
  if (shape == view.zoomShape) return;
  if (view.zoomShape != std::array<int, 3>{}) {
    view.zoom = {};
    view.weightZoom = {};
  }
  view.zoomShape = shape;
}

bool stepStage(ViewState& view, int delta, const Trace* trace) {
  int next = static_cast<int>(view.stage) + delta;
  auto skipped = [trace](int i) {
    const auto id = static_cast<StageId>(i);
    return stageIsVariant(id) && (!trace || !stageRecorded(*trace, id));
  };
  while (next >= 0 && next < kStageCount && skipped(next)) next += delta;
  if (next < 0 || next >= kStageCount) return false;
  goToStage(view, static_cast<StageId>(next));
  return true;
}

}  // namespace mhascope::app

namespace mhascope::app {

std::string presetFileOf(std::string nameOrPath) {
  namespace fs = std::filesystem;
  for (const char* suffix : {" (edited)", " (command line)"}) {
    if (const auto at = nameOrPath.find(suffix); at != std::string::npos) nameOrPath.resize(at);
  }
  if (nameOrPath.empty()) return {};
  // loadPreset's rule: a '/' or a .json ending is a path, anything else a bundled name.
  const bool path = nameOrPath.find('/') != std::string::npos ||
                    (nameOrPath.size() > 5 && nameOrPath.substr(nameOrPath.size() - 5) == ".json");
  const fs::path file = path ? fs::path(nameOrPath) : fs::path(assetsDir()) / "presets" / (nameOrPath + ".json");
  std::error_code ec;
  return fs::is_regular_file(file, ec) ? file.string() : std::string();
}

void notePresetRead(AppState& state, const std::string& nameOrPath) {
  if (std::string file = presetFileOf(nameOrPath); !file.empty()) state.doc.presetFiles.insert(std::move(file));
}

namespace {

constexpr std::string_view kEdited = " (edited)";

// presetName without its " (edited)", and whether it had one.
std::pair<std::string, bool> withoutEditedMark(const std::string& name) {
  const auto at = name.find(kEdited);
  if (at == std::string::npos) return {name, false};
  return {name.substr(0, at) + name.substr(at + kEdited.size()), true};
}

}  // namespace

void keepNamedConfig(Document& doc, bool configDecided) {
  auto [bare, edited] = withoutEditedMark(doc.presetName);
  if (bare == doc.namedAs && !(configDecided && !edited)) return;
  doc.namedAs = std::move(bare);
  doc.namedConfig = edited ? std::string() : presetToJson(doc.config);
}

void markEditedIfChanged(Document& doc) {
  keepNamedConfig(doc);  // a name given this frame, before its first edit
  auto [bare, edited] = withoutEditedMark(doc.presetName);
  // A name that came edited (namedConfig empty) keeps its mark: what it named is not known.
  const bool differs = doc.namedConfig.empty() || presetToJson(doc.config) != doc.namedConfig;
  doc.presetName = differs ? bare + std::string(kEdited) : bare;
}

bool resetToDefaults(AppState& state, ViewState& view) {
  auto preset = loadPreset("default");
  if (!preset) {
    state.actionError = preset.error().message;
    return false;
  }
  state.doc.config = std::move(preset.value());
  state.doc.presetName = "default";
  notePresetRead(state, "default");
  state.doc.files = {};  // text + seed again
  state.doc.trainedLayer.reset();
  state.doc.beforeOpen.reset();
  state.doc.configDirty = true;
  ExportUi exportUi = std::move(view.exportUi);  // where exports go is not part of the config
  OpenUi openUi = std::move(view.openUi);        // nor the recent files and the last folder
  view = ViewState{};
  view.exportUi = std::move(exportUi);
  view.openUi = std::move(openUi);
  view.selectTab = kHeatmapTab;
  return true;
}

}  // namespace mhascope::app
