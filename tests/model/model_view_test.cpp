// The model view (core/model/model_view.hpp) of fixture folders: every head's scores equal the
// shared definitions applied to the attention a forward with keepAttention records, copying equals
// its definition computed directly (and is measured only where the rule needs it above the cost), thumbnails keep
// each block's largest weight, predictions and the lens match predictions.hpp, progress counts the
// layers then the lens, cancel and the memory budget stop it, and the repeated-random probe is
// pinned.
#include "model/model_view.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/head_roles.hpp"
#include "io/npy.hpp"
#include "model_fixtures.hpp"

namespace mhascope::model {
namespace {

// Repeats so prefix matching has queries; T = 13 is not a multiple of the thumbnail's blocks.
const std::vector<int> kIds = {5, 7, 9, 11, 5, 7, 9, 2, 5, 7, 40, 41, 9};

TEST(ModelView, EqualsTheScoresOfTheRecordedAttention) {
  for (const char* folder : {"gpt2", "llama_gqa", "mistral"}) {
    SCOPED_TRACE(folder);
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ModelViewOptions opt;
    opt.thumbnail = 4;  // T = 13 → blocks of 4 × 4, 4 × 4 entries (the last block 1 wide)
    opt.top = 3;
    auto view = computeModelView(*model, kIds, {}, opt);
    ASSERT_TRUE(view.ok()) << view.error().message;
    const ModelSpec& s = model->spec();
    ASSERT_EQ(view->layers, s.layers);
    ASSERT_EQ(view->heads, s.heads);
    EXPECT_EQ(view->kvHeads, s.kvHeads);
    ASSERT_EQ(view->headViews.size(), static_cast<std::size_t>(s.layers * s.heads));
    EXPECT_EQ(view->labels.front(), "5");

    auto fr = runForward(*model, kIds);  // keepAttention: L × (h, T, T)
    ASSERT_TRUE(fr.ok()) << fr.error().message;
    const int T = static_cast<int>(kIds.size());
    const TokenRepeats repeats(kIds.data(), T);
    for (int l = 0; l < s.layers; ++l) {
      for (int i = 0; i < s.heads; ++i) {
        SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(i));
        const float* a = fr->attention[static_cast<std::size_t>(l)].ptr() + static_cast<std::int64_t>(i) * T * T;
        const HeadScores want = headScores(a, repeats);
        const HeadView& hv = view->head(l, i);
        EXPECT_DOUBLE_EQ(hv.scores.prevToken, want.prevToken);
        EXPECT_DOUBLE_EQ(hv.scores.sink, want.sink);
        EXPECT_DOUBLE_EQ(hv.scores.self, want.self);
        EXPECT_DOUBLE_EQ(hv.scores.entropy, want.entropy);
        EXPECT_DOUBLE_EQ(hv.scores.induction, want.induction);
        EXPECT_EQ(hv.scores.inductionQueries, want.inductionQueries);
        EXPECT_GT(hv.scores.inductionQueries, 0);
        // Thumbnail: each entry is the largest weight of its 4 × 4 block.
        ASSERT_EQ(hv.thumbRows, 4);
        ASSERT_EQ(hv.thumbCols, 4);
        for (int br = 0; br < 4; ++br) {
          for (int bc = 0; bc < 4; ++bc) {
            float mx = 0;
            for (int r = br * 4; r < std::min(T, br * 4 + 4); ++r) {
              for (int c = bc * 4; c < std::min(T, bc * 4 + 4); ++c) mx = std::max(mx, a[r * T + c]);
            }
            EXPECT_FLOAT_EQ(hv.thumbnail[static_cast<std::size_t>(br * 4 + bc)], mx) << "block " << br << ", " << bc;
          }
        }
      }
    }
    const auto predictions = predictNext(fr->logits, 3);
    ASSERT_EQ(view->predictions.size(), predictions.size());
    for (std::size_t t = 0; t < predictions.size(); ++t) {
      ASSERT_EQ(view->predictions[t].size(), 3u);
      for (std::size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(view->predictions[t][k].id, predictions[t][k].id);
        EXPECT_DOUBLE_EQ(view->predictions[t][k].probability, predictions[t][k].probability);
      }
    }
    auto lens = logitLens(*model, *fr);
    ASSERT_TRUE(lens.ok()) << lens.error().message;
    ASSERT_EQ(view->lens.cells.size(), lens->cells.size());
    for (std::size_t c = 0; c < lens->cells.size(); ++c) {
      EXPECT_EQ(view->lens.cells[c].top.id, lens->cells[c].top.id);
      EXPECT_DOUBLE_EQ(view->lens.cells[c].finalTopProbability, lens->cells[c].finalTopProbability);
    }
  }
}

// Copying by its definition, with nothing of the model view's: query t counts when an earlier j
// with j + 1 < t holds its token; k* the first maximum of its weights row; the head's term
// head_outputs[t] · W_o^i of the traced layer, centred (LayerNorm) and scaled by the final norm's
// gain, times the whole unembedding read at once; copied when the top logit (the first maximum) is
// x_{k*}. The head terms plus b_o are checked to be the layer's recorded output first, so W_o^i
// is the head's own slice.
double directCopying(const ModelFolder& m, const std::vector<int>& ids, int layer, int head) {
  const ModelSpec& s = m.spec();
  const int T = static_cast<int>(ids.size()), d = s.dModel, dk = s.dk(), V = s.vocab;
  ForwardOptions fo;
  fo.traceLayer = layer;
  auto fr = runForward(m, ids, fo);
  EXPECT_TRUE(fr.ok()) << fr.error().message;
  const Tensor& ho = fr->trace.tensor(StageId::HeadOutputs);  // (1, h, T, d_k)
  const Tensor& w = fr->trace.tensor(StageId::Weights);       // (1, h, T, T)
  const Tensor& out = fr->trace.tensor(StageId::Output);      // (1, T, d_model)
  auto lw = m.layer(layer);
  EXPECT_TRUE(lw.ok());
  const RowMatrix& wo = lw->attention->wo;  // (d_model, d_model)
  RowMatrix sum = RowMatrix::Zero(T, d);
  for (int i = 0; i < s.heads; ++i) {
    sum.noalias() += ConstMatrixMap(ho.ptr() + static_cast<std::int64_t>(i) * T * dk, T, dk) * wo.middleRows(i * dk, dk);
  }
  sum.rowwise() += lw->attention->bo;
  const ConstMatrixMap recorded(out.ptr(), T, d);
  EXPECT_LT((sum - recorded).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, recorded.cwiseAbs().maxCoeff()));
  RowVector gain, bias;
  EXPECT_TRUE(m.finalNorm(gain, bias).ok());
  RowMatrix E(V, d);
  EXPECT_TRUE(m.store().readRows(m.unembeddingTable(), 0, V, E.data()).ok());
  int counted = 0, copied = 0;
  for (int t = 0; t < T; ++t) {
    bool repeat = false;
    for (int j = 0; j + 1 < t; ++j) repeat = repeat || ids[j] == ids[t];
    if (!repeat) continue;
    ++counted;
    const float* row = w.ptr() + (static_cast<std::int64_t>(head) * T + t) * T;
    int attended = 0;
    for (int k = 1; k <= t; ++k) {
      if (row[k] > row[attended]) attended = k;
    }
    RowMatrix direct = ConstMatrixMap(ho.ptr() + (static_cast<std::int64_t>(head) * T + t) * dk, 1, dk) * wo.middleRows(head * dk, dk);
    if (s.family->norm == NormKind::LayerNorm) direct.array() -= direct.mean();
    direct.array() *= gain.array();
    const RowMatrix logits = direct * E.transpose();  // (1, V)
    int top = 0;
    for (int v = 1; v < V; ++v) {
      if (logits(0, v) > logits(0, top)) top = v;
    }
    copied += top == ids[static_cast<std::size_t>(attended)] ? 1 : 0;
  }
  EXPECT_GT(counted, 0);
  return static_cast<double>(copied) / counted;
}

