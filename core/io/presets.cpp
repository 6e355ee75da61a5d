// Presets: strict JSON ↔ ModelConfig (unknown or duplicate keys, wrong types, negative sizes and
// future versions are errors naming the JSON path), the bundled files in assets/presets/.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/presets.hpp"
#include "attention/model.hpp"
#include "util/utf8.hpp"
#include "io/file_io.hpp"
#include "io/strict_json.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] presets (JSON)
// ---------------------------------------------------------------------------------------------
namespace {

using nlohmann::json;

std::string typeName(const json& j) { return jsonTypeName(j); }

// "score_override": {"other": 0, "self": 10, "cells": [{"head": 0, "query": "it", "key": "mat",
// "score": 20}, ...]}; query/key are a 0-based position or a token's text.
Result<ScoreOverride> parseScoreOverride(const json& j, const std::string& what) {
  const std::string base = what + ": /score_override";
  if (!j.is_object()) return makeError(base + " must be an object, got " + typeName(j));
  ScoreOverride so;
  auto number = [&](const json& v, const std::string& path) -> Result<float> {
    if (!v.is_number()) {
      return makeError(what + ": " + path + " must be a number, got " + typeName(v) +
                       (v.is_null() ? " (NaN/Inf are saved as null and are not allowed)" : ""));
    }
    const double x = v.get<double>();
    if (!std::isfinite(x) || std::abs(x) > 1e6) {
      return makeError(what + ": " + path + " = " + v.dump() + " is outside -1e6..1e6");
    }
    return static_cast<float>(x);
  };
  // An integer in 0 .. 2^20 - 1 (unsigned and signed JSON integers both checked without wrapping).
  auto smallIndex = [](const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() < (1u << 20);
    return v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() < (1 << 20);
  };
  for (const auto& [key, value] : j.items()) {
    const std::string path = "/score_override/" + key;
    if (key == "other" || key == "self") {
      auto x = number(value, path);
      if (!x) return x.error();
      (key == "other" ? so.other : so.self) = *x;
    } else if (key == "cells") {
      if (!value.is_array()) return makeError(what + ": " + path + " must be an array, got " + typeName(value));
      for (std::size_t i = 0; i < value.size(); ++i) {
        const json& c = value[i];
        const std::string cp = path + "/" + std::to_string(i);
        if (!c.is_object()) return makeError(what + ": " + cp + " must be an object, got " + typeName(c));
        for (const auto& [ck, cv] : c.items()) {
          (void)cv;
          if (ck != "head" && ck != "query" && ck != "key" && ck != "score") {
            return makeError(what + ": unknown key at " + cp + "/" + ck + " (use head, query, key, score)");
          }
        }
        for (const char* required : {"head", "query", "key", "score"}) {
          if (!c.contains(required)) return makeError(what + ": missing key " + cp + "/" + required);
        }
        ScoreCell cell;
        const json& head = c.at("head");
        if (!smallIndex(head)) {
          return makeError(what + ": " + cp + "/head must be an integer 0.." + std::to_string((1 << 20) - 1) +
                           ", got " + head.dump());
        }
        cell.head = head.get<int>();
        for (const char* side : {"query", "key"}) {
          const json& v = c.at(side);
          int& index = side[0] == 'q' ? cell.query : cell.key;
          std::string& token = side[0] == 'q' ? cell.queryToken : cell.keyToken;
          if (v.is_string() && !v.get<std::string>().empty()) {
            token = replaceInvalidUtf8(v.get<std::string>());
          } else if (smallIndex(v)) {
            index = v.get<int>();
          } else {
            return makeError(what + ": " + cp + "/" + side +
                             " must be a token position (integer >= 0) or a token's text, got " + v.dump());
          }
        }
        auto score = number(c.at("score"), cp + "/score");
        if (!score) return score.error();
        cell.score = *score;
        so.cells.push_back(std::move(cell));
      }
    } else {
      return makeError(what + ": unknown key at " + path + " (use other, self, cells)");
    }
  }
  return so;
}

json scoreOverrideToJson(const ScoreOverride& so) {
  json j = json::object();
  if (so.other) j["other"] = *so.other;
  if (so.self) j["self"] = *so.self;
  json cells = json::array();
  for (const ScoreCell& c : so.cells) {
    json cj = {{"head", c.head}, {"score", c.score}};
    cj["query"] = c.queryToken.empty() ? json(c.query) : json(replaceInvalidUtf8(c.queryToken));
    cj["key"] = c.keyToken.empty() ? json(c.key) : json(replaceInvalidUtf8(c.keyToken));
    cells.push_back(std::move(cj));
  }
  j["cells"] = std::move(cells);
  return j;
}

}  // namespace

