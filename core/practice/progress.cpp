// The learner's progress file: {"version": 1, "completed": [ids], "hints": {id: n}, "files": {id: path}}.
#include "practice/progress.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "io/file_io.hpp"
#include "io/strict_json.hpp"

namespace mhascope::practice {

namespace {

constexpr int kVersion = 1;

Error bad(const std::string& path, const std::string& what) {
  return makeError("practice progress " + path + ": " + what + " (delete the file to start afresh)");
}

}  // namespace

std::string progressPath(const std::string& configDir) { return configDir + "/practice.json"; }

Result<Progress> loadProgress(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Progress{};
  auto text = readFile(path, 1u << 20);
  if (!text) return text.error();
  auto parsed = parseStrictJson(*text, "practice progress " + path);
  if (!parsed) return parsed.error();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return bad(path, "not a JSON object");
  if (!j.contains("version") || !j["version"].is_number_integer()) return bad(path, "no integer \"version\"");
  if (j["version"].get<long long>() != kVersion) {
    return bad(path, "version " + j["version"].dump() + " is not " + std::to_string(kVersion) + ", the one this mhascope reads");
  }
  Progress p;
  if (j.contains("completed")) {
    if (!j["completed"].is_array()) return bad(path, "\"completed\" is " + jsonTypeName(j["completed"]) + ", not a list");
    for (const auto& id : j["completed"]) {
      if (!id.is_string()) return bad(path, "\"completed\" holds a " + jsonTypeName(id) + ", not an exercise id");
      p.completed.insert(id.get<std::string>());
    }
  }
  if (j.contains("hints")) {
    if (!j["hints"].is_object()) return bad(path, "\"hints\" is " + jsonTypeName(j["hints"]) + ", not an object");
    for (const auto& [id, n] : j["hints"].items()) {
      if (!n.is_number_integer() || n.get<long long>() < 0 || n.get<long long>() > 100) {
        return bad(path, "\"hints\"." + id + " is " + n.dump() + ", not a count from 0 to 100");
      }
      p.hintsShown[id] = static_cast<int>(n.get<long long>());
    }
  }
  if (j.contains("files")) {
    if (!j["files"].is_object()) return bad(path, "\"files\" is " + jsonTypeName(j["files"]) + ", not an object");
    for (const auto& [id, f] : j["files"].items()) {
      if (!f.is_string()) return bad(path, "\"files\"." + id + " is " + jsonTypeName(f) + ", not a path");
      p.files[id] = f.get<std::string>();
    }
  }
  return p;
}

Status saveProgress(const std::string& path, const Progress& progress) {
  nlohmann::json j;
  j["version"] = kVersion;
  j["completed"] = nlohmann::json::array();
  for (const std::string& id : progress.completed) j["completed"].push_back(id);
  j["hints"] = nlohmann::json::object();
  for (const auto& [id, n] : progress.hintsShown) j["hints"][id] = n;
  j["files"] = nlohmann::json::object();
  for (const auto& [id, f] : progress.files) j["files"][id] = f;
  // A path with ill-formed UTF-8 is kept readable (U+FFFD) rather than refused.
  return writeFileAtomic(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace mhascope::practice
