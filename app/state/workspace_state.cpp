// The window's side of workspace files (see workspace_state.hpp).
#include "state/workspace_state.hpp"

#include <cstdio>

namespace mhascope::app {
namespace {

WorkspaceZoom toSaved(const HeatmapZoom& z) { return {z.zoom, z.panX, z.panY}; }
HeatmapZoom toView(const WorkspaceZoom& z) { return {z.zoom, z.panX, z.panY}; }

}  // namespace

Workspace workspaceFromWindow(const AppState& state, const ViewState& view, const LessonView& lessons) {
  Workspace ws;
  ws.presetName = state.presetName;
  ws.config = state.config;
  ws.files = state.files;
  WorkspaceView& v = ws.view;
  v.stage = view.stage;
  v.batch = view.batch;
  v.head = view.head;
  v.tab = view.openTab;
  v.zoom = toSaved(view.zoom);
  v.weightZoom = toSaved(view.weightZoom);
  v.colormap = view.colormap;
  v.sharedScale = view.sharedScale;
  v.showNumbers = view.showNumbers;
  v.colorScale = view.colorScale;
  v.weight = view.weight;
  v.playStagesPerSecond = view.playStagesPerSecond;
  WorkspaceLessons& l = ws.lessons;
  l.choices = lessons.c;
  l.splitHead = lessons.splitHead;
  l.editScore = lessons.editScore;
  for (int i = 0; i < 3; ++i) l.sweepTo[static_cast<std::size_t>(i)] = lessons.sweepTo[i];
  l.headHidden = lessons.headHidden;
  return ws;
}

void applyWorkspace(const Workspace& ws, const InputFiles& located, AppState& state, ViewState& view,
                    LessonView& lessons, WorkspaceKeep keep) {
  if (!keep.config) {
    state.config = ws.config;
    state.presetName = ws.presetName;
    state.files = located;
    state.configDirty = true;
    view.batch = ws.view.batch;  // clamped by the panels once the trace is there
  }
  const WorkspaceView& v = ws.view;
  if (!keep.stage) view.stage = v.stage;
  if (!keep.tab && !v.tab.empty()) view.selectTab = v.tab;
  if (!keep.head) view.head = v.head;
  view.zoom = toView(v.zoom);
  view.weightZoom = toView(v.weightZoom);
  view.colormap = v.colormap;
  view.sharedScale = v.sharedScale;
  view.showNumbers = v.showNumbers;
  view.colorScale = v.colorScale;
  view.weight = v.weight;
  view.playStagesPerSecond = v.playStagesPerSecond;
  const WorkspaceLessons& l = ws.lessons;
  lessons.c = l.choices;
  lessons.splitHead = l.splitHead;
  lessons.editScore = l.editScore;
  for (int i = 0; i < 3; ++i) lessons.sweepTo[i] = l.sweepTo[static_cast<std::size_t>(i)];
  lessons.headHidden = l.headHidden;
}

Status openWorkspace(AppState& state, ViewState& view, LessonView& lessons, const std::string& path,
                     WorkspaceKeep keep) {
  auto ws = readWorkspaceFile(path);
  if (!ws) return ws.error();
  std::vector<std::string> notes;
  auto located = locateWorkspaceFiles(*ws, path, notes);
  if (!located) return located.error();
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
  Workspace ws = workspaceFromWindow(state, view, lessons);
  auto records = recordWorkspaceFiles(ws.files, path);
  if (!records) return records.error();
  ws.fileRecords = std::move(*records);
  if (auto st = writeWorkspaceFile(path, ws); !st) return st;
  view.workspaceUi.path = path;
  return Ok{};
}

}  // namespace mhascope::app
