// Workspace files, the input files' records (see workspace.hpp): recording each input file
// (absolute and relative path, size, SHA-256; a model folder's files by SHA-256 or by size and
// modification time) and finding them again when a workspace opens (moved with the workspace,
// changed, moved or deleted): recordWorkspaceFiles, locateWorkspaceFiles. The JSON format, its
// writer and its strict reader: workspace.cpp.
#include "io/workspace.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sys/stat.h>

#include "io/file_io.hpp"
#include "io/sha256.hpp"
#include "io/workspace_internal.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;
using workspace_detail::fileFields;

// The files of a model folder that decide its numbers besides the weights: hashed.
constexpr const char* kHashedModelFiles[] = {"config.json", "tokenizer.json", "vocab.json", "merges.txt",
                                            "model.safetensors.index.json"};

// A model given as its config.json is recorded as given; its files are its folder's.
fs::path modelFolderOf(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
}

Result<std::int64_t> modificationTimeNs(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return makeError("cannot read the modification time of '" + p.string() + "'");
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// config.json and the tokenizer's files by SHA-256; every *.safetensors by size + mtime.
Result<std::vector<WorkspaceFolderFile>> recordModelFolder(const std::string& path) {
  const fs::path dir = modelFolderOf(path);
  std::vector<WorkspaceFolderFile> out;
  std::error_code ec;
  for (const char* name : kHashedModelFiles) {
    const fs::path p = dir / name;
    if (!fs::exists(p, ec)) continue;
    auto size = regularFileSize(p.string());
    if (!size) return size.error();
    auto hash = sha256File(p.string());
    if (!hash) return hash.error();
    out.push_back({name, *size, *hash, 0});
  }
  std::vector<std::string> weights;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors") weights.push_back(it->path().filename().string());
  }
  if (ec) return makeError("cannot list the model folder '" + dir.string() + "': " + ec.message());
  std::sort(weights.begin(), weights.end());
  for (const std::string& name : weights) {
    auto size = regularFileSize((dir / name).string());
    if (!size) return size.error();
    auto mtime = modificationTimeNs(dir / name);
    if (!mtime) return mtime.error();
    out.push_back({name, *size, "", *mtime});
  }
  return out;
}

// Why the folder at `dir` differs from its record, or "" when it does not.
std::string modelFolderChange(const fs::path& dir, const std::vector<WorkspaceFolderFile>& files) {
  for (const WorkspaceFolderFile& f : files) {
    const fs::path p = dir / f.name;
    auto size = regularFileSize(p.string());
    if (!size) return f.name + " is gone or unreadable";
    if (*size != f.size) return f.name + ": size " + std::to_string(f.size) + " → " + std::to_string(*size) + " bytes";
    if (!f.sha256.empty()) {
      auto hash = sha256File(p.string());
      if (!hash) return f.name + " is unreadable";
      if (*hash != f.sha256) return f.name + ": SHA-256 " + f.sha256.substr(0, 12) + "… → " + hash->substr(0, 12) + "…";
    } else {
      auto mtime = modificationTimeNs(p);
      if (!mtime || *mtime != f.mtimeNs) return f.name + ": modified since (the weights are compared by size and time)";
    }
  }
  return "";
}

std::string folderOf(const std::string& workspacePath) {
  std::error_code ec;
  fs::path abs = fs::absolute(workspacePath, ec);
  return ec ? std::string(".") : abs.parent_path().string();
}

}  // namespace

