// The forward pass of multi-head attention, written in the order of the lesson:
// project → split heads → scores → scale → mask → softmax → weighted sum → merge heads →
// output projection. Every stage is written into the Trace as it is computed.
//
// [SECTION] validation and estimates
// [SECTION] initialisation
// [SECTION] one function per equation
// [SECTION] forward
#include "attention/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include <sys/mman.h>

#include "attention/gemm.hpp"
#include "attention/random.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] validation and estimates
// ---------------------------------------------------------------------------------------------

double estimateTraceBytes(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel,
                          std::int64_t heads) {
  const double b = static_cast<double>(batch), q = static_cast<double>(tq), k = static_cast<double>(tk),
               d = static_cast<double>(dModel), h = static_cast<double>(heads);
  const double qSide = b * q * d;   // query, q_proj, q_heads, head_outputs, concat, output
  const double kvSide = b * k * d;  // key, value, k_proj, v_proj, k_heads, v_heads
  const double scoreLike = b * h * q * k;  // scores, scaled_scores, masked_scores, weights
  const double recordedWeights = 4 * d * d + 4 * d;  // W_q, W_k, W_v, W_o and biases, kept for the Learned view
  const double floats = 6 * qSide + 6 * kvSide + 4 * scoreLike + recordedWeights;
  return floats * 4.0 + b * q * k /* blocked flags */;
}

MemoryEstimate estimateMemory(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel,
                              std::int64_t heads, const MemoryUse& use) {
  const double b = static_cast<double>(batch), q = static_cast<double>(tq), k = static_cast<double>(tk),
               d = static_cast<double>(dModel), h = static_cast<double>(heads);
  // A token label is a std::string (32 bytes, longer words on the heap): 40 bytes each.
  const double labels = 40.0 * b * (q + k);
  MemoryEstimate e;
  e.models = use.models;
  e.traces = use.traces;
  // Query, key and value are three buffers even for self-attention (the model copies them);
  // the key padding mask (B, T_k) and attention mask (T_q, T_k) are floats.
  e.inputs = 4.0 * (b * q * d + 2 * b * k * d + b * k + q * k) + labels;
  if (use.scoreOverride) e.inputs += 4.0 * b * h * q * k;
  e.weights = 4.0 * (4 * d * d + 4 * d);
  e.trace = estimateTraceBytes(batch, tq, tk, dModel, heads) + labels + b * q /* fully masked flags */;
  if (use.weightsFile) e.files += 2 * e.weights;  // state_dict copy + its encoded bytes
  if (use.stageFile) e.files += 4.0 * std::max(b * h * q * k, b * std::max(q, k) * d);
  if (use.exportSlices > 0) {
    // The largest slice is max(T_q, T_k) x max(T_q, T_k, d_model) cells. A picture is at most
    // 8000 px a side (cells up to 56 px): its RGB surface, plus about 64 bytes a cell of paths and
    // vector output (measured: T = 1024 as SVG, ~40 bytes a cell).
    const double cells = use.exportSlices * std::max(q, k) * std::max({q, k, d});
    e.files += 4.0 * std::min(8000.0 * 8000.0, cells * 56 * 56) + 64.0 * cells;
  }
  return e;
}

