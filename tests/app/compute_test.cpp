// The window's compute (app/shell/compute_worker.cpp): its forward uses every core of the
// machine, and its trace is, number for number, what the CLI's one-thread forward records.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include <thread>

#include "attention/engine.hpp"
#include "shell/compute_worker.hpp"

namespace mhascope::app {
namespace {

TEST(WindowCompute, UsesTheMachinesCoresAndEqualsTheOneThreadForward) {
  ModelConfig c;
  c.text = "the quick brown fox jumps over the lazy dog | a second batch item";
  c.tokens = 96;  // big enough that the engine shares out the heads (threadsFor: ≥ 4 MFLOP)
  c.dModel = 64;
  c.heads = 4;
  c.mask = MaskKind::Causal;
  Trace window;
  ComputeRequest request;
  request.source.config = c;
  const ComputeOutcome out = computeTrace(request, 1, window);
  ASSERT_TRUE(out.ok) << out.error;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(out.threads, cores < 1 ? 1 : std::min(cores, 64));
  EXPECT_EQ(out.threads, computeThreads());

  // The CLI: the same builder, the engine's default of one thread.
  auto model = buildModel(c);
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->options.threads, 1);
  Trace cli;
  ASSERT_TRUE(forward(model->inputs, model->weights, model->options, cli));
  ASSERT_EQ(window.stages.size(), cli.stages.size());
  for (std::size_t i = 0; i < cli.stages.size(); ++i) {
    const Tensor& a = window.copyOf(cli.stages[i].id);  // lazy stages: their whole table
    const Tensor& b = cli.copyOf(cli.stages[i].id);
    EXPECT_EQ(a.shape, b.shape) << stageInfo(cli.stages[i].id).name;
    // Bit for bit (NaN-free here, so == on the floats is the bits' equality).
    EXPECT_TRUE(a.data == b.data) << stageInfo(cli.stages[i].id).name << " differs from the CLI's";
  }
  EXPECT_EQ(window.blocked, cli.blocked);
}

// The window's trace shares its model's weights (no copy). A trace the window replaces becomes
// buffers for the next job and must let go of them: it would keep the replaced model (its inputs
// too) alive.
TEST(WindowCompute, TheTraceSharesTheModelsWeightsAndLetsGoWhenReplaced) {
  ModelConfig c;
  c.text = "a b c d e f";
  c.dModel = 16;
  c.heads = 2;
  Trace window;
  ComputeRequest request;
  request.source.config = c;
  ComputeOutcome out = computeTrace(request, 1, window);
  ASSERT_TRUE(out.ok) << out.error;
  ASSERT_NE(out.model, nullptr);
  EXPECT_EQ(window.weights.get(), &out.model->weights) << "the model's own weights, not a copy";
  const std::weak_ptr<const Model> model = out.model;
  out.model.reset();
  EXPECT_FALSE(model.expired()) << "the trace keeps what it shows";
  ComputeWorker worker;
  worker.releaseLater(window);  // small: stays as buffers, without the weights
  EXPECT_EQ(window.weights, nullptr);
  EXPECT_TRUE(model.expired());
}

// A model folder's layer: the layers before it run on the worker with their count in the job's
// status (the progress line's "layer k of L"), and a newer request stops them (latest wins).
TEST(WindowCompute, AModelFoldersLayersReportProgressAndStopForANewerRequest) {
  // The fixture (it carries no tokenizer) copied with a byte-level one of three tokens.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mhascope_compute_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(fs::path(MHASCOPE_SOURCE_DIR) / "tests/fixtures/models/gpt2", dir / "gpt2", fs::copy_options::recursive);
  // Byte-level BPE needs a token for every byte (GPT-2's byte-to-unicode map: printable bytes stand
  // for themselves, the others for 256 + n); 'a', 'b', 'c' are ids 0-2, the rest follow.
  std::string vocab = R"("a": 0, "b": 1, "c": 2)";
  int id = 3, next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int code = printable ? b : next++;
    if (b >= 'a' && b <= 'c') continue;
    char esc[16];
    std::snprintf(esc, sizeof esc, "\\u%04x", code);
    vocab += ", \"" + std::string(esc) + "\": " + std::to_string(id++);
  }
  std::ofstream(dir / "gpt2/tokenizer.json") << R"({"version": "1.0", "added_tokens": [], "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null, "decoder": null,
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "vocab": {)" << vocab << R"(}, "merges": []}})";
  ComputeRequest request;
  request.source.files.model = (dir / "gpt2").string();
  request.source.files.layer = 1;
  request.source.config.text = "abcab";
  request.source.use = MemoryUse::app();
  Trace trace;
  JobStatus status;
  ComputeOutcome out = computeTrace(request, 1, trace, &status);
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_EQ(status.layers.load(), 2);
  EXPECT_EQ(status.layersDone.load(), 1);

  JobStatus outdated;
  outdated.superseded.store(true);  // as ComputeWorker::submit sets it while this job runs
  Trace other;
  out = computeTrace(request, 2, other, &outdated);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.error.find("cancelled"), std::string::npos) << out.error;
  EXPECT_EQ(outdated.layersDone.load(), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope::app
