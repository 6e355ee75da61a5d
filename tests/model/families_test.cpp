// The family table itself (core/model/families/): every listed family has what the shared code reads —
// the keys of the sizes, one tensor for every role its forward traits use and none it does not, names
// that expand to distinct stored names — a fixture folder that opens and gives every weight the forward
// multiplies by, keys whose aliases and defaults resolve as the table says, and an unknown model_type
// refused with the known ones listed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "lessons/windows.hpp"
#include "model/families/families.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// model_type → the first fixture folder (by name) of that family.
std::map<std::string, std::string> fixtureFolders() {
  std::map<std::string, std::string> out;
  std::set<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kModels)) dirs.insert(e.path());
  for (const fs::path& d : dirs) {
    std::ifstream in(d / "config.json");
    if (!in) continue;
    const json j = json::parse(in);
    out.emplace(j.at("model_type").get<std::string>(), d.string());
  }
  return out;
}

json fixtureConfig(const std::string& folder) {
  std::ifstream in(fs::path(folder) / "config.json");
  return json::parse(in);
}

double fieldOf(const ModelSpec& s, SpecField f) {
  switch (f) {
    case SpecField::DModel: return s.dModel;
    case SpecField::Heads: return s.heads;
    case SpecField::KvHeads: return s.kvHeads;
    case SpecField::HeadDim: return s.headDim;
    case SpecField::Layers: return s.layers;
    case SpecField::DFf: return s.dFf;
    case SpecField::Vocab: return s.vocab;
    case SpecField::MaxPositions: return s.maxPositions;
    case SpecField::NormEps: return s.normEps;
    case SpecField::RopeTheta: return s.ropeTheta;
    case SpecField::TiedEmbeddings: return s.tiedEmbeddings ? 1.0 : 0.0;
  }
  return -1;
}

TEST(ModelFamilies, ListedOnceAndFoundByModelType) {
  ASSERT_FALSE(allFamilies().empty());
  std::set<std::string> types;
  for (const Family* f : allFamilies()) {
    EXPECT_TRUE(types.insert(f->modelType).second) << "listed twice: " << f->modelType;
    EXPECT_EQ(findFamily(f->modelType), f) << f->modelType;
    EXPECT_NE(std::string(f->displayName), "") << f->modelType;
    EXPECT_NE(f->readRest, nullptr) << f->modelType;
  }
  EXPECT_EQ(findFamily("bert"), nullptr);
  EXPECT_EQ(findFamily(""), nullptr);
}

// The keys every message and the shared checks name.
TEST(ModelFamilies, EverySizeHasAKey) {
  for (const Family* f : allFamilies()) {
    SCOPED_TRACE(f->modelType);
    for (SpecField field : {SpecField::DModel, SpecField::Heads, SpecField::Layers, SpecField::DFf, SpecField::Vocab,
                            SpecField::MaxPositions, SpecField::NormEps, SpecField::TiedEmbeddings}) {
      EXPECT_NE(f->key(field), nullptr) << "no key for field " << static_cast<int>(field);
    }
    if (f->positions == PositionKind::Rope) EXPECT_NE(f->key(SpecField::RopeTheta), nullptr);
    std::set<SpecField> fields;
    std::set<std::string> names;
    for (const ConfigKey& k : f->keys) {
      EXPECT_TRUE(fields.insert(k.field).second) << "field read twice, under " << k.key;
      EXPECT_TRUE(names.insert(k.key).second) << "key twice: " << k.key;
      // A default that refers to a field refers to one read before it.
      if (k.absent.kind == KeyDefault::Kind::SameAs || k.absent.kind == KeyDefault::Kind::Times) {
        EXPECT_TRUE(fields.count(k.absent.of)) << k.key << "'s default reads a field not read yet";
      }
    }
  }
}

