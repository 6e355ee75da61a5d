// The Windows and KV cache lessons against the engine: the kept-key picture is the engine's own
// window rule, the memory counts are the engine's visible cells, the sinks stay visible; the
// stepper's decode equals the full causal forward at every step (multi-head, grouped, RoPE) and its
// bytes and FLOPs are the formulas'; each sentence says what its numbers say.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "attention/decode.hpp"
#include "lesson_fixtures.hpp"
#include "lessons/common.hpp"
#include "lessons/lessons.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::has;
using lesson_fixtures::sized;
using lesson_fixtures::weightAt;

// The integer after `prefix` (commas skipped), -1 if absent.
long long numberAfter(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return -1;
  std::string digits;
  for (std::size_t i = at + prefix.size(); i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == ','); ++i) {
    if (text[i] != ',') digits.push_back(text[i]);
  }
  return digits.empty() ? -1 : std::stoll(digits);
}

// --- Windows --------------------------------------------------------------------------------------

TEST(WindowsLesson, VisibleCellsAreTheEnginesUnblockedCells) {
  for (bool causal : {true, false}) {
    for (int T : {1, 2, 5, 9, 17}) {
      for (int W : {1, 2, 3, 8, 20}) {
        for (int S : {0, 1, 2, 6}) {
          AttentionOptions o;
          o.causal = causal;
          o.window = W;
          o.sinks = S;
          const auto blocked = blockedCells(o, 1, T, T);
          std::int64_t visible = 0;
          for (auto b : blocked) visible += b ? 0 : 1;
          EXPECT_EQ(visibleScoreCells(T, W, S, causal), visible) << "T " << T << " W " << W << " S " << S << " causal " << causal;
        }
      }
    }
    EXPECT_EQ(visibleScoreCells(6, 0, 0, causal), causal ? 21 : 36);  // no window: T(T+1)/2 or T²
  }
}

// Stacked windows reach L · (W - 1) positions back: 2 layers of this W, and Mistral-7B's 32 layers of
// W = 4096 (32 · 4095 = 131,040), recomputed here.
TEST(WindowsLesson, ReachTextStatesTheReceptiveField) {
  const Model m = buildOrDie(sized(12, 3, "a b c d e f g h i"));
  for (int W : {1, 3, 5}) {
    auto r = windowLesson(m, W, 1, true);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::string s = windowReachText(*r);
    EXPECT_TRUE(has(s, "(" + std::to_string(2 * (W - 1)) + " with 2 layers of W = " + std::to_string(W) + ")")) << s;
    EXPECT_EQ(windowReach(2, W), 2 * (W - 1));
    EXPECT_EQ(32 * (4096 - 1), 131040);
    EXPECT_TRUE(has(s, "Mistral-7B (Jiang et al. 2023): 32 layers x (4,096 - 1) = 131,040 positions")) << s;
    EXPECT_TRUE(has(s, "rolling buffer of W keys per layer")) << s;
  }
}

// StreamingLLM: what it keeps, that it keeps perplexity stable rather than remembering, and that it
// stores keys before RoPE and positions them inside the cache.
TEST(WindowsLesson, StreamingLlmTextSaysWhatItDoesAndDoesNot) {
  const std::string s = streamingLlmText();
  for (const char* said : {"perplexity stays stable", "does not remember what it evicted", "stores keys before RoPE"}) {
    EXPECT_TRUE(has(s, said)) << said << ": " << s;
  }
  EXPECT_FALSE(has(s, "a window runs on for millions of tokens")) << s;
}

