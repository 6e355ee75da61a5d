// One naming for a selection (window label = export title = file name, 0-based), which stages'
// columns belong to heads, why a masked cell has the value it must, and the learned matrices
// recorded with the trace.
#include <gtest/gtest.h>

#include <string>

#include "attention/model.hpp"
#include "attention/trace.hpp"

namespace mhascope {
namespace {

Trace traceOf(ModelConfig cfg) {
  auto m = buildModel(cfg);
  EXPECT_TRUE(m.ok()) << m.error().message;
  Trace t;
  auto st = forward(m->inputs, m->weights, m->options, t);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return t;
}

TEST(SelectionName, ZeroBasedAndTheSameForTitleAndFile) {
  const SelectionName n = nameSelection(StageId::Weights, 1, 2);
  EXPECT_EQ(n.title, "Softmax (weights) \u00b7 head 2 \u00b7 batch 1");
  EXPECT_EQ(n.fileStem, "weights_b1_h2");
  // Head 0 is "head 0" and "_h0": what you see is what you type (`--head 0`).
  EXPECT_EQ(nameSelection(StageId::MaskedScores, 0, 0).fileStem, "masked_scores_b0_h0");
  EXPECT_NE(nameSelection(StageId::MaskedScores, 0, 0).title.find("head 0"), std::string::npos);
  // Stages without a head axis name no head, even if one is passed.
  EXPECT_EQ(nameSelection(StageId::Output, 0, 3).fileStem, "output_b0");
  EXPECT_EQ(nameSelection(StageId::Output, 0, 3).title, "Output projection (output) \u00b7 batch 0");
  // The grid of every head.
  EXPECT_EQ(nameSelection(StageId::Scores, 0, -1, 4).title, "Scores (scores) \u00b7 all 4 heads \u00b7 batch 0");
  EXPECT_EQ(nameSelection(StageId::Scores, 0, -1, 4).fileStem, "scores_b0_all_heads");
  // The stage's CLI name (in the file name) is in the title too, next to the window's title.
  for (const StageInfo& info : allStages()) {
    const SelectionName s = nameSelection(info.id, 0, 0);
    EXPECT_EQ(s.fileStem.rfind(info.name, 0), 0u) << s.fileStem;
    EXPECT_NE(s.title.find(std::string(info.title) + " (" + info.name + ")"), std::string::npos) << s.title;
  }
}

TEST(SelectionName, SliceNamesMatchTheirSelection) {
  ModelConfig cfg;
  cfg.text = "a b c | d e f";
  cfg.dModel = 8;
  cfg.heads = 2;
  const Trace t = traceOf(cfg);
  auto s = sliceStage(t, StageId::Weights, 1, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(nameSlice(*s).fileStem, "weights_b1_h1");
  EXPECT_EQ(nameSlice(*s).title, nameSelection(StageId::Weights, 1, 1).title);
}

// A layer of a model (AttentionOptions::layer, recorded in the trace and its slices) is named after
// the stage in the title and the file name; a layer of its own (-1) keeps the words above.
TEST(SelectionName, ALayerOfAModelIsNamed) {
  EXPECT_EQ(nameSource(-1).title, "");
  EXPECT_EQ(nameSource(3).title, "layer 3");
  EXPECT_EQ(nameSource(3).fileStem, "layer3");
  const SelectionName n = nameSelection(StageId::Weights, 0, 1, 0, 3);
  EXPECT_EQ(n.title, "Softmax (weights) \u00b7 layer 3 \u00b7 head 1 \u00b7 batch 0");
  EXPECT_EQ(n.fileStem, "weights_layer3_b0_h1");
  EXPECT_EQ(nameSelection(StageId::Scores, 0, -1, 4, 0).fileStem, "scores_layer0_b0_all_heads");
  EXPECT_EQ(nameWeight(WeightId::Wq, 2).title, "W_q (learned matrix) \u00b7 layer 2");
  EXPECT_EQ(nameWeight(WeightId::Wq, 2).fileStem, "w_q_layer2");
  EXPECT_EQ(nameWeight(WeightId::Bo).fileStem, "b_o");

  ModelConfig cfg;
  cfg.text = "a b c";
  cfg.dModel = 8;
  cfg.heads = 2;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok()) << m.error().message;
  Trace plain;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, plain).ok());
  EXPECT_EQ(plain.layer, -1);
  m->options.layer = 5;
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  EXPECT_EQ(t.layer, 5);
  auto s = sliceStage(t, StageId::Weights, 0, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(nameSlice(*s).title, "Softmax (weights) \u00b7 layer 5 \u00b7 head 1 \u00b7 batch 0");
  auto w = sliceWeight(t, WeightId::Wo);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(nameSlice(*w).fileStem, "w_o_layer5");
}

TEST(HeadOwnership, OnlyProjectionsSplitHeadsAndConcatBelongToHeads) {
  // No head owns the input columns; in the output W_o has added one term per head into every feature.
  EXPECT_FALSE(headsOwnColumns(StageId::Query));
  EXPECT_FALSE(headsOwnColumns(StageId::Key));
  EXPECT_FALSE(headsOwnColumns(StageId::Value));
  EXPECT_FALSE(headsOwnColumns(StageId::Output));
  for (StageId id : {StageId::QProj, StageId::KProj, StageId::VProj, StageId::QHeads, StageId::HeadOutputs, StageId::Concat}) {
    EXPECT_TRUE(headsOwnColumns(id)) << stageInfo(id).name;
  }
  EXPECT_NE(std::string(noHeadOwnerNote(StageId::Query)).find("every head sees all of them through W_q, W_k, W_v"),
            std::string::npos);
  EXPECT_NE(std::string(noHeadOwnerNote(StageId::Output)).find("W_o adds one term per head into every feature"), std::string::npos);
}

TEST(ForcedCells, CausalMaskSaysWhyACellIsBlockedOrOne) {
  ModelConfig cfg;
  cfg.text = "a b c d";
  cfg.dModel = 8;
  cfg.heads = 2;
  cfg.mask = MaskKind::Causal;
  const Trace t = traceOf(cfg);
  EXPECT_EQ(forcedCellReason(t, StageId::Weights, 0, 0, 0), "the first query can only see itself, so its weight is exactly 1");
  EXPECT_EQ(forcedCellReason(t, StageId::Weights, 0, 1, 3),
            "blocked by the causal mask: key t = 3 > query t = 1, so its weight is exactly 0");
  EXPECT_NE(forcedCellReason(t, StageId::MaskedScores, 0, 1, 3).find("\u2212inf"), std::string::npos);
  EXPECT_EQ(forcedCellReason(t, StageId::Weights, 0, 2, 1), "") << "an ordinary weight";
  EXPECT_EQ(forcedCellReason(t, StageId::Scores, 0, 1, 3), "") << "before the mask nothing is forced";
  // The slices carry the blocked cells, so every view and the export draw them alike.
  auto w = sliceStage(t, StageId::Weights, 0, 1);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->isBlockedCell(1, 3));
  EXPECT_FALSE(w->isBlockedCell(3, 1));
  // ... as the trace's own flags, not a copy (a copy was 16 MiB of fresh pages per slice at
  // T = 4096: ~100 ms on the UI thread when a long sequence's picture came).
  EXPECT_EQ(w->blockedCells, t.blocked.data());
  EXPECT_EQ(w->ownBlocked, nullptr);
  auto sc = sliceStage(t, StageId::Scores, 0, 1);
  ASSERT_TRUE(sc.ok());
  EXPECT_EQ(sc->blockedCells, nullptr) << "raw scores are not masked yet";