TEST(ModelView, CopyingIsItsDefinitionComputedDirectly) {
  for (const char* folder : {"gpt2", "llama_gqa"}) {  // LayerNorm (centre, gain); RMSNorm (gain), 2 K/V heads
    SCOPED_TRACE(folder);
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    // Random weights copy about 1 query in V: several probes, so some head copies somewhere.
    std::vector<double> seen;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const std::vector<int> ids = seed == 1 ? kIds : repeatedRandomTokens(vocabularyPool(model->spec().vocab), 12, 2, seed);
      auto view = computeModelView(*model, ids, {}, {});
      ASSERT_TRUE(view.ok()) << view.error().message;
      EXPECT_TRUE(view->copyingEveryHead) << "a fixture's copying is cheap: measured for every head";
      for (int l = 0; l < view->layers; ++l) {
        for (int i = 0; i < view->heads; ++i) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " layer " + std::to_string(l) + " head " + std::to_string(i));
          const HeadScores& hs = view->head(l, i).scores;
          ASSERT_TRUE(hs.copying.has_value());
          EXPECT_DOUBLE_EQ(*hs.copying, directCopying(*model, ids, l, i));
          seen.push_back(*hs.copying);
        }
      }
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_LT(seen.front(), seen.back()) << "every head the same copying: the test could not tell heads apart";
  }
}

