// The analysis of attention on its own and across its two sources: the low-rank composition against
// compose() of the full matrices, the baseline on the factors, and a trained model's parameters seen
// as a checkpoint (train::ParamsLayers) and written out as a GPT-2 model folder (model::FolderLayers)
// giving the same circuits — all pairs and around one head — through the one computation.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/circuit_texts.hpp"
#include "analysis/circuits.hpp"
#include "attention/random.hpp"
#include "io/file_io.hpp"
#include "io/safetensors.hpp"
#include "model/circuits_source.hpp"
#include "model/model_folder.hpp"
#include "train/circuits_source.hpp"
#include "train/params.hpp"
#include "util/decompositions.hpp"

using namespace mhascope;

namespace {

RowMatrix gaussian(int rows, int cols, SplitMix64& rng) {
  RowMatrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m;
}

// The low-rank identity gives compose()'s scores on the full matrices, for factors of several ranks
// (GQA and ordinary heads alike are rank d_k) and for a dead head.
TEST(Circuits, LowRankCompositionEqualsComposeOfTheFullMatrices) {
  SplitMix64 rng(7);
  for (const auto& [d, k1, k2, k3] : std::vector<std::array<int, 4>>{{24, 5, 5, 5}, {16, 1, 3, 8}, {12, 12, 2, 6}}) {
    SCOPED_TRACE("d " + std::to_string(d));
    const RowMatrix p1 = gaussian(d, k1, rng), q1 = gaussian(k1, d, rng), p2 = gaussian(d, k2, rng),
                    q2 = gaussian(k2, d, rng), p3 = gaussian(d, k3, rng), q3 = gaussian(k3, d, rng);
    const RowMatrix ovA = p1 * q1, qkB = p2 * q2, ovB = p3 * q3;  // (d, d)
    const analysis::Composition full = analysis::compose(ovA, qkB, ovB);
    const analysis::Composition low = analysis::composeLowRank(analysis::lowRank(p1.cast<double>(), q1.cast<double>()),
                                                         analysis::lowRank(p2.cast<double>(), q2.cast<double>()),
                                                         analysis::lowRank(p3.cast<double>(), q3.cast<double>()));
    EXPECT_NEAR(low.q, full.q, 1e-6);
    EXPECT_NEAR(low.k, full.k, 1e-6);
    EXPECT_NEAR(low.v, full.v, 1e-6);
    EXPECT_GT(low.q, 0.0);
    const analysis::Composition dead = analysis::composeLowRank(
        analysis::lowRank(RowMatrixD::Zero(d, k1), q1.cast<double>()), analysis::lowRank(p2.cast<double>(), q2.cast<double>()),
        analysis::lowRank(p3.cast<double>(), q3.cast<double>()));
    EXPECT_EQ(dead.q, 0.0);
    EXPECT_EQ(dead.k, 0.0);
    EXPECT_EQ(dead.v, 0.0);
  }
}

// The baseline on the factors is the value the d_model x d_model products gave (the same draws,
// in the same order), and the same on any number of threads.
TEST(Circuits, BaselineOnTheFactorsIsTheFullMatrixValue) {
  const int d = 20, dk = 4, samples = 12;
  SplitMix64 rng(analysis::kBaselineSeed);
  double sum = 0;
  auto draw = [&](int rows, int cols) { return gaussian(rows, cols, rng).cast<double>().eval(); };
  for (int s = 0; s < samples; ++s) {
    // Q before P within each product, as the factored version draws them.
    const RowMatrixD q1 = draw(d, dk).transpose(), p1 = draw(dk, d).transpose();
    const RowMatrixD q2 = draw(dk, d), p2 = draw(dk, d).transpose();
    const RowMatrixD q3 = draw(d, dk).transpose(), p3 = draw(dk, d).transpose();
    const RowMatrixD ovA = p1 * q1, qkB = p2 * q2, ovB = p3 * q3;
    const analysis::Composition c = analysis::compose(ovA.cast<float>(), qkB.cast<float>(), ovB.cast<float>());
    sum += c.q + c.k + c.v;
  }
  const double full = sum / (3.0 * samples);
  EXPECT_NEAR(analysis::compositionBaseline(d, dk, samples), full, 1e-6);
  EXPECT_EQ(analysis::compositionBaseline(d, dk, samples, analysis::kBaselineSeed, 2),
            analysis::compositionBaseline(d, dk, samples, analysis::kBaselineSeed, 1));
  // In chunks with a callback: the same value; false stops it.
  int chunks = 0;
  const auto counted = analysis::compositionBaseline(d, dk, samples, analysis::kBaselineSeed, 1, [&](int done, int total) {
    EXPECT_EQ(done, ++chunks);
    EXPECT_EQ(total, analysis::kBaselineChunks);
    return true;
  });
  ASSERT_TRUE(counted.has_value());
  EXPECT_EQ(*counted, analysis::compositionBaseline(d, dk, samples));
  EXPECT_EQ(chunks, analysis::kBaselineChunks);
  EXPECT_FALSE(analysis::compositionBaseline(d, dk, samples, analysis::kBaselineSeed, 1, [](int done, int) { return done < 3; }));
}

// ---- the two sources on the same weights

Tensor tensorOf(const RowMatrix& m, bool vector = false) {
  Tensor t(vector ? Shape{m.size()} : Shape{m.rows(), m.cols()}, {});
  std::copy(m.data(), m.data() + m.size(), t.ptr());
  return t;
}

// `p` as a GPT-2 folder: Conv1D stores y = x W + b as W (in, out), so c_attn is in_projᵀ and c_proj
// out_projᵀ; the unembedding is tied to wte (p.outW must equal p.emb); LayerNorm gains as p holds them.
std::string writeGpt2Folder(const train::GptParams& p, const std::string& name) {
  const std::string dir = ::testing::TempDir() + name;
  std::filesystem::create_directories(dir);
  const int d = p.cfg.dModel, V = p.cfg.vocab, T = p.cfg.seqLen;
  const std::string config = "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": " +
                             std::to_string(d) + ", \"n_head\": " + std::to_string(p.cfg.heads) + ", \"n_layer\": " +
                             std::to_string(p.cfg.layers) + ", \"n_positions\": " + std::to_string(T) +
                             ", \"vocab_size\": " + std::to_string(V) + ", \"layer_norm_epsilon\": 1e-05}\n";
  EXPECT_TRUE(writeFileAtomic(dir + "/config.json", config).ok());
  TensorMap t;
  t["wte.weight"] = tensorOf(p.emb);
  t["wpe.weight"] = tensorOf(p.pos.rows() > 0 ? p.pos : RowMatrix(RowMatrix::Zero(T, d)));
  t["ln_f.weight"] = tensorOf(p.lnfW, true);
  t["ln_f.bias"] = tensorOf(p.lnfB, true);
  for (int l = 0; l < p.cfg.layers; ++l) {
    const train::BlockParams& b = p.blocks[static_cast<std::size_t>(l)];
    const std::string h = "h." + std::to_string(l) + ".";
    t[h + "ln_1.weight"] = tensorOf(b.ln1w, true);
    t[h + "ln_1.bias"] = tensorOf(b.ln1b, true);
    t[h + "ln_2.weight"] = tensorOf(RowMatrix(RowMatrix::Ones(1, d)), true);
    t[h + "ln_2.bias"] = tensorOf(RowMatrix(RowMatrix::Zero(1, d)), true);
    t[h + "attn.c_attn.weight"] = tensorOf(RowMatrix(b.inW.transpose()));
    t[h + "attn.c_attn.bias"] = tensorOf(b.inB, true);
    t[h + "attn.c_proj.weight"] = tensorOf(RowMatrix(b.outW.transpose()));
    t[h + "attn.c_proj.bias"] = tensorOf(b.outB, true);
    t[h + "mlp.c_fc.weight"] = tensorOf(RowMatrix(RowMatrix::Zero(d, 4 * d)));
    t[h + "mlp.c_fc.bias"] = tensorOf(RowMatrix(RowMatrix::Zero(1, 4 * d)), true);
    t[h + "mlp.c_proj.weight"] = tensorOf(RowMatrix(RowMatrix::Zero(4 * d, d)));
    t[h + "mlp.c_proj.bias"] = tensorOf(RowMatrix(RowMatrix::Zero(1, d)), true);
  }
  EXPECT_TRUE(saveSafetensors(dir + "/model.safetensors", t).ok());
  return dir;
}

// A 3-layer, 2-head model of d_model 16 with LayerNorm gains of one (a checkpoint's circuits leave
// LayerNorm out; a folder's fold its gains in: with gains of one both read the same matrices) and
// the unembedding tied to the embedding, as GPT-2's is.
train::GptParams sharedWeights() {
  train::GptConfig cfg;
  cfg.vocab = 40;
  cfg.seqLen = 16;
  cfg.dModel = 16;
  cfg.heads = 2;
  cfg.layers = 3;
  train::GptParams p = train::initParams(cfg, 11);
  p.outW = p.emb;
  for (auto& b : p.blocks) b.ln1w.setOnes();
  p.lnfW.setOnes();
  return p;
}

double maxDiff(const RowMatrix& a, const RowMatrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e30;
  return static_cast<double>((a - b).cwiseAbs().maxCoeff());
}

TEST(CircuitsSources, ACheckpointAndTheSameWeightsAsAModelFolderGiveTheSameCircuits) {
  const train::GptParams p = sharedWeights();
  ASSERT_TRUE(train::checkCircuitsInput(p).ok());
  auto folder = model::ModelFolder::open(writeGpt2Folder(p, "mhascope_analysis_shared_gpt2"));
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  const train::ParamsLayers fromCheckpoint(p);
  const model::FolderLayers fromFolder(*folder);
  const analysis::SourceShape a = fromCheckpoint.shape(), b = fromFolder.shape();
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kvHeads, b.kvHeads);
  EXPECT_EQ(a.dModel, b.dModel);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_TRUE(fromFolder.tied());

