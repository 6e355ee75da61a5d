// KV-cache decoding (decode.hpp): the prefill through the engine's forward, then one token at a
// time in plain loops, one function per step of the lesson: project the new token, rotate, append
// to the cache, attend with the one query row, merge and project out.
#include "attention/decode.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "attention/model.hpp"

namespace mhascope {
namespace {

// Rows [t0, t0 + n) of a (B, T, d) tensor as a (B, n, d) one.
Tensor sliceTokens(const Tensor& x, std::int64_t t0, std::int64_t n) {
  const std::int64_t B = x.dim(0), T = x.dim(1), d = x.dim(2);
  Tensor out({B, n, d}, x.axes);
  for (std::int64_t b = 0; b < B; ++b) std::copy_n(x.ptr() + (b * T + t0) * d, n * d, out.ptr() + b * n * d);
  return out;
}

// y = x W + b for one token's row (1, d_in) -> (1, d_out).
void projectToken(const float* x, const RowMatrix& w, const RowVector& b, float* y) {
  Eigen::Map<RowVector>(y, w.cols()).noalias() = Eigen::Map<const RowVector>(x, w.rows()) * w + b;
}

struct Sizes {
  std::int64_t B, T, d, dk;
  int h, N;
};

// The new token t's attention for batch item b, every query head: one row of scores against the
// t + 1 cached keys, the scale, ALiBi's bias, the mask (causal is implied: only keys 0..t exist;
// the window, sinks and key padding), the softmax (with the learned sink's column when set) and the weighted sum
// into concat (1, h·d_k).
void attendToken(const Sizes& z, const AttentionOptions& opt, float factor, const std::vector<float>& slopes,
                 std::int64_t b, std::int64_t t, const float* q /*(h, d_k)*/, const Tensor& kCache,
                 const Tensor& vCache, float* concat /*(h·d_k)*/, float* weights /*(h, t + 1)*/) {
  std::vector<float> row(static_cast<std::size_t>(t + 1));
  for (int i = 0; i < z.h; ++i) {
    const std::int64_t g = i / (z.h / z.N);
    const float* K = kCache.ptr() + (b * z.N + g) * z.T * z.dk;  // (T, d_k), rows 0..t filled
    const float* V = vCache.ptr() + (b * z.N + g) * z.T * z.dk;
    float m = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j <= t; ++j) {
      const bool padded = opt.keyPaddingMask && opt.keyPaddingMask->data[static_cast<std::size_t>(b * z.T + j)] != 0.0f;
      if (padded || windowHides(opt, t, j)) {
        row[static_cast<std::size_t>(j)] = -std::numeric_limits<float>::infinity();
        continue;
      }
      float s = 0.0f;
      for (std::int64_t c = 0; c < z.dk; ++c) s += q[i * z.dk + c] * K[j * z.dk + c];
      s *= factor;
      if (opt.softcap > 0.0f) s = opt.softcap * std::tanh(s / opt.softcap);  // the softcap, before the bias and mask
      if (opt.positions == AttnPositions::Alibi) s += alibiBias(slopes[static_cast<std::size_t>(i)], true, t, j);
      row[static_cast<std::size_t>(j)] = s;
      m = std::max(m, s);
    }
    float* out = concat + i * z.dk;
    float* a = weights + i * (t + 1);
    std::fill(out, out + z.dk, 0.0f);
    std::fill(a, a + t + 1, 0.0f);
    if (m == -std::numeric_limits<float>::infinity()) continue;  // every key blocked: weights 0 (all on a sink)
    // A learned sink is one more column of the softmax, with no value: it joins the maximum and the sum only.
    const float sink = opt.sinkLogits.empty() ? -std::numeric_limits<float>::infinity()
                                              : opt.sinkLogits[static_cast<std::size_t>(i)];
    m = std::max(m, sink);
    float sum = sink == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(sink - m);
    for (float& v : row) {
      v = v == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(v - m);
      sum += v;
    }
    for (std::int64_t j = 0; j <= t; ++j) {
      a[j] = row[static_cast<std::size_t>(j)] / sum;
      for (std::int64_t c = 0; c < z.dk; ++c) out[c] += a[j] * V[j * z.dk + c];
    }
  }
}

Sizes sizesOf(const AttentionInputs& in, const AttentionOptions& opt) {
  return {in.query.dim(0), in.query.dim(1), in.query.dim(2), headDimOf(opt, in.query.dim(2)), opt.heads, kvHeadsOf(opt)};
}

// K and V cached after `tokens` tokens: 2 * B * N * tokens * d_k floats.
double cacheBytes(const Sizes& z, std::int64_t tokens) {
  const std::int64_t perToken = layerCounts({z.d, z.h, z.N, z.dk}).kvCacheBytesPerToken();
  return static_cast<double>(z.B) * static_cast<double>(tokens) * static_cast<double>(perToken);
}

}  // namespace

