// --workspace and --save-workspace for the subcommands (see workspace_options.hpp).
#include "workspace_options.hpp"

#include <cstdio>
#include <set>

namespace mhascope::cli {

Result<std::optional<::mhascope::Workspace>> applyWorkspaceOptions(ModelOptions& o) {
  if (o.workspace.empty()) return std::optional<::mhascope::Workspace>{};
  auto ws = readWorkspaceFile(o.workspace);
  if (!ws) return ws.error();
  // The files this command line gives itself are not looked for: a model folder that moved is
  // pointed at with --model NEWDIR (the rule below, which drops or replaces a recorded file).
  const bool inputGiven = !o.files.query.empty() || !o.files.checkpoint.empty() || !o.files.model.empty();
  std::set<std::string> replaced;
  if (inputGiven) replaced = {"query", "key", "value", "checkpoint", "model"};
  if (!o.files.weights.empty()) replaced.insert("weights");
  if (!o.files.attnMask.empty()) replaced.insert("attn-mask");
  if (!o.files.keyPaddingMask.empty()) replaced.insert("key-padding-mask");
  std::vector<std::string> notes;
  auto found = locateWorkspaceFiles(*ws, o.workspace, notes, replaced);
  if (!found) {
    if (found.error().message.find("was moved or deleted") == std::string::npos) return found.error();
    return makeError(found.error().message + "; give its new place on the command line (--model DIR, --query FILE …)");
  }
  for (const auto& n : notes) std::fprintf(stderr, "mhascope: note: %s\n", n.c_str());
  // The command line wins file by file. Its --query, --checkpoint or --model names the model's
  // input itself, so then the workspace's inputs (query/key/value, checkpoint, model folder and
  // layer) are dropped — but a --model for a workspace of a model keeps its layer unless --layer
  // is given (the folder named anew, often because it moved).
  InputFiles merged = *found;
  if (inputGiven) {
    merged.query = o.files.query;
    merged.key = o.files.key;
    merged.value = o.files.value;
    merged.checkpoint = o.files.checkpoint;
    merged.model = o.files.model;
    merged.layer = !o.files.model.empty() && !ws->files.model.empty() ? ws->files.layer : o.files.layer;
  }
  for (auto member : {&InputFiles::weights, &InputFiles::attnMask, &InputFiles::keyPaddingMask}) {
    if (!(o.files.*member).empty()) merged.*member = o.files.*member;
  }
  if (o.files.layer) merged.layer = o.files.layer;
  o.layerFromWorkspace = !o.files.layer && merged.layer.has_value();
  o.files = merged;
  o.workspaceConfig = ws->config;
  if (!o.presetGiven) o.preset = ws->presetName;
  return std::optional<::mhascope::Workspace>(std::move(*ws));
}

Result<::mhascope::Workspace> workspaceOfRun(const ModelOptions& o, const ResolvedModel& r,
                                             const std::optional<::mhascope::Workspace>& opened, const WorkspaceView& view,
                                             const std::string& path) {
  ::mhascope::Workspace ws;
  if (opened) ws = *opened;
  ws.presetName = o.preset;
  ws.config = r.config;
  ws.files = o.files;
  ws.view = view;
  auto records = recordWorkspaceFiles(ws.files, path);
  if (!records) return records.error();
  ws.fileRecords = std::move(*records);
  return ws;
}

Status saveWorkspaceIfAsked(const ModelOptions& o, const ResolvedModel& r,
                            const std::optional<::mhascope::Workspace>& opened, const WorkspaceView& view) {
  if (o.saveWorkspace.empty()) return Ok{};
  auto ws = workspaceOfRun(o, r, opened, view, o.saveWorkspace);
  if (!ws) return ws.error();
  if (auto s = writeWorkspaceFile(o.saveWorkspace, *ws); !s) return makeError("--save-workspace: " + s.error().message);
  std::printf("saved workspace %s\n", o.saveWorkspace.c_str());
  return Ok{};
}

}  // namespace mhascope::cli
