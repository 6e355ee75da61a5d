// A model folder's circuits around one head (core/model/circuits_source.hpp) against the plain
// formulas of scripts/gen_model_fixtures.py (float64 NumPy, every matrix explicit: QK and OV
// d_model x d_model, E OV U V x V with its full eigen solve, each composition product), on the gpt2
// and the GQA llama fixtures, heads wider than d_model / h (llama_wide) and latent attention (deepseek_v3);
// the baseline against its earlier d_model x d_model form; errors, cancel, the budget, the GQA head
// mapping, the token axes, the rollout's limit and the texts.
//
// Tolerance: the weights are the file's float32 numbers on both sides; mhascope forms the products
// in float32 (sums of d_model = 32 terms: relative error ~1e-6) where the reference uses float64,
// so matrices and scores are held to |got - ref| <= 1e-5 + 1e-4 |ref|. The copying scores and
// eigenvalues come from a d_k x d_k solve here and a V x V one there (whose V - d_k extra eigenvalues
// are zero up to ~1e-13): 1e-4. The rollout multiplies the forward's float32 attention, which
// matches the PyTorch forward to 2e-5 (model_forward_test): 1e-4.
#include "model/circuits_source.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/circuit_texts.hpp"
#include "attention/random.hpp"
#include "check_tensor.hpp"
#include "io/npy.hpp"
#include "model/families/family.hpp"
#include "model/forward.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

constexpr double kCircuitAtol = 1e-5, kCircuitRtol = 1e-4;

nlohmann::json loadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

Tensor loadRef(const std::string& base, const std::string& what) {
  auto t = loadNpy(base + "_" + what + ".npy");
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

::testing::AssertionResult matches(const std::string& name, const RowMatrix& got, const Tensor& ref,
                                   double atol = kCircuitAtol, double rtol = kCircuitRtol) {
  if (ref.shape.size() != 2 || got.rows() != ref.shape[0] || got.cols() != ref.shape[1]) {
    return ::testing::AssertionFailure() << name << ": shape (" << got.rows() << ", " << got.cols() << ") against the reference's";
  }
  return testing::checkTensor(name, got.data(), ref.data.data(), ref.data.size(), atol, rtol);
}

// Complex eigenvalues in one order: largest modulus first, conjugates by imaginary part.
std::vector<std::complex<double>> sortedEigenvalues(std::vector<std::complex<double>> v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    if (std::abs(std::abs(a) - std::abs(b)) > 1e-6) return std::abs(a) > std::abs(b);
    return a.imag() < b.imag();
  });
  return v;
}

void expectCompositions(const std::vector<analysis::Composition>& got, const nlohmann::json& ref, const char* what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(std::string(what) + " " + std::to_string(i));
    const auto& r = ref[i];
    EXPECT_EQ(got[i].fromLayer, r[0].get<int>());
    EXPECT_EQ(got[i].fromHead, r[1].get<int>());
    EXPECT_EQ(got[i].toLayer, r[2].get<int>());
    EXPECT_EQ(got[i].toHead, r[3].get<int>());
    EXPECT_NEAR(got[i].q, r[4].get<double>(), kCircuitAtol + kCircuitRtol * r[4].get<double>());
    EXPECT_NEAR(got[i].k, r[5].get<double>(), kCircuitAtol + kCircuitRtol * r[5].get<double>());
    EXPECT_NEAR(got[i].v, r[6].get<double>(), kCircuitAtol + kCircuitRtol * r[6].get<double>());
  }
}

struct CircuitCase {
  const char* folder;
  int layer, head;
};

class ModelCircuitsMatchReference : public ::testing::TestWithParam<CircuitCase> {};

