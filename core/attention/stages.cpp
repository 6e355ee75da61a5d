// The pipeline's stages: their names, formulas, explanations and pseudocode (written for
// mhascope), and 2-D slicing of a recorded stage for heatmaps and exports.
#include <cmath>
#include <iterator>

#include "attention/trace.hpp"
#include "util/format.hpp"

namespace mhascope {
namespace {

// The pseudocode is the same listing for every stage; each stage lights its own line ('>').
// Every line that makes a stage's tensor starts with that tensor's name (a test checks it).
constexpr const char* kPseudo[] = {
    "Q = X_q @ W_q + b_q            # (B, T_q, h*d_k)",
    "K = X_k @ W_k + b_k            # (B, T_k, N*d_k)",
    "V = X_v @ W_v + b_v            # (B, T_k, N*d_k)",
    "Q = Q.view(B, T_q, h, d_k).transpose(1, 2)  # (B, h, T_q, d_k)",
    "K = K.view(B, T_k, N, d_k).transpose(1, 2)  # (B, N, T_k, d_k)",
    "V = V.view(B, T_k, N, d_k).transpose(1, 2)  # (B, N, T_k, d_k)",
    "Q = q_norm(Q)                  # RMS over d_k (or h·d_k), · g_q",
    "K = k_norm(K)                  # RMS over d_k (or N·d_k), · g_k",
    "Q = rope(Q, positions)         # (B, h, T_q, d_k)",
    "K = rope(K, positions)         # (B, N, T_k, d_k)",
    "K = K.repeat_interleave(h // N, dim=1)  # V too",
    "S = Q @ K.transpose(-2, -1)    # (B, h, T_q, T_k)",
    "S = S / sqrt(d_k)",
    "S = c * tanh(S / c)            # softcap, |S| < c",
    "S = S + alibi_bias             # -m_i * (t - j)",
    "blocked = blocked | window     # |t - j| >= W, not a sink",
    "S = S.masked_fill(blocked, -inf)",
    "A = softmax(S, dim=-1)         # rows sum to 1",
    "sink = 1 - A.sum(-1)           # A = softmax([S | s_i])[..., :-1]",
    "O = A @ V                      # (B, h, T_q, d_k)",
    "O = O.transpose(1, 2).reshape(B, T_q, h * d_k)  # copies",
    "Y = O @ W_o + b_o              # (B, T_q, d_model)",
};

// Symbols: h is the NUMBER of heads, i a head's index (0 .. h-1); head i owns columns
// i*d_k .. (i+1)*d_k - 1 of Q, K and V — and no columns of the inputs or of the output.
const std::array<StageInfo, kStageCount> kStages = {{
    {StageId::Query, "query", "Input (query side)", "X_q", "inputs", "X_q",
     "The vectors the queries come from: one row of d_model numbers per token (here a per-word "
     "embedding plus, optionally, a sinusoidal position code). No head owns these columns: every "
     "head sees all of them through W_q, W_k and W_v. In self-attention the same rows also supply "
     "the keys and values.",
     "", DataKind::Signed},
    {StageId::Key, "key", "Input (key side)", "X_k", "inputs", "X_k",
     "The vectors the keys are made from. In self-attention this is the very same tensor as the "
     "query input; in cross-attention it is another sequence, so T_k may differ from T_q. No head "
     "owns these columns: every head reads all of them through W_k.",
     "", DataKind::Signed},
    {StageId::Value, "value", "Input (value side)", "X_v", "inputs", "X_v",
     "The vectors the values are made from: what each token will hand over once it is attended "
     "to. Usually the same tensor as the key input. No head owns these columns: every head reads "
     "all of them through W_v.",
     "", DataKind::Signed},
    {StageId::QProj, "q_proj", "Query projection", "Q", "project", "Q = X_q W_q + b_q",
     "A learned linear map turns each token into a query: what this token is looking for. Every "
     "output feature mixes all d_model input features; only afterwards are the columns shared out "
     "among the heads. (Here W_q is (d_model in, h·d_k out) and Q = X_q @ W_q; PyTorch stores "
     "the transpose, in_proj_weight with rows = outputs. h·d_k is d_model when d_k = d_model / h, the usual "
     "choice; some models make the heads wider, e.g. Qwen3-0.6B: d_model 1024, 16 heads of 128.)",
     "Q = X_q @ W_q + b_q", DataKind::Signed},
    {StageId::KProj, "k_proj", "Key projection", "K", "project", "K = X_k W_k + b_k",
     "A second learned map makes keys: what each token offers to be found by. A query and a key "
     "that point the same way will give a large score. With grouped-query attention W_k is "
     "(d_model, N·d_k): only the N key heads' columns are made.",
     "K = X_k @ W_k + b_k", DataKind::Signed},
    {StageId::VProj, "v_proj", "Value projection", "V", "project", "V = X_v W_v + b_v",
     "A third learned map makes values: the content a token passes on when attended to. Keys "
     "decide who is listened to, values decide what is heard. With grouped-query attention W_v is "
     "(d_model, N·d_k), like W_k.",
     "V = X_v @ W_v + b_v", DataKind::Signed},
    {StageId::QHeads, "q_heads", "Split heads (Q)", "Q_i", "split heads", "Q_i = Q[:, :, i*d_k:(i+1)*d_k]",
     "The h·d_k columns of Q are cut into h blocks of d_k (usually d_k = d_model / h, so the blocks fill "
     "d_model); head i (0-based) gets columns i*d_k .. (i+1)*d_k - 1. Q is viewed as (B, T_q, h, d_k), then transposed to "
     "(B, h, T_q, d_k) so each head is a separate batch of small matrices. No number changes and nothing is copied: "
     "both are views of the same memory. Skipping the transpose (view straight to (B, h, T_q, d_k)) "
     "would fill each head with whole rows of a few tokens, so a head's row t holds other tokens' "
     "numbers.",
     "Q = Q.view(B, T_q, h, d_k).transpose(1, 2)", DataKind::Signed},
    {StageId::KHeads, "k_heads", "Split heads (K)", "K_i", "split heads", "K_i = K[:, :, i*d_k:(i+1)*d_k]",
     "Keys are split the same way, so head i compares its own d_k query features only with its own "
     "d_k key features: S = Q @ K.transpose(-2, -1) multiplies these split tensors. With grouped-query "
     "attention there are only N key heads (N divides h), so K is (B, N, T_k, d_k), and query head i "
     "uses key head i // (h/N).",
     "K = K.view(B, T_k, N, d_k).transpose(1, 2)", DataKind::Signed},
    {StageId::VHeads, "v_heads", "Split heads (V)", "V_i", "split heads", "V_i = V[:, :, i*d_k:(i+1)*d_k]",
     "Values are split too: each head gathers a d_v-wide slice of content, and the slices are put "
     "back side by side at the end. Here d_v = d_k (d_model / h unless set), as in the paper and in PyTorch; "
     "d_v may differ from d_k in general, since only Q and K must share a width for their dot "
     "product. With grouped-query attention V, like K, has N heads.",
     "V = V.view(B, T_k, N, d_k).transpose(1, 2)", DataKind::Signed},
    {StageId::QNormed, "q_normed", "Normalise (Q)", "norm Q", "q/k norm", "Q_i = g_q · Q_i / sqrt(mean(Q_i²) + eps)",
     "q/k norm: before positions are added, every query is divided by its root mean square and multiplied by a "
     "learned gain g_q. Per head (Qwen3, Gemma 3) the mean is over the head's own d_k features, so each head's "
     "query keeps its direction and forgets its length; over the whole projection (OLMo 2) it is over all h·d_k "
     "features of the token before the split, so one head's length still counts against the others'. Either way "
     "the scores can no longer grow without bound as the weights do, which keeps the softmax away from one-hot "
     "(attention entropy collapse) and lets larger learning rates train.",
     "Q = q_norm(Q)", DataKind::Signed},
    {StageId::KNormed, "k_normed", "Normalise (K)", "norm K", "q/k norm", "K_i = g_k · K_i / sqrt(mean(K_i²) + eps)",
     "The keys get the same norm with their own gain g_k (per K/V head, or over all N·d_k features together). "
     "With both normed a score q · k is at most max|g_q| · max|g_k| · d_k: the length of a query or a key no longer "
     "decides how peaked a row is; the gains and the scale do. The values are not normed.",
     "K = k_norm(K)", DataKind::Signed},
    {StageId::QRotated, "q_rotated", "Rotate (Q)", "rot Q", "rotate", "Q_i = rope(Q_i, t)",
     "RoPE writes positions into the queries and keys instead of the inputs: each pair of a head's "
     "features is turned by the angle t * inv_freq_k, inv_freq_k = base^(-2k/d_k), at the token's "
     "position t. A query at t and a key at j then meet at the angle (t - j) * inv_freq_k, so "
     "position enters the score only through the offset t - j, not where the pair sits in the text. The pairs are "
     "(k, k + d_k/2) in Hugging Face Llama's rotate_half (the default here) or neighbours (2k, 2k + 1) "
     "in the original Llama code (rope style interleaved); the two give the same scores once the "
     "features are permuted, but weights made for one do not fit the other.",
     "Q = rope(Q, positions)", DataKind::Signed},
    {StageId::KRotated, "k_rotated", "Rotate (K)", "rot K", "rotate", "K_i = rope(K_i, j)",
     "The keys are turned the same way at their own positions j. Only q and k are rotated, never the "
     "values: the position decides who is listened to, not what is heard. These rotated keys are "
     "what a KV cache keeps.",
     "K = rope(K, positions)", DataKind::Signed},
    {StageId::KvGroups, "kv_groups", "Group K/V heads", "K/V", "group", "K_i = K_g,  V_i = V_g,  g = i // (h/N)",
     "Grouped-query attention: h query heads share N key/value heads, h/N query heads per group. "
     "Query head i reads K/V head g = i // (h/N): the table has a 1 there. N = h is multi-head "
     "attention, N = 1 multi-query. Fewer K/V heads shrink the KV cache by h/N (2 * N * d_k numbers "
     "per token and layer) while every query head keeps its own queries. Nothing is copied here: "
     "PyTorch code often repeats K and V h/N times (repeat_interleave), which gives the same numbers.",
     "K = K.repeat_interleave(h // N, dim=1)", DataKind::Probability},
    {StageId::Scores, "scores", "Scores", "QKᵀ", "scores", "S_i = Q_i K_i^T",
     "Every query is compared with every key by a dot product, separately in each head: a "
     "T_q x T_k table per head. Large positive means 'this key matches what I am looking for'. "
     "Each table is a product of (T_q, d_k) and (d_k, T_k), so its rank is at most d_k.",
     "S = Q @ K.transpose(-2, -1)", DataKind::Signed},
    {StageId::ScaledScores, "scaled_scores", "Scale", "÷√d_k", "scale", "S'_i = S_i / sqrt(d_k)",
     "For q and k with independent zero-mean, unit-variance entries, q . k has mean 0 and variance "
     "d_k, so its standard deviation grows like sqrt(d_k). Dividing by sqrt(d_k) brings it back to "
     "about 1 whatever the head size. Unscaled, large d_k pushes the softmax towards one-hot and "
     "its gradients get small, which slows learning and, deep in saturation, can all but stall it "
     "(at d_k = 64, as in the paper preset, unscaled logits are 8x larger; at d_k = 4 only 2x).",
     "S = S / sqrt(d_k)", DataKind::Signed},
    {StageId::SoftCapped, "softcapped", "Softcap", "cap", "softcap", "S'_i = c tanh(S'_i / c)",
     "A softcap bends the scaled scores smoothly into (-c, c): near 0 tanh is the identity, so small scores pass "
     "unchanged, while a score far beyond c is held just under it. No row can then become one-hot by one huge "
     "score, whatever the weights learn: Gemma 2 caps its scores at c = attn_logit_softcapping (50) after the "
     "scale and before the mask (and its logits the same way, at final_logit_softcapping). tanh is increasing, so "
     "the scores keep their order, but the gaps between large ones shrink: the softmax sees the bent scores.",
     "S = c * tanh(S / c)", DataKind::Signed},
    {StageId::PositionBias, "position_bias", "ALiBi bias", "+bias", "bias", "S'_i = S'_i + B_i,  B_i[t, j] = -m_i (t - j)",
     "ALiBi gives no position to the inputs at all: each head subtracts a penalty growing with the "
     "distance, m_i * (t - j) under a causal mask (m_i * |t - j| without one), from its scaled scores. "
     "The slopes are fixed, not learned: head i (0-based) gets m_i = 2^(-8(i+1)/h) when h is a power of "
     "two (otherwise the slopes of the closest power of two below, then every other slope of twice that), so "
     "some heads look far and some only at their neighbours. The same bias for every batch item.",
     "S = S + alibi_bias", DataKind::Signed},
    {StageId::WindowMask, "window_mask", "Sliding window", "window", "mask", "blocked = blocked | (|t - j| >= W and j is not a sink)",
     "A sliding window of W keys: query t sees keys t - W < j <= t (|t - j| < W without a causal "
     "mask). A kernel that skips blocked blocks then does T * W work instead of T^2; this engine "
     "computes all T^2 scores and masks them, to show them. Attention sinks keep the first S keys "
     "visible (keys 0 .. S-1) whatever the distance (the causal rule still applies): trained models park surplus "
     "attention on the first tokens, and dropping them from the window is what breaks streaming "
     "generation. The table is 1 where the window alone hides a key; the mask adds it to the others.",
     "blocked = blocked | window", DataKind::Probability},
    {StageId::MaskedScores, "masked_scores", "Mask", "mask", "mask", "S''_i = S'_i + M,  M = -inf where blocked",
     "Blocked pairs (future tokens under a causal mask, padding keys, or a custom mask) get -inf, "
     "so the softmax gives them exactly zero weight. (The convention depends on the API: in "
     "nn.MultiheadAttention a bool mask's True means blocked; in F.scaled_dot_product_attention "
     "True means may attend; Hugging Face attention masks use 1 = keep. Code that writes "
     "masked_fill(mask == 0, ...) often uses -1e9 or the dtype minimum instead of -inf.) "
     "A row with every key blocked has nothing to attend to: mhascope flags it and gives it "
     "weights 0, so its head output row is 0 and its final output row is just b_o (PyTorch 1.13's "
     "nn.MultiheadAttention gives NaN there). Padding blocks keys, not queries: a padded query "
     "row still gets an output, which is meaningless and ignored downstream.",
     "S = S.masked_fill(blocked, -inf)", DataKind::Signed},
    {StageId::Weights, "weights", "Softmax", "softmax", "softmax", "A_i = softmax(S''_i) over T_k",
     "Each row becomes a probability distribution over the keys: exponentiate, divide by the row "
     "sum. The row maximum is subtracted first only for numerical stability; it does not change "
     "the result. With a learned sink (gpt-oss) the row shares its mass with one more column and sums to less than "
     "1: the sink's share is the next stage.",
     "A = softmax(S, dim=-1)", DataKind::Probability},
    {StageId::SinkShare, "sink_share", "Learned sink", "sink", "softmax", "sink_i[t] = e^(s_i) / (e^(s_i) + Σ_j e^(S''_i[t, j]))",
     "A learned attention sink (gpt-oss): each head i has one learned logit s_i that joins every row's softmax as "
     "one more column, A = softmax([S'' | s_i]) with the last column dropped. A row can then give its keys less "
     "than all of its attention: its weights sum to 1 - sink_i[t], and this (B, h, T_q, 1) table is that missing "
     "share. A head with nothing worth reading parks its mass on the sink instead of on a real token; trained "
     "models without one learn to park it on the first token (the emergent sink StreamingLLM keeps in its "
     "window). A row whose keys are all blocked puts everything on the sink: weights 0, share 1. The sink has no "
     "value: the parked share adds nothing to the head's output.",
     "sink = 1 - A.sum(-1)", DataKind::Probability},
    {StageId::HeadOutputs, "head_outputs", "Weighted values", "A·V", "weighted sum", "O_i = A_i V_i",
     "Each query's output in a head is the weighted average of that head's value vectors. This is "
     "the only step that mixes information across tokens.",
     "O = A @ V", DataKind::Signed},
    {StageId::Concat, "concat", "Merge heads", "concat", "merge heads", "O = [O_0 | O_1 | ... | O_(h-1)]",
     "The heads' d_k-wide outputs are put back side by side into h·d_k columns (d_model when d_k = "
     "d_model / h), head i in columns i*d_k .. (i+1)*d_k - 1. After transpose(1, 2) the memory is no longer in (B, T_q, h·d_k) "
     "order, so this step copies: .contiguous().view(...) or .reshape(...), while the split was a "
     "free view. Concatenating, not summing, keeps what each head found separate.",
     "O = O.transpose(1, 2).reshape(B, T_q, h * d_k)", DataKind::Signed},
    {StageId::Output, "output", "Output projection", "·W_o", "output", "Y = O W_o + b_o",
     "A last learned map W_o writes the heads back into d_model features. Rows i*d_k .. "
     "(i+1)*d_k - 1 of W_o (W_o^(i)) read only head i, so O W_o + b_o = sum over i of "
     "O_i W_o^(i) + b_o: each head adds its own term, and heads never interact inside a layer "
     "(they meet only in later layers, through the residual stream). Without W_o head i could "
     "only write into its own d_k columns; with it every head can write into every feature. "
     "No head owns these columns any more. "
     "The result has the input's shape (B, T_q, d_model), which is why attention layers stack.",
     "Y = O @ W_o + b_o", DataKind::Signed},
}};

}  // namespace

const StageInfo& stageInfo(StageId id) { return kStages[static_cast<std::size_t>(id)]; }

std::string scaleChip(ScaleKind kind, float factor) {
  switch (kind) {
    case ScaleKind::SqrtDk: return "÷√d_k";
    case ScaleKind::SqrtDModel: return "÷√d_model";
    case ScaleKind::None: return "×1";
    case ScaleKind::Given: return "×" + formatGeneral(factor, 3);
  }
  return "?";
}

std::string scaleFormula(ScaleKind kind, float factor) {
  switch (kind) {
    case ScaleKind::SqrtDk: return "S'_i = S_i / sqrt(d_k)";
    case ScaleKind::SqrtDModel: return "S'_i = S_i / sqrt(d_model)";
    case ScaleKind::None: return "S'_i = S_i (not scaled)";
    case ScaleKind::Given: return "S'_i = S_i · " + formatGeneral(factor, 6) + " (the model's own scale)";
  }
  return "?";
}

std::string stageChip(const Trace& t, StageId id) {
  return id == StageId::ScaledScores ? scaleChip(t.scale, t.scaleFactor) : stageInfo(id).shortName;
}

std::string stageFormula(const Trace& t, StageId id) {
  return id == StageId::ScaledScores ? scaleFormula(t.scale, t.scaleFactor) : stageInfo(id).formula;
}

bool stageIsVariant(StageId id) {
  return id == StageId::QNormed || id == StageId::KNormed || id == StageId::QRotated || id == StageId::KRotated ||
         id == StageId::KvGroups || id == StageId::SoftCapped || id == StageId::PositionBias || id == StageId::WindowMask ||
         id == StageId::SinkShare;
}

bool stageRecorded(const Trace& trace, StageId id) {
  if (!stageIsVariant(id)) return true;
  return trace.stages.size() == static_cast<std::size_t>(kStageCount) && trace.shapeOf(id).size() >= 3;
}

const char* ropeStyleName(RopeStyle s) { return s == RopeStyle::Interleaved ? "interleaved" : "half"; }
const std::array<StageInfo, kStageCount>& allStages() { return kStages; }

std::optional<StageId> stageFromName(std::string_view name) {
  for (const auto& s : kStages) {
    if (name == s.name) return s.id;
  }
  return std::nullopt;
}

std::string stageNamesList() {
  std::string out;
  for (const auto& s : kStages) {
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

const char* scaleName(ScaleKind s) {
  switch (s) {
    case ScaleKind::SqrtDk: return "sqrt-dk";
    case ScaleKind::SqrtDModel: return "sqrt-dmodel";
    case ScaleKind::None: return "none";
    case ScaleKind::Given: return "given";
  }
  return "?";
}

const std::vector<std::string>& pseudocodeListing() {
  static const std::vector<std::string> lines(std::begin(kPseudo), std::end(kPseudo));
  return lines;
}

int pseudocodeLineOf(StageId id) {
  const std::string_view own = stageInfo(id).pseudocode;
  if (own.empty()) return -1;
  const auto& lines = pseudocodeListing();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (std::string_view(lines[i]).substr(0, own.size()) == own) return static_cast<int>(i);
  }
  return -1;
}

bool stageHasHeads(StageId id) {
  switch (id) {
    case StageId::QHeads:
    case StageId::KHeads:
    case StageId::VHeads:
    case StageId::QRotated:
    case StageId::KRotated:
    case StageId::Scores:
    case StageId::ScaledScores:
    case StageId::PositionBias:
    case StageId::MaskedScores:
    case StageId::Weights:
    case StageId::SinkShare:
    case StageId::HeadOutputs: return true;
    default: return false;
  }
}

namespace {

std::vector<std::string> indexLabels(int n) {
  std::vector<std::string> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::to_string(i);
  return v;
}

}  // namespace

Result<Slice2D> sliceStage(const Trace& trace, StageId stage, int batchIndex, int head) {
  if (trace.stages.size() != static_cast<std::size_t>(kStageCount)) return makeError("the trace is empty");
  const Tensor& t = trace.stages[static_cast<std::size_t>(stage)].tensor;  // shape and axes; data unless lazy
  const char* name = stageInfo(stage).name;
  if (batchIndex < 0 || batchIndex >= trace.batch) {
    return makeError("batch index " + std::to_string(batchIndex) + " is out of range: " + name + " has B = " +
                     std::to_string(trace.batch) + " (valid 0.." + std::to_string(trace.batch - 1) + ")");
  }
  if (t.rank() < 3) {
    return makeError(std::string(name) + " is not recorded in this configuration (it belongs to a variant that is "
                     "not in use: the q/k norm, RoPE, grouped K/V heads, a softcap, ALiBi, a sliding window or a learned sink)");
  }
  Slice2D s;
  s.stage = stage;
  s.batchIndex = batchIndex;
  s.layer = trace.layer;
  std::size_t offset = 0;
  // A stage with B = 1 (the K/V group map, the ALiBi bias, the window mask) is the same for
  // every batch item.
  const std::size_t item = t.dim(0) == 1 ? 0 : static_cast<std::size_t>(batchIndex);
  if (stageHasHeads(stage)) {
    const std::int64_t heads = t.dim(1);  // h, or N for the K/V heads
    if (head < 0 || head >= heads) {
      return makeError("head " + std::to_string(head) + " is out of range: " + name + " has " + t.axes[1] + " = " +
                       std::to_string(heads) + " heads (valid 0.." + std::to_string(heads - 1) + ")");
    }
    s.head = head;
    s.rows = static_cast<int>(t.dim(2));
    s.cols = static_cast<int>(t.dim(3));
    s.rowAxis = t.axes[2];
    s.colAxis = t.axes[3];
    offset = (item * static_cast<std::size_t>(t.dim(1)) + static_cast<std::size_t>(head)) * s.rows * s.cols;
  } else {
    s.head = -1;
    s.rows = static_cast<int>(t.dim(1));
    s.cols = static_cast<int>(t.dim(2));
    s.rowAxis = t.axes[1];
    s.colAxis = t.axes[2];
    offset = item * s.rows * s.cols;
  }
  if (trace.isLazy(stage)) {
    // Only this (batch item, head) slice is made from the scores, into the slice's own buffer.
    auto own = std::make_shared<std::vector<float>>(static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols));
    trace.readCells(stage, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(own->size()), own->data());
    s.data = own->data();
    s.owned = std::move(own);
  } else {
    s.data = t.ptr() + offset;
  }
  s.rowKind = axisKind(s.rowAxis);
  s.colKind = axisKind(s.colAxis);
  const auto b = static_cast<std::size_t>(batchIndex);
  auto labelsFor = [&](AxisKind axis, int n) {
    if (axis == AxisKind::QueryTokens) return trace.queryTokens.at(b);
    if (axis == AxisKind::KeyTokens) return trace.keyTokens.at(b);
    return indexLabels(n);
  };
  s.rowLabels = labelsFor(s.rowKind, s.rows);
  s.colLabels = labelsFor(s.colKind, s.cols);
  if (s.rowKind == AxisKind::QueryTokens && !trace.fullyMasked.empty()) {
    const auto* first = trace.fullyMasked.data() + b * static_cast<std::size_t>(trace.tq);
    s.flaggedRows.assign(first, first + trace.tq);
  }
  markBlockedCells(trace, s);
  // A lazy stage's slice owns its numbers and stays valid after the trace changes: its mask flags
  // too (the masked scores'; the weights are stored, and their slice points into the trace).
  if (s.owned && s.blockedCells) {
    s.setBlockedCells(std::vector<std::uint8_t>(s.blockedCells, s.blockedCells + static_cast<std::size_t>(s.rows) * s.cols));
  }
  return s;
}

RowMatrix averagedWeights(const Trace& trace, int batchIndex) {
  RowMatrix mean = RowMatrix::Zero(trace.tq, trace.tk);  // (T_q, T_k)
  const Tensor& w = trace.tensor(StageId::Weights);
  for (int h = 0; h < trace.heads; ++h) {
    const std::size_t off = (static_cast<std::size_t>(batchIndex) * trace.heads + h) * trace.tq * trace.tk;
    mean.noalias() += ConstMatrixMap(w.ptr() + off, trace.tq, trace.tk);
  }
  return mean / static_cast<float>(trace.heads);
}

}  // namespace mhascope
