// The head kernels (head_kernels.hpp) written once over a vector type V, compiled once per variant:
// head_kernels_avx512.cpp (V = 16 lanes of AVX-512) and head_kernels_avx2.cpp (V = 8 lanes of
// AVX2 + FMA) each include this file inside their target region, after V's definition and after
// every standard header (so nothing here is compiled for a target another caller may lack).
// Everything is in an unnamed namespace: each variant keeps its own copy, never merged by the linker
// with the other's.
//
// V provides (Vec: the register type; Mask: a lane mask):
//   kLanes, kTileVectors (a register tile: 6 rows x kTileVectors vectors, as many as the
//     registers hold: 6 x 4 of 32 zmm, 6 x 2 of 16 ymm);
//   zero, set1, load (aligned), loadu, store (aligned), storeu, fmadd(a, b, c) = a b + c, mul, max;
//   lanesBelow(n) (n may be <= 0 or >= kLanes), isAll, maskLoad (zeros elsewhere), maskStore,
//   blend(a, b, m) (b where m), maskMax(m, valid, y), blockedLanes(bytes, valid) (lanes whose byte
//   is not 0, reading only valid lanes), maxOfLanes, stream (a store that bypasses the cache),
//   transpose (kLanes x kLanes floats, aligned destination).
// Every output is one sum in a fixed order of fused multiply-adds whatever V, the tile and the
// blocks: the variants give the same bits.
//
// [SECTION] register tiles (finishScores, scoresTile, sumTile)
// [SECTION] whole blocks (packKeys, scoresBlockFor, packStrip, productBlockFor)

namespace mhascope {
namespace simd {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int kRows = 6;       // rows per register tile (productBlock and scoresBlock)
constexpr std::int64_t kKeys = 64;  // keys per packed chunk, columns per packed strip (head_kernels.hpp)
constexpr std::int64_t kMaxRowsPerPass = 128;  // scoresBlock: rows whose running maxima stay in vectors

// ---------------------------------------------------------------------------------------------
// [SECTION] register tiles (finishScores, scoresTile, sumTile)
// ---------------------------------------------------------------------------------------------

// p's lanes `m`, zeros elsewhere; a plain load when every lane is wanted (a masked load is slower).
template <class V>
typename V::Vec loadLanes(const float* p, typename V::Mask m, bool all) {
  return all ? V::loadu(p) : V::maskLoad(m, p);
}

// A vector of scores into a table that is a record only: computed beside the weights, the forward
// never reads them again. Streaming (non-temporal) stores send them to memory without first reading the
// lines into the cache and without pushing the weights the softmax and A V read next out of it.
// A whole-vector stream needs the vector's alignment: a trace's tables start on a 64-byte line
// (FloatBuffer), so every chunk of a row does when T_k is a multiple of 16. 16-byte pieces need 16
// (T_k a multiple of 4); a row of any other T_k gets ordinary stores. The caller fences.
template <class V>
void storeRecord(float* d, typename V::Vec s) {
  const auto at = reinterpret_cast<std::uintptr_t>(d);
  if ((at & (sizeof(typename V::Vec) - 1)) == 0) V::stream(d, s);
  else if ((at & 15) == 0) V::streamQuarters(d, s);
  else V::storeu(d, s);
}

// Scores of rows x (up to) NV vectors of keys, from tile (rows x NV vectors) into scores and
// weights, and the rows' running maxima, kept as vectors (rowMax[r]) until the last chunk of keys.
// Kept out of line: inlined into scoresTile, the values it needs (pointers, masks, constants)
// stayed live across the product loop there, and GCC 12 then spilled the keys' vectors to the
// stack inside it (a store-to-load round trip per product: half the speed).
template <class V, int NV>
[[gnu::noinline]] void finishScores(const float* tile, std::int64_t rows, const typename V::Mask* valid,
                                    std::int64_t j0, float factor, const BlockedKeys* blocked, float* scores,
                                    float* weights, std::int64_t ld, typename V::Vec* rowMax) {
  using Vec = typename V::Vec;
  constexpr int L = V::kLanes;
  const Vec f = V::set1(factor), negInf = V::set1(kNegInf);
  const bool full = V::isAll(valid[NV - 1]);
  for (std::int64_t r = 0; r < rows; ++r) {
    Vec m = weights ? rowMax[r] : negInf;
    for (int x = 0; x < NV; ++x) {
      const std::int64_t at = r * ld + j0 + L * x;
      const Vec s = V::load(tile + r * NV * L + L * x);
      if (full && scores && weights) storeRecord<V>(scores + at, s);
      else if (full && scores) V::storeu(scores + at, s);  // masked stores are slower on Zen
      else if (scores) V::maskStore(scores + at, valid[x], s);
      if (!weights) continue;
      Vec y = V::mul(s, f);
      if (blocked[r].bytes) y = V::blend(y, negInf, V::blockedLanes(blocked[r].bytes + j0 + L * x, valid[x]));
      const std::int64_t before = blocked[r].from - (j0 + L * x);  // lanes before the blocked run
      if (before < L) y = V::blend(negInf, y, V::lanesBelow(before));
      if (full) {
        V::storeu(weights + at, y);
        m = V::max(m, y);
      } else {
        V::maskStore(weights + at, valid[x], y);
        m = V::maskMax(m, valid[x], y);
      }
    }
    if (weights) rowMax[r] = m;
  }
}

// R query rows x NV vectors of keys of dot products from the packed keys kt (dk rows, stride kKeys),
// in registers (c = 0 .. dk-1 in order), into tile (R x NV vectors).
template <class V, int R, int NV, int DK>
void scoresTile(const float* q, std::int64_t dkRuntime, const float* kt, float* tile) {
  using Vec = typename V::Vec;
  constexpr int L = V::kLanes;
  const std::int64_t dk = DK > 0 ? DK : dkRuntime;
  Vec acc[R][NV];
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) acc[r][x] = V::zero();
  }
  for (std::int64_t c = 0; c < dk; ++c) {
    Vec kc[NV];
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) kc[x] = V::load(kt + c * kKeys + L * x);
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Vec a = V::set1(q[r * dk + c]);
      #pragma GCC unroll 8
      for (int x = 0; x < NV; ++x) acc[r][x] = V::fmadd(a, kc[x], acc[r][x]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) V::store(tile + (r * NV + x) * L, acc[r][x]);
  }
}

