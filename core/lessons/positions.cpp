// Positions — sinusoidal codes, RoPE and ALiBi on the same sentence; RoPE's shift invariance
// measured on the engine's score tables.
#include <algorithm>
#include <cmath>
#include <iterator>

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

double sinusoidalShiftAsRotation(int dModel, int positions, int k) {
  if (dModel < 2 || positions < 1) return 0;
  const std::size_t d = static_cast<std::size_t>(dModel);
  std::vector<float> turn(d, 0.0f), pe(d), shifted(d);
  addPositionCode(k, turn.data(), dModel);  // (sin(k f_i), cos(k f_i)) per pair: R_k's entries
  double worst = 0;
  for (int p = 0; p < positions; ++p) {
    std::fill(pe.begin(), pe.end(), 0.0f);
    std::fill(shifted.begin(), shifted.end(), 0.0f);
    addPositionCode(p, pe.data(), dModel);
    addPositionCode(p + k, shifted.data(), dModel);
    for (std::size_t i = 0; i + 1 < d; i += 2) {
      const double sa = pe[i], ca = pe[i + 1], sb = turn[i], cb = turn[i + 1];
      // sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
      worst = std::max(worst, std::abs(sa * cb + ca * sb - shifted[i]));
      worst = std::max(worst, std::abs(ca * cb - sa * sb - shifted[i + 1]));
    }
  }
  return worst;
}

double ropeAlignedScore(const std::vector<RopeFrequency>& f, double distance) {
  if (f.empty()) return 0;
  double sum = 0;
  for (const RopeFrequency& x : f) sum += std::cos(distance * x.invFreq);
  return sum / static_cast<double>(f.size());
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
      ropeFrequencies(static_cast<int>(headDimOf(model.options, model.weights.dModel)), r.ropeBase, r.ropeStyle, shift, r.ropeInvFreq);
  r.slopes = alibiSlopes(model.options.heads);
  r.dModel = model.weights.dModel;
  r.positions = static_cast<int>(model.inputs.query.dim(1));
  r.sinusoidalRotationMax = sinusoidalShiftAsRotation(r.dModel, r.positions, shift);
  return r;
}

const char* positionsLessonIntro() {
  return "Without a mask attention is permutation-equivariant: shuffle the tokens and each output moves with its "
         "token, unchanged. Under a causal mask a model with no position code can still infer position, since "
         "token t sees exactly t + 1 tokens (causal models without positions train well: Haviv et al. 2022, "
         "Kazemnejad et al. 2023). Four ways to give it positions outright. Learned absolute positions (GPT-2, "
         "and the Train mode's default) add a trained vector per position to each input. Sinusoidal codes (the "
         "2017 paper) add a fixed vector PE(p) instead, so the position is mixed into q, k and v. RoPE (Su et al. "
         "2021; Llama, Mistral, Qwen) turns each pair of features of q and k by the angle p * inv_freq_i, "
         "inv_freq_i = base^(-2i/d_k): the score of query t and key j then depends on their contents and, for "
         "position, only on the offset t - j; v carries no position. ALiBi (Press et al. 2022; BLOOM, MPT) adds "
         "-m * (t - j) to head i's scaled scores, a penalty growing with the distance, steeper in the heads with "
         "the larger slope m.";
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
                      : "The model gives its own inv_freq_i (Llama 3.1's scaled RoPE, rope_type llama3: " + num(r.ropeBase, 6) +
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

std::string positionsTheoryText(const PositionsLesson& r) {
  const std::string D = std::to_string(r.shift);
  std::string s = "Why sinusoidal codes lead to RoPE: PE(p + " + D + ") = R_" + D + " PE(p), R_" + D +
                  " turning each (sin, cos) pair of features by the angle " + D +
                  " * freq_i (freq_i = 10000^(-2i/d_model)), one matrix whatever p, so a head can find \"the token " + D +
                  " back\" with a linear map (the "
                  "2017 paper's hypothesis for choosing them). Checked at d_model = " + std::to_string(r.dModel) +
                  ": max |R_" + D + " PE(p) - PE(p + " + D + ")| over p = 0 .. " + std::to_string(r.positions - 1) +
                  " is " + num(r.sinusoidalRotationMax, 2) +
                  ". Added to the inputs, though, the codes pass through W_q and W_k with the words; RoPE applies such "
                  "rotations to q and k themselves, so only the offset survives in q . k.";
  if (!r.frequencies.empty()) {
    s += " RoPE's long-range decay (Su et al. 2021): for q = k = (1, ..., 1) the score at distance m, over its "
         "value at m = 0, is the mean over the pairs of cos(m * inv_freq_i); with this d_k and inv_freq it is ";
    const std::size_t n = std::size(kRopeDecayDistances);
    for (std::size_t i = 0; i < n; ++i) {
      s += (i == 0 ? "" : i + 1 == n ? " and " : ", ") + num(ropeAlignedScore(r.frequencies, kRopeDecayDistances[i]), 3) +
           " at m = " + grouped(kRopeDecayDistances[i]);
    }
    s += ". With few pairs it mostly oscillates; with many (d_k 64 or 128) the mean falls with the distance. A "
         "tendency for aligned vectors, not a rule: other q and k can score high far apart.";
  }
  s += " Stretching RoPE past its training length: position interpolation divides every position by the stretch "
       "factor (Chen et al. 2023); NTK-aware scaling raises the base instead, slowing the slow pairs and hardly the "
       "fast ones (bloc97 2023); YaRN interpolates only the slow pairs and tempers the softmax (Peng et al. 2023); "
       "Llama 3.1's rope_type llama3 divides the frequencies of pairs whose wavelength exceeds 8,192 tokens by 8, "
       "keeps those below 2,048 tokens and blends in between (its config's factor 8, low/high_freq_factor 1 and 4). ALiBi was made to train short and test long (Press et al. 2022): "
       "the bias is defined at every distance, so a model trained on short texts runs on longer ones with no new "
       "parameters.";
  return s;
}

std::string positionsDifferenceMeaning(const PositionsLesson& r, bool rope) {
  return std::string("how much the raw score q · k of {q} against {k} (before scaling and the softmax) changes when ") +
         (rope ? "RoPE turns q and k by positions p + Δ" : "the codes PE(p + Δ) are added") + " instead of p, Δ = " +
         std::to_string(r.shift) + ": a score difference in the scores' own units, not a share of attention";
}

}  // namespace mhascope
