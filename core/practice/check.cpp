// Checking a learner's file: the cases' inputs and the engine's traces, the learner's run, the
// stage matching, the mistake library's diagnosis, and the report's text and JSON.
//
// [SECTION] the cases: inputs, weights, the engine's trace
// [SECTION] equal by value, in the layouts a correct solution may use
// [SECTION] the stages of the shown case
// [SECTION] the diagnosis
// [SECTION] checkFile
// [SECTION] the report as text and JSON
#include "practice/check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "attention/engine.hpp"
#include "attention/random.hpp"
#include "lessons/mistakes.hpp"
#include "util/format.hpp"

namespace mhascope::practice {

// [SECTION] the cases: inputs, weights, the engine's trace

namespace {

struct BuiltCase {
  const PracticeCase* spec = nullptr;
  CaseInputs inputs;               // what the learner's code receives
  std::optional<Trace> expected;   // the engine's trace (none for a case that must raise)
  std::string buildError;          // the engine refused the case (a bug of the exercise list)
};

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

// [SECTION] equal by value, in the layouts a correct solution may use

// Equal within the tolerance; NaN equals NaN, −inf equals −inf or any number ≤ −1e4 (a mask filled
// with a large negative number instead of −inf is right).
bool close(float a, float e, double tol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
  if (std::isinf(e)) return e < 0 ? a <= -1e4f : a == e;
  if (std::isinf(a)) return false;
  return std::abs(static_cast<double>(a) - e) <= tol;
}

double scaleOf(const Tensor& t) {
  double m = 0;
  for (float v : t.data)
    if (std::isfinite(v)) m = std::max(m, static_cast<double>(std::abs(v)));
  return m;
}

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

struct Fit {
  bool found = false;
  std::vector<int> perm;  // the capture's axes in the expected layout's order
  int head = -1;          // ≥ 0: the capture is this head's slice alone (a loop over heads)
  std::string layout;     // words, empty for the expected layout itself
};

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

// strict: the capture's own shape is e's, or a permutation of e's axes (no reshape: a mistake's
// tensor is the one the mistaken code made, not the same numbers in another shape).
Fit fitTo(const Tensor& capture, const Tensor& e, double relTol, bool strict = false) {
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
    case StageId::QHeads: case StageId::KHeads: case StageId::VHeads: case StageId::QRotated: case StageId::KRotated:
    case StageId::Scores: case StageId::ScaledScores: case StageId::MaskedScores: case StageId::Weights:
    case StageId::HeadOutputs: return true;
    default: return false;
  }
}

// The capture against the stage: whole, in another layout, or one head's slice of it.
Fit fitToStage(const Tensor& capture, const Tensor& e, StageId id, int heads, double tol) {
  if (Fit f = fitTo(capture, e, tol); f.found) return f;
  if (hasHeadAxis(id) && e.rank() == 4 && e.dim(1) < heads &&
      (id == StageId::KHeads || id == StageId::VHeads || id == StageId::KRotated)) {
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

// [SECTION] the stages of the shown case

std::vector<StageId> stagesOf(const Trace& t) {
  std::vector<StageId> s = {StageId::QProj, StageId::KProj, StageId::VProj, StageId::QHeads, StageId::KHeads, StageId::VHeads};
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

// The learner's tensor in the stage's own shape and its difference from the expected one.
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

struct StageMatch {
  std::vector<StageCheck> stages;
  std::vector<bool> used;   // per capture: matched to a stage
  std::vector<bool> exact;  // per capture: matched to a stage in its shape or a permutation of it (a right tensor)
};

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

// [SECTION] the diagnosis

std::string fixed(double v, int digits) { return formatFixed(v, digits); }

int countBlocked(const Trace& t) {
  int n = 0;
  for (std::uint8_t b : t.blocked) n += b != 0;
  return n;
}

// "your `scores` (line 31)", "the result of Tensor.div (line 48)": the tensor as a sentence's subject.
std::string subject(const std::string& who) { return who.rfind("the ", 0) == 0 ? who : "your " + who; }

std::string mistakeText(Mistake m, const Trace& t, const std::string& who, const Tensor& learner) {
  const double dk = t.dk, d = t.dModel, h = t.heads;
  switch (m) {
    case Mistake::ScaleBySqrtDModel:
      return subject(who) + " holds Q K\xe1\xb5\x80 / \xe2\x88\x9a" "d_model (\xc3\xb7 " + fixed(std::sqrt(d), 2) + ")" +
             "; each head's dot products have d_k = " + std::to_string(t.dk) + " terms: divide by \xe2\x88\x9a" "d_k = " +
             fixed(std::sqrt(dk), 2) + ". Dividing by \xe2\x88\x9a" "d_model makes every head's weights flatter (by \xe2\x88\x9a" "h = " +
             fixed(std::sqrt(h), 2) + " in the logits).";
    case Mistake::NoScaling:
      return subject(who) + " holds Q K\xe1\xb5\x80 with no division: a dot product of d_k = " + std::to_string(t.dk) +
             " terms spreads like \xe2\x88\x9a" "d_k, so divide by \xe2\x88\x9a" "d_k = " + fixed(std::sqrt(dk), 2) +
             "; unscaled, the softmax is sharper than it should be and its gradients vanish.";
    case Mistake::ScaleByDk:
      return subject(who) + " holds Q K\xe1\xb5\x80 / d_k (\xc3\xb7 " + std::to_string(t.dk) + "): divide by \xe2\x88\x9a" "d_k = " +
             fixed(std::sqrt(dk), 2) + " \xe2\x80\x94 a dot product's spread grows like the square root of its length, not like its length.";
    case Mistake::SplitWithoutTranspose: {
      // view(B, h, T, d_k) hands head i the numbers [i·T·d_k, (i+1)·T·d_k) of each item's (T, d_model) rows.
      const int head = t.heads > 1 ? 1 : 0;
      const long long first = static_cast<long long>(head) * t.tq * t.dk, last = first + static_cast<long long>(t.tq) * t.dk - 1;
      const long long t0 = first / t.dModel, t1 = last / t.dModel;
      return "your split (" + who + ") used view(B, h, T, d_k) without the transpose: head " + std::to_string(head) +
             " received tokens " + std::to_string(t0) + (t1 != t0 ? "\xe2\x80\x93" + std::to_string(t1) : "") +
             "'s features instead of features " + std::to_string(head * t.dk) + "\xe2\x80\x93" +
             std::to_string((head + 1) * t.dk - 1) + " of every token. Split as view(B, T, h, d_k).transpose(1, 2).";
    }
    case Mistake::ViewOnTransposed:
      return "`.view` on a transposed tensor" + (who.empty() ? std::string() : " (" + who + ")") +
             ": transpose only changes the strides, and .view needs the numbers in memory order; call .contiguous() "
             "before .view, or use .reshape.";
    case Mistake::MaskIgnored:
      return subject(who) + " holds the softmax of the scores with no mask: the " + std::to_string(countBlocked(t)) +
             " blocked cells of this case still get weight. Fill the blocked scores with \xe2\x88\x92inf "
             "(masked_fill(mask, float('-inf'))) before the softmax.";
    case Mistake::MaskInverted:
      return subject(who) + " blocks the cells the mask keeps and keeps the " + std::to_string(countBlocked(t)) +
             " it blocks: in PyTorch's convention True means blocked, so fill where the mask is True (masked_fill(mask, "
             "float('-inf'))), not where it is False.";
    case Mistake::MaskedWithZero:
      return subject(who) + " sets the " + std::to_string(countBlocked(t)) +
             " blocked scores to 0, not \xe2\x88\x92inf: exp(0) = 1, so the blocked keys still get weight. Fill with "
             "float('-inf') (or a very large negative number).";
    case Mistake::CausalHidesDiagonal:
      return "your causal mask (" + who + ") also blocks each token's own key: torch.triu(…, diagonal=0) includes the "
             "diagonal; use diagonal=1. Token 0 then sees no key at all, and its row of weights is NaN.";
    case Mistake::CausalWrongDirection:
      return "your causal mask (" + who + ") blocks the past (keys before the query) and lets each token see the future; "
             "a decoder blocks the keys after the query: torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1).";
    case Mistake::MaskAfterSoftmax: {
      double worst = 0;
      int worstRow = 0;
      for (std::int64_t row = 0; row * t.tk < learner.numel(); ++row) {
        double s = 0;
        for (int k = 0; k < t.tk; ++k) s += learner.data[static_cast<std::size_t>(row * t.tk + k)];
        if (std::abs(s - 1) > std::abs(worst - 1)) {
          worst = s;
          worstRow = static_cast<int>(row % t.tq);
        }
      }
      return "the mask was applied after the softmax (" + who + "): the blocked weights are 0, but the rows no longer sum "
             "to 1 (query " + std::to_string(worstRow) + "'s row sums to " + fixed(worst, 2) +
             "). Fill the blocked scores with \xe2\x88\x92inf, then take the softmax.";
    }
    case Mistake::SoftmaxOverQueries:
      return "softmax over the query axis (" + who + "): the columns sum to 1, not the rows. Each query's weights over the "
             "keys must sum to 1: softmax(dim=-1).";
    case Mistake::NoMaxSubtraction: {
      float top = 0;
      int topRow = 0;
      const Tensor masked = t.copyOf(StageId::MaskedScores);
      for (std::size_t i = 0; i < masked.data.size(); ++i)
        if (std::isfinite(masked.data[i]) && masked.data[i] > top) {
          top = masked.data[i];
          topRow = static_cast<int>((i / static_cast<std::size_t>(t.tk)) % static_cast<std::size_t>(t.tq));
        }
      std::int64_t nan = 0;
      for (float v : learner.data) nan += std::isnan(v);
      return "the max was not subtracted (" + who + "): at these scores (up to " + fixed(top, 0) + ", in query " +
             std::to_string(topRow) + "'s row) exp overflows float32 past 88.7, and inf / inf gives NaN in " +
             std::to_string(nan) + " weights. Subtract each row's maximum before exp (torch.softmax does).";
    }
    case Mistake::SumHeads:
      return "the heads were summed, not concatenated (" + who + "): shape (B, T, d_k) = " + shapeText(learner.shape) +
             " where the merge is (B, T, d_model). Put the heads side by side: transpose(1, 2).reshape(B, T, d_model).";
    case Mistake::MergeWithoutTranspose:
      return "your merge (" + who + ") reshaped (B, h, T, d_k) to (B, T, d_model) without the transpose back: token 0's row "
             "holds head 0's first tokens. Transpose to (B, T, h, d_k) first: transpose(1, 2).reshape(B, T, d_model).";
    case Mistake::NoOutputProjection:
      return "no output projection: your output (" + who + ") equals the merged heads. Multiply by W_o (self.W_o(x)): it is "
             "the layer that mixes what the heads found.";
    case Mistake::ProjectionTransposed:
      return subject(who) + " holds X W_q\xe1\xb5\x80: here the weights are (d_in, d_out) and y = X W. (nn.Linear stores "
             "its weight as (out, in) and computes x W\xe1\xb5\x80; do not mix the two conventions.)";
    case Mistake::KvHeadsTiled: {
      const int N = t.kvHeads > 0 ? t.kvHeads : t.heads;
      return "your K/V heads (" + who + ") repeat as a tile: query head i reads K/V head i mod " + std::to_string(N) +
             ", where grouped-query attention gives it head i // (h/N) (query heads 0\xe2\x80\x93" + std::to_string(t.heads / N - 1) +
             " share K/V head 0). Use repeat_interleave(h // N, dim=1).";
    }
    case Mistake::RopeInterleaved:
      return "your RoPE (" + who + ") turns the pairs (2i, 2i + 1); this exercise's convention (rotate-half, as Hugging Face "
             "Llama) pairs feature i with feature i + d_k/2 = i + " + std::to_string(t.dk / 2) + ".";
    case Mistake::RopeOnQueriesOnly:
      return subject(who) + " uses rotated queries but keys that were not rotated: rotate k as well, so that a query at t and "
             "a key at j meet at the angle (t \xe2\x88\x92 j)\xc2\xb7\xce\xb8 whatever t is.";
    case Mistake::CacheNotKept:
      return "each decoding step attended only to its own token (" + who + "): step t must append k_t and v_t to the cache "
             "and attend over all t + 1 cached keys. Your outputs equal each token's own value through W_o.";
    case Mistake::NoDivisibilityCheck:
      return "d_model is not divisible by h and your code ran: d_k = d_model // h drops the remainder's features. Raise "
             "ValueError when d_model % num_heads != 0.";
  }
  return "";
}

struct Found {
  Mistake mistake;
  int capture = -1;  // the learner's tensor that equals the mistake's stage (-1: the returned tensor)
  bool outputAgrees = false;
  Tensor stageTensor;
  int line = 0;      // the line where the mistaken computation starts
};

bool sameShape(const Tensor& a, const Tensor& b) { return a.shape == b.shape; }

// A local variable that only renames a tensor of its function: no torch call of that function on
// its line, and its value an earlier local's.
bool isAlias(const CaseRun& run, std::size_t i) {
  const Capture& c = run.captures[i];
  if (c.source != Capture::Source::Local) return false;
  for (const Capture& o : run.captures)
    if (o.source == Capture::Source::Call && o.line == c.line && o.function == c.function) return false;
  for (std::size_t j = 0; j < i; ++j) {
    const Capture& o = run.captures[j];
    if (o.source == Capture::Source::Local && o.function == c.function && o.name != c.name && sameShape(o.value, c.value) &&
        fitTo(c.value, o.value, 1e-7, true).found) {
      return true;
    }
  }
  return false;
}

// Which of the learner's tensors equal to the mistake's stage is the mistaken one (`right`: the
// captures equal to a right stage). One no right stage equals: the first. Else the mistake left a
// step out (no scaling, no mask, no W_o) and the learner passed a right tensor on: the first local
// that renames it, else the last of its shape.
int pickCapture(const CaseRun& run, const std::vector<bool>& right, const Tensor& stage, double tol) {
  int firstNew = -1, firstAlias = -1, lastSameShape = -1, firstAny = -1;
  for (std::size_t i = 0; i < run.captures.size(); ++i) {
    const Capture& c = run.captures[i];
    if (!fitTo(c.value, stage, tol, true).found) continue;
    const int n = static_cast<int>(i);
    if (firstAny < 0) firstAny = n;
    if (!right[i] && firstNew < 0) firstNew = n;
    if (right[i] && firstAlias < 0 && sameShape(c.value, stage) && isAlias(run, i)) firstAlias = n;
    if (sameShape(c.value, stage)) lastSameShape = n;
  }
  if (firstNew >= 0) return firstNew;
  if (firstAlias >= 0) return firstAlias;
  return lastSameShape >= 0 ? lastSameShape : firstAny;
}

// The mistaken line: where the mistaken code made one of the tensors it makes before the stage
// (a wrong causal mask, a softmax's exponentials, RoPE's pairs); for a step left out (the tensor a
// right one passed on under no new name), the line that consumed it: where the weights the mistake
// leads to were made; else where the stage's tensor was made.
int mistakeLine(const CaseRun& run, const std::vector<bool>& right, int pick, const MistakeOutcome& o, double tol) {
  for (const Tensor& e : o.earlier)
    for (const Capture& c : run.captures)
      if (fitTo(c.value, e, tol).found) return c.line;
  if (pick < 0) return 0;
  const auto p = static_cast<std::size_t>(pick);
  if (right[p] && !isAlias(run, p) && !o.weights.data.empty()) {
    for (std::size_t i = 0; i < run.captures.size(); ++i)
      if (!right[i] && fitTo(run.captures[i].value, o.weights, tol, true).found) return run.captures[i].line;
  }
  return run.captures[p].line;
}

// Every computed mistake one of the learner's tensors equals. A tensor equal to a right stage too
// counts only when the learner's output is the one the mistake gives; then the mistakes whose
// output agrees come first, and the earliest in the pipeline.
std::optional<Found> findMistake(const Trace& t, const CaseRun& run, const std::vector<bool>& used, double tol) {
  std::vector<Found> found;
  for (const MistakeInfo& info : allMistakes()) {
    if (!info.computed) continue;
    std::optional<MistakeOutcome> o = computeMistake(t, info.id);
    if (!o) continue;
    const bool agrees = run.output && fitTo(*run.output, o->output, tol).found;
    const int pick = pickCapture(run, used, o->stage, tol);
    if (pick >= 0 && (agrees || !used[static_cast<std::size_t>(pick)])) {
      found.push_back(Found{info.id, pick, agrees, o->stage, mistakeLine(run, used, pick, *o, tol)});
    } else if (pick < 0 && agrees && info.stage == StageId::Output) {
      // A mistake at the output (no projection) may show in the returned tensor alone.
      found.push_back(Found{info.id, -1, true, o->stage, 0});
    }
  }
  if (found.empty()) return std::nullopt;
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.outputAgrees != b.outputAgrees) return a.outputAgrees;
    return static_cast<int>(mistakeInfo(a.mistake).stage) < static_cast<int>(mistakeInfo(b.mistake).stage);
  });
  return found.front();
}

std::string errorWords(const LearnerError& e) {
  if (e.type.empty()) return e.message.empty() ? std::string(errorKindName(e.kind)) : e.message;  // it says where
  std::string s = e.type;
  if (e.line > 0) s += " at line " + std::to_string(e.line);
  if (!e.message.empty()) s += ": " + e.message;
  return s;
}

bool isViewOnTransposed(const LearnerError& e) {
  return e.kind == LearnerError::Kind::Exception && e.message.find("view size is not compatible") != std::string::npos;
}

// The stages after the first difference are not checked; those before it that no tensor equals
// were kept in no variable.
void markAround(std::vector<StageCheck>& stages, std::size_t differs) {
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (i < differs) {
      if (stages[i].status != StageCheck::Status::Match) stages[i].status = StageCheck::Status::NotSeen;
    } else if (i > differs) {
      stages[i].status = StageCheck::Status::After;
      stages[i].capture.reset();
      stages[i].learner = Tensor();
      stages[i].difference = Tensor();
      stages[i].layout.clear();
    }
  }
  stages[differs].status = StageCheck::Status::Differs;
}

