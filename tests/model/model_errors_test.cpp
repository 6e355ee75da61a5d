// A model folder that cannot be used gets one clear line naming the file and the value: missing
// folder or files, a bad or unsupported config, missing/extra tensors, wrong shapes, a missing
// shard or a tensor not where the index says, NaN in the weights, bad token ids.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "check_tensor.hpp"
#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "model/forward.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

namespace fs = std::filesystem;

// A private copy of a fixture folder, removed afterwards.
class FolderCopy {
 public:
  explicit FolderCopy(const std::string& fixture) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("mhascope_model_" + std::string(info->name()));
    fs::remove_all(dir_);
    fs::copy(kModels + fixture, dir_, fs::copy_options::recursive);
  }
  ~FolderCopy() { fs::remove_all(dir_); }
  std::string path(const std::string& file = "") const { return file.empty() ? dir_.string() : (dir_ / file).string(); }
  nlohmann::json config() const {
    std::ifstream in(path("config.json"));
    return nlohmann::json::parse(in);
  }
  void writeConfig(const nlohmann::json& j) const { write("config.json", j.dump(2)); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream out(path(file), std::ios::binary | std::ios::trunc);
    out << text;
  }
  TensorMap weights(const std::string& file = "model.safetensors") const {
    auto t = loadSafetensors(path(file));
    if (!t) throw std::runtime_error(t.error().message);
    return std::move(*t);
  }
  void writeWeights(const TensorMap& t, const std::string& file = "model.safetensors") const {
    if (auto s = saveSafetensors(path(file), t); !s) throw std::runtime_error(s.error().message);
  }

 private:
  fs::path dir_;
};

// One line, naming `what` and every word.
template <class T>
::testing::AssertionResult oneLine(const Result<T>& r, const std::string& what, std::initializer_list<std::string_view> words) {
  auto named = testing::errorNaming(r, what, words);
  if (!named) return named;
  if (r.error().message.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "more than one line: " << r.error().message;
  }
  return ::testing::AssertionSuccess() << r.error().message;
}

TEST(ModelFolderErrors, MissingFolderAndFiles) {
  EXPECT_TRUE(oneLine(ModelFolder::open("/nonexistent/model"), "/nonexistent/model", {"no such folder"}));
  FolderCopy noConfig("gpt2");
  fs::remove(noConfig.path("config.json"));
  EXPECT_TRUE(oneLine(ModelFolder::open(noConfig.path()), noConfig.path(), {"no config.json"}));
  FolderCopy noWeights("gpt2");
  fs::remove(noWeights.path("model.safetensors"));
  EXPECT_TRUE(oneLine(ModelFolder::open(noWeights.path()), noWeights.path(), {"no model.safetensors"}));
  // A file that is neither a folder nor a config.json.
  EXPECT_TRUE(oneLine(ModelFolder::open(noWeights.path("config.json") + "x"), "config.jsonx", {"no such folder"}));
}

TEST(ModelFolderErrors, BadConfig) {
  FolderCopy f("gpt2");
  const auto original = f.config();
  f.write("config.json", "{\"model_type\": \"gpt2\", ");
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"JSON"}));
  auto j = original;
  j["n_head"] = 5;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"32", "5", "divisible"}));
  j = original;
  j.erase("n_embd");
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"n_embd"}));
  j = original;
  j["n_embd"] = -32;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"n_embd", "-32"}));
  // Past the limit: the limit is said, not "must be positive" of a positive number.
  j = original;
  j["n_embd"] = 2147483648LL;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"n_embd", "from 1 to 2^30", "2147483648"}));
}

