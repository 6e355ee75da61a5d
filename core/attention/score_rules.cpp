// The rules that decide a score's fate — scale factor, which cells the mask blocks, hand-set
// scores — in one place: the engine's forward and the lessons' slower per-head loop both call
// these, so the two formulations can differ in how they compute, never in what they mean.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention/engine.hpp"

namespace mhascope {

float scaleFactorFor(ScaleKind kind, std::int64_t dModel, std::int64_t dk, float given) {
  switch (kind) {
    case ScaleKind::SqrtDk: return 1.0f / std::sqrt(static_cast<float>(dk));
    case ScaleKind::SqrtDModel: return 1.0f / std::sqrt(static_cast<float>(dModel));
    case ScaleKind::None: return 1.0f;
    case ScaleKind::Given: return given;
  }
  return 1.0f;
}

void buildBlocked(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk,
                  std::vector<std::uint8_t>& blocked, std::vector<std::uint8_t>& rowAny,
                  std::vector<std::int64_t>* runFrom) {
  const auto cells = static_cast<std::size_t>(B * Tq * Tk);
  rowAny.assign(static_cast<std::size_t>(B * Tq), 0);
  if (runFrom) runFrom->assign(static_cast<std::size_t>(B * Tq), Tk);
  const bool window = opt.window > 0;
  if (!opt.causal && !opt.keyPaddingMask && !opt.attnMask && !window) {
    blocked.assign(cells, 0);
    return;
  }
  blocked.resize(cells);  // every cell is written below
  if (!opt.keyPaddingMask && !opt.attnMask && !window) {
    // The causal mask alone: each row is its visible keys 0..q, then the blocked rest, two runs
    // of bytes (a cell at a time, this took 20 ms a forward at T = 4096, on one thread).
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t q = 0; q < Tq; ++q) {
        std::uint8_t* row = blocked.data() + static_cast<std::size_t>((b * Tq + q) * Tk);
        const std::int64_t visible = std::min(q + 1, Tk);
        std::memset(row, 0, static_cast<std::size_t>(visible));
        std::memset(row + visible, 1, static_cast<std::size_t>(Tk - visible));
        rowAny[static_cast<std::size_t>(b * Tq + q)] = visible == 0 ? 2 : visible < Tk ? 1 : 0;
        if (runFrom) (*runFrom)[static_cast<std::size_t>(b * Tq + q)] = visible;
      }
    }
    return;
  }
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t q = 0; q < Tq; ++q) {
      std::uint8_t any = 0, all = 1;
      std::int64_t first = Tk;  // the first blocked key
      bool run = true;          // every key after it blocked too
      for (std::int64_t k = 0; k < Tk; ++k) {
        bool blk = (opt.causal && k > q) || (window && windowHides(opt, q, k));
        if (opt.keyPaddingMask && opt.keyPaddingMask->data[static_cast<std::size_t>(b * Tk + k)] != 0.0f) blk = true;
        if (opt.attnMask && opt.attnMask->data[static_cast<std::size_t>(q * Tk + k)] != 0.0f) blk = true;
        blocked[static_cast<std::size_t>((b * Tq + q) * Tk + k)] = blk;
        any |= static_cast<std::uint8_t>(blk);
        all &= static_cast<std::uint8_t>(blk);
        if (blk && first == Tk) first = k;
        if (!blk && first < k) run = false;
      }
      rowAny[static_cast<std::size_t>(b * Tq + q)] = static_cast<std::uint8_t>(all ? 2 : any);
      if (runFrom) (*runFrom)[static_cast<std::size_t>(b * Tq + q)] = run ? first : -1;
    }
  }
}

bool windowHides(const AttentionOptions& opt, std::int64_t t, std::int64_t j) {
  if (opt.window <= 0 || j < opt.sinks) return false;  // no window, or a sink: always visible
  return opt.causal ? j <= t - opt.window : (t > j ? t - j : j - t) >= opt.window;
}

std::vector<std::uint8_t> blockedCells(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk) {
  std::vector<std::uint8_t> blocked, rowAny;
  buildBlocked(opt, B, Tq, Tk, blocked, rowAny);
  return blocked;
}

void overrideScores(const Tensor& o /*(h,T_q,T_k) or (B,h,T_q,T_k)*/, std::int64_t b, int head, float* scores,
                    std::int64_t Tq, std::int64_t Tk, std::int64_t q0, std::int64_t nq) {
  const std::int64_t heads = o.rank() == 3 ? o.dim(0) : o.dim(1);
  const std::int64_t item = o.rank() == 3 ? 0 : b;
  const float* src = o.ptr() + (item * heads + head) * Tq * Tk;
  for (std::int64_t i = q0 * Tk; i < (q0 + nq) * Tk; ++i) {
    if (!std::isnan(src[i])) scores[i] = src[i];
  }
}

}  // namespace mhascope
