// The kernel chosen per step (dispatch.hpp). Every `if` on the path is in this file.
#include "kernels/dispatch.hpp"

#include <algorithm>

#include "kernels/gemm.hpp"
#include "kernels/head_kernels.hpp"

namespace mhascope {
namespace kernels {
namespace {

// The fused scores kernel packs 64 keys x d_k on the stack: wider heads take the general scores.
bool fusedScores(std::int64_t dk) { return headKernels(kernelPath()) && dk <= kScoresBlockMaxDk; }

}  // namespace

KernelPath kernelPath() {
  switch (headKernelIsa()) {
    case HeadKernelIsa::Avx512: return KernelPath::Avx512HeadKernels;
    case HeadKernelIsa::Avx2Fma: return KernelPath::Avx2HeadKernels;
    default: return KernelPath::General;
  }
}

bool headKernels(KernelPath path) { return path != KernelPath::General; }

const char* kernelPathName(KernelPath path) {
  switch (path) {
    case KernelPath::Avx512HeadKernels: return "AVX-512 head kernels";
    case KernelPath::Avx2HeadKernels: return "AVX2 + FMA head kernels";
    default: return "general (GEMM + row kernels)";
  }
}

void packWeights(Scratch::PackedWeights& p, const std::shared_ptr<const void>& of,
                 const float* const (&matrices)[4], std::int64_t d, int threads) {
  if (!of || !headKernels(kernelPath())) {
    p = {};
    return;
  }
  const std::int64_t each = packedStripsFloats(d, d), strips = (d + 63) / 64;
  const bool sized = p.each == each && static_cast<std::int64_t>(p.data.size()) == 4 * each;
  if (sized && p.of.lock() == of) return;  // the same shared weights, still alive: packed already
  p.of.reset();  // until packed: a failure midway leaves no half-packed copy that claims to be one
  if (!sized) FloatBuffer(static_cast<std::size_t>(4 * each)).swap(p.data);
  p.each = each;
  parallelFor(threads, 4 * strips, [&](std::int64_t i) {
    packStrips(matrices[i / strips], d, d, d, i % strips, i % strips + 1, p.data.data() + (i / strips) * each);
  });
  p.of = of;
}

void packKeys(const float* k, std::int64_t heads, std::int64_t Tk, std::int64_t dk, int threads, FloatBuffer& out) {
  if (!fusedScores(dk)) {
    FloatBuffer().swap(out);
    return;
  }
  const std::int64_t each = packedKeysFloats(Tk, dk), chunks = (Tk + 63) / 64;
  if (static_cast<std::int64_t>(out.size()) != heads * each) FloatBuffer(static_cast<std::size_t>(heads * each)).swap(out);
  // In pieces of up to 16 chunks, so that one head alone still gives two threads work.
  const std::int64_t per = std::min<std::int64_t>(16, chunks), pieces = (chunks + per - 1) / per;
  parallelFor(threads, heads * pieces, [&](std::int64_t i) {
    const std::int64_t head = i / pieces, c0 = (i % pieces) * per;
    packKeyChunks(k + head * Tk * dk, Tk, dk, c0, std::min(chunks, c0 + per), out.data() + head * each);
  });
}

const float* packedKeysOf(const FloatBuffer& packed, std::int64_t bh, std::int64_t Tk, std::int64_t dk) {
  return packed.empty() ? nullptr : packed.data() + bh * packedKeysFloats(Tk, dk);
}

void projectRows(const float* x, std::int64_t n, std::int64_t d, const float* w, const float* bias, const float* packedW,
                 float* out) {
  // Each sum starts from the bias: the kernel loads it into its registers; for sgemm the bias rows
  // are written first and the product added (beta = 1), one pass fewer than adding it afterwards.
  if (headKernels(kernelPath())) return productBlock(x, d, w, d, n, d, d, out, d, bias, packedW);
  for (std::int64_t r = 0; r < n; ++r) std::copy_n(bias, d, out + r * d);
  sgemm(false, false, n, d, d, x, d, w, d, 1.0f, out, d);
}

void projectRowsTo(const float* x, std::int64_t n, std::int64_t dIn, std::int64_t dOut, const float* w,
                   const float* bias, const float* packedW, float* out) {
  if (dIn == dOut) return projectRows(x, n, dIn, w, bias, packedW, out);
  if (headKernels(kernelPath())) return productBlock(x, dIn, w, dOut, n, dIn, dOut, out, dOut, bias);
  for (std::int64_t r = 0; r < n; ++r) std::copy_n(bias, dOut, out + r * dOut);
  sgemm(false, false, n, dOut, dIn, x, dIn, w, dOut, 1.0f, out, dOut);
}

void scoreProducts(const float* q, const float* k, const float* packedKeys, std::int64_t nq, std::int64_t Tk,
                   std::int64_t dk, const BlockedKeys* keys, float* scores, std::int64_t ld) {
  if (fusedScores(dk)) return scoresBlock(q, k, nq, Tk, dk, 1.0f, keys, scores, nullptr, ld, nullptr, packedKeys);
  sgemm(false, true, nq, Tk, dk, q, dk, k, dk, 0.0f, scores, ld);
}

void scaleMaskRows(const float* scores, float factor, const BlockedKeys* keys, std::int64_t nq, std::int64_t Tk,
                   std::int64_t ld, float* weights, float* rowMax) {
  for (std::int64_t i = 0; i < nq; ++i) {
    rowMax[i] = scaleMaskRow(scores + i * ld, factor, keys[i], weights + i * ld, weights + i * ld, Tk);
  }
}

void scaledMaskedScores(const float* q, const float* k, const float* packedKeys, std::int64_t nq, std::int64_t Tk,
                        std::int64_t dk, float factor, const BlockedKeys* keys, float* scores, float* weights,
                        std::int64_t ld, float* rowMax) {
  if (fusedScores(dk)) {  // the scale, the mask and the maximum while the scores are in registers
    return scoresBlock(q, k, nq, Tk, dk, factor, keys, scores, weights, ld, rowMax, packedKeys);
  }
  float* s = scores ? scores : weights;  // not recorded: made in the weights' rows, scaled in place
  sgemm(false, true, nq, Tk, dk, q, dk, k, dk, 0.0f, s, ld);
  scaleMaskRows(s, factor, keys, nq, Tk, ld, weights, rowMax);
}

void weightedSum(const float* w, std::int64_t ldw, const float* v, std::int64_t nq, std::int64_t Tk, std::int64_t dk,
                 float* out, std::int64_t ldo) {
  if (headKernels(kernelPath())) return weightedSumBlock(w, ldw, v, nq, Tk, dk, out, ldo);
  sgemm(false, false, nq, dk, Tk, w, ldw, v, dk, 0.0f, out, ldo);
}

}  // namespace kernels
}  // namespace mhascope