// Rows [i, i + R) against the chunk's n keys at kt, a register tile's width of keys at a time.
template <class V, int R, int DK>
void scoresRows(const float* q, std::int64_t dk, const float* kt, std::int64_t n, const typename V::Mask* valid,
                std::int64_t j0, float factor, const BlockedKeys* blocked, float* scores, float* weights,
                std::int64_t ld, typename V::Vec* rowMax, std::int64_t i) {
  constexpr int NV = V::kTileVectors, W = NV * V::kLanes;
  alignas(64) float tile[R * W];
  for (std::int64_t g = 0; g < n; g += W) {
    scoresTile<V, R, NV, DK>(q + i * dk, dk, kt + g, tile);
    finishScores<V, NV>(tile, R, valid + g / V::kLanes, j0 + g, factor, blocked + i,
                        scores ? scores + i * ld : nullptr, weights ? weights + i * ld : nullptr, ld, rowMax + i);
  }
}

// R rows x NV vectors of outputs over k in [k0, k1); the first chunk starts from the row `start`
// (zero when null), later ones from the partial sums in out, so every output is one sum in k order.
// The last vector holds the lanes `last` only (lastAll: all of them). pf, pfLines: lines of the
// next strip to ask into L2, one per k step of the first pfLines (see productBlockFor).
// Whole: v's rows hold NV whole vectors (a packed strip, zeros past its columns, or columns a
// multiple of the lanes), read unmasked (a masked load is slower).
template <class V, int R, int NV, bool Whole>
void sumTile(const float* w, std::int64_t ldw, const float* v, std::int64_t ldv, std::int64_t k0, std::int64_t k1,
             float* out, std::int64_t ldo, typename V::Mask last, bool lastAll, const float* start, const float* pf,
             std::int64_t pfLines) {
  using Vec = typename V::Vec;
  constexpr int L = V::kLanes;
  const typename V::Mask every = V::lanesBelow(L);
  Vec acc[R][NV];
  #pragma GCC unroll 8
  for (int x = 0; x < NV; ++x) {
    const bool all = x < NV - 1 || lastAll;
    const typename V::Mask lanes = x == NV - 1 ? last : every;
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if (k0 > 0) acc[r][x] = loadLanes<V>(out + r * ldo + L * x, lanes, all);
      else acc[r][x] = start ? loadLanes<V>(start + L * x, lanes, all) : V::zero();
    }
  }
  for (std::int64_t j = k0; j < k1; ++j) {
    if (j - k0 < pfLines) _mm_prefetch(reinterpret_cast<const char*>(pf + (j - k0) * 16), _MM_HINT_T1);
    Vec vj[NV];
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) {
      vj[x] = Whole || x < NV - 1 ? V::loadu(v + j * ldv + L * x) : V::maskLoad(last, v + j * ldv + L * x);
    }
    #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Vec a = V::set1(w[r * ldw + j]);
      #pragma GCC unroll 8
      for (int x = 0; x < NV; ++x) acc[r][x] = V::fmadd(a, vj[x], acc[r][x]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int x = 0; x < NV; ++x) {
      if (x < NV - 1 || lastAll) V::storeu(out + r * ldo + L * x, acc[r][x]);
      else V::maskStore(out + r * ldo + L * x, last, acc[r][x]);
    }
  }
}