// One tensor for every role the forward reads with the family's traits, and no role it would ignore.
TEST(ModelFamilies, TensorTableCoversTheForward) {
  for (const Family* f : allFamilies()) {
    SCOPED_TRACE(f->modelType);
    std::map<TensorRole, int> count;
    for (const TensorName& t : f->tensors) {
      ++count[t.role];
      const bool layered = std::string(t.name).find("{i}") != std::string::npos;
      EXPECT_EQ(layered, perLayer(t.role)) << t.name << ": a per-layer name has {i}, a model-wide one not";
      EXPECT_EQ(std::string(t.name).find("{e}") != std::string::npos, perExpert(t.role) && t.experts == ExpertStore::Named)
          << t.name << ": an expert's own name has {e}, a stack of every expert's not";
      EXPECT_EQ(t.need == Need::Untied, t.role == TensorRole::Unembedding) << t.name;
    }
    for (const auto& [role, n] : count) EXPECT_EQ(n, 1) << "role " << static_cast<int>(role) << " listed " << n << " times";
    auto has = [&](TensorRole r) { return count.count(r) > 0; };
    for (TensorRole r : {TensorRole::TokenEmbedding, TensorRole::FinalNorm, TensorRole::Unembedding,
                         TensorRole::Output}) {
      EXPECT_TRUE(has(r)) << "no tensor for role " << static_cast<int>(r);
    }
    // The MLP: dense, a mixture of experts, or both (a mixture family whose config may make some layers dense).
    const bool dense = has(TensorRole::MlpOut);
    EXPECT_TRUE(dense || f->mixture()) << "no MLP";
    // An expert's gate and up: apart, or one fused matrix (gpt-oss's).
    const bool fusedExperts = has(TensorRole::ExpertGateUpFused);
    EXPECT_NE(has(TensorRole::ExpertIn), fusedExperts || !f->mixture());
    EXPECT_EQ(f->mixture(), has(TensorRole::ExpertOut));
    EXPECT_EQ(has(TensorRole::ExpertUp), f->mixture() && f->gatedMlp() && !fusedExperts);
    if (fusedExperts) EXPECT_TRUE(f->mixture() && f->gatedMlp());
    if (has(TensorRole::ExpertGateUpBias)) EXPECT_TRUE(fusedExperts);
    // The block's norms: before each sublayer, after it, or both (BlockNorms).
    EXPECT_EQ(has(TensorRole::Norm1), f->normsBefore());
    EXPECT_EQ(has(TensorRole::Norm2), f->normsBefore());
    EXPECT_EQ(has(TensorRole::AttentionOutNorm), f->normsAfter());
    EXPECT_EQ(has(TensorRole::MlpOutNorm), f->normsAfter());
    // q, k, v: fused or apart, never both.
    const bool apart = has(TensorRole::Query) && has(TensorRole::Key) && has(TensorRole::Value);
    if (f->latentAttention()) {  // latent attention: its own projections, no W_k or W_v at all
      EXPECT_FALSE(has(TensorRole::Key) || has(TensorRole::Value) || has(TensorRole::QkvFused));
      for (TensorRole r : {TensorRole::Query, TensorRole::LatentQueryA, TensorRole::LatentQueryNorm, TensorRole::LatentQueryB,
                           TensorRole::LatentKvA, TensorRole::LatentKvNorm, TensorRole::LatentKvB}) {
        EXPECT_TRUE(has(r)) << "no tensor for latent role " << static_cast<int>(r);
      }
      EXPECT_EQ(f->tensor(TensorRole::Query)->need, Need::NoQLora) << "q_proj only when q_lora_rank is null";
      EXPECT_EQ(f->tensor(TensorRole::LatentQueryA)->need, Need::QLora);
    } else {
      EXPECT_NE(has(TensorRole::QkvFused), apart) << "q, k, v must be one fused tensor or three";
    }
    if (has(TensorRole::QkvFusedBias)) EXPECT_TRUE(has(TensorRole::QkvFused));
    EXPECT_EQ(has(TensorRole::PositionEmbedding), f->positions == PositionKind::Learned);
    // The MLP's input: gate and up apart or fused into one [gate | up], never both; a plain MLP has no up.
    const bool gated = f->gatedMlp();
    if (dense) EXPECT_NE(has(TensorRole::MlpIn), has(TensorRole::MlpGateUpFused)) << "the MLP's input must be one tensor";
    if (dense) EXPECT_EQ(has(TensorRole::MlpUp) || has(TensorRole::MlpGateUpFused), gated);
    if (has(TensorRole::MlpGateUpFused)) EXPECT_FALSE(has(TensorRole::MlpUp));
    // The q/k norm's gains exist exactly when the family norms q and k, per head (d_k) or over the whole
    // projection (h d_k and N d_k).
    const QkNormKind qk = f->qkNorm;
    EXPECT_EQ(has(TensorRole::QueryNorm), qk != QkNormKind::None);
    EXPECT_EQ(has(TensorRole::KeyNorm), qk != QkNormKind::None);
    if (qk != QkNormKind::None) {
      EXPECT_EQ(f->tensor(TensorRole::QueryNorm)->rows, qk == QkNormKind::PerHead ? Dim::HeadDim : Dim::Heads);
      EXPECT_EQ(f->tensor(TensorRole::KeyNorm)->rows, qk == QkNormKind::PerHead ? Dim::HeadDim : Dim::Kv);
    }
    // RMSNorm has no bias; LayerNorm's bias is read for every norm.
    for (TensorRole b : {TensorRole::Norm1Bias, TensorRole::Norm2Bias, TensorRole::FinalNormBias}) {
      EXPECT_EQ(has(b), f->norm == NormKind::LayerNorm) << "norm bias role " << static_cast<int>(b);
    }
  }
}

