// Next-token predictions and the logit lens (see predictions.hpp).
#include "model/predictions.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mhascope::model {

namespace {

// The softmax's shift and normaliser of one row: p_v = exp(logit_v - max) / sum.
struct Softmax {
  double max = -INFINITY, sum = 0;
  double probability(float logit) const { return std::exp(static_cast<double>(logit) - max) / sum; }
};

Softmax softmaxOf(const float* logits, int V) {
  Softmax s;
  for (int v = 0; v < V; ++v) s.max = std::max(s.max, static_cast<double>(logits[v]));
  for (int v = 0; v < V; ++v) s.sum += std::exp(static_cast<double>(logits[v]) - s.max);
  return s;
}

// The first largest entry: the smaller id wins a tie.
int argmax(const float* logits, int V) {
  int best = 0;
  for (int v = 1; v < V; ++v) {
    if (logits[v] > logits[best]) best = v;
  }
  return best;
}

}  // namespace

std::vector<Candidate> topK(const float* logits, int V, int k) {
  const int n = std::max(0, std::min(k, V));
  std::vector<Candidate> out;
  if (n == 0) return out;
  const Softmax sm = softmaxOf(logits, V);
  std::vector<int> order(static_cast<std::size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + n, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (int i = 0; i < n; ++i) {
    const int v = order[static_cast<std::size_t>(i)];
    out.push_back({v, logits[v], sm.probability(logits[v])});
  }
  return out;
}

std::vector<std::vector<Candidate>> predictNext(const Tensor& logits, int k) {
  const int T = static_cast<int>(logits.dim(0)), V = static_cast<int>(logits.dim(1));
  std::vector<std::vector<Candidate>> out;
  out.reserve(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) out.push_back(topK(logits.ptr() + static_cast<std::int64_t>(t) * V, V, k));
  return out;
}

Result<LogitLens> logitLens(const ModelFolder& model, const ForwardResult& forward,
                            const std::function<bool(int layersDone)>& progress) {
  const ModelSpec& s = model.spec();
  const int L = static_cast<int>(forward.hidden.size());
  if (L != s.layers) {
    return makeError("the logit lens needs every layer's residual stream (" + std::to_string(s.layers) +
                     " layers), the forward kept " + std::to_string(L) + ": run it with keepHidden");
  }
  const int T = static_cast<int>(forward.logits.dim(0)), V = s.vocab, d = s.dModel;
  LogitLens lens;
  lens.layers = L;
  lens.positions = T;
  for (int t = 0; t < T; ++t) lens.finalTop.push_back(argmax(forward.logits.ptr() + static_cast<std::int64_t>(t) * V, V));
  lens.cells.resize(static_cast<std::size_t>(L) * static_cast<std::size_t>(T));
  RowMatrix logits;  // (rows, V), reused across blocks
  for (int l = 0; l < L; ++l) {
    const Tensor& h = forward.hidden[static_cast<std::size_t>(l)];  // (T, d_model)
    for (int t0 = 0; t0 < T; t0 += kLensRows) {
      const int rows = std::min(kLensRows, T - t0);
      const RowMatrix x = ConstMatrixMap(h.ptr() + static_cast<std::int64_t>(t0) * d, rows, d);
      if (auto st = finalLogits(model, x, logits); !st) return st.error();
      for (int r = 0; r < rows; ++r) {
        const float* row = logits.data() + static_cast<std::int64_t>(r) * V;
        const Softmax sm = softmaxOf(row, V);
        const int top = argmax(row, V);
        const int t = t0 + r;
        LensCell& c = lens.cells[static_cast<std::size_t>(l) * static_cast<std::size_t>(T) + static_cast<std::size_t>(t)];
        c.top = {top, row[top], sm.probability(row[top])};
        c.finalTopProbability = sm.probability(row[lens.finalTop[static_cast<std::size_t>(t)]]);
      }
    }
    if (progress && !progress(l + 1)) return makeError(kForwardCancelled);
  }
  return lens;
}

}  // namespace mhascope::model