// Above the cost bound copying is measured only where the induction rule needs it: never in layer 0,
// never where prefix matching is below the threshold; what is measured is the same number.
TEST(ModelView, CopyingOnlyWhereTheRuleNeedsItAboveTheCost) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelViewOptions gated;
  gated.copyingEveryHeadFlops = 0;
  auto all = computeModelView(*model, kIds, {}, {});
  auto some = computeModelView(*model, kIds, {}, gated);
  ASSERT_TRUE(all.ok() && some.ok());
  EXPECT_FALSE(some->copyingEveryHead);
  for (int l = 0; l < some->layers; ++l) {
    for (int i = 0; i < some->heads; ++i) {
      const HeadScores& hs = some->head(l, i).scores;
      const bool needed = inductionNeedsCopying(l, hs.inductionQueries > 0 ? std::optional<double>(hs.induction) : std::nullopt);
      EXPECT_EQ(hs.copying.has_value(), needed) << "layer " << l << " head " << i;
      if (needed) EXPECT_EQ(hs.copying, all->head(l, i).scores.copying);
    }
  }
  EXPECT_FALSE(some->head(0, 0).scores.copying.has_value());
}

TEST(ModelView, TheSameOnAnyNumberOfThreads) {
  auto model = ModelFolder::open(kModels + "qwen2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelViewOptions one, two;
  two.threads = 2;
  auto a = computeModelView(*model, kIds, {}, one);
  auto b = computeModelView(*model, kIds, {}, two);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->headViews.size(), b->headViews.size());
  for (std::size_t i = 0; i < a->headViews.size(); ++i) {
    EXPECT_EQ(a->headViews[i].scores.prevToken, b->headViews[i].scores.prevToken);
    EXPECT_EQ(a->headViews[i].scores.induction, b->headViews[i].scores.induction);
    EXPECT_EQ(a->headViews[i].scores.entropy, b->headViews[i].scores.entropy);
    EXPECT_EQ(a->headViews[i].scores.copying, b->headViews[i].scores.copying);
    EXPECT_EQ(a->headViews[i].thumbnail, b->headViews[i].thumbnail);
  }
}

TEST(ModelView, ATextWithoutRepeatsHasNoInductionQueries) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto view = computeModelView(*model, {1, 2, 3, 4}, {"a", "b", "c", "d"}, {});
  ASSERT_TRUE(view.ok()) << view.error().message;
  EXPECT_EQ(view->labels[2], "c");
  for (const HeadView& hv : view->headViews) {
    EXPECT_EQ(hv.scores.inductionQueries, 0);
    EXPECT_EQ(hv.thumbRows, 4);  // T below the thumbnail size: one entry per weight
  }
}

TEST(ModelView, ProgressCountsTheLayersThenTheLensAndCancels) {
  auto model = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const int L = model->spec().layers;
  ModelViewOptions opt;
  std::vector<int> done;
  // Copying asks again within a layer (with the layers done so far, 0 in layer 0): each step is
  // counted once in a row.
  opt.progress = [&](int d, int total) {
    EXPECT_EQ(total, 2 * L);
    if (done.empty() || done.back() != d) done.push_back(d);
    return true;
  };
  ASSERT_TRUE(computeModelView(*model, kIds, {}, opt).ok());
  if (!done.empty() && done.front() == 0) done.erase(done.begin());
  std::vector<int> want;
  for (int d = 1; d <= 2 * L; ++d) want.push_back(d);
  EXPECT_EQ(done, want);

  for (int stopAt : {0, 1, L + 1}) {  // during layer 0's copying, during the forward, during the lens
    SCOPED_TRACE("stop at " + std::to_string(stopAt));
    opt.progress = [&](int d, int) { return d < stopAt; };
    auto view = computeModelView(*model, kIds, {}, opt);
    ASSERT_FALSE(view.ok());
    EXPECT_EQ(view.error().message, kForwardCancelled);
  }
}

