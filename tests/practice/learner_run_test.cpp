// The learner's code run in a child process through the real harness (Debian's /usr/bin/python3
// with torch): a correct multi-head attention's output and captured stages compared with a plain
// computation here, and each kind of bad program (tests/fixtures/practice/bad/) reported, bounded,
// with its file and line.
#include "practice/learner_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

namespace mhascope::practice {
namespace {

namespace fs = std::filesystem;

const std::string kBad = std::string(MHASCOPE_FIXTURES_DIR) + "/practice/bad/";

Exercise mhaExercise() {
  Exercise ex;
  ex.id = "mha";
  ex.framework = Framework::Torch;
  ex.entry = "MultiHeadAttention";
  ex.initArgs = {"d_model", "num_heads"};
  ex.callArgs = {"query", "key", "value"};
  ex.maskArg = "mask";
  return ex;
}

Tensor randomTensor(Shape shape, std::mt19937& rng, float scale = 1.0f) {
  Tensor t(std::move(shape), {});
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : t.data) v = scale * normal(rng);
  return t;
}

enum class MaskKind { None, Causal, Padding };

CaseInputs makeCase(std::string id, int B, int tq, int tk, int d, int h, MaskKind mask = MaskKind::None,
                    float scale = 1.0f, std::uint64_t seed = 1) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  CaseInputs c;
  c.caseId = std::move(id);
  c.dModel = d;
  c.heads = h;
  c.arrays["query"] = randomTensor({B, tq, d}, rng, scale);
  if (tk == tq) {
    c.arrays["key"] = c.arrays["query"];
  } else {
    c.arrays["key"] = randomTensor({B, tk, d}, rng, scale);
  }
  c.arrays["value"] = c.arrays["key"];
  const float w = 1.0f / std::sqrt(static_cast<float>(d));
  for (const char* name : {"W_q", "W_k", "W_v", "W_o"}) c.arrays[name] = randomTensor({d, d}, rng, w);
  if (mask == MaskKind::Causal) {
    Tensor m({tq, tk}, {});
    for (int q = 0; q < tq; ++q)
      for (int k = 0; k < tk; ++k) m.data[static_cast<std::size_t>(q * tk + k)] = k > q ? 1.0f : 0.0f;
    c.arrays["mask"] = std::move(m);
  } else if (mask == MaskKind::Padding) {
    Tensor m({B, 1, 1, tk}, {});
    for (int b = 0; b < B; ++b) m.data[static_cast<std::size_t>(b * tk + tk - 1 - b)] = 1.0f;  // one key each
    c.arrays["mask"] = std::move(m);
  }
  return c;
}

// The stages of multi-head attention computed plainly, in the engine's convention y = x W.
struct Expected {
  Tensor q, scores, weights, output;  // q (B, T_q, d_model); scores, weights (B, h, T_q, T_k), scores / √d_k
};

Expected reference(const CaseInputs& c) {
  const Tensor& X = c.arrays.at("query");
  const Tensor& K = c.arrays.at("key");
  const int B = static_cast<int>(X.dim(0)), tq = static_cast<int>(X.dim(1)), tk = static_cast<int>(K.dim(1));
  const int d = c.dModel, h = c.heads, dk = d / h;
  auto mat = [](const Tensor& t, std::int64_t rows, std::int64_t cols, std::int64_t offset = 0) {
    return ConstMatrixMap(t.ptr() + offset, rows, cols);
  };
  const auto it = c.arrays.find("mask");
  auto blocked = [&](int b, int q, int k) {
    if (it == c.arrays.end()) return false;
    const Tensor& m = it->second;
    if (m.rank() == 2) return m.data[static_cast<std::size_t>(q * tk + k)] != 0.0f;
    return m.data[static_cast<std::size_t>(b * tk + k)] != 0.0f;
  };
  Expected e{Tensor({B, tq, d}, {}), Tensor({B, h, tq, tk}, {}), Tensor({B, h, tq, tk}, {}), Tensor({B, tq, d}, {})};
  for (int b = 0; b < B; ++b) {
    const RowMatrix Q = mat(X, tq, d, std::int64_t{b} * tq * d) * mat(c.arrays.at("W_q"), d, d);
    const RowMatrix Kp = mat(K, tk, d, std::int64_t{b} * tk * d) * mat(c.arrays.at("W_k"), d, d);
    const RowMatrix V = mat(c.arrays.at("value"), tk, d, std::int64_t{b} * tk * d) * mat(c.arrays.at("W_v"), d, d);
    MatrixMap(e.q.ptr() + std::int64_t{b} * tq * d, tq, d) = Q;
    RowMatrix merged(tq, d);
    for (int head = 0; head < h; ++head) {
      RowMatrix s = Q.middleCols(head * dk, dk) * Kp.middleCols(head * dk, dk).transpose();
      s /= std::sqrt(static_cast<float>(dk));
      RowMatrix w(tq, tk);
      for (int q = 0; q < tq; ++q) {
        float mx = -INFINITY;
        for (int k = 0; k < tk; ++k)
          if (!blocked(b, q, k)) mx = std::max(mx, s(q, k));
        float sum = 0;
        for (int k = 0; k < tk; ++k) sum += (w(q, k) = blocked(b, q, k) ? 0.0f : std::exp(s(q, k) - mx));
        w.row(q) /= sum;
      }
      const std::int64_t at = (std::int64_t{b} * h + head) * tq * tk;
      MatrixMap(e.scores.ptr() + at, tq, tk) = s;
      MatrixMap(e.weights.ptr() + at, tq, tk) = w;
      merged.middleCols(head * dk, dk) = w * V.middleCols(head * dk, dk);
    }
    MatrixMap(e.output.ptr() + std::int64_t{b} * tq * d, tq, d) = merged * mat(c.arrays.at("W_o"), d, d);
  }
  return e;
}

