// The lazy stages (scaled and masked scores): not stored by the forward, yet every way of reading
// them — slices, cells, whole tables, the non-finite scan — gives the numbers the forward used,
// bit for bit, computed here explicitly from the recorded scores and the mask.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "attention/engine.hpp"
#include "kernels/head_kernels.hpp"
#include "attention/model.hpp"
#include "kernels/row_kernels.hpp"
#include "color/colormap.hpp"

namespace mhascope {
namespace {

bool sameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct LazyCase {
  const char* name;
  MaskKind mask = MaskKind::None;
  ScaleKind scale = ScaleKind::SqrtDk;
  bool padding = false;   // key padding mask on the last keys of item 1, and key 0 of item 0
  bool attnMask = false;  // an explicit (T_q, T_k) mask
};

Model caseModel(const LazyCase& c, int tokens = 37, int dModel = 32, int heads = 4, int batch = 2) {
  ModelConfig cfg;
  cfg.tokens = tokens;
  cfg.dModel = dModel;
  cfg.heads = heads;
  cfg.batch = batch;
  cfg.mask = c.mask;
  cfg.text = "the cat sat on the mat | a dog ran far away";
  auto m = buildModel(cfg);
  EXPECT_TRUE(m.ok());
  Model model = *m;
  model.options.scale = c.scale;
  if (c.padding) {
    Tensor pad({batch, tokens}, {"B", "T_k"});
    pad.data[0] = 1.0f;  // with the causal mask, query 0 of item 0 sees no key: a fully masked row
    for (int k = tokens - 5; k < tokens; ++k) pad.data[static_cast<std::size_t>(tokens + k)] = 1.0f;
    model.options.keyPaddingMask = pad;
  }
  if (c.attnMask) {
    Tensor am({tokens, tokens}, {"T_q", "T_k"});
    for (std::size_t i = 0; i < am.data.size(); ++i) am.data[i] = (i * 7919 % 5 == 0) ? 1.0f : 0.0f;
    model.options.attnMask = am;
  }
  return model;
}

const std::vector<LazyCase>& cases() {
  static const std::vector<LazyCase> all = {
      {"none"},
      {"causal", MaskKind::Causal},
      {"padding_fully_masked", MaskKind::Causal, ScaleKind::SqrtDk, true},
      {"attn_mask_sqrt_dmodel", MaskKind::None, ScaleKind::SqrtDModel, false, true},
      {"all_masks_no_scale", MaskKind::Causal, ScaleKind::None, true, true},
  };
  return all;
}

// The explicit rule: scaled = s * factor (one float product); masked = -inf where blocked.
float expected(const Trace& t, StageId id, std::int64_t i) {
  const float s = t.tensor(StageId::Scores).data[static_cast<std::size_t>(i)] * t.scaleFactor;
  if (id == StageId::ScaledScores) return s;
  const std::int64_t perHead = static_cast<std::int64_t>(t.tq) * t.tk, b = i / (perHead * t.heads);
  return t.blocked[static_cast<std::size_t>(b * perHead + i % perHead)] ? -std::numeric_limits<float>::infinity() : s;
}

TEST(LazyStages, AreNotStoredAndReadExactlyAsTheScoresScaledAndMasked) {
  for (const LazyCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Model m = caseModel(c);
    Trace t;
    ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
    if (c.padding) {
      EXPECT_TRUE(t.isFullyMasked(0, 0));
    }
    for (StageId id : {StageId::ScaledScores, StageId::MaskedScores}) {
      SCOPED_TRACE(stageInfo(id).name);
      ASSERT_TRUE(t.isLazy(id));
      EXPECT_TRUE(t.stages[static_cast<std::size_t>(id)].tensor.data.empty()) << "the forward stored a lazy stage";
      EXPECT_THROW(t.tensor(id), std::logic_error) << "a lazy stage has no stored table to give";
      EXPECT_EQ(t.shapeOf(id), t.shapeOf(StageId::Scores));
      // Slices of every (batch item, head).
      for (int b = 0; b < t.batch; ++b) {
        for (int h = 0; h < t.heads; ++h) {
          auto s = sliceStage(t, id, b, h);
          ASSERT_TRUE(s.ok());
          const std::int64_t base = (static_cast<std::int64_t>(b) * t.heads + h) * t.tq * t.tk;
          for (int r = 0; r < s->rows; ++r)
            for (int k = 0; k < s->cols; ++k)
              ASSERT_TRUE(sameBits(s->at(r, k), expected(t, id, base + static_cast<std::int64_t>(r) * t.tk + k)))
                  << "b " << b << " h " << h << " q " << r << " k " << k;
        }
      }
      // Single cells and the whole table.
      const std::int64_t n = Tensor::numelOf(t.shapeOf(id));
      for (std::int64_t i = 0; i < n; i += 97) ASSERT_TRUE(sameBits(t.cell(id, i), expected(t, id, i))) << i;
      const Tensor whole = t.copyOf(id);
      ASSERT_EQ(static_cast<std::int64_t>(whole.data.size()), n);
      EXPECT_EQ(whole.axes, (std::vector<std::string>{"B", "h", "T_q", "T_k"}));
      for (std::int64_t i = 0; i < n; ++i) ASSERT_TRUE(sameBits(whole.data[static_cast<std::size_t>(i)], expected(t, id, i))) << i;
    }
  }
}

// The forward's weights are the softmax kernel applied to the masked row made as above: the
// lazy numbers are the very ones the softmax used.
TEST(LazyStages, WeightsAreTheSoftmaxOfTheLazyMaskedRowBitForBit) {
  for (const LazyCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Model m = caseModel(c, 150, 32, 4, 2);  // two query blocks, odd T
    Trace t;
    ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
    std::vector<float> row(static_cast<std::size_t>(t.tk)), w(row.size());
    for (std::int64_t r = 0; r < static_cast<std::int64_t>(t.batch) * t.heads * t.tq; ++r) {
      const std::int64_t b = r / (static_cast<std::int64_t>(t.heads) * t.tq), q = r % t.tq;
      t.readCells(StageId::MaskedScores, r * t.tk, t.tk, row.data());
      const std::uint8_t* blk = t.blocked.data() + (b * t.tq + q) * t.tk;
      bool any = false;
      float mx = -std::numeric_limits<float>::infinity();
      for (int k = 0; k < t.tk; ++k) {
        any = any || blk[k] != 0;
        mx = std::max(mx, row[static_cast<std::size_t>(k)]);
      }
      softmaxRow(row.data(), mx, BlockedKeys{any ? blk : nullptr}, t.isFullyMasked(static_cast<int>(b), static_cast<int>(q)), w.data(), t.tk);
      const float* rec = t.tensor(StageId::Weights).ptr() + r * t.tk;
      for (int k = 0; k < t.tk; ++k) ASSERT_TRUE(sameBits(w[static_cast<std::size_t>(k)], rec[k])) << "row " << r << " key " << k;
    }
  }
}

TEST(LazyStages, TheTraceHoldsTwoScoreTablesFewerAndSlicesMakeNoWholeTable) {
  const Model m = caseModel({"causal", MaskKind::Causal}, 256, 64, 4, 1);
  Trace t;
  Engine engine;
  ASSERT_TRUE(engine.forward(m.inputs, m.weights, m.options, t).ok());
  const double table = 4.0 * 1 * 4 * 256 * 256;  // one (B, h, T_q, T_k) table
  double allStored = static_cast<double>(t.blocked.capacity() + t.fullyMasked.capacity());
  for (int i = 0; i < kStageCount; ++i) allStored += 4.0 * static_cast<double>(Tensor::numelOf(t.shapeOf(static_cast<StageId>(i))));
  allStored += 4.0 * (4 * 64 * 64 + 4 * 64);  // W_q … W_o and the biases
  // The keys transposed for the scores kernel, when it runs (4 heads of d_k 16): the engine's
  // working copy, beside the trace and not in it.
  const std::int64_t packedKeys = headKernelsEnabled() ? 4 * packedKeysFloats(256, 16) : 0;
  EXPECT_EQ(static_cast<std::int64_t>(engine.scratch().packedKeys.size()), packedKeys);
  const auto before = static_cast<double>(t.residentBytes());
  EXPECT_NEAR(before, allStored - 2 * table, 0.02 * table);
  // The budget's estimate agrees: the trace and its engine's working copy of the keys.
  const double withScratch = before + 4.0 * static_cast<double>(packedKeys);
  EXPECT_NEAR(withScratch, estimateTraceBytes(1, 256, 256, 64, 4), 0.05 * withScratch);

  // Every head's slice of both lazy stages: each slice owns its numbers, the trace makes nothing.
  std::vector<Slice2D> kept;
  for (StageId id : {StageId::ScaledScores, StageId::MaskedScores})
    for (int h = 0; h < t.heads; ++h) {
      auto s = sliceStage(t, id, 0, h);
      ASSERT_TRUE(s.ok());
      ASSERT_TRUE(s->owned);
      kept.push_back(*s);
    }
  EXPECT_EQ(static_cast<double>(t.residentBytes()), before);
  // The window's colour scale over a whole lazy stage reads it a block at a time, exactly.
  RangeAccumulator acc(DataKind::Signed);
  for (const Slice2D& s : kept) {
    if (s.stage == StageId::MaskedScores) acc.add(s.data, static_cast<std::size_t>(s.rows) * s.cols);
  }
  EXPECT_EQ(static_cast<double>(t.residentBytes()), before);

  // A whole-table reader makes its own table: the trace holds no more than before.
  const Tensor whole = t.copyOf(StageId::MaskedScores);
  EXPECT_EQ(static_cast<double>(whole.data.size()) * 4.0, table);
  EXPECT_EQ(static_cast<double>(t.residentBytes()), before);
  const ColorRange whole_range = rangeFor(DataKind::Signed, whole.ptr(), whole.data.size());
  EXPECT_EQ(acc.range().lo, whole_range.lo);
  EXPECT_EQ(acc.range().hi, whole_range.hi);
  // Copies of a slice stay valid after the trace's next forward: its numbers and its mask flags
  // (a masked-scores slice owns both; the causal mask blocks key 1 for query 0).
  const Slice2D copy = kept.back();
  const float first = copy.at(0, 0);
  ASSERT_NE(copy.ownBlocked, nullptr);
  ASSERT_TRUE(copy.isBlockedCell(0, 1));
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  EXPECT_TRUE(sameBits(copy.at(0, 0), first));
  t = Trace{};  // even with the trace gone
  EXPECT_TRUE(copy.isBlockedCell(0, 1));
  EXPECT_FALSE(copy.isBlockedCell(1, 0));
}

TEST(LazyStages, TheBudgetCountsTwoScoreTablesPerTrace) {
  // T = 4096, h = 8, d_model = 512: a (B, h, T_q, T_k) table is 512 MiB; the trace is two of them
  // plus the (T, d_model)-sized stages and the mask flags (~1.1 GiB; four tables before).
  const double table = 4.0 * 8 * 4096 * 4096;
  const double trace = estimateTraceBytes(1, 4096, 4096, 512, 8);
  EXPECT_GT(trace, 2 * table);
  EXPECT_LT(trace, 2.3 * table);
  EXPECT_TRUE(validateSizes(1, 4096, 4096, 512, 8, std::uint64_t{1400} << 20).ok());
}

TEST(LazyStages, ANewForwardOrACopyNeverReadsAnotherPassesTable) {
  Model m = caseModel({"causal", MaskKind::Causal});
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  const float before = t.copyOf(StageId::ScaledScores).data[5];  // made from these scores
  Trace copy = t;
  for (float& v : m.inputs.query.data) v *= 2.0f;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());  // same shapes: buffers reused
  EXPECT_TRUE(sameBits(t.copyOf(StageId::ScaledScores).data[5], expected(t, StageId::ScaledScores, 5)));
  EXPECT_FALSE(sameBits(t.copyOf(StageId::ScaledScores).data[5], before));
  EXPECT_TRUE(sameBits(copy.copyOf(StageId::ScaledScores).data[5], before));
  EXPECT_TRUE(sameBits(copy.cell(StageId::MaskedScores, 5), expected(copy, StageId::MaskedScores, 5)));
}

// A trace is plain data: many threads may read a lazy stage's whole table at once, and each gets
// the same numbers while the trace stays as it was.
TEST(LazyStages, ManyThreadsReadingAWholeTableAtOnceGetTheSameNumbers) {
  const Model m = caseModel({"causal", MaskKind::Causal}, 128, 32, 4, 2);
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  const Trace& ct = t;
  const std::uint64_t before = t.residentBytes();
  std::vector<Tensor> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = ct.copyOf(StageId::MaskedScores); });
  for (auto& th : threads) th.join();
  for (const Tensor& p : seen) {
    EXPECT_EQ(std::memcmp(p.ptr(), seen.front().ptr(), p.data.size() * sizeof(float)), 0);
  }
  EXPECT_EQ(seen.front().data.size(), t.blocked.size() * 4);  // (B, h, T, T) = (B, T, T) x h
  EXPECT_EQ(t.residentBytes(), before);
}