Result<DecodeSession> startDecode(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& options,
                                  std::int64_t prefill) {
  AttentionOptions opt = options;
  opt.causal = true;  // generation sees only the past
  if (auto s = validate(in, w, opt); !s) return s.error();
  if (!in.selfAttention) return makeError("decode runs self-attention only: with a key/value text (cross-attention) the keys and values "
                     "come from the other text, which an encoder-decoder model projects once and caches whole; that "
                     "cache does not grow as tokens are made");
  if (opt.attnMask) return makeError("decode cannot use an attention mask file: its rows are made for the whole table");
  if (opt.scoresOverride) return makeError("decode cannot use hand-set scores: they are made for the whole table");
  const Sizes z = sizesOf(in, opt);
  if (prefill < 1 || prefill > z.T) {
    return makeError("the prefill P must be from 1 to T (= " + std::to_string(z.T) + "), got " + std::to_string(prefill));
  }
  try {
    DecodeSession session;
    session.options = opt;
    DecodeResult& r = session.result;
    r.output = Tensor({z.B, z.T, z.d}, {"B", "T", "d_model"});
    r.kCache = Tensor({z.B, z.N, z.T, z.dk}, {"B", "N", "T", "d_k"});
    r.vCache = Tensor({z.B, z.N, z.T, z.dk}, {"B", "N", "T", "d_k"});

    // Prefill: the first P tokens through the forward at once; its rotated keys and its values
    // are the cache's first P rows.
    AttentionInputs first;
    first.query = sliceTokens(in.query, 0, prefill);
    first.key = first.query;
    first.value = first.query;
    AttentionOptions firstOpt = opt;
    if (opt.keyPaddingMask) {
      Tensor pad({z.B, prefill}, {"B", "T_k"});
      for (std::int64_t b = 0; b < z.B; ++b) {
        std::copy_n(opt.keyPaddingMask->ptr() + b * z.T, prefill, pad.ptr() + b * prefill);
      }
      firstOpt.keyPaddingMask = std::move(pad);
    }
    Trace t;
    if (auto s = forward(first, w, firstOpt, t); !s) return s.error();
    const Tensor& y = t.tensor(StageId::Output);  // (B, P, d_model)
    // The keys as the scores read them: rotated, else normed, else as split.
    const StageId cached = opt.positions == AttnPositions::Rope ? StageId::KRotated
                           : !opt.kNorm.empty()                 ? StageId::KNormed
                                                                : StageId::KHeads;
    const Tensor& k = t.tensor(cached);
    const Tensor& v = t.tensor(StageId::VHeads);  // (B, N, P, d_k)
    const Tensor& a = t.tensor(StageId::Weights);  // (B, h, P, P)
    session.lastWeights = Tensor({z.B, z.h, prefill}, {"B", "h", "T_k"});
    for (std::int64_t b = 0; b < z.B; ++b) {
      std::copy_n(y.ptr() + b * prefill * z.d, prefill * z.d, r.output.ptr() + b * z.T * z.d);
      for (std::int64_t g = 0; g < z.N; ++g) {
        const std::int64_t from = (b * z.N + g) * prefill * z.dk, to = (b * z.N + g) * z.T * z.dk;
        std::copy_n(k.ptr() + from, prefill * z.dk, r.kCache.ptr() + to);
        std::copy_n(v.ptr() + from, prefill * z.dk, r.vCache.ptr() + to);
      }
      for (std::int64_t i = 0; i < z.h; ++i) {  // the prefill's last query row
        std::copy_n(a.ptr() + ((b * z.h + i) * prefill + prefill - 1) * prefill, prefill,
                    session.lastWeights.ptr() + (b * z.h + i) * prefill);
      }
    }
    const double full = countFlops(z.B, prefill, prefill, z.d, z.h, z.N, z.dk).total();
    r.steps.push_back({0, prefill, cacheBytes(z, prefill), full, full});
    session.length = prefill;
    return session;
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while decoding");
  }
}

