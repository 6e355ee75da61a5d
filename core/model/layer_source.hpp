// Layer L of a model folder as mhascope's engine runs it, ready for the pipeline: the layers before it
// run through the model's own forward (forward.hpp), and what reaches layer L's attention — its normed
// input, its weights and the options the architecture decides — is handed over as the engine's inputs,
// so forward(inputs, weights, options) records every stage of that layer on the real hidden states.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// Layer L's attention of a model folder on some tokens, as mhascope's engine runs it: the layer's normed input is
// the query, key and value (1, T, d_model), the layer's attention weights, and the options the architecture decides
// (h, N K/V heads, causal, RoPE base/style/frequencies, Mistral's window, the memory budget).
struct LayerAttention {
  AttentionInputs inputs;
  std::shared_ptr<const MhaWeights> weights;
  AttentionOptions options;
  int layer = 0;
};

// Runs layers 0 .. L-1 (opt.progress is called for them; budget checked as runForward does) and stops before layer L's
// attention. opt.tokenLabels label the tokens (empty: the ids); opt.threads and opt.memoryBudgetBytes go into the
// options. A layer outside 0 .. L-1 is refused naming n_layer / num_hidden_layers and the config.
// forward(result.inputs, result.weights, result.options, trace) records exactly what
// runForward(traceLayer = L).trace records.
Result<LayerAttention> layerAttention(const ModelFolder& model, const std::vector<int>& tokens, int layer,
                                      const ForwardOptions& opt);

// Why layer L of a latent-attention model (ModelSpec::latent) cannot be re-run as W_q, W_k, W_v attention: what
// re-runs a layer with changed weights or options (the lessons that re-run it, edited scores, Compare's changed copy)
// refuses with this, while its pass itself is the model's own forward's record (runForward's traced layer).
std::string latentRerunRefusal(const ModelSpec& spec, int layer);

}  // namespace mhascope::model
