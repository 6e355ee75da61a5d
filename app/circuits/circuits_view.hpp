// The Circuits panel's state and its work off the UI thread: what a trained model's heads compute,
// read from its weights (core/analysis/circuits.hpp over core/train/circuits_source.hpp), and the
// attention rollout of its probe sequence (core/analysis/rollout.hpp, computed there, never here or
// in a panel). Two sources share one view of every pair of heads:
//   the Train mode  — the parameters kept at the scrubbed step (paramsAt), so the composition and the
//                     copying scores follow the timeline; the rollout reads that step's snapshot;
//   the pipeline    — a checkpoint opened with --checkpoint F (Document::files.checkpoint), read
//                     with its probe sequence on a worker thread.
// Circuits cost ~1 ms at the trainer's default sizes but grow as L·h·(d_model³ + V²·d_model), and
// the random baseline costs far more (200 sampled pairs): both are computed on a worker thread,
// the baseline once per (d_model, d_k), the circuits once per kept step (a small cache), never on
// the UI thread.
// Probes (input scripts): circuits_layer, circuits_head (sliders), circuits_m_qk, circuits_m_ov,
// circuits_m_qk_tokens, circuits_m_ov_tokens, circuits_kind_q/k/v, circuits_export_head,
// circuits_export_comp, circuits_export_rollout, circuits_head_map, circuits_comp_map,
// circuits_arrows, circuits_rollout_map, circuits_raw_map, circuits_comp_map_q/_k/_v, circuits_pair_from,
// circuits_pair_to (+ their items), circuits_pair_map, circuits_export_pair; labels circuits_status, circuits_step,
// circuits_head_text, circuits_comp_text, circuits_copying_text, circuits_rollout_text,
// circuits_copying_L{l}_h{i}, circuits_arrows_drawn, circuits_comp_scale, circuits_virtual_text, circuits_pair_text.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "render/texture_keys.hpp"
#include "shell/jobs.hpp"
#include "state/job_slot.hpp"
#include "state/ui_context.hpp"
#include "analysis/circuits.hpp"
#include "analysis/rollout.hpp"
#include "train/params.hpp"
#include "train/probes.hpp"
#include "circuits/model_circuits_compute.hpp"

namespace mhascope::app {

struct TrainLab;
struct AppState;
struct ViewState;

// One step's (or one checkpoint's) circuits, as the worker made them.
struct CircuitsEntry {
  std::shared_ptr<const train::GptParams> params;  // the cache key (held, so its address stays unique)
  std::shared_ptr<const analysis::Circuits> circuits;  // null when `error` says why
  std::string error;
  std::uint64_t serial = 0;                        // texture keys of its pictures
};

// A checkpoint opened in the pipeline: its parameters, vocabulary and its probe sequence's rollout.
struct CheckpointCircuits {
  std::string path;
  std::string error;                               // "" when read
  std::shared_ptr<const train::GptParams> params;
  std::vector<std::string> vocabLabels;            // one per token id
  std::vector<std::string> probeLabels;            // the probe sequence's tokens (empty: no rollout)
  analysis::Rollout rollout;                       // of the probe sequence (rollout.why: why there is none)
  std::int64_t step = 0;
};

// What the view draws, whichever mode it is in (made by the update step, updateCircuits).
struct CircuitsInput {
  std::shared_ptr<const train::GptParams> params;  // null: nothing to read (why in `missing` or `error`)
  std::string missing;
  std::string error;                    // the checkpoint could not be read (drawn in red)
  std::string source;                   // "step 450 of the run" / "checkpoint.safetensors, step 1500"
  std::vector<std::string> vocabLabels; // token-space axes
  const analysis::Rollout* rollout = nullptr;  // null: none (why in rolloutWhy)
  std::uint64_t rolloutSerial = 0;             // changes whenever `rollout` does (texture key)
  std::vector<std::string> probeLabels;
  std::string rolloutWhy;
  bool trainMode = false;               // probe names and texts say "the run" / "the checkpoint"
};

// The choices and caches of one Circuits view (the Train mode's and the pipeline's are separate).
struct CircuitsView {
  int layer = 0, head = 0;  // the head whose matrices are shown
  int matrix = 0;           // 0 QK, 1 OV, 2 E QK E^T, 3 E OV U, 4 P QK P^T
  int kind = 1;             // the composition whose arrows, words and export are shown: 0 Q, 1 K, 2 V
  std::optional<analysis::HeadPair> pair;  // the pair whose virtual head is shown (a table cell or the combos)
  static constexpr std::size_t kCacheSteps = 32;
  std::vector<CircuitsEntry> cache;          // most recently used last
  std::map<std::pair<int, int>, double> baselines;  // by (d_model, d_k)
  std::shared_ptr<const train::GptParams> jobParams;  // the circuits the worker computes (null: none)
  // The worker (made by the first request): the circuits and the baseline used.
  std::unique_ptr<LatestJob<std::pair<CircuitsEntry, double>>> worker;
  std::uint64_t serialCounter = 0;
  int keyBase = kTrainCircuitsSlot;  // its slots (render/texture_keys.hpp): this view's pictures apart from every other
  // The entry on screen: kept while the next step's circuits are computed (no jump in the layout).
  std::uint64_t shownSerial = 0;
  std::string shownSource;
  CircuitsInput input;  // this frame's, from the update step