  // All pairs: every matrix and score of one source is the other's.
  auto ck = analysis::computeCircuits(fromCheckpoint, 0.25);
  auto mf = analysis::computeCircuits(fromFolder, 0.25);
  ASSERT_TRUE(ck.ok() && mf.ok());
  ASSERT_EQ(ck->perHead.size(), mf->perHead.size());
  for (std::size_t i = 0; i < ck->perHead.size(); ++i) {
    SCOPED_TRACE("head " + std::to_string(i));
    EXPECT_LT(maxDiff(ck->perHead[i].qk, mf->perHead[i].qk), 1e-6);
    EXPECT_LT(maxDiff(ck->perHead[i].ov, mf->perHead[i].ov), 1e-6);
    EXPECT_LT(maxDiff(ck->perHead[i].ovTokens, mf->perHead[i].ovTokens), 1e-5);
    EXPECT_NEAR(ck->perHead[i].copying, mf->perHead[i].copying, 1e-9);
  }
  ASSERT_EQ(ck->pairs.size(), 12u);  // (L0→L1, L0→L2, L1→L2) x 2 x 2 heads
  ASSERT_EQ(mf->pairs.size(), ck->pairs.size());
  for (std::size_t i = 0; i < ck->pairs.size(); ++i) {
    EXPECT_NEAR(ck->pairs[i].q, mf->pairs[i].q, 1e-9);
    EXPECT_NEAR(ck->pairs[i].k, mf->pairs[i].k, 1e-9);
    EXPECT_NEAR(ck->pairs[i].v, mf->pairs[i].v, 1e-9);
  }
  EXPECT_EQ(analysis::compositionText(*ck, 'K'), analysis::compositionText(*mf, 'K'));

