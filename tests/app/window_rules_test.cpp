// The window's rules that need no window: text wrapped at spaces only (numbers never cut in two),
// the preset file a configuration was read from, the zoom fitted to a new trace shape, and a
// workspace never saved over the preset file in use.
#include <gtest/gtest.h>
#include <imgui.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "state/app_state.hpp"
#include "state/lesson_view.hpp"
#include "state/pipeline_session.hpp"
#include "state/workspace_state.hpp"
#include "shell/compute_scheduler.hpp"
#include "widgets/wrapped_text.hpp"
#include "io/presets.hpp"

namespace mhascope::app {
namespace {

class FontContext {  // CalcTextSize needs a context with a built font atlas
 public:
  FontContext() {
    context_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(800, 600);
    io.Fonts->AddFontDefault();
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    ImGui::NewFrame();  // sets the current font
  }
  ~FontContext() {
    ImGui::EndFrame();
    ImGui::DestroyContext(context_);
  }
  FontContext(const FontContext&) = delete;
  FontContext& operator=(const FontContext&) = delete;

 private:
  ImGuiContext* context_ = nullptr;
};

TEST(WrapAtSpaces, NeverCutsANumberAndKeepsEveryLineInside) {
  FontContext ui;
  const std::string text = "the weight of key 3 is (0.28), of key 4 (0.71); the rest 0.01, 0.005 and 1e-3.";
  for (float width = 40; width <= 400; width += 7) {
    const std::string wrapped = wrapAtSpaces(text, width);
    std::istringstream lines(wrapped);
    std::string rejoined;
    for (std::string line; std::getline(lines, line);) {
      const bool oneWord = line.find(' ') == std::string::npos;
      EXPECT_TRUE(oneWord || ImGui::CalcTextSize(line.c_str()).x <= width) << "width " << width << ": '" << line << "'";
      rejoined += (rejoined.empty() ? "" : " ") + line;
    }
    // Only spaces became line breaks: "(0." never ends a line with "28)" on the next.
    EXPECT_EQ(rejoined, text) << "width " << width << ":\n" << wrapped;
  }
  EXPECT_EQ(wrapAtSpaces("a\nb c", 1000), "a\nb c");  // line breaks of the text stay
}

// The token chips are made once per edit of the text or T, from the first sentence, cut or
// extended to T, at most kShownChips of them.
TEST(TokenChips, MadeFromTheFirstSentenceOncePerEdit) {
  TokenChips c;
  refreshTokenChips(c, "the cat sat | a dog", 0);
  EXPECT_EQ(c.items, 2u);
  EXPECT_EQ(c.count, 3u);
  EXPECT_EQ(c.shown, (std::vector<std::string>{"the", "cat", "sat"}));
  c.shown.push_back("marker");  // the same text and T: nothing is remade
  refreshTokenChips(c, "the cat sat | a dog", 0);
  EXPECT_EQ(c.shown.size(), 4u);
  refreshTokenChips(c, "the cat sat | a dog", 2);  // T = 2 cuts
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.shown, (std::vector<std::string>{"the", "cat"}));
  refreshTokenChips(c, "the cat sat", 100);  // T = 100 extends; only the first chips are made
  EXPECT_EQ(c.count, 100u);
  ASSERT_EQ(c.shown.size(), kShownChips);
  EXPECT_EQ(c.shown[1], "cat");
  refreshTokenChips(c, "  |  ", 0);
  EXPECT_EQ(c.items, 0u);
  EXPECT_TRUE(c.shown.empty());
}

TEST(PresetFile, NamesThePresetsFileOrNothing) {
  const std::string bundled = presetFileOf("cat");
  ASSERT_FALSE(bundled.empty());
  EXPECT_EQ(std::filesystem::path(bundled).filename(), "cat.json");
  EXPECT_EQ(presetFileOf("cat (edited)"), bundled);
  EXPECT_EQ(presetFileOf("cat (command line)"), bundled);
  EXPECT_EQ(presetFileOf("no such preset"), "");
  EXPECT_EQ(presetFileOf(bundled), bundled);
  EXPECT_EQ(presetFileOf("/nonexistent/x.json"), "");
}

TEST(SaveWorkspace, RefusesThePresetFileItReadAndWritesElsewhere) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mhascope_window_rules_test";
  std::filesystem::create_directories(dir);
  const std::string preset = (dir / "mine.json").string();
  std::filesystem::copy_file(presetFileOf("cat"), preset, std::filesystem::copy_options::overwrite_existing);
  std::ifstream in(preset);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  PipelineSession pipeline;
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  state.doc.config = *loadPreset(preset);
  state.doc.presetName = "mine.json (edited)";  // as the window names an opened file, then an edit
  notePresetRead(state, preset);
  auto st = saveWorkspace(state, view, lessons, preset);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("is the preset file '" + preset + "'"), std::string::npos) << st.error().message;
  std::ifstream again(preset);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>()), before);
  EXPECT_TRUE(saveWorkspace(state, view, lessons, (dir / "other.json").string()).ok());
  std::filesystem::remove_all(dir);
}

