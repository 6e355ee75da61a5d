// What a model predicts next, and what each of its layers would predict (the logit lens).
//
//   predictions: for each position t, the k most likely next tokens of logits[t] (V), with their
//                probabilities — a softmax over the whole vocabulary, in double after subtracting
//                the row max (only for numerical stability).
//   logit lens:  layer l's residual stream (ForwardResult::hidden[l], (T, d_model)) through the
//                model's own last step — the final norm, then the unembedding: what the model
//                would predict if it stopped after layer l. For each layer and position: that
//                layer's top-1 with its probability, and the probability it gives the token the
//                whole model finally ranks first (how early the final answer emerges). The last
//                layer's row is the model's own prediction.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attention/tensor.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::model {

struct Candidate {
  int id = 0;
  float logit = 0;
  double probability = 0;  // softmax over the whole vocabulary
};

// The k most likely entries of one logits row (V), best first; ties go to the smaller id, as
// argmax does, so the order is the same on every machine. k is clamped to [0, V].
std::vector<Candidate> topK(const float* logits /*(V)*/, int V, int k);

// The top-k of every row of logits (T, V): T × min(k, V).
std::vector<std::vector<Candidate>> predictNext(const Tensor& logits /*(T, V)*/, int k);

struct LensCell {
  Candidate top;                  // this layer's top-1 next token
  double finalTopProbability = 0;  // the probability this layer gives the model's final top-1
};

struct LogitLens {
  int layers = 0, positions = 0;  // L × T
  std::vector<int> finalTop;      // (T) the model's own top-1 per position (from the final logits)
  std::vector<LensCell> cells;    // (L, T) row-major
  const LensCell& at(int layer, int t) const {
    return cells[static_cast<std::size_t>(layer) * static_cast<std::size_t>(positions) + static_cast<std::size_t>(t)];
  }
};

// The logit lens of a forward run with keepHidden. Positions go through the unembedding a block
// of kLensRows at a time, so it holds (kLensRows, V) logits, never (T, V) per layer.
// `progress(layersDone)` after each layer; false stops it with the error kForwardCancelled.
inline constexpr int kLensRows = 128;
Result<LogitLens> logitLens(const ModelFolder& model, const ForwardResult& forward,
                            const std::function<bool(int layersDone)>& progress = {});

}  // namespace mhascope::model
