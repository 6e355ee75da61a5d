// A Hugging Face model family as one unit of data: the config.json keys it reads (with their aliases
// and defaults), its one table of tensor names, and what it changes in the forward (norm, MLP,
// positions, the prefixes and skipped tensors of its files). Each family is one file beside this one
// (gpt2.cpp, llama.cpp, ...) that defines one `Family`; families.cpp lists them. The shared code —
// config.cpp, model_folder.cpp, forward.cpp, the commands and the window — reads these fields and
// never names a family.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "attention/trace.hpp"
#include "model/config.hpp"

namespace mhascope::model {

class ConfigReader;

// ---------------------------------------------------------------------------------------------
// config.json: the sizes every family has, under the family's own key names.
// ---------------------------------------------------------------------------------------------

// The ModelSpec field a key fills. DModel .. MaxPositions are integers from 1 to 2^30; NormEps and
// RopeTheta positive numbers; TiedEmbeddings true or false.
enum class SpecField { DModel, Heads, KvHeads, HeadDim, Layers, DFf, Vocab, MaxPositions, NormEps, RopeTheta, TiedEmbeddings };

// What a key's absence means.
struct KeyDefault {
  enum class Kind {
    Required,  // "missing key '...'"
    Value,     // `value` (a number, or 1 / 0 for a flag)
    SameAs,    // the value of field `of` (num_key_value_heads: h)
    Times,     // `value` times field `of` (GPT-2's n_inner: 4 * n_embd), held to 2^30 like the sizes
  };
  Kind kind = Kind::Required;
  double value = 0.0;
  SpecField of = SpecField::DModel;
};
constexpr KeyDefault required() { return {}; }
constexpr KeyDefault byDefault(double value) { return {KeyDefault::Kind::Value, value, SpecField::DModel}; }
constexpr KeyDefault sameAs(SpecField of) { return {KeyDefault::Kind::SameAs, 0.0, of}; }
constexpr KeyDefault times(int factor, SpecField of) { return {KeyDefault::Kind::Times, static_cast<double>(factor), of}; }

struct ConfigKey {
  SpecField field;
  const char* key;                   // as config.json spells it
  KeyDefault absent = required();    // what its absence means
  const char* alias = nullptr;       // an older name for the same value, used when `key` is absent (n_ctx)
};

// ---------------------------------------------------------------------------------------------
// Tensors: what each stored tensor is to the forward.
// ---------------------------------------------------------------------------------------------

enum class TensorRole {
  // the whole model
  TokenEmbedding,     // E (V, d_model), read a row per token
  PositionEmbedding,  // learned positions (P, d_model), rows 0 .. T-1 added to the embeddings
  FinalNorm, FinalNormBias,
  Unembedding,        // lm_head (V, d_model) when not tied to E
  // every layer
  Norm1, Norm1Bias,
  QkvFused, QkvFusedBias,  // [W_q | W_k | W_v] side by side (d_model, h d_k + 2 N d_k)
  Query, QueryBias, Key, KeyBias, Value, ValueBias,
  QueryNorm, KeyNorm,      // the q/k norm's gains (Family::qkNorm): (d_k) per head, or (h d_k) and (N d_k)
  Sinks,                   // the learned sinks' logits (h), one per query head (gpt-oss)
  // multi-head latent attention (ModelSpec::latent; Query is then q_proj (d_model, h (d_n + d_r)) when r_q is 0)
  LatentQueryA,       // q_a_proj (d_model, r_q)
  LatentQueryNorm,    // q_a_layernorm (r_q)
  LatentQueryB,       // q_b_proj (r_q, h (d_n + d_r))
  LatentKvA,          // kv_a_proj_with_mqa (d_model, r + d_r): the latent and the shared rotary key
  LatentKvNorm,       // kv_a_layernorm (r)
  LatentKvB,          // kv_b_proj (r, h (d_n + d_v)): every head's k_nope and v from the latent
  Output, OutputBias,
  Norm2, Norm2Bias,
  AttentionOutNorm,   // a norm of the attention's output before the residual add (Family::blockNorms)
  MlpOutNorm,         // the same for the MLP's output
  MlpIn, MlpInBias,   // GPT-2's c_fc; the SwiGLU gate
  MlpUp,              // the SwiGLU up projection
  MlpGateUpFused,     // [gate | up] stacked in one matrix (d_model, 2 F): Phi-3's gate_up_proj
  MlpOut, MlpOutBias,
  // a mixture-of-experts layer (ModelSpec::moe): the router and, once per expert ("{e}" in the name), its MLP
  Router,             // W_router (d_model, E): the router's logits z = m W_router
  RouterBias,         // (E) added to the router's logits (gpt-oss's router is a Linear with a bias)
  RouterChoiceBias,   // (E) added to the scores for the choice only (DeepSeek-V3's e_score_correction_bias)
  SharedIn, SharedUp, SharedOut,  // the shared experts' MLP (MixtureSpec::sharedFf), on every token of a mixture layer
  ExpertIn,           // expert e's gate (d_model, F_e)
  ExpertUp,           // expert e's up projection (d_model, F_e)
  ExpertGateUpFused,  // expert e's gate and up in one matrix (d_model, 2 F_e), ordered by Family::gateUp
  ExpertGateUpBias,   // its bias (2 F_e), in the same order
  ExpertOut,          // expert e's down projection (F_e, d_model)
  ExpertOutBias,      // its bias (d_model)
};
bool perLayer(TensorRole r);
bool perExpert(TensorRole r);  // one expert's: ExpertIn .. ExpertOutBias (named per expert, or a slice of a stack)
// Whether the role belongs to a layer's MLP (dense or mixture), which an attention-only read skips.
bool mlpRole(TensorRole r);

// A stored size, from the config.
enum class Dim {
  None,       // (a vector has one dimension)
  Model,      // d_model
  Heads,      // h d_k, the query heads side by side (d_model unless the config sets head_dim)
  HeadCount,  // h, one number per query head
  HeadDim,    // d_k, one head's width
  Kv,         // N d_k, one K or V projection's width
  Qkv,        // h d_k + 2 N d_k, q | k | v side by side (3 d_model without grouped K/V heads)
  Ff,         // F, the MLP's hidden width
  FfPair,     // 2 F, a fused gate | up
  Vocab,      // V
  Positions,  // P, the learned position table's rows
  Experts,    // E, a mixture's experts
  ExpertFf,   // F_e, one expert's hidden width
  ExpertFfPair,  // 2 F_e, an expert's fused gate and up
  SharedFf,   // the shared experts' width
  QRank,      // r_q, q_lora_rank
  LatentQ,    // h (d_n + d_r): q_proj's or q_b_proj's outputs
  LatentKvA,  // r + d_r
  KvRank,     // r, kv_lora_rank
  LatentKvB,  // h (d_n + d_v)
  LatentV,    // h d_v: o_proj's inputs
};

// How a matrix is stored. The forward computes y = x W + b with W (in, out).
enum class Stored {
  InOut,   // (in, out) as used: GPT-2's Conv1D
  OutIn,   // (out, in): nn.Linear, transposed as it is read
};

// When the tensor exists.
enum class Need {
  Always,
  QkvBias,     // ModelSpec::qkvBias
  OutputBias,  // ModelSpec::outputBias
  Untied,      // !ModelSpec::tiedEmbeddings
  QLora,       // ModelSpec::latent.qRank > 0
  NoQLora,     // ModelSpec::latent.qRank == 0
  Shared,      // MixtureSpec::sharedFf > 0 (on a mixture layer)
};

// How a mixture's expert tensor holds its E experts.
enum class ExpertStore {
  Named,    // one tensor per expert, "{e}" in its name (Mixtral, Qwen3-MoE)
  Stacked,  // one tensor (E, rows[, cols]) for all E, expert e its slice e on the leading axis (gpt-oss); a folder may
            // store it as MXFP4 blocks + scales of the transposed matrices (io/mxfp4.hpp), dequantised one slice at a time
};

struct TensorName {
  TensorRole role;
  const char* name;        // as Hugging Face writes it; "{i}" is the layer, "{e}" the expert (without the optional base prefix)
  Dim rows, cols = Dim::None;  // one expert's shape for an expert's tensor
  Stored stored = Stored::OutIn;  // matrices of a layer only; embedding tables are read by rows as stored
  Need need = Need::Always;
  ExpertStore experts = ExpertStore::Named;  // an expert's tensor only
};

// ---------------------------------------------------------------------------------------------
// What the family changes in the forward.
// ---------------------------------------------------------------------------------------------

enum class NormKind {
  LayerNorm,  // (x - mean) / sqrt(var + eps) · w + b, var the biased variance (GPT-2)
  RmsNorm,    // x / sqrt(mean(x²) + eps) · w, in float32 as Hugging Face computes it (Llama)
};
enum class MlpKind {
  GeluTanh,  // down(gelu_new(x W_in + b_in)) + b_out (GPT-2)
  SwiGlu,    // down(silu(gate x) · up x) (Llama)
  GeGluTanh, // down(gelu_tanh(gate x) · up x), the tanh GELU of GPT-2's gelu_new (Gemma's gelu_pytorch_tanh)
  // down((u + 1) · g · σ(1.702 g)) with g = min(gate x, c) and u = up x held to ±c, c = ModelSpec::swigluLimit
  // (gpt-oss's experts)
  ClampedSwiGlu,
};
// How a fused gate and up (MlpGateUpFused, ExpertGateUpFused) orders its 2 F columns.
enum class GateUpOrder {
  Halves,       // [gate | up] (Phi-3)
  Interleaved,  // gate in the even columns, up in the odd ones (gpt-oss)
};
enum class PositionKind {
  Learned,  // a learned table added to the embeddings before layer 0; no position inside attention
  Rope,     // q and k rotated inside attention, rope_theta and the family's pairing (ropeStyle)
};

// A norm of each query and key before RoPE (the engine's q_normed and k_normed stages), RMSNorm with the
// family's gains.
enum class QkNormKind {
  None,
  PerHead,          // over each head's d_k features after the split: q_norm (d_k) (Qwen3, Gemma 3)
  WholeProjection,  // over the whole projection before the split: q_norm (h d_k), k_norm (N d_k) (OLMo 2)
};

// Where a block's norms sit around its two sublayers f (attention, then the MLP).
enum class BlockNorms {
  Pre,       // x + f(norm(x)): Norm1 before attention, Norm2 before the MLP (GPT-2, Llama)
  Post,      // x + norm(f(x)): AttentionOutNorm and MlpOutNorm on the outputs, nothing on the inputs (OLMo 2)
  Sandwich,  // x + norm_out(f(norm_in(x))): all four (Gemma 2 and 3)
};

const char* normName(NormKind k);  // "LayerNorm", "RMSNorm"
const char* mlpName(MlpKind k);    // "gelu_new", "SwiGLU"

struct Family {
  const char* modelType;    // config.json's model_type: "gpt2"
  const char* displayName;  // "GPT-2": how messages and the window name it
  Arch arch;                // the older id some code still reads (config.hpp)