Status decodeNext(DecodeSession& s, const AttentionInputs& in, const MhaWeights& w) {
  const AttentionOptions& opt = s.options;
  const Sizes z = sizesOf(in, opt);
  DecodeResult& r = s.result;
  if (r.output.shape != Shape{z.B, z.T, z.d} || r.kCache.dim(1) != z.N) {
    return makeError("decode: these inputs are not the ones the prefill had");
  }
  const std::int64_t tok = s.length;
  if (tok >= z.T) return makeError("every token is decoded already (T = " + std::to_string(z.T) + ")");
  try {
    const float factor = scaleFactorFor(opt.scale, z.d, z.dk, opt.scaleFactor);
    const std::vector<float> slopes = alibiSlopes(z.h);
    const std::int64_t kvWidth = z.N * z.dk, qWidth = z.h * z.dk;
    std::vector<float> q(static_cast<std::size_t>(qWidth)), kRow(static_cast<std::size_t>(kvWidth)),
        vRow(static_cast<std::size_t>(kvWidth)), concat(static_cast<std::size_t>(qWidth));
    Tensor weights({z.B, z.h, tok + 1}, {"B", "h", "T_k"});
    for (std::int64_t b = 0; b < z.B; ++b) {
      const float* x = in.query.ptr() + (b * z.T + tok) * z.d;
      projectToken(x, w.wq, w.bq, q.data());     // (h, d_k) once split
      projectToken(x, w.wk, w.bk, kRow.data());  // (N, d_k)
      projectToken(x, w.wv, w.bv, vRow.data());
      if (!opt.qNorm.empty()) {  // the q/k norm, before the rotation
        normQueryKeyHeads(q.data(), z.h, z.dk, opt.qNorm, opt.qkNormEps, q.data(), z.dk);
        normQueryKeyHeads(kRow.data(), z.N, z.dk, opt.kNorm, opt.qkNormEps, kRow.data(), z.dk);
      }
      if (opt.positions == AttnPositions::Rope) {
        for (int i = 0; i < z.h; ++i) {
          rotatePositions(q.data() + i * z.dk, 1, z.dk, tok, opt.ropeBase, opt.ropeStyle, opt.ropeInvFreq, opt.ropeGain);
        }
        for (int g = 0; g < z.N; ++g) {
          rotatePositions(kRow.data() + g * z.dk, 1, z.dk, tok, opt.ropeBase, opt.ropeStyle, opt.ropeInvFreq, opt.ropeGain);
        }
      }
      for (std::int64_t g = 0; g < z.N; ++g) {  // append to the cache
        std::copy_n(kRow.data() + g * z.dk, z.dk, r.kCache.ptr() + ((b * z.N + g) * z.T + tok) * z.dk);
        std::copy_n(vRow.data() + g * z.dk, z.dk, r.vCache.ptr() + ((b * z.N + g) * z.T + tok) * z.dk);
      }
      attendToken(z, opt, factor, slopes, b, tok, q.data(), r.kCache, r.vCache, concat.data(),
                  weights.ptr() + b * z.h * (tok + 1));
      projectToken(concat.data(), w.wo, w.bo, r.output.ptr() + (b * z.T + tok) * z.d);
    }
    // Sizes as doubles for the FLOP count.
    const double fB = static_cast<double>(z.B), fN = z.N, fDk = static_cast<double>(z.dk), fD = static_cast<double>(z.d);
    const double ctx = static_cast<double>(tok + 1), fHq = static_cast<double>(qWidth);
    // W_q and W_o (d_model x h*d_k), K and V (d_model x N*d_k) for one token, then q . k and a v over
    // the t + 1 cached positions in every query head.
    const double stepFlops = 2.0 * fB * (2.0 * fD * fHq + 2.0 * fD * fN * fDk) + 2.0 * fB * 2.0 * z.h * ctx * fDk;
    r.steps.push_back({tok, 1, cacheBytes(z, tok + 1), stepFlops,
                       countFlops(z.B, tok + 1, tok + 1, z.d, z.h, z.N, z.dk).total()});
    s.lastWeights = std::move(weights);
    s.length = tok + 1;
    return Ok{};
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while decoding");
  }
}

Result<DecodeResult> decode(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& options,
                            std::int64_t prefill) {
  auto session = startDecode(in, w, options, prefill);
  if (!session) return session.error();
  while (session->length < in.query.dim(1)) {
    if (auto s = decodeNext(*session, in, w); !s) return s.error();
  }
  return std::move(session->result);
}

}  // namespace mhascope
