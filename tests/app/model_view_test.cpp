// The Model tab without a window: a model folder recognised by Open (the folder or its
// config.json), its every layer and head computed by the tab's job (a probe of repeated random
// tokens needs no tokenizer; the fixtures have none), cancel and errors keeping the previous
// result, heads ranked by role, a click opening that layer and head in the pipeline, and the tab
// drawn in a headless ImGui frame with a result.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "model/model_view.hpp"
#include "analysis/head_roles.hpp"
#include "export/html_view.hpp"
#include "model_source/file_kind.hpp"
#include "model_source/model_view_page.hpp"
#include "panels/panel.hpp"
#include "shell/model_view_compute.hpp"
#include "headless_imgui.hpp"
#include "state/app_state.hpp"
#include "state/model_view_state.hpp"
#include "state/open_file.hpp"
#include "state/pipeline_session.hpp"
#include "state/workspace_state.hpp"
#include "model_folder_copy.hpp"  // modelFolderCopy: the fixtures' letters are ids 0-25, the space 26
#include "state/ui_context.hpp"

namespace mhascope::app {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(MHASCOPE_SOURCE_DIR) + "/tests/fixtures/models/" + name; }

ModelViewInputs randomProbe(const std::string& folder, int n = 32, std::uint64_t seed = 1) {
  ModelViewInputs in;
  in.folder = folder;
  in.probe = ModelProbe::RepeatedRandom;
  in.probePeriod = n;
  in.probeSeed = seed;
  return in;
}

TEST(ModelViewFileKind, AFolderWithConfigJsonOrThatFileIsAModel) {
  auto dir = inspectFile(fixture("llama_gqa"));
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(dir->kind, FileKind::Model);
  EXPECT_EQ(dir->layers, 2);
  EXPECT_EQ(dir->folder, fixture("llama_gqa"));
  EXPECT_NE(dir->summary.find("llama model: 2 layers × 4 heads"), std::string::npos) << dir->summary;
  EXPECT_NE(dir->summary.find("N = 2 K/V heads"), std::string::npos) << dir->summary;
  auto cfg = inspectFile(fixture("gpt2") + "/config.json");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->kind, FileKind::Model);
  EXPECT_EQ(cfg->folder, fixture("gpt2"));
  // A folder that is not a model: said, naming the folder and what is missing.
  auto none = inspectFile(std::string(MHASCOPE_SOURCE_DIR) + "/tests/fixtures/models/reference");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("without a config.json"), std::string::npos) << none.error().message;
}

TEST(ModelViewFileKind, AModelFoldersWeightsFileSaysToOpenTheFolder) {
  const std::string weights = fixture("gpt2") + "/model.safetensors";
  auto r = inspectFile(weights);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("open the model's folder '" + fixture("gpt2") + "' or its config.json"),
            std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("neither MHA weights"), std::string::npos) << r.error().message;
}

TEST(ModelViewFileKind, AnUnknownModelTypeIsRefusedInThePopup) {
  const fs::path dir = fs::temp_directory_path() / "mhascope_model_view_bad_type";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "bert", "hidden_size": 8})";
  auto r = inspectFile(dir.string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bert"), std::string::npos) << r.error().message;
  fs::remove_all(dir);
}

TEST(ModelViewOpen, OpeningAModelFolderSetsItsLayerZeroAndTheModelTab) {
  PipelineSession s;
  ASSERT_TRUE(beginOpen(s.state, s.view, s.lessons, fixture("gpt2") + "/config.json")) << s.view.openUi.message;
  EXPECT_EQ(s.state.doc.files.model, fixture("gpt2"));
  ASSERT_TRUE(s.state.doc.files.layer.has_value());
  EXPECT_EQ(*s.state.doc.files.layer, 0);
  EXPECT_EQ(s.view.selectTab, kModelTab);
  EXPECT_TRUE(s.state.doc.beforeOpen.has_value());  // a failure puts back what was in use
}

