// The cases of an exercise and the learner's tensors matched to the engine's stages: each case's
// inputs and weights, the engine's trace of them, and equality by value in any layout a correct
// solution may use (axis permutations, order-keeping reshapes, one head's slice, K/V repeated for
// grouped heads, a large negative number for −inf).
#include "practice/check_parts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "attention/engine.hpp"
#include "attention/random.hpp"

namespace mhascope::practice::detail {

namespace {

Tensor randomInputs(SplitMix64& rng, int B, int T, int d, float scale) {
  Tensor x({B, T, d}, {"B", "T", "d_model"});
  for (float& v : x.data) v = scale * rng.uniform(-1.0f, 1.0f);
  return x;
}

Tensor weightTensor(const RowMatrix& w) {
  Tensor t({static_cast<std::int64_t>(w.rows()), static_cast<std::int64_t>(w.cols())}, {"d_in", "d_out"});
  std::copy(w.data(), w.data() + w.size(), t.data.begin());
  return t;
}

}  // namespace

BuiltCase buildCase(const PracticeCase& c) {
  BuiltCase out;
  out.spec = &c;
  CaseInputs& in = out.inputs;
  in.caseId = c.id;
  in.mustRaise = c.mustRaise;
  in.decode = c.decode;
  in.dModel = c.dModel;
  in.heads = c.heads;
  in.kvHeads = c.kvHeads > 0 ? c.kvHeads : c.heads;
  SplitMix64 rng(c.seed * 0x9E3779B97F4A7C15ull + 17);
  const int tk = c.cross ? c.tk : c.tq;
  AttentionInputs ai;
  ai.query = randomInputs(rng, c.batch, c.tq, c.dModel, c.inputScale);
  ai.selfAttention = !c.cross;
  ai.key = c.cross ? randomInputs(rng, c.batch, tk, c.dModel, c.inputScale) : ai.query;
  ai.value = ai.key;
  for (int b = 0; b < c.batch; ++b) {
    std::vector<std::string> q, k;
    // Token labels are positions (GCC 12 warns falsely on "t" + std::to_string(t)).
    for (int t = 0; t < c.tq; ++t) q.push_back(std::to_string(t));
    for (int t = 0; t < tk; ++t) k.push_back(std::to_string(t));
    ai.queryTokens.push_back(q);
    ai.keyTokens.push_back(k);
  }
  in.arrays["query"] = ai.query;
  in.arrays["x"] = ai.query;
  in.arrays["key"] = ai.key;
  in.arrays["value"] = ai.value;
  AttentionOptions opt;
  opt.heads = c.heads;
  opt.kvHeads = c.kvHeads;
  opt.causal = c.causal || c.decode;
  if (c.rope) {
    opt.positions = AttnPositions::Rope;
    opt.ropeStyle = RopeStyle::Half;
    opt.ropeBase = 10000.0f;
  }
  if (c.mask == CaseMask::Causal) {
    Tensor m({c.tq, tk}, {"T_q", "T_k"});
    for (int q = 0; q < c.tq; ++q)
      for (int k = 0; k < tk; ++k) m.data[static_cast<std::size_t>(q * tk + k)] = k > q ? 1.0f : 0.0f;
    opt.attnMask = m;
    in.arrays["mask"] = m;
  } else if (c.mask == CaseMask::KeyPadding) {
    // Item b pads its last b + 1 keys (never all of them): each item a different length.
    Tensor engineMask({c.batch, tk}, {"B", "T_k"});
    Tensor m({c.batch, 1, 1, tk}, {"B", "h", "T_q", "T_k"});
    for (int b = 0; b < c.batch; ++b)
      for (int k = 0; k < tk; ++k) {
        const float padded = k >= tk - std::min(b + 1, tk - 1) ? 1.0f : 0.0f;
        engineMask.data[static_cast<std::size_t>(b * tk + k)] = padded;
        m.data[static_cast<std::size_t>(b * tk + k)] = padded;
      }
    opt.keyPaddingMask = engineMask;
    in.arrays["mask"] = m;
  }
  // W_k, W_v: N·d_k columns for grouped K/V heads, else d_model (whatever h is: a case where h does not
  // divide d_model offers weights a module without the check could still take, and must raise).
  const int kvWidth = c.kvHeads > 0 && c.heads > 0 ? c.kvHeads * (c.dModel / c.heads) : c.dModel;
  const MhaWeights w = initWeights(c.dModel, false, c.seed * 31 + 7, kvWidth);
  in.arrays["W_q"] = weightTensor(w.wq);
  in.arrays["W_k"] = weightTensor(w.wk);
  in.arrays["W_v"] = weightTensor(w.wv);
  in.arrays["W_o"] = weightTensor(w.wo);
  if (c.mustRaise) return out;
  Trace t;
  if (auto s = forward(ai, w, opt, t); !s) {
    out.buildError = "the engine refused case " + c.id + ": " + s.error().message;
    return out;
  }
  out.expected = std::move(t);
  return out;
}

namespace {

// Equal within the tolerance; NaN equals NaN, −inf equals −inf or any number ≤ −1e4 (a mask filled
// with a large negative number instead of −inf is right).
bool close(float a, float e, double tol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
  if (std::isinf(e)) return e < 0 ? a <= -1e4f : a == e;
  if (std::isinf(a)) return false;
  return std::abs(static_cast<double>(a) - e) <= tol;
}

}  // namespace

double scaleOf(const Tensor& t) {
  double m = 0;
  for (float v : t.data)
    if (std::isfinite(v)) m = std::max(m, static_cast<double>(std::abs(v)));
  return m;
}

namespace {

// The capture's axes permuted by perm, compared with `e` in flat order.
bool equalPermuted(const Tensor& c, const std::vector<int>& perm, const Tensor& e, double tol) {
  const int r = c.rank();
  std::vector<std::int64_t> stride(static_cast<std::size_t>(r), 1), dims(static_cast<std::size_t>(r));
  for (int i = r - 2; i >= 0; --i) stride[static_cast<std::size_t>(i)] = stride[static_cast<std::size_t>(i + 1)] * c.dim(i + 1);
  for (int j = 0; j < r; ++j) dims[static_cast<std::size_t>(j)] = c.dim(perm[static_cast<std::size_t>(j)]);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
  const std::int64_t n = c.numel();
  for (std::int64_t flat = 0; flat < n; ++flat) {
    std::int64_t src = 0;
    for (int j = 0; j < r; ++j) src += idx[static_cast<std::size_t>(j)] * stride[static_cast<std::size_t>(perm[static_cast<std::size_t>(j)])];
    if (!close(c.data[static_cast<std::size_t>(src)], e.data[static_cast<std::size_t>(flat)], tol)) return false;
    for (int j = r - 1; j >= 0; --j) {
      if (++idx[static_cast<std::size_t>(j)] < dims[static_cast<std::size_t>(j)]) break;
      idx[static_cast<std::size_t>(j)] = 0;
    }
  }
  return true;
}

Tensor permuted(const Tensor& c, const std::vector<int>& perm, const Shape& to, const std::vector<std::string>& axes) {
  Tensor out(to, axes);
  const int r = c.rank();
  std::vector<std::int64_t> stride(static_cast<std::size_t>(r), 1), dims(static_cast<std::size_t>(r));
  for (int i = r - 2; i >= 0; --i) stride[static_cast<std::size_t>(i)] = stride[static_cast<std::size_t>(i + 1)] * c.dim(i + 1);
  for (int j = 0; j < r; ++j) dims[static_cast<std::size_t>(j)] = c.dim(perm[static_cast<std::size_t>(j)]);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
  for (std::int64_t flat = 0; flat < c.numel(); ++flat) {
    std::int64_t src = 0;
    for (int j = 0; j < r; ++j) src += idx[static_cast<std::size_t>(j)] * stride[static_cast<std::size_t>(perm[static_cast<std::size_t>(j)])];
    out.data[static_cast<std::size_t>(flat)] = c.data[static_cast<std::size_t>(src)];
    for (int j = r - 1; j >= 0; --j) {
      if (++idx[static_cast<std::size_t>(j)] < dims[static_cast<std::size_t>(j)]) break;
      idx[static_cast<std::size_t>(j)] = 0;
    }
  }
  return out;
}

// Axis names of the capture: the expected layout's names where the permutation puts them.
std::string layoutWords(const Tensor& capture, const std::vector<int>& perm, const Tensor& e) {
  bool identity = capture.rank() == e.rank();
  for (int j = 0; j < capture.rank(); ++j) identity = identity && perm[static_cast<std::size_t>(j)] == j;
  if (identity) return "";
  if (capture.rank() != e.rank() || e.axes.size() != static_cast<std::size_t>(e.rank())) {
    std::string s = "shape (";
    for (int i = 0; i < capture.rank(); ++i) s += (i ? ", " : "") + std::to_string(capture.dim(i));
    return s + "): the same numbers in the same order";
  }
  std::vector<std::string> names(static_cast<std::size_t>(capture.rank()));
  for (int j = 0; j < capture.rank(); ++j) names[static_cast<std::size_t>(perm[static_cast<std::size_t>(j)])] = e.axes[static_cast<std::size_t>(j)];
  std::string s = "(";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + ")";
}

}  // namespace

Fit fitTo(const Tensor& capture, const Tensor& e, double relTol, bool strict) {
  Fit f;
  if (capture.numel() != e.numel() || capture.numel() == 0) return f;
  const double tol = relTol * (1.0 + scaleOf(e));
  std::vector<int> perm(static_cast<std::size_t>(capture.rank()));
  std::iota(perm.begin(), perm.end(), 0);
  if ((!strict || capture.shape == e.shape) && equalPermuted(capture, perm, e, tol)) {
    f.found = true;
    f.perm = perm;
    f.layout = layoutWords(capture, perm, e);
    return f;
  }
  if (capture.rank() != e.rank() || capture.rank() > 5) return f;
  while (std::next_permutation(perm.begin(), perm.end())) {
    bool shapeFits = true;
    for (int j = 0; j < e.rank(); ++j) shapeFits = shapeFits && capture.dim(perm[static_cast<std::size_t>(j)]) == e.dim(j);
    if (shapeFits && equalPermuted(capture, perm, e, tol)) {
      f.found = true;
      f.perm = perm;
      f.layout = layoutWords(capture, perm, e);
      return f;
    }
  }
  return f;
}

namespace {

// Head i of a (B, h, T, X) stage, as (B, T, X).
Tensor headSlice(const Tensor& e, int i) {
  const auto B = e.dim(0), h = e.dim(1), T = e.dim(2), X = e.dim(3);
  Tensor s({B, T, X}, {e.axes.size() == 4 ? e.axes[0] : "B", e.axes.size() == 4 ? e.axes[2] : "T",
                       e.axes.size() == 4 ? e.axes[3] : "X"});
  for (std::int64_t b = 0; b < B; ++b) std::copy_n(e.ptr() + (b * h + i) * T * X, T * X, s.ptr() + b * T * X);
  return s;
}

bool hasHeadAxis(StageId id) {
  switch (id) {
    case StageId::QHeads: case StageId::KHeads: case StageId::VHeads: case StageId::QNormed: case StageId::KNormed:
    case StageId::QRotated: case StageId::KRotated: case StageId::Scores: case StageId::ScaledScores: case StageId::MaskedScores: case StageId::Weights:
    case StageId::HeadOutputs: return true;
    default: return false;
  }
}

// The capture against the stage: whole, in another layout, or one head's slice of it.
Fit fitToStage(const Tensor& capture, const Tensor& e, StageId id, int heads, double tol) {
  if (Fit f = fitTo(capture, e, tol); f.found) return f;
  if (hasHeadAxis(id) && e.rank() == 4 && e.dim(1) < heads &&
      (id == StageId::KHeads || id == StageId::VHeads || id == StageId::KNormed || id == StageId::KRotated)) {
    // Grouped K/V heads as the query heads read them (repeat_interleave).
    if (Fit f = fitTo(capture, expandKvHeads(e, heads, false), tol); f.found) {
      f.layout = "repeated for the " + std::to_string(heads) + " query heads" + (f.layout.empty() ? "" : ", " + f.layout);
      return f;
    }
  }
  if (hasHeadAxis(id) && e.rank() == 4 && e.dim(1) > 1) {
    for (int i = 0; i < e.dim(1); ++i) {
      if (Fit f = fitTo(capture, headSlice(e, i), tol); f.found) {
        f.head = i;
        f.layout = "head " + std::to_string(i) + " alone";
        return f;
      }
    }
  }
  return {};
}

std::vector<StageId> stagesOf(const Trace& t) {
  std::vector<StageId> s = {StageId::QProj, StageId::KProj, StageId::VProj, StageId::QHeads, StageId::KHeads, StageId::VHeads};
  if (stageRecorded(t, StageId::QNormed)) {
    s.push_back(StageId::QNormed);
    s.push_back(StageId::KNormed);
  }
  if (t.positions == AttnPositions::Rope) {
    s.push_back(StageId::QRotated);
    s.push_back(StageId::KRotated);
  }
  s.push_back(StageId::Scores);
  s.push_back(StageId::ScaledScores);
  bool blocked = false;
  for (std::uint8_t b : t.blocked) blocked = blocked || b != 0;
  if (blocked) s.push_back(StageId::MaskedScores);
  for (StageId id : {StageId::Weights, StageId::HeadOutputs, StageId::Concat, StageId::Output}) s.push_back(id);
  return s;
}

}  // namespace

std::string shapeText(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

std::string captureWords(const Capture& c) {
  const std::string what = c.source == Capture::Source::Local ? "`" + c.name + "`" : "the result of " + c.name;
  return what + (c.line > 0 ? " (line " + std::to_string(c.line) + ")" : "");
}

double maxAbsDifference(const Tensor& a, const Tensor& e) {
  double m = 0;
  for (std::size_t i = 0; i < std::min(a.data.size(), e.data.size()); ++i) {
    const float x = a.data[i], y = e.data[i];
    if (std::isnan(x) != std::isnan(y) || (std::isinf(y) && !(y < 0 && x <= -1e4f)) || (std::isinf(x) && !std::isinf(y))) {
      return std::numeric_limits<double>::infinity();
    }
    if (std::isfinite(x) && std::isfinite(y)) m = std::max(m, std::abs(static_cast<double>(x) - y));
  }
  return m;
}

void fillTensors(StageCheck& sc, const Capture& c, const Fit& f, const Tensor& e) {
  if (f.found && f.head < 0) {
    sc.learner = permuted(c.value, f.perm, e.shape, e.axes);
  } else if (c.value.numel() == e.numel()) {
    sc.learner = c.value;
    sc.learner.shape = e.shape;
    sc.learner.axes = e.axes;
  } else {
    sc.learner = c.value;
    sc.shapeNote = "shape " + shapeText(c.value.shape) + " where " + shapeText(e.shape) + " is expected";
    return;
  }
  sc.difference = Tensor(e.shape, e.axes);
  for (std::size_t i = 0; i < e.data.size(); ++i) {
    const float a = sc.learner.data[i], b = e.data[i];
    sc.difference.data[i] = (std::isinf(a) && std::isinf(b) && (a < 0) == (b < 0)) ? 0.0f : a - b;
  }
  sc.maxAbsDiff = maxAbsDifference(sc.learner, e);
}

StageMatch matchStages(const Trace& t, const CaseRun& run, double tol) {
  StageMatch m;
  m.used.assign(run.captures.size(), false);
  m.exact.assign(run.captures.size(), false);
  for (StageId id : stagesOf(t)) {
    StageCheck sc;
    sc.stage = id;
    const Tensor e = t.copyOf(id);
    // Prefer a named variable to a function's result, then the earliest.
    int best = -1;
    Fit bestFit;
    for (std::size_t i = 0; i < run.captures.size(); ++i) {
      const Capture& c = run.captures[i];
      Fit f = fitToStage(c.value, e, id, t.heads, tol);
      if (!f.found) continue;
      (c.source == Capture::Source::Local ? sc.byLocal : sc.byCall) = true;
      m.used[i] = true;
      if (f.head < 0 && c.value.rank() == e.rank()) m.exact[i] = true;  // its own shape or a permutation
      const bool better = best < 0 || (c.source == Capture::Source::Local &&
                                       run.captures[static_cast<std::size_t>(best)].source != Capture::Source::Local) ||
                          (bestFit.head >= 0 && f.head < 0);
      if (better) {
        best = static_cast<int>(i);
        bestFit = f;
      }
    }
    if (best >= 0) {
      sc.status = StageCheck::Status::Match;
      sc.capture = run.captures[static_cast<std::size_t>(best)];
      sc.layout = bestFit.layout;
      fillTensors(sc, *sc.capture, bestFit, e);
    }
    m.stages.push_back(std::move(sc));
  }
  return m;
}

}  // namespace mhascope::practice::detail
