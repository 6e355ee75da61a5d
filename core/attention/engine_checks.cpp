// The engine's checks and estimates (see engine.hpp): sizes and inputs validated with every
// problem named, the memory and FLOP estimates, seeded weight initialisation, and the scan for
// NaN/Inf in a recorded trace. The forward pass itself is engine.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention/engine.hpp"
#include "attention/random.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] validation and estimates
// ---------------------------------------------------------------------------------------------

namespace {
// h·d_k, the width of the query heads side by side (d_model unless the heads are set wider or
// narrower); K and V are counted as wide (N·d_k is at most that).
double headsWidth(std::int64_t dModel, std::int64_t heads, std::int64_t headDim) {
  return headDim > 0 ? static_cast<double>(heads) * static_cast<double>(headDim) : static_cast<double>(dModel);
}
}  // namespace

double estimateTraceBytes(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel,
                          std::int64_t heads, std::int64_t headDim) {
  const double b = static_cast<double>(batch), q = static_cast<double>(tq), k = static_cast<double>(tk),
               d = static_cast<double>(dModel), h = static_cast<double>(heads), hq = headsWidth(dModel, heads, headDim);
  const double qSide = b * q * (2 * d + 4 * hq);   // query, output; q_proj, q_heads, head_outputs, concat
  const double kvSide = b * k * (2 * d + 4 * hq);  // key, value; k_proj, v_proj, k_heads, v_heads
  // scores and weights; scaled_scores and masked_scores are derived from the scores when read
  // (Trace::isLazy) and hold no table
  const double scoreLike = b * h * q * k;
  // W_q, W_k, W_v, W_o and biases, kept for the Learned view: a copy; or shared with the caller's
  // model (the window's, counted with the model), and then the trace's engine holds them packed for
  // the head kernels instead (kernels::Scratch: whole 64-column strips, so d_model rounded up to 64
  // columns). The larger of the two. Each trace is counted with its engine's working copies.
  const auto strip = [](double c) { return std::ceil(c / 64.0) * 64.0; };
  const double recordedWeights = 3 * strip(hq) * d + strip(d) * hq + 3 * hq + d;
  // The keys transposed for the scores kernel (kernels::Scratch): k_heads with T_k rounded up to 64.
  const double packedKeys = b * std::ceil(k / 64.0) * 64.0 * hq;
  const double floats = qSide + kvSide + 2 * scoreLike + recordedWeights + packedKeys;
  return floats * 4.0 + b * q * k /* blocked flags */;
}

MemoryEstimate estimateMemory(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel,
                              std::int64_t heads, const MemoryUse& use) {
  const double b = static_cast<double>(batch), q = static_cast<double>(tq), k = static_cast<double>(tk),
               d = static_cast<double>(dModel), h = static_cast<double>(heads),
               hq = headsWidth(dModel, heads, use.headDim);
  // A token label is a std::string (32 bytes, longer words on the heap): 40 bytes each.
  const double labels = 40.0 * b * (q + k);
  MemoryEstimate e;
  e.models = use.models;
  e.traces = use.traces;
  // Query, key and value are three buffers even for self-attention (the model copies them);
  // the key padding mask (B, T_k) and attention mask (T_q, T_k) are floats.
  e.inputs = 4.0 * (b * q * d + 2 * b * k * d + b * k + q * k) + labels;
  if (use.scoreOverride) e.inputs += 4.0 * b * h * q * k;
  e.weights = 4.0 * (4 * d * hq + 3 * hq + d);  // W_q, W_k, W_v (d_model, h·d_k), W_o (h·d_k, d_model), biases
  e.trace = estimateTraceBytes(batch, tq, tk, dModel, heads, use.headDim) + labels + b * q /* fully masked flags */;
  if (use.weightsFile) e.files += 2 * e.weights;  // state_dict copy + its encoded bytes
  // The largest stage's file bytes, and a lazy stage's table made for its file (run --dump).
  if (use.stageFile) e.files += 4.0 * std::max(b * h * q * k, b * std::max(q, k) * std::max(d, hq)) + 4.0 * b * h * q * k;
  // The variants' stages: rotated q and k, ALiBi's bias (h, T_q, T_k), the window mask (T_q, T_k).
  if (use.qkNorm) e.trace += 4.0 * (b * q * hq + b * k * hq);
  if (use.rotary) e.trace += 4.0 * (b * q * hq + b * k * hq);
  if (use.positionBias) e.trace += 4.0 * h * q * k;
  if (use.windowMask) e.trace += 4.0 * q * k;
  if (use.firstHead) e.firstHead = 5.0 * q * k + labels / b + b * q * k + 4.0 * 4.0 * (b * q * hq + b * k * hq);
  if (use.exportSlices > 0) {
    // The largest slice is max(T_q, T_k) x max(T_q, T_k, d_model) cells. A picture is at most
    // 8000 px a side (cells up to 56 px): its RGB surface, plus about 64 bytes a cell of paths and
    // vector output (measured: T = 1024 as SVG, ~40 bytes a cell).
    const double cells = use.exportSlices * std::max(q, k) * std::max({q, k, d});
    e.files += 4.0 * std::min(8000.0 * 8000.0, cells * 56 * 56) + 64.0 * cells;
    e.files += 4.0 * use.exportSlices * q * k;  // a lazy stage's slices own their numbers
  }
  return e;
}

