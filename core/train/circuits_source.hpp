// A trained model as a source of layers for core/analysis (its circuits, rollout and texts): the
// parameters' PyTorch storage (y = x Wᵀ) handed over as y = x W, LayerNorm left out (gains of ones,
// as in Elhage et al. 2021), and the attention of a checkpoint's probe sequence for the rollout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/circuits.hpp"
#include "analysis/layer_source.hpp"
#include "analysis/rollout.hpp"
#include "train/checkpoint.hpp"
#include "train/model.hpp"
#include "train/params.hpp"
#include "train/probes.hpp"

namespace mhascope::train {

// `p` must outlive it. W_q^i is rows i·d_k … of in_proj_weight's first block, so the source's W_q is
// that block transposed; W_o is out_proj.weightᵀ; E is emb.weight, the unembedding's rows out.weight.
class ParamsLayers final : public analysis::LayerSource {
 public:
  explicit ParamsLayers(const GptParams& p) : p_(p) {}
  analysis::SourceShape shape() const override;
  Result<analysis::CircuitLayer> layer(int l) const override;
  Status embeddingRows(std::int64_t first, std::int64_t n, float* out) const override;
  Status unembeddingRows(std::int64_t first, std::int64_t n, float* out) const override;
  Result<RowVector> finalGain() const override;
  std::int64_t learnedPositions() const override;  // pos.weight's rows (0 with RoPE or ALiBi)
  Status positionRows(std::int64_t first, std::int64_t n, float* out) const override;

 private:
  const GptParams& p_;
};

// What the definitions need: W_q, W_k, W_v of every head (in_proj_weight of 3 d_model rows) and
// W_o of d_model columns. A model whose K/V heads are shared by groups of query heads is refused
// with one line for now (its OV and QK pair a query head with another head's keys and values).
Status checkCircuitsInput(const GptParams& p);

// Every head and pair of `p` (checkCircuitsInput first): analysis::computeCircuits over ParamsLayers.
analysis::Circuits computeCircuits(const GptParams& p, std::optional<double> baseline = std::nullopt);

// The attention of `p` on one sequence (item 0 of `batch`) as a snapshot: a forward under `budget`.
Result<Snapshot> sequenceSnapshot(const GptParams& p, const Batch& batch, std::uint64_t budgetBytes);

// The rollout of a checkpoint's probe sequence (--text for a text-task checkpoint, which stores no
// text), for the command line and the window alike; rollout.why says why there is none (a text task
// without a text, a forward over the budget).
struct ProbeRollout {
  analysis::Rollout rollout;
  std::vector<std::string> tokens;  // the sequence's symbols (T)
  std::string input;                // what was rolled out: "the task's probe sequence" / "--text"
};
ProbeRollout checkpointRollout(const Checkpoint& ck, const std::string& text, std::uint64_t budgetBytes);

}  // namespace mhascope::train
