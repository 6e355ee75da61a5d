// The one place a kernel is chosen. Each step of the attention that has more than one
// implementation is one function here; it asks once per call which implementation runs on this
// machine. The engine (attention/engine.cpp) calls these steps and never asks which kernel runs.
//   general path, any CPU: the products on sgemm (gemm.hpp, Eigen's or OpenBLAS's), the scale and
//     the mask row by row (row_kernels.hpp);
//   head kernels (head_kernels.hpp, CPUs with AVX-512, or with AVX2 + FMA): register-tiled products
//     written for the attention's shapes, the scale and the mask fused into the scores' pass, the
//     learned matrices and the keys packed once per forward instead of once per block. Both
//     variants are one source compiled twice, and give the same bits.
// Given the path, every step's numbers are the same whatever the threads and the blocks; the two
// paths sum in different orders and agree within float rounding (tests hold them together).
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/allocation.hpp"
#include "kernels/row_kernels.hpp"  // BlockedKeys, softmaxRow

namespace mhascope {
namespace kernels {

// Which path runs: from headKernelIsa() (General exactly when !headKernelsEnabled()).
enum class KernelPath { General, Avx2HeadKernels, Avx512HeadKernels };
KernelPath kernelPath();
bool headKernels(KernelPath path);  // either head-kernel variant
// "general (GEMM + row kernels)", "AVX2 + FMA head kernels", "AVX-512 head kernels"
const char* kernelPathName(KernelPath path);

// The kernels' working copies, kept between forwards by their owner (an Engine), never by a trace:
// nothing in here is a record of a forward.
struct Scratch {
  // W_q, W_k, W_v, W_o as the projection kernel reads them (packStrips, one after the other), kept
  // while the next forward brings the very same shared weights (a recompute with the same model
  // packs nothing). `of`: the weights packed (an identity only; expired or empty: none).
  struct PackedWeights {
    std::weak_ptr<const void> of;
    FloatBuffer data;
    std::int64_t each = 0;  // floats per matrix
    const float* matrix(int i) const { return data.empty() ? nullptr : data.data() + i * each; }
  } packedWeights;
  // Every (batch item, head)'s keys as the scores kernel reads them (packKeyChunks; head bh at
  // bh * packedKeysFloats(T_k, d_k)), made by every forward from k_heads. Empty: the path packs none.
  FloatBuffer packedKeys;
};

// The four (d, d) matrices packed into p when the path reads packed matrices and `of` (the caller's
// shared weights; null: none to keep) is not what p holds already; else p cleared.
void packWeights(Scratch::PackedWeights& p, const std::shared_ptr<const void>& of,
                 const float* const (&matrices)[4], std::int64_t d, int threads);
// The keys of `heads` heads (k: heads x T_k x d_k) packed into out when the path reads packed keys
// (d_k at most kScoresBlockMaxDk), else out emptied. packedKeysOf: head bh's, or null when empty.
void packKeys(const float* k, std::int64_t heads, std::int64_t Tk, std::int64_t dk, int threads, FloatBuffer& out);
const float* packedKeysOf(const FloatBuffer& packed, std::int64_t bh, std::int64_t Tk, std::int64_t dk);

// Y = X W + b for n rows: out[r, :] = bias + x[r, :] W (x, out: n rows of d; W: (d, d); each sum
// starts from the bias, in input-feature order). packedW: W as packWeights made it, or null.
void projectRows(const float* x, std::int64_t n, std::int64_t d, const float* w, const float* bias, const float* packedW,
                 float* out);

// The same for a (d_in, d_out) W (the K and V projections of grouped-query attention have N·d_k
// outputs): a square W takes projectRows; packed copies are only of square matrices.
void projectRowsTo(const float* x, std::int64_t n, std::int64_t dIn, std::int64_t dOut, const float* w,
                   const float* bias, const float* packedW, float* out);

// S = Q K^T for nq query rows q (nq, d_k) against T_k keys k (T_k, d_k): scores (nq, T_k), row
// stride ld. keys: each row's blocked keys (the kernels' contract wants them; nothing is masked).
void scoreProducts(const float* q, const float* k, const float* packedKeys, std::int64_t nq, std::int64_t Tk,
                   std::int64_t dk, const BlockedKeys* keys, float* scores, std::int64_t ld);
// The same products, then S' = S * factor and -inf on each row's blocked keys into weights (nq, T_k),
// rowMax[i] = the maximum of row i. scores: where S is recorded, or null (not kept).
void scaledMaskedScores(const float* q, const float* k, const float* packedKeys, std::int64_t nq, std::int64_t Tk,
                        std::int64_t dk, float factor, const BlockedKeys* keys, float* scores, float* weights,
                        std::int64_t ld, float* rowMax);
// S' = S * factor and the mask, row by row, from scores already made (hand-set ones among them).
void scaleMaskRows(const float* scores, float factor, const BlockedKeys* keys, std::int64_t nq, std::int64_t Tk,
                   std::int64_t ld, float* weights, float* rowMax);

// O = A V for nq rows: out[i, :] = sum_j w[i, j] v[j, :] (w: nq x T_k, row stride ldw; v: T_k x d_k;
// out: row stride ldo), the sum in key order.
void weightedSum(const float* w, std::int64_t ldw, const float* v, std::int64_t nq, std::int64_t Tk, std::int64_t dk,
                 float* out, std::int64_t ldo);

}  // namespace kernels
}  // namespace mhascope
