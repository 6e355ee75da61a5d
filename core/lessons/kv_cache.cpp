// KV cache — the decoding stepper: prefill, then one token per step, checked against the full forward.
#include <algorithm>
#include <cmath>

#include "attention/model.hpp"
#include "lessons/common.hpp"
#include "lessons/gqa.hpp"
#include "lessons/kv_cache.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

Result<KvCacheLesson> kvCacheLesson(const Model& model, int prefill, int steps) {
  const std::int64_t T = model.inputs.query.dim(1);
  if (prefill < 1 || prefill > T) {
    return makeError("the prefill P must be from 1 to T (= " + std::to_string(T) + "), got " + std::to_string(prefill));
  }
  KvCacheLesson r;
  r.prefill = prefill;
  r.steps = static_cast<int>(std::clamp<std::int64_t>(steps, 0, T - prefill));
  r.tokens = static_cast<int>(T);
  auto session = startDecode(model.inputs, model.weights, model.options, prefill);
  if (!session) return session.error();
  r.session = std::move(session).value();
  for (int i = 0; i < r.steps; ++i) {
    if (auto s = decodeNext(r.session, model.inputs, model.weights); !s) return s.error();
  }
  // The reference: every token at once, with the options the decode used (the causal mask on).
  if (auto s = forward(model.inputs, model.weights, r.session.options, r.full); !s) return s.error();
  const Tensor& out = r.session.result.output;  // (B, T, d_model), rows [0, length) made
  const Tensor& ref = r.full.tensor(StageId::Output);
  const std::int64_t B = out.dim(0), d = out.dim(2), n = r.length();
  for (std::int64_t b = 0; b < B; ++b) {
    r.maxAbsOutputDiff = std::max(r.maxAbsOutputDiff, maxAbsDiff(out.ptr() + b * T * d, ref.ptr() + b * T * d,
                                                                 static_cast<std::size_t>(n * d)));
  }
  const Tensor& a = r.full.tensor(StageId::Weights);  // (B, h, T, T)
  const Tensor& row = r.session.lastWeights;          // (B, h, n)
  const std::int64_t h = row.dim(1);
  for (std::int64_t bh = 0; bh < B * h; ++bh) {
    r.maxAbsWeightDiff = std::max(r.maxAbsWeightDiff,
                                  maxAbsDiff(row.ptr() + bh * n, a.ptr() + (bh * T + n - 1) * T, static_cast<std::size_t>(n)));
  }
  const LayerCounts layer = layerCounts({r.full.dModel, r.full.heads, kvHeadsOf(r.session.options), r.full.dk});
  r.bytesPerToken = static_cast<double>(B) * static_cast<double>(layer.kvCacheBytesPerToken());
  return r;
}