TEST(ZoomFit, ANewShapeFitsBothViewsTheSameShapeKeepsThem) {
  PipelineSession pipeline;
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  ComputeScheduler scheduler;
  state.doc.config = *loadPreset("default");
  auto compute = [&] {
    state.doc.configDirty = true;
    scheduler.update(state, view, lessons, "heatmap", /*forceSync=*/true);
    ASSERT_TRUE(state.shown.hasTrace());
    fitZoomToNewShape(state, view);
  };
  compute();
  view.zoom = {14.55f, 3.0f, 2.0f};
  view.weightZoom = {2.0f, 1.0f, 1.0f};
  state.doc.config.seed += 1;  // same shape
  compute();
  EXPECT_FLOAT_EQ(view.zoom.zoom, 14.55f);
  state.doc.config.tokens = state.shown.trace.tq + 3;  // T changes
  compute();
  EXPECT_FLOAT_EQ(view.zoom.zoom, 1.0f);
  EXPECT_FLOAT_EQ(view.zoom.panX, 0.0f);
  EXPECT_FLOAT_EQ(view.weightZoom.zoom, 1.0f);
  // a workspace's zoom belongs to the trace computed after it was applied, whatever its shape
  view.zoom = {3.0f, 0.0f, 0.0f};
  view.zoomAdoptAfterSerial = state.shown.traceSerial;
  fitZoomToNewShape(state, view);  // the old trace is still shown: nothing happens
  state.doc.config.tokens += 5;
  compute();
  EXPECT_FLOAT_EQ(view.zoom.zoom, 3.0f);
}

// A workspace keeps the view's WorkspaceView part as it is: saved and opened again, every field
// comes back, and what a launch option gave (stage, head, tab) stays.
TEST(WorkspaceViewRoundTrip, EverySavedFieldComesBackAndLaunchOptionsWin) {
  PipelineSession saved;
  saved.state.doc.config = *loadPreset("default");
  ViewState& v = saved.view;
  v.stage = StageId::Output;
  v.batch = 1;
  v.head = 3;
  v.tab = "grid";  // the All heads tab, by its id
  v.zoom = {4.0f, 2.5f, 1.5f};
  v.weightZoom = {2.0f, 0.5f, 3.0f};
  v.colormap = ColormapId::Magma;
  v.sharedScale = false;
  v.showNumbers = false;
  v.colorScale = ColorScale::Log;
  v.weight = WeightId::Wo;
  v.playStagesPerSecond = 2.5f;
  const Workspace ws = workspaceFromWindow(saved.state, saved.view, saved.lessons);

  PipelineSession opened;
  opened.view.tab = "heatmap";  // drawn last frame
  applyWorkspace(ws, {}, opened.state, opened.view, opened.lessons);
  EXPECT_EQ(opened.view.stage, StageId::Output);
  EXPECT_EQ(opened.view.batch, 1);
  EXPECT_EQ(opened.view.head, 3);
  EXPECT_EQ(opened.view.selectTab, "grid") << "the saved tab is asked for";
  EXPECT_EQ(opened.view.tab, "heatmap") << "the tab drawn last stays until the layout draws";
  EXPECT_FLOAT_EQ(opened.view.zoom.zoom, 4.0f);
  EXPECT_FLOAT_EQ(opened.view.zoom.panX, 2.5f);
  EXPECT_FLOAT_EQ(opened.view.zoom.panY, 1.5f);
  EXPECT_FLOAT_EQ(opened.view.weightZoom.zoom, 2.0f);
  EXPECT_FLOAT_EQ(opened.view.weightZoom.panY, 3.0f);
  EXPECT_EQ(opened.view.colormap, ColormapId::Magma);
  EXPECT_FALSE(opened.view.sharedScale);
  EXPECT_FALSE(opened.view.showNumbers);
  EXPECT_EQ(opened.view.colorScale, ColorScale::Log);
  EXPECT_EQ(opened.view.weight, WeightId::Wo);
  EXPECT_FLOAT_EQ(opened.view.playStagesPerSecond, 2.5f);
  EXPECT_EQ(opened.state.doc.config.text, saved.state.doc.config.text);

  PipelineSession launched;  // --stage, --head and --view given
  launched.view.stage = StageId::Query;
  launched.view.head = 1;
  applyWorkspace(ws, {}, launched.state, launched.view, launched.lessons, {false, true, true, true});
  EXPECT_EQ(launched.view.stage, StageId::Query);
  EXPECT_EQ(launched.view.head, 1);
  EXPECT_TRUE(launched.view.selectTab.empty());
  EXPECT_FLOAT_EQ(launched.view.zoom.zoom, 4.0f) << "what no option gave comes from the workspace";

  // Files written before tabs had ids name the tab by its title; a name no tab has opens none.
  Workspace old = ws;
  old.view.tab = "All heads";
  PipelineSession fromOld;
  applyWorkspace(old, {}, fromOld.state, fromOld.view, fromOld.lessons);
  EXPECT_EQ(fromOld.view.selectTab, "grid");
  old.view.tab = "KV cache";
  applyWorkspace(old, {}, fromOld.state, fromOld.view, fromOld.lessons);
  EXPECT_EQ(fromOld.view.selectTab, "kv_cache");
  old.view.tab = "No such tab";
  PipelineSession unknown;
  applyWorkspace(old, {}, unknown.state, unknown.view, unknown.lessons);
  EXPECT_TRUE(unknown.view.selectTab.empty());
}

}  // namespace
}  // namespace mhascope::app