std::string MemoryEstimate::describe() const {
  std::string s = "inputs " + formatBytes(inputs) + " + weights " + formatBytes(weights);
  if (models != 1) s = std::to_string(models) + " models × (" + s + ")";
  s += " + " + std::to_string(traces) + (traces == 1 ? " trace × " : " traces × ") + formatBytes(trace);
  if (files > 0) s += " + file buffers " + formatBytes(files);
  if (firstHead > 0) s += " + first picture " + formatBytes(firstHead);
  return s;
}

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::vector<int> nearestValidHeads(int dModel, int heads, std::size_t count) {
  std::vector<int> divisors;
  for (int d = 1; d <= dModel; ++d) {
    if (dModel % d == 0) divisors.push_back(d);
  }
  std::stable_sort(divisors.begin(), divisors.end(),
                   [heads](int a, int b) { return std::abs(a - heads) < std::abs(b - heads); });
  if (divisors.size() > count) divisors.resize(count);
  std::sort(divisors.begin(), divisors.end());
  return divisors;
}

namespace {

std::string joinInts(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += (i + 1 == v.size()) ? " or " : ", ";
    s += std::to_string(v[i]);
  }
  return s;
}

constexpr std::int64_t kMaxDim = 1 << 20;  // no single size beyond ~1M; catches absurd values early

}  // namespace

Status validateSizes(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel, std::int64_t heads,
                     std::uint64_t memoryBudgetBytes, const MemoryUse& use) {
  if (dModel <= 0) return makeError("d_model must be at least 1, got " + std::to_string(dModel));
  if (heads <= 0) return makeError("heads (h) must be at least 1, got " + std::to_string(heads));
  if (tq <= 0) return makeError("enter at least one token (T_q is " + std::to_string(tq) + ")");
  if (tk <= 0) return makeError("enter at least one key/value token (T_k is " + std::to_string(tk) + ")");
  if (batch <= 0) return makeError("batch size B must be at least 1, got " + std::to_string(batch));
  const struct {
    const char* name;
    std::int64_t v;
  } dims[] = {{"d_model", dModel}, {"heads (h)", heads}, {"T_q", tq}, {"T_k", tk}, {"batch size B", batch}};
  for (const auto& d : dims) {
    if (d.v > kMaxDim) {
      return makeError(std::string(d.name) + " (" + std::to_string(d.v) + ") is larger than the limit of " +
                       std::to_string(kMaxDim));
    }
  }
  if (use.headDim < 0 || use.headDim > kMaxDim) {
    return makeError("d_k must be at least 1 and at most " + std::to_string(kMaxDim) + ", got " +
                     std::to_string(use.headDim));
  }
  if (use.headDim == 0 && heads > dModel) {
    return makeError("heads (" + std::to_string(heads) + ") cannot exceed d_model (" + std::to_string(dModel) +
                     "): each head needs d_k = d_model / h >= 1");
  }
  if (use.headDim == 0 && dModel % heads != 0) {
    const auto near = nearestValidHeads(static_cast<int>(dModel), static_cast<int>(heads));
    return makeError("d_model (" + std::to_string(dModel) + ") must be divisible by heads (" + std::to_string(heads) +
                     ") so every head gets d_k = d_model / h columns; nearest valid heads: " + joinInts(near) +
                     " (or give the heads a width d_k of their own)");
  }
  const MemoryEstimate need = estimateMemory(batch, tq, tk, dModel, heads, use);
  if (need.total() > static_cast<double>(memoryBudgetBytes)) {
    return makeError("this configuration needs about " + formatBytes(need.total()) + " (" + need.describe() +
                     "; B*h*T_q*T_k = " + std::to_string(batch) + "*" + std::to_string(heads) + "*" +
                     std::to_string(tq) + "*" + std::to_string(tk) + " scores, 2 tables per trace; 4*d_model*h*d_k = 4*" +
                     std::to_string(dModel) + "*" + std::to_string(heads * (use.headDim > 0 ? use.headDim : dModel / heads)) +
                     " weights), more than the memory budget of " +
                     formatBytes(static_cast<double>(memoryBudgetBytes)) +
                     "; use fewer tokens, heads or a smaller d_model, or raise the budget (--memory-budget MiB)");
  }
  return Ok{};
}

