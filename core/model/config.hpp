// A Hugging Face model folder's config.json, read into the sizes and rules of one model family
// (core/model/families/: gpt2, llama, mistral, qwen2, found by model_type). Keys the forward does not
// implement (another rope_scaling kind, MLP biases, a per-layer sliding window, ...) are refused
// with one line naming the key and the file, never ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"

namespace mhascope::model {

struct Family;  // core/model/families/family.hpp: what the family's keys, names and forward are

// The first four families as an enumeration, for code that has not moved to ModelSpec::family's traits
// yet; new code reads the traits, and a family added later is Other here.
enum class Arch { Gpt2, Llama, Mistral, Qwen2, Other };
const char* archName(Arch a);  // the config's model_type: "gpt2", "llama", "mistral", "qwen2"

// Llama 3.1's rope_scaling (rope_type "llama3"): low frequencies (wavelength above
// original_max_position_embeddings / low_freq_factor) are divided by `factor`, high ones (below
// original / high_freq_factor) kept, the ones between blended smoothly.
struct Llama3RopeScaling {
  bool enabled = false;
  double factor = 1.0, lowFreqFactor = 1.0, highFreqFactor = 4.0;
  double originalMaxPositions = 8192.0;
};

// YaRN (rope_type "yarn", gpt-oss): each frequency blends base^(-2i/d_k) (extrapolation, kept) and that over
// `factor` (interpolation) by a ramp over the dims: a dim turning at least beta_fast times in
// original_max_position_embeddings keeps its frequency, one turning at most beta_slow times is divided by factor,
// the ones between (the ramp's ends floored and ceiled unless truncate is false) blend linearly. cos and sin are
// then times attentionFactor (0.1 ln(factor) + 1 unless the config gives attention_factor, or DeepSeek's
// mscale / mscale_all_dim ratio).
struct YarnRopeScaling {
  bool enabled = false;
  double factor = 1.0, originalMaxPositions = 4096.0, betaFast = 32.0, betaSlow = 1.0;
  bool truncate = true;
  double attentionFactor = 1.0;
};

// One layer's attention where a family's layers differ (layer_types, no_rope_layers, local and global layers).
struct LayerKind {
  int window = 0;         // this layer's sliding window W (0: the whole causal past)
  bool rope = true;       // false: a layer without positions (SmolLM3's no_rope_layers 0); a RoPE family only
  double ropeTheta = 0;   // this layer's RoPE base (0: the model's rope_theta)
};

struct ModelSpec {
  const Family* family = nullptr;  // set by parseModelConfig: its keys, tensor names and forward traits
  Arch arch = Arch::Gpt2;          // family->arch
  int dModel = 0;        // d_model (n_embd / hidden_size)
  int heads = 0;         // h
  int kvHeads = 0;       // N (GPT-2: h)
  int headDim = 0;       // head_dim when the config sets it (Qwen3, Gemma: heads wider than d_model / h); 0: d_model / h
  int layers = 0;        // L
  int dFf = 0;           // the MLP's hidden width (GPT-2: n_inner or 4 d_model)
  int vocab = 0;         // V
  int maxPositions = 0;  // GPT-2: n_positions (the learned table's rows); Llama: max_position_embeddings
  double normEps = 1e-5;
  // RoPE families only:
  double ropeTheta = 10000.0;
  Llama3RopeScaling ropeScaling;
  YarnRopeScaling yarn;
  int window = 0;             // Mistral's sliding_window W on every layer (0: none)
  // One entry per layer when the family's layers differ (each its own window, positions, base); empty: every
  // layer has `window` and RoPE at rope_theta.
  std::vector<LayerKind> layerKinds;
  double queryPreAttnScalar = 0;  // Gemma: scores times query_pre_attn_scalar^-1/2 instead of d_k^-1/2 (0: d_k's)
  double attnSoftcap = 0;         // c: the scaled scores become c tanh(s / c) before the mask (0: none)
  double finalSoftcap = 0;        // c: the logits become c tanh(logits / c) (0: none)
  bool qkvBias = false;       // biases on q, k, v (GPT-2, Qwen2, Llama's attention_bias)
  bool outputBias = false;    // a bias on the output projection as well (GPT-2, Llama's attention_bias)
  bool tiedEmbeddings = true; // logits through the token embedding
  int dk() const { return headDim > 0 ? headDim : (heads > 0 ? dModel / heads : 0); }  // d_k
  bool rope() const;          // the family rotates q and k (else its positions are learned)
  LayerKind layerKind(int layer) const;  // layerKinds[layer], or what every layer has
};

// Parses config.json's text; `what` (the file's path) names it in every message.
Result<ModelSpec> parseModelConfig(std::string_view json, const std::string& what);
// The same for a family given outright (parseModelConfig's, once model_type has found it): also a family not
// yet in the list, whose parts are checked before it is.
Result<ModelSpec> parseFamilyConfig(const Family& family, std::string_view json, const std::string& what);

// RoPE's inverse frequencies inv_freq_i, i < d_k/2: theta^(-2i/d_k), with Llama 3.1's scaling or YaRN's when
// the config asks for it (as Hugging Face computes them, in double here).
std::vector<double> ropeInverseFrequencies(const ModelSpec& spec);

// Parameter count of the whole model: every tensor of the family's table the spec has (embeddings,
// every layer, the final norm, and lm_head when untied).
std::int64_t parameterCount(const ModelSpec& spec);

}  // namespace mhascope::model
