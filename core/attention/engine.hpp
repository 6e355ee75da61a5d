// The multi-head attention engine: the forward pass of torch.nn.MultiheadAttention
// (batch_first, no dropout), one function per equation, recording every stage into a Trace.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "attention/layer_counts.hpp"
#include "attention/tensor.hpp"
#include "attention/trace.hpp"
#include "kernels/dispatch.hpp"  // kernels::Scratch, an Engine's working memory

namespace mhascope {

// Default cap on the memory the recorded tensors may take (configurable per run).
inline constexpr std::uint64_t kDefaultMemoryBudget = 512ull << 20;  // 512 MiB

// Seeded initialisation, identical on every machine (own integer RNG, no std distributions):
// W ~ U(-sqrt(3/d_model), +sqrt(3/d_model)) (Xavier-uniform for a square matrix); biases, when
// enabled, ~ U(-0.1, 0.1) so their effect is visible (PyTorch starts them at zero).
// qWidth: the columns of W_q and rows of W_o, h·d_k (0: d_model); kvWidth: the columns of W_k and
// W_v, N·d_k (0: as W_q's, multi-head attention). With both 0 every matrix is (d_model, d_model).
MhaWeights initWeights(int dModel, bool bias, std::uint64_t seed, int kvWidth = 0, int qWidth = 0);

struct AttentionInputs {
  Tensor query;  // (B, T_q, d_model)
  Tensor key;    // (B, T_k, d_model)
  Tensor value;  // (B, T_k, d_model)
  bool selfAttention = true;  // key and value are the query tensor itself
  std::vector<std::vector<std::string>> queryTokens;  // (B, T_q) labels
  std::vector<std::vector<std::string>> keyTokens;    // (B, T_k) labels
};

struct AttentionOptions {
  int heads = 1;  // h
  // N K/V heads (grouped-query attention; N = 1: multi-query), N divides h; 0: N = h. Query head i
  // reads K/V head i // (h/N).
  int kvHeads = 0;
  // d_k, every head's width (0: d_model / h). A model may make its heads wider or narrower than
  // d_model / h (Qwen3, Gemma): W_q is then (d_model, h·d_k), W_o (h·d_k, d_model).
  int headDim = 0;
  ScaleKind scale = ScaleKind::SqrtDk;
  float scaleFactor = 1.0f;  // ScaleKind::Given's factor (Gemma: query_pre_attn_scalar^-1/2)
  // The softcap c: the scaled scores become c tanh(s / c) before the mask, the softcapped stage (Gemma 2's
  // attn_logit_softcapping); 0: none.
  float softcap = 0.0f;
  // q/k norm (Qwen3, Gemma 3, OLMo 2): each query and key, right after the split and before RoPE, divided by its
  // root mean square and times a learned gain, q / sqrt(mean(q²) + eps) · g. Gains of d_k numbers: a norm per
  // head, over each head's own features; of h·d_k (N·d_k for the keys): one norm over the whole projection of
  // a token, its heads' features together. Both empty: none.
  std::vector<float> qNorm, kNorm;
  float qkNormEps = 1e-6f;
  AttnPositions positions = AttnPositions::None;  // RoPE on q and k, or ALiBi's bias on the scores
  float ropeBase = 10000.0f;                      // inv_freq_i = base^(-2i/d_k)
  RopeStyle ropeStyle = RopeStyle::Half;
  // RoPE's frequencies given outright, inv_freq_0 .. inv_freq_{d_k/2 - 1}, when a model's config decides them
  // (Llama 3.1's scaled RoPE stretches the slow ones); empty: base^(-2i/d_k). The rotation is the same either way.
  std::vector<double> ropeInvFreq;
  // cos and sin times this gain (YaRN's attention factor, 0.1 ln(factor) + 1 for gpt-oss): q and k both grow by it,
  // so every score grows by its square; 1: plain RoPE.
  float ropeGain = 1.0f;
  bool causal = false;                   // key k blocked for query q when k > q
  // Sliding window W (0: none): query t sees keys j with t - W < j <= t under the causal mask,
  // |t - j| < W without it; keys j < sinks stay visible as well (the causal rule still applies).
  int window = 0;
  int sinks = 0;
  // A learned sink per head (gpt-oss's self_attn.sinks): head i's logit s_i joins every row's softmax as one more
  // column, dropped afterwards, A[t, k] = e^(S''[t, k]) / (e^(s_i) + Σ_j e^(S''[t, j])); the sink_share stage
  // records each row's 1 - Σ_k A[t, k]. h numbers (-inf: that head has none); empty: no sink.
  std::vector<float> sinkLogits;
  std::optional<Tensor> keyPaddingMask;  // (B, T_k), nonzero = ignore that key (PyTorch polarity)
  std::optional<Tensor> attnMask;        // (T_q, T_k), nonzero = blocked (PyTorch bool polarity)
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
  // Threads the forward may use (the heads and the projections' row blocks are shared out; the
  // results are bit-identical to one thread's). Small forwards run on one thread whatever this says.
  int threads = 1;
  // Every stage is recorded unless a caller that only needs the trainer's backward asks for less:
  // then key, value, scores, scaled_scores, masked_scores and head_outputs are left empty (shape
  // {0}); the others hold exactly the numbers a full recording holds.
  bool recordEveryStage = true;
  // Hand-set scores (the "specialist heads" lesson and the score editor): (h, T_q, T_k) for every
  // batch item, or (B, h, T_q, T_k). A finite entry replaces that cell of Q K^T before scaling;
  // NaN keeps the computed score. Everything downstream is recomputed from it.
  std::optional<Tensor> scoresOverride;
  // Which layer of a model this attention is (0-based; a model folder's or a checkpoint's), or -1
  // for a layer of its own (random weights, a preset, files of one layer). The engine only records
  // it in the trace, so every picture's title and file name can say which layer it shows.
  int layer = -1;
  // A read/replace hook on the tables the heads meet (a model's forward hooks stand on it: model/forward.hpp).
  // Called, when set, with the queries and the keys as the scores read them (after the q/k norm and RoPE where the
  // layer has them: QRotated or QNormed or QHeads, likewise K), the values (VHeads), the weights before the weighted
  // sum (Weights) and the heads side by side before W_o (Concat); what the hook leaves in a table is what the rest
  // of the pass uses. Empty: none, and the pass is the same code as without it.
  std::function<void(StageId stage, Tensor& table)> stageHook;
};

// Bytes the recorded trace takes for these sizes (all 16 stages, the lazy scaled and masked scores
// taking none, + mask bookkeeping).
double estimateTraceBytes(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel,
                          std::int64_t heads, std::int64_t headDim = 0);
// "1.5 GiB"
std::string formatBytes(double bytes);

// What is alive at the same time, for the one memory estimate every caller checks before
// allocating anything.
struct MemoryUse {
  int traces = 1;              // recorded traces alive at once
  int models = 1;              // copies of inputs + weights (a Model each)
  bool weightsFile = false;    // --weights / --save-weights: PyTorch-layout copy + the file's bytes
  bool stageFile = false;      // run --dump / export: the largest stage encoded as file bytes
  bool scoreOverride = false;  // hand-set scores: one (B, h, T_q, T_k) table per model
  int exportSlices = 0;        // export: heatmaps in the picture (1, or h for --head all)
  bool firstHead = false;      // the window's first picture of a big job: one head alone (attentionHead)
  // The variants' stages: normed q and k, rotated q and k (RoPE), the ALiBi bias (h, T_q, T_k), the window mask.
  bool qkNorm = false, rotary = false, positionBias = false, windowMask = false;
  // d_k when the options set it (heads wider or narrower than d_model / h); 0: d_model / h.
  std::int64_t headDim = 0;
  // The window: the shown trace and the one being computed (app/compute_worker.hpp frees a
  // replaced large trace; the lessons that compare two forwards refuse traces over 64 MiB);
  // the worker's model and the lessons' model.
  static MemoryUse app() {
    MemoryUse u;
    u.traces = 2;
    u.models = 2;
    u.firstHead = true;
    return u;
  }
};

struct MemoryEstimate {
  double inputs = 0;   // per model: query, key, value (B, T, d_model), masks, token labels
  double weights = 0;  // per model: W_q, W_k, W_v, W_o (d_model, d_model) + biases
  double trace = 0;    // per trace: 16 stages (14 tables), blocked flags, token labels
  double files = 0;    // file buffers (PyTorch-layout weights, one encoded stage, an exported picture)
  double firstHead = 0;  // one head alone: its table, flags and labels, and Q and K while it computes
  int models = 1, traces = 1;
  double total() const { return models * (inputs + weights) + traces * trace + files + firstHead; }
  // "inputs 1.2 MiB + weights 6.0 GiB + 1 trace × 8.2 MiB + files 0 B"
  std::string describe() const;
};
MemoryEstimate estimateMemory(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel,
                              std::int64_t heads, const MemoryUse& use = {});

// Head counts that divide d_model, nearest to `heads` first (for "did you mean" messages).
std::vector<int> nearestValidHeads(int dModel, int heads, std::size_t count = 2);

// The sizes check alone (no tensors needed): d_model > 0, 1 <= h, d_model % h == 0, T, B > 0,
// memory estimate (estimateMemory with `use`) within budget. Every message names the values.
Status validateSizes(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel, std::int64_t heads,
                     std::uint64_t memoryBudgetBytes, const MemoryUse& use = {});

// N as the options give it (kvHeads, or h when 0).
inline int kvHeadsOf(const AttentionOptions& opt) { return opt.kvHeads > 0 ? opt.kvHeads : opt.heads; }
// d_k as the options give it (headDim, or d_model / h when 0).
inline std::int64_t headDimOf(const AttentionOptions& opt, std::int64_t dModel) {
  return opt.headDim > 0 ? opt.headDim : (opt.heads > 0 ? dModel / opt.heads : 0);
}
// The variants' rules, one line each when broken: N divides h, RoPE needs an even d_k and a
// positive base, W >= 1 when set, S >= 0, sinks only with a window. Sizes are validateSizes'.
Status validateVariants(std::int64_t dModel, const AttentionOptions& opt);
// The MemoryUse flags of these options' variants.
MemoryUse withVariants(MemoryUse use, const AttentionOptions& opt);

// Everything forward() needs, checked before anything is allocated.
Status validate(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt);

// Runs validate(), then the forward pass into `trace`, reusing its buffers when shapes did not
// change; trace.generation is incremented. A validation error leaves the trace unchanged; running
// out of memory mid-way (bad_alloc, caught) leaves it empty. Callers that must keep showing the
// previous picture (the GUI) compute into a second Trace and swap.
// The trace keeps a copy of `w` (trace.weights) as its record of the parameters used.
// (An Engine made for this one call: its working copies are made afresh.)
Status forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace);
// The same, with `w` itself as that record: no copy (the window and `bench` share their model's
// weights with the trace). *w must not change while anyone holds it. Null: an error.
Status forward(const AttentionInputs& in, std::shared_ptr<const MhaWeights> w, const AttentionOptions& opt,
               Trace& trace);