// ~90 lines on purpose: one check per preset key, in the order of the format's table, so the
// strict rules read as one list.
Result<ModelConfig> parsePresetJson(std::string_view text, const std::string& what) {
  auto parsed = parseStrictJson(text, what);
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  if (!j.is_object()) return makeError(what + ": expected a JSON object at /, got " + typeName(j));
  ModelConfig cfg;
  static const std::set<std::string> kKnown = {
      "version", "name",      "description",   "text",  "kv_text", "cross_attention", "tokens",
      "d_model", "heads",     "batch",         "seed",  "bias",    "positions",       "mask",
      "scale",   "pad_last_keys", "memory_budget_mib", "score_override",
      // attention as today's models run it: optional, absent = multi-head attention as before
      "kv_heads", "head_dim", "attention_positions", "rope_base", "rope_style", "window", "sinks", "softcap", "qk_norm", "sink"};
  for (const auto& [key, value] : j.items()) {
    if (!kKnown.count(key)) return makeError(what + ": unknown key at /" + key);
  }
  for (const char* required : {"version", "text", "d_model", "heads"}) {
    if (!j.contains(required)) return makeError(what + ": missing key /" + std::string(required));
  }
  auto intAt = [&](const char* key, std::int64_t lo, std::int64_t hi, std::int64_t& out) -> Status {
    if (!j.contains(key)) return Ok{};
    const json& v = j.at(key);
    if (!v.is_number_integer()) {
      return makeError(what + ": /" + key + " must be an integer, got " + typeName(v) +
                       (v.is_null() ? " (NaN/Inf are saved as null and are not allowed)" : ""));
    }
    const bool neg = v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0;
    if (neg && lo >= 0) return makeError(what + ": /" + key + " must not be negative, got " + v.dump());
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      return makeError(what + ": /" + key + " = " + v.dump() + " is larger than " + std::to_string(hi));
    }
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) {
      return makeError(what + ": /" + key + " = " + std::to_string(x) + " is outside " + std::to_string(lo) + ".." +
                       std::to_string(hi));
    }
    out = x;
    return Ok{};
  };
  auto strAt = [&](const char* key, std::string& out) -> Status {
    if (!j.contains(key)) return Ok{};
    if (!j.at(key).is_string()) return makeError(what + ": /" + key + " must be a string, got " + typeName(j.at(key)));
    out = j.at(key).get<std::string>();
    return Ok{};
  };
  auto boolAt = [&](const char* key, bool& out) -> Status {
    if (!j.contains(key)) return Ok{};
    if (!j.at(key).is_boolean()) return makeError(what + ": /" + key + " must be true or false, got " + typeName(j.at(key)));
    out = j.at(key).get<bool>();
    return Ok{};
  };
  std::int64_t version = 0, tokens = cfg.tokens, dModel = cfg.dModel, heads = cfg.heads, batch = cfg.batch,
               pad = cfg.padLastKeys, budgetMib = static_cast<std::int64_t>(cfg.memoryBudgetBytes >> 20);
  std::int64_t seed = static_cast<std::int64_t>(cfg.seed);
  std::string mask = maskName(cfg.mask), scale = scaleName(cfg.scale);
  std::int64_t kvHeads = cfg.kvHeads, headDim = cfg.headDim, window = cfg.window, sinks = cfg.sinks;
  std::string attnPositions = "none", ropeStyle = ropeStyleName(cfg.ropeStyle);
  const std::int64_t kBig = 1 << 20;
  for (Status s : {intAt("version", 1, 1000000, version), intAt("tokens", 0, kBig, tokens),
                   intAt("d_model", 1, kBig, dModel), intAt("heads", 1, kBig, heads), intAt("batch", 0, kBig, batch),
                   intAt("pad_last_keys", 0, kBig, pad), intAt("memory_budget_mib", 1, 1 << 30, budgetMib),
                   intAt("seed", 0, INT64_MAX, seed), strAt("name", cfg.name), strAt("description", cfg.description),
                   strAt("text", cfg.text), strAt("kv_text", cfg.kvText), strAt("mask", mask), strAt("scale", scale),
                   boolAt("cross_attention", cfg.crossAttention), boolAt("bias", cfg.bias),
                   boolAt("positions", cfg.positions), intAt("kv_heads", 0, kBig, kvHeads),
                   intAt("head_dim", 0, kBig, headDim),
                   intAt("window", 0, kBig, window), intAt("sinks", 0, kBig, sinks),
                   strAt("attention_positions", attnPositions), strAt("rope_style", ropeStyle)}) {
    if (!s) return s.error();
  }
  if (j.contains("softcap")) {
    const json& v = j.at("softcap");
    if (!v.is_number() || !(v.get<double>() >= 0.0) || v.get<double>() > 1e30) {
      return makeError(what + ": /softcap must be a number >= 0 (0: none), got " + v.dump());
    }
    cfg.softcap = static_cast<float>(v.get<double>());
  }
  if (auto s = boolAt("qk_norm", cfg.qkNorm); !s) return s.error();
  if (j.contains("sink")) {  // the learned sink's logit, every head's (absent: none)
    const json& v = j.at("sink");
    if (!v.is_number() || !std::isfinite(v.get<double>()) || std::abs(v.get<double>()) > 1e30) {
      return makeError(what + ": /sink must be a finite number (the learned sink's logit), got " + v.dump());
    }
    cfg.learnedSink = true;
    cfg.sinkLogit = static_cast<float>(v.get<double>());
  }
  if (j.contains("rope_base")) {
    const json& v = j.at("rope_base");
    if (!v.is_number() || !(v.get<double>() > 0.0) || v.get<double>() > 1e30) {
      return makeError(what + ": /rope_base must be a positive number, got " + v.dump());
    }
    cfg.ropeBase = static_cast<float>(v.get<double>());
  }
  if (attnPositions == "none" || attnPositions == "rope" || attnPositions == "alibi") {
    cfg.attnPositions = attnPositions == "rope"    ? AttnPositions::Rope
                        : attnPositions == "alibi" ? AttnPositions::Alibi
                                                   : AttnPositions::None;
  } else {
    return makeError(what + ": /attention_positions: unknown '" + attnPositions + "': use none, rope or alibi");
  }
  auto rs = ropeStyleFromName(ropeStyle);
  if (!rs) return makeError(what + ": /rope_style: " + rs.error().message);
  cfg.ropeStyle = *rs;
  cfg.kvHeads = static_cast<int>(kvHeads);
  cfg.headDim = static_cast<int>(headDim);
  cfg.window = static_cast<int>(window);
  cfg.sinks = static_cast<int>(sinks);
  if (j.contains("score_override")) {
    auto so = parseScoreOverride(j.at("score_override"), what);
    if (!so) return so.error();
    cfg.scoreOverride = std::move(*so);
  }
  if (version > kPresetVersion) {
    return makeError(what + ": /version is " + std::to_string(version) + " but this mhascope reads up to version " +
                     std::to_string(kPresetVersion) + "; update mhascope");
  }
  auto m = maskFromName(mask);
  if (!m) return makeError(what + ": /mask: " + m.error().message);
  auto sc = scaleFromName(scale);
  if (!sc) return makeError(what + ": /scale: " + sc.error().message);
  cfg.mask = *m;
  cfg.scale = *sc;
  cfg.tokens = static_cast<int>(tokens);
  cfg.dModel = static_cast<int>(dModel);
  cfg.heads = static_cast<int>(heads);
  cfg.batch = static_cast<int>(batch);
  cfg.padLastKeys = static_cast<int>(pad);
  cfg.seed = static_cast<std::uint64_t>(seed);
  cfg.memoryBudgetBytes = static_cast<std::uint64_t>(budgetMib) << 20;
  cfg.text = replaceInvalidUtf8(cfg.text);
  cfg.kvText = replaceInvalidUtf8(cfg.kvText);
  return cfg;
}

