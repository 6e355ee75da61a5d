// The attention's two products for one block of query rows of one (batch item, head), written for
// the shapes they have: one side only d_k wide (64 in most models), the other T_k long.
//   scoresBlock:      scores = Q_block K^T, fused with the scale, the mask and the row maximum
//                     (what scaleMaskRow does, in the same pass, while the scores are in registers)
//   weightedSumBlock: head outputs = A_block V (productBlock, which also serves the projections:
//                     a block of rows of X times W, each sum started from the bias)
// General GEMMs run these shapes well below their speed on square ones (OpenBLAS ~130 GFLOP/s on a
// Zen 5 core against ~200); these run at ~140 and ~200 there. Written once over a vector width and
// compiled twice (head_kernels_tiles.hpp): for AVX-512 (F, BW and VL) and for AVX2 + FMA, each by a
// GCC target pragma whatever -march is, and run on a CPU that reports the instructions at run time
// (the widest it has). Elsewhere the engine keeps its general path (sgemm + the row kernels), and
// the plain-loop versions below (the same contract, any CPU) are what tests check the vector code by.
// Every variant sums each output in the same order with the same fused multiply-adds, so AVX-512
// and AVX2 give the same scores, weights and products, bit for bit; the plain loops round
// differently.
#pragma once

#include <cstdint>

#include "kernels/row_kernels.hpp"  // BlockedKeys

namespace mhascope {

// Which instructions the head kernels run on. The widest the build has and the CPU runs is chosen
// at start-up; setHeadKernelIsa picks another that is available (tests run every variant the CPU
// has; None: the engine takes the general path and the functions below run their plain loops).
// Process-wide, like the GEMM backend's choice.
enum class HeadKernelIsa { None, Avx2Fma, Avx512 };
HeadKernelIsa headKernelIsa();                     // what runs now
HeadKernelIsa bestHeadKernelIsa();                 // the widest available (None: none)
bool headKernelIsaAvailable(HeadKernelIsa isa);    // built in and run by this CPU (None: always)
bool setHeadKernelIsa(HeadKernelIsa isa);          // false (and nothing changed) when not available
const char* headKernelIsaName(HeadKernelIsa isa);  // "AVX-512", "AVX2 + FMA", "none"

// The same switch as a yes/no: headKernelsAvailable() when some variant runs here;
// headKernelsEnabled() when one is chosen; setHeadKernels(true) chooses the widest, false none
// (so tests can run both paths on one machine). Returns false (and changes nothing) when asked to
// enable kernels this build or CPU does not have.
bool headKernelsAvailable();
bool headKernelsEnabled();
bool setHeadKernels(bool enabled);

// The widest d_k scoresBlock takes (it packs 64 keys x d_k on the stack).
constexpr std::int64_t kScoresBlockMaxDk = 256;

// For the nq query rows q (nq x dk, row stride dk) against the Tk keys k (Tk x dk, row stride dk):
// scores[i*ld + j] = q_i . k_j (skipped when scores is null), weights[i*ld + j] = scores * factor, or
// -inf where blocked[i].at(j) (BlockedKeys: a run to the row's end and/or a row of bytes), and
// rowMax[i] = the maximum of weights row i (-inf when every key is blocked). The product
// scores * factor is the same float multiply the trace uses to read the scaled scores back.
// weights null: only the scores (rowMax untouched), for hand-set scores that replace some first.
// `packedKeys`: k as packKeyChunks made it (the vector kernels then read its chunks instead of
// transposing 64 keys itself for every block of rows; same numbers, same bits), or null.
void scoresBlock(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                 const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                 const float* packedKeys = nullptr);
// k (Tk x dk, row stride dk) as scoresBlock's kernel reads it: chunk c (keys 64 c .. 64 c + 63,
// zeros past Tk) transposed, d_k rows of 64 floats at packed + c * dk * 64, 64-byte aligned when
// packed is. Chunks [c0, c1) are written; all of k takes packedKeysFloats(Tk, dk) floats.
std::int64_t packedKeysFloats(std::int64_t Tk, std::int64_t dk);
void packKeyChunks(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1, float* packed);

// c[i*ldc + col] = start[col] + sum_j a[i*lda + j] * b[j*ldb + col] for the m rows of a (m x k) and
// b (k x n), the sum taken in order j = 0 .. k-1 from start[col] (one row of n, the same for every
// row of c: a projection's bias), or from 0 when start is null. `packed`: b as packStrips made it
// (the vector kernels then read it instead of packing each strip itself; same numbers, same bits),
// or null.
void productBlock(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m, std::int64_t k,
                  std::int64_t n, float* c, std::int64_t ldc, const float* start, const float* packed = nullptr);
// b (k x n, row stride ldb) as productBlock's kernel reads it: its 64-column strips [s0, s1) one
// after the other, strip s (columns 64 s .. 64 s + 63, zeros past n) as k rows of 64 floats at
// packed + s * k * 64. The whole of b takes packedStripsFloats(k, n) floats.
std::int64_t packedStripsFloats(std::int64_t k, std::int64_t n);
void packStrips(const float* b, std::int64_t ldb, std::int64_t k, std::int64_t n, std::int64_t s0, std::int64_t s1,
                float* packed);
// A V for a block of rows: out[i*ldo + c] = sum_j w[i*ldw + j] * v[j*dk + c] for the nq rows of w
// (nq x Tk) and V (Tk x dk), the sum taken in key order j = 0 .. Tk-1.
inline void weightedSumBlock(const float* w, std::int64_t ldw, const float* v, std::int64_t nq, std::int64_t Tk,
                             std::int64_t dk, float* out, std::int64_t ldo) {
  productBlock(w, ldw, v, dk, nq, Tk, dk, out, ldo, nullptr);
}

// The same two contracts in plain loops: what runs when no vector variant is chosen, and the
// second implementation the tests hold the vector code against.
void scoresBlockPortable(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk,
                         float factor, const BlockedKeys* blocked, float* scores, float* weights,
                         std::int64_t ld, float* rowMax);
void productBlockPortable(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                          std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start);
inline void weightedSumBlockPortable(const float* w, std::int64_t ldw, const float* v, std::int64_t nq,
                                     std::int64_t Tk, std::int64_t dk, float* out, std::int64_t ldo) {
  productBlockPortable(w, ldw, v, dk, nq, Tk, dk, out, ldo, nullptr);
}

}  // namespace mhascope
