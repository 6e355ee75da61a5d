// DeepSeek-V2 and V3 (model_type "deepseek_v2", "deepseek_v3"), as transformers' configuration_deepseek_v2.py /
// modeling_deepseek_v2.py and configuration_deepseek_v3.py / modeling_deepseek_v3.py have them.
//
// Attention is multi-head latent attention (core/attention/latent.hpp): q = q_proj(x) when q_lora_rank is null, else
// q_b_proj(q_a_layernorm(q_a_proj(x))), each head [q_nope (qk_nope_head_dim) | q_rope (qk_rope_head_dim)];
// kv_a_proj_with_mqa(x) = [c (kv_lora_rank) | k_rope (qk_rope_head_dim)], c through kv_a_layernorm, then kv_b_proj(c)
// = each head's [k_nope | v (v_head_dim)]; k_rope one head shared by all. Both small norms take RMSNorm's default eps
// 1e-6 whatever rms_norm_eps says. RoPE turns the rotary parts only: V2's apply_rotary_emb multiplies adjacent pairs
// (2i, 2i + 1), read as complex numbers; V3 with rope_interleave (its default) reorders them to [even | odd] before
// rotate_half — the same pairs and so the same scores (RopeStyle::Interleaved); V3 without it, rotate_half as
// stored. The scores are times (qk_nope + qk_rope)^-1/2, and with YaRN's rope_scaling times
// mscale(factor, mscale_all_dim)^2 as well (yarn_get_mscale: 0.1 m ln(factor) + 1).
//
// The MLP: layers below first_k_dense_replace (V2: and those with layer % moe_layer_freq != 0) are dense SwiGLU
// MLPs of intermediate_size; the others a mixture of n_routed_experts SwiGLU experts of moe_intermediate_size, plus
// n_shared_experts shared ones as one MLP (mlp.shared_experts, n_shared_experts · moe_intermediate_size wide) on
// every token. V2's router (DeepseekV2Moe): softmax over all, greedy top k or group_limited_greedy (the topk_group
// of n_group groups with the best single score), times routed_scaling_factor, not renormalised (norm_topk_prob true
// is refused). V3's (DeepseekV3TopkRouter, topk_method noaux_tc): sigmoid scores, the choice with
// mlp.gate.e_score_correction_bias added, the topk_group groups whose two best sum highest, the chosen unbiased
// scores renormalised (+1e-20) when norm_topk_prob, times routed_scaling_factor.
//
// V3's multi-token-prediction layers (num_nextn_predict_layers, stored as model.layers.{L}…) are for training and
// speculative decoding: the folder may hold them, the forward leaves them unread.
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "model/families/llama_decoder.hpp"

