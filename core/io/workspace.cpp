// Workspace files, the format (see workspace.hpp): Workspace → JSON, the strict reader JSON →
// Workspace, and reading and writing the file. The input files' records (SHA-256, changed, moved
// or deleted files, model folders, locateWorkspaceFiles): workspace_files.cpp.
//   [SECTION] writing        — Workspace → JSON, per block
//   [SECTION] reading        — JSON → Workspace, strict, per block
#include "io/workspace.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "io/file_io.hpp"
#include "io/strict_json.hpp"
#include "io/presets.hpp"
#include "io/workspace_internal.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using workspace_detail::fileFields;

}  // namespace

namespace workspace_detail {

// The file fields of InputFiles by their flag without "--" (the keys of "files", as trace.json's
// input_files).
const std::vector<std::pair<const char*, std::string InputFiles::*>>& fileFields() {
  static const std::vector<std::pair<const char*, std::string InputFiles::*>> k = {
      {"query", &InputFiles::query},       {"key", &InputFiles::key},
      {"value", &InputFiles::value},       {"weights", &InputFiles::weights},
      {"attn-mask", &InputFiles::attnMask}, {"key-padding-mask", &InputFiles::keyPaddingMask},
      {"checkpoint", &InputFiles::checkpoint}};
  return k;
}

}  // namespace workspace_detail

// ---------------------------------------------------------------------------------------------
// [SECTION] writing
// ---------------------------------------------------------------------------------------------
namespace {

json zoomJson(const WorkspaceZoom& z) { return {{"zoom", z.zoom}, {"pan_x", z.panX}, {"pan_y", z.panY}}; }

json filesJson(const Workspace& ws) {
  json j = json::object();
  for (const auto& [name, member] : fileFields()) {
    if ((ws.files.*member).empty()) continue;
    const WorkspaceFile& f = ws.fileRecords.at(name);
    j[name] = {{"path", f.path}, {"absolute", f.absolutePath}, {"relative", f.relativePath},
               {"size", f.size}, {"sha256", f.sha256}};
  }
  if (!ws.files.model.empty()) {
    const WorkspaceFile& f = ws.fileRecords.at("model");
    json files = json::array();
    for (const WorkspaceFolderFile& e : f.folderFiles) {
      json je = {{"name", e.name}, {"size", e.size}};
      if (!e.sha256.empty()) je["sha256"] = e.sha256;
      else je["mtime_ns"] = e.mtimeNs;
      files.push_back(je);
    }
    j["model"] = {{"path", f.path}, {"absolute", f.absolutePath}, {"relative", f.relativePath}, {"files", files}};
  }
  if (ws.files.layer) j["layer"] = *ws.files.layer;
  return j;
}

json viewJson(const WorkspaceView& v) {
  return {{"stage", stageInfo(v.stage).name}, {"batch", v.batch}, {"head", v.head}, {"tab", v.tab},
          {"zoom", zoomJson(v.zoom)}, {"weight_zoom", zoomJson(v.weightZoom)},
          {"colormap", v.colormap ? colormapName(*v.colormap) : "auto"}, {"see_as", seeAsName(v.seeAs)},
          {"shared_scale", v.sharedScale},
          {"numbers", v.showNumbers}, {"color_scale", colorScaleName(v.colorScale)},
          {"weight", weightName(v.weight)}, {"play_speed", v.playStagesPerSecond}};
}

json lessonsJson(const LessonChoices& l) {
  json j = json::object();
  forEachLessonField(l, [&](const char* key, const auto& value) { j[key] = value; });
  return j;
}

}  // namespace

std::string workspaceToJson(const Workspace& ws) {
  json j;
  j["mhascope_workspace"] = kWorkspaceVersion;
  j["preset"] = ws.presetName;
  j["config"] = json::parse(presetToJson(ws.config));
  j["files"] = filesJson(ws);
  j["view"] = viewJson(ws.view);
  j["lessons"] = lessonsJson(ws.lessons);
  for (const auto& [key, block] : {std::pair{"train", &ws.train}, {"model_view", &ws.modelView}, {"experiments", &ws.experiments}}) {
    if (!block->empty()) j[key] = json::parse(*block);
  }
  return j.dump(2) + "\n";
}

