// The Experiments tab's job and state, in-process on the trained fixture folder (its byte tokenizer: one token a
// letter): the sweep's numbers against the PyTorch reference of scripts/gen_experiment_fixtures.py, the labelled
// grids the tab and its Export… draw, the refusals in words, cancel, a cell's click into the pipeline and Compare,
// and the workspace block of the form.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "panels/compare_panel.hpp"
#include "shell/experiments_compute.hpp"
#include "state/app_state.hpp"
#include "state/compare_state.hpp"
#include "state/experiments_state.hpp"
#include "state/pipeline_session.hpp"
#include "state/workspace_state.hpp"
#include "io/workspace.hpp"

namespace mhascope::app {
namespace {

const std::string kFixtures = std::string(MHASCOPE_SOURCE_DIR) + "/tests/fixtures";
const std::string kTrained = kFixtures + "/models/trained";

ExperimentInputs induction(experiments::PatchSite site = experiments::PatchSite::Head) {
  ExperimentInputs in;
  in.folder = kTrained;
  in.clean = "qwertyuiqwertyui";
  in.corrupted = "abcdfgihqwertyui";
  in.answer = "q";
  in.wrong = "h";
  in.site = site;
  return in;
}

nlohmann::json referenceCase() {
  std::ifstream f(kFixtures + "/reference/experiments.json");
  const nlohmann::json all = nlohmann::json::parse(f);
  for (const auto& c : all["cases"]) {
    if (c["name"] == "trained_induction") return c;
  }
  return {};
}

TEST(ExperimentsJob, TheHeadSweepAndTheAttributionEqualTheReference) {
  const nlohmann::json ref = referenceCase();
  ASSERT_FALSE(ref.is_null());
  auto job = std::make_shared<ExperimentJob>();
  int wakes = 0;
  const ExperimentOutcome out = runExperimentJob(induction(), 0, 1, job, [&] { ++wakes; });
  ASSERT_TRUE(out.result) << out.error;
  const ExperimentResult& r = *out.result;
  EXPECT_EQ(r.answer, ref["right"].get<int>());
  EXPECT_EQ(r.wrong, ref["wrong"].get<int>());
  ASSERT_EQ(r.cleanTokens.size(), 16u);
  EXPECT_EQ(r.cleanTokens[0], "q");
  EXPECT_EQ(r.corruptedTokens[0], "a");
  nlohmann::json want;
  for (const auto& s : ref["sweeps"]) {
    if (s["site"] == "head" && s["direction"] == "denoise") want = s["values"];
  }
  ASSERT_FALSE(want.is_null());
  ASSERT_EQ(r.grid.rows, 2);
  ASSERT_EQ(r.grid.cols, 2);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 2; ++h) {
      const double w = want[static_cast<std::size_t>(l * 2 + h)].get<double>();  // (rows · cols) flat
      EXPECT_NEAR(r.grid.metric[static_cast<std::size_t>(l * 2 + h)], w, 1e-4) << l << "." << h;
      EXPECT_FLOAT_EQ(r.patchSlice.at(l, h), static_cast<float>(r.grid.at(l, h)));
    }
  }
  // The previous-token head 0.1 restores all of it, the induction head 1.1 most of it, the others nothing.
  EXPECT_EQ(r.topRow, 0);
  EXPECT_EQ(r.topCol, 1);
  EXPECT_GT(r.grid.at(1, 1), 0.8);
  EXPECT_LT(r.grid.at(1, 0), 0.2);
  EXPECT_EQ(r.patchSlice.rowLabels, (std::vector<std::string>{"L0", "L1"}));
  EXPECT_EQ(r.patchSlice.colLabels, (std::vector<std::string>{"H0", "H1"}));
  EXPECT_NE(patchCellText(r, 1, 1).find("L1 H1: restored 0.9"), std::string::npos) << patchCellText(r, 1, 1);
  ASSERT_TRUE(r.dla) << r.dlaNote;
  EXPECT_NEAR(r.dla->modelLogitDiff, ref["dla"]["logit_diff"].get<double>(), 1e-4);
  EXPECT_NEAR(r.dla->sum, r.dla->modelLogitDiff, 1e-4);
  EXPECT_EQ(r.dlaSlice.rows, 2);
  EXPECT_FLOAT_EQ(r.dlaSlice.at(1, 1), static_cast<float>(r.dla->headAt(1, 1)));
  EXPECT_GT(r.estimateBytes, 0.0);
  EXPECT_EQ(job->done.load(), job->total.load());
  EXPECT_EQ(job->total.load(), 5) << "four heads, then the attribution";
  EXPECT_GE(wakes, 4);
}

