// The stage texts (core/attention/stages.cpp) against what the engine does: the pseudocode lights the
// line that makes each stage's own tensor, the symbols follow the README's convention (h = number
// of heads, i = a head's index), and the claims about fully masked rows and head columns hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attention/model.hpp"
#include "attention/trace.hpp"

namespace mhascope {
namespace {

// "K_i = K[...]" -> "K", "S'_i = ..." -> "S", "Y = O W_o + b_o" -> "Y": the tensor a formula makes.
std::string madeTensor(const std::string& text) {
  std::string name;
  for (char c : text) {
    if (c == ' ' || c == '_' || c == '\'' || c == '=') break;
    name += c;
  }
  return name;
}

TEST(StageText, EachStageLightsTheLineThatMakesItsOwnTensor) {
  const auto& lines = pseudocodeListing();
  int previous = -1;
  for (const StageInfo& s : allStages()) {
    const int lit = pseudocodeLineOf(s.id);
    if (std::string(s.pseudocode).empty()) {
      EXPECT_EQ(lit, -1) << s.name;
      continue;
    }
    ASSERT_GE(lit, 0) << s.name << " lights no line";
    const std::string line = lines[static_cast<std::size_t>(lit)];
    EXPECT_EQ(madeTensor(line), madeTensor(s.formula)) << s.name << " lights '" << line << "'";
    EXPECT_GT(lit, previous) << s.name << ": the listing is not in pipeline order";
    previous = lit;
  }
  // The three splits are three different lines, and all come before the scores use them.
  const int q = pseudocodeLineOf(StageId::QHeads), k = pseudocodeLineOf(StageId::KHeads),
            v = pseudocodeLineOf(StageId::VHeads), sc = pseudocodeLineOf(StageId::Scores),
            o = pseudocodeLineOf(StageId::HeadOutputs);
  EXPECT_NE(q, k);
  EXPECT_NE(k, v);
  EXPECT_LT(k, sc);  // S = Q @ K.transpose(-2, -1) multiplies the split K ...
  EXPECT_LT(v, o);   // ... and O = A @ V the split V
  EXPECT_NE(lines[static_cast<std::size_t>(k)].find("K.view(B, T_k, N, d_k).transpose(1, 2)"), std::string::npos);
  EXPECT_NE(lines[static_cast<std::size_t>(v)].find("V.view(B, T_k, N, d_k).transpose(1, 2)"), std::string::npos);
}

TEST(StageText, HIsTheNumberOfHeadsAndIAHeadsIndex) {
  for (const StageInfo& s : allStages()) {
    for (const std::string text : {std::string(s.formula), std::string(s.explanation)}) {
      for (const char* wrong : {"h*d_k:", "(h+1)*d_k", "head h ", "head h's", "O_h", "Q_h", "K_h", "V_h", "S_h",
                                "A_h", "O_1 | O_2"}) {
        EXPECT_EQ(text.find(wrong), std::string::npos) << s.name << ": '" << wrong << "' in: " << text;
      }
    }
  }
  EXPECT_STREQ(stageInfo(StageId::QHeads).formula, "Q_i = Q[:, :, i*d_k:(i+1)*d_k]");
}

TEST(StageText, InputsAndOutputBelongToNoHead) {
  for (StageId id : {StageId::Query, StageId::Key, StageId::Value, StageId::Output}) {
    const std::string text = stageInfo(id).explanation;
    EXPECT_NE(text.find("No head owns these columns"), std::string::npos) << stageInfo(id).name;
  }
  // The split, by contrast, is where columns get owners; it is a view and only the merge copies.
  EXPECT_NE(std::string(stageInfo(StageId::QHeads).explanation).find("nothing is copied"), std::string::npos);
  EXPECT_NE(std::string(stageInfo(StageId::Concat).explanation).find("copies"), std::string::npos);
  EXPECT_NE(std::string(stageInfo(StageId::Output).explanation).find("(B, T_q, d_model)"), std::string::npos);
}

// The output stage says W_o adds one term per head, each through its own rows: O W_o + b_o equals
// the sum over heads of O_i W_o^(i) + b_o. Checked on a trace with a non-symmetric W_o.
TEST(StageText, OutputIsASumOfOneTermPerHead) {
  const std::string text = stageInfo(StageId::Output).explanation;
  EXPECT_NE(text.find("sum over i of O_i W_o^(i) + b_o"), std::string::npos);
  EXPECT_NE(text.find("heads never interact inside a layer"), std::string::npos);
  EXPECT_EQ(text.find("talk"), std::string::npos);
  ModelConfig cfg;
  cfg.text = "the cat sat on the mat";
  cfg.dModel = 12;
  cfg.heads = 3;
  cfg.seed = 11;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok()) << m.error().message;
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  const int d = t.dModel, dk = t.dk;
  const Tensor& concat = t.tensor(StageId::Concat);
  const Tensor& out = t.tensor(StageId::Output);
  const RowMatrix& wo = m->weights.wo;
  for (std::int64_t row = 0; row < concat.numel() / d; ++row) {
    for (int j = 0; j < d; ++j) {
      double sum = m->weights.bo[j];
      for (int i = 0; i < t.heads; ++i) {
        double term = 0;  // head i's own term: its d_k columns of O times its d_k rows of W_o
        for (int c = i * dk; c < (i + 1) * dk; ++c) term += double(concat.data[static_cast<std::size_t>(row * d + c)]) * wo(c, j);
        sum += term;
      }
      EXPECT_NEAR(out.data[static_cast<std::size_t>(row * d + j)], sum, 1e-4) << "row " << row << " feature " << j;
    }
  }
}

// The mask convention depends on the API: the text names which.
TEST(StageText, MaskTextNamesTheApiOfEachConvention) {
  const std::string text = stageInfo(StageId::MaskedScores).explanation;
  EXPECT_NE(text.find("nn.MultiheadAttention a bool mask's True means blocked"), std::string::npos);
  EXPECT_NE(text.find("F.scaled_dot_product_attention True means may attend"), std::string::npos);
  EXPECT_NE(text.find("Padding blocks keys, not queries"), std::string::npos);
}

TEST(StageText, ScaleTextSpeaksOfStandardDeviation) {
  const std::string text = stageInfo(StageId::ScaledScores).explanation;
  EXPECT_NE(text.find("variance d_k"), std::string::npos);
  EXPECT_NE(text.find("standard deviation grows like sqrt(d_k)"), std::string::npos);
  EXPECT_EQ(text.find("starving"), std::string::npos);  // small gradients slow learning; they do not stop it
}

// The mask stage says what a fully masked row gives; check the engine does exactly that.
TEST(StageText, FullyMaskedRowGivesZeroHeadOutputAndBiasOnlyOutput) {
  const std::string text = stageInfo(StageId::MaskedScores).explanation;
  EXPECT_NE(text.find("output row is just b_o"), std::string::npos);
  EXPECT_NE(text.find("NaN"), std::string::npos);

  ModelConfig cfg;
  cfg.text = "The cat sat on the mat";
  cfg.dModel = 8;
  cfg.heads = 2;
  cfg.seed = 3;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto Tq = m->inputs.query.dim(1), Tk = m->inputs.key.dim(1);
  Tensor mask({Tq, Tk}, {"T_q", "T_k"});
  for (std::int64_t k = 0; k < Tk; ++k) mask.data[static_cast<std::size_t>(2 * Tk + k)] = 1.0f;  // query 2: all blocked
  AttentionOptions opt = m->options;
  opt.attnMask = mask;
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, opt, t).ok());
  ASSERT_TRUE(t.isFullyMasked(0, 2));
  const int d = t.dModel, dk = t.dk;
  for (int i = 0; i < t.heads; ++i)
    for (int c = 0; c < dk; ++c)
      EXPECT_EQ(t.tensor(StageId::HeadOutputs).data[static_cast<std::size_t>(((0 * t.heads + i) * t.tq + 2) * dk + c)], 0.0f);
  for (int j = 0; j < d; ++j) {
    EXPECT_EQ(t.tensor(StageId::Concat).data[static_cast<std::size_t>(2 * d + j)], 0.0f);
    EXPECT_FLOAT_EQ(t.tensor(StageId::Output).data[static_cast<std::size_t>(2 * d + j)], m->weights.bo[j]);
  }
}

