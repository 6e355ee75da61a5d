// Bad input found by hostile testing, at the core's boundary: files that never end
// or are not files, sizes checked before reading, one memory estimate that counts every buffer,
// overflow reported per stage, batch text the command line refuses, names in weight files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attention/engine.hpp"
#include "io/file_io.hpp"
#include "attention/model.hpp"
#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "attention/tokenizer.hpp"
#include "io/weights_io.hpp"

namespace mhascope {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("mhascope-hostile-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(HostileInput, DevicesFifosAndFoldersAreRefusedBeforeOpening) {
  TempDir dir;
  const std::string fifo = (dir.path / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto f = loadNpy(fifo);  // opening a FIFO with no writer would block forever
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.error().message, "FIFO")) << f.error().message;
  auto z = loadSafetensors("/dev/zero");  // never ends
  ASSERT_FALSE(z.ok());
  EXPECT_TRUE(contains(z.error().message, "device")) << z.error().message;
  auto u = readFile("/dev/urandom");
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(contains(u.error().message, "device")) << u.error().message;
  auto d = loadNpy(dir.path.string());
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(contains(d.error().message, "folder")) << d.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST(HostileInput, NpyWhoseSizeDisagreesWithItsHeaderIsNotRead) {
  TempDir dir;
  const std::string path = (dir.path / "huge.npy").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << encodeNpy(Tensor({2, 4}, {}));
  }
  fs::resize_file(path, 3ull << 30);  // sparse: 3 GB that take no disk and must not be read
  const auto t0 = std::chrono::steady_clock::now();
  auto t = loadNpy(path);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(contains(t.error().message, "data is longer than the header declares")) << t.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));  // reading 3 GB takes longer
}

TEST(HostileInput, NpyLargerThanTheBudgetIsRefusedFromItsHeader) {
  TempDir dir;
  const std::string path = (dir.path / "wide.npy").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << encodeNpy(Tensor({1, 64, 64}, {}));
  }
  auto t = loadNpy(path, NpyValues::FiniteOnly, 1000);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(contains(t.error().message, "more than the memory budget")) << t.error().message;
  EXPECT_TRUE(loadNpy(path, NpyValues::FiniteOnly, 64 * 64 * 4).ok());
}

TEST(HostileInput, SafetensorsLargerThanAllowedIsRefusedBeforeReading) {
  TempDir dir;
  const std::string path = (dir.path / "w.safetensors").string();
  ASSERT_TRUE(saveSafetensors(path, stateDictFromWeights(initWeights(8, true, 1))).ok());
  auto w = loadSafetensors(path, 100);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(contains(w.error().message, "more than the memory budget")) << w.error().message;
  EXPECT_TRUE(loadSafetensors(path).ok());
  // 3 GB (sparse) whose header declares a few hundred bytes of tensors: refused from the header,
  // unread, even with a budget that would allow reading it.
  fs::resize_file(path, 3ull << 30);
  const auto t0 = std::chrono::steady_clock::now();
  auto big = loadSafetensors(path, 4ull << 30);
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(contains(big.error().message, "trailing bytes")) << big.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(HostileInput, TheMemoryEstimateCountsTheWeights) {
  // d_model = 20000, h = 1, 9 tokens: the activations are ~8 MiB but the four weight matrices are 6 GiB
  // (and the trace keeps a copy of them for the Learned view).
  const Status s = validateSizes(1, 9, 9, 20000, 1, 512ull << 20);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "weights 6.0 GiB")) << s.error().message;
  const MemoryEstimate e = estimateMemory(1, 9, 9, 20000, 1);
  EXPECT_DOUBLE_EQ(e.weights, 4.0 * (4.0 * 20000 * 20000 + 4 * 20000));
  EXPECT_GE(e.trace, e.weights);  // the recorded W_q … b_o
  // The window keeps two traces (shown, being computed) and two models alive: twice one command's,
  // and a big job's first picture: one head's (T_q, T_k) table and flags, its labels, the mask
  // flags of every item and Q and K (projected and split) while it computes.
  const MemoryEstimate app = estimateMemory(2, 64, 64, 64, 4, MemoryUse::app());
  const double firstHead = 5.0 * 64 * 64 + 40.0 * 128 + 2.0 * 64 * 64 + 16.0 * (2 * 64 * 64 + 2 * 64 * 64);
  EXPECT_DOUBLE_EQ(app.firstHead, firstHead);
  EXPECT_DOUBLE_EQ(app.total(), 2.0 * estimateMemory(2, 64, 64, 64, 4).total() + firstHead);
  EXPECT_TRUE(contains(app.describe(), " + first picture ")) << app.describe();
}

TEST(HostileInput, AHugeBatchIsRefusedBeforeTokensAreBuilt) {
  ModelConfig cfg;
  cfg.batch = 1 << 20;
  cfg.tokens = 1000;
  const auto t0 = std::chrono::steady_clock::now();
  auto m = buildModel(cfg);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(contains(m.error().message, "more than the memory budget")) << m.error().message;
  // Building 10^9 token strings first took minutes and gigabytes.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  cfg = ModelConfig{};
  cfg.dModel = 65536;
  auto wide = buildModel(cfg);
  ASSERT_FALSE(wide.ok());
  EXPECT_TRUE(contains(wide.error().message, "weights 64.0 GiB")) << wide.error().message;
}