TEST(ExperimentsJob, ThePerPositionSitesLabelTheirColumnsWithTheCleanTokens) {
  const ExperimentOutcome out = runExperimentJob(induction(experiments::PatchSite::Resid), 0, 1,
                                                 std::make_shared<ExperimentJob>(), nullptr);
  ASSERT_TRUE(out.result) << out.error;
  const ExperimentResult& r = *out.result;
  ASSERT_EQ(r.patchSlice.cols, 16);
  EXPECT_EQ(r.patchSlice.colLabels[1], "w");
  EXPECT_EQ(cellLayerHead(r, 1, 5), (std::pair<int, int>{1, 0}));
  EXPECT_NE(patchCellText(r, 0, 1).find("position 1 'w'"), std::string::npos) << patchCellText(r, 0, 1);
}

TEST(ExperimentsJob, RefusalsNameTheProblem) {
  ExperimentInputs in = induction();
  in.corrupted = "bcdfgihqwertyui";
  ExperimentOutcome out = runExperimentJob(in, 0, 1, std::make_shared<ExperimentJob>(), nullptr);
  EXPECT_FALSE(out.result);
  EXPECT_NE(out.error.find("16 tokens"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("15"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("corrupted: 'b' 'c'"), std::string::npos) << out.error;
  in = induction();
  in.answer = "qw";
  out = runExperimentJob(in, 0, 1, std::make_shared<ExperimentJob>(), nullptr);
  EXPECT_NE(out.error.find("the right answer 'qw' is 2 tokens"), std::string::npos) << out.error;
  in = induction();
  in.wrong.clear();
  out = runExperimentJob(in, 0, 1, std::make_shared<ExperimentJob>(), nullptr);
  EXPECT_NE(out.error.find("needs a wrong answer"), std::string::npos) << out.error;
  in.metric = experiments::Metric::Probability;  // no wrong answer needed; no attribution, said why
  out = runExperimentJob(in, 0, 1, std::make_shared<ExperimentJob>(), nullptr);
  ASSERT_TRUE(out.result) << out.error;
  EXPECT_FALSE(out.result->dla);
  EXPECT_NE(out.result->dlaNote.find("logit difference"), std::string::npos);
  in = induction();
  in.folder = kFixtures + "/models/nope";
  out = runExperimentJob(in, 0, 1, std::make_shared<ExperimentJob>(), nullptr);
  EXPECT_FALSE(out.result);
  EXPECT_NE(out.error.find("nope"), std::string::npos) << out.error;
}

TEST(ExperimentsJob, ACancelledSweepGivesNoResult) {
  auto job = std::make_shared<ExperimentJob>();
  job->cancel = true;
  const ExperimentOutcome out = runExperimentJob(induction(), 0, 1, job, nullptr);
  EXPECT_TRUE(out.cancelled);
  EXPECT_FALSE(out.result);
  EXPECT_TRUE(out.error.empty()) << out.error;
}

// Run through the update step (synchronously, as scripts run it): the slot shows the result; a cell's click
// opens the pipeline on the clean text at that layer and head, and Compare's side B on the corrupted text.
TEST(ExperimentsTab, RunShowsTheResultAndACellOpensThePipelineAndCompare) {
  PipelineSession s;
  s.state.doc.files.model = kTrained;
  s.state.doc.files.layer = 0;
  ExperimentsState& m = experimentsOf(s.state);
  ExperimentsCompute compute;
  compute.update(s.state, true);
  EXPECT_FALSE(m.result) << "nothing runs before Run";
  m.wanted = induction(experiments::PatchSite::Key);
  compute.update(s.state, true);
  ASSERT_TRUE(m.result) << m.error;
  EXPECT_EQ(m.resultKey, *m.wanted);
  const ExperimentResult& r = *m.result;
  EXPECT_EQ(r.patchSlice.colLabels, (std::vector<std::string>{"KV0", "KV1"}));
  const auto [layer, head] = cellLayerHead(r, 1, 1);
  EXPECT_EQ(layer, 1);
  EXPECT_EQ(head, 1);
  openExperimentCell(s.state, s.view, m.resultKey, layer, head);
  EXPECT_EQ(s.state.doc.config.text, "qwertyuiqwertyui");
  ASSERT_TRUE(s.state.doc.files.layer.has_value());
  EXPECT_EQ(*s.state.doc.files.layer, 1);
  EXPECT_EQ(s.view.head, 1);
  ASSERT_TRUE(s.state.compare);
  EXPECT_EQ(s.state.compare->b.doc.config.text, "abcdfgihqwertyui");
  EXPECT_EQ(s.state.compare->b.doc.files.model, kTrained);
  EXPECT_EQ(*s.state.compare->b.doc.files.layer, 1);
  EXPECT_EQ(s.view.selectTab, kCompareTab);
  // Another folder in use: the result of the old one is not rerun.
  s.state.doc.files.model = kFixtures + "/models/gpt2";
  compute.update(s.state, true);
  EXPECT_FALSE(m.busy());
}

TEST(ExperimentsWorkspace, TheFormIsSavedAndReadBackStrictly) {
  ExperimentsState m;
  m.form = induction(experiments::PatchSite::HeadPosition);
  m.form.direction = experiments::PatchDirection::Noise;
  m.form.metric = experiments::Metric::Probability;
  auto back = parseExperimentsBlock(experimentsBlockJson(m), "w");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->clean, m.form.clean);
  EXPECT_EQ(back->corrupted, m.form.corrupted);
  EXPECT_EQ(back->answer, "q");
  EXPECT_EQ(back->wrong, "h");
  EXPECT_EQ(back->site, experiments::PatchSite::HeadPosition);
  EXPECT_EQ(back->direction, experiments::PatchDirection::Noise);
  EXPECT_EQ(back->metric, experiments::Metric::Probability);
  nlohmann::json j = nlohmann::json::parse(experimentsBlockJson(m));
  j["site"] = "neuron";
  auto bad = parseExperimentsBlock(j.dump(), "w");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/experiments/site"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("neuron"), std::string::npos);
  j = nlohmann::json::parse(experimentsBlockJson(m));
  j.erase("wrong");
  EXPECT_FALSE(parseExperimentsBlock(j.dump(), "w").ok());
  j = nlohmann::json::parse(experimentsBlockJson(m));
  j["clean"] = 3;
  EXPECT_FALSE(parseExperimentsBlock(j.dump(), "w").ok());
  // A workspace's block waits for the tab, then fills its form.
  AppState st;
  st.experimentsBlock = experimentsBlockJson(m);
  EXPECT_EQ(experimentsOf(st).form.site, experiments::PatchSite::HeadPosition);
  EXPECT_TRUE(st.experimentsBlock.empty());
}

// Through a whole workspace file: the form comes back when the tab is made (or at once when it is open), and a
// bad value refuses the workspace naming the key.
TEST(ExperimentsWorkspace, TheFormRoundTripsThroughAWorkspaceFile) {
  PipelineSession saved;
  ExperimentsState& m = experimentsOf(saved.state);
  m.form = induction(experiments::PatchSite::Value);
  const ::mhascope::Workspace ws = workspaceFromWindow(saved.state, saved.view, saved.lessons);
  auto back = parseWorkspaceJson(workspaceToJson(ws), "w.json");
  ASSERT_TRUE(back) << back.error().message;
  PipelineSession opened;
  applyWorkspace(*back, InputFiles{}, opened.state, opened.view, opened.lessons);
  EXPECT_FALSE(opened.state.experiments);
  const ExperimentsState& o = experimentsOf(opened.state);
  EXPECT_EQ(o.form.clean, "qwertyuiqwertyui");
  EXPECT_EQ(o.form.site, experiments::PatchSite::Value);
  m.form.clean = "changed";
  applyWorkspace(*back, InputFiles{}, saved.state, saved.view, saved.lessons);
  EXPECT_EQ(m.form.clean, "qwertyuiqwertyui") << "an open tab takes the workspace's form at once";
  nlohmann::json j = nlohmann::json::parse(workspaceToJson(ws));
  j["experiments"]["direction"] = "sideways";
  auto parsed = parseWorkspaceJson(j.dump(), "w.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const Status st = checkWorkspaceModel(*parsed, InputFiles{}, opened.state, "w.json");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("its Experiments tab: /experiments/direction must be \"denoise\" or \"noise\", got \"sideways\""),
            std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace mhascope::app