  // Around one head (the middle layer's head 1, which both reads and is read): both sources, and
  // both against the all-pairs numbers (the one-head path forms its products in float).
  analysis::OneHeadOptions opt;
  opt.layer = 1;
  opt.head = 1;
  opt.baseline = 0.25;
  const std::vector<int> tokens = {3, 7, 3, 9, 7, 3};
  auto oc = analysis::computeOneHeadCircuits(fromCheckpoint, tokens, opt);
  auto of = analysis::computeOneHeadCircuits(fromFolder, tokens, opt);
  ASSERT_TRUE(oc.ok() && of.ok());
  EXPECT_LT(maxDiff(oc->qk, of->qk), 1e-6);
  EXPECT_LT(maxDiff(oc->ovTokens, of->ovTokens), 1e-5);
  EXPECT_EQ(oc->tokenIds, (std::vector<int>{3, 7, 9}));
  const analysis::HeadCircuit& chosen = ck->at(1, 1);
  EXPECT_LT(maxDiff(oc->qk, chosen.qk), 1e-4);
  EXPECT_LT(maxDiff(oc->ov, chosen.ov), 1e-4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)  // E_s OV U_s is the all-pairs E OV U at the text's tokens
      EXPECT_NEAR(oc->ovTokens(i, j), chosen.ovTokens(oc->tokenIds[static_cast<std::size_t>(i)],
                                                      oc->tokenIds[static_cast<std::size_t>(j)]), 1e-4);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 2; ++h) {
      EXPECT_NEAR(oc->copyingAt(l, h), ck->at(l, h).copying, 1e-4);
      EXPECT_NEAR(of->copyingAt(l, h), oc->copyingAt(l, h), 1e-6);
    }
  ASSERT_EQ(oc->reads.size(), 2u);
  ASSERT_EQ(oc->readBy.size(), 2u);
  for (const auto* list : {&oc->reads, &oc->readBy})
    for (const analysis::Composition& c : *list) {
      const analysis::Composition* match = nullptr;
      for (const analysis::Composition& q : ck->pairs)
        if (q.fromLayer == c.fromLayer && q.fromHead == c.fromHead && q.toLayer == c.toLayer && q.toHead == c.toHead) match = &q;
      ASSERT_NE(match, nullptr);
      EXPECT_NEAR(c.q, match->q, 1e-5);
      EXPECT_NEAR(c.k, match->k, 1e-5);
      EXPECT_NEAR(c.v, match->v, 1e-5);
    }
  for (std::size_t i = 0; i < oc->reads.size(); ++i) {
    EXPECT_NEAR(oc->reads[i].k, of->reads[i].k, 1e-6);
    EXPECT_NEAR(oc->readBy[i].q, of->readBy[i].q, 1e-6);
  }
  EXPECT_EQ(analysis::oneHeadCompositionText(*oc, 'V'), analysis::oneHeadCompositionText(*of, 'V'));
}