TEST(ModelView, RefusesAboveTheBudgetAndBadOptions) {
  auto model = ModelFolder::open(kModels + "gpt2");
  ASSERT_TRUE(model.ok()) << model.error().message;
  ModelViewOptions opt;
  opt.memoryBudgetBytes = 1000;
  auto view = computeModelView(*model, kIds, {}, opt);
  ASSERT_FALSE(view.ok());
  EXPECT_NE(view.error().message.find("above the memory budget of"), std::string::npos) << view.error().message;
  EXPECT_NE(view.error().message.find("needs an estimated"), std::string::npos) << view.error().message;
  EXPECT_FALSE(computeModelView(*model, {}, {}, {}).ok());
  EXPECT_FALSE(computeModelView(*model, {1, 2}, {"a"}, {}).ok());
  ModelViewOptions badTop;
  badTop.top = 101;  // V = 100
  EXPECT_FALSE(computeModelView(*model, {1, 2}, {}, badTop).ok());
  auto outside = computeModelView(*model, {1, 100}, {}, {});  // id 100 outside V
  EXPECT_FALSE(outside.ok());
}

TEST(ModelView, RepeatedRandomTokensArePinnedAndAvoidTheGivenIds) {
  const std::vector<int> vocab = vocabularyPool(50257);
  ASSERT_EQ(vocab.size(), 50257u);
  const std::vector<int> a = repeatedRandomTokens(vocab, 6, 2, 1);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a, repeatedRandomTokens(vocab, 6, 2, 1));  // deterministic
  EXPECT_EQ(std::vector<int>(a.begin(), a.begin() + 6), std::vector<int>(a.begin() + 6, a.end()));  // twice
  // SplitMix64(1), a partial Fisher–Yates shuffle of 0 .. 50256, computed independently in Python.
  EXPECT_EQ(std::vector<int>(a.begin(), a.begin() + 6), (std::vector<int>{22649, 33272, 27072, 9608, 39958, 11497}));
  EXPECT_NE(a, repeatedRandomTokens(vocab, 6, 2, 2));
  // Only ids 3 and 5 of 0 .. 5 may be drawn.
  EXPECT_EQ(vocabularyPool(6, {0, 1, 2, 4}), (std::vector<int>{3, 5}));
  const std::vector<int> b = repeatedRandomTokens(vocabularyPool(6, {0, 1, 2, 4}), 40, 2, 7);
  ASSERT_EQ(b.size(), 80u);
  for (int v : b) EXPECT_TRUE(v == 3 || v == 5) << v;
  EXPECT_EQ(std::count(b.begin(), b.end(), 3), 40);  // shuffled rounds: each of the two 20 times a run
  EXPECT_TRUE(repeatedRandomTokens({}, 4, 2, 1).empty());
  EXPECT_TRUE(repeatedRandomTokens(vocab, 0, 2, 1).empty());
  EXPECT_TRUE(repeatedRandomTokens(vocab, 4, 0, 1).empty());
  EXPECT_TRUE(vocabularyPool(0).empty());
}

