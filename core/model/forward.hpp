// The forward pass of a model folder over token ids (B = 1), layer by layer, with every layer's
// attention computed by mhascope's own engine (core/attention/engine.hpp) on that layer's weights:
//
//   x = embed(tokens) (+ GPT-2's learned positions)
//   per layer:  a = norm1(x);  x += attention(a)      (causal; RoPE, N K/V heads, window: Llama family)
//               m = norm2(x);  x += mlp(m)            (GPT-2: gelu_new; Llama: SwiGLU; Mixtral: a mixture of
//                                                      the k experts the router picks for each token)
//   logits = norm_f(x) · E^T
//
// Norms: GPT-2's LayerNorm (biased variance), Llama's RMSNorm x / sqrt(mean(x^2) + eps) · w,
// both in float32 as Hugging Face computes them for float32 weights.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/trace.hpp"
#include "model/model_folder.hpp"
#include "model/residual_cache.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// The message of the error a forward returns when its progress callback asked it to stop.
inline constexpr const char* kForwardCancelled = "cancelled";

// The named sites of a forward a hook reads or replaces (ForwardOptions::hook), in the order the forward meets
// them in layer `layer`, and the table the hook is given there (row-major floats, the forward's own numbers):
//   ResidPre  (T, d_model)   the residual stream before the layer
//   Query     (h·T, d_k)     the queries the scores read (after the q/k norm and RoPE where the layer has them),
//                            head i's rows i·T … (i+1)·T − 1
//   Key       (N·T, d_k)     the keys likewise, K/V head j's rows j·T …; Value (N·T, d_k) the values
//   Pattern   (h·T, T)       the attention weights before the weighted sum, head i's rows i·T …
//   HeadOut   (T, h·d_k)     each head's A V before W_o (values with their bias), head i in columns i·d_k …
//   AttnOut   (T, d_model)   the attention's output (with b_o; a block that norms its sublayers' outputs: before
//                            that norm)
//   MlpOut    (T, d_model)   the MLP's output likewise (a mixture: the weighted sum of its experts)
enum class HookPoint { ResidPre, Query, Key, Value, Pattern, HeadOut, AttnOut, MlpOut };
struct HookSite {
  HookPoint point = HookPoint::ResidPre;
  int layer = 0;
};
// What the hook leaves in `values` is what the forward goes on with; reading only, it leaves them.
using ForwardHook = std::function<void(const HookSite& site, MatrixMap values)>;

// One layer's heads as the engine computed them, for ForwardOptions::onAttention.
struct LayerHeads {
  int layer = 0;
  const Tensor* weights = nullptr;  // (1, h, T, T) attention weights, rows sum to 1
  // (1, T, h·d_v) the heads' A V before the output projection (values with their bias), head i in
  // columns i·d_v … (i+1)·d_v − 1 (d_v = d_k but on a latent layer); head i's term of the attention output is that
  // slice · W_o's rows i·d_v … (i+1)·d_v − 1.
  const Tensor* headOutputs = nullptr;
  const MhaWeights* attention = nullptr;  // the layer's W_q … W_o and biases, y = x W + b (null on a latent layer)
  const LatentWeights* latent = nullptr;  // a latent-attention layer's projections (its W_o: head i's rows i·d_v …)
  // The layer's pass as the engine recorded it: every stage with ForwardOptions::recordScores, else the weights,
  // the concat, the output and the variants' small stages (the learned sink's share) only.
  const Trace* trace = nullptr;
  const AttentionOptions* options = nullptr;  // the options the layer ran with (layerOptions: its q/k norm's gains)
};

struct ForwardOptions {
  int traceLayer = -1;          // this layer's attention is recorded with every stage (-1: none)
  bool keepAttention = true;    // ForwardResult::attention for every layer
  bool keepHidden = true;       // ForwardResult::hidden for every layer
  std::vector<std::string> tokenLabels;  // (T) labels for the trace; empty: the ids
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
  int threads = 1;
  // Called after each layer with the layers done (1 .. L); returning false stops the forward, which then
  // returns an error whose message is kForwardCancelled.
  std::function<bool(int layersDone)> progress;
  // Called once per layer, before the layer's MLP, with what that layer's attention computed (LayerHeads, valid
  // during the call only). Lets a caller summarise every head without keeping L·h·T² floats (keepAttention may
  // then be false).
  std::function<void(const LayerHeads& layer)> onAttention;
  // Every layer's attention recorded with every stage (its scores, before and after a softcap), for onAttention's
  // LayerHeads::trace: one full trace at a time, the one the estimate already counts for the layers not traced.
  bool recordScores = false;
  // Set: the residual streams of earlier forwards of these weights over these tokens are used and
  // this forward's are kept (residual_cache.hpp): the layers whose attention nothing here needs
  // are skipped, and a layer whose next stream is kept runs its attention only.
  std::shared_ptr<ResidualCache> residuals;
  // Called at every site of every layer (HookPoint) when set; a forward with a hook neither uses nor keeps
  // `residuals` (its streams are no longer the model's own). Empty: the forward is the same code as without it.
  ForwardHook hook;
};

