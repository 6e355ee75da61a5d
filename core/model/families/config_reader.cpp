// config.json's keys as a family reads them (see config_reader.hpp).
#include "model/families/config_reader.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "io/strict_json.hpp"
#include "util/format.hpp"

namespace mhascope::model {

using nlohmann::json;

bool ConfigReader::has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

int ConfigReader::positive(const char* key, std::optional<int> fallback) {
  if (failed()) return 0;
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(std::string("missing key '") + key + "'");
    return 0;
  }
  const json& v = j_.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > (1 << 30)) {
    fail(std::string("'") + key + "' must be an integer from 1 to 2^30 (1073741824), got " + v.dump());
    return 0;
  }
  return static_cast<int>(v.get<std::int64_t>());
}

int ConfigReader::count(const char* key, int fallback) {
  if (failed() || !has(key)) return fallback;
  const json& v = j_.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 30)) {
    fail(std::string("'") + key + "' must be an integer from 0 to 2^30 (1073741824), got " + v.dump());
    return fallback;
  }
  return static_cast<int>(v.get<std::int64_t>());
}

double ConfigReader::positiveNumber(const char* key, double fallback) {
  if (failed() || !has(key)) return fallback;
  const json& v = j_.at(key);
  if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>())) {
    fail(std::string("'") + key + "' must be a positive number, got " + v.dump());
    return fallback;
  }
  if (v.get<double>() > static_cast<double>(FLT_MAX)) {  // the forward computes in float32
    fail(std::string("'") + key + "' must be a positive number float32 can hold (at most 3.4e38), got " + v.dump());
    return fallback;
  }
  return v.get<double>();
}

bool ConfigReader::flag(const char* key, bool fallback) {
  if (failed() || !has(key)) return fallback;
  const json& v = j_.at(key);
  if (!v.is_boolean()) {
    fail(std::string("'") + key + "' must be true or false, got " + v.dump());
    return fallback;
  }
  return v.get<bool>();
}

std::string ConfigReader::text(const char* key, const std::string& fallback) {
  if (failed() || !has(key)) return fallback;
  const json& v = j_.at(key);
  if (!v.is_string()) {
    fail(std::string("'") + key + "' must be a string, got " + v.dump());
    return fallback;
  }
  return v.get<std::string>();
}

void ConfigReader::fail(const std::string& detail) {
  if (!error_) error_ = fileError(what_, detail);
}

void acceptOnly(ConfigReader& r, const char* key, std::initializer_list<const char*> accepted, const char* note) {
  const std::string v = r.text(key, *accepted.begin());
  for (const char* a : accepted) {
    if (v == a) return;
  }
  r.refuse(std::string(key) + " '" + v + "' " + note);
}

void refuseFlag(ConfigReader& r, const char* key, bool refused, const char* note) {
  if (r.flag(key, !refused) == refused) r.refuse(std::string(key) + (refused ? " true" : " false") + note);
}

std::optional<std::vector<int>> readPerLayer(ConfigReader& r, const char* key, int layers,
                                             std::initializer_list<const char*> values, bool atLeast) {
  if (r.failed() || !r.has(key)) return std::nullopt;
  const json& v = r.object().at(key);
  std::string names;
  for (const char* n : values) names += (names.empty() ? "" : " or ") + std::string(n);
  const bool sized = v.is_array() && (atLeast ? v.size() >= static_cast<std::size_t>(layers)
                                              : v.size() == static_cast<std::size_t>(layers));
  if (!sized) {
    r.fail(std::string("'") + key + "' must be a list of " + (atLeast ? "at least " : "") + std::to_string(layers) +
           " entries (one per layer: " + names + "), got " + (v.is_array() ? std::to_string(v.size()) + " entries" : v.dump()));
    return std::nullopt;
  }
  std::vector<int> out;
  for (int i = 0; i < layers; ++i) {
    const json& e = v.at(static_cast<std::size_t>(i));
    const std::string text = e.is_string() ? e.get<std::string>() : e.is_number_integer() ? e.dump() : "";
    int found = -1, k = 0;
    for (const char* n : values) {
      if (!text.empty() && text == n) found = k;
      ++k;
    }
    if (found < 0) {
      r.refuse(std::string(key) + "[" + std::to_string(i) + "] " + e.dump() + " (mhascope reads " + names + ")");
      return std::nullopt;
    }
    out.push_back(found);
  }
  return out;
}