// max |a − b| / (1 + max |b|): float32 torch and Eigen differ in the last bits, large scores in more.
double relativeDiff(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return INFINITY;
  double m = 0, scale = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    m = std::max(m, std::fabs(double(a.data[i]) - double(b.data[i])));
    scale = std::max(scale, std::fabs(double(b.data[i])));
  }
  return m / (1 + scale);
}

// The first capture of that source and name whose value equals `want`, or null.
const Capture* findEqual(const CaseRun& run, Capture::Source source, const std::string& name, const Tensor& want) {
  for (const Capture& c : run.captures) {
    if (c.source == source && c.name == name && relativeDiff(c.value, want) < 1e-4) return &c;
  }
  return nullptr;
}

LearnerRun runFile(const std::string& file, std::vector<CaseInputs> cases, RunLimits limits = {},
                   const Exercise& ex = mhaExercise()) {
  LearnerRequest request;
  request.file = file;
  request.exercise = &ex;
  request.cases = std::move(cases);
  request.limits = limits;
  auto run = runLearner(request);
  EXPECT_TRUE(run) << run.error().message;
  return run ? std::move(*run) : LearnerRun{};
}

// What a bad program got, on the test's output, to read the messages as the learner will.
void show(const char* what, const std::optional<LearnerError>& e) {
  if (e) std::printf("%s -> [%s] %s (line %d)\n", what, errorKindName(e->kind), e->message.c_str(), e->line);
}
void show(const char* what, const LearnerRun& run) {
  show(what, run.error);
  for (const CaseRun& c : run.cases) show(what, c.error);
}

std::vector<CaseInputs> oneCase() { return {makeCase("self", 1, 6, 6, 16, 4)}; }

