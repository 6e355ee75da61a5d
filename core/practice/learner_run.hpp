// The learner's code, run in a child process: Debian's /usr/bin/python3 runs the committed harness
// (assets/practice/harness.py) on the learner's file, in a temporary folder, with no standard input,
// a time limit, a memory limit and bounded output. The harness loads the app's weights into the
// learner's module by name and shape, calls it on each test case's inputs, and records every tensor
// the learner's code makes (see Capture), so the check can say which stage went wrong and where.
//
// The exchange is files in the temporary folder (formats: docs/practice.md#how-checking-works):
//   request.json   written here: the learner's file, the entry point, the cases' array files
//   <name>.npy     written here: each case's inputs and weights (float32; masks as bool)
//   manifest.json  written by the harness: each case's outcome, its output file and captures
//   c<i>_*.npy     written by the harness: the outputs and the captured tensors
// Whatever the learner's code does — loop, crash, allocate, print megabytes, return garbage — the
// result is a LearnerRun whose errors name the learner's file and line; never an exception here.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "practice/exercises.hpp"
#include "util/result.hpp"

namespace mhascope::practice {

struct RunLimits {
  double wallSeconds = 20.0;                // the whole run, every case (the child is killed past it)
  std::uint64_t memoryBytes = 3ull << 30;   // the child's data segment (RLIMIT_DATA)
  std::uint64_t outputBytes = 64u << 10;    // what the learner's prints may take (the rest is dropped, said)
  int maxCaptures = 4000;                   // per case
  std::uint64_t captureBytes = 256ull << 20;  // every captured tensor of a case together
};

// One case's inputs, in the engine's convention: "query", "key", "value", "x" (B, T, d_model);
// "mask" (bool as 0/1 floats, the case's shape); "W_q" … "W_o" (d_in, d_out), y = x W.
struct CaseInputs {
  std::string caseId;
  std::map<std::string, Tensor> arrays;
  bool mustRaise = false;  // the call is expected to raise
  bool decode = false;     // called one token at a time through the exercise's step method
  int dModel = 0, heads = 0, kvHeads = 0;  // the constructor's d_model, num_heads, num_kv_heads
};

struct LearnerRequest {
  std::string file;     // the learner's .py file (absolute)
  const Exercise* exercise = nullptr;
  std::vector<CaseInputs> cases;
  RunLimits limits;
  std::string python = "/usr/bin/python3";
  std::string harness;  // empty: assetsDir()/practice/harness.py
};

// A tensor the learner's code made, as the harness saw it.
struct Capture {
  enum class Source {
    Local,  // a local variable of a function in the learner's file, seen when its value changed
    Call,   // the result of a torch function or Tensor method called from a line of the learner's file
  };
  Source source = Source::Local;
  std::string name;      // the variable ("scores"), or the function ("matmul", "softmax", "Tensor.view")
  std::string function;  // the learner's function it was made in ("forward", "_split_heads")
  int line = 0;          // the line of the learner's file that made it
  int order = 0;         // when, among the case's captures (0 first)
  Tensor value;          // float32, the shape the learner's tensor had
  bool contiguous = true;
};

// What went wrong in the learner's code, with where.
struct LearnerError {
  enum class Kind {
    Syntax,      // the file does not compile
    Import,      // an error while importing the file (module level), or the entry point is missing
    Load,        // the weights fit none of the module's parameters (names and shapes said)
    Exception,   // the call raised
    NoRaise,     // a case that must raise did not
    Return,      // the call returned something that is not one tensor / array of the expected shape
    Timeout,     // the time limit ran out (the case and the line it was on, when known)
    Memory,      // the memory limit (MemoryError, or the child killed by it)
    Crash,       // the child died of a signal, or the harness failed
  };
  Kind kind = Kind::Crash;
  std::string type;     // the Python exception's type ("RuntimeError"), when there is one
  std::string message;  // one or a few lines, the learner's and ours
  std::string file;     // the learner's file when the error is in it
  int line = 0;         // its line (0: unknown)
  std::string traceback;  // the frames in the learner's file, innermost last
};

// How one of the learner's parameters received its weight.
struct WeightLoad {
  std::string parameter;  // "W_q.weight"
  std::string weight;     // "W_q", or "W_q|W_k|W_v" for a fused projection
  bool transposed = false;  // stored as nn.Linear does, (out, in) = Wᵀ
};

struct CaseRun {
  std::string caseId;
  std::optional<Tensor> output;  // (B, T_q, d_model) as returned (decode: the steps' rows, in order)
  std::optional<LearnerError> error;
  std::vector<Capture> captures;  // in the order they were made
  bool capturesTruncated = false;  // maxCaptures or captureBytes reached
  std::vector<WeightLoad> loads;
  double seconds = 0;
};

struct LearnerRun {
  std::vector<CaseRun> cases;            // in the request's order; those not reached are absent
  std::optional<LearnerError> error;     // what stopped the whole run (syntax, import, timeout, crash)
  std::string printed;                   // what the learner's code printed (bounded)
  bool printedTruncated = false;
  double seconds = 0;                    // wall time of the child, import included
};

// Runs the harness on the learner's file. An error here is ours (no python, no temporary folder,
// a request that cannot be written); everything the learner's code does is in the LearnerRun.
// `cancel` set: the child is killed and the result says so.
Result<LearnerRun> runLearner(const LearnerRequest& request, const std::atomic<bool>* cancel = nullptr);

const char* errorKindName(LearnerError::Kind kind);  // "syntax", "exception", … (the JSON report's words)

}  // namespace mhascope::practice
