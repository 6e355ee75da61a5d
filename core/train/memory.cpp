// The training run's memory estimate and its check.
#include "train/memory.hpp"

#include <algorithm>

#include "attention/engine.hpp"

namespace mhascope::train {

namespace {

// Floats one forward (+ backward when `backward`) of n sequences keeps, besides the attention.
double forwardBytes(const TrainSettings& s, int vocab, double n, bool backward) {
  const double T = s.task.seq, d = s.model.dModel, L = s.model.layers, V = vocab, rows = n * T;
  // Per layer: LN1 cache (normalised rows + statistics) and, with the MLP, x_mid, LN2 cache,
  // its output, W1 x + b1 and GELU of it (4·d_model wide).
  const double perLayer = 2 * rows * d + (s.model.mlp ? rows * d + 2 * rows * d + rows * d + 8 * rows * d : 0);
  // The residual stream, its LayerNorm and the scratch rows; logits (and their gradient).
  double floats = L * perLayer + 4 * rows * d + rows * V;
  if (backward) {
    // d logits, and the backward's scratch: dx, tmp, dLn, dA, d concat, d QKV (3 d_model wide),
    // the MLP's (4 d_model wide, twice), and one (T, T) pair for the attention's gradient.
    floats += rows * V + 7 * rows * d + (s.model.mlp ? 8 * rows * d : 0) + 2 * T * T;
  }
  const double attention = L * [&] {
    MemoryUse use;  // RoPE records the turned q and k, ALiBi its bias table
    use.rotary = s.model.positions == TrainPositions::Rope;
    use.positionBias = s.model.positions == TrainPositions::Alibi;
    const MemoryEstimate e = estimateMemory(static_cast<std::int64_t>(n), s.task.seq, s.task.seq, s.model.dModel,
                                            std::max(1, s.model.heads), use);
    return e.inputs + e.trace;
  }();
  return 4.0 * floats + attention;
}

}  // namespace

std::string TrainMemoryEstimate::describe(int batch, int probeBatch) const {
  std::string out = "parameters and gradients " + formatBytes(parameters) + " + AdamW state " + formatBytes(optimizer) +
                    " + activations (B = " + std::to_string(batch) + ") " + formatBytes(activations) +
                    " + probe evaluation (" + std::to_string(probeBatch) + " sequences) " + formatBytes(probe) +
                    " + checkpoint " + formatBytes(checkpoint);
  if (text > 0) out += " + text " + formatBytes(text);
  return out;
}

TrainMemoryEstimate estimateTrainingMemory(const TrainSettings& s, int vocab, std::uint64_t textChars) {
  GptConfig g = s.model;
  g.vocab = vocab;
  g.seqLen = s.task.seq;
  const double P = static_cast<double>(paramCount(g)) * 4.0;
  TrainMemoryEstimate e;
  e.parameters = 3 * P;  // θ, gradients, the copy that undoes a non-finite step
  e.optimizer = 2 * P;
  e.checkpoint = 3 * P;
  e.activations = forwardBytes(s, vocab, std::max(1, s.batch), true);
  const double T = s.task.seq;
  e.probe = forwardBytes(s, vocab, std::max(1, s.probeBatch), false) +
            4.0 * s.model.layers * std::max(1, s.model.heads) * T * T;
  // The tokens (4 bytes a character) and, while it is read, the file (at most 4 bytes a character).
  e.text = 8.0 * static_cast<double>(textChars);
  return e;
}

Status checkTrainingMemory(const TrainSettings& s, int vocab, std::uint64_t textChars) {
  const TrainMemoryEstimate e = estimateTrainingMemory(s, vocab, textChars);
  const double budget = static_cast<double>(s.memoryBudgetBytes);
  if (e.total() <= budget) return Ok{};
  return makeError("this training run needs about " + formatBytes(e.total()) + " (" +
                   e.describe(s.batch, s.probeBatch) + "; vocab " + std::to_string(vocab) + ", T " +
                   std::to_string(s.task.seq) + ", d_model " + std::to_string(s.model.dModel) + ", h " +
                   std::to_string(s.model.heads) + ", " + std::to_string(s.model.layers) +
                   " layers), more than the memory budget of " + formatBytes(budget) +
                   "; use a smaller batch, T, d_model or vocabulary, or raise the budget (--memory-budget MiB)");
}

Status checkTrainingMemory(const TrainSettings& s) {
  auto task = Task::make(s.task);
  if (!task) return task.error();
  return checkTrainingMemory(s, task->vocab(), task->textTokens().size());
}

}  // namespace mhascope::train