// The arguments of one tile of productBlockFor: rows [i, i + rows) (rows <= kRows) of one chunk of k.
template <class V>
struct SumArgs {
  const float* w;
  std::int64_t ldw;
  const float* v;
  std::int64_t ldv, k0, k1;
  float* out;
  std::int64_t ldo;
  typename V::Mask last;
  bool lastAll;
  const float* start;
  std::int64_t i, rows;
  const float* pf;
  std::int64_t pfLines;
};

template <class V, int NV, bool Whole>
void sumRows(const SumArgs<V>& s) {
  const float* wi = s.w + s.i * s.ldw;
  float* oi = s.out + s.i * s.ldo;
  switch (s.rows) {
#define MHASCOPE_SUM_TILE(R) \
  sumTile<V, R, NV, Whole>(wi, s.ldw, s.v, s.ldv, s.k0, s.k1, oi, s.ldo, s.last, s.lastAll, s.start, s.pf, s.pfLines)
    case 6: return MHASCOPE_SUM_TILE(6);
    case 5: return MHASCOPE_SUM_TILE(5);
    case 4: return MHASCOPE_SUM_TILE(4);
    case 3: return MHASCOPE_SUM_TILE(3);
    case 2: return MHASCOPE_SUM_TILE(2);
    default: return MHASCOPE_SUM_TILE(1);
#undef MHASCOPE_SUM_TILE
  }
}

// sumRows for nv vectors (1 .. NV) of columns, the count in the tile's type.
template <class V, int NV>
void sumRowsOfWidth(int nv, bool whole, const SumArgs<V>& s) {
  if constexpr (NV > 1) {
    if (nv < NV) return sumRowsOfWidth<V, NV - 1>(nv, whole, s);
  }
  if (whole) sumRows<V, NV, true>(s);
  else sumRows<V, NV, false>(s);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] whole blocks (packKeys, scoresBlockFor, packStrip, productBlockFor)
// ---------------------------------------------------------------------------------------------

// Keys [j0, j0 + n) of k (rows of dk) into kt (dk rows of 64), zeros past n (computed, never
// stored): by square blocks of lanes when they are whole (d_k a multiple of the lanes, 64 keys),
// else one by one. (One by one, this copy was a fifth of the scores' time at d_k 64.)
template <class V, int DK>
void packKeys(const float* k, std::int64_t dk, std::int64_t j0, std::int64_t n, float* kt) {
  constexpr int L = V::kLanes;
  const std::int64_t width = DK > 0 ? DK : dk;
  if (n == kKeys && width % L == 0) {
    for (std::int64_t jb = 0; jb < kKeys; jb += L) {
      for (std::int64_t cb = 0; cb < width; cb += L) {
        V::transpose(k + (j0 + jb) * width + cb, width, kt + cb * kKeys + jb, kKeys);
      }
    }
    return;
  }
  for (std::int64_t j = 0; j < kKeys; ++j) {
    for (std::int64_t c = 0; c < width; ++c) kt[c * kKeys + j] = j < n ? k[(j0 + j) * width + c] : 0.0f;
  }
}

