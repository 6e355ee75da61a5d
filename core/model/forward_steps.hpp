// The steps runForward is made of, shared with layerAttention (layer_source.cpp) so that the layers before
// a chosen one run through the very same code: the checks and the embedding, the loop over layers, and a
// layer's attention input (its first norm). Internal to mhascope_model.
#pragma once

#include <vector>

#include "model/forward.hpp"

namespace mhascope::model::detail {

// The forward's state between layers.
struct ForwardState {
  std::vector<int> tokens;   // the ids (kept when the forward uses a ResidualCache)
  RowMatrix x;               // (T, d_model) the residual stream
  AttentionInputs in;        // token labels; query = key = value = the layer's normed stream (1, T, d_model)
  AttentionOptions options;  // attentionOptionsFor(spec) with the forward's budget and threads
  Trace scratch;             // the unrecorded layers' passes, buffers reused
  RowMatrix a;               // (T, d_model) the attention's normed input
  RowMatrix m, hmid, up;     // the MLP's normed input (T, d_model), hidden (T, F), SwiGLU's up (T, F)
  RowMatrix routed;          // (T, d_model) a mixture's weighted sum of its experts' outputs
  // runLayers starts at this layer, x being the stream before it (a partial forward of a patching sweep).
  int firstLayer = 0;
  // Set: layer l's weights are (*layers)[l], converted once by the caller for many forwards; null: each layer's
  // are converted from the file as it runs.
  const std::vector<LayerWeights>* layers = nullptr;
  // x holds this many sequences of T tokens stacked, (batch·T, d_model): each has its own attention (causal, its
  // positions from 0) and every other step is row by row, so each sequence gets the numbers it would get alone, to
  // float rounding. A sweep runs several cells of one layer as one partial forward, sharing each weight matrix's
  // pass over its rows. The embedding, the traces, keepAttention and the residual cache are for one sequence only;
  // a latent-attention layer takes one sequence.
  int batch = 1;
};

// Bytes held at once (estimateForwardBytes); withLogits: the (T, V) logits are made as well.
double forwardBytes(const ModelSpec& spec, std::int64_t T, const ForwardOptions& opt, bool withLogits);

// The checks made before anything is allocated — token ids in [0, V), a learned table's positions, the labels' count,
// `estimate` within opt.memoryBudgetBytes — then x = embed(tokens) and the inputs' labels and options.
Status startForward(const ModelFolder& model, const std::vector<int>& tokens, const ForwardOptions& opt,
                    double estimate, ForwardState& st);

// Layer l's attention input: its first norm of x into st.in.query, key and value, and the layer's options
// (attentionOptionsFor(spec, l) with st.options' budget, threads and recording) into st.options.
void attentionInput(const ModelSpec& spec, const LayerWeights& lw, int layer, ForwardState& st);

// Layers 0 .. stop-1, each: x += attention(norm1(x)) through the engine, x += mlp(norm2(x)). What opt keeps
// goes to out (layer opt.traceLayer recorded into out.trace); opt.onAttention sees each layer's weights and
// opt.progress the layers done (false: the error kForwardCancelled). With opt.residuals, the kept streams
// stand in for the layers that made them (ForwardOptions::residuals) and every new one is kept.
Status runLayers(const ModelFolder& model, int stop, const ForwardOptions& opt, ForwardState& st, ForwardResult& out);

}  // namespace mhascope::model::detail