// A folder's norm gains are folded into what the head reads: doubling layer 1's ln_1 gain doubles its
// heads' QK (both W_q and W_k read the normed stream: 2 · 2) and OV (W_v only: 2) — and the source
// that leaves LayerNorm out does not see it.
TEST(CircuitsSources, AFoldersNormGainsAreFoldedIn) {
  train::GptParams p = sharedWeights();
  const train::GptParams plain = p;
  p.blocks[1].ln1w.setConstant(2.0f);
  auto folder = model::ModelFolder::open(writeGpt2Folder(p, "mhascope_analysis_gain_gpt2"));
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  auto mf = analysis::computeCircuits(model::FolderLayers(*folder), 0.25);
  auto ck = analysis::computeCircuits(train::ParamsLayers(p), 0.25);
  auto base = analysis::computeCircuits(train::ParamsLayers(plain), 0.25);
  ASSERT_TRUE(mf.ok() && ck.ok() && base.ok());
  EXPECT_LT(maxDiff(mf->at(1, 0).qk, RowMatrix(4.0f * base->at(1, 0).qk)), 1e-5);
  EXPECT_LT(maxDiff(mf->at(1, 0).ov, RowMatrix(2.0f * base->at(1, 0).ov)), 1e-5);
  EXPECT_LT(maxDiff(ck->at(1, 0).qk, base->at(1, 0).qk), 1e-9);
  EXPECT_LT(maxDiff(mf->at(0, 1).qk, base->at(0, 1).qk), 1e-6);  // layer 0 untouched
}