// A huge layer count is refused in one line before a name is made for every layer's tensors
// (a billion layers would otherwise exhaust memory), and 4 * n_embd is computed without overflow.
TEST(ModelFolderErrors, HugeLayerCountAndMlpWidth) {
  FolderCopy f("gpt2");
  auto j = f.config();
  j["n_layer"] = 1000000000;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"'n_layer'", "1000000000", "tensors"}));
  j = f.config();
  j["n_layer"] = 2;
  j["n_embd"] = 536870912;  // 4 * n_embd = 2^31 overflows an int
  j["n_head"] = 1;
  j.erase("n_inner");
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"'n_embd'", "536870912", "2147483648"}));
  FolderCopy llama("llama_gqa");
  auto k = llama.config();
  k["num_hidden_layers"] = 1000000000;
  llama.writeConfig(k);
  EXPECT_TRUE(
      oneLine(ModelFolder::open(llama.path()), llama.path("config.json"), {"'num_hidden_layers'", "1000000000"}));
}

TEST(ModelFolderErrors, UnknownModelType) {
  FolderCopy f("gpt2");
  auto j = f.config();
  j["model_type"] = "bert";
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"model_type 'bert'", "gpt2, llama"}));
}

TEST(ModelFolderErrors, UnsupportedKeys) {
  FolderCopy f("llama_gqa");
  const auto original = f.config();
  auto j = original;
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 4.0}};
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"rope_scaling", "dynamic", "not supported"}));
  j = original;
  j["hidden_act"] = "gelu";
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"hidden_act 'gelu'", "not supported"}));
  j = original;
  // head_dim other than d_model / h is read, and then the weights must have its shapes.
  j["head_dim"] = 16;
  f.writeConfig(j);
  auto wide = ModelFolder::open(f.path());
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message.find("q_proj"), std::string::npos) << wide.error().message;
  EXPECT_NE(wide.error().message.find("64"), std::string::npos) << wide.error().message;
  j = original;
  j["head_dim"] = 0;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"'head_dim' must be an integer from 1"}));
  j = original;
  j["num_key_value_heads"] = 3;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"num_key_value_heads (3)"}));
  FolderCopy g("gpt2");
  j = g.config();
  j["activation_function"] = "relu";
  g.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(g.path()), g.path("config.json"), {"activation_function 'relu'"}));
  FolderCopy q("qwen2");
  j = q.config();
  j["use_sliding_window"] = true;
  q.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(q.path()), q.path("config.json"), {"use_sliding_window"}));
}