std::optional<std::vector<bool>> readSlidingLayers(ConfigReader& r, int layers) {
  auto kinds = readPerLayer(r, "layer_types", layers, {"full_attention", "sliding_attention"});
  if (!kinds) return std::nullopt;
  std::vector<bool> sliding;
  for (int k : *kinds) sliding.push_back(k == 1);
  return sliding;
}

std::vector<bool> readLayerWindows(ConfigReader& r, ModelSpec& s, int window,
                                   const std::function<bool(int layer)>& slidesByDefault) {
  const auto given = readSlidingLayers(r, s.layers);
  if (r.failed()) return {};
  std::vector<bool> sliding(static_cast<std::size_t>(s.layers));
  s.layerKinds.resize(static_cast<std::size_t>(s.layers));
  for (int i = 0; i < s.layers; ++i) {
    const auto at = static_cast<std::size_t>(i);
    sliding[at] = given ? (*given)[at] : slidesByDefault(i);
    s.layerKinds[at].window = sliding[at] ? window : 0;
  }
  return sliding;
}

void readMixture(ConfigReader& r, ModelSpec& s, const char* expertsKey, int experts, bool zeroMeansDense, int perToken,
                 const char* ffKey, int ff) {
  MixtureSpec& m = s.moe;
  m.expertsKey = expertsKey;
  m.experts = zeroMeansDense ? r.count(expertsKey, experts) : r.positive(expertsKey, experts);
  if (r.failed() || m.experts == 0) {
    m.experts = 0;
    return;
  }
  m.perToken = r.positive("num_experts_per_tok", perToken);
  if (!r.failed() && m.perToken > m.experts) {
    r.fail("'num_experts_per_tok' (" + std::to_string(m.perToken) + ") must be at most the " + std::to_string(m.experts) +
           " experts of '" + expertsKey + "'");
  }
  m.expertFf = ffKey ? r.positive(ffKey, ff) : s.dFf;
}

std::vector<int> readLayerList(ConfigReader& r, const char* key, int layers) {
  if (r.failed() || !r.has(key)) return {};
  const json& v = r.object().at(key);
  if (!v.is_array()) {
    r.fail(std::string("'") + key + "' must be a list of layer indices, got " + v.dump());
    return {};
  }
  std::vector<int> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& e = v.at(i);
    if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= layers) {
      r.fail(std::string("'") + key + "'[" + std::to_string(i) + "] must be a layer from 0 to " + std::to_string(layers - 1) +
             ", got " + e.dump());
      return {};
    }
    out.push_back(static_cast<int>(e.get<std::int64_t>()));
  }
  return out;
}

void readQwen3Window(ConfigReader& r, ModelSpec& s) {
  int window = 0;
  if (r.flag("use_sliding_window", false)) {
    window = !r.object().contains("sliding_window") ? 4096 : r.has("sliding_window") ? r.positive("sliding_window") : 0;
  }
  const int fromLayer = r.count("max_window_layers", 28);
  readLayerWindows(r, s, window, [&](int i) { return window > 0 && i >= fromLayer; });
}

void readAttentionBias(ConfigReader& r, ModelSpec& s) {
  if (r.flag("attention_bias", false)) s.qkvBias = s.outputBias = true;
}

void readRopeParameters(ConfigReader& r, ModelSpec& s) {
  if (r.failed() || !r.has("rope_parameters")) return;
  const json& p = r.object().at("rope_parameters");
  const bool plain = p.is_object() && (!p.contains("rope_type") || p.at("rope_type") == "default");
  if (!plain) return r.refuse("rope_parameters " + p.dump() + " (mhascope reads rope_type 'default' with its rope_theta)");
  for (auto it = p.begin(); it != p.end(); ++it) {  // a key beside the two is a scaling this forward does not know
    if (it.key() != "rope_type" && it.key() != "rope_theta") return r.refuse("rope_parameters " + p.dump());
  }
  if (!p.contains("rope_theta")) return;
  const json& theta = p.at("rope_theta");
  if (!theta.is_number() || !(theta.get<double>() > 0.0) || !std::isfinite(theta.get<double>())) {
    return r.fail("rope_parameters 'rope_theta' must be a positive number, got " + theta.dump());
  }
  if (r.has("rope_theta") && r.object().at("rope_theta") != theta) {
    return r.fail("rope_theta " + r.object().at("rope_theta").dump() + " and rope_parameters' rope_theta " +
                  theta.dump() + " disagree");
  }
  s.ropeTheta = theta.get<double>();
}