std::size_t indexOf(const std::vector<StageCheck>& stages, StageId id) {
  for (std::size_t i = 0; i < stages.size(); ++i)
    if (stages[i].stage == id) return i;
  return stages.size();
}

// The shown case failed: which stage differs first, the learner's tensor there, and the mistake.
void diagnose(CheckReport& report, const Trace& t, const CaseRun& run, StageMatch& m, double tol) {
  std::vector<StageCheck>& stages = m.stages;
  std::size_t lastMatch = stages.size();
  for (std::size_t i = 0; i < stages.size(); ++i)
    if (stages[i].status == StageCheck::Status::Match) lastMatch = i;
  std::size_t differs = lastMatch == stages.size() ? 0 : lastMatch + 1;
  if (differs >= stages.size()) differs = stages.size() - 1;

  if (std::optional<Found> f = findMistake(t, run, m.exact, tol)) {
    const MistakeInfo& info = mistakeInfo(f->mistake);
    std::size_t at = indexOf(stages, info.stage);
    if (at == stages.size()) at = differs;
    StageCheck& sc = stages[at];
    const Capture* c = f->capture >= 0 ? &run.captures[static_cast<std::size_t>(f->capture)] : nullptr;
    sc.capture.reset();
    if (c) sc.capture = *c;
    const Tensor e = t.copyOf(info.stage);
    Tensor learnerTensor = c ? c->value : *run.output;
    Capture shown;
    if (c) shown = *c;
    else {
      shown.name = "the returned tensor";
      shown.value = learnerTensor;
    }
    sc.layout.clear();
    fillTensors(sc, shown, fitTo(shown.value, e, tol), e);
    markAround(stages, at);
    Diagnosis d;
    d.mistake = info.key;
    d.title = info.title;
    d.stage = info.stage;
    d.line = f->line;
    std::string who = c ? captureWords(*c) : std::string("the returned tensor");
    if (c && f->line > 0 && f->line != c->line) who += ", from line " + std::to_string(f->line);
    d.text = mistakeText(f->mistake, t, who, c ? c->value : f->stageTensor);
    if (!f->outputAgrees && run.output) {
      d.text += " (Your output also differs from what this mistake alone gives: look for a second one after line " +
                std::to_string(d.line) + ".)";
    }
    report.diagnosis = d;
    return;
  }
  // No known mistake: the first unmatched tensor made after the last match takes the stage's place.
  const int after = lastMatch < stages.size() && stages[lastMatch].capture ? stages[lastMatch].capture->order : -1;
  const Tensor e = t.copyOf(stages[differs].stage);
  const Capture* pick = nullptr;
  for (const Capture& c : run.captures) {
    if (c.order <= after) continue;
    const auto i = static_cast<std::size_t>(&c - run.captures.data());
    if (m.used[i]) continue;
    if (!pick) pick = &c;
    if (c.value.numel() == e.numel()) {
      pick = &c;
      break;
    }
  }
  StageCheck& sc = stages[differs];
  markAround(stages, differs);
  if (pick) {
    sc.capture = *pick;
    fillTensors(sc, *pick, fitTo(pick->value, e, tol), e);
  }
  if (run.error && isViewOnTransposed(*run.error)) {
    Diagnosis d;
    d.mistake = mistakeInfo(Mistake::ViewOnTransposed).key;
    d.title = mistakeInfo(Mistake::ViewOnTransposed).title;
    d.stage = StageId::Concat;
    d.line = run.error->line;
    d.text = mistakeText(Mistake::ViewOnTransposed, t, run.error->line > 0 ? "line " + std::to_string(run.error->line) : "", {});
    const std::size_t at = indexOf(stages, StageId::Concat);
    if (at < stages.size() && at >= differs) {
      stages[differs].status = StageCheck::Status::NotSeen;
      markAround(stages, at);
    }
    report.diagnosis = d;
    return;
  }
  Diagnosis d;
  d.stage = sc.stage;
  d.line = pick ? pick->line : 0;
  if (run.error) {
    d.title = "Your code stopped";
    d.text = errorWords(*run.error);
  } else if (pick && !sc.shapeNote.empty()) {
    d.title = "Wrong shape";
    d.text = subject(captureWords(*pick)) + " has " + sc.shapeNote + " for " + stageInfo(sc.stage).title +
             ", not a mistake I know.";
  } else if (pick) {
    d.title = "Differs";
    d.text = subject(captureWords(*pick)) + " differs from the expected " + std::string(stageInfo(sc.stage).title) + " by " +
             formatFixed(sc.maxAbsDiff, 4) + " (max |\xce\x94|), not a mistake I know.";
  } else {
    d.title = "Not found";
    d.text = "no tensor of yours after the last matching stage takes the place of " + std::string(stageInfo(sc.stage).title) +
             ", and the output differs: not a mistake I know.";
  }
  report.diagnosis = d;
}

