// What the parts of a practice check share; not part of the module's interface (check.hpp).
//   check_match.cpp      the cases (inputs, weights, the engine's trace) and the learner's tensors
//                        matched by value to the engine's stages, in any layout a correct solution uses
//   check_diagnosis.cpp  which stage differs first, and which known mistake the learner's tensor equals
//   check.cpp            checkFile: every case run and judged, the shown case diagnosed
//   check_report.cpp     the report as text and JSON
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "attention/trace.hpp"
#include "lessons/mistakes.hpp"
#include "practice/check.hpp"
#include "practice/exercises.hpp"
#include "practice/learner_run.hpp"

namespace mhascope::practice::detail {

struct BuiltCase {
  const PracticeCase* spec = nullptr;
  CaseInputs inputs;               // what the learner's code receives
  std::optional<Trace> expected;   // the engine's trace (none for a case that must raise)
  std::string buildError;          // the engine refused the case (a bug of the exercise list)
};

// The case's inputs and weights (seeded from the case) and the engine's trace of them.
BuiltCase buildCase(const PracticeCase& c);

// The tensor's largest finite magnitude: what a relative tolerance is relative to.
double scaleOf(const Tensor& t);

struct Fit {
  bool found = false;
  std::vector<int> perm;  // the capture's axes in the expected layout's order
  int head = -1;          // ≥ 0: the capture is this head's slice alone (a loop over heads)
  std::string layout;     // words, empty for the expected layout itself
};

// strict: the capture's own shape is e's, or a permutation of e's axes (no reshape: a mistake's
// tensor is the one the mistaken code made, not the same numbers in another shape).
Fit fitTo(const Tensor& capture, const Tensor& e, double relTol, bool strict = false);

// "(2, 4, 5)".
std::string shapeText(const Shape& s);

// "`scores` (line 31)", "the result of Tensor.div (line 48)".
std::string captureWords(const Capture& c);

// The largest |a − e| over the finite cells; infinite when NaN or ±inf do not agree.
double maxAbsDifference(const Tensor& a, const Tensor& e);

// The learner's tensor in the stage's own shape and its difference from the expected one.
void fillTensors(StageCheck& sc, const Capture& c, const Fit& f, const Tensor& e);

struct StageMatch {
  std::vector<StageCheck> stages;
  std::vector<bool> used;   // per capture: matched to a stage
  std::vector<bool> exact;  // per capture: matched to a stage in its shape or a permutation of it (a right tensor)
};

// Each of the trace's stages matched by value to the captures of the learner's run.
StageMatch matchStages(const Trace& t, const CaseRun& run, double tol);

// What mistake m is, in words with this trace's numbers; `who` names the learner's tensor.
std::string mistakeText(Mistake m, const Trace& t, const std::string& who, const Tensor& learner);

// The learner's error as one line: its type, its line and its message.
std::string errorWords(const LearnerError& e);

// The shown case failed: which stage differs first, the learner's tensor there, and the mistake.
void diagnose(CheckReport& report, const Trace& t, const CaseRun& run, StageMatch& m, double tol);

}  // namespace mhascope::practice::detail
