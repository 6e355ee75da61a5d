// Positions — sinusoidal codes, RoPE and ALiBi on the same sentence; RoPE's shift invariance
// measured on the engine's score tables.
#include <algorithm>
#include <cmath>

#include "attention/model.hpp"
#include "lessons/common.hpp"
#include "lessons/positions.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

namespace {

constexpr double kPi = 3.14159265358979323846;

// Adds sign * PE(firstPosition + t) to every row t of x (B, T, d_model).
void addCodes(Tensor& x, int firstPosition, float sign) {
  const auto B = x.dim(0), T = x.dim(1), d = x.dim(2);
  std::vector<float> code(idx(d));
  for (std::int64_t t = 0; t < T; ++t) {
    std::fill(code.begin(), code.end(), 0.0f);
    addPositionCode(static_cast<int>(firstPosition + t), code.data(), static_cast<int>(d));
    for (std::int64_t b = 0; b < B; ++b) {
      float* row = x.ptr() + (b * T + t) * d;
      for (std::int64_t j = 0; j < d; ++j) row[j] += sign * code[idx(j)];
    }
  }
}

// The inputs with PE(firstPosition + t) added to every position t of query, key and value.
AttentionInputs withCodes(const AttentionInputs& in, int firstPosition) {
  AttentionInputs out = in;
  for (Tensor* x : {&out.query, &out.key, &out.value}) addCodes(*x, firstPosition, 1.0f);
  return out;
}

// Q K^T of every (b, head) with q and k turned as at positions shift + p (the engine's rotation on
// the engine's unrotated heads): (B, h, T_q, T_k).
Tensor rotatedScores(const Trace& t, int shift, const std::vector<double>& invFreq) {
  const Tensor& qh = t.tensor(StageId::QHeads);  // (B, h, T_q, d_k)
  const Tensor& kh = t.tensor(StageId::KHeads);  // (B, N, T_k, d_k)
  const std::int64_t B = t.batch, h = t.heads, N = kh.dim(1), Tq = t.tq, Tk = t.tk, dk = t.dk;
  Tensor q = qh, k = kh;
  for (std::int64_t i = 0; i < B * h; ++i) rotatePositions(q.ptr() + i * Tq * dk, Tq, dk, shift, t.ropeBase, t.ropeStyle, invFreq);
  for (std::int64_t i = 0; i < B * N; ++i) rotatePositions(k.ptr() + i * Tk * dk, Tk, dk, shift, t.ropeBase, t.ropeStyle, invFreq);
  Tensor s({B, h, Tq, Tk}, {"B", "h", "T_q", "T_k"});
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < h; ++i) {
      const std::int64_t g = i / (h / N);  // the K/V head query head i reads
      MatrixMap(s.ptr() + (b * h + i) * Tq * Tk, Tq, Tk).noalias() =
          ConstMatrixMap(q.ptr() + (b * h + i) * Tq * dk, Tq, dk) *
          ConstMatrixMap(k.ptr() + (b * N + g) * Tk * dk, Tk, dk).transpose();
    }
  }
  return s;
}

// after - before, and its max |cell|.
double difference(const Tensor& after, const Tensor& before, Tensor& out) {
  out = Tensor(after.shape, after.axes);
  double m = 0;
  for (std::size_t i = 0; i < after.data.size(); ++i) {
    out.data[i] = after.data[i] - before.data[i];
    m = std::max(m, std::abs(static_cast<double>(out.data[i])));
  }
  return m;
}

}  // namespace

std::vector<RopeFrequency> ropeFrequencies(int dk, float base, RopeStyle style, int shift,
                                           const std::vector<double>& invFreq) {
  std::vector<RopeFrequency> out;
  const int half = dk / 2;
  for (int i = 0; i < half; ++i) {
    RopeFrequency f;
    f.pair = i;
    f.featureA = style == RopeStyle::Half ? i : 2 * i;
    f.featureB = style == RopeStyle::Half ? i + half : 2 * i + 1;
    f.invFreq = invFreq.size() == static_cast<std::size_t>(half) ? invFreq[static_cast<std::size_t>(i)]
                                                                  : std::pow(static_cast<double>(base), -2.0 * i / dk);
    f.wavelength = 2.0 * kPi / f.invFreq;
    f.angleAtShift = shift * f.invFreq;
    out.push_back(f);
  }
  return out;
}

