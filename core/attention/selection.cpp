// What a person reads for one selection (nameSelection) and the learned matrices as slices.
// One place names a picture, so the window's label, an exported title and its file name
// cannot drift apart (they did: "head 1 of 3" on screen, "head 0" in the title, "_h1" in the
// file). Indices are 0-based everywhere, exactly as typed on the command line.
#include <array>
#include <string>

#include <cstdlib>

#include "attention/trace.hpp"

namespace mhascope {
namespace {

struct WeightText {
  const char* name;
  const char* symbol;
  const char* meaning;
};
constexpr std::array<WeightText, kWeightCount> kWeights = {{
    {"w_q", "W_q", "X_q W_q: every query feature mixes all d_model input features; head i reads columns i·d_k … (i+1)·d_k − 1"},
    {"w_k", "W_k", "X_k W_k: the keys; head i reads columns i·d_k … (i+1)·d_k − 1"},
    {"w_v", "W_v", "X_v W_v: the values; head i reads columns i·d_k … (i+1)·d_k − 1"},
    {"w_o", "W_o", "O W_o: rows i·d_k … (i+1)·d_k − 1 take head i's output; each output column mixes every head"},
    {"b_q", "b_q", "added to every row of X_q W_q"},
    {"b_k", "b_k", "added to every row of X_k W_k"},
    {"b_v", "b_v", "added to every row of X_v W_v"},
    {"b_o", "b_o", "added to every row of O W_o"},
}};

const WeightText& textOf(WeightId id) { return kWeights[static_cast<std::size_t>(id)]; }

const char* kDot = " \u00b7 ";

}  // namespace

const char* weightName(WeightId id) { return textOf(id).name; }
const char* weightSymbol(WeightId id) { return textOf(id).symbol; }
const char* weightMeaning(WeightId id) { return textOf(id).meaning; }

std::optional<WeightId> weightFromName(std::string_view name) {
  for (int i = 0; i < kWeightCount; ++i) {
    if (name == kWeights[static_cast<std::size_t>(i)].name) return static_cast<WeightId>(i);
  }
  return std::nullopt;
}

std::string weightNamesList() {
  std::string out;
  for (const WeightText& w : kWeights) {
    if (!out.empty()) out += ", ";
    out += w.name;
  }
  return out;
}

SelectionName nameSource(int layer) {
  if (layer < 0) return {};
  return {"layer " + std::to_string(layer), "layer" + std::to_string(layer)};
}

SelectionName nameSelection(StageId stage, int batchIndex, int head, int gridHeads, int layer) {
  const StageInfo& info = stageInfo(stage);
  const SelectionName source = nameSource(layer);
  SelectionName n;
  n.title = std::string(info.title) + " (" + info.name + ")";
  n.fileStem = info.name;
  if (!source.title.empty()) {
    n.title += kDot + source.title;
    n.fileStem += "_" + source.fileStem;
  }
  n.fileStem += "_b" + std::to_string(batchIndex);
  if (gridHeads > 0 && stageHasHeads(stage)) {
    n.title += kDot + std::string("all ") + std::to_string(gridHeads) + " heads";
    n.fileStem += "_all_heads";
  } else if (head >= 0 && stageHasHeads(stage)) {
    n.title += kDot + std::string("head ") + std::to_string(head);
    n.fileStem += "_h" + std::to_string(head);
  }
  n.title += kDot + std::string("batch ") + std::to_string(batchIndex);
  return n;
}

SelectionName nameWeight(WeightId id, int layer) {
  const WeightText& w = textOf(id);
  const bool matrix = static_cast<int>(id) < static_cast<int>(WeightId::Bq);
  SelectionName n{std::string(w.symbol) + (matrix ? " (learned matrix)" : " (learned bias)"), w.name};
  if (const SelectionName source = nameSource(layer); !source.title.empty()) {
    n.title += kDot + source.title;
    n.fileStem += "_" + source.fileStem;
  }
  return n;
}

SelectionName nameSlice(const Slice2D& s, int gridHeads) {
  if (s.weight) return nameWeight(*s.weight, s.layer);
  return nameSelection(s.stage, s.batchIndex, s.head, gridHeads, s.layer);
}

bool headsOwnColumns(StageId stage) {
  switch (stage) {
    case StageId::Query:
    case StageId::Key:
    case StageId::Value:
    case StageId::Output: return false;
    default: return true;
  }
}

const char* noHeadOwnerNote(StageId stage) {
  if (stage == StageId::Output) return "no head owns these columns: W_o adds one term per head into every feature";
  return "no head owns these columns: every head sees all of them through W_q, W_k, W_v";
}

std::string forcedCellReason(const Trace& trace, StageId stage, int b, int q, int k) {
  const bool afterMask = stage == StageId::MaskedScores || stage == StageId::Weights;
  if (!afterMask || trace.blocked.empty()) return {};
  const std::string qs = std::to_string(q), ks = std::to_string(k);
  if (trace.isBlocked(b, q, k)) {
    std::string why;
    if (trace.causal && k > q) {
      why = "blocked by the causal mask: key t = " + ks + " > query t = " + qs;
    } else if (trace.window > 0 && k >= trace.sinks && (trace.causal ? k <= q - trace.window : std::abs(q - k) >= trace.window)) {
      why = "outside the sliding window of W = " + std::to_string(trace.window) + ": key " + ks + " is " +
            std::to_string(std::abs(q - k)) + " away from query " + qs;
    } else if (trace.keyPadding && trace.attnMask) {
      why = "blocked by the key padding mask or the attention mask";
    } else if (trace.keyPadding) {
      why = "blocked by the key padding mask: key " + ks + " is padding";
    } else {
      why = "blocked by the attention mask at (query " + qs + ", key " + ks + ")";
    }
    return why + (stage == StageId::Weights ? ", so its weight is exactly 0" : ": its score is set to \u2212inf");
  }
  if (trace.isFullyMasked(b, q)) return {};
  int visible = 0;
  for (int j = 0; j < trace.tk; ++j) visible += trace.isBlocked(b, q, j) ? 0 : 1;
  if (visible == 1 && stage == StageId::Weights) {
    if (trace.causal && q == 0 && k == 0) {
      return trace.selfAttention ? "the first query can only see itself, so its weight is exactly 1"
                                 : "the first query can only see key 0, so its weight is exactly 1";
    }
    return "the only key query " + qs + " may see, so its weight is exactly 1";
  }
  return {};
}

Result<Slice2D> sliceWeight(const Trace& trace, WeightId id) {
  const WeightTable w = trace.weight(id);
  if (!w.data) return makeError("the trace holds no weights");
  const bool matrix = static_cast<int>(id) < 4;
  Slice2D s;
  s.stage = StageId::Output;  // unused: `weight` says what this is
  s.weight = id;
  s.layer = trace.layer;
  s.rows = w.rows;
  s.cols = w.cols;
  s.data = w.data;
  s.rowAxis = matrix ? "d_model_in" : "1";
  // W_k, W_v (and b_k, b_v) of N K/V heads make N·d_k features, not d_model.
  s.colAxis = trace.dModel > 0 && w.cols != trace.dModel ? "N·d_k_out" : "d_model_out";
  s.rowKind = axisKind(s.rowAxis);
  s.colKind = axisKind(s.colAxis);
  for (int r = 0; r < s.rows; ++r) s.rowLabels.push_back(s.rows == 1 ? std::string(weightSymbol(id)) : std::to_string(r));
  for (int c = 0; c < s.cols; ++c) s.colLabels.push_back(std::to_string(c));
  return s;
}

void markBlockedCells(const Trace& trace, Slice2D& s) {
  s.blockedCells = nullptr;
  s.ownBlocked.reset();
  if (s.weight || (s.stage != StageId::MaskedScores && s.stage != StageId::Weights)) return;
  if (s.rows != trace.tq || s.cols != trace.tk || trace.blocked.empty()) return;
  const auto n = static_cast<std::size_t>(trace.tq) * static_cast<std::size_t>(trace.tk);
  const auto* first = trace.blocked.data() + static_cast<std::size_t>(s.batchIndex) * n;
  bool any = false;
  for (std::size_t i = 0; i < n && !any; ++i) any = first[i] != 0;
  if (any) s.blockedCells = first;
}

}  // namespace mhascope