// The stepper draws its strip from the table alone: every stage has a button name, and the stages of
// one step are consecutive (a step's label never comes back after another step's).
TEST(StageText, EveryStageHasAShortNameAndItsStepsAreRuns) {
  std::vector<std::string> stepsSeen;
  for (const StageInfo& s : allStages()) {
    ASSERT_NE(s.shortName, nullptr);
    ASSERT_NE(s.group, nullptr);
    EXPECT_GT(std::strlen(s.shortName), 0u) << s.name;
    EXPECT_GT(std::strlen(s.group), 0u) << s.name;
    if (stepsSeen.empty() || stepsSeen.back() != s.group) {
      EXPECT_EQ(std::find(stepsSeen.begin(), stepsSeen.end(), s.group), stepsSeen.end())
          << "step \"" << s.group << "\" comes back at " << s.name;
      stepsSeen.emplace_back(s.group);
    }
  }
  EXPECT_EQ(stepsSeen.front(), "inputs");
  EXPECT_EQ(stepsSeen.back(), "output");
}

// The Scale stage's button and formula say the pass's own scale; every other stage's are the table's.
TEST(StageText, TheScaleStageSaysThePasssScale) {
  Trace t;
  t.scale = ScaleKind::SqrtDk;
  EXPECT_EQ(stageChip(t, StageId::ScaledScores), "÷√d_k");
  EXPECT_EQ(stageFormula(t, StageId::ScaledScores), "S'_i = S_i / sqrt(d_k)");
  t.scale = ScaleKind::SqrtDModel;
  EXPECT_EQ(stageChip(t, StageId::ScaledScores), "÷√d_model");
  t.scale = ScaleKind::None;
  EXPECT_EQ(stageFormula(t, StageId::ScaledScores), "S'_i = S_i (not scaled)");
  t.scale = ScaleKind::Given;
  t.scaleFactor = 0.204124f;
  EXPECT_EQ(stageChip(t, StageId::ScaledScores), "×0.204");
  EXPECT_EQ(stageFormula(t, StageId::ScaledScores), "S'_i = S_i · 0.204124 (the model's own scale)");
  EXPECT_EQ(stageFormula(t, StageId::Scores), stageInfo(StageId::Scores).formula);
  EXPECT_EQ(stageChip(t, StageId::Weights), stageInfo(StageId::Weights).shortName);
}

}  // namespace
}  // namespace mhascope
