// The session.json of earlier versions read back all-or-nothing, and the Train mode's block of
// the last workspace (see session.hpp).
#include "state/session.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>
#include <set>

#include "io/strict_json.hpp"
#include "io/presets.hpp"

namespace mhascope::app {
namespace {

using json = nlohmann::json;

constexpr const char* kTrainTasks[] = {"induction", "reverse", "sort", "text"};  // TrainForm::task

json trainToJson(const SavedTrain& t) {
  const TrainForm& f = t.form;
  return {{"mode", t.active ? "train" : "pipeline"}, {"task", kTrainTasks[std::clamp(f.task, 0, 3)]},
          {"layers", f.layers}, {"heads", f.heads}, {"d_model", f.dModel}, {"mlp", f.mlp}, {"vocab", f.vocab},
          {"seq", f.seq}, {"batch", f.batch}, {"steps", f.steps}, {"lr", f.lr}, {"weight_decay", f.weightDecay},
          {"seed", f.seed}, {"eval_every", f.evalEvery}, {"period_min", f.periodMin}, {"period_max", f.periodMax},
          {"text_path", f.textPath}};
}

// The attention variant of the form, written only when not the plain model's (as presets do), so
// workspaces of plain runs stay as they were and older builds keep reading them.
constexpr const char* kTrainPositions[] = {"learned", "rope", "alibi"};  // TrainForm::positions
void variantToJson(const TrainForm& f, json& t) {
  const TrainForm plain;
  if (f.positions != plain.positions) t["positions"] = kTrainPositions[std::clamp(f.positions, 0, 2)];
  if (f.kvHeads != plain.kvHeads) t["kv_heads"] = f.kvHeads;
  if (f.ropeBase != plain.ropeBase) t["rope_base"] = f.ropeBase;
}
Status variantFromJson(const json& t, const std::string& what, TrainForm& f) {
  if (t.contains("positions")) {
    const std::string p = t["positions"].is_string() ? t["positions"].get<std::string>() : "";
    const auto* at = std::find(std::begin(kTrainPositions), std::end(kTrainPositions), p);
    if (at == std::end(kTrainPositions)) {
      return makeError(what + ": /train/positions must be learned, rope or alibi, got " + t["positions"].dump());
    }
    f.positions = static_cast<int>(at - std::begin(kTrainPositions));
  }
  if (t.contains("kv_heads")) {
    const json& v = t["kv_heads"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1'000'000'000) {
      return makeError(what + ": /train/kv_heads must be an integer >= 0 (0: N = h), got " + v.dump());
    }
    f.kvHeads = static_cast<int>(v.get<std::int64_t>());
  }
  if (t.contains("rope_base")) {
    const json& v = t["rope_base"];
    // Checked as a double before narrowing: a value past the float range (1e300) would not convert.
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0.0 ||
        v.get<double>() > static_cast<double>(std::numeric_limits<float>::max())) {
      return makeError(what + ": /train/rope_base must be a positive number within the float range, got " + v.dump());
    }
    f.ropeBase = v.get<float>();
  }
  return Ok{};
}

// /train: every key present, of its type; the numbers' ranges are the form's to explain (as typed).
Result<SavedTrain> trainFromJson(const json& t, const std::string& what) {
  if (!t.is_object()) return makeError(what + ": /train must be an object");
  static const std::set<std::string> kKeys = {"mode", "task", "layers", "heads", "d_model", "mlp", "vocab", "seq",
                                              "batch", "steps", "lr", "weight_decay", "seed", "eval_every",
                                              "period_min", "period_max", "text_path"};
  for (const auto& [key, value] : t.items()) {
    if (!kKeys.count(key) && key != "positions" && key != "kv_heads" && key != "rope_base") {
      return makeError(what + ": unknown key /train/" + key);
    }
  }
  for (const auto& key : kKeys) {
    if (!t.contains(key)) return makeError(what + ": missing key /train/" + key);
  }
  SavedTrain out;
  TrainForm& f = out.form;
  const std::string mode = t["mode"].is_string() ? t["mode"].get<std::string>() : "";
  if (mode != "train" && mode != "pipeline") return makeError(what + ": /train/mode must be \"train\" or \"pipeline\", got " + t["mode"].dump());
  out.active = mode == "train";
  const std::string task = t["task"].is_string() ? t["task"].get<std::string>() : "";
  const auto* at = std::find(std::begin(kTrainTasks), std::end(kTrainTasks), task);
  if (at == std::end(kTrainTasks)) return makeError(what + ": /train/task must be induction, reverse, sort or text, got " + t["task"].dump());
  f.task = static_cast<int>(at - std::begin(kTrainTasks));
  for (auto [key, out_] : {std::pair{"layers", &f.layers}, {"heads", &f.heads}, {"d_model", &f.dModel}, {"vocab", &f.vocab},
                           {"seq", &f.seq}, {"batch", &f.batch}, {"steps", &f.steps},
                           {"eval_every", &f.evalEvery}, {"period_min", &f.periodMin}, {"period_max", &f.periodMax}}) {
    const json& v = t[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < -1'000'000'000 || v.get<std::int64_t>() > 1'000'000'000) {
      return makeError(what + ": /train/" + key + " must be an integer, got " + v.dump());
    }
    *out_ = static_cast<int>(v.get<std::int64_t>());
  }
  // The seed: any value `mhascope train` takes, 0 .. 2^64 - 1 (nlohmann keeps it as unsigned).
  if (!t["seed"].is_number_unsigned() && !(t["seed"].is_number_integer() && t["seed"].get<std::int64_t>() >= 0)) {
    return makeError(what + ": /train/seed must be an integer from 0 to 18446744073709551615, got " + t["seed"].dump());
  }
  f.seed = t["seed"].get<std::uint64_t>();
  for (auto [key, out_] : {std::pair{"lr", &f.lr}, {"weight_decay", &f.weightDecay}}) {
    const json& v = t[key];
    if (!v.is_number() || !std::isfinite(v.get<double>())) return makeError(what + ": /train/" + key + " must be a number, got " + v.dump());
    *out_ = v.get<float>();
  }
  if (!t["mlp"].is_boolean()) return makeError(what + ": /train/mlp must be true or false, got " + t["mlp"].dump());
  f.mlp = t["mlp"].get<bool>();
  if (!t["text_path"].is_string()) return makeError(what + ": /train/text_path must be a string, got " + t["text_path"].dump());
  f.textPath = t["text_path"].get<std::string>();
  if (auto st = variantFromJson(t, what, f); !st) return st.error();
  return out;
}

}  // namespace