// One mixture layer's routing (ModelSpec::moe): which k experts each token's MLP input went to, and with what weight.
struct LayerRouting {
  int k = 0;                   // experts per token (0: a dense layer, or one whose MLP this forward did not run)
  std::vector<int> experts;    // (T, k) each token's experts, in descending weight
  std::vector<float> weights;  // (T, k) what each expert's output is multiplied by
  int expert(std::int64_t t, int j) const { return experts[static_cast<std::size_t>(t * k + j)]; }
  float weight(std::int64_t t, int j) const { return weights[static_cast<std::size_t>(t * k + j)]; }
};

// The router's rule (ModelSpec::moe.rule) on logits z (T, E): each row's k experts and weights. `choiceBias` (E), when
// given, is added to the scores for the choice only (DeepSeek-V3's e_score_correction_bias).
LayerRouting routeTokens(const RouterRule& rule, const RowMatrix& logits, int k, const RowVector* choiceBias = nullptr);

struct ForwardResult {
  std::vector<Tensor> attention;  // L × (h, T, T) attention weights (rows sum to 1)
  std::vector<Tensor> hidden;     // L × (T, d_model) residual stream after the layer (before the final norm)
  Trace trace;                    // every stage of layer traceLayer's attention on its normed input
  int traceLayer = -1;
  Tensor logits;                  // (T, V)
  // L entries for a mixture-of-experts model (empty otherwise): each layer's routing, kept whatever the options
  // (L · T · k pairs); a dense layer's, or one a kept residual stream stood in for without its router, has k 0.
  std::vector<LayerRouting> routing;
  // Empty when every number of the forward was finite; else where float32 first overflowed (finite
  // weights can still overflow), e.g. "layer 2's attention output: 12 of 4 096 values are NaN or
  // ±Inf": every command and view that shows the result says it.
  std::string nonFinite;
  // A latent-attention model (ModelSpec::latent): the largest difference between the absorbed and the expanded form
  // over every layer run, in the weights and in the attention's output (float32 rounding only).
  double absorbedWeightDiff = 0, absorbedOutputDiff = 0;
};

// Bytes a forward with these options holds at once: the kept tables, one layer's weights in
// float, the working matrices and one recorded trace.
double estimateForwardBytes(const ModelSpec& spec, std::int64_t T, const ForwardOptions& opt);

// The attention options the family decides for layer `layer` (-1: what every layer shares): h and N K/V heads,
// the causal mask, RoPE for a RoPE family's layer with positions (its base — rope_theta or the layer's own —,
// its pairing — Hugging Face's rotate_half — and Llama 3.1's scaled frequencies as ropeInvFreq when
// rope_scaling asks for them) and the layer's window (ModelSpec::layerKind). The memory budget and threads are
// the caller's.
AttentionOptions attentionOptionsFor(const ModelSpec& spec, int layer = -1);
// Layer `layer`'s options with what its weights add: attentionOptionsFor(spec, layer) and the q/k norm's gains
// (with the family's eps) when the layer has them.
AttentionOptions layerOptions(const ModelSpec& spec, const LayerWeights& lw, int layer);
// A latent-attention model's layer sizes (ModelSpec::latent) for core/attention/latent: the heads, ranks and widths,
// RoPE over the d_r rotary features (its pairing, YaRN's frequencies and attention factor when set), the scale.
LatentSizes latentSizesOf(const ModelSpec& spec);

// Token ids must lie in [0, V); a family with learned positions (GPT-2) takes at most as many tokens as its
// table has rows (n_positions).
// An estimate above opt.memoryBudgetBytes is refused with the estimate before anything is allocated.
Result<ForwardResult> runForward(const ModelFolder& model, const std::vector<int>& tokens, const ForwardOptions& opt = {});

// logits (T, V) of a residual stream x (T, d_model): the final norm, then the unembedding — the
// model's own last step. On an earlier layer's stream (ForwardResult::hidden) it is the logit
// lens: what the model would predict if it stopped after that layer.
Status finalLogits(const ModelFolder& model, const RowMatrix& x, RowMatrix& logits);

// The pieces, exposed for tests and the logit lens.
// LayerNorm over each row: (x - mean) / sqrt(var + eps) · w + b, var the biased variance.
void layerNorm(const RowMatrix& x, const RowVector& w, const RowVector& b, double eps, RowMatrix& out);
// RMSNorm over each row: x / sqrt(mean(x^2) + eps) · w.
void rmsNorm(const RowMatrix& x, const RowVector& w, double eps, RowMatrix& out);
// GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
float geluTanh(float x);

}  // namespace mhascope::model
