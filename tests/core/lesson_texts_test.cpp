// The lessons' sentences against the engine's numbers: every sentence computed from live numbers
// is checked over many configurations, every claim about what the engine does is checked on the
// engine, and the wordings an expert read found wrong stay gone.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <cmath>
#include <random>
#include <regex>
#include <set>
#include <string>

#include "attention/model.hpp"
#include "io/presets.hpp"
#include "lesson_fixtures.hpp"
#include "lessons/lessons.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::findQuestion;
using lesson_fixtures::has;
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;

Trace traceWith(const Model& m, const MhaWeights& w) {
  Trace t;
  auto s = forward(m.inputs, w, m.options, t);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return t;
}

// The integer after `prefix` in text (-1 if absent).
long long numberAfter(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + prefix.size()));
}

double maxRelDiff(const Tensor& a, const Tensor& b) {
  double m = 0, scale = 1e-6;
  for (std::size_t i = 0; i < a.data.size(); ++i) scale = std::max(scale, std::abs(static_cast<double>(a.data[i])));
  for (std::size_t i = 0; i < a.data.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
  return m / scale;
}

// --- W_o: one term per head; heads never interact inside a layer -------------------------------

TEST(LessonTexts, QuizSaysWoAddsOneTermPerHead) {
  const Model m = buildOrDie(sized(12, 3));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "What shape goes into the output projection");
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(has(q->explanation, "heads never interact inside a layer")) << q->explanation;
  EXPECT_FALSE(has(q->explanation, "mixes them")) << q->explanation;
  for (const std::string text : {std::string(pitfallExplanation(Pitfall::SkipOutputProjection)),
                                 std::string(stageInfo(StageId::Output).explanation), q->explanation}) {
    EXPECT_FALSE(has(text, "talk")) << text;
  }
  // The sum-of-terms equation itself is checked on the engine in the stage texts' test.
}

// The weights tooltip's "can only see itself" is said only where key 0 is the query itself.
TEST(LessonTexts, FirstQuerySeesItselfOnlyInSelfAttention) {
  for (bool cross : {false, true}) {
    ModelConfig cfg = sized(8, 2, "a b c d");
    cfg.mask = MaskKind::Causal;
    if (cross) {
      cfg.crossAttention = true;
      cfg.kvText = "p q r s t";
    }
    const Trace t = traceOf(buildOrDie(cfg));
    const std::string why = forcedCellReason(t, StageId::Weights, 0, 0, 0);
    EXPECT_EQ(has(why, "itself"), !cross) << why;
    EXPECT_EQ(has(why, "key 0"), cross) << why;
  }
}

// --- why heads: no "forces heads to specialise"; each table has rank <= d_k ---------------------

TEST(LessonTexts, HeadSplitReasonClaimsOnlyWhatHolds) {
  const std::string why = headSplitReasonText();
  EXPECT_FALSE(has(why, "forces heads to specialise"));
  EXPECT_FALSE(has(why, "pushes heads apart"));
  EXPECT_TRUE(has(why, "Nothing in the layer forces heads to differ"));
  EXPECT_TRUE(has(why, "rank is at most d_k"));
  EXPECT_TRUE(has(why, "Michel et al. 2019"));
  const Model m = buildOrDie(sized(8, 2));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "Why split d_model into heads");
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(has(q->explanation, why));
  // The rank claim on the engine: every head's q . k table, for many sizes, has rank <= d_k.
  for (int d : {4, 8, 12, 16}) {
    for (int h : {1, 2, 4}) {
      if (d % h) continue;
      for (bool bias : {false, true}) {
        ModelConfig cfg = sized(d, h, "one two three four five six seven eight nine ten eleven twelve");
        cfg.bias = bias;
        const Trace t = traceOf(buildOrDie(cfg));
        for (int i = 0; i < h; ++i) EXPECT_LE(scoreTableRank(t, 0, i), d / h) << "d " << d << " h " << h << " head " << i;
      }
    }
  }
}

// --- the Learned tab: W_QK and W_OV, and W_q alone is not identifiable --------------------------