// [SECTION] checkFile

// A case that must raise did not: it ran, or got as far as the weights, which fit no module built
// with a remainder dropped.
bool didNotRaise(const LearnerError& e) { return e.kind == LearnerError::Kind::NoRaise || e.kind == LearnerError::Kind::Load; }

CaseResult judgeCase(const BuiltCase& bc, const CaseRun* run, double tol) {
  CaseResult r;
  r.id = bc.spec->id;
  r.title = bc.spec->title;
  if (!run) {
    r.why = "not run (the run stopped before it)";
    return r;
  }
  r.seconds = run->seconds;
  if (bc.spec->mustRaise) {
    r.passed = !run->error;
    if (run->error) r.why = didNotRaise(*run->error) ? "did not raise: d_model " + std::to_string(bc.spec->dModel) +
                                                           " is not divisible by h " + std::to_string(bc.spec->heads)
                                                     : errorWords(*run->error);
    return r;
  }
  if (run->error) {
    r.why = errorWords(*run->error);
    return r;
  }
  if (!run->output || !bc.expected) {
    r.why = "returned nothing";
    return r;
  }
  const Tensor& e = bc.expected->tensor(StageId::Output);
  if (run->output->numel() != e.numel()) {
    r.why = "returned shape " + shapeText(run->output->shape) + ", expected " + shapeText(e.shape);
    return r;
  }
  Tensor got = *run->output;
  r.maxAbsDiff = maxAbsDifference(got, e);
  std::int64_t nan = 0;
  for (float v : got.data) nan += !std::isfinite(v);
  r.passed = r.maxAbsDiff <= tol * (1.0 + scaleOf(e));
  if (!r.passed) {
    r.why = nan > 0 ? std::to_string(nan) + " of the output's " + std::to_string(got.numel()) + " numbers are NaN or inf"
                    : "output differs by " + formatFixed(r.maxAbsDiff, 4) + " (max |\xce\x94|)";
  }
  return r;
}

}  // namespace

