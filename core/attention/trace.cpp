// Trace: reading a stage's numbers, stored or lazy (see trace.hpp). The lazy stages — scaled and
// masked scores — are derived from Scores here, and only here, with the forward's own operations.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attention/trace.hpp"

namespace mhascope {

bool stageIsLazy(StageId id) {
  return id == StageId::ScaledScores || id == StageId::SoftCapped || id == StageId::MaskedScores;
}

bool Trace::isLazy(StageId id) const {
  if (!stageIsLazy(id) || stages.size() != static_cast<std::size_t>(kStageCount)) return false;
  const Tensor& own = stages[static_cast<std::size_t>(id)].tensor;
  const Tensor& scores = stages[static_cast<std::size_t>(StageId::Scores)].tensor;
  const auto n = static_cast<std::size_t>(own.numel());
  // Shaped, not stored, and the scores it derives from are there (a hand-built trace that stores
  // the table itself reads as stored).
  return n > 0 && own.data.size() != n && scores.data.size() == n;
}

void Trace::readCells(StageId id, std::int64_t first, std::int64_t count, float* out) const {
  const Tensor& own = stages.at(static_cast<std::size_t>(id)).tensor;
  if (first < 0 || count < 0 || first + count > own.numel()) {
    throw std::out_of_range(std::string("readCells: cells ") + std::to_string(first) + " + " + std::to_string(count) +
                            " outside " + stageInfo(id).name + " (" + std::to_string(own.numel()) + " cells)");
  }
  if (!isLazy(id)) {
    std::copy(own.ptr() + first, own.ptr() + first + count, out);
    return;
  }
  // The forward's scale: one float product per cell (row_kernels.cpp scaleMaskRow), the same bits.
  const float* s = tensor(StageId::Scores).ptr() + first;
  const float factor = scaleFactor;
  for (std::int64_t i = 0; i < count; ++i) out[i] = s[i] * factor;
  // The forward's softcap (engine.cpp capMaskRows): c tanh(s' / c), the same float operations.
  if (softcap > 0.0f && id != StageId::ScaledScores) {
    const float c = softcap;
    for (std::int64_t i = 0; i < count; ++i) out[i] = c * std::tanh(out[i] / c);
  }
  if (id != StageId::MaskedScores) return;
  // The forward's mask: -inf where the key is blocked. blocked is (B, T_q, T_k), the table (B, h, T_q, T_k).
  const std::int64_t perHead = static_cast<std::int64_t>(tq) * tk, perItem = perHead * heads;
  // ALiBi's bias is added to the scaled score before the mask, the forward's one float addition.
  const Tensor& bias = stages[static_cast<std::size_t>(StageId::PositionBias)].tensor;
  if (bias.numel() == perItem && static_cast<std::int64_t>(bias.data.size()) == perItem) {
    for (std::int64_t i = 0; i < count; ++i) out[i] += bias.data[static_cast<std::size_t>((first + i) % perItem)];
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < count;) {
    const std::int64_t cellIndex = first + i, b = cellIndex / perItem, inHead = cellIndex % perHead;
    const std::int64_t n = std::min(count - i, perHead - inHead);  // up to the end of this head's table
    const std::uint8_t* blk = blocked.data() + b * perHead + inHead;
    for (std::int64_t j = 0; j < n; ++j) {
      if (blk[j]) out[i + j] = kNegInf;
    }
    i += n;
  }
}

void Trace::forEachBlock(StageId id, std::int64_t first, std::int64_t count,
                         const std::function<void(const float*, std::int64_t, std::int64_t)>& fn) const {
  if (!isLazy(id)) {
    const Tensor& own = stages.at(static_cast<std::size_t>(id)).tensor;
    if (count > 0) fn(own.ptr() + first, count, first);
    return;
  }
  constexpr std::int64_t kBlock = std::int64_t{1} << 16;
  std::vector<float> block(static_cast<std::size_t>(std::min(kBlock, count)));
  for (std::int64_t at = first; at < first + count; at += kBlock) {
    const std::int64_t n = std::min(kBlock, first + count - at);
    readCells(id, at, n, block.data());
    fn(block.data(), n, at);
  }
}

float Trace::cell(StageId id, std::int64_t index) const {
  float v = 0.0f;
  readCells(id, index, 1, &v);
  return v;
}

Tensor Trace::copyOf(StageId id) const {
  const Tensor& own = stages.at(static_cast<std::size_t>(id)).tensor;
  if (!isLazy(id)) return own;
  Tensor t;
  t.shape = own.shape;
  t.axes = own.axes;
  t.data.resize(static_cast<std::size_t>(own.numel()));
  readCells(id, 0, own.numel(), t.ptr());
  return t;
}

const Tensor& Trace::tensor(StageId id) const {
  if (isLazy(id)) {
    throw std::logic_error(std::string(stageInfo(id).name) +
                           " is derived from the scores when read and has no stored table: read it with copyOf, "
                           "readCells, cell or a slice");
  }
  return stages[static_cast<std::size_t>(id)].tensor;
}

Tensor& Trace::tensor(StageId id) {
  return const_cast<Tensor&>(std::as_const(*this).tensor(id));
}

void Slice2D::setBlockedCells(std::vector<std::uint8_t> cells) {
  auto own = std::make_shared<const std::vector<std::uint8_t>>(std::move(cells));
  blockedCells = own->empty() ? nullptr : own->data();
  ownBlocked = std::move(own);
}

WeightTable Trace::weight(WeightId id) const {
  if (!weights) return {};
  const MhaWeights& w = *weights;
  const RowMatrix* matrices[] = {&w.wq, &w.wk, &w.wv, &w.wo};
  const RowVector* biases[] = {&w.bq, &w.bk, &w.bv, &w.bo};
  const auto i = static_cast<std::size_t>(id);
  if (i < 4) {
    return {matrices[i]->data(), static_cast<int>(matrices[i]->rows()), static_cast<int>(matrices[i]->cols())};
  }
  return {biases[i - 4]->data(), 1, static_cast<int>(biases[i - 4]->cols())};
}

std::uint64_t Trace::residentBytes() const {
  std::uint64_t bytes = blocked.capacity() + fullyMasked.capacity();
  for (const Stage& s : stages) bytes += s.tensor.data.capacity() * sizeof(float);
  for (int i = 0; i < kWeightCount; ++i) {
    const WeightTable w = weight(static_cast<WeightId>(i));
    bytes += static_cast<std::uint64_t>(w.rows) * static_cast<std::uint64_t>(w.cols) * sizeof(float);
  }
  return bytes;
}

}  // namespace mhascope