TEST(LessonTexts, HeadCircuitsTextAndItsClaimsOnTheEngine) {
  const std::string text = headCircuitsText(12, 4, true);  // d_model 12, d_k 4 (h = 3)
  EXPECT_TRUE(has(text, "W_QK^(i) = W_q^(i) W_k^(i)^T")) << text;
  EXPECT_TRUE(has(text, "W_OV^(i) = W_v^(i) W_o^(i), each (12, 12) of rank at most d_k = 4")) << text;
  EXPECT_TRUE(has(text, "any invertible (4, 4) M")) << text;
  EXPECT_TRUE(has(text, "b_q^(i) M")) << text;
  EXPECT_FALSE(has(headCircuitsText(8, 4, false), "b_q")) << "no biases, none named";

  ModelConfig cfg = sized(12, 3);
  cfg.bias = true;
  const Model m = buildOrDie(cfg);
  const Trace base = traceOf(m);
  const int dk = 4, i = 1;
  // A non-orthogonal, invertible M (d_k, d_k).
  std::mt19937 rng(7);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  Eigen::MatrixXf M(dk, dk);
  for (int r = 0; r < dk; ++r)
    for (int c = 0; c < dk; ++c) M(r, c) = (r == c ? 2.0f : 0.0f) + 0.5f * n01(rng);
  const Eigen::MatrixXf MinvT = M.inverse().transpose();
  MhaWeights w = m.weights;
  {
    RowMatrix wq = w.wq.middleCols(i * dk, dk) * M, wk = w.wk.middleCols(i * dk, dk) * MinvT;
    w.wq.middleCols(i * dk, dk) = wq;
    w.wk.middleCols(i * dk, dk) = wk;
    RowVector bq = w.bq.segment(i * dk, dk) * M, bk = w.bk.segment(i * dk, dk) * MinvT;
    w.bq.segment(i * dk, dk) = bq;
    w.bk.segment(i * dk, dk) = bk;
  }
  const Trace moved = traceWith(m, w);
  EXPECT_GT((w.wq - m.weights.wq).cwiseAbs().maxCoeff(), 0.1f) << "W_q's picture changed";
  EXPECT_LT(maxRelDiff(base.tensor(StageId::Scores), moved.tensor(StageId::Scores)), 1e-4) << "the scores did not";
  EXPECT_LT(maxRelDiff(base.tensor(StageId::Output), moved.tensor(StageId::Output)), 1e-4);
  // W_OV likewise: W_v^(i) N and N^-1 W_o^(i) (with b_v^(i) N) write the same output.
  MhaWeights w2 = m.weights;
  {
    const Eigen::MatrixXf N = M.transpose();
    RowMatrix wv = w2.wv.middleCols(i * dk, dk) * N;
    RowMatrix wo = N.inverse() * w2.wo.middleRows(i * dk, dk);
    w2.wv.middleCols(i * dk, dk) = wv;
    w2.wo.middleRows(i * dk, dk) = wo;
    RowVector bv = w2.bv.segment(i * dk, dk) * N;
    w2.bv.segment(i * dk, dk) = bv;
  }
  const Trace ov = traceWith(m, w2);
  EXPECT_LT(maxRelDiff(base.tensor(StageId::Output), ov.tensor(StageId::Output)), 1e-4);
}

// --- the scaling's size, live: "here d_k = X, so unscaled logits are sqrt(X) = Y times larger" --

