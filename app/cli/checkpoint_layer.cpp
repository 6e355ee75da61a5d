// `--checkpoint F --layer L`: the options that clash with a trained layer, then the model source.
#include "checkpoint_layer.hpp"

#include "model_source/model_source.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {

Result<ResolvedModel> resolveCheckpointLayer(const ModelOptions& o) {
  // Options that describe a model of their own make no sense with a trained one: list them all.
  std::vector<std::string> clash;
  if (o.dModel) clash.push_back("--d-model");
  if (o.heads) clash.push_back("--heads");
  if (o.tokens) clash.push_back("--tokens");
  if (o.kvText) clash.push_back("--kv-text");
  if (o.seed) clash.push_back("--seed");
  if (o.bias || o.noBias) clash.push_back("--bias/--no-bias");
  if (o.mask) clash.push_back("--mask");
  if (o.scale) clash.push_back("--scale");
  if (o.padLast) clash.push_back("--pad-last");
  if (o.noPositions) clash.push_back("--no-positions");
  // The trained layer runs the variant it was trained with (its checkpoint's positions and N).
  if (o.kvHeads) clash.push_back("--kv-heads");
  if (o.headDim) clash.push_back("--head-dim");
  if (o.softcap) clash.push_back("--softcap");
  if (o.qkNorm) clash.push_back("--qk-norm");
  if (o.sink) clash.push_back("--sink");
  if (o.positions) clash.push_back("--positions");
  if (o.ropeBase) clash.push_back("--rope-base");
  if (o.ropeStyle) clash.push_back("--rope-style");
  if (o.window) clash.push_back("--window");
  if (o.sinks) clash.push_back("--sinks");
  for (const auto& [flag, file] : {std::pair{"--query", o.files.query}, {"--key", o.files.key}, {"--value", o.files.value},
                                   {"--weights", o.files.weights}, {"--key-padding-mask", o.files.keyPaddingMask},
                                   {"--attn-mask", o.files.attnMask}}) {
    if (!file.empty()) clash.push_back(flag);
  }
  if (!clash.empty()) {
    std::string list;
    for (const auto& c : clash) list += (list.empty() ? "" : ", ") + c;
    return makeError("--checkpoint takes the sizes, weights, mask and input from the trained model; drop " + list);
  }
  // --memory-budget holds here as everywhere: reading the file, the forward and what runs after.
  const std::uint64_t budget = o.memoryBudgetMib ? *o.memoryBudgetMib << 20 : defaultMemoryBudget();
  return checkpointLayerSource(o.files.checkpoint, o.files.layer.value_or(0), o.batch.value_or(1), o.text.value_or(""),
                               budget);
}

}  // namespace mhascope::cli