TEST(LazyStages, TheNonFiniteScanSeesOverflowInTheLazyStages) {
  Model m = caseModel({"causal", MaskKind::Causal});
  for (float& v : m.inputs.query.data) v *= 1e20f;
  for (float& v : m.inputs.key.data) v *= 1e20f;
  Trace t;
  ASSERT_TRUE(forward(m.inputs, m.weights, m.options, t).ok());
  const std::uint64_t before = t.residentBytes();
  std::vector<NonFiniteStage> found = nonFiniteStages(t);
  auto countOf = [&](StageId id) {
    std::int64_t n = 0;
    for (const NonFiniteStage& f : found) {
      if (f.stage == id) n = f.nan + f.inf;
    }
    return n;
  };
  // The explicit count over the whole tables (blocked -inf is the mask, not an overflow).
  for (StageId id : {StageId::ScaledScores, StageId::MaskedScores}) {
    std::int64_t n = 0;
    const std::int64_t cells = Tensor::numelOf(t.shapeOf(id));
    for (std::int64_t i = 0; i < cells; ++i) {
      const float v = expected(t, id, i);
      const std::int64_t perHead = static_cast<std::int64_t>(t.tq) * t.tk, b = i / (perHead * t.heads);
      if (!std::isfinite(v) && !(id == StageId::MaskedScores && t.blocked[static_cast<std::size_t>(b * perHead + i % perHead)])) ++n;
    }
    EXPECT_GT(n, 0) << stageInfo(id).name;
    EXPECT_EQ(countOf(id), n) << stageInfo(id).name;
  }
  EXPECT_EQ(t.residentBytes(), before);  // the scan kept no whole table
}

}  // namespace
}  // namespace mhascope
