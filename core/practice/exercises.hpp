// The practice exercises: what the learner implements (statement, signature, starter file, hints,
// a reference solution, complexity, interview points) and the test cases their code is run on.
// One list (allExercises); the command line and the window find an exercise by its id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mhascope::practice {

enum class Framework { Torch, Numpy };

// What a test case passes as the exercise's mask argument (bool, True = blocked, PyTorch's polarity).
enum class CaseMask {
  None,        // no mask argument
  Causal,      // (T_q, T_k): key k blocked for query q when k > q
  KeyPadding,  // (B, 1, 1, T_k): the padded keys of each batch item (broadcast over heads and queries)
};

struct PracticeCase {
  std::string id;     // "self", "batch", "causal", "padding", "cross", "one_head", "head_per_feature",
                      // "indivisible", "large_scores", "decode", "mqa", …
  std::string title;  // "self-attention (B = 1, T = 6, d_model = 16, h = 4)"
  int batch = 1, tq = 6, tk = 6;  // B, T_q, T_k (T_k = T_q unless cross)
  // d_model 24, h 4: d_k = 6, so √d_model (4.9), d_k and √d_k (2.4) differ and no two scale
  // mistakes give the same numbers.
  int dModel = 24, heads = 4;
  int kvHeads = 0;                 // N K/V heads (grouped-query attention); 0: N = h
  bool cross = false;              // key = value, a sequence of its own (T_k may differ from T_q)
  CaseMask mask = CaseMask::None;  // what is passed as the mask argument
  bool causal = false;             // the exercise builds a causal mask itself (the engine applies one)
  bool rope = false;               // RoPE on q and k (rotate-half, base 10000, positions 0 … T-1)
  float inputScale = 1.0f;         // the inputs multiplied by this (large scores: the softmax's stability)
  bool mustRaise = false;          // d_model not divisible by h: the constructor or the call must raise
  bool decode = false;             // run one token at a time through the exercise's step method
  std::uint64_t seed = 1;          // inputs and weights (initWeights' rule)
};

struct Exercise {
  std::string id;       // "mha", "mha_single_head", "mha_numpy", "causal", "gqa_kv_cache", "rope"
  std::string title;    // "Multi-head attention from scratch"
  std::string summary;  // one line for the list
  Framework framework = Framework::Torch;
  std::string statement;  // what to implement, in words (paragraphs separated by blank lines)
  std::string signature;  // the Python signature(s) the learner fills in
  // Files under assets/practice/ (assetsDir()): the starter the learner copies, the reference solution.
  std::string starterAsset, solutionAsset;
  // How the harness calls the learner's code. entry: the class (Torch) or function (Numpy) to call.
  std::string entry;
  // The constructor's positional arguments (Torch): "d_model", "num_heads", "num_kv_heads".
  std::vector<std::string> initArgs;
  // The call's positional arguments: "query", "key", "value", "x" (self-attention: the one input),
  // "W_q", "W_k", "W_v", "W_o" (NumPy: matrices as y = x W, shape (d_in, d_out)), "num_heads".
  std::vector<std::string> callArgs;
  std::string maskArg;     // the mask's keyword argument ("mask"); empty: the exercise takes no mask
  std::string stepMethod;  // the decoding method (one token: step(x_t, cache) -> (out_t, cache)), or empty
  std::vector<std::string> hints;            // revealed one at a time
  std::string complexity;                    // time and memory in B, T, d_model, h
  std::vector<std::string> interviewPoints;  // what an interviewer asks about this exercise
  std::vector<PracticeCase> cases;           // the first one is the case whose stages are shown
};

const std::vector<Exercise>& allExercises();
const Exercise* findExercise(std::string_view id);
std::string exerciseIdsList();  // "mha, mha_single_head, …" for error messages

}  // namespace mhascope::practice
