// config.json → ModelSpec: the family found by model_type (core/model/families/), its keys read in its
// order with their aliases and defaults (as Hugging Face's config classes set them), the family's other
// keys, then the checks every family shares. Each refusal is one line naming the key and the file.
#include "model/config.hpp"

#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "io/strict_json.hpp"
#include "model/families/config_reader.hpp"
#include "model/families/families.hpp"
#include "util/format.hpp"

namespace mhascope::model {
namespace {

using nlohmann::json;

// What a field's phrase is in a message about its default.
const char* fieldPhrase(SpecField f) {
  switch (f) {
    case SpecField::DFf: return "the MLP width";
    default: return "the value";
  }
}

int& intField(ModelSpec& s, SpecField f) {
  switch (f) {
    case SpecField::DModel: return s.dModel;
    case SpecField::Heads: return s.heads;
    case SpecField::KvHeads: return s.kvHeads;
    case SpecField::HeadDim: return s.headDim;
    case SpecField::Layers: return s.layers;
    case SpecField::DFf: return s.dFf;
    case SpecField::Vocab: return s.vocab;
    default: return s.maxPositions;
  }
}

// One key of the family's table into its field.
void readKey(ConfigReader& r, const Family& family, const ConfigKey& k, ModelSpec& s) {
  using Kind = KeyDefault::Kind;
  switch (k.field) {
    case SpecField::NormEps: s.normEps = r.positiveNumber(k.key, k.absent.value); return;
    case SpecField::RopeTheta: s.ropeTheta = r.positiveNumber(k.key, k.absent.value); return;
    case SpecField::TiedEmbeddings: s.tiedEmbeddings = r.flag(k.key, k.absent.value != 0.0); return;
    default: break;
  }
  int& field = intField(s, k.field);
  // An alias is read (and checked) first; the key, when present, wins.
  std::optional<int> fallback;
  if (k.alias && r.has(k.alias)) fallback = r.positive(k.alias);
  switch (k.absent.kind) {
    case Kind::Required: break;
    case Kind::Value: fallback = fallback.value_or(static_cast<int>(k.absent.value)); break;
    case Kind::SameAs: fallback = fallback.value_or(intField(s, k.absent.of)); break;
    case Kind::Times:
      if (!r.has(k.key) && !fallback && !r.failed()) {
        // Computed in 64 bits and held to the same bound as the sizes themselves.
        const int of = intField(s, k.absent.of);
        const auto factor = static_cast<std::int64_t>(k.absent.value);
        const std::int64_t value = factor * of;
        const char* ofKey = family.key(k.absent.of);
        if (value > (1 << 30)) {
          r.fail(std::string("'") + ofKey + "' " + std::to_string(of) + " makes " + fieldPhrase(k.field) + " " +
                 std::to_string(factor) + " * " + ofKey + " = " + std::to_string(value) + " (no " + k.key +
                 "), above 2^30");
          return;
        }
        fallback = static_cast<int>(value);
      }
      break;
  }
  field = r.positive(k.key, fallback);
}

}  // namespace

const char* archName(Arch a) {
  switch (a) {
    case Arch::Gpt2: return "gpt2";
    case Arch::Llama: return "llama";
    case Arch::Mistral: return "mistral";
    case Arch::Qwen2: return "qwen2";
    case Arch::Other: return "other";
  }
  return "?";
}

bool ModelSpec::rope() const { return family && family->positions == PositionKind::Rope; }

LayerKind ModelSpec::layerKind(int layer) const {
  if (layer >= 0 && static_cast<std::size_t>(layer) < layerKinds.size()) return layerKinds[static_cast<std::size_t>(layer)];
  LayerKind k;
  k.window = window;
  k.rope = rope();
  return k;
}

Result<ModelSpec> parseModelConfig(std::string_view text, const std::string& what) {
  auto parsed = parseStrictJson(text, what);
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  if (!j.is_object()) return fileError(what, "the config must be a JSON object, got " + jsonTypeName(j));
  if (!j.contains("model_type")) return fileError(what, "missing key 'model_type' (a string: " + familyTypes(" or ") + ")");
  if (!j.at("model_type").is_string()) {
    return fileError(what, "'model_type' must be a string (" + familyTypes(" or ") + "), got " + j.at("model_type").dump());
  }
  const std::string type = j.at("model_type").get<std::string>();
  const Family* family = findFamily(type);
  if (!family) {
    return fileError(what, "model_type '" + type + "' is not supported (mhascope opens " + familyTypes() + ")");
  }
  return parseFamilyConfig(*family, text, what);
}

Result<ModelSpec> parseFamilyConfig(const Family& f, std::string_view text, const std::string& what) {
  auto parsed = parseStrictJson(text, what);
  if (!parsed) return parsed.error();
  const json& j = *parsed;
  if (!j.is_object()) return fileError(what, "the config must be a JSON object, got " + jsonTypeName(j));
  const Family* family = &f;
  ModelSpec s;
  s.family = family;
  s.arch = family->arch;

  ConfigReader r(j, what);
  for (const ConfigKey& k : family->keys) readKey(r, *family, k, s);
  if (!family->key(SpecField::KvHeads)) s.kvHeads = s.heads;  // no grouped K/V heads in this family
  family->readRest(r, s);
  // Weights quantised another way would not be read right: the only quantisation read is MXFP4, of a mixture's
  // stacked experts (the weight store's readMxfp4).
  if (!r.failed() && r.has("quantization_config")) {
    const json& q = j.at("quantization_config");
    const json method = q.is_object() && q.contains("quant_method") ? q.at("quant_method") : q;
    if (method != "mxfp4") r.refuse("quantization_config's quant_method " + method.dump() + " (mhascope reads MXFP4)");
  }
  if (r.failed()) return *r.error();

  if (s.headDim == 0 && s.dModel % s.heads != 0) {
    return fileError(what, "d_model (" + std::to_string(s.dModel) + ") must be divisible by the heads (" +
                               std::to_string(s.heads) + ") when the config has no head_dim");
  }
  if (s.heads % s.kvHeads != 0) {  // only a family with a K/V heads' key can get here
    const char* kvKey = family->key(SpecField::KvHeads);
    return fileError(what, std::string(kvKey ? kvKey : "N") + " (" + std::to_string(s.kvHeads) + ") must divide " +
                               family->key(SpecField::Heads) + " (" + std::to_string(s.heads) + ")");
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
  const YarnRopeScaling& yarn = spec.yarn;
  // YaRN's ramp over the dims: where a dim turning `turns` times in the original context sits.
  const auto dimOf = [&](double turns) {
    return dk * std::log(yarn.originalMaxPositions / (turns * 2.0 * pi)) / (2.0 * std::log(spec.ropeTheta));
  };
  double low = 0, high = 0;
  if (yarn.enabled) {
    low = dimOf(yarn.betaFast);
    high = dimOf(yarn.betaSlow);
    if (yarn.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dk - 1));
    if (low == high) high += 0.001;  // a ramp of one dim still has a slope
  }
  for (int i = 0; i < dk / 2; ++i) {
    double f = std::pow(spec.ropeTheta, -2.0 * i / dk);
    if (yarn.enabled) {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);  // 0: kept, 1: divided by factor
      f = f / yarn.factor * ramp + f * (1.0 - ramp);
    }
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

std::string routerRuleText(const RouterRule& rule, int k) {
  std::string out;
  switch (rule.scores) {
    case RouterScores::Softmax: out = "softmax"; break;
    case RouterScores::Sigmoid: out = "sigmoid"; break;
    case RouterScores::Logits: out = "the logits"; break;
  }
  out += " then top-" + std::to_string(k);
  if (rule.groups != ExpertGroups::None) {
    out += " within the best " + std::to_string(rule.groupsKept) + " of " + std::to_string(rule.groupCount) + " groups";
  }
  if (rule.softmaxOfChosen) out += ", softmax over the " + std::to_string(k);
  out += rule.renormalise ? " renormalised" : " (not renormalised)";
  if (rule.scale != 1.0) out += ", times " + formatGeneral(rule.scale, 6);
  return out;
}

bool MixtureSpec::anyDense(int layers) const {
  for (int l = 0; l < layers; ++l) {
    if (!mixtureAt(l)) return true;
  }
  return false;
}

namespace {
std::int64_t elements(const TensorName& t, const ModelSpec& s) {
  std::int64_t n = 1;
  for (const std::int64_t d : storedShape(t, s)) n *= d;
  return n;
}
}  // namespace

std::int64_t parameterCount(const ModelSpec& s) {
  std::int64_t total = 0;
  for (const TensorName& t : s.family->tensors) {
    if (!needed(t, s)) continue;
    if (!perLayer(t.role)) {
      total += elements(t, s);
      continue;
    }
    for (int l = 0; l < s.layers; ++l) {
      if (neededAt(t, s, l)) total += elements(t, s) * storedCopies(t, s);
    }
  }
  return total;
}

std::int64_t layerResidentParameters(const ModelSpec& s, int layer) {
  std::int64_t total = 0;
  for (const TensorName& t : s.family->tensors) {
    if (!perLayer(t.role) || !neededAt(t, s, layer)) continue;
    // An expert's tensors: one expert's (a stack's slice).
    total += perExpert(t.role) && t.experts == ExpertStore::Stacked ? elements(t, s) / s.moe.experts : elements(t, s);
  }
  return total;
}

}  // namespace mhascope::model