// Every family has a fixture folder (tests/fixtures/models, made by scripts/gen_model_fixtures.py); it
// opens, its table expands to distinct stored names, and every layer gives each weight the forward
// multiplies by in the shape y = x W + b needs.
TEST(ModelFamilies, EachHasAFixtureThatGivesEveryWeight) {
  const auto fixtures = fixtureFolders();
  for (const Family* f : allFamilies()) {
    SCOPED_TRACE(f->modelType);
    ASSERT_TRUE(fixtures.count(f->modelType)) << "no fixture folder under " << kModels << " for this family";
    auto m = ModelFolder::open(fixtures.at(f->modelType));
    ASSERT_TRUE(m.ok()) << m.error().message;
    const ModelSpec& s = m->spec();
    EXPECT_EQ(s.family, f);
    std::set<std::string> names;
    for (const TensorName& t : f->tensors) {
      for (int i = 0; i < (perLayer(t.role) ? s.layers : 1); ++i) {
        for (int e = 0; e < storedCopies(t, s); ++e) {  // a stack of every expert is one name
          EXPECT_TRUE(names.insert(tensorName(t, "", perLayer(t.role) ? i : -1, e)).second) << t.name << " layer " << i;
        }
      }
    }
    const Eigen::Index d = s.dModel, kv = static_cast<Eigen::Index>(s.kvHeads) * s.dk(), F = s.dFf,
                       hq = static_cast<Eigen::Index>(s.heads) * s.dk();
    for (int i = 0; i < s.layers; ++i) {
      auto lw = m->layer(i);
      ASSERT_TRUE(lw.ok()) << lw.error().message;
      EXPECT_EQ(lw->norm1.size(), f->normsBefore() ? d : 0);
      EXPECT_EQ(lw->norm2.size(), f->normsBefore() ? d : 0);
      EXPECT_EQ(lw->attentionOutNorm.size(), f->normsAfter() ? d : 0);
      EXPECT_EQ(lw->mlpOutNorm.size(), f->normsAfter() ? d : 0);
      EXPECT_EQ(lw->norm1Bias.size(), f->norm == NormKind::LayerNorm ? d : 0);
      if (f->latentAttention()) {  // its own projections, checked against the sizes by the attention itself
        ASSERT_TRUE(lw->latent) << "a latent layer reads its latent projections";
        EXPECT_FALSE(lw->attention) << "and has no W_q, W_k, W_v";
        EXPECT_TRUE(validateLatent(latentSizesOf(s), *lw->latent, 1).ok());
        EXPECT_EQ(lw->latent->wq.size() > 0, s.latent.qRank == 0);
      } else {
        ASSERT_TRUE(lw->attention);
        const MhaWeights& a = *lw->attention;
        EXPECT_TRUE(a.wq.rows() == d && a.wq.cols() == hq && a.wo.rows() == hq && a.wo.cols() == d);
        EXPECT_TRUE(a.wk.rows() == d && a.wk.cols() == kv && a.wv.rows() == d && a.wv.cols() == kv);
        EXPECT_TRUE(a.bq.size() == hq && a.bk.size() == kv && a.bv.size() == kv && a.bo.size() == d);
        EXPECT_EQ(a.hasBias, s.qkvBias || s.outputBias);
      }
      if (s.moe.mixtureAt(i)) {  // the router, and each expert read on its own
        const Eigen::Index E = s.moe.experts, Fe = s.moe.expertFf;
        EXPECT_TRUE(lw->router.rows() == d && lw->router.cols() == E);
        EXPECT_EQ(lw->mlpIn.size(), 0);
        for (int e = 0; e < E; ++e) {
          auto ew = m->expert(i, e);
          ASSERT_TRUE(ew.ok()) << ew.error().message;
          EXPECT_TRUE(ew->gate.rows() == d && ew->gate.cols() == Fe && ew->up.rows() == d && ew->up.cols() == Fe);
          EXPECT_TRUE(ew->down.rows() == Fe && ew->down.cols() == d);
          const bool biases = f->tensor(TensorRole::ExpertOutBias) != nullptr;  // gpt-oss's
          EXPECT_TRUE(ew->gateBias.size() == (biases ? Fe : 0) && ew->upBias.size() == (biases ? Fe : 0) &&
                      ew->downBias.size() == (biases ? d : 0));
        }
        EXPECT_EQ(lw->routerBias.size(), f->tensor(TensorRole::RouterBias) ? E : 0);
        EXPECT_EQ(lw->routerChoiceBias.size(), f->tensor(TensorRole::RouterChoiceBias) ? E : 0);
        EXPECT_EQ(lw->sharedIn.size(), d * s.moe.sharedFf) << "the shared experts' gate";
      } else {
        EXPECT_TRUE(lw->mlpIn.rows() == d && lw->mlpIn.cols() == F);
        EXPECT_TRUE(lw->mlpOut.rows() == F && lw->mlpOut.cols() == d);
        EXPECT_EQ(lw->mlpUp.size(), f->gatedMlp() ? d * F : 0);
        EXPECT_EQ(lw->router.size(), 0);
      }
      const Eigen::Index qNorm = f->qkNorm == QkNormKind::None ? 0 : f->qkNorm == QkNormKind::PerHead ? s.dk() : hq;
      const Eigen::Index kNorm = f->qkNorm == QkNormKind::None ? 0 : f->qkNorm == QkNormKind::PerHead ? s.dk() : kv;
      EXPECT_EQ(lw->qNorm.size(), qNorm);
      EXPECT_EQ(lw->kNorm.size(), kNorm);
    }
  }
}