// A text's alphabet: its distinct ids (ascending, the BOS left out); a run of period p repeated
// `copies` times, p distinct tokens while the alphabet lasts, shuffled rounds past it.
TEST(ModelView, TheAlphabetProbeDrawsOnlyTheTextsTokensAtTheAskedPeriodAndLength) {
  const std::vector<int> text = {256, 104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100};  // BOS + "hello world"
  const std::vector<int> alphabet = distinctTokens(text, {256});
  EXPECT_EQ(alphabet, (std::vector<int>{32, 100, 101, 104, 108, 111, 114, 119}));
  for (int period : {1, 5, 8, 13, 32}) {
    for (int copies : {1, 2, 3}) {
      SCOPED_TRACE("period " + std::to_string(period) + " copies " + std::to_string(copies));
      const std::vector<int> ids = repeatedRandomTokens(alphabet, period, copies, 3);
      ASSERT_EQ(ids.size(), static_cast<std::size_t>(period * copies));
      for (std::size_t i = 0; i < ids.size(); ++i) {
        EXPECT_TRUE(std::binary_search(alphabet.begin(), alphabet.end(), ids[i])) << ids[i];
        if (i >= static_cast<std::size_t>(period)) {
          EXPECT_EQ(ids[i], ids[i - static_cast<std::size_t>(period)]) << i;
        }
      }
      // Within a run: no token twice in a round of the alphabet (8 tokens): round r is run[8r, 8r + 8).
      for (int r = 0; r * 8 < period; ++r) {
        std::vector<int> round(ids.begin() + r * 8, ids.begin() + std::min(period, r * 8 + 8));
        std::sort(round.begin(), round.end());
        EXPECT_EQ(std::adjacent_find(round.begin(), round.end()), round.end()) << "round " << r;
      }
      EXPECT_EQ(ids, repeatedRandomTokens(alphabet, period, copies, 3)) << "seeded: the same ids every run";
    }
  }
  // A run as long as the alphabet holds each of its tokens once.
  std::vector<int> run = repeatedRandomTokens(alphabet, 8, 1, 9);
  std::sort(run.begin(), run.end());
  EXPECT_EQ(run, alphabet);
  // [3, 5, 9] drawn 7 long, seed 7: two shuffled rounds, then the start of a third (Python, as above).
  EXPECT_EQ(repeatedRandomTokens({3, 5, 9}, 7, 1, 7), (std::vector<int>{3, 5, 9, 3, 5, 9, 5}));
}

TEST(ModelView, TheProbeIsDescribedWithItsSourcePeriodCopiesAndSeed) {
  RepeatedProbe p;
  p.source = ProbeSource::TextTokens;
  p.pool = 11;
  p.period = 32;
  p.copies = 2;
  p.seed = 1;
  EXPECT_EQ(describeProbe(p), "T = 64 tokens: 32 random tokens of the text's 11, then the same 32 again; a run longer "
                              "than the 11 repeats them (drawn in shuffled rounds) · seed 1");
  p.source = ProbeSource::Vocabulary;
  p.pool = 50256;
  p.bos = true;
  p.copies = 3;
  p.seed = 4;
  EXPECT_EQ(describeProbe(p), "T = 97 tokens: the BOS, then 32 random tokens of the vocabulary's 50,256, then the same "
                              "32 twice more (no token twice in a run: drawn without replacement) · seed 4");
  p.source = ProbeSource::GivenTokens;
  p.pool = 5;
  p.period = 4;
  p.copies = 5;
  p.bos = false;
  p.cut = "cut";
  EXPECT_EQ(describeProbe(p), "T = 20 tokens: 4 random tokens of the 5 you gave, then the same 4 again, 5 copies in all (no token "
                              "twice in a run: drawn without replacement); cut · seed 4");
  for (int i = 0; i < kProbeSourceCount; ++i) {
    const auto s = static_cast<ProbeSource>(i);
    EXPECT_EQ(probeSourceFromName(probeSourceName(s)), s);
  }
  EXPECT_FALSE(probeSourceFromName("alphabet"));
}