TEST_P(ModelCircuitsMatchReference, EveryField) {
  const CircuitCase c = GetParam();
  const std::string base = kModels + "circuits/" + c.folder + "_l" + std::to_string(c.layer) + "_h" + std::to_string(c.head);
  const nlohmann::json ref = loadJson(base + ".json");
  auto model = ModelFolder::open(kModels + c.folder);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelSpec& s = model->spec();
  ModelCircuitsOptions opt;
  opt.layer = ref.at("layer").get<int>();
  opt.head = ref.at("head").get<int>();
  ASSERT_EQ(opt.layer, c.layer);
  ASSERT_EQ(opt.head, c.head);
  const auto tokens = ref.at("tokens").get<std::vector<int>>();
  auto r = computeModelCircuits(*model, tokens, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;

  EXPECT_EQ(r->layers, s.layers);
  EXPECT_EQ(r->heads, s.heads);
  EXPECT_EQ(r->kvHeads, s.kvHeads);
  EXPECT_EQ(r->dModel, s.dModel);
  EXPECT_EQ(r->dk, s.dk());
  EXPECT_EQ(r->vocab, s.vocab);
  EXPECT_EQ(r->layer, c.layer);
  EXPECT_EQ(r->head, c.head);

  EXPECT_TRUE(matches("QK", r->qk, loadRef(base, "qk")));
  EXPECT_TRUE(matches("OV", r->ov, loadRef(base, "ov")));
  EXPECT_EQ(r->tokenIds, ref.at("token_ids").get<std::vector<int>>());
  EXPECT_TRUE(matches("E_s QK E_s^T", r->qkTokens, loadRef(base, "qk_tokens")));
  EXPECT_TRUE(matches("E_s OV U_s", r->ovTokens, loadRef(base, "ov_tokens")));
  if (std::string(c.folder) == "gpt2") {  // learned positions: P_s QK P_sᵀ over the text's positions
    EXPECT_EQ(r->qkPositions.rows(), static_cast<Eigen::Index>(tokens.size()));
    EXPECT_TRUE(matches("P_s QK P_s^T", r->qkPositions, loadRef(base, "qk_positions")));
  } else {  // RoPE: no position table
    EXPECT_EQ(r->qkPositions.size(), 0);
  }

  const auto& eigRef = ref.at("eigenvalues");
  ASSERT_EQ(r->eigenvalues.size(), eigRef.size());
  const auto eig = sortedEigenvalues(r->eigenvalues);
  for (std::size_t i = 0; i < eig.size(); ++i) {
    EXPECT_NEAR(eig[i].real(), eigRef[i][0].get<double>(), 1e-4 * (1 + std::abs(eig[i]))) << "eigenvalue " << i;
    EXPECT_NEAR(eig[i].imag(), eigRef[i][1].get<double>(), 1e-4 * (1 + std::abs(eig[i]))) << "eigenvalue " << i;
  }
  const auto& copyRef = ref.at("copying");
  ASSERT_EQ(r->copying.size(), static_cast<std::size_t>(s.layers * s.heads));
  for (int l = 0; l < s.layers; ++l) {
    for (int h = 0; h < s.heads; ++h) {
      EXPECT_NEAR(r->copyingAt(l, h), copyRef[l][h].get<double>(), 1e-4) << "copying of layer " << l << " head " << h;
    }
  }
  expectCompositions(r->reads, ref.at("reads"), "reads");
  expectCompositions(r->readBy, ref.at("read_by"), "read_by");
  EXPECT_EQ(r->baseline, analysis::compositionBaseline(s.dModel, s.dk()));

  EXPECT_TRUE(r->rollout.why.empty()) << r->rollout.why;
  EXPECT_TRUE(matches("rollout", r->rollout.rolled, loadRef(base, "rollout"), 1e-4, 1e-4));
  EXPECT_TRUE(matches("last layer's mean", r->rollout.rawLast, loadRef(base, "last_mean"), 1e-4, 1e-4));
}

// The virtual heads (OV^a OV^b) of every pair through the head, and one pair named in full, against the
// reference's whole V x V spectrum of E OV^a OV^b U and its token-space matrix.
TEST_P(ModelCircuitsMatchReference, VirtualHeads) {
  const CircuitCase c = GetParam();
  const std::string base = kModels + "circuits/" + c.folder + "_l" + std::to_string(c.layer) + "_h" + std::to_string(c.head);
  const nlohmann::json ref = loadJson(base + ".json");
  auto model = ModelFolder::open(kModels + c.folder);
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.layer = c.layer;
  opt.head = c.head;
  opt.rolloutMaxTokens = 0;
  opt.baseline = 0.25;
  const auto pair = ref.at("virtual_pair").get<std::vector<int>>();
  ASSERT_EQ(pair.size(), 4u);
  opt.pair = analysis::HeadPair{pair[0], pair[1], pair[2], pair[3]};
  auto r = computeModelCircuits(*model, ref.at("tokens").get<std::vector<int>>(), opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto readsRef = ref.at("reads_virtual").get<std::vector<double>>();
  const auto readByRef = ref.at("read_by_virtual").get<std::vector<double>>();
  ASSERT_EQ(r->reads.size(), readsRef.size());
  ASSERT_EQ(r->readBy.size(), readByRef.size());
  for (std::size_t i = 0; i < readsRef.size(); ++i) EXPECT_NEAR(r->reads[i].virtualCopying, readsRef[i], 1e-4) << "reads " << i;
  for (std::size_t i = 0; i < readByRef.size(); ++i) EXPECT_NEAR(r->readBy[i].virtualCopying, readByRef[i], 1e-4) << "read_by " << i;
  ASSERT_TRUE(r->picked.has_value());
  const analysis::VirtualHead& v = *r->picked;
  EXPECT_EQ(v.fromLayer, pair[0]);
  EXPECT_EQ(v.toHead, pair[3]);
  EXPECT_EQ(v.eigenvalues.size(), static_cast<std::size_t>(model->spec().dk()));
  EXPECT_NEAR(v.copying, ref.at("virtual_copying").get<double>(), 1e-4);
  EXPECT_TRUE(matches("E_s OV^a OV^b U_s", v.ovTokens, loadRef(base, "virtual_ov_tokens")));
  EXPECT_DOUBLE_EQ(v.diagonalTop, ref.at("virtual_diagonal").get<double>());
  // The pair's own entry among the reads or readers gives the same score as the named pair.
  for (const auto* list : {&r->reads, &r->readBy})
    for (const analysis::Composition& p : *list)
      if (p.fromLayer == v.fromLayer && p.fromHead == v.fromHead && p.toLayer == v.toLayer && p.toHead == v.toHead)
        EXPECT_NEAR(p.virtualCopying, v.copying, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelCircuitsMatchReference,
                         ::testing::Values(CircuitCase{"gpt2", 1, 2}, CircuitCase{"gpt2", 0, 1},
                                           CircuitCase{"llama_gqa", 1, 3}, CircuitCase{"llama_gqa", 0, 1},
                                           CircuitCase{"llama_wide", 1, 3}, CircuitCase{"deepseek_v3", 1, 2},
                                           CircuitCase{"deepseek_v3", 2, 0}),
                         [](const auto& info) {
                           return std::string(info.param.folder) + "_l" + std::to_string(info.param.layer) + "_h" +
                                  std::to_string(info.param.head);
                         });

const std::vector<int> kTokens = {5, 17, 42, 17, 63, 8, 42, 91, 5, 30, 17, 77};

// The trained fixture (2 layers x 2 heads, attention only, trained on repeated runs of letters): every
// (layer-0, layer-1) pair's virtual head copies as the reference computes it (V x V, float64), through
// both computations, and the pair the reference's ablation names as its circuit (previous-token head →
// induction head) copies through the values, whatever each head alone scores.
TEST(ModelCircuits, TrainedFixturesVirtualHeadsAreTheReferences) {
  const nlohmann::json ref = loadJson(kModels + "reference/trained/reference.json");
  auto model = ModelFolder::open(kModels + "trained");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const auto& virt = ref.at("circuits").at("virtual");
  ASSERT_EQ(virt.size(), 4u);
  auto all = analysis::computeCircuits(FolderLayers(*model), 0.25);
  ASSERT_TRUE(all.ok()) << all.error().message;
  const auto a = ref.at("ablation").at("previous_token_head").get<std::vector<int>>();
  const auto b = ref.at("ablation").at("induction_head").get<std::vector<int>>();
  ModelCircuitsOptions opt;
  opt.layer = b[0];
  opt.head = b[1];
  opt.rolloutMaxTokens = 0;
  opt.baseline = 0.25;
  opt.pair = analysis::HeadPair{a[0], a[1], b[0], b[1]};
  auto one = computeModelCircuits(*model, ref.at("sequences").at("text").at("tokens").get<std::vector<int>>(), opt);
  ASSERT_TRUE(one.ok()) << one.error().message;
  for (const auto& v : virt) {
    const analysis::HeadPair p{v[0].get<int>(), v[1].get<int>(), v[2].get<int>(), v[3].get<int>()};
    SCOPED_TRACE(analysis::headName(p.fromLayer, p.fromHead) + " → " + analysis::headName(p.toLayer, p.toHead));
    const analysis::Composition* c = all->pair(p);
    ASSERT_NE(c, nullptr);
    EXPECT_NEAR(c->virtualCopying, v[4].get<double>(), 1e-5);
    for (const analysis::Composition& r : one->reads)
      if (analysis::HeadPair{r.fromLayer, r.fromHead, r.toLayer, r.toHead} == p) EXPECT_NEAR(r.virtualCopying, v[4].get<double>(), 1e-4);
  }
  ASSERT_TRUE(one->picked.has_value());
  const analysis::Composition* circuit = all->pair(*opt.pair);
  ASSERT_NE(circuit, nullptr);
  EXPECT_NEAR(one->picked->copying, circuit->virtualCopying, 1e-4);
  // This model's circuit runs through the induction head's keys (K-composition), not its values:
  // the chain's virtual head need not copy, and the line says its score with its sign, whatever it is.
  const std::string line = analysis::pickedVirtualText(*one);
  char score[16];
  std::snprintf(score, sizeof score, "%+.3f", one->picked->copying);
  EXPECT_NE(line.find(analysis::headName(a[0], a[1]) + " → " + analysis::headName(b[0], b[1]) + " through the values: copying " + score),
            std::string::npos) << line;
}

// Query head i reads K/V head i / (h/N): on the GQA fixture (h = 4, N = 2) heads 0 and 1 share
// W_k and W_v's first block, heads 2 and 3 the second, and norm1's gain scales their rows.
TEST(ModelCircuits, GqaQueryHeadsReadTheirGroupsKeysAndValues) {
  auto model = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelSpec& s = model->spec();
  ASSERT_EQ(s.heads, 4);
  ASSERT_EQ(s.kvHeads, 2);
  auto lw = model->layer(1);
  ASSERT_TRUE(lw.ok()) << lw.error().message;
  const int dk = s.dk();
  const Eigen::ArrayXf g = lw->norm1.transpose().array();
  for (int i = 0; i < s.heads; ++i) {
    SCOPED_TRACE("head " + std::to_string(i));
    ModelCircuitsOptions opt;
    opt.layer = 1;
    opt.head = i;
    opt.rolloutMaxTokens = 0;
    auto r = computeModelCircuits(*model, kTokens, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const int kv = i / 2;
    const RowMatrix a = (lw->attention->wq.middleCols(i * dk, dk).array().colwise() * g).matrix();
    const RowMatrix b = (lw->attention->wk.middleCols(kv * dk, dk).array().colwise() * g).matrix();
    const RowMatrix c = (lw->attention->wv.middleCols(kv * dk, dk).array().colwise() * g).matrix();
    const RowMatrix qk = a * b.transpose(), ov = c * lw->attention->wo.middleRows(i * dk, dk);
    EXPECT_TRUE(r->qk.isApprox(qk, 1e-5f));
    EXPECT_TRUE(r->ov.isApprox(ov, 1e-5f));
    // Not the other group's keys.
    const RowMatrix other = (lw->attention->wk.middleCols((1 - kv) * dk, dk).array().colwise() * g).matrix();
    EXPECT_FALSE(r->qk.isApprox(a * other.transpose(), 1e-2f));
  }
}

TEST(ModelCircuits, TokenAxesKeepTheFirstDistinctIds) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.layer = 1;
  opt.head = 2;
  auto all = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->tokenIds, (std::vector<int>{5, 17, 42, 63, 8, 91, 30, 77}));
  opt.maxTokens = 3;
  auto three = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(three.ok()) << three.error().message;
  EXPECT_EQ(three->tokenIds, (std::vector<int>{5, 17, 42}));
  EXPECT_TRUE(three->qkTokens.isApprox(all->qkTokens.topLeftCorner(3, 3)));
  EXPECT_TRUE(three->ovTokens.isApprox(all->ovTokens.topLeftCorner(3, 3)));
}

TEST(ModelCircuits, RolloutIsLeftOutAboveItsLimitAndTheSameOnAnyThreads) {
  auto model = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.layer = 1;
  opt.head = 0;
  auto one = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(one.ok()) << one.error().message;
  opt.threads = 2;
  auto two = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(one->qk, two->qk);
  EXPECT_EQ(one->copying, two->copying);
  for (std::size_t i = 0; i < one->reads.size(); ++i) EXPECT_EQ(one->reads[i].k, two->reads[i].k);
  EXPECT_EQ(one->rollout.rolled, two->rollout.rolled);

  opt.rolloutMaxTokens = 11;  // T = 12
  auto skipped = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(skipped.ok()) << skipped.error().message;
  EXPECT_EQ(skipped->rollout.rolled.size(), 0);
  EXPECT_EQ(skipped->rollout.rawLast.size(), 0);
  EXPECT_NE(skipped->rollout.why.find("11 tokens"), std::string::npos) << skipped->rollout.why;
  EXPECT_NE(skipped->rollout.why.find("12"), std::string::npos) << skipped->rollout.why;
  EXPECT_EQ(skipped->copying, one->copying);  // the rest is unchanged
}

TEST(ModelCircuits, AGivenBaselineIsKept) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.baseline = 0.5;
  int last = 0, calls = 0;
  opt.progress = [&](int done, int total) {
    last = total;
    ++calls;
    return true;
  };
  auto r = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->baseline, 0.5);
  EXPECT_EQ(last, 1 + 2 + 2);  // no baseline steps
  EXPECT_EQ(calls, last);
}