TEST(HostileInput, OverflowIsReportedPerStageAndNotCalledMasking) {
  ModelConfig cfg;
  cfg.text = "a b c";
  cfg.dModel = 4;
  cfg.heads = 2;
  auto m = buildModel(cfg);
  ASSERT_TRUE(m.ok());
  for (float& v : m->inputs.query.data) v = std::abs(v) * 1e20f + 1e20f;  // finite, but q.k overflows
  m->inputs.key = m->inputs.query;
  m->inputs.value = m->inputs.query;
  Trace t;
  ASSERT_TRUE(forward(m->inputs, m->weights, m->options, t).ok());
  const auto bad = nonFiniteStages(t);
  ASSERT_FALSE(bad.empty());
  bool weightsReported = false;
  for (const auto& n : bad) weightsReported = weightsReported || (n.stage == StageId::Weights && n.nan > 0);
  EXPECT_TRUE(weightsReported);
  for (auto f : t.fullyMasked) EXPECT_EQ(f, 0) << "an overflowed row is not a masked row";
  // Ordinary masking is not reported as non-finite: masked_scores' -inf on blocked keys is the mask.
  ModelConfig causal;
  causal.mask = MaskKind::Causal;
  causal.text = "a b c d";
  causal.padLastKeys = 4;
  auto mc = buildModel(causal);
  ASSERT_TRUE(mc.ok());
  Trace tc;
  ASSERT_TRUE(forward(mc->inputs, mc->weights, mc->options, tc).ok());
  EXPECT_TRUE(nonFiniteStages(tc).empty());
  // Fully masked rows keep the engine's convention: weights 0.
  int fully = 0;
  for (auto f : tc.fullyMasked) fully += f;
  EXPECT_GT(fully, 0);
}

TEST(HostileInput, BatchTextTheCommandLineRefuses) {
  EXPECT_TRUE(contains(batchTextProblem("a b\nc", "--text"), "line break"));
  EXPECT_TRUE(contains(batchTextProblem("a b||c", "--text"), "empty batch item (item 1"));
  EXPECT_TRUE(contains(batchTextProblem("| a b", "--text"), "empty batch item (item 0"));
  EXPECT_TRUE(contains(batchTextProblem("a b |", "--text"), "empty batch item (item 1"));
  EXPECT_EQ(batchTextProblem("a b | c", "--text"), "");
  EXPECT_EQ(batchTextProblem("", "--text"), "");  // "enter at least one token" comes with the sizes
}

TEST(HostileInput, ATypedPadTokenIsNotPadding) {
  ModelConfig cfg;
  cfg.text = "the <pad> sat | a";
  const Status s = validateConfig(cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "<pad>")) << s.error().message;
}

TEST(HostileInput, WrongTensorNameGivesTheRealReason) {
  StateDict sd = stateDictFromWeights(initWeights(4, true, 1));
  sd["out_proj.wEight"] = sd.at("out_proj.weight");
  sd.erase("out_proj.weight");
  auto w = weightsFromStateDict(sd, 4);
  ASSERT_FALSE(w.ok());
  const std::string& m = w.error().message;
  EXPECT_TRUE(contains(m, "unexpected tensor 'out_proj.wEight'")) << m;
  EXPECT_TRUE(contains(m, "missing tensor 'out_proj.weight'")) << m;
  EXPECT_FALSE(contains(m, "separate q/k/v")) << m;
  // The layout note stays for the layout it is about.
  StateDict sep = stateDictFromWeights(initWeights(4, false, 1));
  sep["q_proj_weight"] = Tensor({4, 4}, {});
  auto s = weightsFromStateDict(sep, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "separate q/k/v_proj_weight")) << s.error().message;
}

TEST(HostileInput, SameFileByIdentity) {
  TempDir dir;
  const std::string a = (dir.path / "a.npy").string();
  std::ofstream(a) << "x";
  EXPECT_TRUE(sameFile(a, (dir.path / "." / "a.npy").string()));
  fs::create_hard_link(a, dir.path / "link.npy");
  EXPECT_TRUE(sameFile(a, (dir.path / "link.npy").string()));
  EXPECT_FALSE(sameFile(a, (dir.path / "b.npy").string()));
}

TEST(HostileInput, InsideAFolderByPathAndLink) {
  TempDir dir;
  fs::create_directories(dir.path / "m" / "sub");
  fs::create_directory_symlink(dir.path / "m", dir.path / "alias");
  const std::string m = (dir.path / "m").string();
  EXPECT_TRUE(isInsideFolder(m, m));
  EXPECT_TRUE(isInsideFolder((dir.path / "m" / "new.json").string(), m));  // a file not made yet
  EXPECT_TRUE(isInsideFolder((dir.path / "m" / "sub" / ".." / "x").string(), m));
  EXPECT_TRUE(isInsideFolder((dir.path / "alias" / "x").string(), m));  // through a link
  EXPECT_FALSE(isInsideFolder((dir.path / "m2" / "x").string(), m));     // a sibling sharing the prefix
  EXPECT_FALSE(isInsideFolder((dir.path / "m" / ".." / "x").string(), m));
}

}  // namespace
}  // namespace mhascope
