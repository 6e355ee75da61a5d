// The pipeline's Circuits tab on a model folder's layer, without a window: what a picture is keyed
// by (the pipeline's folder, text, layer and head), the job on a fixture folder (labels spelt as the
// Model tab spells tokens, cancel, errors), latest request wins and an error keeping the previous
// picture, a head picked from the tab, and the tab drawn in a headless ImGui frame — its words
// built from the numbers it is given, hover naming a composition pair, a click picking that head.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "headless_imgui.hpp"
#include "model_folder_copy.hpp"  // modelFolderCopy: the fixtures' letters are ids 0-25, the space 26
#include "analysis/circuit_texts.hpp"
#include "model/circuits_source.hpp"
#include "panels/panel.hpp"  // kCircuitsTab
#include "state/app_state.hpp"
#include "state/model_view_state.hpp"
#include "state/open_file.hpp"
#include "state/pipeline_session.hpp"
#include "state/ui_context.hpp"
#include "circuits/circuits_view.hpp"
#include "train_lab/lab_state.hpp"
#include "circuits/model_circuits_compute.hpp"

namespace mhascope::app {
namespace {

namespace fs = std::filesystem;

class ModelCircuitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mhascope_model_circuits_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

ModelCircuitsKey keyOf(const std::string& folder, const std::string& text, int layer, int head) {
  ModelCircuitsKey k;
  k.folder = folder;
  k.text = text;
  k.layer = layer;
  k.head = head;
  return k;
}

// A finished job's outcome, made by hand (the numbers do not matter to the state's rules).
ModelCircuitsOutcome outcome(const std::shared_ptr<ModelCircuitsJob>& job, const ModelCircuitsKey& key, bool ok,
                             const std::string& error = "") {
  ModelCircuitsOutcome o;
  o.ticket = job;
  o.key = key;
  if (ok) o.result = std::make_shared<const ModelCircuitsResult>();
  o.error = error;
  return o;
}

TEST(ModelCircuitsKey, IsThePipelinesFolderTextLayerAndHead) {
  PipelineSession s;
  EXPECT_TRUE(modelCircuitsKey(s.state, s.view).folder.empty());  // text + seed: no model
  s.state.doc.files.model = "/m/gpt2";
  s.state.doc.files.layer = 1;
  s.state.doc.config.text = "one two\tthree";
  s.view.head = 3;
  const ModelCircuitsKey k = modelCircuitsKey(s.state, s.view);
  EXPECT_EQ(k, keyOf("/m/gpt2", "one two\tthree", 1, 3));
  // Each part changes the key: a change recomputes.
  s.view.head = 2;
  EXPECT_NE(modelCircuitsKey(s.state, s.view), k);
  s.view.head = 3;
  s.state.doc.files.layer = 0;
  EXPECT_NE(modelCircuitsKey(s.state, s.view), k);
  s.state.doc.files.layer = 1;
  s.state.doc.config.text = "one two three";
  EXPECT_NE(modelCircuitsKey(s.state, s.view), k);
  // No layer given: layer 0, as the pipeline opens a folder.
  s.state.doc.files.layer.reset();
  EXPECT_EQ(modelCircuitsKey(s.state, s.view).layer, 0);
}

TEST(ModelCircuitsKey, FileOpenOfAModelFolderThenAHeadOfTheModelTab) {
  PipelineSession s;
  s.state.doc.config.text = "abc";
  const std::string folder = std::string(MHASCOPE_SOURCE_DIR) + "/tests/fixtures/models/gpt2";
  ASSERT_TRUE(beginOpen(s.state, s.view, s.lessons, folder + "/config.json")) << s.view.openUi.message;
  EXPECT_EQ(modelCircuitsKey(s.state, s.view), keyOf(folder, "abc", 0, 0));
  openHeadInPipeline(s.state, s.view, 1, 3);  // a click in the Model tab
  EXPECT_EQ(modelCircuitsKey(s.state, s.view), keyOf(folder, "abc", 1, 3));
}

TEST(ModelCircuitsState, AReplacedJobIsDroppedAndAnErrorKeepsThePreviousPicture) {
  ModelCircuitsState s;
  const ModelCircuitsKey a = keyOf("/m", "ab", 0, 0), b = keyOf("/m", "ab", 0, 1);
  auto first = std::make_shared<ModelCircuitsJob>();
  s.job = first;
  s.jobKey = a;
  EXPECT_EQ(modelCircuitsStatus(s, a), "computing: reading the folder and the text");
  first->total = 8;
  first->done = 3;
  EXPECT_EQ(modelCircuitsStatus(s, a), "computing: step 3 of 8");
  applyModelCircuitsOutcome(s, outcome(first, a, true));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.resultSerial, 1u);
  EXPECT_EQ(modelCircuitsStatus(s, a), "ready");
  EXPECT_EQ(modelCircuitsStatus(s, b), "none");
  const auto shown = s.result;

