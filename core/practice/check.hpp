// Checking the learner's file: the engine computes every stage of each test case with the same
// weights and inputs; the learner's code runs in a child process (learner_run.hpp); each tensor the
// code made is matched by value, within a tolerance and allowing the layouts a correct solution may
// use, to the stage it equals; the first stage no tensor equals is the one that differs, and the
// mistake library (mistakes.hpp) names the mistake when the learner's tensor equals what it makes.
// The command line (`practice check`) and the window's Practice view show this one report.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "attention/trace.hpp"
#include "practice/exercises.hpp"
#include "practice/learner_run.hpp"
#include "util/result.hpp"

namespace mhascope::practice {

struct CheckOptions {
  RunLimits limits;
  std::string python = "/usr/bin/python3";
  std::string harness;   // empty: assetsDir()/practice/harness.py
  double tolerance = 1e-4;  // max |a − b| / (1 + max |b|) for "equal"
};

// One stage of the pipeline, for the case whose stages are shown.
struct StageCheck {
  StageId stage = StageId::QProj;
  enum class Status {
    Match,    // a tensor of the learner's equals it (✔)
    Differs,  // the first stage no tensor equals, while a later one is wrong too (✘)
    After,    // past the first difference: not checked (its inputs are already wrong)
    NotSeen,  // no tensor of the learner's equals it, but the stages after it match (kept in no variable)
  };
  Status status = Status::NotSeen;
  // The learner's tensor that matched it, or at Differs the one that takes its place.
  std::optional<Capture> capture;
  std::string layout;  // "(B, T, h, d_k), before the transpose" when it matched in another layout
  // At Match and Differs: the learner's tensor in the stage's own shape (empty when it cannot be put
  // there: a wrong shape), and the difference learner − expected.
  Tensor learner, difference;
  double maxAbsDiff = 0;
  std::string shapeNote;  // "shape (1, 6, 4) where (1, 6, 16) is expected", empty when the shape fits
  // Which of the harness's two sources held a tensor equal to it (docs/practice.md measures them).
  bool byLocal = false, byCall = false;
};

// A known mistake, found because the learner's tensor equals what that mistake computes.
struct Diagnosis {
  std::string mistake;  // the library's id ("scale_by_sqrt_d_model")
  std::string title;    // "Scaled by √d_model"
  std::string text;     // the plain-words explanation with this case's numbers and the learner's line
  StageId stage = StageId::ScaledScores;
  int line = 0;         // the learner's line, 0 when unknown
};

struct CaseResult {
  std::string id, title;
  bool passed = false;
  std::string why;  // failed: "output differs by 0.31 (max |Δ|)", "raised ValueError at line 12: …"
  double maxAbsDiff = 0;
  double seconds = 0;
};

struct CheckReport {
  std::string exerciseId, file;
  std::vector<CaseResult> cases;
  int shownCase = 0;               // whose stages and trace are below: the first failing case, else 0
  Trace expected;                  // the engine's trace of the shown case
  std::vector<StageCheck> stages;  // the exercise's stages, in pipeline order
  std::optional<Diagnosis> diagnosis;
  std::optional<LearnerError> error;  // what stopped the run or the shown case
  std::vector<WeightLoad> loads;      // how the weights went into the learner's parameters
  std::string printed;                // what the learner's code printed (bounded)
  bool allPassed = false;
  std::string summary;  // one line: "7 of 9 cases pass; first difference at scaled scores (line 31)"
  double seconds = 0;
};

// Checks `file` as a solution of `exercise`. An error is ours (no Python, no temporary folder);
// the learner's mistakes and failures are in the report.
Result<CheckReport> checkFile(const Exercise& exercise, const std::string& file, const CheckOptions& options = {},
                              const std::atomic<bool>* cancel = nullptr);

// The exercise a file declares on its first lines ("# mhascope exercise: mha"), or empty.
std::string declaredExercise(std::string_view fileText);

std::string reportText(const CheckReport& report);  // what `practice check` prints
std::string reportJson(const CheckReport& report);  // `practice check --json`: docs/practice.md

const char* stageStatusName(StageCheck::Status s);  // "match", "differs", "after", "not seen"

}  // namespace mhascope::practice