Status writeWorkspaceFile(const std::string& path, const Workspace& ws) {
  for (const auto& [flag, in] : ws.files.named()) {
    if (sameFile(in, path)) {
      return makeError("workspace '" + path + "' is the same file as " + flag + " '" + in +
                       "'; writing it would destroy that input: choose another name");
    }
  }
  if (!ws.files.model.empty()) {
    // A workspace ends in .json, so of a model folder's files only its JSON ones can be hit (the
    // full list, shards included, is core/model_source's modelFolderFiles, which core cannot call).
    std::error_code ec;
    fs::path dir = fs::is_directory(ws.files.model, ec) ? fs::path(ws.files.model) : fs::path(ws.files.model).parent_path();
    if (dir.empty()) dir = ".";
    for (const char* name : {"config.json", "tokenizer.json", "vocab.json", "model.safetensors.index.json"}) {
      const std::string in = (dir / name).string();
      if (sameFile(in, path)) {
        return makeError("workspace '" + path + "' is the same file as --model's " + name + " '" + in +
                         "'; writing it would destroy that input: choose another name");
      }
    }
  }
  std::string ext = fs::path(path).extension().string();
  for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ext != ".json") return makeError("workspace '" + path + "': the file is JSON, so its name must end in .json");
  return writeFileAtomic(path, workspaceToJson(ws));
}

// ---------------------------------------------------------------------------------------------
// [SECTION] reading
// ---------------------------------------------------------------------------------------------
namespace {

// Typed access to one JSON object with errors "<file>: /view/head must be …".
struct ObjectReader {
  const json& j;
  std::string path;  // "/view"
  const std::string& what;

  Status keys(std::initializer_list<const char*> required, std::initializer_list<const char*> optional = {}) const {
    if (!j.is_object()) return makeError(what + ": " + path + " must be an object, got " + jsonTypeName(j));
    std::set<std::string> known;
    for (const char* k : required) {
      known.insert(k);
      if (!j.contains(k)) return makeError(what + ": missing key " + path + "/" + k);
    }
    for (const char* k : optional) known.insert(k);
    for (const auto& [key, value] : j.items()) {
      if (!known.count(key)) return makeError(what + ": unknown key " + path + "/" + key);
    }
    return Ok{};
  }
  Error bad(const char* key, const std::string& expected) const {
    const json& v = j.at(key);
    return makeError(what + ": " + path + "/" + key + " must be " + expected + ", got " +
                     (v.is_primitive() ? v.dump() : jsonTypeName(v)));
  }
  Result<long long> integer(const char* key, long long lo, long long hi) const {
    const json& v = j.at(key);
    const std::string range = "an integer " + std::to_string(lo) + " … " + std::to_string(hi);
    if (!v.is_number_integer()) return bad(key, range);
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                               : (v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)) {
      return bad(key, range);
    }
    return v.get<long long>();
  }
  Status index(const char* key, int& out, long long hi = 1'000'000) const {
    auto v = integer(key, 0, hi);
    if (!v) return v.error();
    out = static_cast<int>(*v);
    return Ok{};
  }
  Status number(const char* key, float& out, double lo, double hi) const {
    const json& v = j.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi) {
      return bad(key, "a number " + json(lo).dump() + " … " + json(hi).dump() +
                          (v.is_null() ? " (NaN/Inf are saved as null)" : ""));
    }
    out = v.get<float>();
    return Ok{};
  }
  Status flag(const char* key, bool& out) const {
    if (!j.at(key).is_boolean()) return bad(key, "true or false");
    out = j.at(key).get<bool>();
    return Ok{};
  }
  Result<std::string> string(const char* key) const {
    if (!j.at(key).is_string()) return bad(key, "a string");
    return j.at(key).get<std::string>();
  }
  ObjectReader child(const char* key) const { return {j.at(key), path + "/" + key, what}; }
};