TEST(PracticeLearnerRun, CorrectModuleGivesOutputCapturesAndTransposedLoads) {
  std::vector<CaseInputs> cases = {
      makeCase("self", 1, 6, 6, 16, 4),
      makeCase("batch", 2, 5, 5, 16, 4, MaskKind::None, 1.0f, 2),
      makeCase("causal", 1, 6, 6, 16, 4, MaskKind::Causal, 1.0f, 3),
      makeCase("padding", 2, 6, 6, 16, 4, MaskKind::Padding, 1.0f, 4),
      makeCase("cross", 1, 6, 4, 16, 4, MaskKind::None, 1.0f, 5),
      makeCase("one_head", 1, 6, 6, 16, 1, MaskKind::None, 1.0f, 6),
      makeCase("head_per_feature", 1, 6, 6, 16, 16, MaskKind::None, 1.0f, 7),
      makeCase("indivisible", 1, 6, 6, 10, 4, MaskKind::None, 1.0f, 8),
      makeCase("large_scores", 1, 6, 6, 16, 4, MaskKind::None, 30.0f, 9),
  };
  cases[7].mustRaise = true;
  const auto started = std::chrono::steady_clock::now();
  const LearnerRun run = runFile(kBad + "mha_ok.py", cases);
  show("mha_ok.py", run);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(run.error) << run.error->message;
  ASSERT_EQ(run.cases.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseRun& c = run.cases[i];
    EXPECT_EQ(c.caseId, cases[i].caseId);
    ASSERT_FALSE(c.error) << c.caseId << ": " << c.error->message;
    if (cases[i].mustRaise) {
      EXPECT_FALSE(c.output) << c.caseId;
      continue;
    }
    ASSERT_TRUE(c.output) << c.caseId;
    const Expected e = reference(cases[i]);
    EXPECT_LT(relativeDiff(*c.output, e.output), 1e-4) << c.caseId;
    EXPECT_TRUE(findEqual(c, Capture::Source::Local, "scores", e.scores)) << c.caseId;
  }
  std::printf("one run of the correct module, 9 cases: %.2f s (the child %.2f s; cases %.3f s in all)\n", wall,
              run.seconds, [&] {
                double s = 0;
                for (const auto& c : run.cases) s += c.seconds;
                return s;
              }());

  const CaseRun& self = run.cases[0];
  const Expected e = reference(cases[0]);
  ASSERT_EQ(self.loads.size(), 4u);
  for (const WeightLoad& load : self.loads) {
    EXPECT_TRUE(load.transposed) << load.parameter;
    EXPECT_EQ(load.parameter, load.weight + ".weight");
  }
  // Each stage found by both sources, with the learner's line.
  const Capture* q = findEqual(self, Capture::Source::Local, "q", e.q);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->line, 25);
  EXPECT_EQ(q->function, "forward");
  ASSERT_TRUE(findEqual(self, Capture::Source::Call, "linear", e.q));
  const Capture* scores = findEqual(self, Capture::Source::Local, "scores", e.scores);
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->line, 31);
  EXPECT_TRUE(findEqual(self, Capture::Source::Call, "Tensor.div", e.scores));
  const Capture* weights = findEqual(self, Capture::Source::Local, "weights", e.weights);
  ASSERT_TRUE(weights);
  EXPECT_EQ(weights->line, 34);
  EXPECT_TRUE(findEqual(self, Capture::Source::Call, "softmax", e.weights));
  EXPECT_TRUE(findEqual(self, Capture::Source::Local, "out", e.output));
  EXPECT_TRUE(findEqual(self, Capture::Source::Call, "linear", e.output));
  // The split heads (B, h, T, d_k), not contiguous after the transpose, made in _split_heads.
  const Capture* qHeads = nullptr;
  int local = 0, call = 0;
  for (const Capture& c : self.captures) {
    (c.source == Capture::Source::Local ? local : call) += 1;
    if (c.name == "q_heads") qHeads = &c;
  }
  ASSERT_TRUE(qHeads);
  EXPECT_EQ(qHeads->value.shape, (Shape{1, 4, 6, 4}));
  EXPECT_FALSE(qHeads->contiguous);
  EXPECT_NEAR(qHeads->value.data[1 * 6 * 4 + 2 * 4 + 3], e.q.data[2 * 16 + 1 * 4 + 3], 1e-5);  // head 1, token 2, feature 3
  for (std::size_t i = 0; i < self.captures.size(); ++i) EXPECT_EQ(self.captures[i].order, static_cast<int>(i));
  std::printf("captures of case 'self': %d local, %d call\n", local, call);
  // The heads' outputs (B, h, T, d_k) kept in `heads` on line 35.
  bool headsSeen = false;
  for (const Capture& c : self.captures) headsSeen |= c.name == "heads" && c.line == 35 && c.value.shape == Shape{1, 4, 6, 4};
  EXPECT_TRUE(headsSeen);
}

