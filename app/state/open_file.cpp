// Opening a file in the window (see open_file.hpp).
#include "state/open_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "io/file_io.hpp"
#include "panels/panel.hpp"  // kHeatmapTab, kModelTab
#include "state/workspace_state.hpp"
#include "io/presets.hpp"

namespace mhascope::app {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMaxListed = 400;  // a huge folder lists its first entries only

std::string fileName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// The folder last used, else ~, else the working directory.
std::string folderToList(const std::string& folder) {
  std::error_code ec;
  if (!folder.empty() && fs::is_directory(folder, ec)) return folder;
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  return fs::current_path(ec).string();
}

// The folder's sub-folders and openable files, folders first, by name. Unreadable: empty + why.
std::vector<OpenEntry> listFolder(const std::string& folder, std::string& why) {
  std::vector<OpenEntry> out;
  std::error_code ec;
  fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    why = "cannot list '" + folder + "': " + ec.message();
    return out;
  }
  for (const auto& e : it) {
    if (out.size() >= kMaxListed) break;
    std::error_code e2;
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (e.is_directory(e2)) out.push_back({name, true, fs::is_regular_file(e.path() / "config.json", e2)});
    else if (hasOpenableExtension(name)) out.push_back({name, false});
  }
  std::sort(out.begin(), out.end(), [](const OpenEntry& a, const OpenEntry& b) {
    return a.folder != b.folder ? a.folder : a.name < b.name;
  });
  return out;
}

// What is in use now, kept until the opened file has given a picture.
void keepBeforeOpen(AppState& state, const std::string& path) {
  if (state.doc.beforeOpen) return;  // an earlier open not computed yet: keep the older good state
  state.doc.beforeOpen = Document::BeforeOpen{state.doc.config, state.doc.files, state.doc.trainedLayer, state.doc.presetName,
                                          "cannot open '" + path + "'"};
}

void opened(AppState& state, ViewState& view, const std::string& path) {
  state.doc.configDirty = true;
  state.doc.configError.clear();
  state.actionError.clear();
  view.openUi.message.clear();
  view.openUi.pendingPath.clear();
  view.openUi.folder = std::filesystem::path(path).parent_path().string();
  rememberRecent(view.openUi, path);
}

// A preset file: its configuration, back to text + seed.
bool openPreset(AppState& state, ViewState& view, const std::string& path) {
  auto preset = loadPreset(path);
  if (!preset) {
    view.openUi.message = preset.error().message;
    return false;
  }
  keepBeforeOpen(state, path);
  const std::uint64_t budget = state.doc.config.memoryBudgetBytes;
  state.doc.config = std::move(*preset);
  state.doc.config.memoryBudgetBytes = budget;
  state.doc.files = {};
  state.doc.trainedLayer.reset();
  state.doc.presetName = fileName(path);
  notePresetRead(state, path);
  view.batch = 0;
  view.head = 0;
  opened(state, view, path);
  return true;
}

}  // namespace

const char* arrayRoleName(ArrayRole r) {
  switch (r) {
    case ArrayRole::Query: return "query";
    case ArrayRole::Key: return "key";
    case ArrayRole::Value: return "value";
    case ArrayRole::KeyPaddingMask: return "key padding mask";
    case ArrayRole::AttnMask: return "attention mask";
  }
  return "?";
}

const char* arrayRoleShape(ArrayRole r) {
  switch (r) {
    case ArrayRole::Query: return "(B, T_q, d_model): replaces the sentence";
    case ArrayRole::Key: return "(B, T_k, d_model): cross-attention, with a value file";
    case ArrayRole::Value: return "(B, T_k, d_model): cross-attention, with a key file";
    case ArrayRole::KeyPaddingMask: return "(B, T_k), nonzero = ignore that key";
    case ArrayRole::AttnMask: return "(T_q, T_k), nonzero = blocked";
  }
  return "";
}

bool openWorkspaceFile(AppState& state, ViewState& view, LessonView& lessons, const std::string& path,
                       std::string& error) {
  // Nothing changes on an error (openWorkspace applies all or nothing).
  if (auto st = openWorkspace(state, view, lessons, path); !st) {
    error = st.error().message;
    return false;
  }
  return true;
}

bool beginOpen(AppState& state, ViewState& view, LessonView& lessons, const std::string& path) {
  OpenUi& ui = view.openUi;
  ui.pendingPath.clear();
  auto info = inspectFile(path);
  if (!info) {
    ui.message = info.error().message;
    return false;
  }
  switch (info->kind) {
    case FileKind::Preset: return openPreset(state, view, path);
    case FileKind::Workspace: {
      std::string error;
      if (!openWorkspaceFile(state, view, lessons, path, error)) {
        ui.message = error;
        return false;
      }
      rememberRecent(ui, path);
      return true;
    }
    case FileKind::Weights:
      keepBeforeOpen(state, path);
      state.doc.files.checkpoint.clear();
      state.doc.files.layer.reset();
      state.doc.trainedLayer.reset();
      state.doc.files.weights = path;
      opened(state, view, path);
      return true;
    case FileKind::Model:
      // Layer 0 of the model in the pipeline, every layer in the Model tab (which runs the whole
      // model on its own worker); the text stays the document's, given to the tokenizer verbatim.
      keepBeforeOpen(state, path);
      state.doc.files = {};
      state.doc.files.model = info->folder;
      state.doc.files.layer = 0;
      state.doc.trainedLayer.reset();
      state.doc.presetName = fileName(info->folder) + " layer 0";
      view.batch = 0;
      view.head = 0;
      view.stage = StageId::Weights;
      opened(state, view, info->folder);
      view.selectTab = kModelTab;
      return true;
    case FileKind::Checkpoint:
    case FileKind::Array:
      ui.pendingPath = path;
      ui.pendingInfo = *info;
      ui.layer = std::clamp(ui.layer, 0, std::max(info->layers - 1, 0));
      ui.message.clear();
      ui.requestOpen = true;  // the popup asks for the role or the layer
      return true;
  }
  return false;
}