  ModelConfig pad = cfg;
  pad.mask = MaskKind::None;
  pad.padLastKeys = 1;
  const Trace p = traceOf(pad);
  EXPECT_EQ(forcedCellReason(p, StageId::Weights, 0, 0, 3), "blocked by the key padding mask: key 3 is padding, so its weight is exactly 0");
}

TEST(LearnedMatrices, TheTraceRecordsTheWeightsThePassUsed) {
  ModelConfig cfg;
  cfg.text = "a b c";
  cfg.dModel = 8;
  cfg.heads = 2;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok());
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  ASSERT_NE(t.weights, nullptr);
  EXPECT_NE(t.weights.get(), &m->weights) << "a copy: the model's weights may change after";
  auto wq = sliceWeight(t, WeightId::Wq);
  ASSERT_TRUE(wq.ok());
  EXPECT_EQ(wq->rows, 8);
  EXPECT_EQ(wq->cols, 8);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) EXPECT_EQ(wq->at(r, c), m->weights.wq(r, c));
  }
  auto bo = sliceWeight(t, WeightId::Bo);
  ASSERT_TRUE(bo.ok());
  EXPECT_EQ(bo->rows, 1);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(bo->at(0, c), m->weights.bo(0, c));
  EXPECT_EQ(nameSlice(*wq).title, "W_q (learned matrix)");
  EXPECT_EQ(nameSlice(*bo).fileStem, "b_o");
}