#define MHASCOPE_TRY(expr)           \
  if (auto st_ = (expr); !st_) { \
    return st_.error();            \
  }

Status readZoom(const ObjectReader& r, WorkspaceZoom& z) {
  MHASCOPE_TRY(r.keys({"zoom", "pan_x", "pan_y"}));
  MHASCOPE_TRY(r.number("zoom", z.zoom, 1e-3, 1e6));
  MHASCOPE_TRY(r.number("pan_x", z.panX, -1e9, 1e9));
  MHASCOPE_TRY(r.number("pan_y", z.panY, -1e9, 1e9));
  return Ok{};
}

bool isHexDigest(const std::string& h) {
  return h.size() == 64 && h.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// "model": the folder as given and where it was, and its files (hashed ones with sha256, weights
// with mtime_ns). A name is a plain file name, so a record never reaches outside the folder.
Status readModelRecord(const ObjectReader& r, Workspace& ws) {
  MHASCOPE_TRY(r.keys({"path", "absolute", "relative", "files"}));
  WorkspaceFile rec;
  auto path = r.string("path"), abs = r.string("absolute"), rel = r.string("relative");
  for (auto* s : {&path, &abs, &rel})
    if (!*s) return s->error();
  if (path->empty() || abs->empty()) return makeError(r.what + ": /files/model: the paths must not be empty");
  const json& files = r.j.at("files");
  if (!files.is_array() || files.size() > 100000) return r.bad("files", "an array of the folder's files");
  bool config = false;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string at = "/files/model/files/" + std::to_string(i);
    const ObjectReader e{files[i], r.path + "/files/" + std::to_string(i), r.what};
    MHASCOPE_TRY(e.keys({"name", "size"}, {"sha256", "mtime_ns"}));
    WorkspaceFolderFile f;
    auto name = e.string("name");
    if (!name) return name.error();
    if (name->empty() || *name == "." || *name == ".." || name->find('/') != std::string::npos ||
        name->find('\0') != std::string::npos) {
      return makeError(r.what + ": " + at + "/name must be a file name inside the folder, got \"" + *name + "\"");
    }
    f.name = *name;
    auto size = e.integer("size", 0, std::numeric_limits<long long>::max());
    if (!size) return size.error();
    f.size = static_cast<std::uint64_t>(*size);
    if (e.j.contains("sha256") == e.j.contains("mtime_ns")) {
      return makeError(r.what + ": " + at + " needs exactly one of sha256 (config and tokenizer files) and mtime_ns "
                       "(weights)");
    }
    if (e.j.contains("sha256")) {
      auto hash = e.string("sha256");
      if (!hash) return hash.error();
      if (!isHexDigest(*hash)) return makeError(r.what + ": " + at + "/sha256 must be 64 lowercase hex digits");
      f.sha256 = *hash;
    } else {
      auto mtime = e.integer("mtime_ns", std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max());
      if (!mtime) return mtime.error();
      f.mtimeNs = *mtime;
    }
    config |= f.name == "config.json" && !f.sha256.empty();
    rec.folderFiles.push_back(std::move(f));
  }
  if (!config) return makeError(r.what + ": /files/model/files must record config.json with its sha256");
  rec.path = *path;
  rec.absolutePath = *abs;
  rec.relativePath = *rel;
  ws.files.model = rec.path;
  ws.fileRecords["model"] = std::move(rec);
  return Ok{};
}