// The offset profile against a direct computation on hand-made causal weights (T = 4).
TEST(ModelView, OffsetProfileIsTheMeanWeightByOffset) {
  // Rows: queries t, columns: keys k <= t; each row sums to 1.
  const std::vector<float> a = {1.0f, 0, 0, 0,
                                0.2f, 0.8f, 0, 0,
                                0.1f, 0.6f, 0.3f, 0,
                                0.1f, 0.1f, 0.7f, 0.1f};
  const std::vector<float> p = offsetProfile(a.data(), 4, 4);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_FLOAT_EQ(p[0], (1.0f + 0.8f + 0.3f + 0.1f) / 4);  // self, over t = 0 .. 3
  EXPECT_FLOAT_EQ(p[1], (0.2f + 0.6f + 0.7f) / 3);         // previous token, over t = 1 .. 3
  EXPECT_FLOAT_EQ(p[2], (0.1f + 0.1f) / 2);
  EXPECT_FLOAT_EQ(p[3], 0.1f);
  EXPECT_EQ(strongestOffset(p, 4), 0);
  EXPECT_EQ(offsetSentence(p, 4), "attends to itself: 0.55 mean weight at offset 0");
  EXPECT_EQ(strongestOffsets(p, 4, 5), (std::vector<int>{0, 1, 2}));  // d <= T / 2 only
  EXPECT_EQ(offsetProfile(a.data(), 4, 2).size(), 2u);  // capped
  EXPECT_TRUE(offsetProfile(a.data(), 4, 0).empty());
  EXPECT_EQ(strongestOffset({}, 0), -1);
  EXPECT_EQ(offsetSentence({0.1f, 0.91f, 0.0f}, 3), "looks back 1 position: 0.91 mean weight at offset 1");
  // Offset 4 of T = 5 is one weight (the last query's on the first key): not counted.
  EXPECT_EQ(offsetSentence({0.1f, 0.2f, 0.7f, 0.1f, 0.9f}, 5), "looks back 2 positions: 0.70 mean weight at offset 2");
  EXPECT_EQ(offsetSentence({0.1f, 0.12f, 0.1f}, 3),
            "no offset holds half its weight: the strongest is offset 1, 0.12 mean weight");
}

// Each head's profile in the model view equals the definition applied to the attention a forward
// with keepAttention records.
TEST(ModelView, OffsetProfilesEqualTheRecordedAttentions) {
  for (const char* folder : {"gpt2", "llama_gqa"}) {
    SCOPED_TRACE(folder);
    auto model = ModelFolder::open(kModels + folder);
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto view = computeModelView(*model, kIds, {}, {});
    ASSERT_TRUE(view.ok()) << view.error().message;
    auto fr = runForward(*model, kIds);
    ASSERT_TRUE(fr.ok()) << fr.error().message;
    const int T = static_cast<int>(kIds.size());
    double maxDiff = 0.0;
    for (int l = 0; l < view->layers; ++l) {
      for (int i = 0; i < view->heads; ++i) {
        const float* a = fr->attention[static_cast<std::size_t>(l)].ptr() + static_cast<std::int64_t>(i) * T * T;
        const std::vector<float>& got = view->head(l, i).offsets;
        ASSERT_EQ(got.size(), static_cast<std::size_t>(T));
        for (int d = 0; d < T; ++d) {
          double sum = 0.0;
          for (int t = d; t < T; ++t) sum += a[t * T + t - d];
          maxDiff = std::max(maxDiff, std::abs(sum / (T - d) - got[static_cast<std::size_t>(d)]));
        }
      }
    }
    EXPECT_LT(maxDiff, 1e-6) << "largest difference from the direct computation";
  }
}

// The trained fixture (tests/fixtures/models/trained) against its reference: each head's offset
// profile on the reference's text and on its repeated probe equals reference/trained's
// s{k}_offsets.npy (the engine's weights match PyTorch's to 2e-5, so a mean of them to 1e-5), and
// the probe over the text's alphabet draws only that alphabet (the reference drew with
// replacement through torch, so its ids are not ours: only the alphabet is compared).
TEST(ModelView, TheTrainedFixturesOffsetProfilesAndAlphabetAreTheReferences) {
  std::ifstream in(kModels + "reference/trained/reference.json");
  ASSERT_TRUE(in) << "no reference.json";
  const nlohmann::json ref = nlohmann::json::parse(in);
  auto model = ModelFolder::open(kModels + "trained");
  ASSERT_TRUE(model.ok()) << model.error().message;
  for (const char* name : {"text", "probe"}) {
    SCOPED_TRACE(name);
    const nlohmann::json& seq = ref.at("sequences").at(name);
    const std::vector<int> ids = seq.at("tokens").get<std::vector<int>>();
    auto view = computeModelView(*model, ids, {}, {});
    ASSERT_TRUE(view.ok()) << view.error().message;
    auto want = loadNpy(kModels + "reference/trained/" + seq.at("file").get<std::string>() + "_offsets.npy");
    ASSERT_TRUE(want.ok()) << want.error().message;
    const int T = static_cast<int>(ids.size());
    ASSERT_EQ(want->numel(), static_cast<std::int64_t>(view->layers) * view->heads * T);
    double maxDiff = 0.0;
    for (int l = 0; l < view->layers; ++l) {
      for (int i = 0; i < view->heads; ++i) {
        const std::vector<float>& got = view->head(l, i).offsets;
        ASSERT_EQ(got.size(), static_cast<std::size_t>(T));
        for (int d = 0; d < T; ++d) {
          const float w = want->ptr()[(static_cast<std::int64_t>(l) * view->heads + i) * T + d];
          maxDiff = std::max(maxDiff, static_cast<double>(std::abs(w - got[static_cast<std::size_t>(d)])));
        }
      }
    }
    EXPECT_LT(maxDiff, 1e-5) << "largest difference from the reference's profile";
  }
  const nlohmann::json& probe = ref.at("sequences").at("probe");
  const std::vector<int> alphabet = distinctTokens(ref.at("sequences").at("text").at("tokens").get<std::vector<int>>());
  EXPECT_EQ(alphabet, probe.at("alphabet").get<std::vector<int>>());
  const int n = probe.at("n").get<int>();
  const std::vector<int> ids = repeatedRandomTokens(alphabet, n, 2, probe.at("seed").get<std::uint64_t>());
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(2 * n));
  for (int id : ids) EXPECT_TRUE(std::binary_search(alphabet.begin(), alphabet.end(), id)) << id;
}