namespace mhascope::model::families {
namespace {

// The sizes: the Llama decoder's keys but head_dim, which a latent layer does not have (DeepseekV3Config sets it to
// qk_rope_head_dim for the rotary code; q and k meet in qk_nope + qk_rope).
constexpr std::array<ConfigKey, 10> keysWith(double maxPositions, double vocab) {
  return {{
      {SpecField::DModel, "hidden_size"},
      {SpecField::Heads, "num_attention_heads"},
      {SpecField::KvHeads, "num_key_value_heads", sameAs(SpecField::Heads)},
      {SpecField::Layers, "num_hidden_layers"},
      {SpecField::DFf, "intermediate_size"},
      {SpecField::Vocab, "vocab_size", byDefault(vocab)},
      {SpecField::MaxPositions, "max_position_embeddings", byDefault(maxPositions)},
      {SpecField::NormEps, "rms_norm_eps", byDefault(1e-6)},
      {SpecField::RopeTheta, "rope_theta", byDefault(10000.0)},
      {SpecField::TiedEmbeddings, "tie_word_embeddings", byDefault(0.0)},
  }};
}
constexpr auto kV2Keys = keysWith(2048, 102400);
constexpr auto kV3Keys = keysWith(4096, 129280);

constexpr std::array<TensorName, 7> kLatentAttention = {{
    {TensorRole::Query, "model.layers.{i}.self_attn.q_proj.weight", Dim::LatentQ, Dim::Model, Stored::OutIn, Need::NoQLora},
    {TensorRole::LatentQueryA, "model.layers.{i}.self_attn.q_a_proj.weight", Dim::QRank, Dim::Model, Stored::OutIn, Need::QLora},
    {TensorRole::LatentQueryNorm, "model.layers.{i}.self_attn.q_a_layernorm.weight", Dim::QRank, Dim::None, Stored::OutIn,
     Need::QLora},
    {TensorRole::LatentQueryB, "model.layers.{i}.self_attn.q_b_proj.weight", Dim::LatentQ, Dim::QRank, Stored::OutIn, Need::QLora},
    {TensorRole::LatentKvA, "model.layers.{i}.self_attn.kv_a_proj_with_mqa.weight", Dim::LatentKvA, Dim::Model},
    {TensorRole::LatentKvNorm, "model.layers.{i}.self_attn.kv_a_layernorm.weight", Dim::KvRank},
    {TensorRole::LatentKvB, "model.layers.{i}.self_attn.kv_b_proj.weight", Dim::LatentKvB, Dim::KvRank},
}};
constexpr llama_decoder::Run1 kLatentOutput = {
    {{TensorRole::Output, "model.layers.{i}.self_attn.o_proj.weight", Dim::Model, Dim::LatentV}}};

constexpr std::array<TensorName, 7> kExperts = {{
    {TensorRole::Router, "model.layers.{i}.mlp.gate.weight", Dim::Experts, Dim::Model},
    {TensorRole::ExpertIn, "model.layers.{i}.mlp.experts.{e}.gate_proj.weight", Dim::ExpertFf, Dim::Model},
    {TensorRole::ExpertUp, "model.layers.{i}.mlp.experts.{e}.up_proj.weight", Dim::ExpertFf, Dim::Model},
    {TensorRole::ExpertOut, "model.layers.{i}.mlp.experts.{e}.down_proj.weight", Dim::Model, Dim::ExpertFf},
    {TensorRole::SharedIn, "model.layers.{i}.mlp.shared_experts.gate_proj.weight", Dim::SharedFf, Dim::Model, Stored::OutIn,
     Need::Shared},
    {TensorRole::SharedUp, "model.layers.{i}.mlp.shared_experts.up_proj.weight", Dim::SharedFf, Dim::Model, Stored::OutIn,
     Need::Shared},
    {TensorRole::SharedOut, "model.layers.{i}.mlp.shared_experts.down_proj.weight", Dim::Model, Dim::SharedFf, Stored::OutIn,
     Need::Shared},
}};
constexpr llama_decoder::Run1 kChoiceBias = {
    {{TensorRole::RouterChoiceBias, "model.layers.{i}.mlp.gate.e_score_correction_bias", Dim::Experts}}};

constexpr auto kV2Tensors = joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, kLatentAttention, kLatentOutput,
                                        llama_decoder::kPostAttentionNorm, llama_decoder::kMlp, kExperts, llama_decoder::kFinal);
constexpr auto kV3Tensors = joinTensors(llama_decoder::kEmbedding, llama_decoder::kInputNorm, kLatentAttention, kLatentOutput,
                                        llama_decoder::kPostAttentionNorm, llama_decoder::kMlp, kExperts, kChoiceBias,
                                        llama_decoder::kFinal);

// The latent attention's sizes, its rope_scaling and the scores' scale; the MLP's keys.
void readLatent(ConfigReader& r, ModelSpec& s) {
  llama_decoder::readMlp(r);
  refuseFlag(r, "attention_bias", true, " (biases on the latent projections)");
  LatentSpec& a = s.latent;
  // q_lora_rank null: one q_proj (DeepSeek-V2-Lite); absent: the configuration classes' 1536.
  a.qRank = !r.object().contains("q_lora_rank") ? 1536 : r.has("q_lora_rank") ? r.positive("q_lora_rank") : 0;
  a.kvRank = r.positive("kv_lora_rank", 512);
  a.nopeDim = r.positive("qk_nope_head_dim", 128);
  a.ropeDim = r.positive("qk_rope_head_dim", 64);
  a.valueDim = r.positive("v_head_dim", 128);
  if (r.failed()) return;
  if (a.ropeDim % 2 != 0) {
    r.fail("'qk_rope_head_dim' must be even (RoPE turns pairs of features), got " + std::to_string(a.ropeDim));
    return;
  }
  s.headDim = a.nopeDim + a.ropeDim;  // the width each head's q and k meet in
  readRopeScaling(r, s);
  a.scale = 1.0 / std::sqrt(static_cast<double>(s.headDim));
  if (s.yarn.enabled && r.object().at("rope_scaling").contains("mscale_all_dim")) {
    const nlohmann::json& m = r.object().at("rope_scaling").at("mscale_all_dim");
    if (!m.is_number() || !std::isfinite(m.get<double>()) || m.get<double>() < 0) {
      r.fail("rope_scaling 'mscale_all_dim' must be a number of at least 0, got " + m.dump());
      return;
    }
    const double all = m.get<double>();
    const double mscale = s.yarn.factor <= 1.0 || all == 0 ? 1.0 : 0.1 * all * std::log(s.yarn.factor) + 1.0;
    a.scale *= mscale * mscale;
  }
}

// The mixture's sizes and router groups (n_group, topk_group) and which layers are dense.
// The configuration class's defaults, where V2's and V3's differ.
struct MixtureDefaults {
  int experts, perToken, expertFf, shared, firstMixture;
  bool layerFreq;  // V2 reads moe_layer_freq; modeling_deepseek_v3.py does not
};

void readDeepSeekMixture(ConfigReader& r, ModelSpec& s, const MixtureDefaults& d) {
  readMixture(r, s, "n_routed_experts", d.experts, true, d.perToken, "moe_intermediate_size", d.expertFf);
  if (r.failed() || s.moe.experts == 0) return;
  const int shared = r.count("n_shared_experts", d.shared);
  s.moe.sharedFf = shared * s.moe.expertFf;
  const int firstMixture = r.count("first_k_dense_replace", d.firstMixture);
  const int freq = d.layerFreq ? r.positive("moe_layer_freq", 1) : 1;
  s.moe.denseLayers.assign(static_cast<std::size_t>(s.layers), false);
  for (int l = 0; l < s.layers; ++l) s.moe.denseLayers[static_cast<std::size_t>(l)] = l < firstMixture || l % freq != 0;
  s.storedExtraLayers = r.count("num_nextn_predict_layers", 0);
}

// Groups of the router's choice: E splits into n_group equal groups, topk_group of them kept, k fits in those.
void readGroups(ConfigReader& r, ModelSpec& s, ExpertGroups groups, int groupCount, int groupsKept) {
  RouterRule& rule = s.moe.rule;
  rule.groups = groups;
  rule.groupCount = r.positive("n_group", groupCount);
  rule.groupsKept = r.positive("topk_group", groupsKept);
  if (r.failed()) return;
  const int E = s.moe.experts, G = rule.groupCount;
  if (E % G != 0) {
    r.fail("'n_group' (" + std::to_string(G) + ") must divide 'n_routed_experts' (" + std::to_string(E) + ")");
  } else if (rule.groupsKept > G) {
    r.fail("'topk_group' (" + std::to_string(rule.groupsKept) + ") must be at most 'n_group' (" + std::to_string(G) + ")");
  } else if (s.moe.perToken > rule.groupsKept * (E / G)) {
    r.fail("'num_experts_per_tok' (" + std::to_string(s.moe.perToken) + ") must be at most the " +
           std::to_string(rule.groupsKept * (E / G)) + " experts of the 'topk_group' groups kept");
  } else if (groups == ExpertGroups::TopTwoSum && E / G < 2) {
    r.fail("noaux_tc ranks each group by its two best experts, so 'n_routed_experts' / 'n_group' must be at least 2, got " +
           std::to_string(E / G));
  }
}

void readV2Rest(ConfigReader& r, ModelSpec& s) {
  readLatent(r, s);
  s.latent.interleaved = true;  // apply_rotary_emb's complex pairs
  // DeepseekV2Config's defaults: no experts (every MLP dense) unless n_routed_experts is set.
  readDeepSeekMixture(r, s, {.experts = 0, .perToken = 1, .expertFf = 1407, .shared = 0, .firstMixture = 0, .layerFreq = true});
  if (r.failed() || s.moe.experts == 0) return;
  acceptOnly(r, "scoring_func", {"softmax"}, "(DeepSeek-V2: softmax)");
  const std::string method = r.text("topk_method", "greedy");
  s.moe.rule.scores = RouterScores::Softmax;
  if (method == "group_limited_greedy") {
    readGroups(r, s, ExpertGroups::BestScore, 1, 1);
  } else if (method != "greedy") {
    r.refuse("topk_method '" + method + "' (DeepSeek-V2: greedy or group_limited_greedy)");
  }
  // DeepSeek-V2's and V2-Lite's configs say norm_topk_prob false; with true, DeepSeek's own modeling_deepseek.py
  // renormalises and drops routed_scaling_factor while transformers' modeling_deepseek_v2.py scales: refused rather
  // than read one way.
  refuseFlag(r, "norm_topk_prob", true, " (DeepSeek-V2: the published codes read it differently)");
  s.moe.rule.renormalise = false;
  s.moe.rule.scale = r.positiveNumber("routed_scaling_factor", 1.0);
}

void readV3Rest(ConfigReader& r, ModelSpec& s) {
  readLatent(r, s);
  s.latent.interleaved = r.flag("rope_interleave", true);
  // DeepseekV3Config's defaults: 256 experts of 2048, 8 a token, 1 shared, the first 3 layers dense.
  readDeepSeekMixture(r, s, {.experts = 256, .perToken = 8, .expertFf = 2048, .shared = 1, .firstMixture = 3, .layerFreq = false});
  if (r.failed() || s.moe.experts == 0) return;
  acceptOnly(r, "scoring_func", {"sigmoid"}, "(DeepSeek-V3: sigmoid)");
  acceptOnly(r, "topk_method", {"noaux_tc"}, "(DeepSeek-V3: noaux_tc)");
  s.moe.rule.scores = RouterScores::Sigmoid;
  readGroups(r, s, ExpertGroups::TopTwoSum, 8, 4);
  s.moe.rule.renormalise = r.flag("norm_topk_prob", true);
  s.moe.rule.renormaliseEpsilon = 1e-20;
  s.moe.rule.scale = r.positiveNumber("routed_scaling_factor", 2.5);
}

}  // namespace

extern const Family deepseek_v2;
const Family deepseek_v2 = {
    .modelType = "deepseek_v2",
    .displayName = "DeepSeek-V2",
    .arch = Arch::Other,
    .keys = kV2Keys,
    .readRest = readV2Rest,
    .tensors = kV2Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .ropeStyle = RopeStyle::Interleaved,
};

extern const Family deepseek_v3;
const Family deepseek_v3 = {
    .modelType = "deepseek_v3",
    .displayName = "DeepSeek-V3",
    .arch = Arch::Other,
    .keys = kV3Keys,
    .readRest = readV3Rest,
    .tensors = kV3Tensors,
    .skippedSuffixes = llama_decoder::kSkipped,
    .norm = NormKind::RmsNorm,
    .mlp = MlpKind::SwiGlu,
    .positions = PositionKind::Rope,
    .ropeStyle = RopeStyle::Interleaved,
};

}  // namespace mhascope::model::families