// The newer families' keys: what a config can say that the forward does not implement is refused naming the key and
// its value; a per-layer list must fit the layers; absent lists take the published defaults.
TEST(ModelFolderErrors, NewerFamiliesRefuseWhatTheyDoNotImplement) {
  auto configOf = [](const std::string& folder) {
    std::ifstream in(kModels + folder + "/config.json");
    return nlohmann::json::parse(in);
  };
  auto parse = [](const nlohmann::json& j) { return parseModelConfig(j.dump(), "config.json"); };
  struct Refusal {
    const char* folder;
    const char* key;
    nlohmann::json value;
    std::initializer_list<std::string_view> words;
  };
  const Refusal refusals[] = {
      {"phi3", "rope_scaling", {{"type", "longrope"}, {"long_factor", {1.0}}}, {"rope_scaling", "longrope", "not supported"}},
      {"phi3", "partial_rotary_factor", 0.5, {"partial_rotary_factor 0.5", "not supported"}},
      {"smollm3", "no_rope_layers", {1, 1, 2, 0}, {"no_rope_layers[2] 2", "not supported"}},
      {"smollm3", "no_rope_layers", {1, 1}, {"'no_rope_layers' must be a list of at least 4 entries", "got 2"}},
      {"qwen3", "layer_types", {"full_attention", "chunked_attention", "full_attention"},
       {"layer_types[1] \"chunked_attention\"", "not supported"}},
      {"qwen3", "layer_types", {"full_attention"}, {"'layer_types' must be a list of 3 entries"}},
      {"olmo2", "rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}, {"rope_scaling", "linear", "not supported"}},
      {"gemma2", "hidden_activation", "gelu", {"hidden_activation 'gelu'", "not supported"}},
      {"gemma2", "attn_logit_softcapping", -1.0, {"'attn_logit_softcapping' must be a positive number, got -1"}},
      {"gemma3", "attn_logit_softcapping", 50.0, {"attn_logit_softcapping 50", "not supported"}},
      {"gemma3", "rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}, {"rope_scaling", "linear", "not supported"}},
      {"qwen3", "rope_parameters", {{"rope_type", "yarn"}, {"factor", 4.0}}, {"rope_parameters", "yarn", "not supported"}},
      {"llama_gqa", "rope_parameters", {{"rope_type", "default"}, {"rope_theta", 5.0}}, {"rope_theta 10000.0", "disagree"}},
      {"phi3", "rope_parameters", {{"rope_type", "longrope"}}, {"rope_parameters", "longrope", "not supported"}},
      {"mixtral", "num_experts_per_tok", 5, {"'num_experts_per_tok' (5) must be at most the 4 experts of 'num_local_experts'"}},
      {"mixtral", "num_experts_per_tok", 0, {"'num_experts_per_tok' must be an integer from 1", "got 0"}},
      {"mixtral", "num_local_experts", 0, {"'num_local_experts' must be an integer from 1", "got 0"}},
      {"mixtral", "hidden_act", "gelu", {"hidden_act 'gelu'", "not supported"}},
      {"qwen3_moe", "num_experts", -1, {"'num_experts' must be an integer from 0", "got -1"}},
      {"qwen3_moe", "num_experts_per_tok", 9, {"'num_experts_per_tok' (9) must be at most the 4 experts of 'num_experts'"}},
      {"qwen3_moe", "moe_intermediate_size", 0, {"'moe_intermediate_size' must be an integer from 1", "got 0"}},
      {"qwen3_moe", "decoder_sparse_step", 0, {"'decoder_sparse_step' must be an integer from 1", "got 0"}},
      {"qwen3_moe", "mlp_only_layers", {0, 2}, {"'mlp_only_layers'[1] must be a layer from 0 to 1, got 2"}},
      {"qwen3_moe", "mlp_only_layers", "all", {"'mlp_only_layers' must be a list of layer indices, got \"all\""}},
      {"qwen3_moe", "norm_topk_prob", "yes", {"'norm_topk_prob' must be true or false"}},
      {"gpt_oss", "quantization_config", {{"quant_method", "gptq"}}, {"quant_method \"gptq\"", "not supported"}},
      {"gpt_oss", "swiglu_limit", 0, {"'swiglu_limit' must be a positive number, got 0"}},
  };
  for (const Refusal& c : refusals) {
    SCOPED_TRACE(std::string(c.folder) + " " + c.key);
    auto j = configOf(c.folder);
    j[c.key] = c.value;
    EXPECT_TRUE(oneLine(parse(j), "config.json", c.words));
  }
  // rope_parameters' base is the base when the config has no rope_theta.
  auto smolBase = configOf("smollm3");
  smolBase.erase("rope_theta");
  smolBase["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 123456.0}};
  auto sb = parse(smolBase);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  EXPECT_EQ(sb->ropeTheta, 123456.0);
  // Defaults as the configuration classes derive them.
  auto qwen3 = configOf("qwen3");
  qwen3.erase("layer_types");
  qwen3["max_window_layers"] = 1;  // sliding from layer 1 on
  auto q = parse(qwen3);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->layerKind(0).window, 0);
  EXPECT_EQ(q->layerKind(1).window, 4);
  qwen3["use_sliding_window"] = false;  // the window counts only with use_sliding_window
  q = parse(qwen3);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->layerKind(2).window, 0);
  auto smol = configOf("smollm3");
  smol.erase("no_rope_layers");
  smol["no_rope_layer_interval"] = 2;  // layers 1 and 3 without positions
  auto sm = parse(smol);
  ASSERT_TRUE(sm.ok()) << sm.error().message;
  EXPECT_TRUE(sm->layerKind(0).rope && !sm->layerKind(1).rope && sm->layerKind(2).rope && !sm->layerKind(3).rope);
  auto gemma2 = configOf("gemma2");
  gemma2["attn_logit_softcapping"] = nullptr;  // null: no cap; absent: the published 50
  auto g = parse(gemma2);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->attnSoftcap, 0.0);
  gemma2.erase("attn_logit_softcapping");
  g = parse(gemma2);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->attnSoftcap, 50.0);
  // Qwen3-MoE's dense layers: those (i + 1) % decoder_sparse_step leaves over, and those mlp_only_layers lists.
  auto qmoe = configOf("qwen3_moe");
  qmoe["decoder_sparse_step"] = 2;
  auto qm = parse(qmoe);
  ASSERT_TRUE(qm.ok()) << qm.error().message;
  EXPECT_FALSE(qm->moe.mixtureAt(0));
  EXPECT_TRUE(qm->moe.mixtureAt(1));
  qmoe["decoder_sparse_step"] = 1;
  qmoe["mlp_only_layers"] = {1};
  qmoe["norm_topk_prob"] = false;
  qm = parse(qmoe);
  ASSERT_TRUE(qm.ok()) << qm.error().message;
  EXPECT_TRUE(qm->moe.mixtureAt(0));
  EXPECT_FALSE(qm->moe.mixtureAt(1));
  EXPECT_FALSE(qm->moe.rule.renormalise);
  qmoe["num_experts"] = 0;  // no experts: every layer dense
  qm = parse(qmoe);
  ASSERT_TRUE(qm.ok()) << qm.error().message;
  EXPECT_FALSE(qm->moe.mixtureAt(0));
  auto gemma3 = configOf("gemma3");
  gemma3["sliding_window_pattern"] = 2;  // local, global, local, ...
  auto g3 = parse(gemma3);
  ASSERT_TRUE(g3.ok()) << g3.error().message;
  EXPECT_EQ(g3->layerKind(0).window, 4);
  EXPECT_EQ(g3->layerKind(1).window, 0);
  EXPECT_EQ(g3->layerKind(0).ropeTheta, 10000.0);
  EXPECT_EQ(g3->layerKind(1).ropeTheta, 0.0);  // the global layers turn with rope_theta
}