// The forward with its working memory: the kernels' packed copies of the learned matrices (kept
// while the same shared weights come back: a recompute with the same model packs nothing) and of
// the keys. A trace is the record of a pass and holds none of this. Hold one Engine beside a trace
// that is recomputed often (the window, bench); one thread at a time per Engine.
class Engine {
 public:
  Status forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace);
  Status forward(const AttentionInputs& in, std::shared_ptr<const MhaWeights> w, const AttentionOptions& opt,
                 Trace& trace);
  const kernels::Scratch& scratch() const { return scratch_; }

 private:
  Status run(const AttentionInputs& in, const MhaWeights& w, std::shared_ptr<const MhaWeights> keep,
             const AttentionOptions& opt, Trace& trace);
  kernels::Scratch scratch_;
};

// The stages with one (T_q, T_k) table per head: scores, scaled and masked scores, weights.
bool isAttentionTable(StageId id);

// One (batch item, head) of forward()'s attention alone, as a trace of that one head: B = 1,
// h = 1, the item's tokens and mask flags, and the one table `stage` reads (the weights, or the
// scores that the scaled and masked scores derive from), made with forward()'s own operations on
// the same numbers, so sliceStage(result, stage, 0, 0) equals forward()'s slice (batch, head) bit
// for bit. It costs the Q and K projections and 1/(B·h) of the attention, and 1/(B·h) of the
// tables' memory: the window shows the viewed head of a long sequence with it first.
// `stage` must be one of the four (isAttentionTable); indices out of range are errors.
Result<Trace> attentionHead(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, StageId stage,
                            int batch, int head);