void readRopeScaling(ConfigReader& r, ModelSpec& s, const json* absent) {
  readRopeParameters(r, s);
  const bool missing = !r.object().contains("rope_scaling");  // null says "none"; only a missing key takes `absent`
  if (!r.has("rope_scaling") && !(missing && absent)) return;
  const json& rs = missing ? *absent : r.object().at("rope_scaling");
  if (!rs.is_object()) {
    r.fail("'rope_scaling' must be an object or null, got " + rs.dump());
    return;
  }
  // Newer configs say rope_type, older ones type.
  const json* kind = rs.contains("rope_type") ? &rs.at("rope_type") : rs.contains("type") ? &rs.at("type") : nullptr;
  const std::string name = kind && kind->is_string() ? kind->get<std::string>() : "";
  if (name == "default") return;
  if (name != "llama3" && name != "yarn") {
    r.refuse("rope_scaling of type '" + (kind ? (kind->is_string() ? name : kind->dump()) : std::string("?")) +
             "' (mhascope implements 'llama3' and 'yarn')");
    return;
  }
  // A positive number under `key`; absent: `fallback` when there is one, else an error.
  auto number = [&](const char* key, std::optional<double> fallback = std::nullopt) -> double {
    if (!rs.contains(key) && fallback) return *fallback;
    if (!rs.contains(key) || !rs.at(key).is_number() || !(rs.at(key).get<double>() > 0.0) ||
        !std::isfinite(rs.at(key).get<double>())) {
      r.fail(std::string("rope_scaling '") + key + "' must be a positive number, got " +
             (rs.contains(key) ? rs.at(key).dump() : std::string("nothing")));
      return 1.0;
    }
    return rs.at(key).get<double>();
  };
  if (name == "yarn") {  // modeling_rope_utils.py's _compute_yarn_parameters
    YarnRopeScaling& y = s.yarn;
    y.enabled = true;
    y.factor = number("factor");
    const bool ownOriginal = rs.contains("original_max_position_embeddings");
    y.originalMaxPositions = ownOriginal ? number("original_max_position_embeddings")
                                         : static_cast<double>(s.maxPositions > 0 ? s.maxPositions : 0);
    if (!(y.originalMaxPositions > 0)) {
      r.fail("rope_scaling 'yarn' needs original_max_position_embeddings (or max_position_embeddings)");
      return;
    }
    // Newer transformers take the factor as max_position_embeddings / original: refused when the two disagree.
    if (ownOriginal && s.maxPositions > 0 && std::abs(s.maxPositions / y.originalMaxPositions - y.factor) > 1e-9 * y.factor) {
      r.fail("rope_scaling 'yarn': factor " + formatDouble(y.factor) + " but max_position_embeddings / "
             "original_max_position_embeddings = " + std::to_string(s.maxPositions) + " / " +
             formatDouble(y.originalMaxPositions) + " (the two readings of the factor disagree)");
      return;
    }
    y.betaFast = number("beta_fast", 32.0);
    y.betaSlow = number("beta_slow", 1.0);
    if (rs.contains("truncate")) {
      if (!rs.at("truncate").is_boolean()) {
        r.fail("rope_scaling 'truncate' must be true or false, got " + rs.at("truncate").dump());
        return;
      }
      y.truncate = rs.at("truncate").get<bool>();
    }
    const auto mscale = [](double scale, double m) { return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    if (rs.contains("attention_factor") && !rs.at("attention_factor").is_null()) {
      y.attentionFactor = number("attention_factor");
    } else if (rs.contains("mscale") && rs.contains("mscale_all_dim") && !rs.at("mscale").is_null() &&
               !rs.at("mscale_all_dim").is_null()) {
      y.attentionFactor = mscale(y.factor, number("mscale")) / mscale(y.factor, number("mscale_all_dim"));
    } else {
      y.attentionFactor = mscale(y.factor, 1.0);  // 0.1 ln(factor) + 1
    }
    return;
  }
  s.ropeScaling.enabled = true;
  s.ropeScaling.factor = number("factor");
  s.ropeScaling.lowFreqFactor = number("low_freq_factor");
  s.ropeScaling.highFreqFactor = number("high_freq_factor");
  s.ropeScaling.originalMaxPositions = number("original_max_position_embeddings");
  if (!r.failed() && !(s.ropeScaling.highFreqFactor > s.ropeScaling.lowFreqFactor)) {
    r.fail("rope_scaling needs high_freq_factor > low_freq_factor, got " + formatDouble(s.ropeScaling.highFreqFactor) +
           " and " + formatDouble(s.ropeScaling.lowFreqFactor));
  }
}


}  // namespace mhascope::model