Result<std::map<std::string, WorkspaceFile>> recordWorkspaceFiles(const InputFiles& files,
                                                                  const std::string& workspacePath) {
  std::map<std::string, WorkspaceFile> out;
  const fs::path dir = folderOf(workspacePath);
  for (const auto& [name, member] : fileFields()) {
    const std::string& path = files.*member;
    if (path.empty()) continue;
    auto size = regularFileSize(path);
    if (!size) return makeError("--" + std::string(name) + ": " + size.error().message);
    auto hash = sha256File(path);
    if (!hash) return makeError("--" + std::string(name) + ": " + hash.error().message);
    std::error_code ec;
    WorkspaceFile f;
    f.path = path;
    f.absolutePath = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
    f.relativePath = fs::path(f.absolutePath).lexically_relative(dir).string();
    f.size = *size;
    f.sha256 = *hash;
    out[name] = f;
  }
  if (!files.model.empty()) {
    std::error_code ec;
    WorkspaceFile f;
    f.path = files.model;
    f.absolutePath = fs::weakly_canonical(fs::absolute(files.model, ec), ec).string();
    f.relativePath = fs::path(f.absolutePath).lexically_relative(dir).string();
    auto folder = recordModelFolder(files.model);
    if (!folder) return makeError("--model: " + folder.error().message);
    f.folderFiles = std::move(*folder);
    out["model"] = f;
  }
  return out;
}

namespace {

// Where a recorded file or folder is now: at its absolute path, else at the same place relative
// to the workspace (a note says so), else an error naming each place looked at once.
Result<std::string> locateRecorded(const WorkspaceFile& rec, const std::string& flag, const fs::path& dir,
                                   const std::string& workspacePath, std::vector<std::string>& notes) {
  std::error_code ec;
  if (fs::exists(rec.absolutePath, ec)) return rec.absolutePath;
  const std::string relative = rec.relativePath.empty() ? "" : (dir / rec.relativePath).lexically_normal().string();
  if (!relative.empty() && fs::exists(relative, ec)) {
    notes.push_back(flag + " '" + rec.path + "' is no longer at '" + rec.absolutePath + "'; using '" + relative +
                    "' (the same place relative to the workspace '" + workspacePath + "')");
    return relative;
  }
  const std::string where = relative.empty() || relative == rec.absolutePath
                                ? "it is not at '" + rec.absolutePath + "'"
                                : "it is neither at '" + rec.absolutePath + "' nor at '" + relative + "'";
  return makeError(flag + " '" + rec.path + "' of the workspace '" + workspacePath + "' was moved or deleted: " +
                   where);
}

}  // namespace

Result<InputFiles> locateWorkspaceFiles(const Workspace& ws, const std::string& workspacePath,
                                        std::vector<std::string>& notes, const std::set<std::string>& replaced) {
  InputFiles found = ws.files;
  const fs::path dir = folderOf(workspacePath);
  for (const auto& [name, member] : fileFields()) {
    if ((ws.files.*member).empty() || replaced.count(name)) continue;
    const WorkspaceFile& rec = ws.fileRecords.at(name);
    auto located = locateRecorded(rec, "--" + std::string(name), dir, workspacePath, notes);
    if (!located) return located.error();
    const std::string& at = *located;
    auto size = regularFileSize(at);
    if (!size) return makeError("--" + std::string(name) + " of the workspace '" + workspacePath + "': " + size.error().message);
    std::string hash;
    if (*size == rec.size) {
      auto h = sha256File(at);
      if (!h) return makeError("--" + std::string(name) + " of the workspace '" + workspacePath + "': " + h.error().message);
      hash = *h;
    }
    if (*size != rec.size || hash != rec.sha256) {
      return makeError("--" + std::string(name) + " '" + at + "' changed since the workspace '" + workspacePath +
                       "' was saved (" +
                       (*size != rec.size ? "size " + std::to_string(rec.size) + " → " + std::to_string(*size) + " bytes"
                                          : "SHA-256 " + rec.sha256.substr(0, 12) + "… → " + hash.substr(0, 12) + "…") +
                       "); refusing to show a different picture under the saved view");
    }
    found.*member = at;
  }
  if (!ws.files.model.empty() && !replaced.count("model")) {
    const WorkspaceFile& rec = ws.fileRecords.at("model");
    auto located = locateRecorded(rec, "--model", dir, workspacePath, notes);
    if (!located) return located.error();
    const std::string& at = *located;
    if (const std::string why = modelFolderChange(modelFolderOf(at), rec.folderFiles); !why.empty()) {
      return makeError("--model '" + at + "' changed since the workspace '" + workspacePath + "' was saved (" + why +
                       "); refusing to show a different picture under the saved view");
    }
    found.model = at;
  }
  return found;
}

}  // namespace mhascope