TEST(WindowsLesson, KeptKeysFollowTheWindowAndTheSinks) {
  const Model m = buildOrDie(sized(12, 3, "a b c d e f g h i"));  // T = 9
  for (bool causal : {true, false}) {
    auto r = windowLesson(m, 3, 2, causal);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const Trace& t = r->windowed;
    for (int q = 0; q < t.tq; ++q) {
      for (int k = 0; k < t.tk; ++k) {
        const bool inWindow = causal ? (k <= q && k > q - 3) : std::abs(q - k) < 3;
        const bool sink = k < 2 && (!causal || k <= q);
        const float want = inWindow ? 1.0f : sink ? 0.5f : 0.0f;
        EXPECT_EQ(r->keep.data[static_cast<std::size_t>(q * t.tk + k)], want) << q << "," << k;
        for (int h = 0; h < t.heads; ++h) {
          if (want == 0.0f) {
            EXPECT_EQ(weightAt(t, 0, h, q, k), 0.0f);
          }
          else EXPECT_GT(weightAt(t, 0, h, q, k), 0.0f);  // a sink keeps its weight however far back
        }
      }
    }
    EXPECT_EQ(r->keptCells, visibleScoreCells(9, 3, 2, causal));
    EXPECT_EQ(r->fullCells, visibleScoreCells(9, 0, 0, causal));
  }
}

TEST(WindowsLesson, MemoryTableCountsCellsAndCachedKeys) {
  const Model m = buildOrDie(sized(8, 2));  // T = 7
  auto r = windowLesson(m, 4, 1, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->memory.size(), 4u);
  EXPECT_EQ(r->memory[0].tokens, 7);
  EXPECT_EQ(r->memory.back().tokens, 131072);
  for (const WindowMemoryRow& row : r->memory) {
    const std::int64_t T = row.tokens;
    EXPECT_EQ(row.fullCells, T * (T + 1) / 2);
    // Causal, W = 4, S = 1: rows 0..3 see t + 1 keys, every later row 4 window keys and the sink.
    EXPECT_EQ(row.windowCells, T >= 4 ? 10 + (T - 4) * 5 : T * (T + 1) / 2);
    EXPECT_EQ(row.cachedKeys, std::min<std::int64_t>(T, 5));
  }
}

