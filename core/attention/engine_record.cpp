// The trace's shapes, description and blocked rows as the forward records them (engine_record.hpp).
#include "attention/engine_record.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/allocation.hpp"

namespace mhascope {

void shapeStage(Tensor& t, Shape shape, std::vector<std::string> axes, int threads) {
  const auto n = static_cast<std::size_t>(Tensor::numelOf(shape));
  if (t.data.size() != n) allocateZeroed(t.data, n, threads);
  t.reshape(std::move(shape), std::move(axes));
}

void shapeStages(Trace& t, const AttentionInputs& in, const AttentionOptions& opt, bool all, int threads) {
  const int h = opt.heads, N = kvHeadsOf(opt);
  const std::int64_t B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2),
                     dk = headDimOf(opt, d);
  const char* kvAxis = N == h ? "h" : "N";  // the K/V heads' count: h, or N when grouped
  t.stages.resize(kStageCount);
  for (int i = 0; i < kStageCount; ++i) t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
  auto T = [&t](StageId id) -> Tensor& { return t.stages[static_cast<std::size_t>(id)].tensor; };
  shapeStage(T(StageId::Query), in.query.shape, {"B", "T_q", "d_model"});
  if (all) {
    shapeStage(T(StageId::Key), in.key.shape, {"B", "T_k", "d_model"});
    shapeStage(T(StageId::Value), in.value.shape, {"B", "T_k", "d_model"});
  }
  // h·d_k features when the heads are not d_model / h wide, N·d_k when grouped (named so: they are
  // not d_model wide then).
  const char* qFeatures = h * dk == d ? "d_model" : "h·d_k";
  shapeStage(T(StageId::QProj), {B, Tq, h * dk}, {"B", "T_q", qFeatures});
  const char* kvFeatures = N == h ? qFeatures : "N·d_k";
  shapeStage(T(StageId::KProj), {B, Tk, N * dk}, {"B", "T_k", kvFeatures});
  shapeStage(T(StageId::VProj), {B, Tk, N * dk}, {"B", "T_k", kvFeatures});
  // Split the h·d_k features into h heads of d_k.
  shapeStage(T(StageId::QHeads), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  shapeStage(T(StageId::KHeads), {B, N, Tk, dk}, {"B", kvAxis, "T_k", "d_k"});
  shapeStage(T(StageId::VHeads), {B, N, Tk, dk}, {"B", kvAxis, "T_k", "d_k"});
  // The variants' stages: recorded when used, else empty.
  const bool rope = opt.positions == AttnPositions::Rope, alibi = opt.positions == AttnPositions::Alibi;
  const bool normed = !opt.qNorm.empty();
  if (normed) {
    shapeStage(T(StageId::QNormed), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
    shapeStage(T(StageId::KNormed), {B, N, Tk, dk}, {"B", kvAxis, "T_k", "d_k"});
  }
  if (rope) {
    shapeStage(T(StageId::QRotated), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
    shapeStage(T(StageId::KRotated), {B, N, Tk, dk}, {"B", kvAxis, "T_k", "d_k"});
  }
  if (N != h) shapeStage(T(StageId::KvGroups), {1, h, N}, {"B", "h", "N"});
  if (alibi) shapeStage(T(StageId::PositionBias), {1, h, Tq, Tk}, {"B", "h", "T_q", "T_k"}, threads);
  if (opt.window > 0) shapeStage(T(StageId::WindowMask), {1, Tq, Tk}, {"B", "T_q", "T_k"});
  const bool sink = !opt.sinkLogits.empty();  // the sink's share: one number a row, recorded whatever the recording
  if (sink) shapeStage(T(StageId::SinkShare), {B, h, Tq, 1}, {"B", "h", "T_q", "sink"});
  const std::pair<StageId, bool> variants[] = {{StageId::QNormed, normed},
                                               {StageId::KNormed, normed},
                                               {StageId::QRotated, rope},
                                               {StageId::KRotated, rope},
                                               {StageId::KvGroups, N != h},
                                               {StageId::PositionBias, alibi},
                                               {StageId::WindowMask, opt.window > 0},
                                               {StageId::SinkShare, sink}};
  for (const auto& [id, used] : variants) {
    if (!used) shapeStage(T(id), {0}, {});
  }
  for (StageId id : {StageId::ScaledScores, StageId::SoftCapped, StageId::MaskedScores}) {
    FloatBuffer().swap(T(id).data);  // derived from the scores when read: no table of its own
    const bool shaped = all && (id != StageId::SoftCapped || opt.softcap > 0.0f);
    T(id).shape = shaped ? Shape{B, h, Tq, Tk} : Shape{0};
    T(id).axes = shaped ? std::vector<std::string>{"B", "h", "T_q", "T_k"} : std::vector<std::string>{};
  }
  if (all) shapeStage(T(StageId::Scores), {B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"}, threads);
  shapeStage(T(StageId::Weights), {B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"}, threads);
  if (all) shapeStage(T(StageId::HeadOutputs), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
  shapeStage(T(StageId::Concat), {B, Tq, h * dk}, {"B", "T_q", qFeatures});
  if (!all) {  // not recorded: empty, so nothing can read a stale table as this forward's
    for (StageId id : {StageId::Key, StageId::Value, StageId::Scores, StageId::HeadOutputs}) shapeStage(T(id), {0}, {});
  }
  shapeStage(T(StageId::Output), {B, Tq, d}, {"B", "T_q", "d_model"});
}

void copyInputRows(const Tensor& src, std::int64_t r0, std::int64_t n, Tensor& dst) {
  const std::int64_t d = src.dim(2);
  const float* from = src.ptr() + r0 * d;
  float* to = dst.ptr() + r0 * d;
  const auto count = static_cast<std::size_t>(n * d);
  if (std::memcmp(from, to, count * sizeof(float)) != 0) std::copy(from, from + count, to);
}

void recordDescription(Trace& t, const AttentionInputs& in, bool hasBias, const AttentionOptions& opt, float factor) {
  const std::int64_t B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  t.batch = static_cast<int>(B);
  t.tq = static_cast<int>(Tq);
  t.tk = static_cast<int>(Tk);
  t.dModel = static_cast<int>(d);
  t.heads = opt.heads;
  t.dk = static_cast<int>(headDimOf(opt, d));
  t.selfAttention = in.selfAttention;
  t.causal = opt.causal;
  t.keyPadding = opt.keyPaddingMask.has_value();
  t.attnMask = opt.attnMask.has_value();
  t.scale = opt.scale;
  t.scaleFactor = factor;
  t.softcap = opt.softcap;
  t.kvHeads = kvHeadsOf(opt);
  t.positions = opt.positions;
  t.ropeStyle = opt.ropeStyle;
  t.ropeBase = opt.ropeBase;
  t.window = opt.window;
  t.sinks = opt.sinks;
  t.sinkLogits = opt.sinkLogits;
  t.layer = opt.layer;
  t.latentRank = t.latentRopeDim = 0;
  auto labelsOr = [](const std::vector<std::vector<std::string>>& given, std::int64_t nb, std::int64_t nt) {
    if (!given.empty()) return given;
    std::vector<std::vector<std::string>> out(static_cast<std::size_t>(nb));
    for (auto& row : out) {
      for (std::int64_t i = 0; i < nt; ++i) row.push_back(std::string("t").append(std::to_string(i)));
    }
    return out;
  };
  t.hasBias = hasBias;
  t.queryTokens = labelsOr(in.queryTokens, B, Tq);
  t.keyTokens = labelsOr(in.keyTokens, B, Tk);
}

BlockedKeys BlockedRows::keysOf(std::int64_t b, std::int64_t q) const {
  const auto row = static_cast<std::size_t>(b * Tq + q);
  if (!rowAny[row]) return {};
  if (runFrom[row] >= 0) return BlockedKeys{nullptr, runFrom[row]};
  return BlockedKeys{flags + row * static_cast<std::size_t>(Tk)};
}

std::vector<std::uint8_t> BlockedRows::fullyMaskedRows() const {
  std::vector<std::uint8_t> out(rowAny.size(), 0);
  for (std::size_t row = 0; row < rowAny.size(); ++row) out[row] = rowAny[row] == 2;
  return out;
}

BlockedRows blockedRows(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk,
                        std::vector<std::uint8_t>& flags) {
  BlockedRows r;
  buildBlocked(opt, B, Tq, Tk, flags, r.rowAny, &r.runFrom);
  r.flags = flags.data();
  r.Tq = Tq;
  r.Tk = Tk;
  return r;
}

Trace oneHeadTrace(std::int64_t Tq, std::int64_t Tk, bool weightsOnly, int threads) {
  Trace t;
  t.stages.resize(kStageCount);
  for (int i = 0; i < kStageCount; ++i) {
    t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
    t.stages[static_cast<std::size_t>(i)].tensor.shape = {0};
  }
  auto T = [&t](StageId id) -> Tensor& { return t.stages[static_cast<std::size_t>(id)].tensor; };
  const std::vector<std::string> axes{"B", "h", "T_q", "T_k"};
  shapeStage(T(weightsOnly ? StageId::Weights : StageId::Scores), {1, 1, Tq, Tk}, axes, threads);
  if (!weightsOnly) {
    for (StageId id : {StageId::ScaledScores, StageId::MaskedScores}) {  // lazy: derived from the scores
      T(id).shape = {1, 1, Tq, Tk};
      T(id).axes = axes;
    }
  }
  return t;
}

void keepOneItem(Trace& t, const BlockedRows& blocked, int batch) {
  t.batch = 1;
  t.heads = 1;
  t.kvHeads = 1;
  t.dModel = t.dk;
  t.queryTokens = {t.queryTokens.at(static_cast<std::size_t>(batch))};
  t.keyTokens = {t.keyTokens.at(static_cast<std::size_t>(batch))};
  const auto item = static_cast<std::size_t>(batch);
  const auto perItem = static_cast<std::size_t>(blocked.Tq * blocked.Tk);
  t.blocked.assign(blocked.flags + item * perItem, blocked.flags + (item + 1) * perItem);
  t.fullyMasked.resize(static_cast<std::size_t>(blocked.Tq));
  for (std::int64_t q = 0; q < blocked.Tq; ++q) t.fullyMasked[static_cast<std::size_t>(q)] = blocked.allBlocked(batch, q);
  t.generation = 1;
}

}  // namespace mhascope
