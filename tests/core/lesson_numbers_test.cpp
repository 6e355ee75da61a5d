// Numbers that never disagree: over many configurations (d_model, h, N dividing h, biases on and
// off) the Params lesson, the Cost lesson, the GQA lesson, the quiz's answers and choices and the
// status line's text all give the count of the layer's weight-matrix entries that this test makes
// itself from the engine's own matrices and from the sizes; and the lessons that mirror a control
// (the GQA lesson's N, the Windows lesson's W and S) start from the configuration the user has.
// `mhascope info` prints the same numbers: tests/cli/variants_test.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/layer_counts.hpp"
#include "attention/model.hpp"
#include "io/workspace.hpp"
#include "lesson_fixtures.hpp"
#include "lessons/common.hpp"
#include "lessons/lessons.hpp"
#include "util/format.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::has;
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;

// Every number written in a text, thousands separators (",") dropped.
std::vector<long long> numbersWithThousands(const std::string& s) {
  std::vector<long long> v;
  std::string digits;
  auto flush = [&] {
    if (!digits.empty()) v.push_back(std::stoll(digits));
    digits.clear();
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (c == ',' && !digits.empty() && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;  // 2,640
    } else {
      flush();
    }
  }
  flush();
  return v;
}

// From first principles: the layer's matrices hold d_model·h·d_k (W_q), d_model·N·d_k (W_k, W_v),
// h·d_k·d_model (W_o) numbers, and one bias per output feature.
std::int64_t expectedParams(std::int64_t d, std::int64_t h, std::int64_t n, bool bias) {
  const std::int64_t dk = d / h;
  const std::int64_t weights = d * (h * dk) + 2 * d * (n * dk) + (h * dk) * d;
  return weights + (bias ? h * dk + 2 * n * dk + d : 0);
}

// The same count read off the engine's own matrices.
std::int64_t entriesOf(const MhaWeights& w, bool bias) {
  std::int64_t n = w.wq.size() + w.wk.size() + w.wv.size() + w.wo.size();
  if (bias) n += w.bq.size() + w.bk.size() + w.bv.size() + w.bo.size();
  return n;
}

struct Sizes {
  int d, h, n;
  bool bias;
};

std::vector<Sizes> sweep() {
  std::vector<Sizes> out;
  for (int d : {8, 12, 16, 32, 48}) {
    for (int h = 1; h <= std::min(d, 16); ++h) {
      if (d % h != 0) continue;
      for (int n = 1; n <= h; ++n) {
        if (h % n != 0) continue;
        for (bool bias : {false, true}) out.push_back({d, h, n, bias});
      }
    }
  }
  return out;
}

std::string name(const Sizes& s) {
  return "d_model " + std::to_string(s.d) + ", h " + std::to_string(s.h) + ", N " + std::to_string(s.n) +
         (s.bias ? ", biases" : ", no biases");
}