TEST(WindowsLesson, FirstKeyShareIsTheWeightsMean) {
  const Model m = buildOrDie(sized(8, 2));
  auto r = windowLesson(m, 2, 0, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (int h = 0; h < 2; ++h) {
    double w = 0, u = 0;
    for (int q = 1; q < r->full.tq; ++q) {  // query 0 sees key 0 alone: left out
      w += weightAt(r->full, 0, h, q, 0);
      u += 1.0 / (q + 1);
    }
    const FirstKeyShare& s = r->firstKey[static_cast<std::size_t>(h)];
    EXPECT_EQ(s.queries, r->full.tq - 1);
    EXPECT_NEAR(s.weight, w / (r->full.tq - 1), 1e-9);
    EXPECT_NEAR(s.uniform, u / (r->full.tq - 1), 1e-12);
  }
}

// The lesson says random weights show no sink: over seeds and sizes the first key takes about a
// uniform share, never twice it.
TEST(WindowsLesson, RandomWeightsShowNoSink) {
  for (std::uint64_t seed : {1u, 2u, 3u, 42u, 77u}) {
    for (int heads : {1, 2, 4}) {
      ModelConfig cfg = sized(16, heads, "the quick brown fox jumps over the lazy dog and runs away");
      cfg.seed = seed;
      auto r = windowLesson(buildOrDie(cfg), 3, 1, true);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_LT(r->firstKeyAll.ratio(), 2.0) << "seed " << seed << " h " << heads;
      EXPECT_TRUE(has(firstKeyText(*r, 0), "That is no sink")) << firstKeyText(*r, 0);
    }
  }
}

TEST(WindowsLesson, FirstKeyTextFollowsItsNumbers) {
  const Model m = buildOrDie(sized(8, 2));
  auto r = windowLesson(m, 2, 1, true);
  ASSERT_TRUE(r.ok());
  // A head that parks its weight on the first key: the sentence turns into "a sink".
  r->firstKeyAll = {0.8, 0.2, 6};
  r->firstKey[1] = {0.8, 0.2, 6};
  const std::string s = firstKeyText(*r, 1);
  EXPECT_TRUE(has(s, "takes on average 0.8 of a query's weight in head 1 (a uniform share would be 0.2, 4x that)")) << s;
  EXPECT_TRUE(has(s, "That is a sink")) << s;
}

// A head made to park its weight on the first key (hand-set scores, as a trained sink head would
// score it): the measured share is far above a uniform one and the sentence calls it a sink.
TEST(WindowsLesson, AHeadThatParksWeightOnTheFirstKeyIsASink) {
  ModelConfig cfg = sized(8, 1, "a b c d e f g h");
  for (int q = 0; q < 8; ++q) cfg.scoreOverride.cells.push_back({0, q, 0, "", "", 30.0f});
  auto r = windowLesson(buildOrDie(cfg), 2, 1, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->firstKeyAll.weight, 0.9);
  EXPECT_GT(r->firstKeyAll.ratio(), 2.0);
  EXPECT_TRUE(has(firstKeyText(*r, 0), "That is a sink")) << firstKeyText(*r, 0);
  // Its window without the sink loses that weight: the outputs move more than with the sink kept.
  EXPECT_GT(r->meanAbsOutputDiffNoSinks, r->meanAbsOutputDiff);
}

// The learned sink beside the emergent one: its share is the engine's sink_share averaged over the rows, with the
// lesson's logit when the controls set none and the controls' own when they do; the sentence says those numbers.
TEST(WindowsLesson, LearnedSinkShareIsTheEnginesOnTheSentence) {
  ModelConfig cfg = sized(8, 2, "a b c d e f g h");
  for (bool fromControls : {false, true}) {
    cfg.learnedSink = fromControls;
    cfg.sinkLogit = 2.5f;
    auto r = windowLesson(buildOrDie(cfg), 2, 1, true);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->sinkFromControls, fromControls);
    EXPECT_EQ(r->sinkLogits, std::vector<float>(2, fromControls ? 2.5f : kLessonSinkLogit));
    const Tensor& share = r->sunk.tensor(StageId::SinkShare);
    for (int h = 0; h < 2; ++h) {
      double mean = 0;
      for (int q = 0; q < 8; ++q) {
        double row = 0;
        for (int k = 0; k < 8; ++k) row += weightAt(r->sunk, 0, h, q, k);
        EXPECT_NEAR(row + share.data[static_cast<std::size_t>(h * 8 + q)], 1.0, 1e-6);
        mean += share.data[static_cast<std::size_t>(h * 8 + q)] / 8.0;
      }
      EXPECT_NEAR(r->sinkShare[static_cast<std::size_t>(h)], mean, 1e-9);
      EXPECT_GT(mean, 0.05);
    }
    const std::string s = learnedSinkText(*r, 1);
    EXPECT_TRUE(has(s, "leaves " + lesson_detail::num(r->sinkShare[1], 3) + " of a row's weight on the sink")) << s;
    EXPECT_TRUE(has(s, fromControls ? "With the controls' sink" : "the controls' learned sink is off")) << s;
  }
}

// The lesson's own W and S, whatever window the configuration has.
TEST(WindowsLesson, TheLessonsWindowReplacesTheConfigurations) {
  ModelConfig cfg = sized(8, 2, "a b c d e f g h");
  cfg.mask = MaskKind::Causal;
  cfg.window = 5;
  cfg.sinks = 2;
  auto r = windowLesson(buildOrDie(cfg), 2, 0, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->windowed.window, 2);
  EXPECT_EQ(r->windowed.sinks, 0);
  EXPECT_EQ(r->full.window, 0);
  EXPECT_EQ(r->keptCells, visibleScoreCells(8, 2, 0, true));
  EXPECT_EQ(r->fullCells, 36);
}