std::string presetToJson(const ModelConfig& cfg) {
  json j = {{"version", kPresetVersion},
            {"name", replaceInvalidUtf8(cfg.name)},
            {"description", replaceInvalidUtf8(cfg.description)},
            {"text", replaceInvalidUtf8(cfg.text)},
            {"cross_attention", cfg.crossAttention},
            {"kv_text", replaceInvalidUtf8(cfg.kvText)},
            {"tokens", cfg.tokens},
            {"d_model", cfg.dModel},
            {"heads", cfg.heads},
            {"batch", cfg.batch},
            {"seed", cfg.seed},
            {"bias", cfg.bias},
            {"positions", cfg.positions},
            {"mask", maskName(cfg.mask)},
            {"pad_last_keys", cfg.padLastKeys},
            {"scale", scaleName(cfg.scale)},
            {"memory_budget_mib", cfg.memoryBudgetBytes >> 20}};
  if (!cfg.scoreOverride.empty()) j["score_override"] = scoreOverrideToJson(cfg.scoreOverride);
  // The variants only when used, so a multi-head config reads as it always did.
  if (cfg.kvHeads > 0) j["kv_heads"] = cfg.kvHeads;
  if (cfg.headDim > 0) j["head_dim"] = cfg.headDim;
  if (cfg.attnPositions != AttnPositions::None) {
    j["attention_positions"] = cfg.attnPositions == AttnPositions::Rope ? "rope" : "alibi";
  }
  if (cfg.attnPositions == AttnPositions::Rope) {
    j["rope_base"] = cfg.ropeBase;
    j["rope_style"] = ropeStyleName(cfg.ropeStyle);
  }
  if (cfg.window > 0) j["window"] = cfg.window;
  if (cfg.sinks > 0) j["sinks"] = cfg.sinks;
  if (cfg.softcap > 0.0f) j["softcap"] = cfg.softcap;
  if (cfg.qkNorm) j["qk_norm"] = true;
  if (cfg.learnedSink) j["sink"] = cfg.sinkLogit;
  return j.dump(2) + "\n";
}