std::string declaredExercise(std::string_view text) {
  const std::string_view marker = "# mhascope exercise:";
  for (int line = 0; line < 5 && !text.empty(); ++line) {
    const std::size_t end = text.find('\n');
    std::string_view l = text.substr(0, end);
    if (l.substr(0, marker.size()) == marker) {
      std::string_view id = l.substr(marker.size());
      while (!id.empty() && (id.front() == ' ' || id.front() == '\t')) id.remove_prefix(1);
      while (!id.empty() && (id.back() == ' ' || id.back() == '\r' || id.back() == '\t')) id.remove_suffix(1);
      return std::string(id);
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return "";
}

Result<CheckReport> checkFile(const Exercise& exercise, const std::string& file, const CheckOptions& options,
                              const std::atomic<bool>* cancel) {
  const auto start = std::chrono::steady_clock::now();
  CheckReport report;
  report.exerciseId = exercise.id;
  report.file = file;
  std::vector<BuiltCase> built;
  for (const PracticeCase& c : exercise.cases) {
    built.push_back(buildCase(c));
    if (!built.back().buildError.empty()) return makeError(built.back().buildError);
  }
  LearnerRequest req;
  req.file = file;
  req.exercise = &exercise;
  req.limits = options.limits;
  req.python = options.python;
  req.harness = options.harness;
  for (const BuiltCase& b : built) req.cases.push_back(b.inputs);
  Result<LearnerRun> ran = runLearner(req, cancel);
  if (!ran) return ran.error();
  const LearnerRun& run = *ran;
  report.printed = run.printed;
  report.error = run.error;
  int passed = 0;
  for (std::size_t i = 0; i < built.size(); ++i) {
    const CaseRun* cr = nullptr;
    for (const CaseRun& r : run.cases)
      if (r.caseId == built[i].spec->id) cr = &r;
    report.cases.push_back(judgeCase(built[i], cr, options.tolerance));
    passed += report.cases.back().passed;
  }
  report.allPassed = passed == static_cast<int>(built.size()) && !run.error;
  // The shown case: the first failing one with stages to show, else the first.
  report.shownCase = 0;
  for (std::size_t i = 0; i < built.size(); ++i) {
    if (!report.cases[i].passed && built[i].expected && !built[i].spec->decode) {
      report.shownCase = static_cast<int>(i);
      break;
    }
  }
  const BuiltCase& shown = built[static_cast<std::size_t>(report.shownCase)];
  const CaseRun* shownRun = nullptr;
  for (const CaseRun& r : run.cases)
    if (r.caseId == shown.spec->id) shownRun = &r;
  if (shown.expected) {
    report.expected = *shown.expected;
    if (shownRun) {
      report.loads = shownRun->loads;
      if (shownRun->error && !report.error) report.error = shownRun->error;
      StageMatch m = matchStages(report.expected, *shownRun, options.tolerance);
      if (!report.cases[static_cast<std::size_t>(report.shownCase)].passed) {
        diagnose(report, report.expected, *shownRun, m, options.tolerance);
      }
      report.stages = std::move(m.stages);
    }
  }
  // The shown case passes but another fails: a case of its own kind.
  if (!report.diagnosis && !report.allPassed) {
    for (std::size_t i = 0; i < built.size(); ++i) {
      if (report.cases[i].passed) continue;
      const CaseRun* cr = nullptr;
      for (const CaseRun& r : run.cases)
        if (r.caseId == built[i].spec->id) cr = &r;
      if (!cr) continue;
      if (built[i].spec->mustRaise && cr->error && didNotRaise(*cr->error)) {
        Diagnosis d;
        d.mistake = mistakeInfo(Mistake::NoDivisibilityCheck).key;
        d.title = mistakeInfo(Mistake::NoDivisibilityCheck).title;
        d.stage = mistakeInfo(Mistake::NoDivisibilityCheck).stage;
        d.text = "case " + built[i].spec->id + ": d_model = " + std::to_string(built[i].spec->dModel) +
                 " is not divisible by h = " + std::to_string(built[i].spec->heads) + " and your code ran: d_k = " +
                 std::to_string(built[i].spec->dModel / std::max(1, built[i].spec->heads)) +
                 " drops the remainder's features. Raise ValueError when d_model % num_heads != 0.";
        report.diagnosis = d;
        break;
      }
      if (built[i].spec->decode && built[i].expected && cr->output) {
        if (auto o = computeMistake(*built[i].expected, Mistake::CacheNotKept); o && fitTo(*cr->output, o->output, options.tolerance).found) {
          Diagnosis d;
          d.mistake = mistakeInfo(Mistake::CacheNotKept).key;
          d.title = mistakeInfo(Mistake::CacheNotKept).title;
          d.stage = StageId::Output;
          d.text = "case " + built[i].spec->id + ": " + mistakeText(Mistake::CacheNotKept, *built[i].expected, "step by step", {});
          report.diagnosis = d;
          break;
        }
      }
    }
  }
  // The summary line.
  report.summary = std::to_string(passed) + " of " + std::to_string(built.size()) + " cases pass";
  for (const StageCheck& s : report.stages) {
    if (s.status != StageCheck::Status::Differs) continue;
    report.summary += std::string("; first difference at ") + stageInfo(s.stage).name;
    if (s.capture && s.capture->line > 0) report.summary += " (line " + std::to_string(s.capture->line) + ")";
  }
  if (report.diagnosis && !report.diagnosis->mistake.empty()) report.summary += ": " + report.diagnosis->title;
  if (report.error && report.error->kind != LearnerError::Kind::Exception && report.cases.empty()) {
    report.summary = errorWords(*report.error);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

// [SECTION] the report as text and JSON

const char* stageStatusName(StageCheck::Status s) {
  switch (s) {
    case StageCheck::Status::Match: return "match";
    case StageCheck::Status::Differs: return "differs";
    case StageCheck::Status::After: return "after";
    case StageCheck::Status::NotSeen: return "not seen";
  }
  return "";
}

std::string reportText(const CheckReport& r) {
  std::string s = "exercise " + r.exerciseId + ", file " + printableMessage(r.file) + "\n";
  if (r.error && (r.error->kind == LearnerError::Kind::Syntax || r.error->kind == LearnerError::Kind::Import ||
                  r.error->kind == LearnerError::Kind::Timeout || r.error->kind == LearnerError::Kind::Crash ||
                  r.error->kind == LearnerError::Kind::Load || r.error->kind == LearnerError::Kind::Memory)) {
    s += "error (" + std::string(errorKindName(r.error->kind)) + "): " + printableMessage(errorWords(*r.error)) + "\n";
    if (!r.error->traceback.empty()) s += printableMessage(r.error->traceback) + "\n";
  }
  s += "cases:\n";
  for (const CaseResult& c : r.cases) {
    s += std::string(c.passed ? "  pass  " : "  FAIL  ") + c.id + " \xe2\x80\x94 " + c.title;
    if (!c.passed) s += ": " + printableMessage(c.why);
    s += "\n";
  }
  if (!r.stages.empty()) {
    s += "stages (case " + r.cases[static_cast<std::size_t>(r.shownCase)].id + "):\n";
    for (const StageCheck& st : r.stages) {
      const char* mark = st.status == StageCheck::Status::Match     ? "  ok       "
                         : st.status == StageCheck::Status::Differs ? "  DIFFERS  "
                         : st.status == StageCheck::Status::After   ? "  -        "
                                                                    : "  not seen ";
      s += mark + std::string(stageInfo(st.stage).name);
      if (st.capture) s += "  " + printableMessage(captureWords(*st.capture));
      if (!st.layout.empty()) s += " as " + st.layout;
      if (st.status == StageCheck::Status::Differs && !st.shapeNote.empty()) s += "; " + st.shapeNote;
      s += "\n";
    }
  }
  if (r.diagnosis) {
    s += "diagnosis: " + r.diagnosis->title + "\n  " + printableMessage(r.diagnosis->text) + "\n";
  }
  if (!r.printed.empty()) s += "your code printed:\n" + printableMessage(r.printed) + "\n";
  s += r.summary + (r.allPassed ? " \xe2\x80\x94 all pass\n" : "\n");
  return s;
}

std::string reportJson(const CheckReport& r) {
  nlohmann::json j;
  j["exercise"] = r.exerciseId;
  j["file"] = r.file;
  j["all_passed"] = r.allPassed;
  j["summary"] = r.summary;
  j["seconds"] = r.seconds;
  j["cases"] = nlohmann::json::array();
  for (const CaseResult& c : r.cases) {
    j["cases"].push_back({{"id", c.id}, {"title", c.title}, {"passed", c.passed}, {"why", c.why}, {"seconds", c.seconds}});
  }
  j["shown_case"] = r.cases.empty() ? "" : r.cases[static_cast<std::size_t>(r.shownCase)].id;
  j["stages"] = nlohmann::json::array();
  for (const StageCheck& st : r.stages) {
    nlohmann::json s = {{"stage", stageInfo(st.stage).name}, {"status", stageStatusName(st.status)}};
    if (st.capture) {
      s["name"] = st.capture->name;
      s["line"] = st.capture->line;
      s["source"] = st.capture->source == Capture::Source::Local ? "local" : "call";
    }
    if (!st.layout.empty()) s["layout"] = st.layout;
    if (!st.shapeNote.empty()) s["shape_note"] = st.shapeNote;
    if (st.status == StageCheck::Status::Differs || st.status == StageCheck::Status::Match) {
      s["max_abs_diff"] = std::isfinite(st.maxAbsDiff) ? nlohmann::json(st.maxAbsDiff) : nlohmann::json(nullptr);
    }
    j["stages"].push_back(s);
  }
  if (r.diagnosis) {
    j["diagnosis"] = {{"mistake", r.diagnosis->mistake}, {"title", r.diagnosis->title}, {"text", r.diagnosis->text},
                      {"stage", stageInfo(r.diagnosis->stage).name}, {"line", r.diagnosis->line}};
  } else {
    j["diagnosis"] = nullptr;
  }
  if (r.error) {
    j["error"] = {{"kind", errorKindName(r.error->kind)}, {"type", r.error->type}, {"message", r.error->message},
                  {"file", r.error->file}, {"line", r.error->line}};
  } else {
    j["error"] = nullptr;
  }
  j["printed"] = r.printed;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace mhascope::practice