TEST(LessonNumbers, EveryLessonTheQuizAndTheStatusLineCountTheSameParameters) {
  int configurations = 0;
  for (const Sizes& s : sweep()) {
    SCOPED_TRACE(name(s));
    ModelConfig cfg = sized(s.d, s.h, "The cat sat on the mat");
    cfg.kvHeads = s.n;
    cfg.bias = s.bias;
    const Model m = buildOrDie(cfg);
    const Trace t = traceOf(m);
    const std::int64_t d = s.d, h = s.h, n = s.n, dk = d / h;
    const std::int64_t want = expectedParams(d, h, n, s.bias);
    ASSERT_EQ(entriesOf(m.weights, s.bias), want);
    const LessonInput in{t, m, 0};

    // Params: per matrix and in total.
    auto p = lessons::Params::compute(in, {});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->table.counts.params(), want);
    EXPECT_EQ(p->table.counts.wq, static_cast<std::int64_t>(m.weights.wq.size()));
    EXPECT_EQ(p->table.counts.wk, static_cast<std::int64_t>(m.weights.wk.size()));
    EXPECT_EQ(p->table.counts.wv, static_cast<std::int64_t>(m.weights.wv.size()));
    EXPECT_EQ(p->table.counts.wo, static_cast<std::int64_t>(m.weights.wo.size()));
    EXPECT_EQ(p->table.qkvReal, d * h * dk + 2 * d * n * dk);

    // Cost: parameters, FLOPs (a matrix of e entries costs 2·e per token it maps), scores.
    auto c = lessons::Cost::compute(in, {});
    ASSERT_TRUE(c.ok()) << c.error().message;
    const double B = t.batch, Tq = t.tq, Tk = t.tk;
    EXPECT_EQ(c->now.params, want);
    EXPECT_DOUBLE_EQ(c->now.projectionFlops, 2.0 * B * (Tq * 2.0 * d * h * dk + Tk * 2.0 * d * n * dk));
    EXPECT_DOUBLE_EQ(c->now.attentionFlops, 2.0 * 2.0 * B * h * Tq * Tk * dk);
    EXPECT_DOUBLE_EQ(c->now.scoreBytes, 4.0 * B * h * Tq * Tk);
    // The crossover is where the two FLOP counts meet: 2·(2·d·h·d_k + 2·d·N·d_k)·T = 4·h·d_k·T².
    EXPECT_DOUBLE_EQ(costCrossover(c->sizes).crossoverTokens, static_cast<double>(d + n * dk));
    // The h sweep keeps N: every point's h is a multiple of N and its count is the first-principles one.
    lessons::Cost::Choices heads;
    heads.variable = static_cast<int>(SweepVariable::Heads);
    heads.to = static_cast<int>(d);
    auto ch = lessons::Cost::compute(in, heads);
    ASSERT_TRUE(ch.ok() && ch->sweep.get()) << (ch.ok() ? ch->sweep.error : ch.error().message);
    for (const CostPoint& pt : *ch->sweep.get()) {
      const std::int64_t keptN = n < h ? n : pt.value;  // multi-head stays multi-head
      EXPECT_EQ(pt.value % keptN, 0);
      EXPECT_EQ(pt.params, expectedParams(d, pt.value, keptN, s.bias)) << "h = " << pt.value;
    }

    // GQA at the configuration's own N: the weights alone (biases left out there) and the cache.
    lessons::Gqa::Choices g;
    g.kvHeads = static_cast<int>(n);
    auto q = lessons::Gqa::compute(m, g);
    ASSERT_TRUE(q.ok()) << q.error().message;
    EXPECT_EQ(q->params.weights(), expectedParams(d, h, n, false));
    EXPECT_EQ(q->params.weights() + (s.bias ? q->params.biases() : 0), want);
    EXPECT_EQ(q->kvBytesPerToken, static_cast<std::int64_t>(g.layers) * 2 * n * dk * g.bytes);
    EXPECT_TRUE(has(gqaSharingText(*q), "In all " + lesson_detail::grouped(expectedParams(d, h, n, false)) + " weights"))
        << gqaSharingText(*q);

    // The status line's text.
    const std::string status = parameterText(layerCounts(layerSizesOf(t)));
    EXPECT_TRUE(has(status, "parameters " + withThousands(want) + " (")) << status;

    // The quiz: the right count, and no wrong choice equal to it.
    const auto quiz = makeQuiz(t, m.weights);
    const QuizQuestion* count = lesson_fixtures::findQuestion(quiz, "How many learned numbers does this attention layer hold");
    ASSERT_NE(count, nullptr);
    for (std::size_t i = 0; i < count->choices.size(); ++i) {
      const auto v = numbersWithThousands(count->choices[i]);
      ASSERT_EQ(v.size(), 1u) << count->choices[i];
      if (static_cast<int>(i) == count->correct) EXPECT_EQ(v[0], want);
      else EXPECT_NE(v[0], want) << count->choices[i];
    }
    // Another h with N kept: the right answer is the count at that h, and no wrong one is.
    const QuizQuestion* moved = lesson_fixtures::findQuestion(quiz, "Keep d_model = " + std::to_string(d));
    if (moved) {
      const auto nums = numbersWithThousands(moved->question);  // d_model, [N], h, h2, d_k, d_k2, the count
      const std::int64_t h2 = nums[n < h ? 3 : 2];
      EXPECT_EQ(nums.back(), want) << moved->question;
      const std::int64_t keptN = n < h ? n : h2;
      ASSERT_EQ(d % h2, 0);
      ASSERT_EQ(h2 % keptN, 0);
      const std::int64_t there = expectedParams(d, h2, keptN, s.bias);
      for (std::size_t i = 0; i < moved->choices.size(); ++i) {
        const auto v = numbersWithThousands(moved->choices[i]);
        ASSERT_EQ(v.size(), 1u) << moved->choices[i];
        if (static_cast<int>(i) == moved->correct) EXPECT_EQ(v[0], there) << moved->choices[i];
        else EXPECT_NE(v[0], there) << moved->choices[i];
      }
      if (n < h && there != want) {
        EXPECT_FALSE(has(moved->choices[static_cast<std::size_t>(moved->correct)], "stays"));
      }
    }
    // The KV-cache question: 2 · N · d_k · 2 bytes.
    const QuizQuestion* kv = lesson_fixtures::findQuestion(quiz, "While generating, a model keeps every past token's K and V");
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(numbersWithThousands(kv->choices[static_cast<std::size_t>(kv->correct)]).at(0), 2 * n * dk * 2);
    ++configurations;
  }
  EXPECT_GT(configurations, 100);
}