TEST(ModelFolderErrors, MissingExtraAndMisshapenTensors) {
  FolderCopy f("llama_gqa");
  TensorMap w = f.weights();
  w.erase("model.layers.1.mlp.up_proj.weight");
  Tensor extra({2}, {});
  w["model.extra.weight"] = extra;
  f.writeWeights(w);
  // Every mismatch in the one message.
  auto r = ModelFolder::open(f.path());
  EXPECT_TRUE(oneLine(r, f.path(),
                      {"missing tensor 'model.layers.1.mlp.up_proj.weight'", "unknown tensor 'model.extra.weight'"}));
  // A transposed k_proj: (in, out) instead of nn.Linear's (out, in).
  auto fresh = loadSafetensors(kModels + "llama_gqa/model.safetensors");
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  TensorMap w2 = std::move(*fresh);
  Tensor& k = w2["model.layers.0.self_attn.k_proj.weight"];
  k.shape = {32, 16};
  f.writeWeights(w2);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path(),
                      {"'model.layers.0.self_attn.k_proj.weight' has shape [32, 16], the config needs [16, 32]"}));
}

TEST(ModelFolderErrors, ShardMissingOrMisplaced) {
  FolderCopy f("llama_sharded");
  fs::remove(f.path("model-00002-of-00002.safetensors"));
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), "model-00002-of-00002.safetensors",
                      {"no such file", "model.safetensors.index.json"}));
  FolderCopy g("llama_sharded");
  std::ifstream in(g.path("model.safetensors.index.json"));
  auto index = nlohmann::json::parse(in);
  in.close();
  index["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";  // it lives in shard 2
  g.write("model.safetensors.index.json", index.dump());
  EXPECT_TRUE(oneLine(ModelFolder::open(g.path()), "model-00001-of-00002.safetensors",
                      {"has no tensor 'model.norm.weight'", "index.json"}));
  index["weight_map"]["model.norm.weight"] = "../outside.safetensors";
  g.write("model.safetensors.index.json", index.dump());
  EXPECT_TRUE(oneLine(ModelFolder::open(g.path()), "model.safetensors.index.json", {"not a file name in the folder"}));
}

