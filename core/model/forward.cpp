// A model folder's forward, one block at a time (see forward.hpp): each layer's weights are
// converted from the mapped file just before the layer runs and dropped after it, so the float
// copy of the model never exists whole.
#include "model/forward.hpp"

#include <cmath>
#include <new>

#include "util/format.hpp"

namespace mhascope::model {
namespace {

// RoPE in Hugging Face's rotate_half form with explicit frequencies (Llama 3's scaled ones):
// features i and i + d_k/2 of each row t turn by t · inv_freq_i.
void rotateHalf(float* x /*(T, d_k) rows with stride*/, std::int64_t T, std::int64_t dk, std::int64_t stride,
                const std::vector<double>& invFreq) {
  const std::int64_t half = dk / 2;
  for (std::int64_t t = 0; t < T; ++t) {
    float* row = x + t * stride;
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(t) * invFreq[static_cast<std::size_t>(i)];
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      const float a = row[i], b = row[i + half];
      row[i] = a * c - b * s;
      row[i + half] = b * c + a * s;
    }
  }
}

// Llama 3's scaled RoPE is not one of the engine's bases: the scores Q K^T are made here with the
// scaled rotation and handed to the engine as its hand-set scores, so scaling, masks, softmax,
// the weighted sum and the output projection stay the engine's. (h, T, T), raw (before / sqrt(d_k)).
Tensor scaledRopeScores(const RowMatrix& a /*(T, d_model)*/, const MhaWeights& w, const ModelSpec& spec) {
  const std::int64_t T = a.rows(), h = spec.heads, N = spec.kvHeads, dk = spec.dk();
  RowMatrix q = a * w.wq;  // (T, d_model)
  q.rowwise() += w.bq;
  RowMatrix k = a * w.wk;  // (T, N d_k)
  k.rowwise() += w.bk;
  const std::vector<double> inv = ropeInverseFrequencies(spec);
  for (std::int64_t i = 0; i < h; ++i) rotateHalf(q.data() + i * dk, T, dk, q.cols(), inv);
  for (std::int64_t g = 0; g < N; ++g) rotateHalf(k.data() + g * dk, T, dk, k.cols(), inv);
  Tensor scores({h, T, T}, {"h", "T_q", "T_k"});
  for (std::int64_t i = 0; i < h; ++i) {
    const std::int64_t g = i / (h / N);  // query head i reads K/V head i // (h/N)
    MatrixMap s(scores.ptr() + i * T * T, T, T);
    s.noalias() = q.middleCols(i * dk, dk) * k.middleCols(g * dk, dk).transpose();
  }
  return scores;
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

}  // namespace

void layerNorm(const RowMatrix& x, const RowVector& w, const RowVector& b, double eps, RowMatrix& out) {
  out.resize(x.rows(), x.cols());
  const double n = static_cast<double>(x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    double mean = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) mean += x(r, c);
    mean /= n;
    double var = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) var += (x(r, c) - mean) * (x(r, c) - mean);
    const double inv = 1.0 / std::sqrt(var / n + eps);
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      out(r, c) = static_cast<float>((x(r, c) - mean) * inv) * w(c) + b(c);
    }
  }
}

void rmsNorm(const RowMatrix& x, const RowVector& w, double eps, RowMatrix& out) {
  out.resize(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    double sq = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) sq += static_cast<double>(x(r, c)) * x(r, c);
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(x.cols()) + eps));
    for (Eigen::Index c = 0; c < x.cols(); ++c) out(r, c) = w(c) * (x(r, c) * inv);
  }
}

float geluTanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