// The configuration of the issue this rule came from: d_model 32, h 8, N 2, biases on.
TEST(LessonNumbers, GroupedHeadsKeptShrinkWkAndWvAsHGrows) {
  ModelConfig cfg = sized(32, 8);
  cfg.kvHeads = 2;
  const Model m = buildOrDie(cfg);
  const Trace t = traceOf(m);
  auto p = lessons::Params::compute({t, m, 0}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->table.counts.params(), expectedParams(32, 8, 2, true));
  EXPECT_EQ(expectedParams(32, 8, 2, true), 2640);
  EXPECT_EQ(expectedParams(32, 16, 2, true), 2376);
  const std::string heads = p->heads;  // the tab's sentence, computed with the table
  EXPECT_TRUE(has(heads, "h = 8 -> 16 takes this layer from 2,640 to 2,376 parameters")) << heads;
  auto c = lessons::Cost::compute({t, m, 0}, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->heads, heads);  // the Cost tab says the same
  const std::string intro = lessons::Params::intro();
  EXPECT_FALSE(has(intro, "the number of heads does not change the parameter count.")) << intro;
  const auto quiz = makeQuiz(t, m.weights);
  const QuizQuestion* moved = lesson_fixtures::findQuestion(quiz, "Keep d_model = 32 and N = 2 K/V heads and change h from 8 to 16");
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->choices[static_cast<std::size_t>(moved->correct)], "It becomes 2,376");
  // Multi-head attention: h changes nothing.
  const Model mha = buildOrDie(sized(32, 8));
  const Trace u = traceOf(mha);
  const std::string same = costHeadsText(costSizesOf(u));
  EXPECT_TRUE(has(same, "h changes neither the 4,224 parameters")) << same;
}

// --- lessons start from the configuration the user has -----------------------------------------

