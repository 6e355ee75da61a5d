// --workspace FILE and --save-workspace FILE for the subcommands: a workspace gives the
// configuration and the input files (checked by hash, found again beside the workspace when
// moved); an option given on the command line wins over the workspace's.
#pragma once

#include <optional>

#include "io/workspace.hpp"
#include "model_options.hpp"

namespace mhascope::cli {

// With o.workspace set: reads and checks the workspace, fills the files the command line left
// out and sets o.workspaceConfig (used unless --preset was given). Notes about moved files go to
// stderr. Returns the workspace (its view gives export's default picture), or none without
// --workspace.
Result<std::optional<::mhascope::Workspace>> applyWorkspaceOptions(ModelOptions& o);

// The workspace of this command's run: the configuration and files it used, with `view` (and the
// lessons of the workspace it was opened from, if any); file paths recorded relative to `path`'s folder.
Result<::mhascope::Workspace> workspaceOfRun(const ModelOptions& o, const ResolvedModel& r,
                                             const std::optional<::mhascope::Workspace>& opened, const WorkspaceView& view,
                                             const std::string& path);

// Writes --save-workspace (if given): the configuration and files this command used, with `view`
// (and the lessons of the workspace it was opened from, if any). Call when the command succeeded.
Status saveWorkspaceIfAsked(const ModelOptions& o, const ResolvedModel& r,
                            const std::optional<::mhascope::Workspace>& opened, const WorkspaceView& view);

}  // namespace mhascope::cli