TEST(ModelFolderErrors, EmptyOrTruncatedWeightsFile) {
  FolderCopy f("gpt2");
  f.write("model.safetensors", "");
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("model.safetensors"), {}));
  f.write("model.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13));
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("model.safetensors"), {}));
}

// A weights file shortened or rewritten in place while the folder is open: the next read is an
// error naming the file, never a signal. The reads run in a child process (a memory-mapped read of
// a page past the new end would raise SIGBUS there, which the death test reports as a failure), and
// the file is cut at fixed points, so the outcome never depends on timing.
void shortenThenRead(const std::string& fixture, const std::string& file, double keep) {
  FolderCopy f(fixture);
  auto m = ModelFolder::open(f.path());
  if (!m) {
    std::fprintf(stderr, "open failed: %s\n", m.error().message.c_str());
    std::exit(3);
  }
  const auto size = fs::file_size(f.path(file));
  fs::resize_file(f.path(file), static_cast<std::uintmax_t>(static_cast<double>(size) * keep));
  auto r = runForward(*m, {1, 2, 3});
  if (r) std::exit(4);  // the cut must be noticed
  std::fprintf(stderr, "%s\n", r.error().message.c_str());
  std::exit(r.error().message.find(f.path(file)) != std::string::npos &&
                    r.error().message.find("changed while the model was open") != std::string::npos
                ? 0
                : 5);
}

TEST(ModelFolderErrorsDeathTest, WeightsShortenedWhileOpenAreAnErrorNotASignal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(shortenThenRead("gpt2", "model.safetensors", 0.5), ::testing::ExitedWithCode(0), "changed while the model was open");
  EXPECT_EXIT(shortenThenRead("gpt2_f16", "model.safetensors", 0.1), ::testing::ExitedWithCode(0), "now has");
  EXPECT_EXIT(shortenThenRead("llama_sharded", "model-00002-of-00002.safetensors", 0.0), ::testing::ExitedWithCode(0),
              "model-00002-of-00002.safetensors");
}

