// The quiz lesson (core/lessons/quiz.hpp): every answer matches the live trace, no distractor is
// also true, and degenerate sizes still give distinct choices.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "lessons/lessons.hpp"
#include "attention/model.hpp"
#include "lesson_fixtures.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::findQuestion;
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;
using lesson_fixtures::weightAt;

// ---------------------------------------------------------------------------------------------
// 10. quiz
// ---------------------------------------------------------------------------------------------

const std::string& answerOf(const QuizQuestion& q) { return q.choices[static_cast<std::size_t>(q.correct)]; }

TEST(LessonQuiz, AnswersMatchTheLiveTrace) {
  ModelConfig cfg = sized(12, 3);
  cfg.batch = 2;
  const Model m = buildOrDie(cfg);
  const Trace t = traceOf(m);
  const auto quiz = makeQuiz(t, m.weights);
  ASSERT_GE(quiz.size(), 15u);
  std::set<int> positions;
  for (const auto& q : quiz) {
    ASSERT_GE(q.choices.size(), 3u) << q.question;
    ASSERT_GE(q.correct, 0);
    ASSERT_LT(q.correct, static_cast<int>(q.choices.size()));
    std::set<std::string> distinct(q.choices.begin(), q.choices.end());
    EXPECT_EQ(distinct.size(), q.choices.size()) << q.question;
    EXPECT_FALSE(q.explanation.empty());
    positions.insert(q.correct);
  }
  EXPECT_GT(positions.size(), 1u);  // the answer is not always in the same place
  auto answer = [&](const std::string& start) {
    const QuizQuestion* q = findQuestion(quiz, start);
    EXPECT_NE(q, nullptr) << start;
    return q ? answerOf(*q) : std::string();
  };
  EXPECT_EQ(answer("With d_model = 12 and h = 3"), "4");  // d_k = 12 / 3
  EXPECT_EQ(answer("What shape goes into the output projection"), "(B, T_q, d_model) = (2, 7, 12)");
  EXPECT_EQ(answer("What shape does the softmax output A have"), "(B, h, T_q, T_k) = (2, 3, 7, 7)");
  EXPECT_EQ(answer("How many learned numbers"), std::to_string(4 * 144 + 4 * 12));
  EXPECT_EQ(answer("Keep d_model = 12 (and N = h) and change h from 3 to 6"), "It stays at 624");
  EXPECT_EQ(answer("Q = X W_q has d_model = 12 columns"), "Columns 4 to 7");  // head index 1
  EXPECT_EQ(answer("How many numbers does ONE head's score table"), "49");
  EXPECT_EQ(answer("With d_model = 12 and self-attention"), "T > 24");
  EXPECT_EQ(answer("In PyTorch's nn.MultiheadAttention"), "That query-key pair is blocked: its score becomes -inf");
  // PyTorch's default return value is named in the per-head question's explanation.
  EXPECT_NE(findQuestion(quiz, "What shape does the softmax output A have")->explanation.find("(B, T_q, T_k) = (2, 7, 7)"),
            std::string::npos);
  // The live question, 0-based: the most-weighted key of the middle query in head 0.
  const int qi = t.tq / 2;
  int best = 0;
  for (int k = 1; k < t.tk; ++k)
    if (weightAt(t, 0, 0, qi, k) > weightAt(t, 0, 0, qi, best)) best = k;
  const QuizQuestion* live = findQuestion(quiz, "In head 0, which key");
  ASSERT_NE(live, nullptr);
  EXPECT_NE(live->question.find("(query " + std::to_string(qi) + ")"), std::string::npos) << live->question;
  EXPECT_NE(answerOf(*live).find("(key " + std::to_string(best) + ")"), std::string::npos);
  // "Query t sees t + 1 keys" with t counted from 0, as everywhere else.
  EXPECT_NE(findQuestion(quiz, "What does the causal mask do")->explanation.find("query 0 see 1 key and query 6 see 7 keys"),
            std::string::npos);
}

// --- reading the choices back, independently of how makeQuiz built them -----------------------

