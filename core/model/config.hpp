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

// How a mixture's router turns one token's router logits z = m W_router (E) into its k experts and their weights,
// as data, in steps: scores s of the logits; the choice c = s (+ a stored bias for the choice only); the choice
// limited to the best groups of experts; the k highest c chosen (ties: the lower expert first); their weights the
// chosen s — a softmax over the k, renormalised over their sum, times a scale — in descending weight.
// Mixtral: softmax, renormalised; Qwen3-MoE: softmax, renormalised when norm_topk_prob; DeepSeek-V2: softmax,
// BestScore groups, scaled; DeepSeek-V3: sigmoid, the correction bias, TopTwoSum groups, renormalised (+1e-20),
// scaled; gpt-oss: the logits (with the router's bias), a softmax over the k chosen.
enum class RouterScores {
  Softmax,  // softmax over all E experts' logits
  Sigmoid,  // each logit's sigmoid
  Logits,   // the logits themselves
};
enum class ExpertGroups {
  None,       // any k of the E experts
  BestScore,  // E split into groupCount equal groups; only the groupsKept groups with the highest single c compete
  TopTwoSum,  // the same, the groups ranked by the sum of their two highest c
};
struct RouterRule {
  RouterScores scores = RouterScores::Softmax;
  ExpertGroups groups = ExpertGroups::None;
  int groupCount = 1, groupsKept = 1;  // groupCount divides E; k at most groupsKept · E / groupCount (the reader checks)
  bool softmaxOfChosen = false;    // the weights a softmax over the k chosen scores
  bool renormalise = true;         // the k weights divided by their sum (+ renormaliseEpsilon), so they sum to 1
  double renormaliseEpsilon = 0.0;
  double scale = 1.0;              // the weights times this (DeepSeek's routed_scaling_factor)
};
// "softmax then top-2 renormalised"
std::string routerRuleText(const RouterRule& rule, int k);

// A mixture-of-experts MLP: on a mixture layer each token goes to k of E expert MLPs (each the family's MLP kind,
// of width expertFf), chosen and weighted by the router; the layer's MLP output is the weighted sum of their
// outputs. A layer marked dense has the family's ordinary MLP of width ModelSpec::dFf instead.
struct MixtureSpec {
  int experts = 0;    // E (0: no mixture, every MLP dense)
  const char* expertsKey = "";  // the config key E was read from, for messages
  int perToken = 0;   // k, 1 .. E
  int expertFf = 0;   // F_e: one expert's hidden width
  RouterRule rule;
  std::vector<bool> denseLayers;  // per layer, true where the MLP is dense (Qwen3-MoE's mlp_only_layers); empty: none
  // DeepSeek's shared experts: one more MLP of the family's kind, this wide (n_shared_experts · moe_intermediate_size),
  // run on every token of a mixture layer and added unweighted to the routed sum (0: none).
  int sharedFf = 0;
  bool mixtureAt(int layer) const {
    return experts > 0 && !(layer >= 0 && static_cast<std::size_t>(layer) < denseLayers.size() &&
                            denseLayers[static_cast<std::size_t>(layer)]);
  }
  bool anyDense(int layers) const;  // some layer of the model has a dense MLP
};

// Multi-head latent attention (DeepSeek-V2 and V3, core/attention/latent.hpp): each layer's keys and values made
// from a latent of kvRank numbers per token, and one rotary key of ropeDim shared by the heads. kvRank 0: the
// family's ordinary attention.
struct LatentSpec {
  int qRank = 0;     // r_q, q_lora_rank (0: one q_proj)
  int kvRank = 0;    // r, kv_lora_rank
  int nopeDim = 0;   // d_n, qk_nope_head_dim
  int ropeDim = 0;   // d_r, qk_rope_head_dim
  int valueDim = 0;  // d_v, v_head_dim
  double scale = 0;  // the scores' factor: (d_n + d_r)^-1/2, times YaRN's mscale(factor, mscale_all_dim)^2 when set
  bool interleaved = true;  // RoPE's pairs (2i, 2i + 1) (V2; V3's rope_interleave), else rotate_half's (i, i + d_r/2)
  bool enabled() const { return kvRank > 0; }
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
  MixtureSpec moe;            // a mixture-of-experts MLP (Mixtral, Qwen3-MoE); moe.experts 0: dense MLPs
  // Layers the files hold after the L the forward runs, which it leaves unread (DeepSeek-V3's multi-token prediction
  // module, num_nextn_predict_layers).
  int storedExtraLayers = 0;
  LatentSpec latent;          // DeepSeek's latent attention (headDim is then d_n + d_r, the width q and k meet in)
  double swigluLimit = 7.0;   // c of the clamped SwiGLU (MlpKind::ClampedSwiGlu): the gate at most c, the up within ±c
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
// every layer — every expert of a mixture layer —, the final norm, and lm_head when untied).
std::int64_t parameterCount(const ModelSpec& spec);
// The parameters of layer `layer` a forward holds in float at once: all of the layer's tensors but a mixture's
// experts, of which one is converted at a time (so plus the largest expert).
std::int64_t layerResidentParameters(const ModelSpec& spec, int layer);

}  // namespace mhascope::model
