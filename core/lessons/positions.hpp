// Lesson "Positions" — three ways to tell attention where a token is, on the same sentence: sinusoidal
// codes added to the inputs, RoPE (q and k turned by an angle per position) and ALiBi (a bias that
// grows with the distance). RoPE's relative property shown on the engine's numbers: every position
// shifted by Δ leaves the score table as it was, while shifted sinusoidal codes change it. Reruns
// the pipeline.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "lessons/lesson.hpp"

namespace mhascope {

// One RoPE pair of features: inv_freq_i = base^(-2i/d_k) radians per position, or the model's own
// frequencies when it gives them (Llama 3.1's scaled RoPE: `invFreq`, d_k/2 of them).
struct RopeFrequency {
  int pair = 0;                // i
  int featureA = 0, featureB = 0;  // the two features turned together: (i, i + d_k/2) or (2i, 2i + 1)
  double invFreq = 0;          // radians per position
  double wavelength = 0;       // tokens per full turn: 2 pi / inv_freq
  double angleAtShift = 0;     // Δ · inv_freq: how far the shift turns this pair
};
std::vector<RopeFrequency> ropeFrequencies(int dk, float base, RopeStyle style, int shift,
                                           const std::vector<double>& invFreq = {});

// Sinusoidal codes are linear in one another: PE(p + k) = R_k PE(p), R_k turning each (sin, cos) pair of
// features by the angle k · freq_i, one matrix for every p. R_k is built from PE(k) alone (its pair
// (sin(k freq_i), cos(k freq_i))); returns max |R_k PE(p) - PE(p + k)| over p = 0 .. positions - 1 and every
// complete pair (an odd d_model's last feature has no partner), float rounding when it holds.
double sinusoidalShiftAsRotation(int dModel, int positions, int k);
// RoPE's long-range decay: the score of q = k = (1, ..., 1) at distance m over its value at m = 0, which is
// the mean over the pairs of cos(m · inv_freq_i). 0 for no pairs.
double ropeAlignedScore(const std::vector<RopeFrequency>& f, double distance);
// The distances positionsTheoryText reports ropeAlignedScore at.
inline constexpr int kRopeDecayDistances[] = {1, 10, 100, 1000, 10000};

struct PositionsLesson {
  int shift = 0;               // Δ
  bool codesRemoved = false;   // the inputs carried sinusoidal codes, taken off for the RoPE and ALiBi runs
  float ropeBase = 10000.0f;
  RopeStyle ropeStyle = RopeStyle::Half;
  std::vector<double> ropeInvFreq;  // the model's own frequencies (empty: from the base)
  // The same sentence and weights three ways (the configuration's masks and K/V heads kept).
  Trace sinusoidal;            // codes PE(p) added to the inputs
  Trace rope;                  // empty (no stages) when RoPE cannot run: ropeError says why
  std::string ropeError;
  Trace alibi;
  // Every position p -> p + Δ: the scores Q K^T after minus before, (B, h, T_q, T_k).
  Tensor ropeShiftDiff;        // RoPE: q and k turned by (p + Δ) · inv_freq instead of p · inv_freq
  Tensor sinusoidalShiftDiff;  // sinusoidal: codes PE(p + Δ) added instead of PE(p)
  double ropeShiftMax = 0, sinusoidalShiftMax = 0;  // max |difference|
  double ropeScoreMax = 0;     // max |score| under RoPE: what the difference is small against
  std::vector<RopeFrequency> frequencies;
  std::vector<float> slopes;   // ALiBi's m_i, one per head
  int dModel = 0, positions = 0;      // d_model and T: what the rotation check below covers
  double sinusoidalRotationMax = 0;   // sinusoidalShiftAsRotation(d_model, T, Δ)
};

// The model's inputs (sinusoidal codes taken off first when `inputsHaveCodes`) under each scheme.
Result<PositionsLesson> positionsLesson(const Model& model, int shift, bool inputsHaveCodes);

// The lesson's opening: the three schemes in a few sentences.
const char* positionsLessonIntro();
// What the shift did to each score table, with the live numbers.
std::string positionsShiftText(const PositionsLesson& r);
// What one cell of a "shifted − unshifted" map is, for its hover ("{q}" and "{k}": the tokens):
// the change of a raw score q·k (before scaling and the softmax), not a share of attention.
std::string positionsDifferenceMeaning(const PositionsLesson& r, bool rope);
// The fastest and slowest RoPE pairs: radians per position and wavelength.
std::string ropeFrequencyText(const PositionsLesson& r);
// ALiBi's slopes for this h and what they do.
std::string alibiSlopesText(const PositionsLesson& r);
// Why sinusoidal codes relate to RoPE (PE(p + Δ) = R_Δ PE(p), checked here), RoPE's long-range decay at
// this d_k and base, how RoPE contexts are extended, and what ALiBi was made for.
std::string positionsTheoryText(const PositionsLesson& r);

namespace lessons {

struct Positions {
  static constexpr const char* kId = "positions";
  static constexpr const char* kTitle = "Positions";
  static constexpr LessonGroup kGroup = LessonGroup::Today;  // its group in the lesson list
  static constexpr const char* kLearn =  // the list's "what you will learn"
      "How attention is told where a token is: position codes, RoPE's rotation, ALiBi's bias";
  static constexpr LessonCost kCost = LessonCost::Rerun;
  struct Choices {
    int shift = 5;  // Δ added to every position
    // Whether the shown model's inputs carry sinusoidal codes: a fact of its configuration that the
    // Model does not hold, so the tab copies it from the shown trace's configuration. Not saved.
    bool inputsHaveCodes = false;
    template <class C, class F>
    static void fields(C& c, F&& f) {
      f("positions_shift", c.shift);
    }
    void keepInRange(const Trace&) { shift = std::clamp(shift, 0, kMaxShift); }
    int variant() const { return shift * 2 + (inputsHaveCodes ? 1 : 0); }
    bool operator==(const Choices&) const = default;
    static constexpr int kMaxShift = 4096;
  };
  using Result = PositionsLesson;
  static mhascope::Result<Result> compute(const Model& model, const Choices& c) {
    return positionsLesson(model, c.shift, c.inputsHaveCodes);
  }
  template <class Ui>
  static void drawTab(Ui& ui, const LessonOutcome<Result>& shown, Choices& choices);
};

}  // namespace lessons
}  // namespace mhascope
