// The Compare tab's state (compare_state.hpp).
#include "state/compare_state.hpp"

#include <filesystem>

#include "model_source/file_kind.hpp"
#include "state/open_file.hpp"

namespace mhascope::app {

CompareState& compareOf(AppState& a) {
  if (!a.compare) a.compare = std::make_shared<CompareState>();
  return *a.compare;
}

void compareWithCopyOfA(CompareState& c, const AppState& a) {
  c.b.doc.config = a.doc.config;
  c.b.doc.files = a.doc.files;
  c.b.doc.trainedLayer = a.doc.trainedLayer;
  c.b.doc.presetName = a.doc.presetName;
  c.b.doc.memoryBudgetBytes = a.doc.memoryBudgetBytes;
  c.b.doc.beforeOpen.reset();
  c.b.actionError.clear();
  c.source = CompareSource::EditedCopy;
  c.fileName.clear();
  c.message.clear();
  compareEdited(c);
}

bool compareWithFile(CompareState& c, const AppState& a, const std::string& path, int layer) {
  auto info = inspectFile(path);
  if (!info) {
    c.message = info.error().message;
    return false;
  }
  if (info->kind == FileKind::Array) {
    c.message = "'" + path + "' is a .npy input, not a model: open it in the Controls (side A), or compare with a "
                "preset, a workspace or a checkpoint";
    return false;
  }
  if (info->kind == FileKind::Checkpoint && (layer < 0 || layer >= info->layers)) {
    c.message = "layer " + std::to_string(layer) + " is out of range: '" + path + "' has " +
                std::to_string(info->layers) + " layer" + (info->layers == 1 ? "" : "s") + " (0 .. " +
                std::to_string(info->layers - 1) + ")";
    return false;
  }
  // A weights file changes the model it is opened in: B starts as A, as every file opens onto the
  // configuration on screen.
  // A refused file leaves A and the previous B as they were: no B before, none after.
  const bool hadB = c.active();
  if (!hadB) compareWithCopyOfA(c, a);
  c.bView.openUi.message.clear();
  if (!beginOpen(c.b, c.bView, c.bLessons, path)) {
    const std::string message = c.bView.openUi.message;
    if (!hadB) closeCompare(c);
    c.message = message;
    return false;
  }
  if (!c.bView.openUi.pendingPath.empty()) {  // a checkpoint: its layer from the form
    c.bView.openUi.layer = layer;
    finishOpen(c.b, c.bView);
  }
  c.source = CompareSource::File;
  c.fileName = std::filesystem::path(path).filename().string();
  if (info->kind == FileKind::Checkpoint) c.fileName += " layer " + std::to_string(layer);
  c.message.clear();
  c.b.actionError.clear();
  compareEdited(c);
  return true;
}

void compareEdited(CompareState& c) {
  c.b.doc.configDirty = true;
  c.b.doc.configError.clear();
}

void closeCompare(CompareState& c) {
  c.source = CompareSource::None;
  c.fileName.clear();
  c.message.clear();
  c.b.shown.trace = Trace{};
  c.b.shown.model.reset();
  c.b.shown.rerunRefusal.clear();
  c.b.shown.traceReplaced();
  c.forgetShown();
}

const CompareState::Shown& CompareState::shown(AppState& a, StageId stage, int batch, int headA, int headB) {
  // Slices are asked for every frame: a lazy stage's copy lives until a frame does not ask.
  shown_.a = a.shown.hasTrace() ? a.shown.slice(stage, batch, headA) : nullptr;
  shown_.b = b.shown.hasTrace() ? b.shown.slice(stage, batch, headB) : nullptr;
  const Key key{a.shown.traceSerial, b.shown.traceSerial, static_cast<int>(stage), batch, headA, headB};
  if (shownKey_ && *shownKey_ == key && (shown_.difference || !shown_.blocker.empty())) return shown_;
  shownKey_ = key;
  shown_.difference.reset();
  shown_.differenceSlice = Slice2D{};
  shown_.stageWords.clear();
  shown_.blocker.clear();
  if (!a.shown.hasTrace() || !b.shown.hasTrace()) {
    shownKey_.reset();  // again once both have come
    return shown_;
  }
  shown_.blocker = differenceBlocker(a.shown.trace, b.shown.trace, stage);
  if (!shown_.blocker.empty()) return shown_;
  if (!shown_.a || !shown_.b) {
    shown_.blocker = "no slice of this stage at batch item " + std::to_string(batch) + " on both sides";
    return shown_;
  }
  auto d = sliceDifference(*shown_.a, *shown_.b);
  if (!d) {
    shown_.blocker = d.error().message;
    return shown_;
  }
  shown_.difference = std::move(*d);
  shown_.differenceSlice = differenceSlice(*shown_.difference, *shown_.a);
  if (auto m = stageMaxDifference(a.shown.trace, b.shown.trace, stage, batch); m) {
    auto labels = sliceStage(a.shown.trace, stage, batch, m->head < 0 ? 0 : m->head);
    shown_.stageWords = labels ? differenceWords(*m, *labels) : labels.error().message;
  } else {
    shown_.stageWords = m.error().message;
  }
  return shown_;
}

}  // namespace mhascope::app