  // The Train mode's: the rollout of the snapshot shown, made by core (analysis::rolloutOf) once per
  // snapshot in the update step (L T³ flops, microseconds at the trainer's T, but not every frame).
  std::uint64_t snapshotSerial = 0;
  const train::Snapshot* rolloutOf = nullptr;
  analysis::Rollout trainRollout;

  // Pipeline: the checkpoint named by the document, read on a worker (key: checkpointCircuitsKey).
  JobSlot<std::string, CheckpointCircuits> checkpoint;
  std::unique_ptr<KeyedJob<std::string, CheckpointCircuits>> checkpointJob;
  std::string checkpointPathText;  // the (path, text) last stat'ed, and when
  std::string checkpointStamp;     // its key then
  double checkpointStatAt = -1.0;

  // The circuits of `params` when cached (the draw's lookup: most recently used last), else null.
  const CircuitsEntry* cached(const std::shared_ptr<const train::GptParams>& params);
  // The update step's: collects a finished job, then starts the circuits of `params` on the worker
  // unless they are cached or being computed (latest wins: a scrub past many steps computes the
  // one shown next).
  void request(const std::shared_ptr<const train::GptParams>& params);
  void poll();
  // The update step's (Train mode): the rollout of `snapshot` (serial: its picture serial), made
  // when it changed, into input.rollout.
  void prepareRollout(const train::Snapshot* snapshot, std::uint64_t serial);
  bool busy() const { return (worker && worker->busy()) || (checkpointJob && checkpointJob->busy()); }
};

// The pipeline's Circuits tab: its own state, apart from the Train mode's (TrainLab::circuits) — the
// view of a checkpoint's every pair of heads, or of a model folder's layer around the pipeline's head.
// The window holds one (App), the in-process tests theirs; panels reach it as UiContext::circuits.
struct CircuitsTab {
  CircuitsView checkpoint;
  ModelCircuitsView model;  // when the pipeline's source is a model folder's layer
  ModelCaches modelCaches;  // the window's (App sets them): a folder's tokenizer and residual streams
  // A worker is computing circuits or reading a checkpoint: the window keeps drawing until it ends.
  bool busy() const { return checkpoint.busy() || model.busy(); }
};

// The update steps, before anything is drawn; they start the jobs the panels then only read.
// The Train mode's (when it is shown): the scrubbed step's circuits and rollout.
void updateTrainCircuits(TrainLab& lab);
// The pipeline tab's (when `openTab` is it): the checkpoint read, or the model folder's circuits
// around the pipeline's head.
void updateCircuitsTab(CircuitsTab& tab, AppState& state, const ViewState& view, const std::string& openTab, double now);

void drawCircuitsView(UiContext& ctx, CircuitsView& view);

// The panels: the Train mode's (TrainRight) and the pipeline's tab (UiContext::circuits); the tab on
// a model folder's layer draws drawModelCircuitsTab (model_circuits_panel.cpp) instead.
void drawTrainCircuits(TrainLab& lab, UiContext& ctx);
void drawCircuitsTab(UiContext& ctx);
void drawModelCircuitsTab(UiContext& ctx, ModelCircuitsView& view);

// What a checkpoint's circuits depend on: its path, the text its rollout reads (text-task
// checkpoints) and the file's size and modification time, so a re-saved file or an edited text is
// read again rather than shown from the old result. A file that cannot be stat'ed keys as missing.
std::string checkpointCircuitsKey(const std::string& path, const std::string& text);
// Reads a checkpoint for the pipeline's Circuits tab (the worker's job; tests call it directly).
std::shared_ptr<const CheckpointCircuits> readCheckpointCircuits(const std::string& path, const std::string& text,
                                                                 std::uint64_t budgetBytes);

}  // namespace mhascope::app
