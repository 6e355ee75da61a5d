// The GQA / MQA lesson (core/lessons/gqa.hpp): published models' KV bytes from their sizes, the
// parameter count with N, who reads which K/V head as the engine records it, the K/V weights made for
// N (the model's own at its N, averaged over each group otherwise) and the lesson's sentences against
// its numbers. The lessons' saved choices: workspace keys.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "io/workspace.hpp"
#include "lesson_fixtures.hpp"
#include "lessons/common.hpp"
#include "lessons/lessons.hpp"

namespace mhascope {
namespace {

using lesson_fixtures::buildOrDie;
using lesson_fixtures::has;
using lesson_fixtures::sized;
using lesson_fixtures::traceOf;

GqaLesson lessonOrDie(const Model& m, int n, int layers = 32, int bytes = 2) {
  auto r = gqaLesson(m, n, layers, bytes);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

double maxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double m = 0;
  for (std::size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
  return m;
}

const PublishedRow* published(const GqaLesson& r, const std::string& name) {
  for (const PublishedRow& p : r.published)
    if (name == p.model.name) return &p;
  ADD_FAILURE() << name << " not in the published table";
  return nullptr;
}

TEST(GqaLesson, PublishedModelsKvBytesAndWeightsFromTheirSizes) {
  const GqaLesson r = lessonOrDie(buildOrDie(sized(8, 2)), 1);
  const PublishedRow* llama3 = published(r, "Llama-3-8B");
  ASSERT_NE(llama3, nullptr);
  EXPECT_EQ(llama3->dk, 128);
  EXPECT_EQ(llama3->groupSize, 4);
  EXPECT_EQ(llama3->kvBytesPerToken, 131072);  // 2 * 32 layers * 8 * 128 * 2 bytes = 128 KiB
  EXPECT_EQ(llama3->mhaKvBytesPerToken, 524288);
  EXPECT_EQ(llama3->params.wq, 4096LL * 4096);
  EXPECT_EQ(llama3->params.wk, 4096LL * 1024);
  EXPECT_EQ(llama3->params.weights(), 2 * 4096LL * 4096 + 2 * 4096LL * 1024);
  EXPECT_EQ(published(r, "GPT-2 small")->kvBytesPerToken, 2 * 12 * 12 * 64 * 2);  // 36 KiB, multi-head
  EXPECT_EQ(published(r, "Llama-2-7B")->kvBytesPerToken, 524288);                 // 512 KiB, multi-head
  EXPECT_EQ(published(r, "Mistral-7B")->kvBytesPerToken, 131072);
  EXPECT_EQ(published(r, "Llama-2-70B")->kvBytesPerToken, 2 * 80 * 8 * 128 * 2);
  EXPECT_EQ(published(r, "Falcon-7B (MQA)")->kvBytesPerToken, 2 * 32 * 1 * 64 * 2);
  for (const PublishedRow& p : r.published) {
    EXPECT_EQ(p.model.dModel % p.model.heads, 0) << p.model.name;
    EXPECT_EQ(p.model.heads % p.model.kvHeads, 0) << p.model.name;
  }
}

TEST(GqaLesson, ParametersAndKvBytesFollowN) {
  const Model m = buildOrDie(sized(16, 4));
  for (int n : {4, 2, 1}) {
    const GqaLesson r = lessonOrDie(m, n, 32, 2);
    EXPECT_EQ(r.params.wq, 16 * 16);
    EXPECT_EQ(r.params.wk, 16 * n * 4);  // d_model x N*d_k
    EXPECT_EQ(r.params.wv, 16 * n * 4);
    EXPECT_EQ(r.params.wo, 16 * 16);
    EXPECT_EQ(r.kvBytesPerToken, 2 * 32 * n * 4 * 2);
    EXPECT_EQ(r.mhaKvBytesPerToken, 2 * 32 * 4 * 4 * 2);
    // The engine ran with exactly these matrices.
    const WeightTable wk = r.grouped.weight(WeightId::Wk);
    EXPECT_EQ(static_cast<std::int64_t>(wk.rows) * wk.cols, r.params.wk);
    EXPECT_EQ(r.grouped.kvHeads, n);
    EXPECT_EQ(r.grouped.shapeOf(StageId::KHeads)[1], n);
  }
  EXPECT_EQ(lessonOrDie(m, 2, 1, 4).kvBytesPerToken, 2 * 1 * 2 * 4 * 4);
  EXPECT_EQ(lessonOrDie(m, 4).divisors, (std::vector<int>{4, 2, 1}));
}

TEST(GqaLesson, WhoReadsWhatIsTheEnginesKvGroups) {
  const Model m = buildOrDie(sized(24, 6));
  for (int n : {6, 3, 2, 1}) {
    const GqaLesson r = lessonOrDie(m, n);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(r.kvHeadOf[static_cast<std::size_t>(i)], i / (6 / n)) << "N=" << n;
  }
  EXPECT_FALSE(gqaLesson(m, 4, 32, 2).ok());  // 4 does not divide 6
  EXPECT_EQ(gqaLesson(m, 4, 32, 2).error().message, "N (4 K/V heads) must divide h (6)");
  EXPECT_FALSE(gqaLesson(m, 3, 32, 3).ok());
}

TEST(GqaLesson, NEqualToHIsTheConfigurationItselfAndGroupsAverageTheirHeads) {
  const Model m = buildOrDie(sized(16, 4));
  const Trace own = traceOf(m);
  const GqaLesson full = lessonOrDie(m, 4);
  EXPECT_EQ(maxDiff(full.mha.tensor(StageId::Output), own.tensor(StageId::Output)), 0.0);
  EXPECT_EQ(maxDiff(full.grouped.tensor(StageId::Weights), own.tensor(StageId::Weights)), 0.0);
  EXPECT_EQ(full.maxWeightChange, 0.0);
  // N = 1: the one K/V head's W_k is the mean of the four heads' blocks.
  const MhaWeights one = weightsWithKvHeads(m.weights, 4, 4, 1);
  ASSERT_EQ(one.wk.cols(), 4);
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 4; ++c) {
      float mean = 0;
      for (int head = 0; head < 4; ++head) mean += m.weights.wk(r, head * 4 + c) / 4.0f;
      EXPECT_NEAR(one.wk(r, c), mean, 1e-6f);
    }
  }
  const GqaLesson mqa = lessonOrDie(m, 1);
  EXPECT_GT(mqa.maxWeightChange, 0.0);  // the shared K/V head is not any head's own
}

TEST(GqaLesson, AGroupedConfigurationExpandsToTheSameAttention) {
  ModelConfig cfg = sized(16, 4);
  cfg.kvHeads = 2;
  cfg.mask = MaskKind::Causal;
  const Model m = buildOrDie(cfg);
  const Trace own = traceOf(m);
  const GqaLesson r = lessonOrDie(m, 2);
  EXPECT_EQ(r.modelKvHeads, 2);
  EXPECT_EQ(maxDiff(r.grouped.tensor(StageId::Output), own.tensor(StageId::Output)), 0.0);
  // Every query head given a copy of the K/V head it read: the same attention as multi-head.
  EXPECT_LT(maxDiff(r.mha.tensor(StageId::Output), own.tensor(StageId::Output)), 1e-5);
  EXPECT_LT(r.maxWeightChange, 1e-5);
}

TEST(GqaLesson, SharingTextStatesTheLiveNumbers) {
  const Model m = buildOrDie(sized(16, 4));
  const GqaLesson r = lessonOrDie(m, 2, 32, 2);
  const std::string s = gqaSharingText(r);
  EXPECT_TRUE(has(s, "N = 2 K/V heads for h = 4 query heads, 2 query heads per K/V head")) << s;
  EXPECT_TRUE(has(s, "K/V head 0 is read by query heads 0, 1; K/V head 1 is read by query heads 2, 3.")) << s;
  EXPECT_TRUE(has(s, "16 x 8 = 128 weights each (256 with N = h)")) << s;
  EXPECT_TRUE(has(s, "= 1,024 bytes (1.0 KiB) instead of 2,048 with N = h: 2 times less.")) << s;
  EXPECT_EQ(r.kvBytesPerToken, 1024);
  EXPECT_TRUE(has(gqaSharingText(lessonOrDie(m, 4)), "(multi-head attention): every query head has its own K/V head."));
  const std::string mqa = gqaSharingText(lessonOrDie(m, 1));
  EXPECT_TRUE(has(mqa, "N = 1 K/V head for h = 4 query heads (multi-query attention)")) << mqa;
  EXPECT_TRUE(has(mqa, "K/V head 0 is read by query heads 0, 1, 2, 3.")) << mqa;
}

// Where GQA comes from and what it buys: MQA (Shazeer 2019), the GQA paper's mean-pool then uptrain,
// and that the gain is bandwidth, not attention FLOPs.
TEST(GqaLesson, IntroNamesTheOriginTheTradeOffAndTheGain) {
  const std::string s = gqaLessonIntro();
  for (const char* part : {"Shazeer 2019", "Ainslie et al. 2023", "mean-pooling", "uptraining for about 5 %",
                           "The gain is bandwidth", "not fewer FLOPs"}) {
    EXPECT_TRUE(has(s, part)) << part << ": " << s;
  }
  const auto llama = publishedAttention("Llama-3-8B");
  ASSERT_TRUE(llama.has_value());
  EXPECT_EQ(llama->kvHeads, 8);
  EXPECT_FALSE(publishedAttention("no such model").has_value());
}

TEST(GqaLesson, HeadsSharingKeysStillDifferBecauseOfTheirOwnWq) {
  const Model m = buildOrDie(sized(16, 4));
  const GqaLesson r = lessonOrDie(m, 2);
  ASSERT_EQ(groupMate(r, 0), 1);
  ASSERT_EQ(groupMate(r, 1), 0);
  ASSERT_EQ(groupMate(r, 3), 2);
  // The engine's K for query heads 0 and 1 is one tensor: the kv_groups stage maps both to head 0.
  EXPECT_EQ(r.kvHeadOf[0], r.kvHeadOf[1]);
  const double diff = mateDifference(r, 1);
  EXPECT_GT(diff, 1e-3);
  // Checked on the weights themselves.
  const Tensor& w = r.grouped.tensor(StageId::Weights);
  const std::size_t table = static_cast<std::size_t>(r.grouped.tq * r.grouped.tk);
  double own = 0;
  for (std::size_t i = 0; i < table; ++i) own = std::max(own, std::abs(static_cast<double>(w.data[i]) - w.data[table + i]));
  EXPECT_DOUBLE_EQ(own, diff);
  const std::string s = gqaMatesText(r, 1);
  EXPECT_TRUE(has(s, "Query heads 0 and 1 read the same K/V head 0")) << s;
  EXPECT_TRUE(has(s, "differ by up to " + lesson_detail::num(diff, 3))) << s;
  EXPECT_TRUE(has(s, "own W_q")) << s;
  EXPECT_TRUE(has(gqaMatesText(lessonOrDie(m, 4), 1), "pick N < h"));
  EXPECT_EQ(mateDifference(lessonOrDie(m, 4), 1), -1.0);
}

TEST(GqaLesson, DegenerateShapesAndCrossAttention) {
  // h = 1 (N = 1 is also h), one token, cross-attention with T_q != T_k, batches, a causal mask.
  ModelConfig one = sized(4, 1, "word");
  const GqaLesson r1 = lessonOrDie(buildOrDie(one), 1);
  EXPECT_EQ(r1.divisors, std::vector<int>{1});
  EXPECT_EQ(groupMate(r1, 0), -1);
  EXPECT_TRUE(has(gqaSharingText(r1), "N = 1 K/V head for h = 1 query head (multi-head attention)")) << gqaSharingText(r1);
  EXPECT_TRUE(has(gqaMatesText(r1, 0), "With h = 1 there is one query head")) << gqaMatesText(r1, 0);
  ModelConfig cross = sized(12, 6, "a b c d e|f g h i j");
  cross.crossAttention = true;
  cross.kvText = "k l m|n o";
  cross.mask = MaskKind::Causal;
  const Model m = buildOrDie(cross);
  const GqaLesson r = lessonOrDie(m, 3);
  EXPECT_EQ(r.grouped.batch, 2);
  EXPECT_NE(r.grouped.tq, r.grouped.tk);
  EXPECT_GT(mateDifference(r, 0), 0.0);
  EXPECT_EQ(maxDiff(lessonOrDie(m, 6).grouped.tensor(StageId::Output), traceOf(m).tensor(StageId::Output)), 0.0);
}

TEST(GqaLesson, ChoicesSnapToADivisorOfH) {
  Trace t;
  t.heads = 6;
  lessons::Gqa::Choices c;
  c.kvHeads = 4;
  c.layers = 999;
  c.bytes = 3;
  c.keepInRange(t);
  EXPECT_EQ(c.kvHeads, 3);
  EXPECT_EQ(c.layers, 256);
  EXPECT_EQ(c.bytes, 2);
  c.kvHeads = 0;
  c.keepInRange(t);
  EXPECT_EQ(c.kvHeads, 1);
}

TEST(GqaLesson, WorkspaceKeepsTheChoicesOfGqaAndPositions) {
  Workspace ws;
  ws.lessons.of<lessons::Gqa>().kvHeads = 2;
  ws.lessons.of<lessons::Gqa>().layers = 80;
  ws.lessons.of<lessons::Gqa>().bytes = 4;
  ws.lessons.of<lessons::Positions>().shift = 17;
  const std::string text = workspaceToJson(ws);
  const nlohmann::json j = nlohmann::json::parse(text)["lessons"];
  EXPECT_EQ(j.at("gqa_kv_heads"), 2);
  EXPECT_EQ(j.at("gqa_layers"), 80);
  EXPECT_EQ(j.at("gqa_bytes"), 4);
  EXPECT_EQ(j.at("positions_shift"), 17);
  EXPECT_FALSE(j.contains("inputs_have_codes"));  // a fact of the shown model, not a choice
  auto back = parseWorkspaceJson(text, "w.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->lessons.of<lessons::Gqa>(), ws.lessons.of<lessons::Gqa>());
  EXPECT_EQ(back->lessons.of<lessons::Positions>().shift, 17);
}

}  // namespace
}  // namespace mhascope
