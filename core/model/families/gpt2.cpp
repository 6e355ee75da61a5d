// GPT-2 (model_type "gpt2": GPT-2, DistilGPT-2), as Hugging Face's GPT2Config and GPT2LMHeadModel
// have it: learned positions added to the embeddings, LayerNorm with biases, the gelu_new MLP, a bias
// on every projection, q | k | v side by side in one c_attn, the unembedding tied to wte. Its Conv1D
// layers store W as (in, out) already, so y = x W + b as read. Files name the tensors with or without
// the base model's "transformer." prefix.
#include "model/families/config_reader.hpp"
#include "model/families/family.hpp"

namespace mhascope::model::families {
namespace {

constexpr ConfigKey kKeys[] = {
    {SpecField::DModel, "n_embd"},
    {SpecField::Heads, "n_head"},  // N = h: GPT-2 has no grouped K/V heads
    {SpecField::Layers, "n_layer"},
    {SpecField::Vocab, "vocab_size"},
    {SpecField::MaxPositions, "n_positions", required(), "n_ctx"},
    {SpecField::NormEps, "layer_norm_epsilon", byDefault(1e-5)},
    {SpecField::DFf, "n_inner", times(4, SpecField::DModel)},
    {SpecField::TiedEmbeddings, "tie_word_embeddings", byDefault(true)},
};

void readGpt2Rest(ConfigReader& r, ModelSpec& s) {
  s.qkvBias = s.outputBias = true;
  // gelu_new and gelu_pytorch_tanh are the same tanh formula.
  acceptOnly(r, "activation_function", {"gelu_new", "gelu_pytorch_tanh"}, "(mhascope: gelu_new)");
  refuseFlag(r, "scale_attn_weights", false);
  refuseFlag(r, "scale_attn_by_inverse_layer_idx", true);
  refuseFlag(r, "add_cross_attention", true);
}

constexpr TensorName kTensors[] = {
    {TensorRole::TokenEmbedding, "wte.weight", Dim::Vocab, Dim::Model},
    {TensorRole::PositionEmbedding, "wpe.weight", Dim::Positions, Dim::Model},
    {TensorRole::Norm1, "h.{i}.ln_1.weight", Dim::Model},
    {TensorRole::Norm1Bias, "h.{i}.ln_1.bias", Dim::Model},
    {TensorRole::QkvFused, "h.{i}.attn.c_attn.weight", Dim::Model, Dim::Qkv, Stored::InOut},
    {TensorRole::QkvFusedBias, "h.{i}.attn.c_attn.bias", Dim::Qkv, Dim::None, Stored::InOut, Need::QkvBias},
    {TensorRole::Output, "h.{i}.attn.c_proj.weight", Dim::Model, Dim::Model, Stored::InOut},
    {TensorRole::OutputBias, "h.{i}.attn.c_proj.bias", Dim::Model, Dim::None, Stored::InOut, Need::OutputBias},
    {TensorRole::Norm2, "h.{i}.ln_2.weight", Dim::Model},
    {TensorRole::Norm2Bias, "h.{i}.ln_2.bias", Dim::Model},
    {TensorRole::MlpIn, "h.{i}.mlp.c_fc.weight", Dim::Model, Dim::Ff, Stored::InOut},
    {TensorRole::MlpInBias, "h.{i}.mlp.c_fc.bias", Dim::Ff},
    {TensorRole::MlpOut, "h.{i}.mlp.c_proj.weight", Dim::Ff, Dim::Model, Stored::InOut},
    {TensorRole::MlpOutBias, "h.{i}.mlp.c_proj.bias", Dim::Model},
    {TensorRole::FinalNorm, "ln_f.weight", Dim::Model},
    {TensorRole::FinalNormBias, "ln_f.bias", Dim::Model},
    {TensorRole::Unembedding, "lm_head.weight", Dim::Vocab, Dim::Model, Stored::OutIn, Need::Untied},
};

constexpr const char* kBasePrefixes[] = {"transformer."};
// The causal-mask buffers of each layer's attention.
constexpr const char* kSkipped[] = {".attn.bias", ".attn.masked_bias"};

}  // namespace

extern const Family gpt2;
const Family gpt2 = {
    .modelType = "gpt2",
    .displayName = "GPT-2",
    .arch = Arch::Gpt2,
    .keys = kKeys,
    .readRest = readGpt2Rest,
    .tensors = kTensors,
    .basePrefixes = kBasePrefixes,
    .skippedSuffixes = kSkipped,
    .norm = NormKind::LayerNorm,
    .mlp = MlpKind::GeluTanh,
    .positions = PositionKind::Learned,
};

}  // namespace mhascope::model::families