TEST(LessonTexts, UnscaledLogitsTextIsLiveAndMatchesTheEngine) {
  int configs = 0;
  for (int d : {1, 4, 8, 12, 16, 64, 512}) {
    for (int h : {1, 2, 4, 8}) {
      if (d % h) continue;
      for (ScaleKind kind : {ScaleKind::SqrtDk, ScaleKind::SqrtDModel, ScaleKind::None}) {
        const int dk = d / h;
        const std::string text = unscaledLogitsText(kind, d, dk);
        char want[96];
        std::snprintf(want, sizeof want, "Here d_k = %d, so unscaled logits are sqrt(%d) = %.4g times larger", dk, dk,
                      std::sqrt(static_cast<double>(dk)));
        EXPECT_TRUE(has(text, want)) << text;
        if (d > 64) continue;  // the engine check below on the small sizes
        ModelConfig cfg = sized(d, h);
        cfg.scale = kind;
        const Trace t = traceOf(buildOrDie(cfg));
        ++configs;
        // The engine's scaled over raw scores, against what the text says this trace does.
        const Tensor& raw = t.tensor(StageId::Scores);
        const Tensor scaled = t.copyOf(StageId::ScaledScores);
        std::size_t c = 0;
        while (c < raw.data.size() && std::abs(raw.data[c]) < 1e-3f) ++c;
        ASSERT_LT(c, raw.data.size());
        const double ratio = raw.data[c] / static_cast<double>(scaled.data[c]);  // the divisor
        if (kind == ScaleKind::SqrtDk) {
          EXPECT_NEAR(ratio, std::sqrt(static_cast<double>(dk)), 1e-4 * ratio) << text;
          EXPECT_TRUE(has(text, "this trace divides by sqrt(d_k)")) << text;
        } else if (kind == ScaleKind::None) {
          EXPECT_NEAR(ratio, 1.0, 1e-6) << text;
          EXPECT_TRUE(has(text, "this trace is not scaled")) << text;
        } else {
          EXPECT_NEAR(ratio / std::sqrt(static_cast<double>(dk)), std::sqrt(static_cast<double>(h)), 1e-4 * ratio) << text;
          char more[64];
          std::snprintf(more, sizeof more, "sqrt(d_model / d_k) = %.4g times more", std::sqrt(static_cast<double>(h)));
          EXPECT_TRUE(has(text, more)) << text;
        }
      }
    }
  }
  EXPECT_GT(configs, 40);
  // The paper preset: d_k = 64, 8 times.
  EXPECT_TRUE(has(unscaledLogitsText(ScaleKind::SqrtDk, 512, 64), "Here d_k = 64, so unscaled logits are sqrt(64) = 8 times"));
}

// --- masks: each API's convention; the fully masked row elsewhere --------------------------------

TEST(LessonTexts, MaskConventionsNameTheirApi) {
  const std::string intro = maskLessonIntro();
  EXPECT_TRUE(has(intro, "in nn.MultiheadAttention (attn_mask, key_padding_mask) True means blocked")) << intro;
  EXPECT_TRUE(has(intro, "in F.scaled_dot_product_attention True means may attend")) << intro;
  EXPECT_TRUE(has(intro, "Hugging Face attention masks use 1 = keep")) << intro;
  EXPECT_TRUE(has(intro, "blocks keys, not queries")) << intro;
  EXPECT_FALSE(has(intro, "in PyTorch a bool mask's True means blocked")) << intro;
  const Model m = buildOrDie(sized(8, 2));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "In PyTorch's nn.MultiheadAttention");
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(has(q->explanation, "PyTorch: True = blocked")) << q->explanation;
  EXPECT_TRUE(has(q->explanation, "F.scaled_dot_product_attention's bool attn_mask is the other way round")) << q->explanation;
  EXPECT_TRUE(has(q->explanation, "NaN (nn.MultiheadAttention in PyTorch 1.13)")) << q->explanation;
  const std::string elsewhere = fullyMaskedRowElsewhereText();
  EXPECT_TRUE(has(elsewhere, "PyTorch 1.13's nn.MultiheadAttention gives NaN")) << elsewhere;
  EXPECT_TRUE(has(elsewhere, "F.scaled_dot_product_attention gives 0 from PyTorch 2.5 on")) << elsewhere;
}