template <class V, int DK>
void scoresBlockFor(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                    const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                    const float* packedKeys) {
  using Vec = typename V::Vec;
  constexpr int L = V::kLanes;
  const std::int64_t width = DK > 0 ? DK : dk;
  if (nq > kMaxRowsPerPass) {  // the engine's blocks are 128 rows; anything longer in passes
    for (std::int64_t i0 = 0; i0 < nq; i0 += kMaxRowsPerPass) {
      scoresBlockFor<V, DK>(q + i0 * width, k, std::min(kMaxRowsPerPass, nq - i0), Tk, dk, factor, blocked + i0,
                            scores ? scores + i0 * ld : nullptr, weights ? weights + i0 * ld : nullptr, ld,
                            rowMax ? rowMax + i0 : nullptr, packedKeys);
    }
    return;
  }
  // 64 keys transposed (d_k rows of 64): packed here per block of rows, or read from packedKeys.
  // (Packed per block, the transposes were ~6 % of the forward at T = 4096 with 64-row blocks in
  // perf; packed once per forward the forward took ~3 % less.)
  alignas(64) float own[(DK > 0 ? DK : kScoresBlockMaxDk) * kKeys];
  Vec maxv[kMaxRowsPerPass];  // each row's running maximum, one vector
  for (std::int64_t r = 0; r < nq; ++r) maxv[r] = V::set1(kNegInf);
  for (std::int64_t j0 = 0; j0 < Tk; j0 += kKeys) {
    const std::int64_t n = std::min(kKeys, Tk - j0);
    const float* kt = own;
    if (packedKeys) kt = packedKeys + (j0 / kKeys) * width * kKeys;
    else packKeys<V, DK>(k, width, j0, n, own);
    typename V::Mask valid[kKeys / L];
    for (int x = 0; x < kKeys / L; ++x) valid[x] = V::lanesBelow(n - L * x);
    std::int64_t i = 0;
    for (; i + kRows <= nq; i += kRows) {
      scoresRows<V, kRows, DK>(q, width, kt, n, valid, j0, factor, blocked, scores, weights, ld, maxv, i);
    }
    switch (nq - i) {  // the last rows together: one row alone loads the keys for only NV products
#define MHASCOPE_SCORES_ROWS(R) \
  scoresRows<V, R, DK>(q, width, kt, n, valid, j0, factor, blocked, scores, weights, ld, maxv, i)
      case 5: MHASCOPE_SCORES_ROWS(5); break;
      case 4: MHASCOPE_SCORES_ROWS(4); break;
      case 3: MHASCOPE_SCORES_ROWS(3); break;
      case 2: MHASCOPE_SCORES_ROWS(2); break;
      case 1: MHASCOPE_SCORES_ROWS(1); break;
      default: break;
#undef MHASCOPE_SCORES_ROWS
    }
  }
  if (weights) for (std::int64_t r = 0; r < nq; ++r) rowMax[r] = V::maxOfLanes(maxv[r]);
  if (scores && weights) _mm_sfence();  // the streamed scores are in memory before anyone reads them
}