Status readFiles(const ObjectReader& r, Workspace& ws) {
  if (!r.j.is_object()) return makeError(r.what + ": /files must be an object, got " + jsonTypeName(r.j));
  for (const auto& [key, value] : r.j.items()) {
    if (key == "layer") {
      auto layer = r.integer("layer", 0, 1'000'000);
      if (!layer) return layer.error();
      ws.files.layer = static_cast<int>(*layer);
      continue;
    }
    if (key == "model") {
      MHASCOPE_TRY(readModelRecord(r.child("model"), ws));
      continue;
    }
    const auto& fields = fileFields();
    const std::string& name = key;  // clang 14 cannot capture a structured binding in a lambda yet
    auto it = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return name == f.first; });
    if (it == fields.end()) return makeError(r.what + ": unknown key /files/" + key);
    const ObjectReader f = r.child(it->first);
    MHASCOPE_TRY(f.keys({"path", "absolute", "relative", "size", "sha256"}));
    WorkspaceFile rec;
    auto path = f.string("path"), abs = f.string("absolute"), rel = f.string("relative"), hash = f.string("sha256");
    for (auto* s : {&path, &abs, &rel, &hash})
      if (!*s) return s->error();
    auto size = f.integer("size", 0, std::numeric_limits<long long>::max());
    if (!size) return size.error();
    if (path->empty() || abs->empty()) return makeError(r.what + ": /files/" + key + ": the paths must not be empty");
    if (!isHexDigest(*hash)) {
      return makeError(r.what + ": /files/" + key + "/sha256 must be 64 lowercase hex digits");
    }
    rec = {*path, *abs, *rel, static_cast<std::uint64_t>(*size), *hash, {}};
    ws.files.*(it->second) = rec.path;
    ws.fileRecords[key] = rec;
  }
  return Ok{};
}

Status readView(const ObjectReader& r, WorkspaceView& v) {
  // see_as is optional: a workspace written before the preview existed opens with normal vision.
  MHASCOPE_TRY(r.keys({"stage", "batch", "head", "tab", "zoom", "weight_zoom", "colormap", "shared_scale", "numbers",
                       "color_scale", "weight", "play_speed"},
                      {"see_as"}));
  auto stage = r.string("stage");
  if (!stage) return stage.error();
  auto id = stageFromName(*stage);
  if (!id) return makeError(r.what + ": /view/stage: unknown stage \"" + *stage + "\"");
  v.stage = *id;
  MHASCOPE_TRY(r.index("batch", v.batch));
  MHASCOPE_TRY(r.index("head", v.head));
  auto tab = r.string("tab");
  if (!tab) return tab.error();
  v.tab = *tab;
  MHASCOPE_TRY(readZoom(r.child("zoom"), v.zoom));
  MHASCOPE_TRY(readZoom(r.child("weight_zoom"), v.weightZoom));
  auto cmap = r.string("colormap");
  if (!cmap) return cmap.error();
  v.colormap.reset();
  if (*cmap != "auto") {
    auto c = colormapFromName(*cmap);
    if (!c) return makeError(r.what + ": /view/colormap: " + c.error().message);
    v.colormap = *c;
  }
  v.seeAs = SeeAs::Normal;
  if (r.j.contains("see_as")) {
    auto seeAs = r.string("see_as");
    if (!seeAs) return seeAs.error();
    auto k = seeAsFromName(*seeAs);
    if (!k) return makeError(r.what + ": /view/see_as: " + k.error().message);
    v.seeAs = *k;
  }
  MHASCOPE_TRY(r.flag("shared_scale", v.sharedScale));
  MHASCOPE_TRY(r.flag("numbers", v.showNumbers));
  auto scale = r.string("color_scale");
  if (!scale) return scale.error();
  bool known = false;
  for (int i = 0; i < kColorScaleCount; ++i) {
    if (*scale == colorScaleName(static_cast<ColorScale>(i))) {
      v.colorScale = static_cast<ColorScale>(i);
      known = true;
    }
  }
  if (!known) return makeError(r.what + ": /view/color_scale: unknown scale \"" + *scale + "\" (linear, log, per row)");
  auto weight = r.string("weight");
  if (!weight) return weight.error();
  auto w = weightFromName(*weight);
  if (!w) return makeError(r.what + ": /view/weight: unknown matrix \"" + *weight + "\" (" + weightNamesList() + ")");
  v.weight = *w;
  MHASCOPE_TRY(r.number("play_speed", v.playStagesPerSecond, 0.25, 4.0));
  return Ok{};
}