Result<PositionsLesson> positionsLesson(const Model& model, int shift, bool inputsHaveCodes) {
  if (shift < 0) return makeError("the shift Δ (" + std::to_string(shift) + ") must be 0 or more");
  PositionsLesson r;
  r.shift = shift;
  r.codesRemoved = inputsHaveCodes;
  r.ropeBase = model.options.ropeBase;
  r.ropeStyle = model.options.ropeStyle;
  r.ropeInvFreq = model.options.ropeInvFreq;  // a model's scaled frequencies: RoPE's run keeps them
  AttentionInputs plain = model.inputs;  // the tokens' own vectors, no position in them
  if (inputsHaveCodes)
    for (Tensor* x : {&plain.query, &plain.key, &plain.value}) addCodes(*x, 0, -1.0f);
  AttentionOptions none = model.options;
  none.positions = AttnPositions::None;
  none.ropeInvFreq.clear();     // frequencies belong to RoPE only
  none.scoresOverride.reset();  // the comparison is of computed scores
  AttentionOptions rope = none, alibi = none;
  rope.positions = AttnPositions::Rope;
  rope.ropeInvFreq = r.ropeInvFreq;
  alibi.positions = AttnPositions::Alibi;

  if (auto s = forward(withCodes(plain, 0), model.weights, none, r.sinusoidal); !s) return s.error();
  if (auto s = forward(plain, model.weights, alibi, r.alibi); !s) return s.error();
  {
    Trace shifted;
    if (auto s = forward(withCodes(plain, shift), model.weights, none, shifted); !s) return s.error();
    r.sinusoidalShiftMax =
        difference(shifted.tensor(StageId::Scores), r.sinusoidal.tensor(StageId::Scores), r.sinusoidalShiftDiff);
  }
  if (auto s = forward(plain, model.weights, rope, r.rope); !s) {
    r.ropeError = s.error().message;  // an odd d_k: the other two still teach
    r.rope = Trace{};
  } else {
    const Tensor& scores = r.rope.tensor(StageId::Scores);
    r.ropeShiftMax = difference(rotatedScores(r.rope, shift, r.ropeInvFreq), scores, r.ropeShiftDiff);
    for (float v : scores.data) r.ropeScoreMax = std::max(r.ropeScoreMax, std::abs(static_cast<double>(v)));
  }
  r.frequencies =
      ropeFrequencies(model.weights.dModel / model.options.heads, r.ropeBase, r.ropeStyle, shift, r.ropeInvFreq);
  r.slopes = alibiSlopes(model.options.heads);
  return r;
}

const char* positionsLessonIntro() {
  return "Attention itself ignores order: shuffle the tokens and each one gets the same output. Three ways to "
         "tell it where a token is. Sinusoidal codes (the 2017 paper) add a vector PE(p) to each input before "
         "the projections, so the position is mixed into q, k and v. RoPE (Llama, Mistral, Qwen) turns each "
         "pair of features of q and k by the angle p * inv_freq_i, inv_freq_i = base^(-2i/d_k): the score of "
         "query t and key j then depends on their distance t - j alone, and v carries no position. ALiBi (BLOOM, "
         "MPT) adds -m * (t - j) to head i's scaled scores, a penalty growing with the distance, steeper in the "
         "heads with the larger slope m.";
}