// A mixture-of-experts model's view carries the forward's routing, and says it in words: each token's experts in
// descending weight with their weights (the reference's), and how many tokens each expert took in a layer; a dense
// model's view has none.
TEST(ModelView, SaysWhichExpertsEachTokenWentTo) {
  auto m = ModelFolder::open(kModels + "mixtral");
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto ids = loadNpy(kModels + "reference/mixtral/s0_tokens.npy");
  auto experts = loadNpy(kModels + "reference/mixtral/s0_router_experts.npy");
  auto weights = loadNpy(kModels + "reference/mixtral/s0_router_weights.npy");
  ASSERT_TRUE(ids.ok() && experts.ok() && weights.ok());
  const std::vector<int> tokens(ids->data.begin(), ids->data.end());
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < tokens.size(); ++i) labels.push_back("t" + std::to_string(i));
  auto v = computeModelView(*m, tokens, labels, {});
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->routing.size(), 2u);
  const std::size_t T = tokens.size(), at = (1 * T + 3) * 2;  // layer 1, token 3
  char expected[128];
  std::snprintf(expected, sizeof expected, "layer 1: token «t3» → experts %d (%.2f), %d (%.2f)",
                static_cast<int>(experts->data[at]), static_cast<double>(weights->data[at]),
                static_cast<int>(experts->data[at + 1]), static_cast<double>(weights->data[at + 1]));
  EXPECT_EQ(routingText(*v, 1, 3), expected);
  EXPECT_EQ(tokenRoutingLines(*v, 3).size(), 2u);
  EXPECT_EQ(tokenRoutingLines(*v, 3)[1], expected);
  const std::string summary = routingSummary(*v, 0);
  EXPECT_NE(summary.find("layer 0's MLP, a mixture: tokens per expert"), std::string::npos) << summary;
  EXPECT_NE(summary.find("each token to 2"), std::string::npos) << summary;
  auto dense = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(dense.ok());
  auto dv = computeModelView(*dense, tokens, {}, {});
  ASSERT_TRUE(dv.ok());
  EXPECT_TRUE(dv->routing.empty());
  EXPECT_EQ(routingText(*dv, 0, 0), "");
  EXPECT_TRUE(tokenRoutingLines(*dv, 0).empty());
}

