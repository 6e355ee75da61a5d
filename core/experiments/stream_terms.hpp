// The residual stream as the sum of what wrote it. Before layer l, at position t, a model whose blocks add their
// sublayers' outputs to the stream as they are holds
//   x_l[t] = e_tok[t] + e_pos[t] + Σ_{l' < l} ( Σ_i o_{l',i}[t] W_o^{(l',i)} + b_o^{(l')} + mlp_{l'}[t] )
// (e_pos: a family with learned positions; o_{l',i} W_o^{(l',i)}: head i's A V, with the values' bias, times its
// d_k rows of W_o; mlp: the MLP's output with its biases, a mixture's routed sum). l = L is the final stream.
// One forward with read hooks records each term at the positions asked for; direct logit attribution reads them
// through the final norm, the QK score decomposition through layer l's input norm and W_q, W_k.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "util/result.hpp"

namespace mhascope::experiments {

using TermMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class WriterKind { TokenEmbedding, PositionEmbedding, Head, OutputBias, Mlp };
struct StreamWriter {
  WriterKind kind = WriterKind::TokenEmbedding;
  int layer = -1, head = -1;  // Head: both; OutputBias, Mlp: the layer
};
// "token embedding", "position embedding", "head 0.3", "output bias 0", "MLP 1"
std::string writerName(const StreamWriter& w);

struct StreamTerms {
  int layer = 0;                           // the stream before this layer (L: the final stream)
  std::vector<StreamWriter> writers;       // (C) in the stream's order: embeddings, then per layer its heads, b_o, MLP
  std::vector<std::int64_t> positions;     // (P) the positions asked for
  std::vector<TermMatrix> terms;           // P × (C, d_model): row c what writer c wrote at that position
  TermMatrix stream;                       // (P, d_model) the forward's own stream there
  model::ForwardResult run;                // the forward (its logits; hidden with keepHidden)
  // The largest |Σ_c terms − stream| over the rows: float rounding only, the check that the writers are all of them.
  double largestGap() const;
};

// Whether the family's stream is such a sum (its blocks add their sublayers' outputs as they are); the message says
// why not, `what` naming the experiment ("direct logit attribution").
Status checkAdditiveStream(const model::ModelSpec& spec, const std::string& what);

// One forward over `tokens` with `opt` (its hook, when set, is called too, after this one's reads), keeping the
// terms of the stream before layer `layer` (0 .. L) at `positions` (each in [0, T)).
Result<StreamTerms> streamTerms(const model::ModelFolder& model, const std::vector<int>& tokens, int layer,
                                const std::vector<std::int64_t>& positions, model::ForwardOptions opt);

}  // namespace mhascope::experiments
