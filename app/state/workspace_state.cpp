// The window's side of workspace files (see workspace_state.hpp).
#include "state/workspace_state.hpp"

#include <cstdio>
#include <exception>
#include <set>

#include "io/file_io.hpp"
#include "model_source/model_source.hpp"
#include "panels/panel.hpp"  // mainTabIdOf
#include "state/experiments_state.hpp"
#include "state/model_view_state.hpp"
#include "state/requests.hpp"  // saySaved

namespace mhascope::app {
Status checkWorkspaceModel(const Workspace& ws, const InputFiles& located, const AppState& state,
                           const std::string& path, WorkspaceKeep keep) {
  auto refused = [&](const std::string& why) {
    return makeError("workspace '" + path + "' was not opened: " + why);
  };
  if (auto probe = parseModelViewBlock(ws.modelView, "its Model tab"); !probe) return refused(probe.error().message);
  if (auto form = parseExperimentsBlock(ws.experiments, "its Experiments tab"); !form) return refused(form.error().message);
  if (keep.config) return Ok{};  // the launch options' model is used, already checked
  ModelConfig c = ws.config;
  if (state.doc.memoryBudgetBytes > 0) c.memoryBudgetBytes = state.doc.memoryBudgetBytes;  // as the scheduler does
  int heads = c.heads;
  try {
    if (located.empty()) {
      if (auto st = validateConfig(c, MemoryUse::app()); !st) return refused(st.error().message);
    } else {
      ModelRequest request;  // as the compute scheduler builds it
      request.config = c;
      request.files = located;
      request.use = MemoryUse::app();
      request.use.weightsFile = !located.weights.empty();
      request.weightsDecideDModel = true;
      request.recordedLatentLayer = true;
      auto model = modelFromSource(request);
      if (!model) return refused(model.error().message);
      heads = model->config.heads;
    }
  } catch (const std::exception& e) {  // bad_alloc while reading: refused like any other problem
    return refused(std::string("cannot check its model: ") + e.what());
  }
  if (!keep.head && (ws.view.head < 0 || ws.view.head >= heads)) {
    return refused("/view/head " + std::to_string(ws.view.head) + " is out of range: its model has h = " +
                   std::to_string(heads) + " head" + (heads == 1 ? "" : "s") + ", indices 0 .. " +
                   std::to_string(heads - 1));
  }
  return Ok{};
}

Workspace workspaceFromWindow(const AppState& state, const ViewState& view, const LessonView& lessons) {
  Workspace ws;
  ws.presetName = state.doc.presetName;
  ws.config = state.doc.config;
  ws.files = state.doc.files;
  ws.view = view;  // its WorkspaceView part, the open tab included
  ws.lessons = lessons.c;
  // The Model tab's probe once the tab was opened (else what a workspace gave it, if anything).
  ws.modelView = state.modelView ? modelViewBlockJson(*state.modelView) : state.modelViewBlock;
  ws.experiments = state.experiments ? experimentsBlockJson(*state.experiments) : state.experimentsBlock;
  return ws;
}

void applyWorkspace(const Workspace& ws, const InputFiles& located, AppState& state, ViewState& view,
                    LessonView& lessons, WorkspaceKeep keep) {
  if (!keep.config) {
    state.doc.config = ws.config;
    state.doc.presetName = ws.presetName;
    notePresetRead(state, ws.presetName);
    state.doc.files = located;
    state.doc.configDirty = true;  // the batch item (below) is clamped by the panels once the trace is there
  }
  const WorkspaceView before = view;
  static_cast<WorkspaceView&>(view) = ws.view;
  // What a launch option gave stays; the saved tab is asked for (the layout opens it), while
  // `tab` stays the one drawn last.
  if (keep.config) view.batch = before.batch;
  if (keep.stage) view.stage = before.stage;
  if (keep.head) view.head = before.head;
  view.tab = before.tab;
  // A file written before tabs had ids names its tab by title; an unknown name opens no tab.
  if (!keep.tab && !ws.view.tab.empty()) view.selectTab = mainTabIdOf(ws.view.tab);
  view.zoomAdoptAfterSerial = state.shown.traceSerial;  // these zooms are for the trace computed next
  lessons.c = ws.lessons;
  if (!ws.modelView.empty()) {  // checked by checkWorkspaceModel
    if (!state.modelView) {
      state.modelViewBlock = ws.modelView;
    } else if (auto probe = parseModelViewBlock(ws.modelView, "")) {
      applyModelViewProbe(*probe, *state.modelView);
    }
  }
  if (!ws.experiments.empty()) {  // checked by checkWorkspaceModel
    if (!state.experiments) {
      state.experimentsBlock = ws.experiments;
    } else if (auto form = parseExperimentsBlock(ws.experiments, "")) {
      state.experiments->form = *form;
    }
  }
}

Status openWorkspace(AppState& state, ViewState& view, LessonView& lessons, const std::string& path,
                     WorkspaceKeep keep) {
  auto ws = readWorkspaceFile(path);
  if (!ws) return ws.error();
  std::vector<std::string> notes;
  auto located = locateWorkspaceFiles(*ws, path, notes);
  if (!located) return located.error();
  if (auto st = checkWorkspaceModel(*ws, *located, state, path, keep); !st) return st;
  applyWorkspace(*ws, *located, state, view, lessons, keep);
  view.workspaceUi.path = path;
  view.workspaceUi.pathField = path;
  view.workspaceUi.message.clear();
  for (const auto& n : notes) {
    std::fprintf(stderr, "mhascope: note: %s\n", n.c_str());
    view.workspaceUi.message += (view.workspaceUi.message.empty() ? "" : "\n") + n;
  }
  view.workspaceUi.messageIsError = false;
  std::printf("mhascope: opened the workspace %s\n", path.c_str());
  return Ok{};
}

Status saveWorkspace(const AppState& state, ViewState& view, const LessonView& lessons, const std::string& path) {
  // A preset file is an input like the files in use (writeWorkspaceFile checks those): the popup
  // promises inputs are never overwritten, and `--save-workspace` onto `--preset` is refused too.
  std::set<std::string> presets = state.doc.presetFiles;
  if (std::string now = presetFileOf(state.doc.presetName); !now.empty()) presets.insert(std::move(now));
  for (const std::string& preset : presets) {
    if (sameFile(preset, path)) {
      return makeError("workspace '" + path + "' is the preset file '" + preset +
                       "' this window read its configuration from; writing it would destroy that input: "
                       "choose another name");
    }
  }
  Workspace ws = workspaceFromWindow(state, view, lessons);
  auto records = recordWorkspaceFiles(ws.files, path);
  if (!records) return records.error();
  ws.fileRecords = std::move(*records);
  if (auto st = writeWorkspaceFile(path, ws); !st) return st;
  view.workspaceUi.path = path;
  return Ok{};
}

void saveWorkspaceAndSay(const AppState& state, ViewState& view, const LessonView& lessons, const std::string& path) {
  Status st = Ok{};
  try {
    st = saveWorkspace(state, view, lessons, path);
  } catch (const std::exception& e) {  // bad_alloc, filesystem_error: shown, never fatal
    st = makeError("cannot save the workspace " + path + ": " + e.what());
  }
  saySaved(st, path, view.workspaceUi.message, view.workspaceUi.messageIsError);
}

}  // namespace mhascope::app