TEST(WindowsLesson, KeepTextSaysWhatTheMaskKeeps) {
  for (bool causal : {true, false}) {
    for (int W : {1, 2, 3, 9}) {
      for (int S : {0, 1, 3}) {
        const Model m = buildOrDie(sized(8, 2, "a b c d e f g h"));  // T = 8
        auto r = windowLesson(m, W, S, causal);
        ASSERT_TRUE(r.ok()) << r.error().message;
        const std::string s = windowKeepText(*r);
        int kept = 0, seen = 0;
        for (int k = 0; k < 8; ++k) {
          kept += r->keep.data[static_cast<std::size_t>(7 * 8 + k)] > 0 ? 1 : 0;
          seen += r->full.isBlocked(0, 7, k) ? 0 : 1;
        }
        EXPECT_EQ(numberAfter(s, ": "), kept) << s;
        EXPECT_EQ(numberAfter(s, " of the "), seen) << s;
        EXPECT_EQ(numberAfter(s, "Per head, "), r->keptCells) << s;
        EXPECT_EQ(numberAfter(s, "at T = 131,072: "), r->memory.back().windowCells) << s;
        // Causal, query 7: the window is keys 8-W .. 7; sinks below it are named as such.
        if (causal && W == 3) {
          EXPECT_TRUE(has(s, "keeps keys 5 .. 7 (its window, W = 3)")) << s;
        }
        if (causal && W == 3 && S == 1) {
          EXPECT_TRUE(has(s, "and key 0 (a sink)")) << s;
        }
        if (causal && W == 3 && S == 3) {
          EXPECT_TRUE(has(s, "and keys 0 .. 2 (sinks)")) << s;
        }
        if (S == 0) {
          EXPECT_FALSE(has(s, "sink")) << s;
        }
      }
    }
  }
}

TEST(WindowsLesson, BadChoicesAreRefusedAndKeptInRange) {
  const Model m = buildOrDie(sized(8, 2));
  EXPECT_FALSE(windowLesson(m, 0, 0, true).ok());
  EXPECT_FALSE(windowLesson(m, 2, -1, true).ok());
  Trace t;
  t.tq = t.tk = 5;
  lessons::Windows::Choices c;
  c.window = 99;
  c.sinks = -3;
  c.keepInRange(t);
  EXPECT_EQ(c.window, 5);
  EXPECT_EQ(c.sinks, 0);
  lessons::Windows::Choices d = c;
  d.sinks = 1;
  EXPECT_NE(c.variant(), d.variant());
}

// --- KV cache -------------------------------------------------------------------------------------

ModelConfig kvConfig(int kvHeads, AttnPositions positions, int window = 0, int sinks = 0) {
  ModelConfig cfg = sized(24, 4, "the cat sat on the mat and then it slept");
  cfg.kvHeads = kvHeads;
  cfg.attnPositions = positions;
  cfg.positions = positions == AttnPositions::None;
  cfg.window = window;
  cfg.sinks = sinks;
  return cfg;
}