TEST(ModelCircuits, RefusesBadLayersHeadsAndTokens) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.layer = 2;
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "layer 2", {"2 layers", "0 .. 1", "n_layer"}));
  opt.layer = -1;
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "layer -1", {"2 layers"}));
  opt.layer = 0;
  opt.head = 4;
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "head 4", {"4 heads", "0 .. 3", "n_head"}));
  opt.head = 0;
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, {}, opt), "at least one token", {}));
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, {3, 100}, opt), "token id 100", {"position 1", "vocabulary of 100"}));
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, {-1}, opt), "token id -1", {"position 0"}));
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, std::vector<int>(33, 1), opt), "33 tokens",
                                   {"32 positions", "n_positions"}));
  opt.pair = analysis::HeadPair{0, 0, 2, 1};
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "layer 2 is outside", {"2 layers", "n_layer"}));
  opt.pair = analysis::HeadPair{0, 7, 1, 1};
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "head 7 is outside", {"4 heads", "n_head"}));
  opt.pair = analysis::HeadPair{1, 0, 1, 1};
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "earlier layer", {"layer 1 head 0"}));
  opt.pair.reset();
  opt.maxTokens = 0;
  EXPECT_TRUE(testing::errorNaming(computeModelCircuits(*model, kTokens, opt), "maxTokens is 0", {}));
}