TEST(ModelViewJob, EveryLayerAndHeadOfARandomProbeWithoutATokenizer) {
  auto job = std::make_shared<ModelViewJob>();
  int wakes = 0;
  const ModelViewOutcome out = runModelViewJob(randomProbe(fixture("llama_gqa")), 0, 1, job, [&] { ++wakes; });
  ASSERT_TRUE(out.result) << out.error;
  const model::ModelView& v = *out.result;
  EXPECT_EQ(v.layers, 2);
  EXPECT_EQ(v.heads, 4);
  EXPECT_EQ(v.kvHeads, 2);
  // llama_gqa has 64 positions and no tokenizer (so no BOS): period 32, 2 copies, labelled by id.
  ASSERT_EQ(v.ids.size(), 64u);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(v.ids[static_cast<std::size_t>(t)], v.ids[static_cast<std::size_t>(t + 32)]);
  EXPECT_EQ(v.labels.front(), "#" + std::to_string(v.ids.front()));
  // The second copy repeats every token: prefix matching is defined for every head.
  EXPECT_GT(v.head(1, 3).scores.inductionQueries, 0);
  EXPECT_GE(wakes, 2);
  EXPECT_EQ(job->layers.load(), 2);
  EXPECT_EQ(job->done.load(), job->total.load());
  // The grid's picture: L · r rows of h · c, every head's thumbnail as it is (one 0 … 1 scale for
  // every row, so a diffuse row stays darker than a sharp one).
  const ModelViewState::Atlas a = thumbnailAtlas(*out.result);
  EXPECT_EQ(a.rows(), 2 * a.thumbRows);
  EXPECT_EQ(a.cols, 4 * a.thumbCols);
  float lowestTop = 1.0f;
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h) {
      const model::HeadView& hv = v.head(l, h);
      for (int r = 0; r < a.thumbRows; ++r) {
        float top = 0.0f;
        for (int c = 0; c < a.thumbCols; ++c) {
          const float got = a.values[(static_cast<std::size_t>(l) * a.thumbRows + r) * a.cols + static_cast<std::size_t>(h) * a.thumbCols + c];
          ASSERT_EQ(got, hv.thumbnail[static_cast<std::size_t>(r) * a.thumbCols + c]) << "L" << l << " h" << h << " row " << r;
          top = std::max(top, got);
        }
        lowestTop = std::min(lowestTop, top);
      }
    }
  }
  EXPECT_LT(lowestTop, 0.99f);  // random weights spread some row: it is not lifted to 1
  // The chance level beside the scores: a uniform head's on the same tokens.
  const ::mhascope::HeadScores u = uniformHeadScores(TokenRepeats(v.ids.data(), static_cast<int>(v.ids.size())));
  EXPECT_DOUBLE_EQ(v.uniform.prevToken, u.prevToken);
  EXPECT_DOUBLE_EQ(v.uniform.induction, u.induction);
  EXPECT_GT(v.uniform.prevToken, 0.0);
}