TEST(KvCacheLesson, EveryStepEqualsTheFullCausalForward) {
  struct Case {
    const char* name;
    int kvHeads;
    AttnPositions positions;
    int window, sinks;
  };
  for (const Case& c : {Case{"mha", 0, AttnPositions::None, 0, 0}, Case{"gqa", 2, AttnPositions::None, 0, 0},
                        Case{"mqa", 1, AttnPositions::None, 0, 0}, Case{"rope", 0, AttnPositions::Rope, 0, 0},
                        Case{"gqa_rope_window", 2, AttnPositions::Rope, 3, 1}, Case{"alibi", 0, AttnPositions::Alibi, 0, 0}}) {
    const Model m = buildOrDie(kvConfig(c.kvHeads, c.positions, c.window, c.sinks));
    const int T = static_cast<int>(m.inputs.query.dim(1));
    for (int prefill : {1, 4}) {
      for (int steps = 0; steps <= T - prefill; ++steps) {
        auto r = kvCacheLesson(m, prefill, steps);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->length(), prefill + steps);
        EXPECT_LT(r->maxAbsOutputDiff, 1e-5) << c.name << " P " << prefill << " step " << steps;
        EXPECT_LT(r->maxAbsWeightDiff, 1e-5) << c.name << " P " << prefill << " step " << steps;
        // The new row's weights: one per cached key, summing to 1 in every head.
        const Tensor& w = r->session.lastWeights;
        ASSERT_EQ(w.shape, (Shape{1, 4, r->length()}));
        for (int h = 0; h < 4; ++h) {
          double sum = 0;
          for (int k = 0; k < r->length(); ++k) sum += w.data[static_cast<std::size_t>(h * r->length() + k)];
          EXPECT_NEAR(sum, 1.0, 1e-5);
        }
      }
    }
    // The cached keys are the full forward's keys as attention read them: after RoPE.
    auto r = kvCacheLesson(m, 2, T - 2);
    ASSERT_TRUE(r.ok());
    const Tensor& k = r->full.tensor(c.positions == AttnPositions::Rope ? StageId::KRotated : StageId::KHeads);
    ASSERT_EQ(k.data.size(), r->session.result.kCache.data.size());
    for (std::size_t i = 0; i < k.data.size(); ++i) ASSERT_NEAR(k.data[i], r->session.result.kCache.data[i], 1e-5) << c.name;
  }
}

TEST(KvCacheLesson, StepByStepIsDecodeAllAtOnce) {
  const Model m = buildOrDie(kvConfig(2, AttnPositions::Rope));
  auto all = decode(m.inputs, m.weights, m.options, 3);
  ASSERT_TRUE(all.ok()) << all.error().message;
  auto s = startDecode(m.inputs, m.weights, m.options, 3);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->length, 3);
  while (s->length < m.inputs.query.dim(1)) ASSERT_TRUE(decodeNext(*s, m.inputs, m.weights).ok());
  EXPECT_EQ(s->result.output.data, all->output.data);  // the same code, bit for bit
  EXPECT_EQ(s->result.kCache.data, all->kCache.data);
  EXPECT_EQ(s->result.steps.size(), all->steps.size());
  auto past = decodeNext(*s, m.inputs, m.weights);
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(has(past.error().message, "every token is decoded already (T = 10)")) << past.error().message;
}

TEST(KvCacheLesson, BytesAndFlopsPerStep) {
  for (int kvHeads : {0, 2, 1}) {
    const Model m = buildOrDie(kvConfig(kvHeads, AttnPositions::None));
    const int N = kvHeads == 0 ? 4 : kvHeads, dk = 6;
    for (int steps : {0, 1, 5}) {
      auto r = kvCacheLesson(m, 3, steps);
      ASSERT_TRUE(r.ok());
      const int n = 3 + steps;
      EXPECT_EQ(r->lastStep().cacheBytes, 2.0 * N * n * dk * 4);  // 2 (K, V) · N · t · d_k · 4 bytes
      EXPECT_EQ(r->bytesPerToken, 2.0 * N * dk * 4);
      EXPECT_EQ(r->lastStep().recomputeFlops, countFlops(1, n, n, 24, 4, N).total());
      if (steps > 0) {
        // One token's projections (W_q, W_o: d·d; W_k, W_v: d·N·d_k) and one query row over n keys.
        EXPECT_EQ(r->lastStep().flops, 2.0 * (2.0 * 24 * 24 + 2.0 * 24 * N * dk) + 2.0 * 2.0 * 4 * n * dk);
        EXPECT_LT(r->lastStep().flops, r->lastStep().recomputeFlops);
      }
      const std::string s = kvCacheStepText(*r);
      EXPECT_TRUE(has(s, formatBytes(r->lastStep().cacheBytes) + " = 2 (K, V) x " + std::to_string(n) + " tokens x " +
                             std::to_string(N) + (N == 1 ? " K/V head" : " K/V heads") + " x d_k 6 x 4 bytes."))
          << s;
      EXPECT_EQ(has(s, "query heads share"), N < 4) << s;
      if (steps > 0) {
        EXPECT_TRUE(has(s, "the cache now holds " + std::to_string(n) + " rows")) << s;
      }
      else EXPECT_TRUE(has(s, "Prefill: the first 3 tokens")) << s;
      EXPECT_TRUE(has(s, "(float rounding).")) << s;
    }
  }
}