// What a layer's score rules did, per head, against the references: gpt-oss's learned sink takes each row's 1 − Σ w
// (the reference's sink share, mean and largest over the rows); Gemma 2's softcap hands the softmax the reference's
// capped scores (their largest |s| over the visible cells, each inside (−c, c)); Qwen3's q/k norm keeps every score
// under its bound. A family without such rules records none.
TEST(ModelView, SaysWhatEachLayersScoreRulesDid) {
  const auto tokensOf = [](const std::string& folder) {
    auto ids = loadNpy(kModels + "reference/" + folder + "/s0_tokens.npy");
    EXPECT_TRUE(ids.ok());
    return ids.ok() ? std::vector<int>(ids->data.begin(), ids->data.end()) : std::vector<int>{};
  };
  {
    auto m = ModelFolder::open(kModels + "gpt_oss");
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto share = loadNpy(kModels + "reference/gpt_oss/s0_sink_share.npy");  // (L, h, T)
    ASSERT_TRUE(share.ok());
    auto v = computeModelView(*m, tokensOf("gpt_oss"), {}, {});
    ASSERT_TRUE(v.ok()) << v.error().message;
    const std::int64_t T = share->dim(2);
    for (int l = 0; l < v->layers; ++l) {
      for (int h = 0; h < v->heads; ++h) {
        const HeadScoreStats& st = v->head(l, h).scoreStats;
        ASSERT_TRUE(st.sink);
        double mean = 0, mx = 0;
        for (std::int64_t t = 0; t < T; ++t) {
          const double x = share->data[static_cast<std::size_t>((l * v->heads + h) * T + t)];
          mean += x / static_cast<double>(T);
          mx = std::max(mx, x);
        }
        EXPECT_NEAR(st.sinkMean, mean, 1e-5) << "layer " << l << " head " << h;
        EXPECT_NEAR(st.sinkMax, mx, 1e-5) << "layer " << l << " head " << h;
      }
    }
    ASSERT_FALSE(headScoreRuleLines(*v, 1, 2).empty());
    EXPECT_EQ(headScoreRuleLines(*v, 1, 2)[0].rfind("learned sink: ", 0), 0u) << headScoreRuleLines(*v, 1, 2)[0];
  }
  {
    auto m = ModelFolder::open(kModels + "gemma2");
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto capped = loadNpy(kModels + "reference/gemma2/s0_scores_capped.npy", NpyValues::AllowMinusInfinity);  // -inf: blocked
    ASSERT_TRUE(capped.ok()) << capped.error().message;
    auto v = computeModelView(*m, tokensOf("gemma2"), {}, {});
    ASSERT_TRUE(v.ok()) << v.error().message;
    const double c = m->spec().attnSoftcap;
    const std::int64_t T = capped->dim(2);
    for (int l = 0; l < v->layers; ++l) {
      EXPECT_FLOAT_EQ(v->layerSoftcaps[static_cast<std::size_t>(l)], static_cast<float>(c));
      for (int h = 0; h < v->heads; ++h) {
        double mx = 0;
        std::int64_t visible = 0;
        for (std::int64_t i = 0; i < T * T; ++i) {
          const float x = capped->data[static_cast<std::size_t>((l * v->heads + h) * T * T + i)];
          if (std::isinf(x)) continue;
          ++visible;
          mx = std::max(mx, std::abs(static_cast<double>(x)));
        }
        const HeadScoreStats& st = v->head(l, h).scoreStats;
        EXPECT_EQ(st.visible, visible);
        EXPECT_NEAR(st.maxAbsCapped, mx, 1e-4) << "layer " << l << " head " << h;
        EXPECT_LT(st.maxAbsCapped, c);
        EXPECT_GE(st.maxAbsScaled, st.maxAbsCapped);
      }
    }
  }
  {
    auto m = ModelFolder::open(kModels + "qwen3");
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto v = computeModelView(*m, tokensOf("qwen3"), {}, {});
    ASSERT_TRUE(v.ok()) << v.error().message;
    for (int l = 0; l < v->layers; ++l) {
      const QkNormBound& b = v->layerBounds[static_cast<std::size_t>(l)];
      EXPECT_EQ(b.nq, m->spec().dk());
      for (int h = 0; h < v->heads; ++h) {
        EXPECT_GT(v->head(l, h).scoreStats.maxAbsScaled, 0.0);
        EXPECT_LE(v->head(l, h).scoreStats.maxAbsScaled, b.value());
      }
    }
    EXPECT_EQ(headScoreRuleLines(*v, 0, 0).at(0).rfind("q/k norm: largest |score| ", 0), 0u);
  }
  auto plain = ModelFolder::open(kModels + "llama_gqa");
  ASSERT_TRUE(plain.ok());
  auto pv = computeModelView(*plain, kIds, {}, {});
  ASSERT_TRUE(pv.ok());
  EXPECT_EQ(pv->head(0, 0).scoreStats.visible, 0);
  EXPECT_TRUE(headScoreRuleLines(*pv, 0, 0).empty());
}

}  // namespace
}  // namespace mhascope::model