// The tab's page (Export page…, export --view model): every head in rows of layers, each the tab's
// thumbnail as it is, named and with the tab's role in words; the probe under the title.
TEST(ModelViewPage, EveryHeadsThumbnailRoleAndScoresInRowsOfLayers) {
  auto job = std::make_shared<ModelViewJob>();
  const ModelViewOutcome out = runModelViewJob(randomProbe(fixture("llama_gqa")), 0, 1, job, [] {});
  ASSERT_TRUE(out.result) << out.error;
  const model::ModelView& v = *out.result;
  const HtmlExport page = modelViewPage(v, "llama_gqa");
  EXPECT_TRUE(page.grid);
  EXPECT_EQ(page.gridColumns, 4);
  ASSERT_EQ(page.slices.size(), 8u);
  ASSERT_EQ(page.rowHeadings.size(), 2u);
  EXPECT_EQ(page.rowHeadings[1].rfind("layer 1", 0), 0u);
  EXPECT_NE(page.options.title.find("llama_gqa · T = 64 tokens"), std::string::npos);
  EXPECT_NE(page.options.subtitle.find("Probe: " + model::describeProbe(*v.probe)), std::string::npos);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 4; ++h) {
      const std::size_t i = static_cast<std::size_t>(l * 4 + h);
      const model::HeadView& hv = v.head(l, h);
      const Slice2D& s = page.slices[i];
      ASSERT_EQ(s.rows, hv.thumbRows);
      ASSERT_EQ(s.cols, hv.thumbCols);
      for (std::size_t k = 0; k < hv.thumbnail.size(); ++k) ASSERT_EQ(s.data[k], hv.thumbnail[k]);
      EXPECT_EQ(page.names[i], "layer " + std::to_string(l) + " head " + std::to_string(h));
      EXPECT_EQ(page.notes[i].rfind(roleOf(roleScoresOf(hv.scores, l)), 0), 0u) << page.notes[i];
    }
  }
  auto html = renderHtml(page);
  ASSERT_TRUE(html) << html.error().message;
  EXPECT_NE(html->find("\"gridColumns\":4"), std::string::npos);
}

// The run drawn from the text's own tokens (its alphabet) or from a typed set, at the asked
// period and copies; what was run is said (source, pool, period, copies, seed); a set of fewer
// than two tokens and a probe longer than the model's positions are said too.
TEST(ModelViewJob, TheRandomProbeDrawsFromTheTextsOrTheGivenTokens) {
  const fs::path dir = fs::temp_directory_path() / ("mhascope_probe_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string llama = modelFolderCopy(dir, "llama_gqa");  // 64 positions
  ModelViewInputs in = randomProbe(llama, 4, 3);
  in.source = model::ProbeSource::TextTokens;
  in.text = "abcabcxyz";
  in.probeCopies = 3;
  auto out = runModelViewJob(in, 0, 1, std::make_shared<ModelViewJob>(), nullptr);
  ASSERT_TRUE(out.result) << out.error;
  const std::vector<int> alphabet = {0, 1, 2, 23, 24, 25};
  const std::vector<int>& ids = out.result->ids;
  ASSERT_EQ(ids.size(), 12u);  // no BOS: 4 × 3
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_NE(std::find(alphabet.begin(), alphabet.end(), ids[i]), alphabet.end()) << ids[i];
    if (i >= 4) {
      EXPECT_EQ(ids[i], ids[i - 4]);
    }
  }
  ASSERT_TRUE(out.result->probe);
  EXPECT_EQ(out.result->probe->pool, 6);
  EXPECT_EQ(model::describeProbe(*out.result->probe),
            "T = 12 tokens: 4 random tokens of the text's 6, then the same 4 twice more (no token twice in a run: "
            "drawn without replacement) · seed 3");
  // Seeded: the same ids again.
  auto again = runModelViewJob(in, 0, 1, std::make_shared<ModelViewJob>(), nullptr);
  ASSERT_TRUE(again.result) << again.error;
  EXPECT_EQ(again.result->ids, ids);

  in.source = model::ProbeSource::GivenTokens;
  in.probeTokens = "qq w";
  out = runModelViewJob(in, 0, 1, std::make_shared<ModelViewJob>(), nullptr);
  ASSERT_TRUE(out.result) << out.error;
  for (int id : out.result->ids) EXPECT_TRUE(id == 16 || id == 22 || id == 26) << id;
  EXPECT_EQ(out.result->probe->pool, 3);
  in.probeTokens = "aaa";
  out = runModelViewJob(in, 0, 1, std::make_shared<ModelViewJob>(), nullptr);
  EXPECT_FALSE(out.result);
  EXPECT_NE(out.error.find("the token set has one token ('a', id 0)"), std::string::npos) << out.error;
  in.probeTokens.clear();
  out = runModelViewJob(in, 0, 1, std::make_shared<ModelViewJob>(), nullptr);
  EXPECT_NE(out.error.find("the token set is empty"), std::string::npos) << out.error;

  // Longer than the 64 positions: fewer copies first, then a shorter period, and said.
  in = randomProbe(llama, 40, 1);
  in.probeCopies = 4;
  out = runModelViewJob(in, 0, 1, std::make_shared<ModelViewJob>(), nullptr);
  ASSERT_TRUE(out.result) << out.error;
  EXPECT_EQ(out.result->ids.size(), 64u);
  EXPECT_EQ(out.result->probe->period, 32);
  EXPECT_EQ(out.result->probe->copies, 2);
  EXPECT_EQ(out.result->probe->cut, "period 40 × 4 copies cut to 32 × 2 to fit the model's 64 positions");
  fs::remove_all(dir);
}