  // A job replaced by a newer one: its outcome is dropped.
  auto old = std::make_shared<ModelCircuitsJob>(), latest = std::make_shared<ModelCircuitsJob>();
  s.job = latest;
  s.jobKey = b;
  applyModelCircuitsOutcome(s, outcome(old, b, true));
  EXPECT_EQ(s.result, shown);
  EXPECT_TRUE(s.busy());

  // The latest fails: said, the previous picture stays, these inputs are not rerun by themselves.
  applyModelCircuitsOutcome(s, outcome(latest, b, false, "layer 5 is out of range: the model has 2 layers"));
  EXPECT_EQ(s.result, shown);
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(modelCircuitsStatus(s, b), "error: layer 5 is out of range: the model has 2 layers");
  ASSERT_TRUE(s.stoppedKey);
  EXPECT_EQ(*s.stoppedKey, b);
  s.computeAgain();
  EXPECT_FALSE(s.stoppedKey);
  EXPECT_TRUE(s.error.empty());

  // Cancelled: no error, said as cancelled.
  auto third = std::make_shared<ModelCircuitsJob>();
  s.job = third;
  ModelCircuitsOutcome c = outcome(third, b, false);
  c.cancelled = true;
  applyModelCircuitsOutcome(s, c);
  EXPECT_EQ(modelCircuitsStatus(s, b), "cancelled");
  EXPECT_EQ(s.result, shown);
}

TEST(ModelCircuitsWords, SourceAndConventionsSayWhereTheNumbersComeFrom) {
  ModelCircuitsResult r;
  r.folderName = "gpt2";
  r.circuits.layer = 1;
  r.circuits.head = 3;
  EXPECT_EQ(modelCircuitsSource(r), "gpt2 · layer 1, head 3");
  EXPECT_NE(analysis::oneHeadConventions(false).find("gains folded"), std::string::npos);
  EXPECT_EQ(analysis::oneHeadConventions(false).find("RoPE"), std::string::npos);
  EXPECT_NE(analysis::oneHeadConventions(true).find("RoPE: QK is the content part"), std::string::npos);
  // The token-space words say how many of the text's distinct tokens the axes hold.
  r.circuits.tokenIds = {4, 9, 2};
  r.circuits.vocab = 50257;
  r.distinctTokens = 3;
  EXPECT_NE(analysis::oneHeadMatrixText(r.circuits, r.distinctTokens, 2).find("over the text's 3 distinct tokens (of V = 50,257)"), std::string::npos)
      << analysis::oneHeadMatrixText(r.circuits, r.distinctTokens, 2);
  r.distinctTokens = 80;  // a long text: the axes hold the first ones
  EXPECT_NE(analysis::oneHeadMatrixText(r.circuits, r.distinctTokens, 3).find("over the first 3 of the text's 80 distinct tokens"), std::string::npos)
      << analysis::oneHeadMatrixText(r.circuits, r.distinctTokens, 3);
}

TEST(ModelCircuitsSelect, TheSameLayerChangesTheHeadAnotherReopensThePipelineAndKeepsTheTab) {
  PipelineSession s;
  s.state.doc.files.model = "/m/gpt2";
  s.state.doc.files.layer = 1;
  s.state.doc.configDirty = false;
  s.view.head = 0;
  selectModelHead(s.state, s.view, 1, 2);
  EXPECT_EQ(s.view.head, 2);
  EXPECT_FALSE(s.state.doc.configDirty);  // nothing to recompute: the view changed
  EXPECT_FALSE(s.state.doc.beforeOpen);
  selectModelHead(s.state, s.view, 0, 3);
  EXPECT_EQ(s.state.doc.files.layer, 0);
  EXPECT_EQ(s.state.doc.files.model, "/m/gpt2");
  EXPECT_EQ(s.view.head, 3);
  EXPECT_TRUE(s.state.doc.configDirty);
  EXPECT_EQ(s.view.selectTab, kCircuitsTab);
  // The Model tab's selection follows when the tab exists.
  modelViewOf(s.state);
  selectModelHead(s.state, s.view, 0, 1);
  EXPECT_EQ(s.state.modelView->layer, 0);
  EXPECT_EQ(s.state.modelView->head, 1);
}

TEST_F(ModelCircuitsTest, TheJobReadsTheFolderAndLabelsTheTokensAsTheModelTabDoes) {
  const std::string folder = modelFolderCopy(dir_, "llama_gqa");
  auto job = std::make_shared<ModelCircuitsJob>();
  ModelCircuitsOutcome out = runModelCircuitsJob(keyOf(folder, "ab ab", 1, 2), 0, 1, job);
  ASSERT_TRUE(out.result) << out.error;
  const ModelCircuitsResult& r = *out.result;
  const analysis::OneHeadCircuits& c = r.circuits;
  EXPECT_EQ(c.layer, 1);
  EXPECT_EQ(c.head, 2);
  EXPECT_EQ(r.folderName, "llama_gqa");
  EXPECT_TRUE(r.rope);
  // The token-space axes: the text's distinct tokens, first occurrence first: a, b, space.
  EXPECT_EQ(c.tokenIds, (std::vector<int>{0, 1, 26}));
  EXPECT_EQ(r.axisLabels, (std::vector<std::string>{"a", "b", "␣"}));
  EXPECT_EQ(r.textLabels, (std::vector<std::string>{"a", "b", "␣", "a", "b"}));
  EXPECT_EQ(r.distinctTokens, 3);
  EXPECT_EQ(c.qkTokens.rows(), 3);
  EXPECT_GT(job->total.load(), 0);
  EXPECT_EQ(job->done.load(), job->total.load());
  EXPECT_EQ(c.rollout.rolled.rows(), 5);
  EXPECT_EQ(modelCircuitsSource(r), "llama_gqa · layer 1, head 2");
  // A GPT-2 folder: no RoPE in the conventions.
  const std::string gpt = modelFolderCopy(dir_, "gpt2");
  ModelCircuitsOutcome g = runModelCircuitsJob(keyOf(gpt, "abc", 0, 0), 0, 1, std::make_shared<ModelCircuitsJob>());
  ASSERT_TRUE(g.result) << g.error;
  EXPECT_FALSE(g.result->rope);
}

TEST_F(ModelCircuitsTest, TheJobSaysWhyAndStopsWhenCancelled) {
  const std::string folder = modelFolderCopy(dir_, "gpt2");
  ModelCircuitsOutcome bad = runModelCircuitsJob(keyOf(folder, "ab", 7, 0), 0, 1, std::make_shared<ModelCircuitsJob>());
  EXPECT_FALSE(bad.result);
  EXPECT_FALSE(bad.cancelled);
  EXPECT_NE(bad.error.find("7"), std::string::npos) << bad.error;
  ModelCircuitsOutcome none = runModelCircuitsJob(keyOf((dir_ / "nowhere").string(), "ab", 0, 0), 0, 1,
                                                  std::make_shared<ModelCircuitsJob>());
  EXPECT_FALSE(none.result);
  EXPECT_NE(none.error.find("nowhere"), std::string::npos) << none.error;
  auto job = std::make_shared<ModelCircuitsJob>();
  job->cancel = true;
  ModelCircuitsOutcome c = runModelCircuitsJob(keyOf(folder, "ab", 0, 0), 0, 1, job);
  EXPECT_FALSE(c.result);
  EXPECT_TRUE(c.cancelled);
  EXPECT_TRUE(c.error.empty()) << c.error;
}

// Runs update until no job is under way (the worker's thread computes).
void settle(ModelCircuitsCompute& compute, ModelCircuitsState& s, const ModelCircuitsKey& want) {
  for (int i = 0; i < 2000 && (s.busy() || compute.busy()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    compute.update(s, want, 0);
  }
}

TEST_F(ModelCircuitsTest, TheLatestRequestWinsOnTheWorker) {
  const std::string folder = modelFolderCopy(dir_, "gpt2");
  ModelCircuitsCompute compute;
  ModelCircuitsState s;
  const ModelCircuitsKey a = keyOf(folder, "abcabc", 0, 0), b = keyOf(folder, "abcabc", 1, 3);
  compute.update(s, a, 0);
  EXPECT_TRUE(s.busy());
  compute.update(s, b, 0);  // before the first is taken: it is cancelled, the second runs
  EXPECT_EQ(s.jobKey, b);
  settle(compute, s, b);
  ASSERT_TRUE(s.result) << s.error;
  EXPECT_EQ(s.resultKey, b);
  EXPECT_EQ(s.result->circuits.layer, 1);
  EXPECT_EQ(s.result->circuits.head, 3);
  EXPECT_EQ(modelCircuitsStatus(s, b), "ready");
  // The baseline of the folder's sizes is kept for the next request (it costs seconds at a real
  // model's sizes), and a job given it reports the same value.
  const analysis::OneHeadCircuits& c = s.result->circuits;
  ASSERT_EQ(compute.baselines().count({c.dModel, c.dk}), 1u);
  EXPECT_EQ(compute.baselines().at({c.dModel, c.dk}), c.baseline);
  BaselineCache given{{{c.dModel, c.dk}, 0.5}};
  ModelCircuitsOutcome withGiven = runModelCircuitsJob(keyOf(folder, "abcabc", 1, 0), 0, 1,
                                                       std::make_shared<ModelCircuitsJob>(), given);
  ASSERT_TRUE(withGiven.result) << withGiven.error;
  EXPECT_EQ(withGiven.result->circuits.baseline, 0.5);  // used as given, not computed again
  // A request that fails: the previous picture stays, the error is said, it is not rerun.
  const ModelCircuitsKey bad = keyOf(folder, "abcabc", 1, 9);
  compute.update(s, bad, 0);
  settle(compute, s, bad);
  EXPECT_EQ(s.resultKey, b);
  EXPECT_NE(modelCircuitsStatus(s, bad).find("error: "), std::string::npos);
  compute.update(s, bad, 0);
  EXPECT_FALSE(s.busy());
  // Back to the shown inputs: ready again, no error.
  compute.update(s, b, 0);
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(modelCircuitsStatus(s, b), "ready");
}

// --- the tab drawn -------------------------------------------------------------------------------

// Made-up numbers of the right shapes: 3 layers x 2 heads, the chosen head layer 1 head 0.
std::shared_ptr<const ModelCircuitsResult> madeUpResult() {
  auto r = std::make_shared<ModelCircuitsResult>();
  analysis::OneHeadCircuits& c = r->circuits;
  c.layers = 3;
  c.heads = 2;
  c.kvHeads = 2;
  c.dModel = 4;
  c.dk = 2;
  c.vocab = 100;
  c.layer = 1;
  c.head = 0;
  c.qk = RowMatrix::Random(4, 4);
  c.ov = RowMatrix::Random(4, 4);
  c.tokenIds = {0, 1};
  c.qkTokens = RowMatrix::Random(2, 2);
  c.ovTokens = RowMatrix::Random(2, 2);
  c.copying = {0.9, -0.2, 0.1, 0.4, 0.0, -0.5};
  c.baseline = 0.3;
  c.reads = {{0, 0, 1, 0, 0.2, 0.7, 0.1}, {0, 1, 1, 0, 0.5, 0.1, 0.3}};
  c.readBy = {{1, 0, 2, 0, 0.4, 0.2, 0.6}, {1, 0, 2, 1, 0.1, 0.3, 0.2}};
  c.rollout.rolled = RowMatrix::Constant(3, 3, 1.0f / 3);
  c.rollout.rawLast = RowMatrix::Constant(3, 3, 1.0f / 3);
  c.rollout.layers = 3;
  c.rollout.heads = 2;
  r->folderName = "gpt";
  r->axisLabels = {"a", "b"};
  r->textLabels = {"a", "b", "a"};
  return r;
}

class ModelCircuitsPanel : public ::testing::Test {
 protected:
  ModelCircuitsPanel() : imgui_(ImVec2(1600, 1000)) {}
  HeadlessImGui imgui_;  // first: the context outlives everything below
  PipelineSession pipeline;
  TextureCache textures;
  UiProbes probes;
  CircuitsTab tab;

  void frame() {
    updateCircuitsTab(tab, pipeline.state, pipeline.view, kCircuitsTab, 0.0);  // the app's update step
    ImGui::NewFrame();
    probes.clear();
    UiContext ctx = uiContext(pipeline, textures, probes);
    ctx.circuits = &tab;
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("tab", nullptr, ImGuiWindowFlags_NoDecoration);
    drawCircuitsTab(ctx);
    ImGui::End();
    ImGui::Render();
    textures.endFrame();
  }
  std::string label(const std::string& name) const {
    auto it = probes.labels().find(name);
    return it == probes.labels().end() ? std::string("<none>") : it->second;
  }
  // The pipeline on the made-up model's layer 1, head 0, its picture already computed.
  void shown() {
    pipeline.state.doc.files.model = "/m/gpt";
    pipeline.state.doc.files.layer = 1;
    pipeline.state.doc.config.text = "aba";
    pipeline.view.head = 0;
    ModelCircuitsState& s = tab.model.state;
    s.result = madeUpResult();
    s.resultKey = modelCircuitsKey(pipeline.state, pipeline.view);
    s.resultSerial = 1;
  }
};

TEST_F(ModelCircuitsPanel, WithoutAModelTheCheckpointViewIsUnchanged) {
  frame();
  EXPECT_NE(label("circuits_status").find("Open a training checkpoint"), std::string::npos) << label("circuits_status");
}

TEST_F(ModelCircuitsPanel, DrawsEveryViewWithTheWordsOfItsNumbers) {
  shown();
  frame();
  const analysis::OneHeadCircuits& c = tab.model.state.result->circuits;
  EXPECT_EQ(label("circuits_status"), "ready");
  EXPECT_EQ(label("circuits_step"), "gpt · layer 1, head 0");
  EXPECT_NE(label("circuits_conventions").find("gains folded"), std::string::npos);
  EXPECT_EQ(label("circuits_layer"), "1");
  EXPECT_EQ(label("circuits_head"), "0");
  EXPECT_EQ(label("circuits_comp_text"), analysis::oneHeadCompositionText(c, 'K'));
  EXPECT_EQ(label("circuits_copying_text"), analysis::oneHeadCopyingText(c));
  EXPECT_EQ(label("circuits_copying_chosen"), "layer 1 head 0: copying score 0.100");
  EXPECT_NE(label("circuits_rollout_text").find("after all 3 layers"), std::string::npos) << label("circuits_rollout_text");
  for (const char* probe : {"circuits_head_map", "circuits_reads_map", "circuits_readers_map", "circuits_copying_map",
                            "circuits_rollout_map", "circuits_raw_map", "circuits_export_head", "circuits_export_reads",
                            "circuits_export_readers", "circuits_export_copying", "circuits_export_rollout",
                            "circuits_m_qk", "circuits_m_ov_tokens", "circuits_kind_q", "circuits_layer", "circuits_head"}) {
    EXPECT_NE(probes.find(probe), nullptr) << probe;
  }
  EXPECT_EQ(probes.find("circuits_cancel"), nullptr);  // nothing runs
  // Another matrix and kind: the title and the words follow.
  tab.model.matrix = 3;
  tab.model.kind = 2;
  frame();
  EXPECT_NE(label("circuits_head_title").find("E OV U"), std::string::npos) << label("circuits_head_title");
  EXPECT_EQ(label("circuits_head_text"), analysis::oneHeadMatrixText(tab.model.state.result->circuits, tab.model.state.result->distinctTokens, 3));
  EXPECT_EQ(label("circuits_comp_text"), analysis::oneHeadCompositionText(c, 'V'));
}

TEST_F(ModelCircuitsPanel, HoverNamesTheCompositionPairAndAClickPicksThatHead) {
  shown();
  frame();
  const ItemRect* reads = probes.find("circuits_readers_map");
  ASSERT_NE(reads, nullptr);
  // Layer 2 head 1: the right half of the one row of later heads.
  const ImVec2 at(reads->min.x + 0.75f * (reads->max.x - reads->min.x), 0.5f * (reads->min.y + reads->max.y));
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = at;
  frame();
  frame();
  EXPECT_EQ(label("circuits_comp_hover"), "layer 1 head 0 → layer 2 head 1: K 0.300 (random baseline 0.300)");
  io.MouseDown[0] = true;
  frame();
  io.MouseDown[0] = false;
  frame();
  EXPECT_EQ(pipeline.state.doc.files.layer, 2);
  EXPECT_EQ(pipeline.view.head, 1);
  EXPECT_EQ(pipeline.view.selectTab, kCircuitsTab);
}

TEST_F(ModelCircuitsPanel, AnErrorIsSaidAboveThePreviousPicture) {
  shown();
  ModelCircuitsState& s = tab.model.state;
  s.error = "cannot read '/m/gpt/model.safetensors': no such file";
  s.stoppedKey = keyOf("/m/gpt", "aba", 1, 1);
  s.stoppedError = s.error;
  pipeline.view.head = 1;  // the request that failed
  frame();
  EXPECT_EQ(label("circuits_status"), "error: cannot read '/m/gpt/model.safetensors': no such file");
  EXPECT_EQ(label("circuits_step"), "gpt · layer 1, head 0");  // the previous picture
  EXPECT_NE(probes.find("circuits_rerun"), nullptr);
}

}  // namespace
}  // namespace mhascope::app