TEST(ModelCircuits, RefusesAboveTheBudgetNamingBoth) {
  auto model = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  const double estimate = estimateModelCircuitsBytes(model->spec(), static_cast<std::int64_t>(kTokens.size()), opt);
  EXPECT_GT(estimate, 0.0);
  opt.memoryBudgetBytes = static_cast<std::uint64_t>(estimate) - 1;
  auto r = computeModelCircuits(*model, kTokens, opt);
  EXPECT_TRUE(testing::errorNaming(r, formatBytes(estimate), {"memory budget of " + formatBytes(static_cast<double>(opt.memoryBudgetBytes)), "layer 0 head 0"}));
  opt.memoryBudgetBytes = static_cast<std::uint64_t>(estimate) + 1;
  EXPECT_TRUE(computeModelCircuits(*model, kTokens, opt).ok());
  // The rollout's forward (T x T tables) counts only when it runs; the estimate grows with T.
  ModelCircuitsOptions noRollout = opt, longRollout = opt;
  noRollout.rolloutMaxTokens = 0;
  longRollout.rolloutMaxTokens = 4096;
  EXPECT_LT(estimateModelCircuitsBytes(model->spec(), 2000, noRollout),
            estimateModelCircuitsBytes(model->spec(), 2000, longRollout));
  EXPECT_LT(estimateModelCircuitsBytes(model->spec(), 1000, longRollout),
            estimateModelCircuitsBytes(model->spec(), 2000, longRollout));
}