template <class V>
void scoresBlockOf(const float* q, const float* k, std::int64_t nq, std::int64_t Tk, std::int64_t dk, float factor,
                   const BlockedKeys* blocked, float* scores, float* weights, std::int64_t ld, float* rowMax,
                   const float* packedKeys) {
  if (dk == 64) {
    return scoresBlockFor<V, 64>(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
  }
  scoresBlockFor<V, 0>(q, k, nq, Tk, dk, factor, blocked, scores, weights, ld, rowMax, packedKeys);
}

template <class V>
void packKeyChunksOf(const float* k, std::int64_t Tk, std::int64_t dk, std::int64_t c0, std::int64_t c1,
                     float* packed) {
  for (std::int64_t c = c0; c < c1; ++c) {
    const std::int64_t j0 = c * kKeys, n = std::min(kKeys, Tk - j0);
    if (dk == 64) packKeys<V, 64>(k, dk, j0, n, packed + c * dk * kKeys);
    else packKeys<V, 0>(k, dk, j0, n, packed + c * dk * kKeys);
  }
}

// Rows [k0, k1) of the strip of `cols` columns at b (row stride ldb) into packed (rows of 64, zeros
// past the columns up to a whole vector). Read in place at a row stride of d_model, each tile row's
// 256 bytes lie in a 4 KiB page of their own: every row a new page for the TLB and the prefetcher,
// and at 4 KiB strides the same few L1 sets (at d_model 1024 the projections ran at half the GEMM's
// rate). Packed, the tiles read the strip in order; it is then reused by every row tile of the block.
template <class V>
void packStrip(const float* b, std::int64_t ldb, std::int64_t k0, std::int64_t k1, std::int64_t cols, float* packed) {
  constexpr int L = V::kLanes;
  const std::int64_t nv = (cols + L - 1) / L;
  const typename V::Mask last = V::lanesBelow(cols - L * (nv - 1));
  const bool lastAll = V::isAll(last);
  for (std::int64_t j = k0; j < k1; ++j) {
    const float* src = b + j * ldb;
    float* dst = packed + (j - k0) * kKeys;
    for (std::int64_t x = 0; x < nv; ++x) V::store(dst + L * x, loadLanes<V>(src + L * x, last, x < nv - 1 || lastAll));
  }
}

template <class V>
void productBlockFor(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t m,
                     std::int64_t k, std::int64_t n, float* c, std::int64_t ldc, const float* start,
                     const float* prepacked) {
  constexpr int L = V::kLanes, NV = V::kTileVectors, W = NV * L;
  if (k <= 0) {
    for (std::int64_t i = 0; i < m; ++i) {
      if (start) std::copy(start, start + n, c + i * ldc);
      else std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  // b's rows are read in place when they are at most one strip wide (A V: V's rows of d_k) or
  // packed already (prepacked: packStrips' strips), else each strip of a chunk of k is packed
  // first (packStrip).
  const bool pack = ldb > kKeys && !prepacked;
  float* packed = pack ? stripScratch() : nullptr;
  for (std::int64_t k0 = 0; k0 < k; k0 += kKeyChunk) {
    const std::int64_t k1 = std::min(k, k0 + kKeyChunk);
    for (std::int64_t c0 = 0; c0 < n; c0 += kKeys) {  // one strip of 64 output columns at a time
      const std::int64_t cols = std::min<std::int64_t>(kKeys, n - c0), groups = (cols + W - 1) / W;
      const float* from = start ? start + c0 : nullptr;
      if (pack) packStrip<V>(b + c0, ldb, k0, k1, cols, packed);
      // The strip's row j, whichever way: bs + j * ls.
      const float* bs = pack ? packed - k0 * kKeys : prepacked ? prepacked + c0 * k : b + c0;
      const std::int64_t ls = pack || prepacked ? kKeys : ldb;
      // The next prepacked strip's rows are asked into L2 a share per tile, one line per k step
      // inside the tile's loop, so that the next strip's first tile does not wait for them. Issued
      // all at once before each tile, the prefetches stall on the full miss queue.
      const float* next = prepacked && c0 + kKeys < n ? prepacked + (c0 + kKeys) * k + k0 * kKeys : nullptr;
      const std::int64_t lines = (k1 - k0) * 4, perTile = (lines * kRows + m * groups - 1) / (m * groups);
      std::int64_t line = 0;
      for (std::int64_t i = 0; i < m;) {
        // Tiles of 6 rows; the last 7 or 8 as two of 4 and 3 or 4 (a tile of 1 or 2 rows loads b's
        // vectors for only NV or 2 NV products each: the 2 rows left of 128 took 2 % of the forward).
        const std::int64_t left = m - i;
        const std::int64_t rows = left == 7 || left == 8 ? 4 : std::min<std::int64_t>(kRows, left);
        for (std::int64_t g = 0; g < cols; g += W) {  // the strip's columns a register tile's width at a time
          const std::int64_t gcols = std::min<std::int64_t>(W, cols - g), nv = (gcols + L - 1) / L;
          const typename V::Mask last = V::lanesBelow(gcols - L * (nv - 1));
          const bool lastAll = V::isAll(last);
          const std::int64_t pfLines = next ? std::min(perTile, lines - line) : 0;
          const SumArgs<V> s{a,    lda,     bs + g,           ls,   k0, k1, c + c0 + g, ldc, last, lastAll,
                             from ? from + g : nullptr, i, rows, next ? next + line * 16 : nullptr, pfLines};
          line += pfLines;
          sumRowsOfWidth<V, NV>(static_cast<int>(nv), pack || prepacked || lastAll, s);
        }
        i += rows;
      }
    }
  }
}

}  // namespace
}  // namespace simd
}  // namespace mhascope