bool finishOpen(AppState& state, ViewState& view) {
  OpenUi& ui = view.openUi;
  const std::string path = ui.pendingPath;
  if (path.empty()) return false;
  keepBeforeOpen(state, path);
  if (ui.pendingInfo.kind == FileKind::Checkpoint) {
    state.doc.files = {};
    state.doc.files.checkpoint = path;
    state.doc.files.layer = ui.layer;
    state.doc.trainedLayer.reset();
    state.doc.presetName = fileName(path) + " layer " + std::to_string(ui.layer);
    view.batch = 0;
    view.stage = StageId::Weights;
  } else {
    state.doc.files.checkpoint.clear();
    state.doc.files.layer.reset();
    state.doc.trainedLayer.reset();
    switch (static_cast<ArrayRole>(std::clamp(ui.role, 0, kArrayRoleCount - 1))) {
      case ArrayRole::Query: state.doc.files.query = path; break;
      // Key and value come as a pair: the first one opened stands for both until the other is.
      case ArrayRole::Key:
        state.doc.files.key = path;
        if (state.doc.files.value.empty()) state.doc.files.value = path;
        break;
      case ArrayRole::Value:
        state.doc.files.value = path;
        if (state.doc.files.key.empty()) state.doc.files.key = path;
        break;
      case ArrayRole::KeyPaddingMask: state.doc.files.keyPaddingMask = path; break;
      case ArrayRole::AttnMask: state.doc.files.attnMask = path; break;
    }
  }
  opened(state, view, path);
  view.selectTab = kHeatmapTab;
  return true;
}

void closeAllFiles(AppState& state) {
  const bool hadModel = !state.doc.files.model.empty();
  state.doc.files = {};
  state.doc.trainedLayer.reset();
  state.doc.beforeOpen.reset();
  // A trained layer's or a query file's text is not a sentence to go on with; a model's sizes
  // (d_model 4096 …) are not a toy's to go on with either.
  // A model's text, though, is the user's (the model fixes everything but the text and the layer):
  // it stays.
  const bool modelText = hadModel || state.doc.config.name == "model";
  if (state.doc.config.text.rfind("(from ", 0) == 0 || state.doc.config.name == "checkpoint" ||
      state.doc.config.name == "trained layer" || modelText) {
    if (auto p = loadPreset("default")) {
      const std::uint64_t budget = state.doc.config.memoryBudgetBytes;
      std::string text = std::move(state.doc.config.text);
      state.doc.config = std::move(*p);
      state.doc.config.memoryBudgetBytes = budget;
      if (modelText && !text.empty()) state.doc.config.text = std::move(text);
      state.doc.presetName = "default";
    }
  }
  state.doc.configDirty = true;
}

void closeFile(AppState& state, const std::string& flag) {
  InputFiles& f = state.doc.files;
  // A checkpoint or a model folder decides every control: closing it goes back to text + seed.
  if (flag == "--checkpoint" || flag == "--model" || flag == "trained") return closeAllFiles(state);
  if (flag == "--query") {
    f.query.clear();
    f.key.clear();
    f.value.clear();
    if (state.doc.config.text.rfind("(from ", 0) == 0) {
      if (auto p = loadPreset("default")) state.doc.config.text = p->text;
    }
  }
  if (flag == "--key" || flag == "--value") {
    f.key.clear();
    f.value.clear();
  }
  if (flag == "--weights") f.weights.clear();
  if (flag == "--attn-mask") f.attnMask.clear();
  if (flag == "--key-padding-mask") f.keyPaddingMask.clear();
  state.doc.beforeOpen.reset();
  state.doc.configDirty = true;
}

void loadRecent(OpenUi& ui) {
  ui.recent.clear();
  if (ui.recentFile.empty()) return;
  auto bytes = readFile(ui.recentFile, 1 << 20);
  if (!bytes) return;  // none yet
  std::istringstream in(*bytes);
  std::string line;
  while (std::getline(in, line) && ui.recent.size() < kMaxRecent) {
    if (!line.empty() && std::find(ui.recent.begin(), ui.recent.end(), line) == ui.recent.end()) ui.recent.push_back(line);
  }
}

void rememberRecent(OpenUi& ui, const std::string& path) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  const std::string p = ec ? path : abs;
  ui.recent.erase(std::remove(ui.recent.begin(), ui.recent.end(), p), ui.recent.end());
  ui.recent.insert(ui.recent.begin(), p);
  if (ui.recent.size() > kMaxRecent) ui.recent.resize(kMaxRecent);
  if (ui.recentFile.empty()) return;
  std::string text;
  for (const auto& r : ui.recent) text += r + "\n";
  (void)writeFileAtomic(ui.recentFile, text);  // losing the list is no reason to stop an open
}

void refreshOpenFileListing(OpenUi& ui, double now) {
  if (ui.listedAt >= 0 && ui.folder == ui.listedFor && now - ui.listedAt < kOpenListingSeconds) return;
  ui.listedFor = ui.folder;
  ui.listedFolder = folderToList(ui.folder);
  ui.listError.clear();
  ui.entries = listFolder(ui.listedFolder, ui.listError);
  ui.recentMissing.clear();
  for (const auto& p : ui.recent) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) ui.recentMissing.push_back(p);
  }
  ui.listedAt = now;
}

}  // namespace mhascope::app