TEST(ModelFolderErrors, WeightsRewrittenInPlaceOrReplacedByRename) {
  FolderCopy f("gpt2");
  auto m = ModelFolder::open(f.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(runForward(*m, {1, 2, 3}).ok());
  // Replaced by rename (as every tool that saves safely does): the open file is still the old one.
  const TensorMap w = f.weights();
  f.writeWeights(w, "replacement.safetensors");
  fs::rename(f.path("replacement.safetensors"), f.path("model.safetensors"));
  auto again = runForward(*m, {1, 2, 3});
  EXPECT_TRUE(again.ok()) << again.error().message;
  // Rewritten in place, same size: the bytes are no longer what the folder checked.
  auto m2 = ModelFolder::open(f.path());
  ASSERT_TRUE(m2.ok()) << m2.error().message;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a modification time that differs
  {
    std::fstream io(f.path("model.safetensors"), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(-4, std::ios::end);
    io.write("\0\0\0\0", 4);
  }
  EXPECT_TRUE(oneLine(runForward(*m2, {1, 2, 3}), f.path("model.safetensors"), {"changed while the model was open", "written to"}));
}

// A folder with both model.safetensors and an index reads the single file, as Hugging Face's loader
// does, and says so.
TEST(ModelFolderErrors, SingleFileBeforeTheIndex) {
  FolderCopy f("llama_sharded");
  TensorMap all = f.weights("model-00001-of-00002.safetensors");
  for (auto& [name, t] : f.weights("model-00002-of-00002.safetensors")) all[name] = t;
  ASSERT_TRUE(all.count("model.norm.weight"));
  for (float& v : all["model.norm.weight"].data) v *= 2.0f;  // tells the two apart
  f.writeWeights(all, "model.safetensors");
  auto m = ModelFolder::open(f.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NE(m->store().note().find("index.json is not read"), std::string::npos) << m->store().note();
  const StoredTensor* t = m->store().find("model.norm.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->file, f.path("model.safetensors"));
  std::vector<float> got(static_cast<std::size_t>(t->numel));
  ASSERT_TRUE(m->store().read(*t, got.data()).ok());
  const auto& want = all["model.norm.weight"].data;
  EXPECT_EQ(got, std::vector<float>(want.begin(), want.end()));
  fs::remove(f.path("model.safetensors"));
  auto sharded = ModelFolder::open(f.path());
  ASSERT_TRUE(sharded.ok()) << sharded.error().message;
  EXPECT_TRUE(sharded->store().note().empty());
  EXPECT_EQ(sharded->store().find("model.norm.weight")->file, f.path("model-00002-of-00002.safetensors"));
}

// Real files carry tensors the forward does not use: GPT-2's mask buffers (the gpt2 fixture has
// them), and in a tied model an lm_head.weight beside the prefixed transformer.* names.
TEST(ModelFolderErrors, SkippedTensorsAreNotErrors) {
  FolderCopy f("gpt2_f16");
  TensorMap w = f.weights();
  w["lm_head.weight"] = w["transformer.wte.weight"];
  f.writeWeights(w);  // now F32, the same numbers
  auto m = ModelFolder::open(f.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto ids = loadNpy(kModels + "reference/gpt2_f16/s0_tokens.npy");
  auto ref = loadNpy(kModels + "reference/gpt2_f16/s0_logits.npy");
  ASSERT_TRUE(ids.ok() && ref.ok());
  std::vector<int> tokens(ids->data.begin(), ids->data.end());
  auto r = runForward(*m, tokens);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(testing::checkTensor("logits", r->logits.ptr(), ref->ptr(), ref->data.size(), 2e-5, 2e-4));
}

TEST(ModelFolderErrors, NanInWeightsNamedAtTheForward) {
  FolderCopy f("gpt2");
  TensorMap w = f.weights();
  w["h.1.mlp.c_fc.weight"].data[7] = std::numeric_limits<float>::quiet_NaN();
  f.writeWeights(w);
  auto m = ModelFolder::open(f.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(oneLine(runForward(*m, {1, 2, 3}), "h.1.mlp.c_fc.weight", {"1 NaN", "flat index 7"}));
}

// Finite weights that overflow float32 (×1e30): the forward says where, and a clean one says nothing.
TEST(ModelFolderErrors, OverflowIsSaidNotHidden) {
  FolderCopy f("gpt2");
  auto clean = ModelFolder::open(f.path());
  ASSERT_TRUE(clean.ok()) << clean.error().message;
  auto ok = runForward(*clean, {1, 2, 3});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->nonFinite.empty()) << ok->nonFinite;
  TensorMap w = f.weights();
  for (auto& [name, t] : w) {
    if (name.find("h.0.") != std::string::npos) {
      for (float& v : t.data) v *= 1e30f;
    }
  }
  f.writeWeights(w);
  auto m = ModelFolder::open(f.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto r = runForward(*m, {1, 2, 3});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->nonFinite.find("layer 0's attention output"), std::string::npos) << r->nonFinite;
  EXPECT_NE(r->nonFinite.find("NaN or ±Inf"), std::string::npos) << r->nonFinite;
}

TEST(ModelFolderErrors, BadTokens) {
  auto m = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(oneLine(runForward(*m, {}), "enter at least one token", {}));
  EXPECT_TRUE(oneLine(runForward(*m, {1, 100}), "token id 100", {"position 1", "vocabulary of 100"}));
  EXPECT_TRUE(oneLine(runForward(*m, std::vector<int>(33, 1)), "33 tokens", {"32 positions", "n_positions"}));
  ForwardOptions opt;
  opt.traceLayer = 2;
  EXPECT_TRUE(oneLine(runForward(*m, {1}, opt), "layer 2", {"2 layers"}));
  ForwardOptions tiny;
  tiny.memoryBudgetBytes = 1000;
  EXPECT_TRUE(oneLine(runForward(*m, {1, 2}, tiny), "memory budget", {"needs about"}));
}

}  // namespace
}  // namespace mhascope::model

namespace mhascope::model {
namespace {

// Spoils, with spoil(e), an expert e of layer 0 that a one-token forward of the folder does not choose (spoil says
// what the error must name, and the words after it), then checks that forward is unchanged and one whose tokens
// together choose every expert of layer 0 is refused naming what was spoiled.
void expectOnlyChosenExpertsRead(const FolderCopy& f, const std::function<std::pair<std::string, std::string>(int)>& spoil) {
  auto original = ModelFolder::open(f.path());
  ASSERT_TRUE(original.ok()) << original.error().message;
  const std::vector<int> one = {82};  // one token: k = 2 of the 4 experts in each layer
  auto r = runForward(*original, one);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const LayerRouting& l0 = r->routing[0];
  int unused = 0;
  while (unused == l0.expert(0, 0) || unused == l0.expert(0, 1)) ++unused;
  const auto [name, words] = spoil(unused);
  auto m = ModelFolder::open(f.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto fine = runForward(*m, one);
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_TRUE(testing::checkTensor("logits", fine->logits.ptr(), r->logits.ptr(), r->logits.data.size(), 0, 0));
  std::vector<int> many;
  for (int t = 0; t < 100; ++t) many.push_back(t);
  EXPECT_TRUE(oneLine(runForward(*m, many), name, {words}));
}

// A mixture layer reads only the experts its tokens go to: a NaN in an expert no token chose is never seen, and the
// same NaN in a chosen one is refused naming its tensor. Experts the config promises and the files lack are missing
// tensors; an expert count the files cannot hold is refused before a name is made for each.
TEST(ModelFolderErrors, MixtureReadsOnlyTheChosenExperts) {
  FolderCopy f("mixtral");
  expectOnlyChosenExpertsRead(f, [&f](int e) {
    TensorMap w = f.weights();
    const std::string name = "model.layers.0.block_sparse_moe.experts." + std::to_string(e) + ".w1.weight";
    w[name].data[3] = std::numeric_limits<float>::quiet_NaN();
    f.writeWeights(w);
    return std::pair<std::string, std::string>{name, "1 NaN"};
  });

  auto j = f.config();
  j["num_local_experts"] = 8;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path(), {"missing tensor 'model.layers.0.block_sparse_moe.experts.4.w1.weight'"}));
  j["num_local_experts"] = 100000;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path("config.json"), {"'num_local_experts' is 100000", "tensors"}));
}

// gpt-oss's experts sit in one MXFP4 tensor a layer and are dequantised one at a time, only those the tokens chose:
// a scale byte of 255 (not a number in MXFP4) in an expert no token chose is never read, and the same byte in a chosen
// one is refused naming the tensor. A pair whose shape is not the config's is refused by name.
TEST(ModelFolderErrors, StackedMxfp4ExpertsReadOnlyWhenChosen) {
  FolderCopy f("gpt_oss");
  auto opened = ModelFolder::open(f.path());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_EQ(opened->dtype(), "BF16+MXFP4");
  const std::string name = "model.layers.0.mlp.experts.gate_up_proj";
  const StoredTensor* scales = opened->store().find(name + "_scales");  // (E, 2F, G)
  ASSERT_NE(scales, nullptr);
  const std::uint64_t offset = scales->offset, perExpert = static_cast<std::uint64_t>(scales->numel / scales->shape[0]);
  expectOnlyChosenExpertsRead(f, [&](int e) {
    std::fstream file(f.path("model.safetensors"), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(offset + static_cast<std::uint64_t>(e) * perExpert));
    file.put(static_cast<char>(0xFF));  // expert e's first scale byte
    return std::pair<std::string, std::string>{"MXFP4 tensor '" + name + "'", "scale byte of 255"};
  });

  auto j = f.config();
  j["intermediate_size"] = 64;
  f.writeConfig(j);
  EXPECT_TRUE(oneLine(ModelFolder::open(f.path()), f.path(),
                      {"MXFP4 tensor 'model.layers.0.mlp.experts.gate_up_proj' holds [4, 64, 32], the config needs [4, 128, 32]"}));
}

}  // namespace
}  // namespace mhascope::model
