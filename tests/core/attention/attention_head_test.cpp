// One head alone (attentionHead): what the window shows first for a long sequence while the whole
// trace computes. Its slice must be forward()'s slice of that (batch item, head) bit for bit — the
// numbers, the token labels, the blocked cells and the flagged rows — for every attention table,
// mask, scale, cross-attention, hand-set scores, thread count and with or without the head kernels;
// anything else is refused with a message.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "kernels/head_kernels.hpp"
#include "attention/model.hpp"
#include "../kernels/kernel_variants.hpp"

namespace mhascope {
namespace {

struct HeadCase {
  const char* name;
  MaskKind mask = MaskKind::None;
  ScaleKind scale = ScaleKind::SqrtDk;
  bool padding = false;   // key padding on key 0 of item 0 (with causal: a fully masked row) and the last keys of item 1
  bool attnMask = false;  // an explicit (T_q, T_k) mask
  bool cross = false;     // keys and values from another sentence (T_k != T_q)
  bool override = false;  // hand-set scores in a few cells
};

Model caseModel(const HeadCase& c, int tokens, int dModel, int heads) {
  ModelConfig cfg;
  cfg.tokens = tokens;
  cfg.dModel = dModel;
  cfg.heads = heads;
  cfg.batch = 2;
  cfg.mask = c.mask;
  cfg.text = "the cat sat on the mat | a dog ran far away";
  if (c.cross) {
    cfg.crossAttention = true;
    cfg.kvText = "one two three four five six seven | eight nine ten";
  }
  auto m = buildModel(cfg);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  Model model = *m;
  model.options.scale = c.scale;
  const auto Tq = model.inputs.query.dim(1), Tk = model.inputs.key.dim(1);
  if (c.padding) {
    Tensor pad({2, Tk}, {"B", "T_k"});
    pad.data[0] = 1.0f;
    for (auto k = Tk - 3; k < Tk; ++k) pad.data[static_cast<std::size_t>(Tk + k)] = 1.0f;
    model.options.keyPaddingMask = pad;
  }
  if (c.attnMask) {
    Tensor am({Tq, Tk}, {"T_q", "T_k"});
    for (std::size_t i = 0; i < am.data.size(); ++i) am.data[i] = (i * 7919 % 5 == 0) ? 1.0f : 0.0f;
    model.options.attnMask = am;
  }
  if (c.override) {
    Tensor o({heads, Tq, Tk}, {});
    std::fill(o.data.begin(), o.data.end(), std::numeric_limits<float>::quiet_NaN());
    o.data[static_cast<std::size_t>(1 * Tq * Tk + 2 * Tk + 1)] = 40.0f;
    o.data[static_cast<std::size_t>(3)] = -7.5f;
    model.options.scoresOverride = o;
  }
  return model;
}

void expectSameSlice(const Slice2D& whole, const Slice2D& alone, const std::string& what) {
  ASSERT_EQ(alone.rows, whole.rows) << what;
  ASSERT_EQ(alone.cols, whole.cols) << what;
  const auto n = static_cast<std::size_t>(whole.rows) * static_cast<std::size_t>(whole.cols);
  EXPECT_EQ(std::memcmp(alone.data, whole.data, n * sizeof(float)), 0) << what << ": the numbers differ";
  EXPECT_EQ(alone.rowLabels, whole.rowLabels) << what;
  EXPECT_EQ(alone.colLabels, whole.colLabels) << what;
  EXPECT_EQ(alone.rowAxis, whole.rowAxis) << what;
  EXPECT_EQ(alone.colAxis, whole.colAxis) << what;
  EXPECT_EQ(alone.flaggedRows, whole.flaggedRows) << what;
  ASSERT_EQ(alone.blockedCells == nullptr, whole.blockedCells == nullptr) << what;
  if (whole.blockedCells) EXPECT_EQ(std::memcmp(alone.blockedCells, whole.blockedCells, n), 0) << what << ": blocked cells";
}

TEST(AttentionHead, EqualsTheForwardsSliceBitForBit) {
  KeepHeadKernels keep;
  const std::vector<HeadCase> cases = {
      {"none"},
      {"causal", MaskKind::Causal},
      {"padding_fully_masked", MaskKind::Causal, ScaleKind::SqrtDk, true},
      {"attn_mask_sqrt_dmodel", MaskKind::None, ScaleKind::SqrtDModel, false, true},
      {"cross_padding_no_scale", MaskKind::None, ScaleKind::None, true, false, true},
      {"hand_set_scores_causal", MaskKind::Causal, ScaleKind::SqrtDk, false, false, false, true},
  };
  for (bool kernels : {true, false}) {
    if (kernels && !headKernelsAvailable()) continue;
    ASSERT_TRUE(setHeadKernels(kernels));
    for (const HeadCase& c : cases) {
      for (int threads : {1, 2}) {
        // 300 tokens: three query blocks, the last one short; d_k 16.
        Model m = caseModel(c, 300, 64, 4);
        m.options.threads = threads;
        Trace whole;
        ASSERT_TRUE(forward(m.inputs, m.weights, m.options, whole).ok()) << c.name;
        for (StageId stage : {StageId::Scores, StageId::ScaledScores, StageId::MaskedScores, StageId::Weights}) {
          for (auto [b, h] : {std::pair{0, 0}, std::pair{1, 3}, std::pair{0, 2}}) {
            const std::string what = std::string(c.name) + " " + stageInfo(stage).name + " b" + std::to_string(b) + " h" +
                                     std::to_string(h) + (kernels ? " kernels" : " general") + " threads " +
                                     std::to_string(threads);
            auto one = attentionHead(m.inputs, m.weights, m.options, stage, b, h);
            ASSERT_TRUE(one.ok()) << what << ": " << one.error().message;
            EXPECT_EQ(one->batch, 1);
            EXPECT_EQ(one->heads, 1);
            EXPECT_EQ(one->tq, whole.tq);
            EXPECT_EQ(one->tk, whole.tk);
            EXPECT_EQ(one->causal, whole.causal);
            EXPECT_EQ(one->scaleFactor, whole.scaleFactor);
            auto a = sliceStage(whole, stage, b, h);
            auto alone = sliceStage(*one, stage, 0, 0);
            ASSERT_TRUE(a.ok() && alone.ok()) << what;
            expectSameSlice(*a, *alone, what);
            // Only the one table is kept: 1/(B·h) of a stage.
            EXPECT_LE(one->residentBytes(), static_cast<std::uint64_t>(whole.tq) * whole.tk * (sizeof(float) + 1) + 4096) << what;
          }
        }
      }
    }
  }
}

TEST(AttentionHead, RefusesOtherStagesAndIndicesOutOfRange) {
  const Model m = caseModel({"causal", MaskKind::Causal}, 12, 16, 2);
  auto stage = attentionHead(m.inputs, m.weights, m.options, StageId::HeadOutputs, 0, 0);
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.error().message.find("head_outputs"), std::string::npos) << stage.error().message;
  auto head = attentionHead(m.inputs, m.weights, m.options, StageId::Weights, 0, 2);
  ASSERT_FALSE(head.ok());
  EXPECT_NE(head.error().message.find("head 2 is out of range (valid 0..1)"), std::string::npos) << head.error().message;
  auto batch = attentionHead(m.inputs, m.weights, m.options, StageId::Weights, -1, 0);
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.error().message.find("batch index -1 is out of range (valid 0..1)"), std::string::npos)
      << batch.error().message;
}

}  // namespace
}  // namespace mhascope