Status validateVariants(std::int64_t dModel, const AttentionOptions& opt) {
  const int h = opt.heads, n = kvHeadsOf(opt);
  if (opt.kvHeads < 0) return makeError("kv heads (N) must be at least 1, got " + std::to_string(opt.kvHeads));
  if (n > h || h % n != 0) {
    std::vector<int> valid;
    for (int i = 1; i <= h; ++i) {
      if (h % i == 0) valid.push_back(i);
    }
    return makeError("kv heads (N = " + std::to_string(n) + ") must divide heads (h = " + std::to_string(h) +
                     ") so every K/V head serves h/N query heads; valid N: " + joinInts(valid));
  }
  if (opt.headDim < 0) return makeError("d_k must be at least 1, got " + std::to_string(opt.headDim));
  const std::int64_t dk = headDimOf(opt, dModel);
  // How d_k came about, for the messages below.
  const std::string dkIs = opt.headDim > 0 ? "d_k = " + std::to_string(dk)
                                           : "d_k = d_model / h = " + std::to_string(dModel) + " / " + std::to_string(h) +
                                                 " = " + std::to_string(dk);
  if (opt.positions == AttnPositions::Rope) {
    if (dk % 2 != 0) return makeError("RoPE turns pairs of features, so d_k must be even; " + dkIs);
    if (!(opt.ropeBase > 0.0f) || !std::isfinite(opt.ropeBase)) {
      return makeError("the RoPE base must be a positive finite number, got " + std::to_string(opt.ropeBase));
    }
    const auto given = static_cast<std::int64_t>(opt.ropeInvFreq.size());
    if (given > 0 && given != dk / 2) {
      return makeError("RoPE frequencies: " + std::to_string(given) + " given, but d_k/2 = " + std::to_string(dk / 2) +
                       " pairs turn (" + dkIs + ")");
    }
    for (std::size_t i = 0; i < opt.ropeInvFreq.size(); ++i) {
      if (!std::isfinite(opt.ropeInvFreq[i])) {
        return makeError("RoPE frequency " + std::to_string(i) + " must be a finite number, got " +
                         std::to_string(opt.ropeInvFreq[i]));
      }
    }
  } else if (!opt.ropeInvFreq.empty()) {
    return makeError("RoPE frequencies (" + std::to_string(opt.ropeInvFreq.size()) +
                     " given) apply to RoPE only, but the positions are not RoPE");
  }
  if (!(opt.ropeGain > 0.0f) || !std::isfinite(opt.ropeGain)) {
    return makeError("RoPE's gain (YaRN's attention factor) must be a positive finite number, got " +
                     std::to_string(opt.ropeGain));
  }
  // q/k norm: gains of d_k (per head) or of the whole projection's width, both or neither.
  if (!opt.qNorm.empty() || !opt.kNorm.empty()) {
    const auto fits = [dk](const std::vector<float>& g, std::int64_t heads) {
      return static_cast<std::int64_t>(g.size()) == dk || static_cast<std::int64_t>(g.size()) == heads * dk;
    };
    if (!fits(opt.qNorm, h) || !fits(opt.kNorm, n)) {
      return makeError("q/k norm gains: " + std::to_string(opt.qNorm.size()) + " for q and " +
                       std::to_string(opt.kNorm.size()) + " for k, but a norm per head takes d_k each and one over "
                       "the whole projection h·d_k = " + std::to_string(h * dk) + " and N·d_k = " +
                       std::to_string(n * dk) + " (" + dkIs + ")");
    }
    for (const std::vector<float>* g : {&opt.qNorm, &opt.kNorm}) {
      for (std::size_t i = 0; i < g->size(); ++i) {
        if (!std::isfinite((*g)[i])) {
          return makeError(std::string(g == &opt.qNorm ? "q" : "k") + " norm gain " + std::to_string(i) +
                           " must be a finite number, got " + std::to_string((*g)[i]));
        }
      }
    }
    if (!(opt.qkNormEps >= 0.0f) || !std::isfinite(opt.qkNormEps)) {
      return makeError("the q/k norm's eps must be a finite number >= 0, got " + std::to_string(opt.qkNormEps));
    }
  }
  if (opt.scale == ScaleKind::Given && (!(opt.scaleFactor > 0.0f) || !std::isfinite(opt.scaleFactor))) {
    return makeError("the given scale factor must be a positive finite number, got " + std::to_string(opt.scaleFactor));
  }
  if (!(opt.softcap >= 0.0f) || !std::isfinite(opt.softcap)) {
    return makeError("the softcap c must be a positive finite number (0: none), got " + std::to_string(opt.softcap));
  }
  if (opt.window < 0) return makeError("the sliding window W must be at least 1, got " + std::to_string(opt.window));
  if (opt.sinks < 0) return makeError("the number of sinks S must be 0 or more, got " + std::to_string(opt.sinks));
  if (opt.sinks > 0 && opt.window == 0) {
    return makeError("sinks (S = " + std::to_string(opt.sinks) + ") keep keys visible past a sliding window: give a "
                     "window W as well");
  }
  // The learned sink: one logit per query head, finite or -inf (that head has none).
  if (!opt.sinkLogits.empty()) {
    if (static_cast<std::int64_t>(opt.sinkLogits.size()) != h) {
      return makeError("learned sinks: " + std::to_string(opt.sinkLogits.size()) + " logits given, but there are h = " +
                       std::to_string(h) + " heads (one logit each)");
    }
    for (std::size_t i = 0; i < opt.sinkLogits.size(); ++i) {
      const float s = opt.sinkLogits[i];
      if (std::isnan(s) || s == std::numeric_limits<float>::infinity()) {
        return makeError("the learned sink of head " + std::to_string(i) + " must be a finite number (or -inf: none), got " +
                         std::to_string(s));
      }
    }
  }
  return Ok{};
}

