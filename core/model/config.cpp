// config.json → ModelSpec: the keys each architecture reads, their defaults as Hugging Face's
// config classes set them, and a one-line refusal for every value the forward does not implement.
#include "model/config.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "io/strict_json.hpp"
#include "util/format.hpp"

namespace mhascope::model {
namespace {

using nlohmann::json;

// Reads keys of one config object; the first problem is kept and every later read is skipped.
class Reader {
 public:
  Reader(const json& j, const std::string& what) : j_(j), what_(what) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  // A positive integer; `fallback` when the key is absent (else the key is required).
  int positive(const char* key, std::optional<int> fallback = std::nullopt) {
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

  double positiveNumber(const char* key, double fallback) {
    if (failed() || !has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>())) {
      fail(std::string("'") + key + "' must be a positive number, got " + v.dump());
      return fallback;
    }
    return v.get<double>();
  }

  bool flag(const char* key, bool fallback) {
    if (failed() || !has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_boolean()) {
      fail(std::string("'") + key + "' must be true or false, got " + v.dump());
      return fallback;
    }
    return v.get<bool>();
  }

  std::string text(const char* key, const std::string& fallback) {
    if (failed() || !has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_string()) {
      fail(std::string("'") + key + "' must be a string, got " + v.dump());
      return fallback;
    }
    return v.get<std::string>();
  }

  // A key whose value this forward does not implement.
  void refuse(const std::string& detail) { fail(detail + " is not supported"); }
  void fail(const std::string& detail) {
    if (!error_) error_ = fileError(what_, detail);
  }
  bool failed() const { return error_.has_value(); }
  const std::optional<Error>& error() const { return error_; }
  const json& object() const { return j_; }

