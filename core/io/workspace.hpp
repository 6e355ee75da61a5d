// Workspace files: everything needed to see the same picture again — the configuration (preset
// format), the input files (path as given, absolute path, path relative to the workspace, size,
// SHA-256), the view (stage, batch, head, tab, zoom and pan of both heatmap views, colours,
// weight tab, "see as" preview), the lesson tabs' choices, and the hand-edited scores (the config's
// score_override). Versioned JSON with the top-level key "mhascope_workspace": 1, read strictly
// and all-or-nothing. Used by the window (--workspace, Save workspace, the last workspace at
// launch) and by every subcommand (--workspace, --save-workspace).
//
// Adding a block (e.g. the Train mode's "train"): a member of Workspace, its writer in
// workspaceToJson and its reader in parseWorkspaceJson (workspace.cpp, the [SECTION] per block).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "attention/model.hpp"
#include "attention/trace.hpp"
#include "color/color_scale.hpp"
#include "color/colormap.hpp"
#include "color/see_as.hpp"
#include "io/input_files.hpp"
#include "lessons/lessons.hpp"
#include "util/result.hpp"

namespace mhascope {

inline constexpr int kWorkspaceVersion = 1;
inline constexpr std::uint64_t kMaxWorkspaceBytes = 16ull << 20;  // read no more than this

// One file of a model folder as saved. A folder may hold many GB of weights, too much to hash
// each time a workspace opens: the small files that decide the numbers besides the weights
// (config.json, tokenizer.json or vocab.json + merges.txt, model.safetensors.index.json) are
// compared by SHA-256, the weights (*.safetensors) by size and modification time.
struct WorkspaceFolderFile {
  std::string name;          // a file name inside the folder
  std::uint64_t size = 0;
  std::string sha256;        // 64 hex digits for a hashed file; "" for weights
  std::int64_t mtimeNs = 0;  // weights: last modification, ns since 1970 (st_mtim)
};

// One input file as saved: where it was and what it held.
struct WorkspaceFile {
  std::string path;          // as given (on the command line or in the window)
  std::string absolutePath;  // where it was when the workspace was saved
  std::string relativePath;  // from the workspace file's folder (a folder moved with its files)
  std::uint64_t size = 0;    // a file (not a model folder)
  std::string sha256;        // 64 hex digits (not a model folder)
  std::vector<WorkspaceFolderFile> folderFiles;  // a model folder ("model"): its files, by name
};

struct WorkspaceZoom {  // one heatmap view: zoom 1 = the whole matrix fits; pan in cells
  float zoom = 1.0f, panX = 0.0f, panY = 0.0f;
};

struct WorkspaceView {
  StageId stage = StageId::Weights;
  int batch = 0, head = 0;  // 0-based
  std::string tab;          // the open main tab's title ("" = the default)
  WorkspaceZoom zoom, weightZoom;  // the stage heatmap; the Learned tab's heatmap
  std::optional<ColormapId> colormap;  // empty: picked by the stage's data kind
  SeeAs seeAs = SeeAs::Normal;         // the whole window and its exports as this reader sees them
  bool sharedScale = true, showNumbers = true;
  ColorScale colorScale = ColorScale::Linear;
  WeightId weight = WeightId::Wq;
  float playStagesPerSecond = 1.0f;
};

struct Workspace {
  std::string presetName = "default";
  ModelConfig config;  // includes the hand-edited scores (score_override)
  InputFiles files;    // paths as given; fileRecords says where they were and what they held
  std::map<std::string, WorkspaceFile> fileRecords;  // key: the flag without "--" ("query", "weights" …)
  WorkspaceView view;
  LessonChoices lessons;  // every lesson's saved choices, under "lessons" (each lesson names its keys)
  // The window's Train mode (mode, task, setup form) as the JSON object the app writes and checks
  // (app/state/session.cpp trainBlockJson / parseTrainBlock); "" = none. Core keeps it as text.
  std::string train;
  // The window's Model tab probe (what it runs on: the text or repeated random tokens, where they
  // are drawn from, period, copies, seed) as the JSON object the app writes and checks
  // (app/state/model_view_state.cpp); "" = none.
  std::string modelView;
  // The window's Experiments tab form (texts, answers, metric, site, direction) as the JSON object the app writes
  // and checks (app/state/experiments_state.cpp); "" = none.
  std::string experiments;
};

// Records every file `files` names (absolute path, size, SHA-256 streamed in 1 MiB pieces) and
// the model folder's files (WorkspaceFolderFile); relative paths are taken from `workspacePath`'s
// folder. Errors name the file.
Result<std::map<std::string, WorkspaceFile>> recordWorkspaceFiles(const InputFiles& files,
                                                                  const std::string& workspacePath);

std::string workspaceToJson(const Workspace& ws);
// Strict (unknown or duplicate keys, wrong types, out-of-range values, a newer format version)
// with errors naming the key and `what` (the file). Nothing half-applied.
Result<Workspace> parseWorkspaceJson(std::string_view text, const std::string& what);
// Reads (at most kMaxWorkspaceBytes) and parses a workspace file, or the workspace an exported
// HTML page carries (the page at most kMaxHtmlWorkspacePageBytes).
Result<Workspace> readWorkspaceFile(const std::string& path);

// Where the recorded files are now: at their absolute path, else (moved together with the
// workspace) relative to the workspace's folder — each such move adds a line to `notes`. A file
// whose size or SHA-256 differ is refused ("changed since the workspace was saved"), a file in
// neither place too ("moved or deleted"): the caller keeps what it shows. A model folder is
// refused when one of its recorded files is gone, a hashed one differs, or a weights file has
// another size or modification time. `replaced`: the record names ("model", "query", "weights" …)
// whose files the caller gives itself (a command line's --model DIR for a folder that moved): left
// as recorded, neither looked for nor checked.
Result<InputFiles> locateWorkspaceFiles(const Workspace& ws, const std::string& workspacePath,
                                        std::vector<std::string>& notes, const std::set<std::string>& replaced = {});

// Writes atomically; refuses a name not ending in .json and a path that is one of `ws`'s input
// files (by identity).
Status writeWorkspaceFile(const std::string& path, const Workspace& ws);

// A page exported as HTML (export/html_view.hpp) carries its workspace in a script element that
// opens with this; readWorkspaceFile reads it from there.
inline constexpr std::string_view kHtmlWorkspaceOpen = R"(<script type="application/json" id="mhascope-workspace">)";
inline constexpr std::uint64_t kMaxHtmlWorkspacePageBytes = 64ull << 20;  // an HTML page read for its workspace
// True when `text` starts (after a BOM and white space) like an HTML document.
bool looksLikeHtml(std::string_view text);
// The workspace block of an exported page, as JSON text; an error that says so when the page has
// none. `what` names the file in messages.
Result<std::string> workspaceJsonInHtml(std::string_view text, const std::string& what);

// True when the text looks like a workspace (a JSON object with "mhascope_workspace"), so a
// dispatcher can tell workspaces from presets without a full parse.
bool looksLikeWorkspace(std::string_view text);

}  // namespace mhascope