MemoryUse withVariants(MemoryUse use, const AttentionOptions& opt) {
  use.qkNorm = use.qkNorm || !opt.qNorm.empty();
  use.rotary = use.rotary || opt.positions == AttnPositions::Rope;
  use.positionBias = use.positionBias || opt.positions == AttnPositions::Alibi;
  use.windowMask = use.windowMask || opt.window > 0;
  if (opt.headDim > 0) use.headDim = opt.headDim;
  return use;
}

Status validate(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt) {
  auto check3 = [](const Tensor& t, const char* name) -> Status {
    if (t.rank() != 3) {
      return makeError(std::string(name) + " must have 3 axes (B, T, d_model), got shape " + shapeToString(t.shape));
    }
    if (static_cast<std::int64_t>(t.data.size()) != t.numel()) {
      return makeError(std::string(name) + " holds " + std::to_string(t.data.size()) + " values but its shape " +
                       shapeToString(t.shape) + " needs " + std::to_string(t.numel()));
    }
    return Ok{};
  };
  if (auto s = check3(in.query, "query"); !s) return s;
  if (auto s = check3(in.key, "key"); !s) return s;
  if (auto s = check3(in.value, "value"); !s) return s;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), d = in.query.dim(2);
  const auto Tk = in.key.dim(1);
  MemoryUse use = withVariants({}, opt);  // (with d_k, which validateSizes reads)
  use.scoreOverride = opt.scoresOverride.has_value();
  if (auto s = validateSizes(B, Tq, Tk, d, opt.heads, opt.memoryBudgetBytes, use); !s) return s;
  if (auto s = validateVariants(d, opt); !s) return s;
  if (in.key.dim(0) != B || in.value.dim(0) != B) {
    return makeError("batch sizes differ: query has B = " + std::to_string(B) + ", key " +
                     std::to_string(in.key.dim(0)) + ", value " + std::to_string(in.value.dim(0)));
  }
  if (in.key.dim(2) != d || in.value.dim(2) != d) {
    return makeError("d_model differs: query has " + std::to_string(d) + ", key " + std::to_string(in.key.dim(2)) +
                     ", value " + std::to_string(in.value.dim(2)));
  }
  if (in.value.dim(1) != Tk) {
    return makeError("key and value must have the same number of tokens T_k: key has " + std::to_string(Tk) +
                     ", value " + std::to_string(in.value.dim(1)));
  }
  if (w.dModel != d) {
    return makeError("the weights are for d_model = " + std::to_string(w.dModel) + " but the input has d_model = " +
                     std::to_string(d));
  }
  const std::int64_t dk = headDimOf(opt, d), qWidth = opt.heads * dk;
  if (w.wq.rows() != d || w.wq.cols() != qWidth) {
    return makeError("W_q must be (d_model, h*d_k) = (" + std::to_string(d) + ", " + std::to_string(qWidth) + ") for h = " +
                     std::to_string(opt.heads) + " heads of d_k = " + std::to_string(dk) + ", got (" +
                     std::to_string(w.wq.rows()) + ", " + std::to_string(w.wq.cols()) + ")");
  }
  if (w.wo.rows() != qWidth || w.wo.cols() != d) {
    return makeError("W_o must be (h*d_k, d_model) = (" + std::to_string(qWidth) + ", " + std::to_string(d) +
                     "), got (" + std::to_string(w.wo.rows()) + ", " + std::to_string(w.wo.cols()) + ")");
  }
  const std::int64_t kvWidth = static_cast<std::int64_t>(kvHeadsOf(opt)) * dk;
  for (const RowMatrix* m : {&w.wk, &w.wv}) {
    if (m->rows() != d || m->cols() != kvWidth) {
      return makeError("W_k and W_v must be (d_model, N*d_k) = (" + std::to_string(d) + ", " + std::to_string(kvWidth) +
                       ") for N = " + std::to_string(kvHeadsOf(opt)) + " kv heads, got (" + std::to_string(m->rows()) +
                       ", " + std::to_string(m->cols()) + ")");
    }
  }
  if (w.bq.size() != qWidth) return makeError("b_q does not have h*d_k entries");
  if (w.bo.size() != d) return makeError("b_o does not have d_model entries");
  for (const RowVector* b : {&w.bk, &w.bv}) {
    if (b->size() != kvWidth) return makeError("b_k or b_v does not have N*d_k entries");
  }
  if (opt.keyPaddingMask) {
    const Shape want{B, Tk};
    if (opt.keyPaddingMask->shape != want) {
      return makeError("key padding mask has shape " + shapeToString(opt.keyPaddingMask->shape) +
                       " but must be (B, T_k) = " + shapeToString(want));
    }
  }
  if (opt.attnMask) {
    const Shape want{Tq, Tk};
    if (opt.attnMask->shape != want) {
      return makeError("attention mask has shape " + shapeToString(opt.attnMask->shape) +
                       " but must be (T_q, T_k) = " + shapeToString(want));
    }
  }
  if (opt.scoresOverride) {
    const Shape perHead{opt.heads, Tq, Tk}, perItem{B, opt.heads, Tq, Tk};
    if (opt.scoresOverride->shape != perHead && opt.scoresOverride->shape != perItem) {
      return makeError("score override has shape " + shapeToString(opt.scoresOverride->shape) +
                       " but must be (h, T_q, T_k) = " + shapeToString(perHead) + " or (B, h, T_q, T_k) = " +
                       shapeToString(perItem));
    }
    for (float v : opt.scoresOverride->data) {
      if (std::isinf(v)) return makeError("score override holds an infinite value; use the mask to block keys");
    }
  }
  auto checkTokens = [](const std::vector<std::vector<std::string>>& labels, std::int64_t b, std::int64_t t,
                        const char* which) -> Status {
    if (labels.empty()) return Ok{};
    bool okShape = static_cast<std::int64_t>(labels.size()) == b;
    for (const auto& row : labels) okShape = okShape && static_cast<std::int64_t>(row.size()) == t;
    if (!okShape) return makeError(std::string(which) + " token labels do not match the input's (B, T)");
    return Ok{};
  };
  if (auto s = checkTokens(in.queryTokens, B, Tq, "query"); !s) return s;
  if (auto s = checkTokens(in.keyTokens, B, Tk, "key"); !s) return s;
  return Ok{};
}

