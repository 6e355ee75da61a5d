// Checkpoints: .safetensors holding the model's tensors under their PyTorch state_dict names
// (scripts/mhascope_model.py loads them with load_state_dict(strict=True)) and, in
// "__metadata__", the sizes and the task:
//   format=mhascope-gpt version=1 vocab seq d_model heads layers mlp(0|1) task step seed
//   period_min period_max (the induction task's; the other tasks store the defaults, unused)
//   [positions learned|rope|alibi, kv_heads N, rope_base (rope only): written only for a model
//    with RoPE, ALiBi or N != h, whose tensors use the q_proj/k_proj/v_proj/o_proj names;
//    absent: learned positions, N = h, in_proj names]
//   [alphabet: JSON array of the text task's characters]  history: the run's evaluations (below)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "train/params.hpp"
#include "train/probes.hpp"
#include "train/tasks.hpp"

namespace mhascope::train {

struct Checkpoint {
  GptParams params;
  TaskConfig task;                      // kind, vocab, seq, periods (textPath empty)
  std::vector<std::string> alphabet;    // text task
  std::int64_t step = 0;
  std::uint64_t seed = 0;
  // The run's evaluations up to `step` (empty for checkpoints written before the history block
  // existed). Written downsampled to at most maxSavedEvaluations(); see historyMetadata().
  std::vector<Evaluation> history;
  std::string origin;  // the file it was read from ("" when made in memory), for messages
};

std::map<std::string, std::string> checkpointMetadata(const Checkpoint& c);
// The variant's keys (positions, kv_heads, rope_base) for these sizes; empty for a plain model.
std::map<std::string, std::string> variantMetadata(const GptConfig& g);
// Bytes of the .safetensors file.
std::string encodeCheckpoint(Checkpoint c);
// Atomic write (an existing file is kept if writing fails).
Status saveCheckpoint(const std::string& path, const Checkpoint& c);
// Parses and checks: metadata keys and values, then every expected tensor name and shape for
// those sizes, and no extra tensor. One error lists every problem found.
// The metadata's sizes are checked against the file's tensors before anything of those sizes is
// allocated. An absent "history" is an empty history; a malformed one is an error.
Result<Checkpoint> decodeCheckpoint(std::string_view bytes, const std::string& what);
// Refuses, before reading, a file whose reading would pass the memory budget (default: the
// machine's, util/memory_budget.hpp). Sets Checkpoint::origin to `path`.
Result<Checkpoint> loadCheckpoint(const std::string& path,
                                  std::optional<std::uint64_t> memoryBudgetBytes = std::nullopt);

// The history block: metadata key "history", a JSON object
//   {"version": 2, "layers": L, "heads": h, "evaluations_in_run": N, "columns": "…",
//    "evaluations": [[step, probe_loss, probe_accuracy, train_loss|null,
//                     then per layer, per head: prev_token, induction, self, first_token, entropy,
//                     copying, prev_token_new, prev_token_seen], …]}
// (probes.hpp defines each score). A version-1 block, written before induction was prefix matching,
// is read as an empty history.
// with steps increasing and at most maxSavedEvaluations(L, h) rows: a longer run is downsampled,
// keeping the first and last evaluations, the first where the induction circuit had formed and
// the first where each head passed a role threshold.
inline constexpr std::size_t kMaxSavedEvaluations = 4096;
inline constexpr std::size_t kMaxHistoryBytes = 32u << 20;
std::size_t maxSavedEvaluations(int layers, int heads);
std::string historyMetadata(const std::vector<Evaluation>& history, int layers, int heads);
// Checks the version, the sizes, the row count and width, and that steps increase up to lastStep.
Result<std::vector<Evaluation>> parseHistoryMetadata(std::string_view text, int layers, int heads,
                                                     std::int64_t lastStep);

}  // namespace mhascope::train
