// What the forward writes into a trace besides its numbers, shared by forward() and attentionHead()
// (engine.cpp): the stages' shapes and buffers, the description (sizes, mask kinds, scale, tokens),
// and each query row's blocked keys. Internal to the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "kernels/row_kernels.hpp"  // BlockedKeys

namespace mhascope {

// Tensor::reshape, with a new zeroed buffer (allocateZeroed) when the size changed.
void shapeStage(Tensor& t, Shape shape, std::vector<std::string> axes, int threads = 1);

// Every stage of a forward shaped for these inputs, buffers reused when the sizes did not change.
// Without full recording the tables nobody reads stay empty (shape {0}), so nothing can read a
// stale one. The lazy stages (scaled, masked) get their shape and axes only.
// The variants' stages are shaped only when the options use them (else shape {0}).
void shapeStages(Trace& t, const AttentionInputs& in, const AttentionOptions& opt, bool recordEveryStage, int threads);

// The rows [r0, r0 + n) of an input into its recorded stage, skipping the write when the stage
// already holds these exact bits (a recompute with unchanged inputs: reading both is cheaper).
void copyInputRows(const Tensor& src /*(B, T, d_model)*/, std::int64_t r0, std::int64_t n, Tensor& dst);

// Everything a trace says besides its tables: sizes, mask kinds, scale, bias, token labels.
void recordDescription(Trace& t, const AttentionInputs& in, bool hasBias, const AttentionOptions& opt, float factor);

// Which keys each query row may not see, as buildBlocked makes them (score_rules.cpp).
struct BlockedRows {
  const std::uint8_t* flags = nullptr;  // (B, T_q, T_k) 1 = blocked
  std::vector<std::uint8_t> rowAny;     // (B, T_q) 0 none blocked, 1 some, 2 all
  std::vector<std::int64_t> runFrom;    // (B, T_q) where a run of blocked keys to the row's end begins, or -1
  std::int64_t Tq = 0, Tk = 0;
  // Row (b, q)'s blocked keys as the kernels take them: none, a run to the row's end, or its flags.
  BlockedKeys keysOf(std::int64_t b, std::int64_t q) const;
  bool allBlocked(std::int64_t b, std::int64_t q) const { return rowAny[static_cast<std::size_t>(b * Tq + q)] == 2; }
  std::vector<std::uint8_t> fullyMaskedRows() const;  // (B, T_q) 1 = every key blocked
};
// Fills `flags` (kept by the caller: the trace's own when recorded) and returns the rows over it.
BlockedRows blockedRows(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk,
                        std::vector<std::uint8_t>& flags);

// RoPE's cos and sin of t * inv_freq_i for positions firstPosition .. firstPosition + T - 1, (T, d_k/2)
// each, made once per forward and shared by every head (positions.cpp; rotatePositions makes its
// own, with the same numbers).
struct RopeTable {
  std::int64_t half = 0;  // d_k / 2
  std::vector<float> cos, sin;
};
// invFreq: the d_k/2 frequencies when given (AttentionOptions::ropeInvFreq), else base^(-2i/d_k); gain: cos and
// sin times it (AttentionOptions::ropeGain).
RopeTable ropeTable(std::int64_t T, std::int64_t dk, std::int64_t firstPosition, float base,
                    const std::vector<double>& invFreq = {}, float gain = 1.0f);
// rotatePositions with the table made already: rows r = 0 .. T-1 of x at the table's row r.
void rotateRows(float* x /*(T, d_k)*/, std::int64_t T, std::int64_t dk, const RopeTable& table, RopeStyle style);

// attentionHead's trace: every stage empty (shape {0}) but the (1, 1, T_q, T_k) table it computes —
// the weights, or the scores with the lazy scaled and masked scores shaped over them.
Trace oneHeadTrace(std::int64_t Tq, std::int64_t Tk, bool weightsOnly, int threads);
// Narrows a described trace to batch item `batch` and one head: B = 1, h = 1, the item's tokens,
// blocked flags and fully masked rows.
void keepOneItem(Trace& t, const BlockedRows& blocked, int batch);

}  // namespace mhascope