FlopCount countFlops(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel, std::int64_t heads,
                     std::int64_t kvHeads, std::int64_t dk) {
  if (heads < 1) return {};
  return layerCounts({dModel, heads, kvHeads, dk, false}).flops(batch, tq, tk);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] initialisation
// ---------------------------------------------------------------------------------------------

MhaWeights initWeights(int dModel, bool bias, std::uint64_t seed, int kvWidth, int qWidth) {
  MhaWeights w;
  w.dModel = dModel;
  w.hasBias = bias;
  const int q = qWidth > 0 ? qWidth : dModel;  // h * d_k
  const int kv = kvWidth > 0 ? kvWidth : q;    // N * d_k
  SplitMix64 rng(seed ^ 0x6D686173636F7065ull);  // "mhascope": weights and embeddings use different streams
  const float bound = std::sqrt(3.0f / static_cast<float>(dModel));
  for (RowMatrix* m : {&w.wq, &w.wk, &w.wv, &w.wo}) {
    if (m == &w.wo) {
      m->resize(q, dModel);
    } else {
      m->resize(dModel, m == &w.wq ? q : kv);
    }
    for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = rng.uniform(-bound, bound);
  }
  for (RowVector* b : {&w.bq, &w.bk, &w.bv, &w.bo}) {
    b->setZero(b == &w.bk || b == &w.bv ? kv : b == &w.bq ? q : dModel);
    if (bias) {
      for (Eigen::Index i = 0; i < b->size(); ++i) (*b)[i] = rng.uniform(-0.1f, 0.1f);
    }
  }
  return w;
}