std::vector<long long> numbersIn(const std::string& s) {
  std::vector<long long> v;
  for (std::size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      v.push_back(std::stoll(s.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  return v;
}

// "(B, h, T_q, d_k) = (2, 1, 7, 12)" -> {2, 7, 12}: the values without size-1 axes.
std::vector<long long> squeezedShape(const std::string& choice) {
  const auto eq = choice.find(") = (");
  std::vector<long long> v;
  for (long long x : numbersIn(choice.substr(eq == std::string::npos ? 0 : eq)))
    if (x != 1) v.push_back(x);
  return v;
}

// The set of Q's columns a choice of the column question names (empty: not a set of Q's columns).
std::set<long long> columnsNamed(const std::string& c, long long d) {
  std::set<long long> cols;
  if (c.find("input X") != std::string::npos || c.find("of W_q") != std::string::npos || c.rfind("None", 0) == 0) {
    return cols;
  }
  const auto n = numbersIn(c);
  if (c.rfind("Columns ", 0) == 0 && n.size() == 2) {
    for (long long j = n[0]; j <= n[1]; ++j) cols.insert(j);
  } else if (c.rfind("Every ", 0) == 0 && n.size() == 2) {
    for (long long j = n[1]; j < d; j += n[0]) cols.insert(j);
  } else if (c.rfind("All ", 0) == 0) {
    for (long long j = 0; j < d; ++j) cols.insert(j);
  } else if (c.rfind("Column ", 0) == 0 && n.size() == 1) {
    cols.insert(n[0]);
  } else {
    ADD_FAILURE() << "unknown column choice: " << c;
  }
  return cols;
}

// The number a row-sum choice names ("7 (T_k)", "1 / T_k = 0.143"); NaN for "no fixed value".
double rowSumValue(const std::string& c) {
  if (c.rfind("No fixed value", 0) == 0) return std::nan("");
  const auto eq = c.find("= ");
  return std::stod(eq == std::string::npos ? c : c.substr(eq + 2));
}

// Today's attention: the KV cache's bytes and the K/V head a query head reads are this trace's
// numbers, and RoPE's shift changes no score beyond float rounding (measured, in the explanation).
// Heads of a width of their own (d_k = 8 on d_model 8 with h = 2: h·d_k = 16): the questions say
// h*d_k where d_k = d_model / h would be false, and the one whose premise is d_model / h is not asked.
TEST(LessonQuiz, HeadsOfTheirOwnWidthAreAskedAsTheyAre) {
  ModelConfig cfg = sized(8, 2);
  cfg.headDim = 8;
  const Model m = buildOrDie(cfg);
  const Trace t = traceOf(m);
  ASSERT_EQ(t.dk, 8);
  const auto quiz = makeQuiz(t, m.weights);
  auto find = [&](const std::string& start) {
    const QuizQuestion* q = findQuestion(quiz, start);
    EXPECT_NE(q, nullptr) << start;
    return q;
  };
  const QuizQuestion* dk = find("With d_model = 8 and h = 2");
  ASSERT_NE(dk, nullptr);
  EXPECT_EQ(answerOf(*dk), "8");
  EXPECT_NE(dk->explanation.find("h*d_k = 16 wide, not d_model = 8"), std::string::npos) << dk->explanation;
  EXPECT_EQ(dk->explanation.find("d_k = d_model / h = "), std::string::npos) << dk->explanation;
  const QuizQuestion* wo = find("What shape goes into the output projection");
  ASSERT_NE(wo, nullptr);
  EXPECT_EQ(answerOf(*wo), "(B, T_q, h*d_k) = (1, " + std::to_string(t.tq) + ", 16)");
  const QuizQuestion* params = find("How many learned numbers");
  ASSERT_NE(params, nullptr);
  EXPECT_EQ(answerOf(*params), std::to_string(layerCounts(layerSizesOf(t)).params()));
  EXPECT_EQ(findQuestion(quiz, "Keep d_model"), nullptr);
  const QuizQuestion* cols = find("Q = X W_q has h*d_k = 16 columns (not d_model = 8)");
  ASSERT_NE(cols, nullptr);
  EXPECT_EQ(answerOf(*cols), "Columns 8 to 15");
  for (const auto& q : quiz) {
    EXPECT_EQ(q.explanation.find("(B, T_q, h*d_k) = (B, T_q, d_model)"), std::string::npos) << q.question;
    EXPECT_EQ(q.explanation.find("are (d_model, d_model) each"), std::string::npos) << q.question;
  }
}

TEST(LessonQuiz, TodaysAttentionQuestionsUseTheLiveSizes) {
  ModelConfig cfg = sized(16, 4);  // d_k = 4
  cfg.kvHeads = 2;
  cfg.attnPositions = AttnPositions::Rope;
  const Model m = buildOrDie(cfg);
  const Trace t = traceOf(m);
  const auto quiz = makeQuiz(t, m.weights);
  const QuizQuestion* kv = findQuestion(quiz, "While generating, a model keeps");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(answerOf(*kv), std::to_string(2 * 2 * 4 * 2));  // K and V, N = 2, d_k = 4, 2 bytes
  EXPECT_NE(kv->explanation.find("131072 bytes = 128 KiB"), std::string::npos);
  const QuizQuestion* group = findQuestion(quiz, "This layer uses grouped-query attention: h = 4 query heads share N = 2");
  ASSERT_NE(group, nullptr);
  const auto qh = numbersIn(group->question.substr(group->question.find("query head ")));
  ASSERT_FALSE(qh.empty());
  EXPECT_EQ(answerOf(*group), "K/V head " + std::to_string(qh[0] / 2));  // h / N = 2 query heads per K/V head
  // Under GQA the parameter count has W_k, W_v of (d_model, N*d_k) = (16, 8).
  EXPECT_EQ(answerOf(*findQuestion(quiz, "How many learned numbers")),
            std::to_string(2 * 256 + 2 * 16 * 8 + 2 * 16 + 2 * 8));
  const QuizQuestion* rope = findQuestion(quiz, "RoPE turns q and k");
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(answerOf(*rope).rfind("Nothing", 0), 0u);
  const auto at = rope->explanation.find("largest |change| over ");
  ASSERT_NE(at, std::string::npos);
  const std::string rest = rope->explanation.substr(at);
  const double change = std::stod(rest.substr(rest.find(" is ") + 4));
  EXPECT_LT(change, 1e-4) << rest;

  // Multi-head attention asks the grouping question as a supposition, with N = h / 2.
  const Model mha = buildOrDie(sized(16, 4));
  const auto plain = makeQuiz(traceOf(mha), mha.weights);
  EXPECT_NE(findQuestion(plain, "Suppose this layer used grouped-query attention: h = 4 query heads share N = 2"),
            nullptr);
  EXPECT_EQ(answerOf(*findQuestion(plain, "While generating")), std::to_string(2 * 4 * 4 * 2));
}

// For every d_model and h tested (h = 1 and h = d_model included), sentence lengths 1, 2 and 7,
// masks on and off: no distractor is also a right answer for that configuration.
TEST(LessonQuiz, NoDistractorIsAlsoTrue) {
  int configs = 0;
  for (int d : {1, 2, 3, 4, 6, 8, 12, 16}) {
    for (int h = 1; h <= d; ++h) {
      if (d % h != 0) continue;
      for (const char* text : {"x", "a b", "The cat sat on the mat today"}) {
        for (bool causal : {false, true}) {
          ModelConfig cfg = sized(d, h, text);
          if (causal) cfg.mask = MaskKind::Causal;
          cfg.bias = (d + h) % 2 == 0;
          const Model m = buildOrDie(cfg);
          const Trace t = traceOf(m);
          const auto quiz = makeQuiz(t, m.weights);
          ++configs;
          const std::string where = "d_model " + std::to_string(d) + ", h " + std::to_string(h) + ", '" + text + "'";
          for (const auto& q : quiz) {
            const std::string ctx = where + ": " + q.question;
            std::set<std::string> distinct(q.choices.begin(), q.choices.end());
            ASSERT_EQ(distinct.size(), q.choices.size()) << ctx;
            ASSERT_GE(q.choices.size(), 2u) << ctx;
            ASSERT_GE(q.correct, 0) << ctx;
            ASSERT_LT(q.correct, static_cast<int>(q.choices.size())) << ctx;
            const std::string& ans = answerOf(q);
            for (const auto& c : q.choices) EXPECT_EQ(c.find(" to -"), std::string::npos) << ctx << " -> " << c;
            for (std::size_t c = 0; c < q.choices.size(); ++c) {
              if (static_cast<int>(c) == q.correct) continue;
              const std::string& o = q.choices[c];
              if (q.question.find("shape") != std::string::npos) {
                EXPECT_NE(squeezedShape(o), squeezedShape(ans)) << ctx << " -> " << o;
              } else if (q.question.rfind("Q = X W_q has", 0) == 0) {
                // With one head all of X and all rows of W_q do feed head 0: such choices need h > 1.
                if (o.find("input X") != std::string::npos || o.find("of W_q") != std::string::npos) {
                  EXPECT_GT(h, 1) << ctx << " -> " << o;
                }
                const auto a = columnsNamed(ans, d), x = columnsNamed(o, d);
                EXPECT_EQ(a.size(), static_cast<std::size_t>(t.dk)) << ctx;
                EXPECT_NE(a, x) << ctx << " -> " << o;
              } else if (q.question.rfind("What does each row", 0) == 0) {
                EXPECT_FALSE(rowSumValue(o) == 1.0) << ctx << " -> " << o;
              } else if (!numbersIn(ans).empty() && ans.find_first_not_of("0123456789T> ") == std::string::npos) {
                EXPECT_NE(numbersIn(o), numbersIn(ans)) << ctx << " -> " << o;
              } else if (q.question.rfind("In head 0, which key", 0) == 0 && ans.rfind("None", 0) != 0 &&
                         o.rfind("None", 0) != 0) {
                const int qi = t.tq / 2;
                EXPECT_LT(weightAt(t, 0, 0, qi, static_cast<int>(numbersIn(o).back())),
                          weightAt(t, 0, 0, qi, static_cast<int>(numbersIn(ans).back())))
                    << ctx << " -> " << o;
              }
            }
            // The wrong merges equal the right one when h = 1 or T_q = 1: the question is not asked then.
            if (q.question.rfind("After A @ V", 0) == 0) EXPECT_TRUE(h > 1 && t.tq > 1) << ctx;
            // A question about doubling h is only asked with a valid other h.
            if (q.question.rfind("Keep d_model", 0) == 0) {
              const auto nums = numbersIn(q.question);  // d_model, h, h2, d_k, d_k2
              ASSERT_GE(nums.size(), 3u);
              EXPECT_EQ(d % nums[2], 0) << ctx;
              EXPECT_NE(nums[2], h) << ctx;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(configs, 100);
}

TEST(LessonQuiz, WithOneHeadTheColumnQuestionOffersNoOtherTrueAnswer) {
  const Model m = buildOrDie(sized(8, 1));
  const auto quiz = makeQuiz(traceOf(m), m.weights);
  const QuizQuestion* q = findQuestion(quiz, "Q = X W_q has d_model = 8 columns");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(answerOf(*q), "Columns 0 to 7");
  for (const auto& c : q->choices) {
    EXPECT_EQ(c.find("Every 1st column"), std::string::npos);
    EXPECT_EQ(c.find("All 8 columns"), std::string::npos);
  }
  EXPECT_GE(q->choices.size(), 3u);
  for (const auto& c : q->choices) {
    EXPECT_EQ(c.find("input X"), std::string::npos) << c;  // all of X does feed the one head
    EXPECT_EQ(c.find("of W_q"), std::string::npos) << c;   // and so do all rows of W_q
  }
  EXPECT_NE(q->explanation.find("in_proj_weight"), std::string::npos);
  // With several heads the W_q choice says which layout it means (PyTorch stores the transpose).
  const Model m4 = buildOrDie(sized(8, 4));
  const auto quiz4 = makeQuiz(traceOf(m4), m4.weights);
  const QuizQuestion* q4 = findQuestion(quiz4, "Q = X W_q has d_model = 8 columns");
  ASSERT_NE(q4, nullptr);
  bool rows = false;
  for (const auto& c : q4->choices) rows |= c.find("Rows 2 to 3 of W_q (here (d_model in, d_model out)") != std::string::npos;
  EXPECT_TRUE(rows);
}

TEST(LessonQuiz, DegenerateSizesStillGiveDistinctChoices) {
  for (auto [d, h, text] : {std::tuple{1, 1, "x"}, {2, 2, "a b"}, {4, 2, "one"}}) {
    ModelConfig cfg = sized(d, h, text);
    const Model m = buildOrDie(cfg);
    const auto quiz = makeQuiz(traceOf(m), m.weights);
    for (const auto& q : quiz) {
      std::set<std::string> distinct(q.choices.begin(), q.choices.end());
      EXPECT_EQ(distinct.size(), q.choices.size()) << q.question;
      EXPECT_GE(q.choices.size(), 2u) << q.question;
    }
  }
}

}  // namespace
}  // namespace mhascope