// For every key of every family: an alias stands in for the absent key (and the key wins over it), a
// default fills an absent key as the table says, and a required key's absence is named.
TEST(ModelFamilies, AliasesAndDefaultsResolve) {
  const auto fixtures = fixtureFolders();
  for (const Family* f : allFamilies()) {
    ASSERT_TRUE(fixtures.count(f->modelType)) << f->modelType;
    const json base = fixtureConfig(fixtures.at(f->modelType));
    auto parse = [&](const json& j) { return parseModelConfig(j.dump(), "config.json"); };
    auto fixture = parse(base);
    ASSERT_TRUE(fixture.ok()) << fixture.error().message;
    for (const ConfigKey& k : f->keys) {
      SCOPED_TRACE(std::string(f->modelType) + " " + k.key);
      json j = base;
      j.erase(k.key);
      if (k.alias) j.erase(k.alias);
      // YaRN's factor is checked against max_position_embeddings / original_max_position_embeddings (gpt-oss's).
      if (k.field == SpecField::MaxPositions) j.erase("rope_scaling");
      auto absent = parse(j);
      switch (k.absent.kind) {
        case KeyDefault::Kind::Required:
          ASSERT_FALSE(absent.ok());
          EXPECT_NE(absent.error().message.find(std::string("missing key '") + k.key + "'"), std::string::npos)
              << absent.error().message;
          break;
        case KeyDefault::Kind::Value:
          ASSERT_TRUE(absent.ok()) << absent.error().message;
          EXPECT_EQ(fieldOf(*absent, k.field), k.absent.value);
          break;
        case KeyDefault::Kind::SameAs:
          ASSERT_TRUE(absent.ok()) << absent.error().message;
          EXPECT_EQ(fieldOf(*absent, k.field), fieldOf(*absent, k.absent.of));
          break;
        case KeyDefault::Kind::Times:
          ASSERT_TRUE(absent.ok()) << absent.error().message;
          EXPECT_EQ(fieldOf(*absent, k.field), k.absent.value * fieldOf(*absent, k.absent.of));
          break;
      }
      if (!k.alias) continue;
      const int value = static_cast<int>(fieldOf(*fixture, k.field));
      j[k.alias] = value;
      auto aliased = parse(j);
      ASSERT_TRUE(aliased.ok()) << aliased.error().message;
      EXPECT_EQ(fieldOf(*aliased, k.field), value) << "the alias " << k.alias << " is not read";
      j[k.key] = value;
      j[k.alias] = value + 1;
      auto both = parse(j);
      ASSERT_TRUE(both.ok()) << both.error().message;
      EXPECT_EQ(fieldOf(*both, k.field), value) << k.key << " must win over " << k.alias;
    }
  }
}