std::vector<NonFiniteStage> nonFiniteStages(const Trace& trace) {
  std::vector<NonFiniteStage> out;
  const std::size_t perItem = static_cast<std::size_t>(trace.tq) * static_cast<std::size_t>(trace.tk);
  for (const Stage& st : trace.stages) {
    NonFiniteStage n{st.id};
    const bool masked = st.id == StageId::MaskedScores;
    const std::int64_t cells = trace.isLazy(st.id) ? st.tensor.numel() : static_cast<std::int64_t>(st.tensor.data.size());
    trace.forEachBlock(st.id, 0, cells, [&](const float* data, std::int64_t count, std::int64_t first) {
      for (std::int64_t j = 0; j < count; ++j) {
        const float v = data[j];
        if (std::isfinite(v)) continue;
        const auto i = static_cast<std::size_t>(first + j);
        if (masked && v == -std::numeric_limits<float>::infinity() && perItem > 0 && !trace.blocked.empty()) {
          // (B, h, T_q, T_k): cell i is (b, head, q, k); blocked is (B, T_q, T_k).
          const std::size_t b = i / (perItem * static_cast<std::size_t>(trace.heads));
          if (trace.blocked[b * perItem + i % perItem]) continue;
        }
        if (std::isnan(v)) ++n.nan; else ++n.inf;
        if (n.first < 0) n.first = static_cast<std::int64_t>(i);
      }
    });
    if (n.nan + n.inf > 0) out.push_back(n);
  }
  return out;
}

}  // namespace mhascope