TEST(ModelCircuits, ProgressCountsEveryStepAndCancels) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.layer = 1;
  std::vector<std::pair<int, int>> calls;
  opt.progress = [&](int done, int total) {
    calls.emplace_back(done, total);
    return true;
  };
  ASSERT_TRUE(computeModelCircuits(*model, kTokens, opt).ok());
  // One vocabulary block (V = 100), two layers, the baseline's chunks, the rollout's two layers.
  const int total = 1 + 2 + analysis::kBaselineChunks + 2;
  ASSERT_EQ(calls.size(), static_cast<std::size_t>(total));
  for (std::size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].first, static_cast<int>(i) + 1);
    EXPECT_EQ(calls[i].second, total);
  }
  for (int stopAt : {1, 3, 5, total - 1}) {  // U·E, a layer, the baseline, the rollout's forward
    SCOPED_TRACE("cancel at step " + std::to_string(stopAt));
    opt.progress = [&](int done, int) { return done < stopAt; };
    auto r = computeModelCircuits(*model, kTokens, opt);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, kForwardCancelled);
  }
}

TEST(ModelCircuits, TextsNameTheNumbers) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelCircuitsOptions opt;
  opt.layer = 1;
  opt.head = 2;
  auto r = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  char buf[64];
  for (char kind : {'Q', 'K', 'V'}) {
    SCOPED_TRACE(std::string(1, kind));
    const auto best = std::max_element(r->reads.begin(), r->reads.end(), [&](const auto& a, const auto& b) {
      return analysis::compositionScore(a, kind) < analysis::compositionScore(b, kind);
    });
    const std::string text = analysis::oneHeadCompositionText(*r, kind);
    std::snprintf(buf, sizeof buf, "reads %s most, %.3f against the random baseline %.3f",
                  analysis::headName(best->fromLayer, best->fromHead).c_str(), analysis::compositionScore(*best, kind), r->baseline);
    EXPECT_NE(text.find(buf), std::string::npos) << text;
    EXPECT_NE(text.find("layer 1 head 2"), std::string::npos) << text;
    EXPECT_NE(text.find("last layer"), std::string::npos) << text;
    EXPECT_NE(text.find(analysis::compositionMeaning(kind)), std::string::npos) << text;
  }
  const auto [lo, hi] = std::minmax_element(r->copying.begin(), r->copying.end());
  const int iHi = static_cast<int>(hi - r->copying.begin()), iLo = static_cast<int>(lo - r->copying.begin());
  const std::string copying = analysis::oneHeadCopyingText(*r);
  std::snprintf(buf, sizeof buf, "highest %s %.3f", analysis::headName(iHi / 4, iHi % 4).c_str(), *hi);
  EXPECT_NE(copying.find(buf), std::string::npos) << copying;
  std::snprintf(buf, sizeof buf, "lowest %s %.3f", analysis::headName(iLo / 4, iLo % 4).c_str(), *lo);
  EXPECT_NE(copying.find(buf), std::string::npos) << copying;
  std::snprintf(buf, sizeof buf, "layer 1 head 2 %.3f", r->copyingAt(1, 2));
  EXPECT_NE(copying.find(buf), std::string::npos) << copying;

  opt.layer = 0;  // the first layer reads nothing; the later one reads it
  auto first = computeModelCircuits(*model, kTokens, opt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::string text = analysis::oneHeadCompositionText(*first, 'K');
  EXPECT_NE(text.find("first layer"), std::string::npos) << text;
  const auto best = std::max_element(first->readBy.begin(), first->readBy.end(),
                                     [](const auto& a, const auto& b) { return a.k < b.k; });
  std::snprintf(buf, sizeof buf, "%s reads it most, %.3f", analysis::headName(best->toLayer, best->toHead).c_str(), best->k);
  EXPECT_NE(text.find(buf), std::string::npos) << text;
}