// One lesson choice by its C++ type: indices, a score, a fixed number of sweep ends, per-head flags.
Status readLessonField(const ObjectReader& r, const char* key, int& out) { return r.index(key, out); }
Status readLessonField(const ObjectReader& r, const char* key, float& out) { return r.number(key, out, -1e6, 1e6); }
template <std::size_t N>
Status readLessonField(const ObjectReader& r, const char* key, std::array<int, N>& out) {
  const json& a = r.j.at(key);
  const std::string n = std::to_string(N);
  if (!a.is_array() || a.size() != N) return r.bad(key, "an array of " + n + " integers");
  for (std::size_t i = 0; i < N; ++i) {
    if (!a[i].is_number_integer() || a[i].get<std::int64_t>() < 1 || a[i].get<std::int64_t>() > 1'000'000) {
      return r.bad(key, "an array of " + n + " integers 1 … 1000000");
    }
    out[i] = a[i].get<int>();
  }
  return Ok{};
}
Status readLessonField(const ObjectReader& r, const char* key, std::vector<std::uint8_t>& out) {
  const json& a = r.j.at(key);
  if (!a.is_array() || a.size() > 65536) return r.bad(key, "an array of at most 65536 0/1 values");
  out.clear();
  for (const json& h : a) {
    if (!h.is_number_integer() || (h.get<std::int64_t>() != 0 && h.get<std::int64_t>() != 1)) {
      return r.bad(key, "an array of 0/1 values");
    }
    out.push_back(static_cast<std::uint8_t>(h.get<int>()));
  }
  return Ok{};
}

// A lesson's keys come all together or not at all: a workspace written before a lesson existed
// holds none of its keys and opens with that lesson's defaults; one that holds some of them must
// hold every one. No other key is allowed.
Status readLessons(const ObjectReader& r, LessonChoices& l) {
  if (!r.j.is_object()) return makeError(r.what + ": " + r.path + " must be an object, got " + jsonTypeName(r.j));
  std::vector<const char*> keys;
  forEachLessonField(l, [&](const char* key, const auto&) { keys.push_back(key); });
  for (const auto& [key, value] : r.j.items()) {
    const std::string& name = key;  // clang 14 cannot capture a structured binding in a lambda yet
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return name == k; })) {
      return makeError(r.what + ": unknown key " + r.path + "/" + key);
    }
  }
  if (!r.j.contains("batch")) return makeError(r.what + ": missing key " + r.path + "/batch");
  Status st = readLessonField(r, "batch", l.batch);
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    if (!st) return;
    std::vector<const char*> own;
    L::Choices::fields(l.template of<L>(), [&](const char* key, const auto&) { own.push_back(key); });
    const auto held = std::count_if(own.begin(), own.end(), [&](const char* k) { return r.j.contains(k); });
    if (held == 0) return;  // written before this lesson existed: its defaults
    for (const char* k : own) {
      if (!r.j.contains(k)) {
        st = makeError(r.what + ": missing key " + r.path + "/" + k);
        return;
      }
    }
    L::Choices::fields(l.template of<L>(), [&](const char* key, auto& value) {
      if (st) st = readLessonField(r, key, value);
    });
  });
  return st;
}

}  // namespace