double estimateForwardBytes(const ModelSpec& s, std::int64_t T, const ForwardOptions& opt) {
  const double f = 4.0, L = s.layers, h = s.heads, d = s.dModel, F = s.dFf, V = s.vocab, t = static_cast<double>(T);
  double bytes = 0;
  if (opt.keepAttention) bytes += L * h * t * t * f;
  if (opt.keepHidden) bytes += L * t * d * f;
  bytes += t * V * f;                                          // logits
  bytes += static_cast<double>(parameterCount(s) - static_cast<std::int64_t>(s.vocab) * s.dModel * (s.tiedEmbeddings ? 1 : 2)) /
           std::max(1, s.layers) * f;                          // one layer's weights in float
  bytes += t * (4 * d + 2 * F) * f + 4096.0 * d * f;           // x, norms, the MLP, an unembedding block
  const int traces = opt.traceLayer >= 0 ? 2 : 1;
  bytes += traces * estimateTraceBytes(1, T, T, s.dModel, s.heads);
  if (s.ropeScaling.enabled) bytes += h * t * t * f;           // the hand-set scores
  return bytes;
}

namespace {
// normed (T, d_model): the model's final norm of the residual stream x.
Status finalNorm(const ModelFolder& model, const RowMatrix& x, RowMatrix& normed) {
  const ModelSpec& spec = model.spec();
  RowVector nw, nb;
  if (auto s = model.finalNorm(nw, nb); !s) return s.error();
  if (spec.arch == Arch::Gpt2) layerNorm(x, nw, nb, spec.normEps, normed);
  else rmsNorm(x, nw, spec.normEps, normed);
  return Ok{};
}
}  // namespace

Status finalLogits(const ModelFolder& model, const RowMatrix& x, RowMatrix& logits) {
  RowMatrix normed;  // (T, d_model)
  if (auto s = finalNorm(model, x, normed); !s) return s;
  return model.unembed(normed, logits);
}