std::string trainBlockJson(const SavedTrain& train) {
  json t = trainToJson(train);
  variantToJson(train.form, t);
  return t.dump();
}

Result<SavedTrain> savedTrainOf(const Workspace& ws, const std::string& what) {
  if (ws.train.empty()) return SavedTrain{};  // written before the Train mode: its defaults
  const json t = json::parse(ws.train.begin(), ws.train.end(), nullptr, false);
  if (t.is_discarded()) return makeError(what + ": /train is not JSON");
  return trainFromJson(t, what);
}

Result<Workspace> parseSessionJson(std::string_view text, const std::string& what) {
  auto parsed = parseStrictJson(text, what);
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  auto type = [](const json& v) { return std::string(v.is_null() ? "null" : v.type_name()); };
  if (!j.is_object()) return makeError(what + ": expected a JSON object, got " + type(j));
  for (const auto& [key, value] : j.items()) {
    if (key != "mhascope_session" && key != "preset" && key != "config" && key != "view") {
      return makeError(what + ": unknown key /" + key);
    }
  }
  if (!j.contains("mhascope_session") || !j["mhascope_session"].is_number_integer()) {
    return makeError(what + ": /mhascope_session (the format version) is missing or not an integer");
  }
  if (j["mhascope_session"].get<std::int64_t>() != kSessionVersion) {
    return makeError(what + ": format version " + j["mhascope_session"].dump() + ", this build reads version " +
                     std::to_string(kSessionVersion));
  }
  if (!j.contains("preset") || !j["preset"].is_string()) return makeError(what + ": /preset must be a string");
  if (!j.contains("config") || !j["config"].is_object()) return makeError(what + ": /config must be an object");
  if (!j.contains("view") || !j["view"].is_object()) return makeError(what + ": /view must be an object");
  Workspace s;  // a session is a workspace without files or lesson choices
  auto cfg = parsePresetJson(j["config"].dump(), what + " /config");
  if (!cfg) return cfg.error();
  s.config = std::move(cfg.value());
  s.presetName = j["preset"].get<std::string>();
  const json& v = j["view"];
  static const std::set<std::string> kViewKeys = {"stage", "tab", "head", "batch", "colormap",
                                                  "shared_scale", "numbers", "play_speed"};
  for (const auto& [key, value] : v.items()) {
    if (!kViewKeys.count(key)) return makeError(what + ": unknown key /view/" + key);
  }
  for (const auto& key : kViewKeys) {
    if (!v.contains(key)) return makeError(what + ": missing key /view/" + key);
  }
  auto str = [&](const char* key) -> Result<std::string> {
    if (!v[key].is_string()) return makeError(what + ": /view/" + key + " must be a string, got " + type(v[key]));
    return v[key].get<std::string>();
  };
  auto index = [&](const char* key, int& out) -> Status {
    if (!v[key].is_number_integer() || v[key].get<std::int64_t>() < 0 || v[key].get<std::int64_t>() > 1'000'000) {
      return makeError(what + ": /view/" + key + " must be an index 0 … 1000000, got " + v[key].dump());
    }
    out = static_cast<int>(v[key].get<std::int64_t>());
    return Ok{};
  };
  auto flag = [&](const char* key, bool& out) -> Status {
    if (!v[key].is_boolean()) return makeError(what + ": /view/" + key + " must be true or false, got " + v[key].dump());
    out = v[key].get<bool>();
    return Ok{};
  };
  auto stage = str("stage");
  if (!stage) return stage.error();
  auto id = stageFromName(*stage);
  if (!id) return makeError(what + ": /view/stage: unknown stage \"" + *stage + "\"");
  s.view.stage = *id;
  auto tab = str("tab");
  if (!tab) return tab.error();
  s.view.tab = *tab;
  if (auto st = index("head", s.view.head); !st) return st.error();
  if (auto st = index("batch", s.view.batch); !st) return st.error();
  auto cmap = str("colormap");
  if (!cmap) return cmap.error();
  if (*cmap != "auto") {
    auto c = colormapFromName(*cmap);
    if (!c) return makeError(what + ": /view/colormap: " + c.error().message);
    s.view.colormap = *c;
  }
  if (auto st = flag("shared_scale", s.view.sharedScale); !st) return st.error();
  if (auto st = flag("numbers", s.view.showNumbers); !st) return st.error();
  if (!v["play_speed"].is_number() || !std::isfinite(v["play_speed"].get<double>()) || v["play_speed"].get<double>() < 0.25 ||
      v["play_speed"].get<double>() > 4.0) {
    return makeError(what + ": /view/play_speed must be a number 0.25 … 4, got " + v["play_speed"].dump());
  }
  s.view.playStagesPerSecond = v["play_speed"].get<float>();
  return s;
}

}  // namespace mhascope::app