// The virtual head of every pair, against the plain V x V computation in the test: the eigenvalues of
// E OV^a OV^b U (every one of them, the V - d_k near-zero ones included) give the score the d_k x d_k
// solve gives; so does its diagonal check. Both computations (all pairs, around one head) and both
// sources agree, and a picked pair's token-space OV is E OV^a OV^b U at the text's tokens.
TEST(Circuits, VirtualHeadCopyingIsTheFullVocabularySpectrum) {
  train::GptParams p = sharedWeights();
  p.outW = p.emb * 0.5f + RowMatrix::Constant(p.emb.rows(), p.emb.cols(), 0.01f);  // untied: E and U differ
  const train::ParamsLayers source(p);
  const analysis::SourceShape s = source.shape();
  const int V = s.vocab, d = s.dModel, dk = s.dk();
  RowMatrix e(V, d), u(V, d);
  ASSERT_TRUE(source.embeddingRows(0, V, e.data()).ok());
  ASSERT_TRUE(source.unembeddingRows(0, V, u.data()).ok());
  auto gain = source.finalGain();
  ASSERT_TRUE(gain.ok());
  u.array().rowwise() *= gain->array();
  const RowMatrixD E = e.cast<double>(), U = u.transpose().cast<double>();  // (V, d), (d, V)
  std::vector<RowMatrixD> ov;  // per head, W_v^i W_o^i (d, d)
  for (int l = 0; l < s.layers; ++l) {
    auto w = source.layer(l);
    ASSERT_TRUE(w.ok());
    for (int h = 0; h < s.heads; ++h)
      ov.push_back((w->wv.middleCols(h * dk, dk) * w->wo.middleRows(h * dk, dk)).cast<double>());
  }
  auto all = analysis::computeCircuits(source, 0.25);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->pairs.size(), 12u);
  ASSERT_EQ(all->virtualDiagonalTop.size(), all->pairs.size());
  int copiers = 0, lowerers = 0;
  for (std::size_t i = 0; i < all->pairs.size(); ++i) {
    const analysis::Composition& c = all->pairs[i];
    SCOPED_TRACE(analysis::headName(c.fromLayer, c.fromHead) + " → " + analysis::headName(c.toLayer, c.toHead));
    const RowMatrixD full = E * ov[static_cast<std::size_t>(c.fromLayer * s.heads + c.fromHead)] *
                            ov[static_cast<std::size_t>(c.toLayer * s.heads + c.toHead)] * U;  // (V, V)
    const double direct = analysis::copyingScore(eigenvalues(full));
    EXPECT_NEAR(c.virtualCopying, direct, 1e-6);
    EXPECT_NEAR(all->virtualDiagonalTop[i], analysis::diagonalTopShare(full.cast<float>()), 1e-12);
    ASSERT_EQ(all->virtualOvTokens.size(), all->pairs.size());
    EXPECT_LT((all->virtualOvTokens[i].cast<double>() - full).cwiseAbs().maxCoeff(), 1e-5 * (1 + full.cwiseAbs().maxCoeff()));
    copiers += c.virtualCopying > 0 ? 1 : 0;
    lowerers += c.virtualCopying < 0 ? 1 : 0;
  }
  EXPECT_GT(copiers + lowerers, 0);

  // Around layer 1 head 1, with the pair layer 0 head 1 → layer 2 head 0 picked (neither is the chosen head).
  analysis::OneHeadOptions opt;
  opt.layer = 1;
  opt.head = 1;
  opt.baseline = 0.25;
  opt.pair = analysis::HeadPair{0, 1, 2, 0};
  const std::vector<int> tokens = {3, 7, 3, 9, 7, 3};
  auto one = analysis::computeOneHeadCircuits(source, tokens, opt);
  ASSERT_TRUE(one.ok());
  for (const auto* list : {&one->reads, &one->readBy})
    for (const analysis::Composition& c : *list) {
      SCOPED_TRACE(analysis::headName(c.fromLayer, c.fromHead) + " → " + analysis::headName(c.toLayer, c.toHead));
      const analysis::Composition* match = all->pair({c.fromLayer, c.fromHead, c.toLayer, c.toHead});
      ASSERT_NE(match, nullptr);
      EXPECT_NEAR(c.virtualCopying, match->virtualCopying, 1e-4);
    }
  ASSERT_TRUE(one->picked.has_value());
  const analysis::VirtualHead& v = *one->picked;
  EXPECT_EQ(v.fromLayer, 0);
  EXPECT_EQ(v.toHead, 0);
  EXPECT_EQ(v.eigenvalues.size(), static_cast<std::size_t>(dk));
  EXPECT_NEAR(v.copying, all->pair({0, 1, 2, 0})->virtualCopying, 1e-4);
  const RowMatrixD full = E * ov[1] * ov[4] * U;
  ASSERT_EQ(v.ovTokens.rows(), 3);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(v.ovTokens(i, j), full(one->tokenIds[static_cast<std::size_t>(i)], one->tokenIds[static_cast<std::size_t>(j)]),
                  1e-4 * (1 + std::abs(full(0, 0))));
  EXPECT_EQ(v.diagonalTop, analysis::diagonalTopShare(v.ovTokens));
}

// A pair is checked with words naming the bad value and the limit.
TEST(Circuits, CheckPairNamesTheBadValue) {
  EXPECT_EQ(analysis::checkPair({0, 1, 1, 1}, 2, 2), "");
  EXPECT_EQ(analysis::checkPair({0, 0, 2, 0}, 2, 2), "layer 2 is outside the model's 2 layers (0 .. 1)");
  EXPECT_EQ(analysis::checkPair({0, 5, 1, 0}, 2, 2), "head 5 is outside the model's 2 heads per layer (0 .. 1)");
  EXPECT_NE(analysis::checkPair({1, 0, 1, 1}, 2, 2).find("earlier layer"), std::string::npos);
  EXPECT_NE(analysis::checkPair({-1, 0, 1, 1}, 2, 2).find("layer -1"), std::string::npos);
}

}  // namespace