TEST(KvCacheLesson, RopeTextSaysTheCacheHoldsRotatedKeys) {
  for (AttnPositions p : {AttnPositions::None, AttnPositions::Rope, AttnPositions::Alibi}) {
    auto r = kvCacheLesson(buildOrDie(kvConfig(0, p)), 2, 1);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(has(kvCacheStepText(*r), "the cache holds the keys after their rotation"), p == AttnPositions::Rope);
  }
}

// With a sliding window the step says how few cached rows the query reads, counted from its weights.
TEST(KvCacheLesson, WindowTextCountsTheRowsTheQueryReads) {
  auto r = kvCacheLesson(buildOrDie(kvConfig(0, AttnPositions::None, 3, 1)), 2, 6);  // n = 8
  ASSERT_TRUE(r.ok());
  int read = 0;
  for (int k = 0; k < 8; ++k) read += r->session.lastWeights.data[static_cast<std::size_t>(k)] > 0.0f ? 1 : 0;
  EXPECT_EQ(read, 4);
  const std::string s = kvCacheStepText(*r);
  EXPECT_TRUE(has(s, "With the sliding window W = 3 and 1 sink, this query reads only 4 of the 8 cached rows")) << s;
  auto none = kvCacheLesson(buildOrDie(kvConfig(0, AttnPositions::None)), 2, 6);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(has(kvCacheStepText(*none), "sliding window")) << kvCacheStepText(*none);
}

// The cache at scale: this text's bytes per sequence in one layer is T · 2 · N · d_k · 4, and the worked
// example is Llama-3-8B's 32 layers · 8 K/V heads · d_k 128 · 2 (K, V) · 2 bytes · 8192 tokens = 1 GiB,
// both recomputed here from the formula the text states.
TEST(KvCacheLesson, ScaleTextStatesTheCacheOfASequence) {
  for (int kvHeads : {0, 2, 1}) {
    const Model m = buildOrDie(kvConfig(kvHeads, AttnPositions::None));
    const int N = kvHeads == 0 ? 4 : kvHeads, dk = 6;
    auto r = kvCacheLesson(m, 3, 1);
    ASSERT_TRUE(r.ok());
    const int T = r->tokens;
    const std::string s = kvCacheScaleText(*r);
    EXPECT_TRUE(has(s, "this text's " + std::to_string(T) + " tokens fills " + formatBytes(2.0 * T * N * dk * 4) +
                           " in this one layer (" + std::to_string(T) + " tokens x 2 (K, V) x " + std::to_string(N) +
                           (N == 1 ? " K/V head" : " K/V heads") + " x d_k 6 x 4 bytes)"))
        << s;
    EXPECT_EQ(layerCounts({N * dk, N, N, dk, false}).kvCacheBytesPerSequence(1, T, 4), 2LL * T * N * dk * 4);
    const long long llama = 32LL * 8 * 128 * 2 * 2 * 8192;
    EXPECT_EQ(llama, 1LL << 30);
    EXPECT_EQ(layerCounts({4096, 32, 8, 128, false}).kvCacheBytesPerSequence(32, 8192, 2), llama);
    EXPECT_TRUE(has(s, "Llama-3-8B at 8K context, in 16-bit: 32 layers x 8 K/V heads x d_k 128 x 2 (K, V) x 2 bytes x "
                       "8,192 tokens = " + formatBytes(static_cast<double>(llama)) + " per sequence"))
        << s;
    EXPECT_TRUE(has(s, "1.0 GiB per sequence")) << s;
    for (const char* part : {"memory-bandwidth bound", "compute bound", "its work grows with t", "every layer",
                             "PagedAttention, Kwon et al. 2023", "quantised KV caches"}) {
      EXPECT_TRUE(has(s, part)) << part << ": " << s;
    }
  }
}