std::string MemoryEstimate::describe() const {
  std::string s = "inputs " + formatBytes(inputs) + " + weights " + formatBytes(weights);
  if (models != 1) s = std::to_string(models) + " models × (" + s + ")";
  s += " + " + std::to_string(traces) + (traces == 1 ? " trace × " : " traces × ") + formatBytes(trace);
  if (files > 0) s += " + file buffers " + formatBytes(files);
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
  if (heads > dModel) {
    return makeError("heads (" + std::to_string(heads) + ") cannot exceed d_model (" + std::to_string(dModel) +
                     "): each head needs d_k = d_model / h >= 1");
  }
  if (dModel % heads != 0) {
    const auto near = nearestValidHeads(static_cast<int>(dModel), static_cast<int>(heads));
    return makeError("d_model (" + std::to_string(dModel) + ") must be divisible by heads (" + std::to_string(heads) +
                     ") so every head gets d_k = d_model / h columns; nearest valid heads: " + joinInts(near));
  }
  const MemoryEstimate need = estimateMemory(batch, tq, tk, dModel, heads, use);
  if (need.total() > static_cast<double>(memoryBudgetBytes)) {
    return makeError("this configuration needs about " + formatBytes(need.total()) + " (" + need.describe() +
                     "; B*h*T_q*T_k = " + std::to_string(batch) + "*" + std::to_string(heads) + "*" +
                     std::to_string(tq) + "*" + std::to_string(tk) + " scores, 4 copies per trace; 4*d_model^2 = 4*" +
                     std::to_string(dModel) + "^2 weights), more than the memory budget of " +
                     formatBytes(static_cast<double>(memoryBudgetBytes)) +
                     "; use fewer tokens, heads or a smaller d_model, or raise the budget (--memory-budget MiB)");
  }
  return Ok{};
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
  MemoryUse use;
  use.scoreOverride = opt.scoresOverride.has_value();
  if (auto s = validateSizes(B, Tq, Tk, d, opt.heads, opt.memoryBudgetBytes, use); !s) return s;
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
  for (const RowMatrix* m : {&w.wq, &w.wk, &w.wv, &w.wo}) {
    if (m->rows() != d || m->cols() != d) return makeError("a weight matrix is not (d_model, d_model)");
  }
  for (const RowVector* b : {&w.bq, &w.bk, &w.bv, &w.bo}) {
    if (b->size() != d) return makeError("a bias vector does not have d_model entries");
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

FlopCount countFlops(std::int64_t batch, std::int64_t tq, std::int64_t tk, std::int64_t dModel, std::int64_t heads) {
  (void)heads;  // h * d_k = d_model: the attention cost does not depend on how d_model is split
  const double b = static_cast<double>(batch), q = static_cast<double>(tq), k = static_cast<double>(tk),
               d = static_cast<double>(dModel);
  FlopCount f;
  f.projections = 2.0 * b * (q * d * d /*Q*/ + 2.0 * k * d * d /*K,V*/ + q * d * d /*W_o*/);
  f.attention = 2.0 * b * (q * k * d /*Q K^T over all heads*/ + q * k * d /*A V*/);
  return f;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] initialisation
// ---------------------------------------------------------------------------------------------

MhaWeights initWeights(int dModel, bool bias, std::uint64_t seed) {
  MhaWeights w;
  w.dModel = dModel;
  w.hasBias = bias;
  SplitMix64 rng(seed ^ 0x6D686173636F7065ull);  // "mhascope": weights and embeddings use different streams
  const float bound = std::sqrt(3.0f / static_cast<float>(dModel));
  for (RowMatrix* m : {&w.wq, &w.wk, &w.wv, &w.wo}) {
    m->resize(dModel, dModel);
    for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = rng.uniform(-bound, bound);
  }
  for (RowVector* b : {&w.bq, &w.bk, &w.bv, &w.bo}) {
    b->setZero(dModel);
    if (bias) {
      for (Eigen::Index i = 0; i < b->size(); ++i) (*b)[i] = rng.uniform(-0.1f, 0.1f);
    }
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] one function per equation
// ---------------------------------------------------------------------------------------------
namespace {

// data = n zeros. Buffers of 8 MiB and more ask the kernel for 2 MiB pages (madvise) before their
// first touch: 512 times fewer page faults, which cost microseconds each on virtual machines (a
// fresh trace at T = 2048, d_model 512, h 8 took 150 000 of them, a second of system time).
void allocateZeroed(std::vector<float>& data, std::size_t n) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (n * sizeof(float) < 4 * kHuge) {
    data.assign(n, 0.0f);
    return;
  }
  std::vector<float>().swap(data);  // give the old buffer back first: never two big ones at once
  data.reserve(n);                  // allocated, not yet touched
  const auto begin = reinterpret_cast<std::uintptr_t>(data.data());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + n * sizeof(float)) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // a hint; may be refused
  data.resize(n);  // zeros, faulted in 2 MiB at a time where the kernel agreed
}

// Tensor::reshape, with a new buffer from allocateZeroed.
void shapeStage(Tensor& t, Shape shape, std::vector<std::string> axes) {
  const auto n = static_cast<std::size_t>(Tensor::numelOf(shape));
  if (t.data.size() != n) allocateZeroed(t.data, n);
  t.reshape(std::move(shape), std::move(axes));
}


// Q = X W + b for the rows [r0, r0 + n) of the B*T rows: one GEMM per block of rows (see forward
// for why the blocks have a fixed size).
void project(const float* x /*(B*T, d_model)*/, const RowMatrix& weight /*(d_model, d_model)*/,
             const RowVector& bias /*(1, d_model)*/, float* out /*(B*T, d_model)*/, std::int64_t d, std::int64_t r0,
             std::int64_t n) {
  sgemm(false, false, n, d, d, x + r0 * d, d, weight.data(), d, 0.0f, out + r0 * d, d);
  MatrixMap(out + r0 * d, n, d).rowwise() += bias;
}

// (B, T, d_model) → view (B, T, h, d_k) → transpose (B, h, T, d_k): head i's columns are the
// block h*d_k .. (h+1)*d_k of every token's row. Numbers are only regrouped, never changed.
void splitHeads(const Tensor& proj /*(B, T, d_model)*/, int heads, Tensor& out /*(B, h, T, d_k)*/) {
  const auto B = proj.dim(0), T = proj.dim(1), d = proj.dim(2), dk = d / heads;
  for (std::int64_t b = 0; b < B; ++b) {
    ConstMatrixMap x(proj.ptr() + b * T * d, T, d);
    for (int h = 0; h < heads; ++h) {
      MatrixMap(out.ptr() + (b * heads + h) * T * dk, T, dk) = x.middleCols(h * dk, dk);
    }
  }
}

// S_i = Q_i K_i^T for one (b, i): a (T_q, T_k) table of dot products.
void attentionScores(ConstMatrixMap qh /*(T_q, d_k)*/, ConstMatrixMap kh /*(T_k, d_k)*/,
                     MatrixMap scores /*(T_q, T_k)*/) {
  sgemm(false, true, qh.rows(), kh.rows(), qh.cols(), qh.data(), qh.cols(), kh.data(), kh.cols(), 0.0f,
        scores.data(), scores.cols());
}

// One row: S' = S * factor, factor = 1/sqrt(d_k) by default.
void scaleRow(const float* s, float factor, float* out, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(out, n) = Eigen::Map<const Eigen::ArrayXf>(s, n) * factor;
}

// The row functions below use Eigen's SIMD packets directly so that each does its work in one
// pass over the row (mask + max, exp + sum): at T = 1024 these passes were a sixth of the time.
namespace simd = Eigen::internal;
using Packet = simd::packet_traits<float>::type;
constexpr std::int64_t kLanes = static_cast<std::int64_t>(sizeof(Packet) / sizeof(float));

// One row: blocked keys get -inf, so that softmax gives them exactly zero weight. A large negative
// number instead of -inf would turn a fully blocked row into a uniform 1/T_k row. Returns the
// row maximum, which the softmax needs next.
float maskRow(const float* s, const std::uint8_t* blocked /*(T_k) or null*/, float* out, std::int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  float m = ninf;
  if (blocked) {
    for (std::int64_t k = 0; k < n; ++k) {
      out[k] = blocked[k] ? ninf : s[k];
      m = std::max(m, out[k]);
    }
    return m;
  }
  std::int64_t k = 0;
  Packet vmax = simd::pset1<Packet>(ninf);
  for (; k + kLanes <= n; k += kLanes) {
    const Packet v = simd::ploadu<Packet>(s + k);
    simd::pstoreu(out + k, v);
    vmax = simd::pmax(vmax, v);
  }
  m = simd::predux_max(vmax);
  for (; k < n; ++k) {
    out[k] = s[k];
    m = std::max(m, s[k]);
  }
  return m;
}

// One row: A = softmax(S''). The row max m is subtracted only for numerical stability (exp of a
// logit above ~88 overflows float); it cancels in the division. Returns false for a fully
// masked row (every key blocked), which gets weights 0 instead of the NaN that 0/0 would give.
bool softmaxRow(const float* s, float m, const std::uint8_t* blocked, bool allBlocked, float* out, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf> w(out, n);
  if (allBlocked) {
    w.setZero();
    return false;
  }
  if (m == -std::numeric_limits<float>::infinity()) {
    // Every visible score overflowed to -inf (huge inputs): there is no honest weight, and a row
    // of zeros would pass for a masked row. NaN, like PyTorch, and reported by nonFiniteStages.
    w.setConstant(std::numeric_limits<float>::quiet_NaN());
    return true;
  }
  std::int64_t k = 0;
  const Packet vm = simd::pset1<Packet>(m);
  Packet acc = simd::pset1<Packet>(0.0f);
  for (; k + kLanes <= n; k += kLanes) {
    const Packet e = simd::pexp(simd::psub(simd::ploadu<Packet>(s + k), vm));
    simd::pstoreu(out + k, e);
    acc = simd::padd(acc, e);
  }
  float sum = simd::predux(acc);
  for (; k < n; ++k) {
    out[k] = std::exp(s[k] - m);
    sum += out[k];
  }
  if (blocked) {
    for (k = 0; k < n; ++k) {
      if (blocked[k]) {
        sum -= out[k];
        out[k] = 0.0f;  // exactly 0, whatever the vectorised exp returns for -inf
      }
    }
  }
  w *= 1.0f / sum;
  return true;
}

// (B, h, T_q, d_k) → transpose (B, T_q, h, d_k) → reshape (B, T_q, d_model): heads side by side.
void mergeHeads(const Tensor& headOut /*(B, h, T_q, d_k)*/, Tensor& concat /*(B, T_q, d_model)*/) {
  const auto B = headOut.dim(0), h = headOut.dim(1), T = headOut.dim(2), dk = headOut.dim(3);
  for (std::int64_t b = 0; b < B; ++b) {
    MatrixMap c(concat.ptr() + b * T * h * dk, T, h * dk);
    for (std::int64_t i = 0; i < h; ++i) {
      c.middleCols(i * dk, dk) = ConstMatrixMap(headOut.ptr() + (b * h + i) * T * dk, T, dk);
    }
  }
}

void copyInput(const Tensor& src, Tensor& dst, const char* kvAxis) {
  shapeStage(dst, src.shape, {"B", kvAxis, "d_model"});
  std::copy(src.data.begin(), src.data.end(), dst.data.begin());
}

// Threads worth starting: none below ~4 MFLOP (a thread start costs about what that does).
int threadsFor(int wanted, double flops) {
  if (wanted <= 1 || flops < 4e6) return 1;
  return std::min(wanted, 64);
}

// The projections X W + b of `jobs`, in blocks of kRowBlock rows shared out among the threads.
// The block size is fixed, never derived from the thread count: a GEMM's rounding may depend on
// its sizes, and the threaded forward must give the same bits as the one-thread forward.
struct ProjectJob {
  const Tensor* x;
  const RowMatrix* weight;
  const RowVector* bias;
  Tensor* out;
};
void projectAll(std::initializer_list<ProjectJob> jobs, int threads) {
  constexpr std::int64_t kRowBlock = 256;
  std::vector<std::pair<const ProjectJob*, std::int64_t>> blocks;  // (job, first row)
  for (const ProjectJob& j : jobs) {
    const std::int64_t rows = j.x->dim(0) * j.x->dim(1);
    for (std::int64_t r0 = 0; r0 < rows; r0 += kRowBlock) blocks.emplace_back(&j, r0);
  }
  parallelFor(threads, static_cast<std::int64_t>(blocks.size()), [&](std::int64_t i) {
    const ProjectJob& j = *blocks[static_cast<std::size_t>(i)].first;
    const std::int64_t r0 = blocks[static_cast<std::size_t>(i)].second, rows = j.x->dim(0) * j.x->dim(1);
    project(j.x->ptr(), *j.weight, *j.bias, j.out->ptr(), j.x->dim(2), r0, std::min(kRowBlock, rows - r0));
  });
}

// Scores, scale, mask, softmax and A V of one (batch item, head) pair bh = b*h + head, in blocks of
// query rows: each block (kQueryBlock x T_k) is still in cache for its next step. The arithmetic
// is exactly that of whole-matrix products; only the order of work differs. Without full
// recording the scores go straight into the weights' buffer (each step in place) and A V straight
// into concat's columns: the same operations on the same numbers, three tables fewer to write.
void attendOneHead(Trace& t, const AttentionOptions& opt, const std::vector<std::uint8_t>& rowAny, float factor,
                   std::int64_t bh) {
  const std::int64_t Tq = t.tensor(StageId::Weights).dim(2), Tk = t.tensor(StageId::Weights).dim(3);
  const std::int64_t dk = t.tensor(StageId::QHeads).dim(3), h = t.tensor(StageId::QHeads).dim(1);
  const std::int64_t b = bh / h, d = h * dk;
  const int head = static_cast<int>(bh % h);
  const bool all = opt.recordEveryStage;
  ConstMatrixMap qh(t.tensor(StageId::QHeads).ptr() + bh * Tq * dk, Tq, dk);
  ConstMatrixMap kh(t.tensor(StageId::KHeads).ptr() + bh * Tk * dk, Tk, dk);
  ConstMatrixMap vh(t.tensor(StageId::VHeads).ptr() + bh * Tk * dk, Tk, dk);
  float* weights = t.tensor(StageId::Weights).ptr() + bh * Tq * Tk;
  float* scores = all ? t.tensor(StageId::Scores).ptr() + bh * Tq * Tk : weights;
  float* scaled = all ? t.tensor(StageId::ScaledScores).ptr() + bh * Tq * Tk : weights;
  float* masked = all ? t.tensor(StageId::MaskedScores).ptr() + bh * Tq * Tk : weights;
  // A V: head_outputs (T_q, d_k) rows, or head `head`'s columns of concat (row stride d_model).
  float* headOut = all ? t.tensor(StageId::HeadOutputs).ptr() + bh * Tq * dk
                       : t.tensor(StageId::Concat).ptr() + b * Tq * d + head * dk;
  const std::int64_t outStride = all ? dk : d;
  constexpr std::int64_t kQueryBlock = 128;
  for (std::int64_t q0 = 0; q0 < Tq; q0 += kQueryBlock) {
    const std::int64_t nq = std::min(kQueryBlock, Tq - q0);
    attentionScores(ConstMatrixMap(qh.data() + q0 * dk, nq, dk), kh, MatrixMap(scores + q0 * Tk, nq, Tk));
    if (opt.scoresOverride) overrideScores(*opt.scoresOverride, b, head, scores, Tq, Tk, q0, nq);
    for (std::int64_t q = q0; q < q0 + nq; ++q) {
      const std::size_t row = static_cast<std::size_t>(b * Tq + q);
      const std::uint8_t* blk = rowAny[row] ? t.blocked.data() + row * static_cast<std::size_t>(Tk) : nullptr;
      scaleRow(scores + q * Tk, factor, scaled + q * Tk, Tk);
      const float rowMax = maskRow(scaled + q * Tk, blk, masked + q * Tk, Tk);
      softmaxRow(masked + q * Tk, rowMax, blk, rowAny[row] == 2, weights + q * Tk, Tk);
    }
    sgemm(false, false, nq, dk, Tk, weights + q0 * Tk, Tk, vh.data(), dk, 0.0f, headOut + q0 * outStride, outStride);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] forward
// ---------------------------------------------------------------------------------------------

Status forward(const AttentionInputs& in, const MhaWeights& w, const AttentionOptions& opt, Trace& trace) {
  if (auto s = validate(in, w, opt); !s) return s;
  const auto B = in.query.dim(0), Tq = in.query.dim(1), Tk = in.key.dim(1), d = in.query.dim(2);
  const int h = opt.heads;
  const auto dk = d / h;
  const std::uint64_t generation = trace.generation;
  try {
    Trace t = std::move(trace);  // reuse the old buffers: no reallocation when shapes are unchanged
    t.stages.resize(kStageCount);
    for (int i = 0; i < kStageCount; ++i) t.stages[static_cast<std::size_t>(i)].id = static_cast<StageId>(i);
    auto T = [&t](StageId id) -> Tensor& { return t.tensor(id); };

    copyInput(in.query, T(StageId::Query), "T_q");
    const bool all = opt.recordEveryStage;
    if (all) {
      copyInput(in.key, T(StageId::Key), "T_k");
      copyInput(in.value, T(StageId::Value), "T_k");
    }
    const int threads = threadsFor(opt.threads, countFlops(B, Tq, Tk, d, h).total());

    // Q, K, V projections: every output feature mixes all d_model input features.
    shapeStage(T(StageId::QProj), {B, Tq, d}, {"B", "T_q", "d_model"});
    shapeStage(T(StageId::KProj), {B, Tk, d}, {"B", "T_k", "d_model"});
    shapeStage(T(StageId::VProj), {B, Tk, d}, {"B", "T_k", "d_model"});
    projectAll({{&in.query, &w.wq, &w.bq, &T(StageId::QProj)},
                {&in.key, &w.wk, &w.bk, &T(StageId::KProj)},
                {&in.value, &w.wv, &w.bv, &T(StageId::VProj)}},
               threads);

    // Split d_model into h heads of d_k.
    shapeStage(T(StageId::QHeads), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
    shapeStage(T(StageId::KHeads), {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});
    shapeStage(T(StageId::VHeads), {B, h, Tk, dk}, {"B", "h", "T_k", "d_k"});
    splitHeads(T(StageId::QProj), h, T(StageId::QHeads));
    splitHeads(T(StageId::KProj), h, T(StageId::KHeads));
    splitHeads(T(StageId::VProj), h, T(StageId::VHeads));

    for (StageId id : {StageId::Scores, StageId::ScaledScores, StageId::MaskedScores, StageId::Weights}) {
      if (all || id == StageId::Weights) shapeStage(T(id), {B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"});
    }
    if (all) shapeStage(T(StageId::HeadOutputs), {B, h, Tq, dk}, {"B", "h", "T_q", "d_k"});
    shapeStage(T(StageId::Concat), {B, Tq, d}, {"B", "T_q", "d_model"});
    if (!all) {  // not recorded: empty, so nothing can read a stale table as this forward's
      for (StageId id : {StageId::Key, StageId::Value, StageId::Scores, StageId::ScaledScores, StageId::MaskedScores,
                         StageId::HeadOutputs}) {
        shapeStage(T(id), {0}, {});
      }
    }

    std::vector<std::uint8_t> rowAny;
    buildBlocked(opt, B, Tq, Tk, t.blocked, rowAny);
    t.fullyMasked.assign(static_cast<std::size_t>(B * Tq), 0);
    for (std::size_t row = 0; row < rowAny.size(); ++row) t.fullyMasked[row] = rowAny[row] == 2;
    const float factor = scaleFactorFor(opt.scale, d, h);

    // Attention per (batch item, head); the pairs are shared out among the threads, each pair's
    // work is the same whichever thread does it, so the numbers do not depend on the thread count.
    parallelFor(threads, B * h, [&](std::int64_t bh) { attendOneHead(t, opt, rowAny, factor, bh); });

    if (all) mergeHeads(T(StageId::HeadOutputs), T(StageId::Concat));
    shapeStage(T(StageId::Output), {B, Tq, d}, {"B", "T_q", "d_model"});
    projectAll({{&T(StageId::Concat), &w.wo, &w.bo, &T(StageId::Output)}}, threads);

    t.batch = static_cast<int>(B);
    t.tq = static_cast<int>(Tq);
    t.tk = static_cast<int>(Tk);
    t.dModel = static_cast<int>(d);
    t.heads = h;
    t.dk = static_cast<int>(dk);
    t.selfAttention = in.selfAttention;
    t.causal = opt.causal;
    t.keyPadding = opt.keyPaddingMask.has_value();
    t.attnMask = opt.attnMask.has_value();
    t.scale = opt.scale;
    t.scaleFactor = factor;
    auto labelsOr = [](const std::vector<std::vector<std::string>>& given, std::int64_t nb, std::int64_t nt) {
      if (!given.empty()) return given;
      std::vector<std::vector<std::string>> out(static_cast<std::size_t>(nb));
      for (auto& row : out) {
        for (std::int64_t i = 0; i < nt; ++i) row.push_back(std::string("t").append(std::to_string(i)));
      }
      return out;
    };
    // The learned parameters, as used: the window and `export` draw these very numbers.
    t.weights.resize(kWeightCount);
    auto keep = [&t](WeightId id, const float* data, std::int64_t rows, std::int64_t cols, bool matrix) {
      Tensor& dst = t.weights[static_cast<std::size_t>(id)];
      dst.reshape({rows, cols}, matrix ? std::vector<std::string>{"d_model_in", "d_model_out"}
                                       : std::vector<std::string>{"1", "d_model_out"});
      std::copy(data, data + rows * cols, dst.ptr());
    };
    keep(WeightId::Wq, w.wq.data(), d, d, true);
    keep(WeightId::Wk, w.wk.data(), d, d, true);
    keep(WeightId::Wv, w.wv.data(), d, d, true);
    keep(WeightId::Wo, w.wo.data(), d, d, true);
    keep(WeightId::Bq, w.bq.data(), 1, d, false);
    keep(WeightId::Bk, w.bk.data(), 1, d, false);
    keep(WeightId::Bv, w.bv.data(), 1, d, false);
    keep(WeightId::Bo, w.bo.data(), 1, d, false);
    t.hasBias = w.hasBias;
    t.queryTokens = labelsOr(in.queryTokens, B, Tq);
    t.keyTokens = labelsOr(in.keyTokens, B, Tk);
    t.generation += 1;
    trace = std::move(t);
  } catch (const std::bad_alloc&) {
    trace = Trace{};  // half-overwritten buffers are not a trace: leave an empty one
    trace.generation = generation + 1;
    return makeError("out of memory while computing attention (needs about " +
                     formatBytes(estimateMemory(B, Tq, Tk, d, h).total()) + "); lower --memory-budget or the sizes");
  }
  return Ok{};
}

std::vector<NonFiniteStage> nonFiniteStages(const Trace& trace) {
  std::vector<NonFiniteStage> out;
  for (const Stage& st : trace.stages) {
    NonFiniteStage n{st.id};
    const bool masked = st.id == StageId::MaskedScores;
    const auto& data = st.tensor.data;
    const std::size_t perItem = static_cast<std::size_t>(trace.tq) * static_cast<std::size_t>(trace.tk);
    for (std::size_t i = 0; i < data.size(); ++i) {
      const float v = data[i];
      if (std::isfinite(v)) continue;
      if (masked && v == -std::numeric_limits<float>::infinity() && perItem > 0 && !trace.blocked.empty()) {
        // (B, h, T_q, T_k): cell i is (b, head, q, k); blocked is (B, T_q, T_k).
        const std::size_t b = i / (perItem * static_cast<std::size_t>(trace.heads));
        if (trace.blocked[b * perItem + i % perItem]) continue;
      }
      if (std::isnan(v)) ++n.nan; else ++n.inf;
      if (n.first < 0) n.first = static_cast<std::int64_t>(i);
    }
    if (n.nan + n.inf > 0) out.push_back(n);
  }
  return out;
}

}  // namespace mhascope