  // config.json: the sizes, read in this order (the first problem is the one reported), then `readRest`
  // for every other key the family reads: the refusals, the biases, the window, RoPE's scaling.
  std::span<const ConfigKey> keys;
  void (*readRest)(ConfigReader& r, ModelSpec& s);

  // The weights: every tensor the forward reads, in the order the files list them (a run of per-layer
  // entries is repeated for each layer); a model-opening error lists problems in this order.
  std::span<const TensorName> tensors;
  std::span<const char* const> basePrefixes = {};  // a prefix some files put before every name but lm_head
  std::span<const char* const> skippedSuffixes; // stored tensors real files carry and the forward does not use

  NormKind norm;
  MlpKind mlp;
  PositionKind positions;
  RopeStyle ropeStyle = RopeStyle::Half;  // with Rope: Hugging Face's rotate_half pairs (i, i + d_k/2)
  QkNormKind qkNorm = QkNormKind::None;   // the QueryNorm and KeyNorm tensors' span
  BlockNorms blockNorms = BlockNorms::Pre;
  bool normsBefore() const { return blockNorms != BlockNorms::Post; }  // Norm1 and Norm2 exist
  bool normsAfter() const { return blockNorms != BlockNorms::Pre; }    // AttentionOutNorm and MlpOutNorm exist
  // Added to every stored norm gain as it is read (the block's, the final and the q/k norm's): Gemma stores the
  // w of its x / rms(x) · (1 + w), zero-centred, so 1 here.
  float normGainOffset = 0.0f;
  bool scaleEmbeddings = false;  // the token embeddings times √d_model before layer 0 (Gemma)
  GateUpOrder gateUp = GateUpOrder::Halves;  // a fused gate and up's columns
  bool gatedMlp() const { return mlp != MlpKind::GeluTanh; }  // gate and up: MlpUp (or a fused gate | up)
  // The MLP may be a mixture of experts (ModelSpec::moe, read by readRest): the table names the router and each
  // expert's tensors, every expert an MLP of the kind `mlp`.
  bool mixture() const { return tensor(TensorRole::Router) != nullptr; }
  // Attention may be multi-head latent attention (ModelSpec::latent, read by readRest): the table names its
  // projections (LatentKvA, ...) instead of W_k and W_v.
  bool latentAttention() const { return tensor(TensorRole::LatentKvA) != nullptr; }