TEST(PracticeLearnerRun, WeightsLoadIntoFusedPerHeadRawAndTorchsOwnLayouts) {
  struct Layout {
    const char* file;
    std::vector<WeightLoad> someLoads;  // among the run's loads
    std::size_t loadCount;
  };
  const std::vector<Layout> layouts = {
      {"fused_qkv.py", {{"qkv.weight", "W_q|W_k|W_v", true}, {"qkv.bias", "zero", false}, {"out_proj.weight", "W_o", true}}, 3},
      {"per_head.py", {{"heads.0.query.weight", "W_q", true}, {"heads.3.value.weight", "W_v", true}, {"proj.weight", "W_o", true}}, 13},
      {"raw_parameters.py", {{"wq", "W_q", false}, {"wo", "W_o", false}}, 4},
      {"torch_mha.py", {{"attn.in_proj_weight", "W_q|W_k|W_v", true}, {"attn.out_proj.weight", "W_o", true}}, 2},
      {"fused_kv.py", {{"q_proj.weight", "W_q", true}, {"kv_proj.weight", "W_k|W_v", true}, {"o_proj.weight", "W_o", true}}, 3},
  };
  const std::vector<CaseInputs> cases = {makeCase("self", 1, 6, 6, 16, 4), makeCase("batch", 2, 5, 5, 16, 4, MaskKind::None, 1.0f, 2)};
  for (const Layout& layout : layouts) {
    const LearnerRun run = runFile(kBad + layout.file, cases);
    show(layout.file, run);
    ASSERT_FALSE(run.error) << layout.file;
    ASSERT_EQ(run.cases.size(), cases.size()) << layout.file;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      ASSERT_FALSE(run.cases[i].error) << layout.file;
      ASSERT_TRUE(run.cases[i].output) << layout.file;
      EXPECT_LT(relativeDiff(*run.cases[i].output, reference(cases[i]).output), 1e-4) << layout.file;
    }
    const auto& loads = run.cases[0].loads;
    EXPECT_EQ(loads.size(), layout.loadCount) << layout.file;
    for (const WeightLoad& want : layout.someLoads) {
      const bool found = std::any_of(loads.begin(), loads.end(), [&](const WeightLoad& l) {
        return l.parameter == want.parameter && l.weight == want.weight && l.transposed == want.transposed;
      });
      EXPECT_TRUE(found) << layout.file << ": " << want.parameter << " <- " << want.weight;
    }
  }
}

TEST(PracticeLearnerRun, AParameterNoWeightFitsIsALoadErrorListingBoth) {
  const LearnerRun run = runFile(kBad + "unmatched_parameter.py", oneCase());
  show("unmatched_parameter.py", run);
  ASSERT_EQ(run.cases.size(), 1u);
  ASSERT_TRUE(run.cases[0].error);
  const LearnerError& e = *run.cases[0].error;
  EXPECT_EQ(e.kind, LearnerError::Kind::Load);
  for (const char* part : {"gate (16,)", "W_q.weight (16, 16)", "W_o (16, 16)"}) {
    EXPECT_NE(e.message.find(part), std::string::npos) << part << " in " << e.message;
  }
}

TEST(PracticeLearnerRun, NonFiniteOutputIsKeptAsItIs) {
  const LearnerRun run = runFile(kBad + "nan_output.py", oneCase());
  ASSERT_EQ(run.cases.size(), 1u);
  ASSERT_FALSE(run.cases[0].error) << run.cases[0].error->message;
  ASSERT_TRUE(run.cases[0].output);
  EXPECT_TRUE(std::isnan(run.cases[0].output->data[0]));
}

TEST(PracticeLearnerRun, NumpyFunctionIsTracedThroughItsLocals) {
  Exercise ex;
  ex.id = "mha_numpy";
  ex.framework = Framework::Numpy;
  ex.entry = "multi_head_attention";
  ex.callArgs = {"x", "W_q", "W_k", "W_v", "W_o", "num_heads"};
  CaseInputs c = makeCase("self", 1, 6, 6, 16, 4);
  c.arrays["x"] = c.arrays["query"];
  const Expected e = reference(c);
  const LearnerRun run = runFile(kBad + "numpy_mha.py", {c}, {}, ex);
  ASSERT_FALSE(run.error);
  ASSERT_EQ(run.cases.size(), 1u);
  const CaseRun& r = run.cases[0];
  ASSERT_FALSE(r.error);
  ASSERT_TRUE(r.output);
  EXPECT_LT(relativeDiff(*r.output, e.output), 1e-4);
  EXPECT_TRUE(findEqual(r, Capture::Source::Local, "Q", e.q));
  Tensor head2({1, 6, 6}, {});
  std::copy_n(e.weights.ptr() + 2 * 36, 36, head2.ptr());
  const Capture* weights = findEqual(r, Capture::Source::Local, "weights", head2);
  ASSERT_TRUE(weights);
  EXPECT_EQ(weights->line, 20);
  EXPECT_EQ(weights->function, "multi_head_attention");
  int merged = 0, calls = 0;
  for (const Capture& k : r.captures) {
    merged += k.name == "merged";
    calls += k.source == Capture::Source::Call;
  }
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(merged, 1 + 4);  // made, then written in place once per head
}

