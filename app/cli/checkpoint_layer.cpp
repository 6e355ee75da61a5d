// Builds the CLI model from one layer of a trained checkpoint.
#include "checkpoint_layer.hpp"

#include "train/layer_model.hpp"

namespace mhascope::cli {

ModelConfig checkpointLayerConfig(const train::GptConfig& g, const train::Batch& batch,
                                  const std::vector<std::vector<std::string>>& labels) {
  ModelConfig c;
  c.name = "checkpoint";
  c.dModel = g.dModel;
  c.heads = g.heads;
  c.bias = true;
  c.mask = MaskKind::Causal;
  c.batch = batch.batch;
  c.tokens = batch.seq;
  c.text.clear();
  for (const auto& row : labels) {
    if (!c.text.empty()) c.text += " | ";
    for (std::size_t i = 0; i < row.size(); ++i) c.text += (i ? " " : "") + row[i];
  }
  return c;
}

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
  auto ckpt = train::loadCheckpoint(o.files.checkpoint);
  if (!ckpt) return ckpt.error();
  const int layer = o.files.layer.value_or(0);
  auto probe = train::checkpointProbe(*ckpt, o.batch.value_or(1), o.text.value_or(""));
  if (!probe) return probe.error();
  if (ckpt->task.kind != train::TaskKind::Text && o.text) {
    return makeError("--text is only for checkpoints of the text task; this one was trained on " +
                     std::string(train::taskName(ckpt->task.kind)) + " (its probe sequence is used)");
  }
  auto model = train::trainedLayerModel(ckpt->params, probe->batch, layer, probe->labels);
  if (!model) return model.error();
  ResolvedModel r;
  const train::GptConfig& g = ckpt->params.cfg;
  r.config = checkpointLayerConfig(g, probe->batch, probe->labels);
  r.model = std::move(*model);
  r.seedUsed = false;
  r.describeNote = "; trained layer " + std::to_string(layer) + " of " + std::to_string(g.layers) + " (" +
                   train::taskName(ckpt->task.kind) + ", step " + std::to_string(ckpt->step) +
                   ", input LN1 of the residual stream)";
  return r;
}

}  // namespace mhascope::cli