std::string kvCacheStepText(const KvCacheLesson& r) {
  const DecodeStep& st = r.lastStep();
  const int n = r.length();
  const int N = kvHeadsOf(r.session.options), h = r.full.heads;
  std::string s;
  if (r.steps == 0) {
    s = "Prefill: the first " + std::to_string(r.prefill) + (r.prefill == 1 ? " token goes" : " tokens go") +
        " through the forward at once; their keys and values fill the cache's first " + std::to_string(n) +
        (n == 1 ? " row" : " rows") + ". Shown: the last prompt token's row (query " + std::to_string(n - 1) + ").";
  } else {
    s = "Step " + std::to_string(r.steps) + ": token " + std::to_string(n - 1) +
        " is projected alone (one q, k and v row), its k and v are appended (the cache now holds " + std::to_string(n) +
        " rows), and its one query row attends to all " + std::to_string(n) + " cached keys; the earlier rows are not "
        "recomputed.";
  }
  s += " This step: " + grouped(static_cast<std::int64_t>(st.flops)) + " FLOPs, against " +
       grouped(static_cast<std::int64_t>(st.recomputeFlops)) + " to recompute all " +
       std::to_string(n) + " tokens";
  if (r.steps > 0 && st.flops > 0) s += " (" + num(st.recomputeFlops / st.flops, 3) + "x more)";
  s += ". Cache: " + formatBytes(st.cacheBytes) + " = 2 (K, V) x " + std::to_string(n) + " tokens x " +
       std::to_string(N) + (N == 1 ? " K/V head" : " K/V heads") + " x d_k " + std::to_string(r.full.dk) +
       " x 4 bytes" + (r.full.batch > 1 ? " x B " + std::to_string(r.full.batch) : "") + ".";
  if (N < h) {
    s += " " + std::to_string(h) + " query heads share " + std::to_string(N) + (N == 1 ? " K/V head" : " K/V heads") +
         ": the cache is " + num(static_cast<double>(h) / N, 3) + "x smaller than multi-head attention's.";
  }
  if (const AttentionOptions& o = r.session.options; o.window > 0 && n > o.window + o.sinks) {
    s += " With the sliding window W = " + std::to_string(o.window) + (o.sinks > 0 ? " and " + std::to_string(o.sinks) +
         (o.sinks == 1 ? " sink" : " sinks") : std::string()) + ", this query reads only " +
         std::to_string(o.window + o.sinks) + " of the " + std::to_string(n) +
         " cached rows: a rolling cache would keep just those (W + S) and evict the rest.";
  }
  if (r.session.options.positions == AttnPositions::Rope) {
    s += " With RoPE the cache holds the keys after their rotation: each is turned once, by its own position, when it "
         "is appended, and never again. (StreamingLLM, which evicts keys, stores them before the rotation instead and "
         "turns them by their place in the cache.)";
  }
  s += " Max |decode - full causal forward| over the " + std::to_string(n) + " output rows so far: " +
       num(r.maxAbsOutputDiff, 2) + (r.maxAbsOutputDiff < 1e-4 ? " (float rounding)." : ".");
  return s;
}

std::string kvCacheScaleText(const KvCacheLesson& r) {
  const std::int64_t N = kvHeadsOf(r.session.options), dk = r.full.dk, T = r.tokens;
  std::string s = "The cache exists in every layer. One sequence of this text's " + grouped(T) + " tokens fills " +
                  formatBytes(static_cast<double>(layerCounts({r.full.dModel, r.full.heads, N, dk, false}).kvCacheBytesPerSequence(1, T, 4))) + " in this one layer (" +
                  grouped(T) + " tokens x 2 (K, V) x " + std::to_string(N) + (N == 1 ? " K/V head" : " K/V heads") +
                  " x d_k " + std::to_string(dk) + " x 4 bytes); a model of L such layers holds L times that.";
  if (const auto m = publishedAttention("Llama-3-8B")) {
    const std::int64_t mdk = m->headDim > 0 ? m->headDim : m->dModel / m->heads;
    s += " " + std::string(m->name) + " at 8K context, in 16-bit: " + std::to_string(m->layers) + " layers x " +
         std::to_string(m->kvHeads) + " K/V heads x d_k " + std::to_string(mdk) + " x 2 (K, V) x 2 bytes x " +
         grouped(kKvExampleContext) + " tokens = " +
         formatBytes(static_cast<double>(layerCounts({m->dModel, m->heads, m->kvHeads, mdk, false}).kvCacheBytesPerSequence(m->layers, kKvExampleContext, 2))) +
         " per sequence.";
  }
  s += " Decoding is memory-bandwidth bound: each step reads every weight and the whole cache to make one token per "
       "sequence (one sequence in 16-bit: a multiply-add, 2 FLOPs, per 2-byte weight read), while the prefill reuses each weight it reads for all P tokens, so a long prompt "
       "is compute bound. The cache saves recomputation, not attention: a step's one query row still meets all t cached keys, "
       "so its work grows with t. Serving systems keep the cache in fixed-size pages that sequences share without "
       "fragmenting memory (PagedAttention, Kwon et al. 2023, in vLLM) and often store it in 8 or 4 bits "
       "(quantised KV caches).";
  return s;
}

const char* kvCacheLessonIntro() {
  return "A causal model generates one token at a time, and a token's key and value never change once made (later "
         "tokens cannot affect earlier ones under the causal mask). So a decoder keeps them: the KV cache. The prompt "
         "(P tokens) goes through the forward at once (prefill); then each new token needs only its own q, k and v "
         "row (O(d²) work) and its one query row against the t cached keys (O(t·d)), instead of recomputing every "
         "token (O(t·d² + t²·d)). The price is memory: 2 · N · d_k numbers per token per layer.";
}

}  // namespace mhascope