TEST(PracticeLearnerRun, DecodeStepsAreConcatenated) {
  Exercise ex = mhaExercise();
  ex.callArgs = {"x"};
  ex.maskArg.clear();
  ex.stepMethod = "step";
  CaseInputs c = makeCase("decode", 2, 5, 5, 16, 4, MaskKind::Causal);
  c.arrays["x"] = c.arrays["query"];
  c.decode = true;
  const Expected e = reference(c);
  c.arrays.erase("mask");
  const LearnerRun run = runFile(kBad + "decode_step.py", {c}, {}, ex);
  ASSERT_EQ(run.cases.size(), 1u);
  ASSERT_FALSE(run.cases[0].error);
  ASSERT_TRUE(run.cases[0].output);
  EXPECT_LT(relativeDiff(*run.cases[0].output, e.output), 1e-4);
}

TEST(PracticeLearnerRun, CapturesStopAtTheLimitAndSaySo) {
  RunLimits limits;
  limits.maxCaptures = 5;
  const LearnerRun run = runFile(kBad + "mha_ok.py", oneCase(), limits);
  ASSERT_EQ(run.cases.size(), 1u);
  EXPECT_EQ(run.cases[0].captures.size(), 5u);
  EXPECT_TRUE(run.cases[0].capturesTruncated);
  EXPECT_TRUE(run.cases[0].output);
}

TEST(PracticeLearnerRun, RunsFromTwoThreadsAtOnce) {
  LearnerRun a, b;
  std::thread other([&] { b = runFile(kBad + "mha_ok.py", oneCase()); });
  a = runFile(kBad + "raises_in_forward.py", oneCase());
  other.join();
  ASSERT_EQ(a.cases.size(), 1u);
  ASSERT_EQ(b.cases.size(), 1u);
  EXPECT_TRUE(a.cases[0].error);
  EXPECT_FALSE(b.cases[0].error);
  EXPECT_TRUE(b.cases[0].output);
}

