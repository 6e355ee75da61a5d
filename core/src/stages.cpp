// The pipeline's stages: their names, formulas, explanations and pseudocode (written for
// mhascope), and 2-D slicing of a recorded stage for heatmaps and exports.
#include <cmath>
#include <iterator>

#include "mhascope/trace.hpp"

namespace mhascope {
namespace {

// The pseudocode is the same listing for every stage; each stage lights its own line ('>').
constexpr const char* kPseudo[] = {
    "Q = X_q @ W_q + b_q            # (B, T_q, d_model)",
    "K = X_kv @ W_k + b_k           # (B, T_k, d_model)",
    "V = X_kv @ W_v + b_v           # (B, T_k, d_model)",
    "Q = Q.view(B, T_q, h, d_k).transpose(1, 2)  # (B, h, T_q, d_k)",
    "S = Q @ K.transpose(-2, -1)    # (B, h, T_q, T_k)",
    "S = S / sqrt(d_k)",
    "S = S.masked_fill(blocked, -inf)",
    "A = softmax(S, dim=-1)         # rows sum to 1",
    "O = A @ V                      # (B, h, T_q, d_k)",
    "O = O.transpose(1, 2).reshape(B, T_q, d_model)",
    "Y = O @ W_o + b_o              # (B, T_q, d_model)",
};

const std::array<StageInfo, kStageCount> kStages = {{
    {StageId::Query, "query", "Input (query side)", "X_q",
     "The vectors the queries come from: one row of d_model numbers per token (here a per-word "
     "embedding plus, optionally, a sinusoidal position code). In self-attention the same rows "
     "also supply the keys and values.",
     "", DataKind::Signed},
    {StageId::Key, "key", "Input (key side)", "X_k",
     "The vectors the keys are made from. In self-attention this is the very same tensor as the "
     "query input; in cross-attention it is another sequence, so T_k may differ from T_q.",
     "", DataKind::Signed},
    {StageId::Value, "value", "Input (value side)", "X_v",
     "The vectors the values are made from: what each token will hand over once it is attended "
     "to. Usually the same tensor as the key input.",
     "", DataKind::Signed},
    {StageId::QProj, "q_proj", "Query projection", "Q = X_q W_q + b_q",
     "A learned linear map turns each token into a query: what this token is looking for. Every "
     "output feature mixes all d_model input features; only afterwards are the columns shared out "
     "among the heads.",
     "Q = X_q @ W_q + b_q", DataKind::Signed},
    {StageId::KProj, "k_proj", "Key projection", "K = X_k W_k + b_k",
     "A second learned map makes keys: what each token offers to be found by. A query and a key "
     "that point the same way will give a large score.",
     "K = X_kv @ W_k + b_k", DataKind::Signed},
    {StageId::VProj, "v_proj", "Value projection", "V = X_v W_v + b_v",
     "A third learned map makes values: the content a token passes on when attended to. Keys "
     "decide who is listened to, values decide what is heard.",
     "V = X_kv @ W_v + b_v", DataKind::Signed},
    {StageId::QHeads, "q_heads", "Split heads (Q)", "Q_h = Q[:, :, h*d_k:(h+1)*d_k]",
     "The d_model columns of Q are cut into h blocks of d_k = d_model / h: view as (B, T_q, h, d_k), "
     "then transpose to (B, h, T_q, d_k) so each head is a separate batch of small matrices. No "
     "number changes, only how they are grouped; skipping the transpose would mix tokens and "
     "heads.",
     "Q = Q.view(B, T_q, h, d_k).transpose(1, 2)", DataKind::Signed},
    {StageId::KHeads, "k_heads", "Split heads (K)", "K_h = K[:, :, h*d_k:(h+1)*d_k]",
     "Keys are split the same way, so head h compares its own d_k query features only with its own "
     "d_k key features.",
     "Q = Q.view(B, T_q, h, d_k).transpose(1, 2)", DataKind::Signed},
    {StageId::VHeads, "v_heads", "Split heads (V)", "V_h = V[:, :, h*d_k:(h+1)*d_k]",
     "Values are split too: each head gathers a d_k-wide slice of content, and the slices are put "
     "back side by side at the end.",
     "Q = Q.view(B, T_q, h, d_k).transpose(1, 2)", DataKind::Signed},
    {StageId::Scores, "scores", "Scores", "S_h = Q_h K_h^T",
     "Every query is compared with every key by a dot product, separately in each head: a "
     "T_q x T_k table per head. Large positive means 'this key matches what I am looking for'.",
     "S = Q @ K.transpose(-2, -1)", DataKind::Signed},
    {StageId::ScaledScores, "scaled_scores", "Scale", "S'_h = S_h / sqrt(d_k)",
     "A dot product of d_k random-ish terms grows like sqrt(d_k); dividing by sqrt(d_k) keeps the "
     "scores near unit size so the softmax stays soft instead of collapsing onto one key and "
     "starving the gradients.",
     "S = S / sqrt(d_k)", DataKind::Signed},
    {StageId::MaskedScores, "masked_scores", "Mask", "S''_h = S'_h + M,  M = -inf where blocked",
     "Blocked pairs (future tokens under a causal mask, padding keys, or a custom mask) get -inf, "
     "so the softmax gives them exactly zero weight. A row with every key blocked has nothing to "
     "attend to: mhascope gives it weights 0 and output 0 and flags it.",
     "S = S.masked_fill(blocked, -inf)", DataKind::Signed},
    {StageId::Weights, "weights", "Softmax", "A_h = softmax(S''_h) over T_k",
     "Each row becomes a probability distribution over the keys: exponentiate, divide by the row "
     "sum. The row maximum is subtracted first only for numerical stability; it does not change "
     "the result.",
     "A = softmax(S, dim=-1)", DataKind::Probability},
    {StageId::HeadOutputs, "head_outputs", "Weighted values", "O_h = A_h V_h",
     "Each query's output in a head is the weighted average of that head's value vectors. This is "
     "the only step that mixes information across tokens.",
     "O = A @ V", DataKind::Signed},
    {StageId::Concat, "concat", "Merge heads", "O = [O_1 | O_2 | ... | O_h]",
     "The heads' d_k-wide outputs are put back side by side (transpose back, then reshape) into "
     "d_model columns. Concatenating, not summing, keeps what each head found separate.",
     "O = O.transpose(1, 2).reshape(B, T_q, d_model)", DataKind::Signed},
    {StageId::Output, "output", "Output projection", "Y = O W_o + b_o",
     "A last learned map W_o mixes the heads' findings with each other; without it the heads "
     "would stay in separate column blocks that never talk.",
     "Y = O @ W_o + b_o", DataKind::Signed},
}};

}  // namespace

const StageInfo& stageInfo(StageId id) { return kStages[static_cast<std::size_t>(id)]; }
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
    case StageId::Scores:
    case StageId::ScaledScores:
    case StageId::MaskedScores:
    case StageId::Weights:
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
  const Tensor& t = trace.tensor(stage);
  const char* name = stageInfo(stage).name;
  if (batchIndex < 0 || batchIndex >= trace.batch) {
    return makeError("batch index " + std::to_string(batchIndex) + " is out of range: " + name + " has B = " +
                     std::to_string(trace.batch) + " (valid 0.." + std::to_string(trace.batch - 1) + ")");
  }
  Slice2D s;
  s.stage = stage;
  s.batchIndex = batchIndex;
  std::size_t offset = 0;
  if (stageHasHeads(stage)) {
    if (head < 0 || head >= trace.heads) {
      return makeError("head " + std::to_string(head) + " is out of range: " + name + " has h = " +
                       std::to_string(trace.heads) + " heads (valid 0.." + std::to_string(trace.heads - 1) + ")");
    }
    s.head = head;
    s.rows = static_cast<int>(t.dim(2));
    s.cols = static_cast<int>(t.dim(3));
    s.rowAxis = t.axes[2];
    s.colAxis = t.axes[3];
    offset = (static_cast<std::size_t>(batchIndex) * t.dim(1) + head) * s.rows * s.cols;
  } else {
    s.head = -1;
    s.rows = static_cast<int>(t.dim(1));
    s.cols = static_cast<int>(t.dim(2));
    s.rowAxis = t.axes[1];
    s.colAxis = t.axes[2];
    offset = static_cast<std::size_t>(batchIndex) * s.rows * s.cols;
  }
  s.data = t.ptr() + offset;
  const auto b = static_cast<std::size_t>(batchIndex);
  auto labelsFor = [&](const std::string& axis, int n) {
    if (axis == "T_q") return trace.queryTokens.at(b);
    if (axis == "T_k") return trace.keyTokens.at(b);
    return indexLabels(n);
  };
  s.rowLabels = labelsFor(s.rowAxis, s.rows);
  s.colLabels = labelsFor(s.colAxis, s.cols);
  if (s.rowAxis == "T_q" && !trace.fullyMasked.empty()) {
    const auto* first = trace.fullyMasked.data() + b * static_cast<std::size_t>(trace.tq);
    s.flaggedRows.assign(first, first + trace.tq);
  }
  markBlockedCells(trace, s);
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