// The rules forward() applies to the scores, shared with the lessons' per-head loop
// (core/attention/score_rules.cpp) so that there is one copy of each.
// S' = S * factor: 1/sqrt(d_k) (the default), 1/sqrt(d_model), 1, or `given` (ScaleKind::Given).
float scaleFactorFor(ScaleKind kind, std::int64_t dModel, std::int64_t dk, float given = 1.0f);
// blocked[(b * T_q + q) * T_k + k] = 1 where key k is hidden from query q: the causal rule
// (k > q), the key padding mask and the attention mask, both in PyTorch's bool polarity
// (nonzero = blocked). rowAny[b * T_q + q]: 0 none blocked, 1 some, 2 every key blocked.
// runFrom (optional), per row: where its blocked keys begin when they are one run to the row's
// end (T_k: none blocked; the causal mask and padding of the last keys give such rows), else -1.
void buildBlocked(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk,
                  std::vector<std::uint8_t>& blocked, std::vector<std::uint8_t>& rowAny,
                  std::vector<std::int64_t>* runFrom = nullptr);
// The causal, window and sinks rules (the masks' files aside) are buildBlocked's here:
std::vector<std::uint8_t> blockedCells(const AttentionOptions& opt, std::int64_t B, std::int64_t Tq, std::int64_t Tk);
// The sliding window's rule alone for query position t and key position j: hidden when the window
// is set, j is not a sink, and j <= t - W (or, without a causal mask, |t - j| >= W).
bool windowHides(const AttentionOptions& opt, std::int64_t t, std::int64_t j);
// ALiBi's slopes m_1 .. m_h of the paper: 2^(-8i/h) when h is a power of two; otherwise those of the
// closest power of two n below h, then every other slope of 2n.
std::vector<float> alibiSlopes(int heads);
// Head i's bias for query position t and key position j: -m_i (t - j) under a causal mask,
// -m_i |t - j| without one.
float alibiBias(float slope, bool causal, std::int64_t t, std::int64_t j);
// RoPE on rows of one head, in place: row r (d_k features) at position firstPosition + r turns each
// pair (a, b) of features by the angle p·inv_freq_i, inv_freq_i = base^(-2i/d_k) or invFreq[i] when given
// (d_k/2 of them): (a, b) -> (a cos - b sin, b cos + a sin); the pairs are (i, i + d_k/2) or (2i, 2i + 1) (style).
// gain: cos and sin times it (AttentionOptions::ropeGain).
void rotatePositions(float* x /*(T, d_k)*/, std::int64_t T, std::int64_t dk, std::int64_t firstPosition, float base,
                     RopeStyle style, const std::vector<double>& invFreq = {}, float gain = 1.0f);