TEST(PracticeLearnerRun, ProcessesTheLearnerStartsDieWithTheRun) {
  const LearnerRun run = runFile(kBad + "spawns_process.py", oneCase());
  ASSERT_FALSE(run.error) << run.error->message;
  const auto at = run.printed.find("child=");
  ASSERT_NE(at, std::string::npos) << run.printed;
  const std::string pid = run.printed.substr(at + 6, run.printed.find('\n', at) - at - 6);
  // Gone, or a zombie waiting for a parent that reaps it: either way no longer running.
  bool running = true;
  for (int i = 0; i < 100 && running; ++i) {
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    running = close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
    if (running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(running) << "process " << pid << " still runs";
}

TEST(PracticeLearnerRun, SyntaxErrorNamesTheLine) {
  const LearnerRun run = runFile(kBad + "syntax_error.py", oneCase());
  show("syntax_error.py", run);
  ASSERT_TRUE(run.error);
  EXPECT_EQ(run.error->kind, LearnerError::Kind::Syntax);
  EXPECT_EQ(run.error->line, 5);
  EXPECT_NE(run.error->file.find("syntax_error.py"), std::string::npos);
  EXPECT_TRUE(run.cases.empty());
}

TEST(PracticeLearnerRun, ExceptionInTheCallNamesTheLearnersLine) {
  const LearnerRun run = runFile(kBad + "raises_in_forward.py", oneCase());
  show("raises_in_forward.py", run);
  ASSERT_FALSE(run.error) << run.error->message;
  ASSERT_EQ(run.cases.size(), 1u);
  ASSERT_TRUE(run.cases[0].error);
  const LearnerError& e = *run.cases[0].error;
  EXPECT_EQ(e.kind, LearnerError::Kind::Exception);
  EXPECT_EQ(e.type, "RuntimeError");
  EXPECT_EQ(e.line, 9);
  EXPECT_NE(e.file.find("raises_in_forward.py"), std::string::npos);
  EXPECT_NE(e.traceback.find("q.view"), std::string::npos) << e.traceback;
}

TEST(PracticeLearnerRun, ImportErrorsNameTheLineOrWhatIsMissing) {
  const LearnerRun atImport = runFile(kBad + "raises_at_import.py", oneCase());
  show("raises_at_import.py", atImport);
  ASSERT_TRUE(atImport.error);
  EXPECT_EQ(atImport.error->kind, LearnerError::Kind::Import);
  EXPECT_EQ(atImport.error->line, 4);
  const LearnerRun missing = runFile(kBad + "missing_class.py", oneCase());
  show("missing_class.py", missing);
  ASSERT_TRUE(missing.error);
  EXPECT_EQ(missing.error->kind, LearnerError::Kind::Import);
  EXPECT_NE(missing.error->message.find("'MultiHeadAttention' is not defined"), std::string::npos)
      << missing.error->message;
  EXPECT_NE(missing.error->message.find("MultiheadAttention, helper"), std::string::npos) << missing.error->message;
}

TEST(PracticeLearnerRun, EndlessLoopTimesOutWithItsCaseAndLine) {
  RunLimits limits;
  limits.wallSeconds = 3;
  const auto started = std::chrono::steady_clock::now();
  const LearnerRun run = runFile(kBad + "endless_loop.py", oneCase(), limits);
  show("endless_loop.py", run);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(run.error);
  EXPECT_EQ(run.error->kind, LearnerError::Kind::Timeout) << run.error->message;
  // The limit, then the child's traceback and exit: a loaded machine takes a second or two for those.
  EXPECT_LT(wall, limits.wallSeconds + 3.0);
  EXPECT_GE(wall, limits.wallSeconds);
  EXPECT_NE(run.error->message.find("case 'self'"), std::string::npos) << run.error->message;
  EXPECT_TRUE(run.error->line == 8 || run.error->line == 9) << run.error->message;
}

TEST(PracticeLearnerRun, CancelStopsTheChild) {
  std::atomic<bool> cancel{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel = true;
  });
  const Exercise ex = mhaExercise();
  LearnerRequest request;
  request.file = kBad + "endless_loop.py";
  request.exercise = &ex;
  request.cases = oneCase();
  const auto started = std::chrono::steady_clock::now();
  auto run = runLearner(request, &cancel);
  setter.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(run) << run.error().message;
  show("cancel", run->error);
  ASSERT_TRUE(run->error);
  EXPECT_NE(run->error->message.find("cancelled"), std::string::npos) << run->error->message;
  EXPECT_LT(wall, 3.0);
}

TEST(PracticeLearnerRun, HugeAllocationsAreMemoryErrors) {
  RunLimits limits;
  limits.memoryBytes = 1ull << 30;
  for (const char* file : {"huge_allocation.py", "growing_list.py"}) {
    const LearnerRun run = runFile(kBad + file, oneCase(), limits);
    show(file, run);
    const LearnerError* e = run.error ? &*run.error : (!run.cases.empty() && run.cases[0].error ? &*run.cases[0].error : nullptr);
    ASSERT_TRUE(e) << file;
    EXPECT_EQ(e->kind, LearnerError::Kind::Memory) << file << ": " << e->message;
    EXPECT_GT(e->line, 0) << file << ": " << e->message;
  }
}

TEST(PracticeLearnerRun, SegfaultIsACrashNamingTheSignalAndLine) {
  const LearnerRun run = runFile(kBad + "segfault.py", oneCase());
  show("segfault.py", run);
  ASSERT_TRUE(run.error);
  EXPECT_EQ(run.error->kind, LearnerError::Kind::Crash);
  EXPECT_NE(run.error->message.find("SIGSEGV"), std::string::npos) << run.error->message;
  EXPECT_EQ(run.error->line, 10) << run.error->message;
}

TEST(PracticeLearnerRun, PrintsAreBounded) {
  RunLimits limits;
  limits.outputBytes = 10000;
  const LearnerRun run = runFile(kBad + "prints_a_lot.py", oneCase(), limits);
  show("prints_a_lot.py", run);
  ASSERT_FALSE(run.error) << run.error->message;
  EXPECT_TRUE(run.printedTruncated);
  EXPECT_LE(run.printed.size(), limits.outputBytes);
  EXPECT_GE(run.printed.size(), limits.outputBytes / 2);
  ASSERT_EQ(run.cases.size(), 1u);
  EXPECT_FALSE(run.cases[0].error);
  EXPECT_TRUE(run.cases[0].output);
}

TEST(PracticeLearnerRun, WrongReturnsAreNamed) {
  const LearnerRun str = runFile(kBad + "returns_string.py", oneCase());
  show("returns_string.py", str);
  ASSERT_EQ(str.cases.size(), 1u);
  ASSERT_TRUE(str.cases[0].error);
  EXPECT_EQ(str.cases[0].error->kind, LearnerError::Kind::Return);
  EXPECT_NE(str.cases[0].error->message.find("str"), std::string::npos) << str.cases[0].error->message;
  const LearnerRun shape = runFile(kBad + "wrong_shape.py", oneCase());
  show("wrong_shape.py", shape);
  ASSERT_EQ(shape.cases.size(), 1u);
  ASSERT_TRUE(shape.cases[0].error);
  EXPECT_EQ(shape.cases[0].error->kind, LearnerError::Kind::Return);
  EXPECT_NE(shape.cases[0].error->message.find("(1, 6, 4)"), std::string::npos) << shape.cases[0].error->message;
}

TEST(PracticeLearnerRun, ReadingInputIsAnEofErrorNotAHang) {
  RunLimits limits;
  limits.wallSeconds = 10;
  const LearnerRun run = runFile(kBad + "reads_input.py", oneCase(), limits);
  show("reads_input.py", run);
  ASSERT_FALSE(run.error) << run.error->message;
  ASSERT_EQ(run.cases.size(), 1u);
  ASSERT_TRUE(run.cases[0].error);
  EXPECT_EQ(run.cases[0].error->type, "EOFError");
  EXPECT_EQ(run.cases[0].error->line, 7);
}

TEST(PracticeLearnerRun, FilesAreWrittenInTheTemporaryFolderWhichIsRemoved) {
  const LearnerRun run = runFile(kBad + "writes_files.py", oneCase());
  show("writes_files.py", run);
  ASSERT_FALSE(run.error) << run.error->message;
  const auto at = run.printed.find("cwd=");
  ASSERT_NE(at, std::string::npos) << run.printed;
  const std::string cwd = run.printed.substr(at + 4, run.printed.find('\n', at) - at - 4);
  EXPECT_NE(cwd.find("mhascope-practice-"), std::string::npos) << cwd;
  EXPECT_FALSE(fs::exists(cwd)) << cwd;
  EXPECT_FALSE(fs::exists(kBad + "scratch.txt"));
  EXPECT_FALSE(fs::exists(kBad + "__pycache__"));  // nothing written beside the learner's files
}

TEST(PracticeLearnerRun, MustRaiseCaseThatDoesNotRaiseIsNoRaise) {
  std::vector<CaseInputs> cases = {makeCase("indivisible", 1, 6, 6, 10, 4)};
  cases[0].mustRaise = true;
  const LearnerRun run = runFile(kBad + "never_raises.py", cases);
  show("never_raises.py", run);
  ASSERT_EQ(run.cases.size(), 1u);
  ASSERT_TRUE(run.cases[0].error);
  EXPECT_EQ(run.cases[0].error->kind, LearnerError::Kind::NoRaise);
}

TEST(PracticeLearnerRun, OurOwnErrorsNameThePath) {
  const Exercise ex = mhaExercise();
  LearnerRequest request;
  request.file = kBad + "mha_ok.py";
  request.exercise = &ex;
  request.cases = oneCase();
  request.python = "/nonexistent/python3";
  auto noPython = runLearner(request);
  ASSERT_FALSE(noPython);
  EXPECT_NE(noPython.error().message.find("/nonexistent/python3"), std::string::npos);
  request.python = "/usr/bin/python3";
  request.harness = "/nonexistent/harness.py";
  auto noHarness = runLearner(request);
  ASSERT_FALSE(noHarness);
  EXPECT_NE(noHarness.error().message.find("/nonexistent/harness.py"), std::string::npos);
  request.harness.clear();
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string saved = tmpdir ? tmpdir : "";
  ::setenv("TMPDIR", "/nonexistent-tmp", 1);
  auto noFolder = runLearner(request);
  if (tmpdir) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  ASSERT_FALSE(noFolder);
  EXPECT_NE(noFolder.error().message.find("/nonexistent-tmp"), std::string::npos) << noFolder.error().message;
  EXPECT_EQ(std::string(errorKindName(LearnerError::Kind::NoRaise)), "no_raise");
}

}  // namespace
}  // namespace mhascope::practice