  // The key of a field (nullptr when the family has none: GPT-2 has no num_key_value_heads).
  const char* key(SpecField f) const;
  // The table's entry for a role (nullptr when the family has none).
  const TensorName* tensor(TensorRole r) const;
};

// What a family adds to attention beyond the four first families' decoder, one line each for `info --model` and the
// window: the q/k norm, the layers that differ (their windows, positions, RoPE base).
struct FamilyNote {
  std::string label;  // "q/k norm"
  std::string text;   // "RMSNorm of each head's q and k (d_k = 128 gains each), after the split, before RoPE"
};
std::vector<FamilyNote> familyNotes(const ModelSpec& spec);
// The layers whose attention differs, grouped: "layers 0-1 full, layer 2 W = 4"; "" when every layer is alike.
std::string layerKindsText(const ModelSpec& spec);

// Runs of table entries joined in order: a family's table made of the shared runs of its decoder
// (llama_decoder.hpp) and its own.
template <std::size_t... N>
constexpr std::array<TensorName, (N + ...)> joinTensors(const std::array<TensorName, N>&... runs) {
  std::array<TensorName, (N + ...)> out{};
  std::size_t k = 0;
  const auto add = [&out, &k](const auto& run) {
    for (const TensorName& t : run) out[k++] = t;
  };
  (add(runs), ...);
  return out;
}

// Whether `spec` has the tensor (its Need), and its shape.
bool needed(const TensorName& t, const ModelSpec& spec);
// Whether layer `layer` has it: needed, and a dense MLP's tensor on a dense layer only, a router's or an expert's on
// a mixture layer only (ModelSpec::moe).
bool neededAt(const TensorName& t, const ModelSpec& spec, int layer);
Shape storedShape(const TensorName& t, const ModelSpec& spec);  // a stacked expert tensor's with E first
// How many stored copies of the tensor a mixture layer has: E for an expert's tensor named per expert, else 1.
int storedCopies(const TensorName& t, const ModelSpec& spec);
std::int64_t dimSize(Dim d, const ModelSpec& spec);
// The stored name: "{i}" replaced by the layer, "{e}" by the expert, the base prefix put first (never before lm_head).
std::string tensorName(const TensorName& t, const std::string& prefix, int layer = -1, int expert = -1);

}  // namespace mhascope::model
