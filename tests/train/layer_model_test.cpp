// A trained layer as an engine input: forward() on it reproduces the whole model's attention at
// that layer; labels are the task's symbols; bad layers and text probes are explained.
#include <gtest/gtest.h>

#include "train/layer_model.hpp"
#include "train/trainer.hpp"

using namespace mhascope;
using namespace mhascope::train;

TEST(TrainLayerModel, ReproducesTheModelsAttentionAtThatLayer) {
  TrainSettings s;
  s.task = {TaskKind::Induction, 16, 12, 3, 5, ""};
  s.model.dModel = 16;
  s.model.heads = 2;
  s.model.layers = 2;
  s.batch = 4;
  auto t = Trainer::make(s);
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(t->step().ok());
  const Checkpoint c = t->checkpoint();
  auto probe = checkpointProbe(c, 2, "");
  ASSERT_TRUE(probe.ok()) << probe.error().message;
  EXPECT_EQ(probe->labels[0][0].rfind("a", 0), 0u);
  ForwardCache cache;
  ASSERT_TRUE(forward(c.params, probe->batch, cache).ok());
  for (int layer = 0; layer < 2; ++layer) {
    auto m = trainedLayerModel(c.params, probe->batch, layer, probe->labels);
    ASSERT_TRUE(m.ok()) << m.error().message;
    Trace tr;
    ASSERT_TRUE(mhascope::forward(m->inputs, m->weights, m->options, tr).ok());
    EXPECT_EQ(tr.tensor(StageId::Weights).data, cache.layers[static_cast<std::size_t>(layer)].attn.tensor(StageId::Weights).data);
    EXPECT_EQ(tr.queryTokens, probe->labels);
    EXPECT_TRUE(tr.causal);
  }
  auto bad = trainedLayerModel(c.params, probe->batch, 2, probe->labels);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("has 2 layers (0 .. 1)"), std::string::npos) << bad.error().message;
}

TEST(TrainLayerModel, TextCheckpointNeedsTextOfItsAlphabet) {
  Checkpoint c;
  c.params = initParams({3, 8, 8, 2, 1, false}, 1);
  c.task.kind = TaskKind::Text;
  c.alphabet = {" ", "a", "b"};
  auto none = checkpointProbe(c, 1, "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--text"), std::string::npos);
  auto other = checkpointProbe(c, 1, "abc");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("'c'"), std::string::npos) << other.error().message;
  auto ok = checkpointProbe(c, 1, "ab ba ab ba");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->batch.seq, 8);  // cut to the model's T
  EXPECT_EQ(ok->labels[0][1], "b");
}