TEST(ModelFamilies, UnknownModelTypeIsRefusedWithTheKnownOnes) {
  auto r = parseModelConfig(R"({"model_type": "bert", "hidden_size": 8})", "dir/config.json");
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.error().message;
  EXPECT_NE(msg.find("dir/config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model_type 'bert' is not supported"), std::string::npos) << msg;
  for (const Family* f : allFamilies()) EXPECT_NE(msg.find(f->modelType), std::string::npos) << msg;
  auto none = parseModelConfig(R"({"n_embd": 8})", "config.json");
  ASSERT_FALSE(none.ok());
  for (const Family* f : allFamilies()) EXPECT_NE(none.error().message.find(f->modelType), std::string::npos);
}

// The Windows lesson's published local and global layers are the ones the family readers lay out from such a
// config.json (its layer count and window, no layer_types: the family's own default), layer by layer.
TEST(Families, PublishedLayerPatternsAreTheFamiliesDefaults) {
  const std::map<std::string, std::string> familyOf = {{"Mistral-7B", "mistral"},  {"Gemma-2-2B", "gemma2"},
                                                       {"Gemma-3-1B", "gemma3"},   {"Gemma-3-27B", "gemma3"},
                                                       {"gpt-oss-20b", "gpt_oss"}, {"gpt-oss-120b", "gpt_oss"}};
  for (const PublishedLayerPattern& p : publishedLayerPatterns()) {
    SCOPED_TRACE(p.name);
    ASSERT_TRUE(familyOf.count(p.name));
    json j = fixtureConfig(kModels + familyOf.at(p.name));
    j.erase("layer_types");
    j["num_hidden_layers"] = p.layers;
    j["sliding_window"] = p.window;
    if (p.globalEvery == 6) j["sliding_window_pattern"] = 6;
    auto spec = parseModelConfig(j.dump(), p.name);
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    ASSERT_EQ(spec->layers, p.layers);
    for (int l = 0; l < p.layers; ++l) {
      EXPECT_EQ(spec->layerKind(l).window, isGlobalLayer(p, l) ? 0 : p.window) << "layer " << l;
    }
  }
}

}  // namespace
}  // namespace mhascope::model