// The probe choices go into a workspace and come back; a bad value is refused naming it, and
// nothing of that workspace is applied.
TEST(ModelViewWorkspace, TheProbeChoicesRoundTripAndABadValueIsNamed) {
  PipelineSession saved;
  ModelViewState& m = modelViewOf(saved.state);
  m.probe = ModelProbe::RepeatedRandom;
  m.probeSource = model::ProbeSource::GivenTokens;
  m.probePeriod = 12;
  m.probeCopies = 3;
  m.probeSeed = 18446744073709551615ull;
  m.probeTokens = "qwerty";
  const Workspace ws = workspaceFromWindow(saved.state, saved.view, saved.lessons);
  auto back = parseWorkspaceJson(workspaceToJson(ws), "w.json");
  ASSERT_TRUE(back) << back.error().message;
  PipelineSession opened;
  // Applied when the tab's state is made (nothing runs before the tab is drawn).
  applyWorkspace(*back, InputFiles{}, opened.state, opened.view, opened.lessons);
  EXPECT_FALSE(opened.state.modelView);
  const ModelViewState& o = modelViewOf(opened.state);
  EXPECT_EQ(o.probe, ModelProbe::RepeatedRandom);
  EXPECT_EQ(o.probeSource, model::ProbeSource::GivenTokens);
  EXPECT_EQ(o.probePeriod, 12);
  EXPECT_EQ(o.probeCopies, 3);
  EXPECT_EQ(o.probeSeed, 18446744073709551615ull);
  EXPECT_EQ(o.probeTokens, "qwerty");
  EXPECT_EQ(wantedModelView(opened.state, o), wantedModelView(saved.state, m));
  // An open tab takes a workspace's choices at once.
  m.probePeriod = 5;
  applyWorkspace(*back, InputFiles{}, saved.state, saved.view, saved.lessons);
  EXPECT_EQ(m.probePeriod, 12);

  const auto bad = [&](const std::string& key, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(workspaceToJson(ws));
    j["model_view"][key] = nlohmann::json::parse(value);
    auto parsed = parseWorkspaceJson(j.dump(), "w.json");
    EXPECT_TRUE(parsed) << parsed.error().message;  // core keeps the block as it is: the app checks it
    const Status st = checkWorkspaceModel(*parsed, InputFiles{}, opened.state, "w.json");
    return st ? std::string() : st.error().message;
  };
  EXPECT_EQ(bad("period", "0"), "workspace 'w.json' was not opened: its Model tab: /model_view/period must be an integer "
                                "2 … 256, got 0");
  EXPECT_EQ(bad("copies", "17"), "workspace 'w.json' was not opened: its Model tab: /model_view/copies must be an "
                                 "integer 2 … 16, got 17");
  EXPECT_NE(bad("source", "\"alphabet\"").find("/model_view/source must be \"vocabulary\", \"text\" or \"tokens\", got \"alphabet\""),
            std::string::npos);
  EXPECT_NE(bad("seed", "-1").find("/model_view/seed must be an integer"), std::string::npos);
  EXPECT_NE(bad("probe", "1").find("/model_view/probe must be"), std::string::npos);
  EXPECT_NE(bad("colour", "1").find("unknown key /model_view/colour"), std::string::npos);
  EXPECT_EQ(bad("period", "12"), "");  // the good value passes
  nlohmann::json notObject = nlohmann::json::parse(workspaceToJson(ws));
  notObject["model_view"] = 3;
  auto refused = parseWorkspaceJson(notObject.dump(), "w.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("model_view"), std::string::npos) << refused.error().message;
}

TEST(ModelViewJob, YourTextNeedsTheModelsTokenizer) {
  ModelViewInputs in;
  in.folder = fixture("gpt2");
  in.text = "abcabc";
  auto job = std::make_shared<ModelViewJob>();
  const ModelViewOutcome out = runModelViewJob(in, 0, 1, job, nullptr);
  EXPECT_FALSE(out.result);
  EXPECT_NE(out.error.find("tokenizer"), std::string::npos) << out.error;
}

TEST(ModelViewJob, CancelledStopsWithoutAResultAndKeepsThePreviousOne) {
  ModelViewState m;
  auto first = std::make_shared<ModelViewJob>();
  m.job = first;
  applyModelViewOutcome(m, runModelViewJob(randomProbe(fixture("gpt2")), 0, 1, first, nullptr));
  ASSERT_TRUE(m.result);
  const auto previous = m.result;
  const std::uint64_t serial = m.resultSerial;

  auto second = std::make_shared<ModelViewJob>();
  second->cancel = true;  // Cancel pressed before the first layer
  m.job = second;
  const ModelViewOutcome out = runModelViewJob(randomProbe(fixture("gpt2"), 32, 2), 0, 1, second, nullptr);
  EXPECT_TRUE(out.cancelled);
  EXPECT_FALSE(out.result);
  applyModelViewOutcome(m, out);
  EXPECT_EQ(m.result, previous);
  EXPECT_EQ(m.resultSerial, serial);
  EXPECT_TRUE(m.cancelled);
  EXPECT_TRUE(m.error.empty());
  EXPECT_FALSE(m.busy());
  ASSERT_TRUE(m.stoppedKey.has_value());  // not started again by itself
}

TEST(ModelViewJob, AReplacedJobsOutcomeIsDropped) {
  ModelViewState m;
  auto old = std::make_shared<ModelViewJob>();
  auto current = std::make_shared<ModelViewJob>();
  m.job = current;
  applyModelViewOutcome(m, runModelViewJob(randomProbe(fixture("gpt2")), 0, 1, old, nullptr));
  EXPECT_FALSE(m.result);
  EXPECT_EQ(m.job, current);
}

TEST(ModelViewCompute, RunsWhenATabAndAModelAreOpenKeepsTheResultOnErrors) {
  PipelineSession s;
  ModelViewCompute compute;
  s.state.doc.files.model = fixture("gpt2");
  compute.update(s.state, true);
  EXPECT_FALSE(s.state.modelView) << "nothing runs before the tab is drawn";
  ModelViewState& m = modelViewOf(s.state);
  m.probe = ModelProbe::RepeatedRandom;
  compute.update(s.state, true);
  ASSERT_TRUE(m.result) << m.error;
  EXPECT_EQ(m.resultKey, wantedModelView(s.state, m));
  // gpt2 has 32 positions: n is cut to 16 so 2n fit.
  EXPECT_EQ(m.result->ids.size(), 32u);
  const auto good = m.result;
  // The text probe on a folder without a tokenizer: the error is shown, the grid stays.
  m.probe = ModelProbe::Text;
  compute.update(s.state, true);
  EXPECT_EQ(m.result, good);
  EXPECT_NE(m.error.find("tokenizer"), std::string::npos) << m.error;
  const std::string error = m.error;
  compute.update(s.state, true);  // not retried every frame
  EXPECT_FALSE(m.busy());
  EXPECT_EQ(m.error, error);
  // Back to the shown probe: ready, no stale error.
  m.probe = ModelProbe::RepeatedRandom;
  compute.update(s.state, true);
  EXPECT_TRUE(m.error.empty());
  // A cancelled probe is not rerun by itself; "Run again" (stoppedInputs cleared) runs it.
  m.probeSeed = 5;
  m.stoppedKey = wantedModelView(s.state, m);
  m.stoppedError.clear();
  compute.update(s.state, true);
  EXPECT_EQ(m.result, good);
  EXPECT_TRUE(m.cancelled);
  m.stoppedKey.reset();
  compute.update(s.state, true);
  EXPECT_NE(m.result, good);
  EXPECT_EQ(m.resultKey.probeSeed, 5u);
  EXPECT_FALSE(m.cancelled);
}

// Closing the model (x, back to text + seed) leaves nothing of it on the Model and Predictions
// tabs: they say how to open one instead of showing a closed model's grid.
TEST(ModelViewCompute, ClosingTheModelClearsWhatWasShown) {
  PipelineSession s;
  ModelViewCompute compute;
  s.state.doc.files.model = fixture("gpt2");
  ModelViewState& m = modelViewOf(s.state);
  m.probe = ModelProbe::RepeatedRandom;
  compute.update(s.state, true);
  ASSERT_TRUE(m.result) << m.error;
  const std::uint64_t serial = m.resultSerial;
  closeAllFiles(s.state);
  compute.update(s.state, true);
  EXPECT_FALSE(m.result);
  EXPECT_FALSE(m.atlas);
  EXPECT_FALSE(m.busy());
  EXPECT_NE(m.resultSerial, serial) << "the grid's texture is not reused";
  // Opened again: computed again.
  s.state.doc.files.model = fixture("gpt2");
  compute.update(s.state, true);
  EXPECT_TRUE(m.result) << m.error;
}

TEST(ModelViewRoles, HeadsRankedStrongestFirstInductionNaWhenNoRepeats) {
  model::ModelView v;
  v.layers = 2;
  v.heads = 2;
  v.ids = {1, 2, 3};
  v.labels = {"a", "b", "c"};
  for (int i = 0; i < 4; ++i) {
    model::HeadView hv;
    hv.scores.prevToken = 0.1 * i;
    hv.scores.entropy = 1.0 - 0.2 * i;
    hv.scores.sink = i == 2 ? 0.9 : 0.1;
    hv.scores.inductionQueries = 0;
    v.headViews.push_back(hv);
  }
  const auto prev = headsByRole(v, HeadRole::PreviousToken, 3);
  ASSERT_EQ(prev.size(), 3u);
  EXPECT_EQ(prev[0].layer, 1);
  EXPECT_EQ(prev[0].head, 1);
  EXPECT_EQ(prev[2].layer, 0);
  EXPECT_EQ(prev[2].head, 1);
  EXPECT_FALSE(prev[0].passes);
  EXPECT_EQ(prev[0].verdict, "previous-token 0.30, below 0.50");
  const auto sink = headsByRole(v, HeadRole::Sink, 1);
  ASSERT_EQ(sink.size(), 1u);
  EXPECT_EQ(sink[0].layer, 1);
  EXPECT_EQ(sink[0].head, 0);
  EXPECT_TRUE(sink[0].passes);
  EXPECT_EQ(sink[0].verdict, "first-token 0.90");
  const auto sharp = headsByRole(v, HeadRole::Entropy, 1);  // lowest entropy first
  EXPECT_EQ(sharp[0].layer, 1);
  EXPECT_EQ(sharp[0].head, 1);
  EXPECT_TRUE(headsByRole(v, HeadRole::Induction, 10).empty());
  EXPECT_TRUE(std::isnan(roleValue(v.head(0, 0).scores, HeadRole::Induction)));
}

// The induction list: heads passing the Train mode's rule first (with their prefix matching and
// copying), then the rest by prefix matching with why each fails — a layer-0 head never passes,
// however high its prefix matching; with none passing, the list says so.
TEST(ModelViewRoles, InductionHeadsPassingTheRuleFirstThenWhyTheOthersFail) {
  model::ModelView v;
  v.layers = 2;
  v.heads = 2;
  const double matching[] = {0.9, 0.2, 0.6, 0.7};
  const std::optional<double> copying[] = {0.95, std::nullopt, 0.8, 0.1};
  for (int i = 0; i < 4; ++i) {
    model::HeadView hv;
    hv.scores.induction = matching[i];
    hv.scores.inductionQueries = 12;
    hv.scores.copying = copying[i];
    v.headViews.push_back(hv);
  }
  const auto ranked = headsByRole(v, HeadRole::Induction, 10);
  ASSERT_EQ(ranked.size(), 4u);
  EXPECT_TRUE(ranked[0].passes);
  EXPECT_EQ(ranked[0].layer * 2 + ranked[0].head, 2);
  EXPECT_EQ(ranked[0].verdict, "induction 0.60 copying 0.80");
  EXPECT_EQ(ranked[1].layer * 2 + ranked[1].head, 0);
  EXPECT_FALSE(ranked[1].passes) << "layer 0: however high its prefix matching";
  EXPECT_EQ(ranked[1].verdict,
            "prefix matching 0.90, copying 0.95; layer 0: no earlier head to compose with — it cannot be an induction head");
  EXPECT_EQ(ranked[2].verdict, "prefix matching 0.70, not copying (0.10)");
  EXPECT_EQ(ranked[3].verdict, "prefix matching 0.20; layer 0: no earlier head to compose with — it cannot be an induction head");
  v.headViews[2].scores.copying = 0.3;
  const auto none = headsByRole(v, HeadRole::Induction, 10);
  EXPECT_FALSE(none[0].passes);
  EXPECT_EQ(noHeadPassesText(HeadRole::Induction),
            "No head passes the induction rule (prefix matching ≥ 0.50 and copying ≥ 0.50, in layer 1 or later)");
  EXPECT_FALSE(roleHasRule(HeadRole::Entropy));
}

TEST(ModelViewPick, AClickedHeadOpensItsLayerInThePipeline) {
  PipelineSession s;
  s.state.doc.files.model = fixture("gpt2");
  s.state.doc.files.layer = 0;
  openHeadInPipeline(s.state, s.view, 1, 3);
  EXPECT_EQ(s.state.doc.files.model, fixture("gpt2"));
  ASSERT_TRUE(s.state.doc.files.layer.has_value());
  EXPECT_EQ(*s.state.doc.files.layer, 1);
  EXPECT_EQ(s.view.head, 3);
  EXPECT_EQ(s.view.stage, StageId::Weights);
  EXPECT_EQ(s.view.selectTab, kHeatmapTab);
  EXPECT_TRUE(s.state.doc.configDirty);
  ASSERT_TRUE(s.state.doc.beforeOpen.has_value());
  EXPECT_EQ(*s.state.doc.beforeOpen->files.layer, 0);  // what a refused layer goes back to
}

// The tab drawn with a result in a headless ImGui frame (no window, no GL: the stub texture).
TEST(ModelViewPanel, DrawsTheGridAndRecordsEveryCell) {
  HeadlessImGui imgui(ImVec2(1400, 900));
  ImGuiIO& io = ImGui::GetIO();
  {
    PipelineSession s;
    TextureCache textures;
    UiProbes probes;
    ModelViewCompute compute;
    s.state.doc.files.model = fixture("llama_gqa");
    modelViewOf(s.state).probe = ModelProbe::RepeatedRandom;
    compute.update(s.state, true);
    for (int frame = 0; frame < 2; ++frame) {
      ImGui::NewFrame();
      probes.clear();
      UiContext ctx = uiContext(s, textures, probes);
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(io.DisplaySize);
      ImGui::Begin("model tab", nullptr, ImGuiWindowFlags_NoDecoration);
      drawModelPanel(ctx);
      ImGui::End();
      ImGui::Render();
      textures.endFrame();
    }
    EXPECT_EQ(probes.labels().at("model_status"), "ready");
    for (int l = 0; l < 2; ++l)
      for (int hh = 0; hh < 4; ++hh) EXPECT_TRUE(probes.find("model_cell_" + std::to_string(l) + "_" + std::to_string(hh)));
    EXPECT_FALSE(probes.labels().at("model_ranked").empty());
    EXPECT_EQ(probes.labels().count("model_open_error"), 0u) << "no refused open: nothing said";
    // A refused open (put back by the pipeline's compute) is said in the tab too, in the window's wording.
    s.state.actionError = "mhascope: error: cannot open 'x': the text has 99 tokens";
    ImGui::NewFrame();
    probes.clear();
    UiContext ctx = uiContext(s, textures, probes);
    ImGui::Begin("model tab", nullptr, ImGuiWindowFlags_NoDecoration);
    drawModelPanel(ctx);
    ImGui::End();
    ImGui::Render();
    textures.endFrame();
    EXPECT_EQ(probes.labels().at("model_open_error"), "cannot open 'x': the text has 99 tokens");
    EXPECT_EQ(probes.labels().at("model_tokens_drawn"), std::to_string(modelViewOf(s.state).result->ids.size()));
    // A long text: the Tokens box draws its first 300 tokens each frame, the rest are counted.
    auto longer = std::make_shared<model::ModelView>(*modelViewOf(s.state).result);
    while (longer->ids.size() < 1000) {
      longer->ids.push_back(longer->ids.back());
      longer->labels.push_back(longer->labels.back());
      longer->predictions.push_back(longer->predictions.back());
    }
    modelViewOf(s.state).result = longer;
    ImGui::NewFrame();
    probes.clear();
    UiContext again = uiContext(s, textures, probes);
    ImGui::Begin("model tab", nullptr, ImGuiWindowFlags_NoDecoration);
    drawModelPanel(again);
    ImGui::End();
    ImGui::Render();
    textures.endFrame();
    EXPECT_EQ(probes.labels().at("model_tokens_drawn"), "300");
  }
}

// File → Open of another model: the running job of the model in use goes on until the pipeline
// accepts the open (a refusal puts the model in use back, whose job would otherwise restart).
TEST(ModelViewCompute, TheRunningJobIsCancelledOnlyOnceTheOpenIsAccepted) {
  PipelineSession s;
  ModelViewCompute compute;
  s.state.doc.files.model = fixture("gpt2");
  ModelViewState& m = modelViewOf(s.state);
  m.probe = ModelProbe::RepeatedRandom;
  auto running = std::make_shared<ModelViewJob>();  // as if the worker were on it
  m.job = running;
  m.jobKey = wantedModelView(s.state, m);
  Document& d = s.state.doc;
  d.beforeOpen = Document::BeforeOpen{d.config, d.files, d.trainedLayer, d.presetName, "cannot open 'llama_gqa'"};
  d.files.model = fixture("llama_gqa");
  compute.update(s.state, true);
  EXPECT_EQ(m.job, running);
  EXPECT_FALSE(running->cancel.load()) << "cancelled before the open was accepted";
  d.beforeOpen.reset();  // accepted
  compute.update(s.state, true);
  EXPECT_TRUE(running->cancel.load());
  ASSERT_TRUE(m.result) << m.error;
  EXPECT_EQ(m.resultKey.folder, fixture("llama_gqa"));
}

}  // namespace
}  // namespace mhascope::app
