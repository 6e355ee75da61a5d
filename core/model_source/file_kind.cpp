// File kinds from headers (see file_kind.hpp).
#include "model_source/file_kind.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "io/file_io.hpp"
#include "io/workspace.hpp"
#include "model/config.hpp"
#include "model/families/family.hpp"

namespace mhascope {
namespace {

constexpr std::uint64_t kMaxSafetensorsHeader = 16ull << 20;  // a layer's header is a few KiB
constexpr std::uint64_t kMaxJsonBytes = 4ull << 20;           // presets and workspaces are small

std::string lowerExtension(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

Result<FileInfo> inspectSafetensors(const std::string& path) {
  auto head = readFilePrefix(path, 8);
  if (!head) return head.error();
  if (head->size() < 8) return makeError("'" + path + "' is too short to be a .safetensors file (" + std::to_string(head->size()) + " bytes)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>((*head)[static_cast<std::size_t>(i)]);
  if (n < 2 || n > kMaxSafetensorsHeader) {
    return makeError("'" + path + "' is not a .safetensors file: its header length (" + std::to_string(n) +
                     " bytes) is out of range");
  }
  auto bytes = readFilePrefix(path, 8 + n);
  if (!bytes) return bytes.error();
  if (bytes->size() < 8 + n) return makeError("'" + path + "' is cut short: its header needs " + std::to_string(n) + " bytes");
  const auto j = nlohmann::json::parse(bytes->begin() + 8, bytes->end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("'" + path + "' is not a .safetensors file: its header is not a JSON object");
  FileInfo info;
  const auto meta = j.find("__metadata__");
  if (meta != j.end() && meta->is_object() && meta->value("format", "") == "mhascope-gpt") {
    info.kind = FileKind::Checkpoint;
    const std::string layers = meta->value("layers", "0");
    info.layers = std::all_of(layers.begin(), layers.end(), ::isdigit) && !layers.empty() && layers.size() < 6 ? std::stoi(layers) : 0;
    info.summary = "training checkpoint (" + meta->value("task", std::string("?")) + " task, step " +
                   meta->value("step", std::string("?")) + ", " + std::to_string(info.layers) + " layer" +
                   (info.layers == 1 ? "" : "s") + ")";
    return info;
  }
  const auto w = j.find("in_proj_weight");
  if (w == j.end() || !w->is_object()) {
    // A model folder's weights file: the folder is what opens (its config.json says how to read them).
    std::error_code ec;
    const auto config = std::filesystem::path(path).parent_path() / "config.json";
    if (std::filesystem::is_regular_file(config.empty() ? "config.json" : config, ec)) {
      const std::string dir = std::filesystem::path(path).parent_path().string();
      return makeError("'" + path + "' is the weights of a model folder: open the model's folder" +
                       (dir.empty() ? "" : " '" + dir + "'") + " or its config.json");
    }
    return makeError("'" + path + "' holds neither MHA weights (in_proj_weight, out_proj.weight … as PyTorch's "
                     "nn.MultiheadAttention names them) nor an mhascope training checkpoint");
  }
  info.kind = FileKind::Weights;
  if (const auto s = w->find("shape"); s != w->end() && s->is_array()) {
    for (const auto& d : *s)
      if (d.is_number_integer()) info.shape.push_back(d.get<std::int64_t>());
  }
  const bool bias = j.contains("in_proj_bias");
  info.summary = "MHA weights" + (info.shape.size() == 2 ? ", d_model = " + std::to_string(info.shape[1]) : std::string()) +
                 (bias ? ", with biases" : ", no biases");
  return info;
}

// The .npy header's shape only ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5, 12), }").
Result<FileInfo> inspectNpy(const std::string& path) {
  auto bytes = readFilePrefix(path, 4096);
  if (!bytes) return bytes.error();
  if (bytes->size() < 10 || std::memcmp(bytes->data(), "\x93NUMPY", 6) != 0) {
    return makeError("'" + path + "' is not a .npy file (it does not start with \\x93NUMPY)");
  }
  std::smatch m;
  const std::string& b = *bytes;
  if (!std::regex_search(b, m, std::regex(R"('shape'\s*:\s*\(([0-9,\s]*)\))"))) {
    return makeError("'" + path + "': the .npy header has no shape");
  }
  FileInfo info;
  info.kind = FileKind::Array;
  const std::string dims = m[1];
  std::regex num(R"(\d{1,18})");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it)
    info.shape.push_back(std::stoll(it->str()));
  info.summary = "array " + shapeToString(info.shape);
  return info;
}

// A model folder's config.json, checked as the model will read it (an unknown model_type or an
// unsupported key is refused here, in the popup, before anything else is read).
Result<FileInfo> inspectModelConfig(const std::string& configPath, const std::string& bytes, const std::string& folder) {
  auto spec = model::parseModelConfig(bytes, configPath);
  if (!spec) return spec.error();
  FileInfo info;
  info.kind = FileKind::Model;
  info.layers = spec->layers;
  info.folder = folder;
  info.summary = std::string(spec->family->modelType) + " model: " + std::to_string(spec->layers) + " layers × " +
                 std::to_string(spec->heads) + " heads, d_model = " + std::to_string(spec->dModel) +
                 (spec->kvHeads != spec->heads ? ", N = " + std::to_string(spec->kvHeads) + " K/V heads" : std::string());
  return info;
}

Result<FileInfo> inspectModelFolder(const std::string& path) {
  const std::string config = (std::filesystem::path(path) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(config, ec)) {
    return makeError("'" + path + "' is a folder without a config.json: the window opens a model folder (config.json, "
                     ".safetensors weights, tokenizer.json) or a file");
  }
  auto bytes = readFile(config, kMaxJsonBytes);
  if (!bytes) return bytes.error();
  return inspectModelConfig(config, *bytes, path);
}

Result<FileInfo> inspectJson(const std::string& path) {
  auto bytes = readFile(path, kMaxJsonBytes);
  if (!bytes) return bytes.error();
  const auto j = nlohmann::json::parse(*bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("'" + path + "' is not a JSON object (a preset or a workspace)");
  if (!j.contains("mhascope_workspace") && j.contains("model_type")) {
    std::string folder = std::filesystem::path(path).parent_path().string();
    return inspectModelConfig(path, *bytes, folder.empty() ? "." : folder);
  }
  FileInfo info;
  info.kind = j.contains("mhascope_workspace") ? FileKind::Workspace : FileKind::Preset;
  info.summary = info.kind == FileKind::Workspace ? "workspace" : "preset";
  return info;
}

// A page mhascope exported: opened as the workspace it carries.
Result<FileInfo> inspectHtml(const std::string& path) {
  auto prefix = readFilePrefix(path, 64);
  if (!prefix) return prefix.error();
  if (!looksLikeHtml(*prefix)) return makeError("'" + path + "' does not start like an HTML page (<!DOCTYPE html>)");
  auto bytes = readFile(path, kMaxHtmlWorkspacePageBytes);
  if (!bytes) return bytes.error();
  auto ws = workspaceJsonInHtml(*bytes, "'" + path + "'");
  if (!ws) return ws.error();
  FileInfo info;
  info.kind = FileKind::Workspace;
  info.summary = "workspace (in an exported page)";
  return info;
}

}  // namespace

const std::vector<std::string>& openableExtensions() {
  static const std::vector<std::string> kExt{".safetensors", ".npy", ".json", ".html", ".htm"};
  return kExt;
}

bool hasOpenableExtension(const std::string& path) {
  const std::string e = lowerExtension(path);
  const auto& all = openableExtensions();
  return std::find(all.begin(), all.end(), e) != all.end();
}

Result<FileInfo> inspectFile(const std::string& path) {
  if (path.empty()) return makeError("no file named: type a path or pick a file from the list");
  if (std::error_code ec; std::filesystem::is_directory(path, ec)) return inspectModelFolder(path);
  if (auto size = regularFileSize(path); !size) return size.error();  // missing, folder, FIFO, device
  const std::string e = lowerExtension(path);
  if (e == ".safetensors") return inspectSafetensors(path);
  if (e == ".npy") return inspectNpy(path);
  if (e == ".json") return inspectJson(path);
  if (e == ".html" || e == ".htm") return inspectHtml(path);
  return makeError("'" + path + "': the window opens .safetensors (weights, checkpoints), .npy (inputs, masks), "
                   ".json (presets, workspaces) and .html (exported pages, for their workspace) files, and model "
                   "folders (with their config.json)");
}

}  // namespace mhascope
