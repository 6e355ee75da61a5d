// Path patching, head → head: how much of the answer one composition edge carries — a sender head's output read by
// one receiver head's queries, keys or values only. The two runs and the metric are activation patching's
// (patching.hpp): denoising receives in the corrupted run the clean run's numbers, noising the reverse, and the
// result is the restored fraction r = (m_patched − m_corrupted) / (m_clean − m_corrupted).
//
// The definition (denoising; noising swaps the runs): in the patched run every head's output is frozen at its
// corrupted-run value except the sender's, which takes its clean value, and only the direct path counts — the
// stream the receiver's input is computed from is the corrupted stream before the receiver's layer plus the
// sender's change through its rows of W_o:
//   x̃ = x_corrupted(L_r) + (z_clean(s) − z_corrupted(s)) · W_o[s rows]      (T, d_model)
// z(s) the sender's A V (T, d_k), W_o[s rows] its d_k rows of its layer's W_o. The receiver's queries (or keys, or
// values) are computed from x̃ as the model computes them — its layer's first norm on x̃, its head's columns of W_q
// (W_k, W_v) and bias, the q/k norm and RoPE where the layer has them — while every other head of that layer reads the
// corrupted stream; from the receiver's head on, everything is recomputed from that. The MLPs and other heads between
// the sender and the receiver see nothing of the sender's change (that is what "only the direct path" means).
//
// This is exact only where a block adds its sublayers' outputs to the stream as they are (pre-norm blocks: GPT-2,
// Llama and their kin): a block that norms each output before adding it (OLMo 2, Gemma 2/3) has no linear W_o path
// from one head to the stream, and a latent-attention layer (DeepSeek) has no per-head queries, keys or values
// computed from the stream; both are refused with the reason.
//
// Keys and values: a model with N < h K/V heads shares each K/V head between h/N query heads, so a k or v receiver
// is a K/V head (0 .. N − 1), as in activation patching's k and v grids; a q receiver is a query head (0 .. h − 1).
//
// Cost: the two runs once (each keeping its head outputs and, the receiver, its stream before every layer), then
// per edge the receiver's layer once on x̃ (its queries, keys or values taken) and one partial forward from the
// receiver's layer on; the edges of one grid row run stacked (sweep_steps.hpp), a row of receivers sharing one x̃ pass.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/patching.hpp"

namespace mhascope::experiments {

enum class PathInput { Query, Key, Value };
const char* pathInputName(PathInput p);  // "q", "k", "v"

struct HeadRef {
  int layer = 0, head = 0;
};

// Edge: one sender → one receiver. Senders: the receiver fixed, every head of an earlier layer as the sender.
// Receivers: the sender fixed, every head (K/V head for k and v) of a later layer as the receiver.
enum class PathSweep { Edge, Senders, Receivers };
const char* pathSweepName(PathSweep s);  // "edge", "senders", "receivers"

struct PathRequest {
  std::vector<int> clean, corrupted;  // (T) each, the same T
  Answer answer;
  PatchDirection direction = PatchDirection::Denoise;
  PathSweep sweep = PathSweep::Edge;
  HeadRef sender, receiver;  // Edge: both; Senders: the receiver; Receivers: the sender
  PathInput into = PathInput::Query;
  int threads = 1;  // edges computed at once; the numbers do not depend on it
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
};

// The grid: Edge (1, 1); Senders and Receivers (L, h) — (L, N) for Receivers into k or v — with NaN in the cells
// that are no edge (a sender's layer must come before the receiver's).
struct PathGrid {
  PathSweep sweep = PathSweep::Edge;
  PatchDirection direction = PatchDirection::Denoise;
  PathInput into = PathInput::Query;
  HeadRef sender, receiver;  // as requested
  int rows = 0, cols = 0, edges = 0;
  std::string rowAxis, colAxis;  // "layer" / "head" ("K/V head": receivers into k or v); Edge: "sender" / "receiver"
  std::vector<double> metric;    // (rows, cols) the patched run's metric; NaN where no edge
  std::vector<double> restored;  // (rows, cols) r; NaN where no edge or m_clean = m_corrupted
  double cleanMetric = 0, corruptedMetric = 0;
  bool layersKept = false;       // each layer's weights converted once (the budget held them)
  double at(int r, int c) const { return restored[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)]; }
};

// Every value checked against the model, each message naming it: the layers and heads in range (a k/v receiver's head
// among the N K/V heads), the sender's layer before the receiver's, the family one where the direct path is exact.
Status checkPathRequest(const model::ModelSpec& spec, const PathRequest& request);

// Bytes held at once: both runs' head outputs in every layer, the receiver's streams, two partial forwards' working
// memory and (keepLayers) every layer's weights in float.
double estimatePathBytes(const model::ModelSpec& spec, std::int64_t T, bool keepLayers);

// The edge or the sweep, with progress and cancel as patchSweep (one call per edge). Refused before anything is
// allocated when the estimate (without the kept layers) passes the budget.
Result<PathGrid> pathPatch(const model::ModelFolder& model, const PathRequest& request, const SweepProgress& progress = {});

}  // namespace mhascope::experiments