 private:
  const json& j_;
  const std::string& what_;
  std::optional<Error> error_;
};

void readGpt2(Reader& r, ModelSpec& s) {
  s.dModel = r.positive("n_embd");
  s.heads = r.positive("n_head");
  s.kvHeads = s.heads;
  s.layers = r.positive("n_layer");
  s.vocab = r.positive("vocab_size");
  s.maxPositions = r.positive("n_positions", r.has("n_ctx") ? std::optional<int>(r.positive("n_ctx")) : std::nullopt);
  s.normEps = r.positiveNumber("layer_norm_epsilon", 1e-5);
  if (r.has("n_inner")) {
    s.dFf = r.positive("n_inner");
  } else if (!r.failed()) {
    // 4 d_model, computed in 64 bits and held to the same bound as the sizes themselves.
    const std::int64_t inner = 4 * static_cast<std::int64_t>(s.dModel);
    if (inner > (1 << 30)) {
      r.fail("'n_embd' " + std::to_string(s.dModel) + " makes the MLP width 4 * n_embd = " + std::to_string(inner) +
             " (no n_inner), above 2^30");
    } else {
      s.dFf = static_cast<int>(inner);
    }
  }
  s.tiedEmbeddings = r.flag("tie_word_embeddings", true);
  // gelu_new and gelu_pytorch_tanh are the same tanh formula.
  const std::string act = r.text("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh") r.refuse("activation_function '" + act + "' (mhascope: gelu_new)");
  if (!r.flag("scale_attn_weights", true)) r.refuse("scale_attn_weights false");
  if (r.flag("scale_attn_by_inverse_layer_idx", false)) r.refuse("scale_attn_by_inverse_layer_idx true");
  if (r.flag("add_cross_attention", false)) r.refuse("add_cross_attention true");
}

void readRopeScaling(Reader& r, ModelSpec& s) {
  if (!r.has("rope_scaling")) return;
  const json& rs = r.object().at("rope_scaling");
  if (!rs.is_object()) {
    r.fail("'rope_scaling' must be an object or null, got " + rs.dump());
    return;
  }
  // Newer configs say rope_type, older ones type.
  const json* kind = rs.contains("rope_type") ? &rs.at("rope_type") : rs.contains("type") ? &rs.at("type") : nullptr;
  const std::string name = kind && kind->is_string() ? kind->get<std::string>() : "";
  if (name == "default") return;
  if (name != "llama3") {
    r.refuse("rope_scaling of type '" + (kind ? (kind->is_string() ? name : kind->dump()) : std::string("?")) +
             "' (mhascope implements 'llama3')");
    return;
  }
  s.ropeScaling.enabled = true;
  auto number = [&](const char* key) -> double {
    if (!rs.contains(key) || !rs.at(key).is_number() || !(rs.at(key).get<double>() > 0.0) ||
        !std::isfinite(rs.at(key).get<double>())) {
      r.fail(std::string("rope_scaling '") + key + "' must be a positive number, got " +
             (rs.contains(key) ? rs.at(key).dump() : std::string("nothing")));
      return 1.0;
    }
    return rs.at(key).get<double>();
  };
  s.ropeScaling.factor = number("factor");
  s.ropeScaling.lowFreqFactor = number("low_freq_factor");
  s.ropeScaling.highFreqFactor = number("high_freq_factor");
  s.ropeScaling.originalMaxPositions = number("original_max_position_embeddings");
  if (!r.failed() && !(s.ropeScaling.highFreqFactor > s.ropeScaling.lowFreqFactor)) {
    r.fail("rope_scaling needs high_freq_factor > low_freq_factor, got " + formatDouble(s.ropeScaling.highFreqFactor) +
           " and " + formatDouble(s.ropeScaling.lowFreqFactor));
  }
}

void readLlama(Reader& r, ModelSpec& s) {
  s.dModel = r.positive("hidden_size");
  s.heads = r.positive("num_attention_heads");
  s.kvHeads = r.positive("num_key_value_heads", s.heads);
  s.layers = r.positive("num_hidden_layers");
  s.dFf = r.positive("intermediate_size");
  s.vocab = r.positive("vocab_size");
  s.maxPositions = r.positive("max_position_embeddings", 2048);
  s.normEps = r.positiveNumber("rms_norm_eps", 1e-6);
  s.ropeTheta = r.positiveNumber("rope_theta", 10000.0);
  s.tiedEmbeddings = r.flag("tie_word_embeddings", false);
  const std::string act = r.text("hidden_act", "silu");
  if (act != "silu") r.refuse("hidden_act '" + act + "' (mhascope: silu, the SwiGLU MLP)");
  if (r.flag("mlp_bias", false)) r.refuse("mlp_bias true");
  if (s.arch == Arch::Qwen2) {
    s.qkvBias = true;
    if (r.flag("use_sliding_window", false)) r.refuse("use_sliding_window true (a window on some layers only)");
  } else if (r.flag("attention_bias", false)) {
    s.qkvBias = s.outputBias = true;
  }
  if (s.arch == Arch::Mistral && r.has("sliding_window")) s.window = r.positive("sliding_window");
  readRopeScaling(r, s);
  // The engine splits d_model into h heads of d_k = d_model / h: a head_dim other than that would
  // need projections of another width.
  if (!r.failed() && r.has("head_dim")) {
    const int headDim = r.positive("head_dim");
    if (!r.failed() && (s.dModel % s.heads != 0 || headDim != s.dModel / s.heads)) {
      r.refuse("head_dim " + std::to_string(headDim) + " other than hidden_size / num_attention_heads (" +
               std::to_string(s.dModel) + " / " + std::to_string(s.heads) + ")");
    }
  }
}

}  // namespace

const char* archName(Arch a) {
  switch (a) {
    case Arch::Gpt2: return "gpt2";
    case Arch::Llama: return "llama";
    case Arch::Mistral: return "mistral";
    case Arch::Qwen2: return "qwen2";
  }
  return "?";
}

Result<ModelSpec> parseModelConfig(std::string_view text, const std::string& what) {
  auto parsed = parseStrictJson(text, what);
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  if (!j.is_object()) return fileError(what, "the config must be a JSON object, got " + jsonTypeName(j));
  if (!j.contains("model_type") || !j.at("model_type").is_string()) {
    return fileError(what, "missing key 'model_type' (a string: gpt2, llama, mistral or qwen2)");
  }
  const std::string type = j.at("model_type").get<std::string>();
  ModelSpec s;
  if (type == "gpt2") s.arch = Arch::Gpt2;
  else if (type == "llama") s.arch = Arch::Llama;
  else if (type == "mistral") s.arch = Arch::Mistral;
  else if (type == "qwen2") s.arch = Arch::Qwen2;
  else return fileError(what, "model_type '" + type + "' is not supported (mhascope opens gpt2, llama, mistral, qwen2)");

  Reader r(j, what);
  if (s.arch == Arch::Gpt2) readGpt2(r, s);
  else readLlama(r, s);
  if (r.failed()) return *r.error();

  if (s.dModel % s.heads != 0) {
    return fileError(what, "d_model (" + std::to_string(s.dModel) + ") must be divisible by the heads (" +
                               std::to_string(s.heads) + ")");
  }
  if (s.heads % s.kvHeads != 0) {
    return fileError(what, "num_key_value_heads (" + std::to_string(s.kvHeads) + ") must divide num_attention_heads (" +
                               std::to_string(s.heads) + ")");
  }
  if (s.rope() && s.dk() % 2 != 0) {
    return fileError(what, "RoPE needs an even head size d_k, got " + std::to_string(s.dk()));
  }
  return s;
}

std::vector<double> ropeInverseFrequencies(const ModelSpec& spec) {
  const int dk = spec.dk();
  std::vector<double> inv(static_cast<std::size_t>(dk / 2));
  const Llama3RopeScaling& rs = spec.ropeScaling;
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < dk / 2; ++i) {
    double f = std::pow(spec.ropeTheta, -2.0 * i / dk);
    if (rs.enabled) {
      const double wavelength = 2.0 * pi / f;
      const double lowWavelength = rs.originalMaxPositions / rs.lowFreqFactor;    // longer: slowed down
      const double highWavelength = rs.originalMaxPositions / rs.highFreqFactor;  // shorter: kept
      if (wavelength > lowWavelength) {
        f /= rs.factor;
      } else if (wavelength >= highWavelength) {
        const double smooth = (rs.originalMaxPositions / wavelength - rs.lowFreqFactor) /
                              (rs.highFreqFactor - rs.lowFreqFactor);
        f = (1.0 - smooth) * f / rs.factor + smooth * f;
      }
    }
    inv[static_cast<std::size_t>(i)] = f;
  }
  return inv;
}

std::int64_t parameterCount(const ModelSpec& s) {
  const std::int64_t d = s.dModel, V = s.vocab, F = s.dFf, kv = static_cast<std::int64_t>(s.kvHeads) * s.dk();
  std::int64_t perLayer = 0, total = V * d;
  if (s.arch == Arch::Gpt2) {
    total += static_cast<std::int64_t>(s.maxPositions) * d + 2 * d;  // wpe, ln_f
    perLayer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * F + F) + (F * d + d);
  } else {
    total += d;  // model.norm
    perLayer = 2 * d + d * d + 2 * d * kv + d * d + 3 * d * F;
    if (s.qkvBias) perLayer += d + 2 * kv;
    if (s.outputBias) perLayer += d;
  }
  if (!s.tiedEmbeddings) total += V * d;
  return total + perLayer * s.layers;
}

}  // namespace mhascope::model