TEST(KvCacheLesson, RefusalsAndRanges) {
  const Model m = buildOrDie(kvConfig(0, AttnPositions::None));
  EXPECT_FALSE(kvCacheLesson(m, 0, 0).ok());
  EXPECT_FALSE(kvCacheLesson(m, 11, 0).ok());
  auto r = kvCacheLesson(m, 8, 99);  // steps past the text: as many as there are
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->steps, 2);
  ModelConfig cross = kvConfig(0, AttnPositions::None);
  cross.crossAttention = true;
  cross.kvText = "a b c";
  auto c = kvCacheLesson(buildOrDie(cross), 1, 0);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(has(c.error().message, "decode runs self-attention only")) << c.error().message;
  // Cross-attention has a cache too in an encoder-decoder model: made once, it does not grow.
  EXPECT_TRUE(has(c.error().message, "projects once and caches whole; that cache does not grow")) << c.error().message;
  Trace t;
  t.tq = t.tk = 6;
  lessons::KvCache::Choices k;
  k.prefill = 4;
  k.steps = 9;
  k.keepInRange(t);
  EXPECT_EQ(k.steps, 2);
  lessons::KvCache::Choices next = k;
  ++next.steps;
  EXPECT_NE(k.variant(), next.variant());
}

// Published local and global layers: the counts of each model (Gemma 3 27B's 52 local and 10 global, layers 5, 11, …
// global), and the cache share counted key by key at a context: a local layer holds min(n, W), a global one n.
TEST(WindowsLesson, PublishedLayerPatternsCountTheirLayersAndCache) {
  const auto patterns = publishedLayerPatterns();
  ASSERT_EQ(patterns.size(), 6u);
  const auto find = [&](const std::string& name) {
    for (const PublishedLayerPattern& p : patterns) {
      if (name == p.name) return p;
    }
    ADD_FAILURE() << name;
    return patterns.front();
  };
  const auto globals = [](const PublishedLayerPattern& p) {
    int g = 0;
    for (int l = 0; l < p.layers; ++l) g += isGlobalLayer(p, l);
    return g;
  };
  const PublishedLayerPattern g27 = find("Gemma-3-27B");
  EXPECT_EQ(globals(g27), 10);
  EXPECT_TRUE(isGlobalLayer(g27, 5));
  EXPECT_FALSE(isGlobalLayer(g27, 6));
  EXPECT_EQ(layerPatternStrip(g27, 12), "LLLLLGLLLLLG");
  EXPECT_EQ(globals(find("Gemma-3-1B")), 4);
  EXPECT_EQ(globals(find("Gemma-2-2B")), 13);
  EXPECT_EQ(layerPatternStrip(find("gpt-oss-20b"), 4), "LGLG");
  EXPECT_EQ(globals(find("Mistral-7B")), 0);
  // (10 · 131072 + 52 · 1024) / (62 · 131072)
  EXPECT_NEAR(layerPatternCacheShare(g27, 131072), (10.0 * 131072 + 52.0 * 1024) / (62.0 * 131072), 1e-12);
  EXPECT_NEAR(layerPatternCacheShare(find("Mistral-7B"), 8192), 0.5, 1e-12);
  EXPECT_NEAR(layerPatternCacheShare(find("Mistral-7B"), 2048), 1.0, 1e-12);  // shorter than the window: all kept
  const std::string text = layerPatternsText();
  EXPECT_NE(text.find("52 local layers of W = 1,024 and 10 global ones"), std::string::npos) << text;
  EXPECT_NE(text.find("16.8 %"), std::string::npos) << text;
}

}  // namespace
}  // namespace mhascope
