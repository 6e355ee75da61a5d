// SmolLM3 (model_type "smollm3"), as transformers' configuration_smollm3.py and modeling_smollm3.py have it:
// the Llama decoder (llama_decoder.hpp) in which some layers have no positions at all. no_rope_layers holds
// one flag per layer, and 1 means the layer USES RoPE (0: a NoPE layer, whose q and k are not turned); absent,
// every no_rope_layer_interval-th layer (default 4: layers 3, 7, ...) has none. With use_sliding_window and a
// sliding_window, layer_types (by default: the NoPE layers) marks the layers that see only the last W keys.
#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// SmolLM3Config's defaults: 32768 positions, rope_theta 2e6, tied embeddings.
constexpr auto kSmolLM3Keys = llama_decoder::keysWith({.maxPositions = 32768, .ropeTheta = 2000000.0, .tied = true});

void readSmolLM3Rest(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readLlamaKeys(r, s);
  const int interval = r.positive("no_rope_layer_interval", 4);
  const auto uses = readPerLayer(r, "no_rope_layers", s.layers, {"0", "1"}, true);
  const int window = r.flag("use_sliding_window", false) && r.has("sliding_window") ? r.positive("sliding_window") : 0;
  if (r.failed()) return;
  s.layerKinds.resize(static_cast<std::size_t>(s.layers));
  for (int i = 0; i < s.layers; ++i) {
    const auto at = static_cast<std::size_t>(i);
    s.layerKinds[at].rope = uses ? (*uses)[at] == 1 : (i + 1) % interval != 0;
  }
  // By default the layers without positions are the sliding ones.
  readLayerWindows(r, s, window, [&s](int i) { return !s.layerKinds[static_cast<std::size_t>(i)].rope; });
}

}  // namespace

extern const Family smollm3;
const Family smollm3 = {
    .modelType = "smollm3",
    .displayName = "SmolLM3",
    .arch = Arch::Other,
    .keys = kSmolLM3Keys,
    .readRest = readSmolLM3Rest,
    .tensors = llama_decoder::kTensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
};

}  // namespace mhascope::model::families