// A q/k norm's gains folded into W_q and W_k (per head: Qwen3, Gemma 3; over the whole projection: OLMo 2): the
// folded projection of the layer's input before its norm's gain, divided by the RMS the norm divides by, is the
// engine's q_normed (k_normed) stage, which equals the PyTorch reference (model_forward_test). A norm on the
// attention's output (OLMo 2, Gemma 3) has its gain in W_o's columns.
TEST(ModelCircuits, NormGainsAroundAttentionAreFoldedWhereTheyMultiply) {
  for (const char* folder : {"qwen3", "olmo2", "gemma3"}) {
    SCOPED_TRACE(folder);
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const ModelSpec& s = model->spec();
    const std::vector<int> ids = {3, 14, 15, 9, 26, 5, 35, 8};
    ForwardOptions fo;
    fo.traceLayer = 0;
    fo.keepAttention = fo.keepHidden = false;
    auto r = runForward(*model, ids, fo);
    ASSERT_TRUE(r.ok()) << r.error().message;
    auto raw = model->attentionLayer(0);
    ASSERT_TRUE(raw.ok()) << raw.error().message;
    auto folded = FolderLayers(*model).layer(0);
    ASSERT_TRUE(folded.ok()) << folded.error().message;
    const std::int64_t T = static_cast<std::int64_t>(ids.size()), d = s.dModel, dk = s.dk();
    const Tensor x = r->trace.copyOf(StageId::Query);  // (1, T, d): the normed input, gain included
    RowMatrix xhat = Eigen::Map<const RowMatrix>(x.ptr(), T, d);
    if (raw->norm1.size() > 0) xhat.array().rowwise() /= raw->norm1.array();
    const bool perHead = s.family->qkNorm == QkNormKind::PerHead;
    const auto check = [&](StageId proj, StageId normed, const RowMatrix& w, int heads, const char* what) {
      const Tensor p = r->trace.copyOf(proj), n = r->trace.copyOf(normed);  // (1, T, heads d_k), (1, heads, T, d_k)
      const RowMatrix qf = xhat * w;
      const std::int64_t width = heads * dk;
      ASSERT_EQ(p.data.size(), static_cast<std::size_t>(T * width)) << what;
      double worst = 0;
      for (std::int64_t t = 0; t < T; ++t) {
        for (int i = 0; i < heads; ++i) {
          const std::int64_t c0 = perHead ? i * dk : 0, cn = perHead ? dk : width;
          double ms = 0;
          for (std::int64_t c = c0; c < c0 + cn; ++c) ms += static_cast<double>(p.data[t * width + c]) * p.data[t * width + c];
          const double rms = std::sqrt(ms / static_cast<double>(cn) + s.normEps);
          for (std::int64_t c = 0; c < dk; ++c) {
            const double want = n.data[(static_cast<std::size_t>(i) * T + t) * dk + c];
            worst = std::max(worst, std::abs(qf(t, i * dk + c) / rms - want) / (1.0 + std::abs(want)));
          }
        }
      }
      EXPECT_LT(worst, 1e-4) << what;
    };
    check(StageId::QProj, StageId::QNormed, folded->wq, s.heads, "queries");
    check(StageId::KProj, StageId::KNormed, folded->wk, s.kvHeads, "keys");
    if (s.family->normsAfter()) {
      RowMatrix want = raw->attention->wo;
      want.array().rowwise() *= raw->attentionOutNorm.array();
      EXPECT_TRUE(want.isApprox(folded->wo, 1e-6f)) << "W_o with the output norm's gain";
    }
    const std::string note = circuitsFamilyNote(s);
    EXPECT_NE(note.find("q/k norm's gains are folded into W_q and W_k"), std::string::npos) << note;
    EXPECT_EQ(note.find("output's RMS") != std::string::npos, s.family->normsAfter()) << note;
  }
}