TEST(LessonNumbers, GqaAndWindowsStartAtTheTracesNWAndS) {
  ModelConfig cfg = sized(32, 8);
  cfg.kvHeads = 2;
  cfg.window = 4;
  cfg.sinks = 2;
  cfg.mask = MaskKind::Causal;
  const Trace t = traceOf(buildOrDie(cfg));
  LessonChoices c;
  c.keepInRange(t, 0);
  EXPECT_EQ(c.of<lessons::Gqa>().kvHeads, 2);
  EXPECT_EQ(c.of<lessons::Windows>().window, 4);
  EXPECT_EQ(c.of<lessons::Windows>().sinks, 2);
  EXPECT_TRUE(has(windowStartText(t), "W = 4, S = 2")) << windowStartText(t);

  // The lesson's own control then moves freely while the controls stay ...
  c.of<lessons::Gqa>().kvHeads = 8;
  c.of<lessons::Windows>().window = 2;
  c.keepInRange(t, 0);
  EXPECT_EQ(c.of<lessons::Gqa>().kvHeads, 8);
  EXPECT_EQ(c.of<lessons::Windows>().window, 2);

  // ... and follows them when they change: N 4 (the window kept as the user moved it) ...
  ModelConfig four = cfg;
  four.kvHeads = 4;
  const Trace t4 = traceOf(buildOrDie(four));
  c.keepInRange(t4, 0);
  EXPECT_EQ(c.of<lessons::Gqa>().kvHeads, 4);
  EXPECT_EQ(c.of<lessons::Windows>().window, 2);

  // ... no window: the lesson's own start, which it says.
  ModelConfig none = four;
  none.window = 0;
  none.sinks = 0;
  const Trace t0 = traceOf(buildOrDie(none));
  c.keepInRange(t0, 0);
  EXPECT_EQ(c.of<lessons::Windows>().window, lessons::Windows::Choices::kStartWindow);
  EXPECT_EQ(c.of<lessons::Windows>().sinks, lessons::Windows::Choices::kStartSinks);
  EXPECT_TRUE(has(windowStartText(t0), "The controls set no window: the lesson starts at W = 3, S = 1"))
      << windowStartText(t0);

  // A fresh window on a multi-head configuration opens the GQA lesson at N = h.
  LessonChoices fresh;
  const Trace mha = traceOf(buildOrDie(sized(32, 8)));
  fresh.keepInRange(mha, 0);
  EXPECT_EQ(fresh.of<lessons::Gqa>().kvHeads, 8);
}

TEST(LessonNumbers, AWorkspacesSavedChoicesAreKeptForItsConfiguration) {
  ModelConfig cfg = sized(32, 8);
  cfg.kvHeads = 2;
  Workspace ws;
  ws.config = cfg;
  ws.lessons.of<lessons::Gqa>().kvHeads = 1;
  const std::string text = workspaceToJson(ws);
  auto back = parseWorkspaceJson(text, "test workspace");
  ASSERT_TRUE(back.ok()) << back.error().message;
  LessonChoices c = back->lessons;
  c.keepInRange(traceOf(buildOrDie(back->config)), 0);
  EXPECT_EQ(c.of<lessons::Gqa>().kvHeads, 1);  // saved for N = 2, opened on N = 2: kept
}

// The GQA lesson's first map is the configuration's own when it is grouped, and says so.
TEST(LessonNumbers, GqaNamesWhatItComparesWith) {
  ModelConfig cfg = sized(32, 8);
  cfg.kvHeads = 2;
  const Model m = buildOrDie(cfg);
  auto same = gqaLesson(m, 2, 32, 2);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(gqaReferenceName(*same), "this configuration (N = 2)");
  EXPECT_EQ(gqaReferenceTitle(*same, 5), "head 5, this configuration (N = 2): K/V head 1");
  EXPECT_EQ(same->maxWeightChange, 0.0);
  EXPECT_TRUE(has(gqaReferenceText(*same), "nothing changes")) << gqaReferenceText(*same);
  auto one = gqaLesson(m, 1, 32, 2);
  ASSERT_TRUE(one.ok());
  EXPECT_GT(one->maxWeightChange, 0.0);
  EXPECT_TRUE(has(gqaReferenceText(*one), "their mean")) << gqaReferenceText(*one);
  const Model mha = buildOrDie(sized(32, 8));
  auto m8 = gqaLesson(mha, 2, 32, 2);
  ASSERT_TRUE(m8.ok());
  EXPECT_EQ(gqaReferenceTitle(*m8, 0), "head 0, N = h: its own K/V head");
  EXPECT_TRUE(gqaReferenceText(*m8).empty());
}

// The Positions lesson's difference maps speak of scores, not attention.
TEST(LessonNumbers, PositionDifferencesAreScoreDifferences) {
  ModelConfig cfg = sized(16, 4);
  cfg.mask = MaskKind::Causal;
  const Model m = buildOrDie(cfg);
  auto r = positionsLesson(m, 7, false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (bool rope : {true, false}) {
    const std::string s = positionsDifferenceMeaning(*r, rope);
    EXPECT_TRUE(has(s, "raw score")) << s;
    EXPECT_TRUE(has(s, "not a share of attention")) << s;
    EXPECT_TRUE(has(s, "Δ = 7")) << s;
    EXPECT_FALSE(has(s, "%")) << s;
  }
}

}  // namespace
}  // namespace mhascope