// $MHASCOPE_ASSETS, else <prefix>/share/mhascope/assets next to an installed binary
// (<prefix>/bin/mhascope, found through /proc/self/exe, so a package unpacked anywhere works),
// else the source tree's assets/ (a binary run from the build tree).
std::string assetsDir() {
  if (const char* env = std::getenv("MHASCOPE_ASSETS"); env && *env) return env;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path().parent_path() / "share" / "mhascope" / "assets";
    if (std::filesystem::is_directory(installed / "presets", ec)) return installed.string();
  }
  return MHASCOPE_ASSETS_DIR;
}

std::vector<std::string> presetNames() {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(assetsDir()) / "presets", ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    if ((a == "default") != (b == "default")) return a == "default";
    return a < b;
  });
  return names;
}

Result<ModelConfig> loadPreset(const std::string& nameOrPath) {
  namespace fs = std::filesystem;
  std::string path = nameOrPath;
  const bool looksLikePath = nameOrPath.find('/') != std::string::npos ||
                             (nameOrPath.size() > 5 && nameOrPath.substr(nameOrPath.size() - 5) == ".json");
  if (!looksLikePath) {
    path = (fs::path(assetsDir()) / "presets" / (nameOrPath + ".json")).string();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      std::string known;
      for (const auto& n : presetNames()) known += (known.empty() ? "" : ", ") + n;
      return makeError("unknown preset '" + nameOrPath + "'; available: " + known);
    }
  }
  auto bytes = readFile(path, 1 << 20);
  if (!bytes) return bytes.error();
  return parsePresetJson(*bytes, "preset '" + path + "'");
}

}  // namespace mhascope