// q/k norm of one token's n heads (AttentionOptions::qNorm): `in` holds the token's n·d_k projected features,
// head i's at i·d_k; head i's normed features go to out + i·outStride (in place when out = in, outStride = d_k).
// gain (d_k): each head over its own features; (n·d_k): the whole projection at once. The sum of squares in double,
// the rest in float: x · (1 / sqrt(mean(x²) + eps)) · g, as Hugging Face's RMSNorm computes it in float32.
void normQueryKeyHeads(const float* in, std::int64_t n, std::int64_t dk, const std::vector<float>& gain, float eps,
                       float* out, std::int64_t outStride);
// Hand-set scores replace the computed ones (NaN = keep) in query rows q0 .. q0 + nq - 1 of
// head `head` of batch item b; `scores` is that head's (T_q, T_k) table. The lesson where a
// person, not training, decides what a head looks for.
void overrideScores(const Tensor& o /*(h,T_q,T_k) or (B,h,T_q,T_k)*/, std::int64_t b, int head, float* scores,
                    std::int64_t Tq, std::int64_t Tk, std::int64_t q0, std::int64_t nq);

// FLOPs of one forward: layerCounts(d_model, h, N, d_k).flops(B, T_q, T_k) (attention/layer_counts.hpp).
// kvHeads N (0: h) narrows the K and V projections to N·d_k outputs; dk 0 is d_model / h.
FlopCount countFlops(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel, std::int64_t heads,
                     std::int64_t kvHeads = 0, std::int64_t dk = 0);

// Non-finite cells (NaN, +inf; and -inf outside blocked cells) a forward produced, per stage in
// pipeline order. Finite inputs and weights can still overflow float (e.g. inputs of 1e20: the
// scores reach inf, the softmax gives NaN). masked_scores' -inf on blocked keys is the mask itself
// and not counted.
struct NonFiniteStage {
  StageId stage;
  std::int64_t nan = 0, inf = 0;  // counts
  std::int64_t first = -1;        // flat index of the first one
};
std::vector<NonFiniteStage> nonFiniteStages(const Trace& trace);

}  // namespace mhascope
