// One trained layer as an engine Model (its LN1 input from a forward of the whole model).
#include "train/layer_model.hpp"

#include <algorithm>

#include "train/memory.hpp"
#include "train/mha_backward.hpp"

namespace mhascope::train {

Result<Model> trainedLayerModel(const GptParams& p, const Batch& batch, int layer,
                                const std::vector<std::vector<std::string>>& labels, std::uint64_t memoryBudgetBytes) {
  if (layer < 0 || layer >= p.cfg.layers) {
    return makeError("--layer " + std::to_string(layer) + " is out of range: this checkpoint has " +
                     std::to_string(p.cfg.layers) + " layer" + (p.cfg.layers == 1 ? "" : "s") + " (0 .. " +
                     std::to_string(p.cfg.layers - 1) + ")");
  }
  {
    // The whole model's forward on the batch: the training estimate's probe part, for B = batch.
    TrainSettings s;
    s.model = p.cfg;
    s.task.seq = batch.seq;
    s.probeBatch = batch.batch;
    const double need = estimateTrainingMemory(s, p.cfg.vocab, 0).probe;
    if (need > static_cast<double>(memoryBudgetBytes)) {
      return makeError("the trained model's forward on " + std::to_string(batch.batch) + " sequence" +
                       (batch.batch == 1 ? "" : "s") + " of T = " + std::to_string(batch.seq) + " needs about " +
                       formatBytes(need) + ", more than the memory budget of " +
                       formatBytes(static_cast<double>(memoryBudgetBytes)) +
                       "; use a smaller --batch or raise the budget (--memory-budget MiB)");
    }
  }
  ForwardCache cache;
  cache.memoryBudgetBytes = memoryBudgetBytes;
  auto r = forward(p, batch, cache);
  if (!r) return r.error();
  const Trace& t = cache.layers[static_cast<std::size_t>(layer)].attn;
  const BlockParams& bp = p.blocks[static_cast<std::size_t>(layer)];
  Model m;
  m.inputs.query = t.tensor(StageId::Query);  // LN1 of the residual stream, (B, T, d_model)
  m.inputs.key = m.inputs.query;
  m.inputs.value = m.inputs.query;
  m.inputs.selfAttention = true;
  m.inputs.queryTokens = labels;
  m.inputs.keyTokens = labels;
  m.weights = mhaWeightsFromPacked(bp.inW, bp.inB, bp.outW, bp.outB);
  m.options.heads = p.cfg.heads;
  m.options.causal = true;
  m.options.layer = layer;
  applyVariants(p.cfg, m.options);  // the layer's RoPE / ALiBi / K/V heads, as training ran it
  return m;
}

Result<ProbeInput> checkpointProbe(const Checkpoint& c, int items, const std::string& text) {
  if (items < 1) return makeError("the batch must hold at least 1 sequence");
  ProbeInput out;
  if (c.task.kind == TaskKind::Text) {
    if (text.empty()) {
      return makeError("this checkpoint was trained on a text file, which it does not store: give the input with "
                       "--text \"...\" (characters of its alphabet)");
    }
    // The text task predicts each character from the ones before it: one character is no input.
    const auto characters = std::count_if(text.begin(), text.end(), [](char ch) {
      return (static_cast<unsigned char>(ch) & 0xC0) != 0x80;  // UTF-8 lead bytes: one per character
    });
    if (characters < 2) {
      return makeError("--text '" + text + "' has " + std::to_string(characters) +
                       " character; this checkpoint's text task needs at least 2 (it predicts each character "
                       "from the ones before it)");
    }
    auto task = Task::makeText(1, c.alphabet, text);
    if (!task) return task.error();
    const std::vector<int>& ids = task->textTokens();
    const int T = std::min(static_cast<int>(ids.size()), c.params.cfg.seqLen);
    out.batch = Batch{1, T, std::vector<int>(ids.begin(), ids.begin() + T), std::vector<int>(static_cast<std::size_t>(T), -1)};
    std::vector<std::string> row;
    for (int t = 0; t < T; ++t) row.push_back(task->symbol(ids[static_cast<std::size_t>(t)]));
    out.labels.push_back(std::move(row));
    return out;
  }
  auto task = Task::make(c.task);
  if (!task) return task.error();
  out.batch = task->probe(c.seed, items);
  for (int b = 0; b < items; ++b) {
    std::vector<std::string> row;
    for (int t = 0; t < out.batch.seq; ++t) row.push_back(task->symbol(out.batch.tokens[static_cast<std::size_t>(b * out.batch.seq + t)]));
    out.labels.push_back(std::move(row));
  }
  return out;
}

}  // namespace mhascope::train