// With N K/V heads W_k, W_v and b_k, b_v make N·d_k features, and their column axis says so; the
// stages' K and V projections too (N = h keeps d_model).
TEST(LearnedMatrices, GroupedKeyAndValueMatricesAreNdkWide) {
  ModelConfig cfg;
  cfg.text = "a b c";
  cfg.dModel = 16;
  cfg.heads = 4;
  cfg.kvHeads = 2;
  const Trace t = traceOf(cfg);
  for (WeightId id : {WeightId::Wk, WeightId::Wv, WeightId::Bk, WeightId::Bv}) {
    auto s = sliceWeight(t, id);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->cols, 8) << weightName(id);
    EXPECT_EQ(s->colAxis, "N·d_k_out") << weightName(id);
  }
  EXPECT_EQ(sliceWeight(t, WeightId::Wq)->colAxis, "d_model_out");
  EXPECT_EQ(t.axesOf(StageId::KProj).back(), "N·d_k");
  EXPECT_EQ(t.axesOf(StageId::VProj).back(), "N·d_k");
  cfg.kvHeads = 0;
  const Trace mha = traceOf(cfg);
  EXPECT_EQ(sliceWeight(mha, WeightId::Wk)->colAxis, "d_model_out");
  EXPECT_EQ(mha.axesOf(StageId::KProj).back(), "d_model");
}

// The axis kind is decided once from the name; slices carry it for the code that decides by it.
TEST(AxisKinds, NamesMapToKindsAndSlicesCarryThem) {
  EXPECT_EQ(axisKind("B"), AxisKind::Batch);
  EXPECT_EQ(axisKind("h"), AxisKind::Heads);
  EXPECT_EQ(axisKind("T_q"), AxisKind::QueryTokens);
  EXPECT_EQ(axisKind("T_k"), AxisKind::KeyTokens);
  EXPECT_EQ(axisKind("d_model"), AxisKind::DModel);
  EXPECT_EQ(axisKind("d_k"), AxisKind::HeadDim);
  EXPECT_EQ(axisKind("d_model_in"), AxisKind::Other);
  ModelConfig cfg;
  cfg.mask = MaskKind::Causal;
  const Trace t = traceOf(cfg);
  const auto w = sliceStage(t, StageId::Weights, 0, 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->rowKind, AxisKind::QueryTokens);
  EXPECT_EQ(w->colKind, AxisKind::KeyTokens);
  EXPECT_EQ(w->rowLabels, t.queryTokens[0]) << "token rows are labelled by their tokens";
  const auto q = sliceStage(t, StageId::QHeads, 0, 0);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->colKind, AxisKind::HeadDim);
  EXPECT_EQ(q->colLabels.front(), "0");
  const auto p = sliceStage(t, StageId::QProj, 0, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->colKind, AxisKind::DModel);
  const auto wq = sliceWeight(t, WeightId::Wq);
  ASSERT_TRUE(wq.ok());
  EXPECT_EQ(wq->rowKind, AxisKind::Other);
}

}  // namespace
}  // namespace mhascope
