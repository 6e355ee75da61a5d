// Activation patching: which sites of a model's forward carry what makes the clean run answer differently from
// the corrupted one. Two runs over token sequences of the same length T:
//   denoising  the corrupted run, with one site's numbers replaced by the clean run's
//   noising    the clean run, with one site's numbers replaced by the corrupted run's
// and, per site, the metric m (answer_metric.hpp) of the patched run, normalised as the restored fraction
//   r = (m_patched − m_corrupted) / (m_clean − m_corrupted)      (0: as corrupted, 1: as clean)
// the same formula in both directions (noising a site that matters pulls r from 1 towards 0).
//
// The sites (model/forward.hpp's HookPoint), one grid each:
//   Resid         (L, T)    the residual stream before layer l at position t
//   Attn, Mlp     (L, T)    layer l's attention output, MLP output, at position t
//   Head          (L, h)    head i's output A V before W_o, at every position
//   HeadPosition  (L·h, T)  the same at one position t (row l·h + i)
//   Query         (L, h)    head i's queries (after q/k norm and RoPE) at every position; Pattern (L, h) its weights
//   Key, Value    (L, N)    K/V head j's keys (likewise) or values — shared by the h/N query heads that read it
//
// Cost: the run that gives the numbers (the donor) once, with a read hook keeping the site's numbers of every
// layer; the run that receives them once, keeping the stream before each layer; then per site one partial forward
// from the patched layer on, starting from the receiver's kept stream before it — the sites of one grid row stacked
// into one forward (sweep_steps.hpp), so that each weight matrix is prepared once for all of them. Each layer's
// weights are converted once for the whole sweep when the memory budget holds them (else as each forward runs).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/answer_metric.hpp"
#include "attention/engine.hpp"
#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::experiments {

enum class PatchSite { Resid, Attn, Mlp, Head, HeadPosition, Query, Key, Value, Pattern };
enum class PatchDirection { Denoise, Noise };
const char* siteName(PatchSite s);  // "resid", "attn", "mlp", "head", "head-position", "q", "k", "v", "pattern"
const char* siteWords(PatchSite s);  // what one cell patches, in words: "head output (A V before W_o), every position"
const std::vector<PatchSite>& allSites();  // every site, in the command line's order
const char* directionName(PatchDirection d);  // "denoise", "noise"

struct PatchRequest {
  std::vector<int> clean, corrupted;  // (T) each, the same T
  Answer answer;
  PatchSite site = PatchSite::Head;
  PatchDirection direction = PatchDirection::Denoise;
  int threads = 1;  // sites computed at once (each forward on one thread); the numbers do not depend on it
  std::uint64_t memoryBudgetBytes = kDefaultMemoryBudget;
};

struct PatchGrid {
  PatchSite site = PatchSite::Head;
  PatchDirection direction = PatchDirection::Denoise;
  int rows = 0, cols = 0;
  std::string rowAxis, colAxis;  // "layer" / "position", "head", "K/V head"; HeadPosition's rows "layer.head"
  std::vector<double> metric;    // (rows, cols) the patched run's metric
  std::vector<double> restored;  // (rows, cols) r; NaN where m_clean = m_corrupted (nothing to restore)
  double cleanMetric = 0, corruptedMetric = 0;
  bool layersKept = false;       // each layer's weights converted once (the budget held them)
  double at(int r, int c) const { return restored[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)]; }
};

// Called after each partial forward with the sites done and their count (one call at a time, from the threads that
// compute the sites); returning false stops the sweep, which then returns the error model::kForwardCancelled.
using SweepProgress = std::function<bool(int done, int total)>;

// The sweep's grid shape for a model and T (rows, cols), and its number of partial forwards.
std::pair<int, int> gridShape(const model::ModelSpec& spec, std::int64_t T, PatchSite site);

// Bytes the sweep holds at once: the donor's numbers at the site for every layer, the receiver's L streams, one
// partial forward's working memory (of a grid row's stacked sites) and (keepLayers) every layer's weights in float.
double estimatePatchBytes(const model::ModelSpec& spec, std::int64_t T, PatchSite site, bool keepLayers);

// The check made first: the same token count in both runs (the message names both counts and the usual fixes).
Status checkSameLength(std::size_t cleanTokens, std::size_t corruptedTokens);

// The sweep over every site of request.site. Refused before anything is allocated when the estimate (without the
// kept layers) passes the budget; a forward's error names its layer.
Result<PatchGrid> patchSweep(const model::ModelFolder& model, const PatchRequest& request,
                             const SweepProgress& progress = {});

}  // namespace mhascope::experiments