namespace mhascope::model {
namespace {

// DeepSeek's config keys: q_lora_rank null is one q_proj, rope_interleave false is rotate_half, YaRN with
// mscale_all_dim multiplies the scale by mscale² (yarn_get_mscale: 0.1 m ln(factor) + 1), the dense first layers
// and moe_layer_freq (V2), the shared experts' width, the multi-token-prediction layers left unread; a router the
// forward does not implement, or groups that cannot hold k experts, is refused naming the key and its value.
TEST(ModelFamilies, DeepSeekKeys) {
  const json v3 = fixtureConfig(kModels + "deepseek_v3"), v2 = fixtureConfig(kModels + "deepseek_v2");
  auto parse = [](const json& j) { return parseModelConfig(j.dump(), "config.json"); };
  auto base = parse(v3);
  ASSERT_TRUE(base.ok()) << base.error().message;
  EXPECT_EQ(base->latent.qRank, 16);
  EXPECT_EQ(base->headDim, 16) << "q and k meet in d_n + d_r";
  EXPECT_EQ(base->moe.sharedFf, 16) << "n_shared_experts 1 x moe_intermediate_size 16";
  EXPECT_FALSE(base->moe.mixtureAt(0));
  EXPECT_TRUE(base->moe.mixtureAt(1));
  EXPECT_EQ(base->moe.rule.groups, ExpertGroups::TopTwoSum);
  json half = v3;
  half["rope_interleave"] = false;
  EXPECT_FALSE(parse(half)->latent.interleaved);
  json yarn = v3;
  yarn["max_position_embeddings"] = 160;
  yarn["rope_scaling"] = {{"type", "yarn"}, {"factor", 40.0}, {"original_max_position_embeddings", 4},
                          {"beta_fast", 32}, {"beta_slow", 1}, {"mscale", 1.0}, {"mscale_all_dim", 1.0}};
  auto y = parse(yarn);
  ASSERT_TRUE(y.ok()) << y.error().message;
  const double m = 0.1 * std::log(40.0) + 1.0;
  EXPECT_NEAR(y->latent.scale, m * m / 4.0, 1e-12);
  EXPECT_NEAR(y->yarn.attentionFactor, 1.0, 1e-12) << "mscale / mscale_all_dim: both 1";
  EXPECT_EQ(latentSizesOf(*y).ropeInvFreq.size(), 4u) << "YaRN over the d_r = 8 rotary features";
  json mtp = v3;
  mtp["num_nextn_predict_layers"] = 1;
  EXPECT_EQ(parse(mtp)->storedExtraLayers, 1);

  auto v2spec = parse(v2);
  ASSERT_TRUE(v2spec.ok()) << v2spec.error().message;
  EXPECT_EQ(v2spec->latent.qRank, 0) << "q_lora_rank null: q_proj";
  EXPECT_EQ(v2spec->moe.rule.groups, ExpertGroups::BestScore);
  EXPECT_FALSE(v2spec->moe.rule.renormalise);
  json freq = v2;
  freq["first_k_dense_replace"] = 0;
  freq["moe_layer_freq"] = 2;
  auto f = parse(freq);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(f->moe.mixtureAt(0));
  EXPECT_FALSE(f->moe.mixtureAt(1));
  EXPECT_TRUE(f->moe.mixtureAt(2));
  json greedy = v2;
  greedy["topk_method"] = "greedy";
  EXPECT_EQ(parse(greedy)->moe.rule.groups, ExpertGroups::None);

  const auto with = [](json j, const json& patch) {
    j.merge_patch(patch);
    return j;
  };
  const struct {
    json config;
    const char* key;
    const char* value;
  } refused[] = {
      {with(v3, json{{"topk_method", "greedy"}}), "topk_method", "greedy"},
      {with(v3, json{{"scoring_func", "softmax"}}), "scoring_func", "softmax"},
      {with(v2, json{{"topk_method", "noaux_tc"}}), "topk_method", "noaux_tc"},
      {with(v3, json{{"n_group", 3}}), "n_group", "3"},
      {with(v3, json{{"topk_group", 1}, {"num_experts_per_tok", 3}}), "num_experts_per_tok", "3"},
      {with(v3, json{{"qk_rope_head_dim", 7}}), "qk_rope_head_dim", "7"},
      {with(v3, json{{"attention_bias", true}}), "attention_bias", "true"},
      {with(v2, json{{"norm_topk_prob", true}}), "norm_topk_prob", "true"},
  };
  for (const auto& c : refused) {
    auto r = parse(c.config);
    ASSERT_FALSE(r.ok()) << c.key;
    EXPECT_NE(r.error().message.find(c.key), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.value), std::string::npos) << r.error().message;
  }
}

// A stored multi-token-prediction layer (model.layers.{L}) is left unread; a layer past those is still unknown.
TEST(ModelFamilies, DeepSeekMultiTokenPredictionLayerIsLeftUnread) {
  const fs::path dir = fs::temp_directory_path() / "mhascope_deepseek_mtp";
  fs::remove_all(dir);
  fs::create_directories(dir);
  json cfg = fixtureConfig(kModels + "deepseek_v3");
  // The fixture's last layer stands in for the prediction layer: one layer fewer run.
  cfg["num_hidden_layers"] = 2;
  fs::copy_file(fs::path(kModels) / "deepseek_v3" / "model.safetensors", dir / "model.safetensors");
  {
    std::ofstream(dir / "config.json") << cfg.dump();
  }
  auto refused = ModelFolder::open(dir.string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("unknown tensor 'model.layers.2."), std::string::npos) << refused.error().message;
  cfg["num_nextn_predict_layers"] = 1;
  {
    std::ofstream(dir / "config.json") << cfg.dump();
  }
  auto opened = ModelFolder::open(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  bool said = false;  // info --model says it, in a sentence
  for (const FamilyNote& note : familyNotes(opened->spec())) said = said || note.text.find("left unread") != std::string::npos;
  EXPECT_TRUE(said);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope::model