std::string positionsShiftText(const PositionsLesson& r) {
  if (r.shift == 0) return "Δ = 0: every position stays where it is, so nothing moves. Slide Δ to shift them.";
  const std::string D = std::to_string(r.shift);
  std::string s = "Every position moved by Δ = " + D + " (p -> p + " + D + ", queries and keys alike). ";
  if (!r.ropeError.empty()) {
    s += "RoPE cannot run here (" + r.ropeError + "). ";
  } else if (r.ropeShiftMax <= 1e-5 * std::max(1.0, r.ropeScoreMax)) {
    s += "RoPE: the score table changes by at most " + num(r.ropeShiftMax, 2) + " (scores reach " +
         num(r.ropeScoreMax, 3) + "), float rounding: it is unchanged, because turning q by (t + Δ) and k by "
         "(j + Δ) leaves their dot product turned by t - j alone. ";
  } else {
    s += "RoPE: the score table changes by up to " + num(r.ropeShiftMax, 3) + " (scores reach " +
         num(r.ropeScoreMax, 3) + "): at positions this large the float angles lose digits. ";
  }
  s += "Sinusoidal codes PE(p + " + D + ") added to the inputs instead of PE(p) change it by up to " +
       num(r.sinusoidalShiftMax, 3) + ": the codes go through W_q and W_k with the words, so the scores depend "
                                       "on where the sentence starts, not only on distances.";
  return s;
}

std::string ropeFrequencyText(const PositionsLesson& r) {
  if (r.frequencies.empty()) return "d_k = 1 has no pair of features to turn.";
  const RopeFrequency& fast = r.frequencies.front();
  const RopeFrequency& slow = r.frequencies.back();
  std::string s = r.ropeInvFreq.empty()
                      ? "inv_freq_i = " + num(r.ropeBase, 6) + "^(-2i/d_k). "
                      : "The model gives its own inv_freq_i (Llama 3's scaled RoPE: " + num(r.ropeBase, 6) +
                            "^(-2i/d_k) with the slow pairs slowed further, for long contexts). ";
  s += "Pair 0 (features " + std::to_string(fast.featureA) +
                  ", " + std::to_string(fast.featureB) + ") turns by " + num(fast.invFreq, 3) +
                  " rad per position, a full turn every " + num(fast.wavelength, 3) + " tokens";
  if (r.frequencies.size() > 1) {
    s += "; the last pair, " + std::to_string(slow.pair) + " (features " + std::to_string(slow.featureA) + ", " +
         std::to_string(slow.featureB) + "), by " + num(slow.invFreq, 3) + " rad, a full turn every " +
         num(slow.wavelength, 4) + " tokens";
  }
  s += ". Fast pairs tell neighbours apart, slow ones keep distances far apart distinct. The pairs are " +
       std::string(r.ropeStyle == RopeStyle::Half ? "(i, i + d_k/2), the rotate-half layout of Hugging Face Llama"
                                                  : "(2i, 2i + 1), the interleaved layout of the original Llama code") +
       ".";
  return s;
}

std::string alibiSlopesText(const PositionsLesson& r) {
  const int h = static_cast<int>(r.slopes.size());
  if (h == 0) return "";
  std::string list;
  for (int i = 0; i < h; ++i) list += (i ? ", " : "") + std::string("2^-") + num(-std::log2(r.slopes[idx(i)]), 3);
  const bool power = (h & (h - 1)) == 0;
  std::string s = "ALiBi slopes for h = " + std::to_string(h) + ": m = " + list + ". ";
  s += power ? "h is a power of two: m_i = 2^(-8i/h), i = 1 .. h. "
             : "h is not a power of two: the slopes of the power of two below it, then every other slope of twice "
               "that. ";
  s += "Head 0 subtracts " + num(r.slopes.front(), 3) + " per token of distance and looks mostly nearby";
  if (h > 1) s += "; head " + std::to_string(h - 1) + " only " + num(r.slopes.back(), 3) + ", so it sees far";
  s += ". No learned weights: the bias is a fixed table.";
  return s;
}

std::string positionsDifferenceMeaning(const PositionsLesson& r, bool rope) {
  return std::string("how much the raw score q · k of {q} against {k} (before scaling and the softmax) changes when ") +
         (rope ? "RoPE turns q and k by positions p + Δ" : "the codes PE(p + Δ) are added") + " instead of p, Δ = " +
         std::to_string(r.shift) + ": a score difference in the scores' own units, not a share of attention";
}

}  // namespace mhascope