// Gemma's embeddings enter the residual stream times sqrt(d_model): the circuits' E is scaled the same, while U
// stays the table as stored (so a tied table is no longer read once for both); its score scale and softcap are said.
TEST(ModelCircuits, GemmasScaledEmbeddingAndItsScoresAreSaid) {
  auto model = ModelFolder::open(kModels + "gemma2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelSpec& s = model->spec();
  const FolderLayers source(*model);
  EXPECT_FALSE(source.tied());
  std::vector<float> e(static_cast<std::size_t>(s.dModel)), u(e.size());
  ASSERT_TRUE(source.embeddingRows(7, 1, e.data()).ok());
  ASSERT_TRUE(source.unembeddingRows(7, 1, u.data()).ok());
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(s.dModel)));
  for (std::size_t c = 0; c < e.size(); ++c) ASSERT_FLOAT_EQ(e[c], u[c] * scale) << c;
  const std::string note = circuitsFamilyNote(s);
  EXPECT_NE(note.find("softcap"), std::string::npos) << note;
  EXPECT_NE(note.find("query_pre_attn_scalar^-1/2"), std::string::npos) << note;
  EXPECT_NE(note.find("sqrt(d_model)"), std::string::npos) << note;
  auto gpt2 = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(gpt2.ok()) << gpt2.error().message;
  EXPECT_EQ(circuitsFamilyNote(gpt2->spec()), "");
}

}  // namespace
}  // namespace mhascope::model
