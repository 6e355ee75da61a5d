// Reading config.json's keys for a family: the reader that keeps the first problem (every later read is
// skipped, so a config gets one line naming the key, the value and the file), and the keys several
// families read the same way (the activation, attention_bias, rope_scaling).
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/config.hpp"
#include "util/result.hpp"

namespace mhascope::model {

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, const std::string& what) : j_(j), what_(what) {}

  // Present and not null.
  bool has(const char* key) const;
  // An integer from 1 to 2^30; `fallback` when the key is absent (else the key is required).
  int positive(const char* key, std::optional<int> fallback = std::nullopt);
  // An integer from 0 to 2^30; `fallback` when absent.
  int count(const char* key, int fallback);
  // A finite positive number; `fallback` when absent.
  double positiveNumber(const char* key, double fallback);
  bool flag(const char* key, bool fallback);
  std::string text(const char* key, const std::string& fallback);

  // A key whose value this forward does not implement: "<detail> is not supported".
  void refuse(const std::string& detail) { fail(detail + " is not supported"); }
  void fail(const std::string& detail);
  bool failed() const { return error_.has_value(); }
  const std::optional<Error>& error() const { return error_; }
  const nlohmann::json& object() const { return j_; }

 private:
  const nlohmann::json& j_;
  const std::string& what_;
  std::optional<Error> error_;
};

// --- keys several families share --------------------------------------------------------------

// `key` (absent: its first accepted value) must be one of `accepted`; else "<key> '<v>' <note> is not supported".
void acceptOnly(ConfigReader& r, const char* key, std::initializer_list<const char*> accepted, const char* note);
// A flag whose `refused` value this forward does not implement (absent: the other value):
// "<key> true<note> is not supported".
void refuseFlag(ConfigReader& r, const char* key, bool refused, const char* note = "");
// A per-layer list: `key` holds one entry for each of the `layers` layers (atLeast: at least that many, the
// first `layers` read), each one of `values` (layer_types' names, or "0" / "1" for integer flags); the index of
// each layer's entry in `values`, or nullopt when the key is absent or null.
std::optional<std::vector<int>> readPerLayer(ConfigReader& r, const char* key, int layers,
                                             std::initializer_list<const char*> values, bool atLeast = false);
// layer_types: for each layer, true where it is "sliding_attention", false where "full_attention"; nullopt when
// absent.
std::optional<std::vector<bool>> readSlidingLayers(ConfigReader& r, int layers);
// Each layer's window (ModelSpec::layerKinds, sized to the layers): layer_types where the config has it, else
// the family's rule slidesByDefault(layer); a sliding layer sees the last `window` keys (0: all), the others
// the whole causal past. Returns which layers slide (empty after a failure).
std::vector<bool> readLayerWindows(ConfigReader& r, ModelSpec& s, int window,
                                   const std::function<bool(int layer)>& slidesByDefault);
// A mixture of experts' sizes (ModelSpec::moe): E = `expertsKey` (absent: `experts`; 0 allowed only when
// `zeroMeansDense`: then every MLP is dense), k = num_experts_per_tok (absent: `perToken`) from 1 to E, and each
// expert's width F_e = `ffKey` (absent: `ff`; nullptr: the MLP width the keys read). Each refusal names the key and
// its value.
void readMixture(ConfigReader& r, ModelSpec& s, const char* expertsKey, int experts, bool zeroMeansDense, int perToken,
                 const char* ffKey, int ff);
// Layers listed by index (Qwen3-MoE's mlp_only_layers): each an integer from 0 to layers - 1; absent or null: none.
std::vector<int> readLayerList(ConfigReader& r, const char* key, int layers);
// Qwen3's window (Qwen3 and Qwen3-MoE): W = sliding_window (4096 when absent, none when null) counts only with
// use_sliding_window, on the layers layer_types marks "sliding_attention" (absent: the layers from
// max_window_layers, 28, on).
void readQwen3Window(ConfigReader& r, ModelSpec& s);
// Llama's attention_bias: biases on q, k, v and o.
void readAttentionBias(ConfigReader& r, ModelSpec& s);
// rope_scaling: absent, null, "default", Llama 3.1's "llama3" (factor, low/high_freq_factor,
// original_max_position_embeddings) or "yarn" (factor, original_max_position_embeddings, beta_fast, beta_slow,
// truncate, attention_factor or mscale / mscale_all_dim); any other kind is refused. Reads rope_parameters first (readRopeParameters).
// `absent`: what a family's configuration class puts in when the key is missing (not when it is null).
void readRopeScaling(ConfigReader& r, ModelSpec& s, const nlohmann::json* absent = nullptr);
// rope_parameters, newer configs' form of rope_theta and rope_scaling in one object: rope_type "default" (or
// none) with its rope_theta, which then is the base (a rope_theta key beside it must agree); any other content
// is refused with its value, so a base written only there is never missed.
void readRopeParameters(ConfigReader& r, ModelSpec& s);

}  // namespace mhascope::model