Result<ForwardResult> runForward(const ModelFolder& model, const std::vector<int>& tokens, const ForwardOptions& opt) {
  const ModelSpec& spec = model.spec();
  const std::int64_t T = static_cast<std::int64_t>(tokens.size()), d = spec.dModel;
  if (T == 0) return makeError("enter at least one token");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= spec.vocab) {
      return makeError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                       " is outside the vocabulary of " + std::to_string(spec.vocab) + " (" + model.dir() + ")");
    }
  }
  if (spec.arch == Arch::Gpt2 && T > spec.maxPositions) {
    return makeError(std::to_string(T) + " tokens are more than the " + std::to_string(spec.maxPositions) +
                     " positions GPT-2's learned table has (n_positions in " + model.dir() + "/config.json)");
  }
  if (opt.traceLayer >= spec.layers) {
    return makeError("layer " + std::to_string(opt.traceLayer) + " is outside the model's " +
                     std::to_string(spec.layers) + " layers (0 .. " + std::to_string(spec.layers - 1) + ")");
  }
  if (!opt.tokenLabels.empty() && static_cast<std::int64_t>(opt.tokenLabels.size()) != T) {
    return makeError(std::to_string(opt.tokenLabels.size()) + " token labels for " + std::to_string(T) + " tokens");
  }
  const double estimate = estimateForwardBytes(spec, T, opt);
  if (estimate > static_cast<double>(opt.memoryBudgetBytes)) {
    return makeError("the forward of " + std::to_string(T) + " tokens through " + std::to_string(spec.layers) +
                     " layers needs about " + formatBytes(estimate) + ", more than the memory budget of " +
                     formatBytes(static_cast<double>(opt.memoryBudgetBytes)) + " (raise it with --memory-budget MiB)");
  }

  try {
    ForwardResult out;
    out.traceLayer = opt.traceLayer;
    RowMatrix x;  // (T, d_model) the residual stream
    if (auto s = model.embed(tokens, x); !s) return s.error();

    AttentionInputs in;
    std::vector<std::string> labels = opt.tokenLabels;
    if (labels.empty()) {
      for (int id : tokens) labels.push_back(std::to_string(id));
    }
    in.queryTokens = {labels};
    in.keyTokens = {labels};
    in.selfAttention = true;
    AttentionOptions ao;
    ao.heads = spec.heads;
    ao.kvHeads = spec.kvHeads;
    ao.causal = true;
    ao.window = spec.window;
    ao.memoryBudgetBytes = opt.memoryBudgetBytes;
    ao.threads = opt.threads;
    if (spec.rope() && !spec.ropeScaling.enabled) {
      ao.positions = AttnPositions::Rope;
      ao.ropeBase = static_cast<float>(spec.ropeTheta);
      ao.ropeStyle = RopeStyle::Half;  // Hugging Face's rotate_half: pairs (i, i + d_k/2)
    }

    RowMatrix a, m, hmid, up;  // normed input (T, d_model); MLP (T, F)
    Trace scratch;             // the other layers' passes, buffers reused
    for (int l = 0; l < spec.layers; ++l) {
      auto lw = model.layer(l);
      if (!lw) return lw.error();
      // Attention on the normed stream, through the engine.
      if (spec.arch == Arch::Gpt2) layerNorm(x, lw->norm1, lw->norm1Bias, spec.normEps, a);
      else rmsNorm(x, lw->norm1, spec.normEps, a);
      in.query.reshape({1, T, d}, {"B", "T_q", "d_model"});
      std::copy(a.data(), a.data() + a.size(), in.query.data.begin());
      in.key = in.query;
      in.value = in.query;
      ao.recordEveryStage = l == opt.traceLayer;
      ao.scoresOverride.reset();
      if (spec.ropeScaling.enabled) ao.scoresOverride = scaledRopeScores(a, *lw->attention, spec);
      Trace& trace = l == opt.traceLayer ? out.trace : scratch;
      if (auto s = forward(in, std::shared_ptr<const MhaWeights>(lw->attention), ao, trace); !s) {
        return makeError("layer " + std::to_string(l) + ": " + s.error().message);
      }
      x += ConstMatrixMap(trace.tensor(StageId::Output).ptr(), T, d);
      if (opt.onAttention) opt.onAttention(l, trace.tensor(StageId::Weights));
      if (opt.keepAttention) {
        const Tensor& w = trace.tensor(StageId::Weights);  // (1, h, T, T)
        Tensor kept({spec.heads, T, T}, {"h", "T_q", "T_k"});
        std::copy(w.data.begin(), w.data.end(), kept.data.begin());
        out.attention.push_back(std::move(kept));
      }

      // The MLP on the normed stream.
      if (spec.arch == Arch::Gpt2) {
        layerNorm(x, lw->norm2, lw->norm2Bias, spec.normEps, m);
        hmid.noalias() = m * lw->mlpIn;
        hmid.rowwise() += lw->mlpInBias;
        hmid = hmid.unaryExpr([](float v) { return geluTanh(v); });
        x.noalias() += hmid * lw->mlpOut;
        x.rowwise() += lw->mlpOutBias;
      } else {
        rmsNorm(x, lw->norm2, spec.normEps, m);
        hmid.noalias() = m * lw->mlpIn;  // gate
        up.noalias() = m * lw->mlpUp;
        hmid = hmid.unaryExpr([](float v) { return silu(v); }).cwiseProduct(up);
        x.noalias() += hmid * lw->mlpOut;
      }
      if (opt.keepHidden) {
        Tensor hs({T, d}, {"T", "d_model"});
        std::copy(x.data(), x.data() + x.size(), hs.data.begin());
        out.hidden.push_back(std::move(hs));
      }
      if (opt.progress && !opt.progress(l + 1)) return makeError(kForwardCancelled);
    }

    // Written straight into the result: one (T, V) table, as estimateForwardBytes counts it.
    RowMatrix normed;  // (T, d_model)
    if (auto s = finalNorm(model, x, normed); !s) return s.error();
    out.logits = Tensor({T, spec.vocab}, {"T", "V"});
    if (auto s = model.unembedInto(normed, out.logits.data.data()); !s) return s.error();
    return out;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the forward of " + std::to_string(T) + " tokens (estimated " +
                     formatBytes(estimate) + ")");
  }
}

}  // namespace mhascope::model