Result<Workspace> parseWorkspaceJson(std::string_view text, const std::string& what) {
  if (text.size() > kMaxWorkspaceBytes) {
    return makeError(what + ": " + std::to_string(text.size()) + " bytes, more than a workspace may hold (" +
                     std::to_string(kMaxWorkspaceBytes >> 20) + " MiB)");
  }
  auto parsed = parseStrictJson(text, what);
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  if (!j.is_object()) return makeError(what + ": expected a JSON object, got " + jsonTypeName(j));
  if (!j.contains("mhascope_workspace")) {
    return makeError(what + ": not a mhascope workspace (no key /mhascope_workspace)");
  }
  const json& version = j["mhascope_workspace"];
  if (!version.is_number_integer() || version.get<std::int64_t>() < 1) {
    return makeError(what + ": /mhascope_workspace (the format version) must be a positive integer, got " + version.dump());
  }
  if (version.get<std::int64_t>() > kWorkspaceVersion) {
    return makeError(what + ": written by a newer mhascope (workspace format " + version.dump() +
                     "; this build reads format " + std::to_string(kWorkspaceVersion) + ")");
  }
  const ObjectReader top{j, "", what};
  // "view" and "lessons" may be left out (a workspace written for the commands, e.g. by
  // scripts/capture_attention.py): then the defaults; when present they are read strictly.
  MHASCOPE_TRY(top.keys({"mhascope_workspace", "preset", "config", "files"}, {"view", "lessons", "train", "model_view", "experiments"}));
  Workspace ws;
  auto preset = top.string("preset");
  if (!preset) return preset.error();
  ws.presetName = *preset;
  if (!j["config"].is_object()) return top.bad("config", "an object");
  auto cfg = parsePresetJson(j["config"].dump(), what + " /config");
  if (!cfg) return cfg.error();
  ws.config = std::move(*cfg);
  MHASCOPE_TRY(readFiles(top.child("files"), ws));
  if (j.contains("view")) {
    MHASCOPE_TRY(readView(top.child("view"), ws.view));
  }
  if (j.contains("lessons")) {
    MHASCOPE_TRY(readLessons(top.child("lessons"), ws.lessons));
    ws.lessons.startedFrom = configStartOf(ws.config);  // its choices were made for its configuration
  }
  // The window's blocks: the app checks their keys (session.cpp trainFromJson, model_view_state.cpp).
  for (const auto& [key, block] : {std::pair{"train", &ws.train}, {"model_view", &ws.modelView}, {"experiments", &ws.experiments}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_object()) return top.bad(key, "an object");
    *block = j[key].dump();
  }
  return ws;
}

bool looksLikeHtml(std::string_view text) {
  std::size_t i = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string head(text.substr(i, 14));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return head.rfind("<!doctype html", 0) == 0 || head.rfind("<html", 0) == 0;
}

Result<std::string> workspaceJsonInHtml(std::string_view text, const std::string& what) {
  const std::size_t open = text.find(kHtmlWorkspaceOpen);
  if (open == std::string_view::npos) {
    return makeError(what + " is an HTML page without a mhascope workspace in it (a page mhascope exports carries "
                            "one, in <script id=\"mhascope-workspace\">)");
  }
  const std::size_t start = open + kHtmlWorkspaceOpen.size();
  const std::size_t end = text.find("</script>", start);
  if (end == std::string_view::npos) return makeError(what + ": the page's workspace block is not closed (no </script>)");
  return std::string(text.substr(start, end - start));
}

Result<Workspace> readWorkspaceFile(const std::string& path) {
  auto size = regularFileSize(path);
  if (!size) return makeError("workspace: " + size.error().message);
  const std::string what = "workspace '" + path + "'";
  auto prefix = readFilePrefix(path, 64);
  if (!prefix) return makeError("workspace: " + prefix.error().message);
  if (looksLikeHtml(*prefix)) {
    if (*size > kMaxHtmlWorkspacePageBytes) {
      return makeError(what + " is an HTML page of " + std::to_string(*size) + " bytes, more than an exported page may hold (" +
                       std::to_string(kMaxHtmlWorkspacePageBytes >> 20) + " MiB)");
    }
    auto page = readFile(path, kMaxHtmlWorkspacePageBytes);
    if (!page) return makeError("workspace: " + page.error().message);
    auto text = workspaceJsonInHtml(*page, what);
    if (!text) return text.error();
    return parseWorkspaceJson(*text, what);
  }
  if (*size > kMaxWorkspaceBytes) {
    return makeError("workspace '" + path + "' is " + std::to_string(*size) + " bytes, more than a workspace may hold (" +
                     std::to_string(kMaxWorkspaceBytes >> 20) + " MiB)");
  }
  auto text = readFile(path, kMaxWorkspaceBytes);
  if (!text) return makeError("workspace: " + text.error().message);
  return parseWorkspaceJson(*text, what);
}

bool looksLikeWorkspace(std::string_view text) {
  auto parsed = parseStrictJson(text, "");
  return parsed && parsed->is_object() && parsed->contains("mhascope_workspace");
}

}  // namespace mhascope
