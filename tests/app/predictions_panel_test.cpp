// The Predictions tab drawn in-process (no window, no GL: stub_texture.cpp) from a hand-made model
// view: the one line without a model, the lens and the list with one, the words under a lens
// cell, a click on the lens picking a position, and a long text drawing only what is on screen.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "model/model_view.hpp"
#include "panels/panel.hpp"
#include "panels/predictions_panel.hpp"
#include "state/model_view_state.hpp"
#include "state/pipeline_session.hpp"
#include "headless_imgui.hpp"
#include "state/ui_context.hpp"
#include "widgets/lens_export.hpp"

namespace mhascope::app {
namespace {

// The window's state and a headless ImGui context (headless_imgui.hpp).
class Ui {
 public:
  explicit Ui(ImVec2 size) : imgui_(size) {}

 private:
  HeadlessImGui imgui_;  // first: the context outlives everything below

 public:
  PipelineSession pipeline;
  TextureCache textures;
  UiProbes probes;

  // One frame of the tab alone in a full-size window; the vertices its window drew.
  int frame() {
    ImGui::NewFrame();
    probes.clear();
    UiContext ctx = uiContext(pipeline, textures, probes);
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("tab under test", nullptr, ImGuiWindowFlags_NoDecoration);
    drawPredictionsPanel(ctx);
    ImGui::End();
    ImGui::Render();
    textures.endFrame();
    return ImGui::GetDrawData()->TotalVtxCount;
  }
  std::string label(const std::string& name) const {
    const auto it = probes.labels().find(name);
    return it == probes.labels().end() ? "" : it->second;
  }

};

// T positions, L layers, top 5: position t's tokens and probabilities made from t so each cell
// says which it is. Layer l's top-1 at t is token 100 + l, p = 0.1 (l + 1); the model's final top-1
// is token 100 + L - 1, to which layer l gives 0.05 (l + 1).
std::shared_ptr<const model::ModelView> madeView(int T, int L) {
  auto v = std::make_shared<model::ModelView>();
  v->layers = L;
  v->heads = 1;
  for (int t = 0; t < T; ++t) {
    v->ids.push_back(t);
    v->labels.push_back(t % 2 ? "␣cat" : "the");
    std::vector<model::Candidate> top;
    for (int i = 0; i < 5; ++i) top.push_back({200 + i, 10.0f - static_cast<float>(i), 0.5 / (i + 1)});
    v->predictions.push_back(top);
  }
  v->lens.layers = L;
  v->lens.positions = T;
  v->lens.finalTop.assign(static_cast<std::size_t>(T), 100 + L - 1);
  for (int l = 0; l < L; ++l) {
    for (int t = 0; t < T; ++t) {
      model::LensCell c;
      c.top = {100 + l, 1.0f, 0.1 * (l + 1)};
      c.finalTopProbability = 0.05 * (l + 1);
      v->lens.cells.push_back(c);
    }
  }
  return v;
}

ModelViewState& modelView(Ui& ui) {
  if (!ui.pipeline.state.modelView) ui.pipeline.state.modelView = std::make_shared<ModelViewState>();
  return *ui.pipeline.state.modelView;
}

TEST(PredictionsPanel, IsOneMainTabOfTheList) {
  const PanelInfo* p = findPanel(PanelArea::Main, kPredictionsTab);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(std::string(p->id), "predictions");  // its --view name
  EXPECT_EQ(p->draw, &drawPredictionsPanel);
}

TEST(PredictionsPanel, WithoutAModelSaysHowToOpenOne) {
  Ui ui(ImVec2(1600, 1000));
  EXPECT_GT(ui.frame(), 0);
  EXPECT_EQ(ui.label("predictions_state"), "no model");
  // Drawing makes no state: the update step makes the model view's on the tab's first frame.
  EXPECT_EQ(ui.pipeline.state.modelView, nullptr);
  modelViewOf(ui.pipeline.state);
  EXPECT_GT(ui.frame(), 0);
  EXPECT_EQ(ui.label("predictions_state"), "no model");
}

TEST(PredictionsPanel, DrawsTheLensAndTheListAndTogglesTheColour) {
  Ui ui(ImVec2(1600, 1000));
  modelView(ui).result = madeView(6, 3);
  for (int f = 0; f < 2; ++f) EXPECT_GT(ui.frame(), 0);
  EXPECT_EQ(ui.label("predictions_state"), "shown");
  EXPECT_EQ(ui.label("lens_colour"), "own");
  EXPECT_EQ(ui.label("lens_axis"), "position →") << "not 'T', which a token may be";
  EXPECT_NE(ui.probes.find("lens_cells"), nullptr);
  EXPECT_NE(ui.probes.find("prediction_row_0"), nullptr);
  modelView(ui).predictions.colourByFinal = true;
  ui.frame();
  EXPECT_EQ(ui.label("lens_colour"), "final");
}

TEST(PredictionsPanel, LensCellWordsNameBothTopOnesAndTheirProbabilities) {
  const auto v = madeView(6, 3);
  EXPECT_EQ(lensCellText(*v, 1, 3),
            "layer 1 · position 3 '␣cat'\n"
            "top-1 here: '#101' (id 101), p = 0.200\n"
            "the model's final top-1: '#102' (id 102), p here = 0.100, at the last layer = 0.150");
  EXPECT_EQ(lensCellText(*v, 2, 0).rfind("layer 2 (the model's output) · position 0 'the'\n", 0), 0u);
  EXPECT_EQ(lensCellText(*v, 3, 0), "");   // no layer 3
  EXPECT_EQ(lensCellText(*v, 0, 6), "");   // no position 6
  EXPECT_EQ(lensCellText(*v, -1, 0), "");
}

// With the texts the window's job fills from the tokenizer (model::nameTokens), the words name
// the tokens: every id the predictions and the lens hold, and no other.
TEST(PredictionsPanel, NamedTokensAreShownByTheirText) {
  auto v = std::make_shared<model::ModelView>(*madeView(6, 3));
  model::nameTokens(*v, [](int id) { return "tok" + std::to_string(id); });
  EXPECT_EQ(v->tokenTexts.size(), 8u);  // 200 … 204 predicted, 100 … 102 in the lens
  EXPECT_EQ(v->tokenTexts.count(0), 0u);  // an input id nothing predicts
  EXPECT_EQ(lensCellText(*v, 0, 1),
            "layer 0 · position 1 '␣cat'\n"
            "top-1 here: 'tok100' (id 100), p = 0.100\n"
            "the model's final top-1: 'tok102' (id 102), p here = 0.050, at the last layer = 0.150");
}

// The lens as a picture: one (L, T) slice of the shown probabilities with the layers and tokens as
// labels, written once; a second export to the same path is refused and leaves the file as it was.
TEST(PredictionsPanel, TheLensExportsAsAPictureAndNeverReplacesAFile) {
  const auto v = madeView(6, 3);
  const Slice2D own = lensSlice(*v, false), fin = lensSlice(*v, true);
  ASSERT_EQ(own.rows, 3);
  ASSERT_EQ(own.cols, 6);
  EXPECT_FLOAT_EQ(own.data[1 * 6 + 4], 0.2f);   // layer 1's own top-1: 0.1 (l + 1)
  EXPECT_FLOAT_EQ(fin.data[1 * 6 + 4], 0.1f);   // what layer 1 gives the final top-1: 0.05 (l + 1)
  EXPECT_EQ(own.rowLabels.back(), "layer 2 (out)");
  EXPECT_EQ(own.colLabels[1], "␣cat");
  const std::string dir = ::testing::TempDir() + "mhascope_lens_export";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Through the Export… form's path: the picture filed as a request, written by the update step.
  ExportUi ui;
  Requests requests;
  const auto exportTo = [&](const std::string& path, bool byFinal) {
    const bool existed = std::filesystem::exists(path);
    fileExport(requests, ui, path, lensPicture(*v, byFinal, ColormapId::Viridis, "fixture · T = 6"));
    EXPECT_EQ(std::filesystem::exists(path), existed) << "written when filed, not when performed: " << path;
    requests.performAll();
    EXPECT_TRUE(requests.empty());
  };
  for (const char* ext : {".png", ".svg", ".pdf"}) {
    const std::string path = dir + "/lens" + ext;
    exportTo(path, false);
    ASSERT_FALSE(ui.messageIsError) << ui.message;
    EXPECT_EQ(ui.message, "Saved " + path);
    const auto size = std::filesystem::file_size(path);
    EXPECT_GT(size, 100u) << path;
    exportTo(path, true);
    ASSERT_TRUE(ui.messageIsError);
    EXPECT_NE(ui.message.find("the file exists"), std::string::npos) << ui.message;
    EXPECT_EQ(std::filesystem::file_size(path), size);
  }
  exportTo(dir + "/no/such/folder/lens.png", false);
  EXPECT_TRUE(ui.messageIsError);
  EXPECT_NE(ui.message.find("no/such/folder/lens.png"), std::string::npos) << ui.message;
  // An empty lens is said, and nothing is written.
  model::ModelView empty;
  fileExport(requests, ui, dir + "/empty.png", lensPicture(empty, false, ColormapId::Viridis, ""));
  requests.performAll();
  EXPECT_TRUE(ui.messageIsError);
  EXPECT_NE(ui.message.find("the lens is empty"), std::string::npos) << ui.message;
  EXPECT_FALSE(std::filesystem::exists(dir + "/empty.png"));
  std::filesystem::remove_all(dir);
}

// A click on a lens cell picks its position for the list (and brings its row into view).
TEST(PredictionsPanel, ClickingALensCellPicksItsPosition) {
  Ui ui(ImVec2(1600, 1000));
  modelView(ui).result = madeView(6, 3);
  ui.frame();
  const ItemRect* cell = ui.probes.find("lens_cell_0_1");
  ASSERT_NE(cell, nullptr);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2((cell->min.x + cell->max.x) / 2, (cell->min.y + cell->max.y) / 2);
  ui.frame();  // hover
  EXPECT_EQ(modelView(ui).predictions.lensHover, 1);
  io.MouseDown[0] = true;
  ui.frame();
  io.MouseDown[0] = false;
  ui.frame();
  EXPECT_EQ(modelView(ui).predictions.selected, 1);
  EXPECT_EQ(ui.label("predictions_selected"), "1");
}

// Thousands of tokens: only the cells and rows on screen are drawn, so the frame's size does not
// grow with T. A picked position past the end of a new, shorter result is dropped.
TEST(PredictionsPanel, LongTextsDrawOnlyWhatIsOnScreen) {
  Ui ui(ImVec2(1600, 1000));
  modelView(ui).result = madeView(200, 12);
  ui.frame();
  const int shortFrame = ui.frame();
  modelView(ui).result = madeView(4000, 12);
  ui.frame();
  const int longFrame = ui.frame();
  EXPECT_LT(longFrame, shortFrame * 11 / 10 + 2000) << "short " << shortFrame << ", long " << longFrame;
  modelView(ui).predictions.lensCellEm = kLensCellMinEm;  // 0.5 em columns: many more in view, still bounded
  ui.frame();
  EXPECT_LT(ui.frame(), 400000);
  modelView(ui).predictions.selected = 3999;
  modelView(ui).result = madeView(6, 3);
  ui.frame();
  EXPECT_EQ(modelView(ui).predictions.selected, -1);
}

}  // namespace
}  // namespace mhascope::app