// The masks lesson's sentence says what its masked trace shows, for causal and key padding,
// self- and cross-attention, T_q above, equal to and below T_k.
TEST(LessonTexts, MaskComparisonTextFollowsTheMaskedTrace) {
  int checked = 0;
  for (const char* q : {"a", "a b c", "The cat sat on the mat today"}) {
    for (const char* kv : {"", "x", "x y y z", "one two three four five six seven eight nine"}) {
      ModelConfig cfg = sized(8, 2, q);
      if (*kv) {
        cfg.crossAttention = true;
        cfg.kvText = kv;
      }
      const Model m = buildOrDie(cfg);
      for (MaskLesson kind : {MaskLesson::Causal, MaskLesson::KeyPadding}) {
        for (int pad : {0, 1, 2, 100}) {
          if (kind == MaskLesson::Causal && pad) continue;
          auto r = maskComparison(m, kind, pad);
          if (!r) continue;  // more padded keys than keys: refused, tested elsewhere
          const Trace& t = r->masked;
          const std::string text = maskComparisonText(*r);
          const std::string where = std::string(q) + " | " + kv + " pad " + std::to_string(pad) + ": " + text;
          auto seen = [&](int qi) {
            int n = 0;
            for (int k = 0; k < t.tk; ++k) n += t.isBlocked(0, qi, k) ? 0 : 1;
            return n;
          };
          ++checked;
          if (kind == MaskLesson::Causal) {
            EXPECT_EQ(numberAfter(text, "query 0 sees "), seen(0)) << where;
            EXPECT_EQ(has(text, "(itself)"), t.selfAttention && seen(0) == 1) << where;
            if (t.tq > 1) {
              const int last = t.tq - 1;
              EXPECT_EQ(numberAfter(text, "query " + std::to_string(last) + " sees "), seen(last)) << where;
              // "does not change" exactly when the last row really did not move.
              double moved = 0;
              for (int hh = 0; hh < t.heads; ++hh)
                for (int k = 0; k < t.tk; ++k)
                  moved = std::max(moved, std::abs(static_cast<double>(
                                              r->weightDiff.data[static_cast<std::size_t>((hh * t.tq + last) * t.tk + k)])));
              EXPECT_EQ(has(text, "its row does not change"), moved < 1e-5) << where << " (moved " << moved << ")";
            }
            EXPECT_FALSE(has(text, "sees everything")) << where;
          } else {
            const int n = r->paddedKeys;
            EXPECT_EQ(numberAfter(text, "Key padding: the last "), n) << where;
            for (int k = 0; k < t.tk; ++k) EXPECT_EQ(t.isBlocked(0, 0, k), k >= t.tk - n) << where;
            EXPECT_TRUE(has(text, "blocks keys, not queries")) << where;
            if (t.selfAttention && n < t.tk) {
              // The padded tokens' own query rows still get weights and a (meaningless) output.
              EXPECT_TRUE(has(text, "still attend to the real keys and produce outputs")) << where;
              const Tensor& ho = t.tensor(StageId::HeadOutputs);  // (B, h, T_q, d_k)
              for (int row = t.tk - n; row < t.tk; ++row) {
                EXPECT_FALSE(t.isFullyMasked(0, row)) << where;
                double norm = 0;
                for (int c = 0; c < t.dk; ++c) norm += std::abs(ho.data[static_cast<std::size_t>(row * t.dk + c)]);
                EXPECT_GT(norm, 0.0) << where << " row " << row;
              }
            }
            if (n >= t.tk) EXPECT_TRUE(has(text, "every key is padding")) << where;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 40);
}

// --- the quiz: near-ties are not asked; "spread evenly" only when clearly false ------------------

TEST(LessonTexts, WhichKeyQuestionSkipsNearTies) {
  auto paper = loadPreset("default");
  ASSERT_TRUE(paper.ok());
  int asked = 0, skipped = 0, evenOffered = 0;
  for (int tokens : {2, 3, 4, 6}) {
    for (std::uint64_t seed = 1700; seed < 1800; ++seed) {
      ModelConfig cfg = *paper;
      cfg.tokens = tokens;
      cfg.seed = seed;
      const Model m = buildOrDie(cfg);
      const Trace t = traceOf(m);
      const auto quiz = makeQuiz(t, m.weights);
      const QuizQuestion* q = findQuestion(quiz, "In head 0, which key");
      const int qi = t.tq / 2;
      std::vector<float> row(static_cast<std::size_t>(t.tk));
      t.readCells(StageId::Weights, static_cast<std::int64_t>(qi) * t.tk, t.tk, row.data());  // b 0, head 0
      std::vector<float> sorted = row;
      std::sort(sorted.rbegin(), sorted.rend());
      if (!q) {
        ++skipped;
        if (!t.isFullyMasked(0, qi)) EXPECT_LT(sorted[0] - sorted[1], 0.02f) << "seed " << seed << " skipped a clear question";
        continue;
      }
      ++asked;
      EXPECT_GE(sorted[0] - sorted[1], 0.02f) << "seed " << seed << ": a near-tie was asked";
      for (const auto& c : q->choices) {
        if (has(c, "spread evenly")) {
          ++evenOffered;
          EXPECT_GE(sorted[0], 1.0f / static_cast<float>(t.tk) + 0.05f) << "seed " << seed;
        }
      }
    }
  }
  EXPECT_GT(asked, 100);
  EXPECT_GT(skipped, 0);
  EXPECT_GT(evenOffered, 0);
  // The expert's example: 0.4356 against 0.4352, both shown 0.44.
  ModelConfig cfg = *paper;
  cfg.tokens = 3;
  cfg.seed = 1753;
  const Model m = buildOrDie(cfg);
  EXPECT_EQ(findQuestion(makeQuiz(traceOf(m), m.weights), "In head 0, which key"), nullptr);
}

// --- the quiz: the causal counts come from the live mask; no true distractor with h = 1 ----------

TEST(LessonTexts, CausalCountsFollowTheLiveMask) {
  int checked = 0;
  for (const char* text : {"x", "a b c", "The cat sat on the mat today"}) {
    for (const char* kv : {"", "p q", "one two three four five six seven eight nine"}) {
      for (int pad : {0, 1, 2}) {
        for (bool causal : {false, true}) {
          ModelConfig cfg = sized(8, 2, text);
          if (*kv) {
            cfg.crossAttention = true;
            cfg.kvText = kv;
          }
          if (causal) cfg.mask = MaskKind::Causal;
          cfg.padLastKeys = pad;
          auto built = buildModel(cfg);
          if (!built) continue;
          const Trace t = traceOf(*built);
          const auto quiz = makeQuiz(t, built->weights);
          const QuizQuestion* q = findQuestion(quiz, "What does the causal mask do");
          ASSERT_NE(q, nullptr);
          const std::string& e = q->explanation;
          const std::string last = std::to_string(t.tq - 1);
          ++checked;
          if (t.causal) {
            auto seen = [&](int qi) {
              int n = 0;
              for (int k = 0; k < t.tk; ++k) n += t.isBlocked(0, qi, k) ? 0 : 1;
              return n;
            };
            EXPECT_EQ(numberAfter(e, "query 0 sees "), seen(0)) << e;
            if (t.tq > 1) EXPECT_EQ(numberAfter(e, "query " + last + " sees "), seen(t.tq - 1)) << e;
          } else {
            EXPECT_TRUE(has(e, "A causal mask alone would let query 0 see 1 key")) << e;
            if (t.tq > 1) EXPECT_EQ(numberAfter(e, "query " + last + " see "), std::min(t.tq, t.tk)) << e;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(LessonTexts, OneHeadColumnQuestionHasNoTrueClause) {
  for (int d : {1, 2, 8}) {
    const Model m = buildOrDie(sized(d, 1));
    const auto quiz = makeQuiz(traceOf(m), m.weights);
    const QuizQuestion* q = findQuestion(quiz, "Q = X W_q has d_model = " + std::to_string(d) + " columns");
    ASSERT_NE(q, nullptr);
    EXPECT_GE(q->choices.size(), 2u);
    for (const auto& c : q->choices) EXPECT_FALSE(has(c, "no split")) << c;
  }
}

// --- the specialists: hand-set tables exceed rank d_k; a real head's cannot ----------------------

TEST(LessonTexts, SpecialistTablesAreOfHigherRankThanARealHeadCanMake) {
  auto spec = loadPreset("specialists");
  ASSERT_TRUE(spec.ok());
  const Trace t = traceOf(buildOrDie(*spec));
  const std::string text = scoreRankText(t, 0);
  EXPECT_TRUE(has(text, "a bilinear form of rank at most d_k")) << text;
  bool anyOver = false;
  for (int h = 0; h < t.heads; ++h) {
    const int rank = scoreTableRank(t, 0, h);
    // An independent count: full-pivot LU of the same (T_q, T_k) table.
    auto s = sliceStage(t, StageId::Scores, 0, h);
    ASSERT_TRUE(s.ok());
    Eigen::MatrixXd m(s->rows, s->cols);
    for (int r = 0; r < s->rows; ++r)
      for (int c = 0; c < s->cols; ++c) m(r, c) = s->at(r, c);
    Eigen::FullPivLU<Eigen::MatrixXd> lu(m);
    lu.setThreshold(1e-4);
    EXPECT_EQ(rank, static_cast<int>(lu.rank())) << "head " << h;
    EXPECT_TRUE(has(text, "head " + std::to_string(h) + ": " + std::to_string(rank))) << text;
    anyOver |= rank > t.dk;
  }
  EXPECT_TRUE(anyOver) << "the specialists preset's hand-set tables exceed d_k = " << t.dk;
  EXPECT_TRUE(has(text, "no real head with d_k = " + std::to_string(t.dk))) << text;
  // Without hand-set scores nothing exceeds d_k, and the text says nothing of it.
  const Trace plain = traceOf(buildOrDie(sized(8, 2)));
  EXPECT_FALSE(has(scoreRankText(plain, 0), "no real head")) << scoreRankText(plain, 0);
}

// A long sequence's tables are not taken apart (one SVD per head would stall the window): the note
// says so, with the sizes, and the Roles lesson makes it once per trace, in compute().
TEST(LessonTexts, LongTablesAreNotTakenApartForTheirRank) {
  ModelConfig cfg = sized(8, 2);
  cfg.tokens = kRankMaxTokens + 1;
  const Model m = buildOrDie(cfg);
  const Trace t = traceOf(m);
  const std::string text = scoreRankText(t, 0);
  EXPECT_TRUE(has(text, "up to " + std::to_string(kRankMaxTokens) + " x " + std::to_string(kRankMaxTokens))) << text;
  EXPECT_TRUE(has(text, "this one is 257 x 257")) << text;
  auto roles = lessons::Roles::compute(LessonInput{t, m, 0}, lessons::Roles::Choices{});
  ASSERT_TRUE(roles.ok());
  EXPECT_EQ(roles->rankNote, text);
  // At the limit the ranks are still there.
  cfg.tokens = kRankMaxTokens;
  const Trace edge = traceOf(buildOrDie(cfg));
  EXPECT_TRUE(has(scoreRankText(edge, 0), "Raw score-table ranks here: head 0: ")) << scoreRankText(edge, 0);
}

// The roles lesson names the roles trained heads take and how layers compose.
TEST(LessonTexts, TrainedHeadRolesNameDuplicateTokenCompositionRedundancyAndSinks) {
  const std::string text = trainedHeadRolesText();
  for (const char* part : {"previous-token heads", "duplicate-token heads", "induction heads", "K-composition",
                           "Q-composition", "V-composition", "redundant", "first token", "attention sink",
                           "shortcut"}) {
    EXPECT_TRUE(has(text, part)) << part;
  }
}

// --- the cell: the scaling keeps the spread near 1 under an assumption, not always ---------------

TEST(LessonTexts, CellIntroStatesTheAssumptionAndItHolds) {
  const std::string intro = cellLessonIntro();
  EXPECT_FALSE(has(intro, "Scaling keeps its size independent of d_k")) << intro;
  EXPECT_TRUE(has(intro, "roughly independent, zero-mean, unit-variance entries")) << intro;
  EXPECT_TRUE(has(intro, "depends on the inputs and the initialisation")) << intro;
  EXPECT_TRUE(has(intro, "Var(q . k) is about d_k/4")) << intro;
  // With independent unit-variance entries the scaled spread is ~1 for every d_k; with aligned q
  // and k (as training can make them) it grows like sqrt(d_k) even after scaling.
  std::mt19937 rng(3);
  std::normal_distribution<double> n01(0.0, 1.0);
  for (int dk : {1, 4, 16, 64, 256}) {
    double sumIndep = 0, sumAligned = 0;
    const int n = 4000;
    for (int s = 0; s < n; ++s) {
      double dot = 0, aligned = 0;
      for (int i = 0; i < dk; ++i) {
        const double q = n01(rng), k = n01(rng);
        dot += q * k;
        aligned += q * (0.9 * q + 0.1 * k);  // k mostly follows q
      }
      sumIndep += dot * dot / dk;
      sumAligned += aligned / std::sqrt(static_cast<double>(dk));
    }
    EXPECT_NEAR(std::sqrt(sumIndep / n), 1.0, 0.08) << "d_k " << dk;
    if (dk >= 16) EXPECT_GT(sumAligned / n, 0.8 * std::sqrt(static_cast<double>(dk))) << "d_k " << dk;
  }
}

// The intro's example: nn.MultiheadAttention's in_proj (3 d_model, d_model) drawn Xavier-uniform,
// U(-a, a) with a = sqrt(6 / (d_model + 3 d_model)), on unit-variance inputs: q and k entries of
// variance 1/2, Var(q . k) about d_k / 4 for a query and a key of two independent tokens.
TEST(LessonTexts, CellIntroXavierExampleHolds) {
  std::mt19937 rng(5);
  std::normal_distribution<double> n01(0.0, 1.0);
  for (int d : {16, 64}) {
    const int dk = d / 4;  // h = 4
    const double a = std::sqrt(6.0 / (d + 3.0 * d));
    std::uniform_real_distribution<double> u(-a, a);
    double sumQ2 = 0, sumDot2 = 0;
    const int n = 3000;
    for (int s = 0; s < n; ++s) {
      std::vector<double> x(static_cast<std::size_t>(d)), y(static_cast<std::size_t>(d));
      for (auto& v : x) v = n01(rng);
      for (auto& v : y) v = n01(rng);
      double dot = 0;
      for (int i = 0; i < dk; ++i) {  // head 0's rows of in_proj's query and key parts, fresh each sample
        double q = 0, k = 0;
        for (int j = 0; j < d; ++j) {
          q += u(rng) * x[static_cast<std::size_t>(j)];
          k += u(rng) * y[static_cast<std::size_t>(j)];
        }
        dot += q * k;
        sumQ2 += q * q / dk;
      }
      sumDot2 += dot * dot;
    }
    EXPECT_NEAR(sumQ2 / n, 0.5, 0.03) << "d_model " << d;
    EXPECT_NEAR(sumDot2 / n / dk, 0.25, 0.025) << "d_model " << d;
  }
}

// --- cost: T^2 memory only when stored; the crossover for the layer alone and for a block --------

TEST(LessonTexts, CostTextsSayWhenTSquaredIsMemoryAndWhichCrossover) {
  const std::string intro = costLessonIntro();
  EXPECT_TRUE(has(intro, "FlashAttention")) << intro;
  EXPECT_TRUE(has(intro, "O(T) extra memory")) << intro;
  EXPECT_FALSE(has(intro, "that T^2 is what makes long inputs expensive")) << intro;
  const Model m = buildOrDie(sized(12, 3));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "How many numbers does ONE head's score table");
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(has(q->explanation, "why long sequences cost memory:")) << q->explanation;
  EXPECT_TRUE(has(q->explanation, "memory where the tables are stored")) << q->explanation;
  for (std::int64_t d : {1, 8, 64, 512}) {
    const CostSizes s{2, 10, 10, d, 1};
    const CostCrossover c = costCrossover(s);
    EXPECT_DOUBLE_EQ(c.blockCrossoverTokens, 6.0 * static_cast<double>(d));
    // Independently: projections + a 4x MLP against the attention matmuls, equal at T = 6 d_model.
    const std::int64_t T = 6 * d;
    const FlopCount at = countFlops(2, T, T, d, 1);
    const double mlp = 2.0 * (2.0 * 2 * T * d * 4 * d);
    EXPECT_DOUBLE_EQ(at.projections + mlp, at.attention);
    const std::string text = costCrossoverText(s);
    EXPECT_TRUE(has(text, "That is the attention layer alone")) << text;
    EXPECT_TRUE(has(text, "T > 6*d_model = " + std::to_string(6 * d))) << text;
  }
  const QuizQuestion* x = findQuestion(quiz, "With d_model = 12 and self-attention");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->explanation, "attention layer alone")) << x->explanation;
  EXPECT_TRUE(has(x->explanation, "T > 6*d_model = 72")) << x->explanation;
}

// --- saturated softmax: small gradients can stall learning --------------------------------------

TEST(LessonTexts, SaturationCanStallLearning) {
  const Model m = buildOrDie(sized(8, 2));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "The standard rule divides the scores by sqrt(d_k)");
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(has(q->explanation, "they do not stop it")) << q->explanation;
  EXPECT_TRUE(has(q->explanation, "learning effectively stalls")) << q->explanation;
}

}  // namespace
}  // namespace mhascope
