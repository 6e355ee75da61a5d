// In-process panel tests: every panel, and the whole layout, drawn for several configurations
// in a Dear ImGui context with no window and no GL (render/texture.hpp is stub_texture.cpp) —
// the idea of polyscope's mock backend. A panel that asserts (IM_ASSERT aborts: app/
// imgui_user_config.hpp), throws, or draws nothing fails here, without Xvfb.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <set>
#include <fstream>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "panels/compare_panel.hpp"
#include "panels/layout.hpp"
#include "panels/panel.hpp"
#include "shell/compute_scheduler.hpp"
#include "shell/launch_options.hpp"  // kMainTabIds
#include "state/app_state.hpp"
#include "state/compare_state.hpp"
#include "state/lesson_view.hpp"
#include "state/pipeline_session.hpp"
#include "state/workspace_state.hpp"
#include "headless_imgui.hpp"
#include "state/ui_context.hpp"
#include "train_lab/lab_state.hpp"
#include "widgets/labels.hpp"
#include "widgets/text_field.hpp"
#include "io/npy.hpp"
#include "model_folder_copy.hpp"  // modelFolderCopy, modelFolderCopyBytes
#include "io/presets.hpp"

namespace mhascope::app {
namespace {

bool isLessonTab(const PanelInfo& p) {
  bool lesson = false;
  AllLessons::forEach([&](auto l) { lesson = lesson || std::string(p.id) == decltype(l)::kId; });
  return lesson;
}

// The window's state and a headless ImGui context (headless_imgui.hpp).
class HeadlessUi {
 public:
  explicit HeadlessUi(ImVec2 size) : imgui_(size) {}

 private:
  HeadlessImGui imgui_;  // first: the context outlives everything below

 public:
  PipelineSession pipeline;  // what the window holds; the names below are the window's too
  AppState& state = pipeline.state;
  ViewState& view = pipeline.view;
  LessonView& lessons = pipeline.lessons;
  TextureCache textures;
  UiProbes probes;
  ComputeScheduler scheduler;
  TrainLab train;  // the Train mode's panels draw it (idle: the mode as it opens)

  // What the app does before a frame: the scheduler computes what `tab` shows.
  void update(const std::string& tab) { scheduler.update(state, view, lessons, tab, /*forceSync=*/true); }

  // One frame drawing `draw`; returns the vertices it added.
  int frame(const std::function<void(UiContext&)>& draw) {
    ImGui::NewFrame();
    probes.clear();
    UiContext ctx = uiContext(pipeline, textures, probes);
    ctx.train = &train;
    draw(ctx);
    ImGui::Render();
    textures.endFrame();
    return ImGui::GetDrawData()->TotalVtxCount;
  }

  // One panel alone in a window; returns the vertices that window's draw list holds.
  int drawPanel(const PanelInfo& p) {
    update(p.id);
    int vertices = 0;
    frame([&](UiContext& ctx) {
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
      ImGui::Begin("panel under test", nullptr, ImGuiWindowFlags_NoDecoration);
      ImGui::PushID(p.id);
      p.draw(ctx);
      ImGui::PopID();
      vertices = ImGui::GetWindowDrawList()->VtxBuffer.Size;
      ImGui::End();
    });
    return vertices;
  }

};

struct Case {
  const char* name;
  std::function<void(ModelConfig&)> edit;
  bool valid = true;
};

ModelConfig preset(const std::string& name) {
  auto p = loadPreset(name);
  if (!p) ADD_FAILURE() << p.error().message;
  return p ? p.value() : ModelConfig{};
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"default", [](ModelConfig&) {}},
      {"cat", [](ModelConfig& c) { c = preset("cat"); }},
      {"deep", [](ModelConfig& c) { c = preset("deep"); }},
      {"interview", [](ModelConfig& c) { c = preset("interview"); }},
      {"paper", [](ModelConfig& c) { c = preset("paper"); }},
      {"specialists", [](ModelConfig& c) { c = preset("specialists"); }},
      {"causal", [](ModelConfig& c) { c.mask = MaskKind::Causal; }},
      {"h1", [](ModelConfig& c) { c.heads = 1; }},
      {"T1", [](ModelConfig& c) { c.tokens = 1; }},
      {"batch2_pad", [](ModelConfig& c) { c.text = "the cat sat | a dog ran far away"; c.padLastKeys = 1; }},
      {"cross", [](ModelConfig& c) { c.crossAttention = true; c.kvText = "one two three four five"; }},
      {"invalid", [](ModelConfig& c) { c.dModel = 10; c.heads = 4; }, false},
      {"gqa_rope", [](ModelConfig& c) { c = preset("gqa_rope"); }},
      {"mqa_alibi_window", [](ModelConfig& c) {
         c.kvHeads = 1;
         c.attnPositions = AttnPositions::Alibi;
         c.mask = MaskKind::Causal;
         c.window = 2;
         c.sinks = 1;
       }},
      {"kv_heads_not_dividing", [](ModelConfig& c) { c.kvHeads = 3; }, false},
  };
  return kCases;
}

class PanelsTest : public ::testing::TestWithParam<int> {};

TEST_P(PanelsTest, EveryPanelDrawsWithoutAssertingAndProducesDrawCommands) {
  const Case& c = cases()[static_cast<std::size_t>(GetParam())];
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  c.edit(ui.state.doc.config);
  ui.state.doc.configDirty = true;
  ui.update("");
  ASSERT_EQ(ui.state.shown.hasTrace(), c.valid) << c.name << ": " << ui.state.doc.configError;
  ASSERT_EQ(ui.state.doc.configError.empty(), c.valid);
  for (const PanelInfo& p : allPanels()) {
    SCOPED_TRACE(std::string(c.name) + " / " + p.title);
    for (int f = 0; f < 2; ++f) EXPECT_GT(ui.drawPanel(p), 0) << "frame " << f;
  }
}

TEST_P(PanelsTest, WholeLayoutDrawsEveryMainTabWideAndNarrow) {
  const Case& c = cases()[static_cast<std::size_t>(GetParam())];
  for (const ImVec2 size : {ImVec2(1600, 1000), ImVec2(800, 700)}) {
    HeadlessUi ui(size);
    ui.state.doc.config = preset("default");
    c.edit(ui.state.doc.config);
    ui.state.doc.configDirty = true;
    bool wide = false;
    for (const PanelInfo& p : allPanels()) {
      if (p.area != PanelArea::Main && p.area != PanelArea::Right) continue;
      SCOPED_TRACE(std::string(c.name) + " / " + p.title);
      ui.view.selectTab = p.id;
      for (int f = 0; f < 2; ++f) {
        ui.update(ui.view.selectTab.empty() ? ui.view.tab : ui.view.selectTab);
        EXPECT_GT(ui.frame([&](UiContext& ctx) { wide = drawLayout(ctx); }), 0);
      }
      if (p.area == PanelArea::Main || !wide) {
        // The Lessons tab names the lesson it shows as the open tab.
        EXPECT_EQ(ui.view.tab, std::string(p.id) == kLessonsTab ? ui.view.lesson : std::string(p.id));
      }
    }
    EXPECT_EQ(wide, size.x >= 1600);
  }
}

INSTANTIATE_TEST_SUITE_P(Configurations, PanelsTest, ::testing::Range(0, static_cast<int>(cases().size())),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(cases()[static_cast<std::size_t>(param.param)].name);
                         });

// Grouped-query attention with RoPE, ALiBi and a window: every variant stage in the pipeline's
// panels, with the last query head picked (its K/V views show the K/V head it reads: with h = 8
// and N = 2, K/V head 1, and say so), the grid tagging each query head with its K/V head.
TEST(PanelsVariants, EveryVariantStageDrawsAndKvViewsShowTheHeadRead) {
  for (const AttnPositions pos : {AttnPositions::Rope, AttnPositions::Alibi}) {
    HeadlessUi ui(ImVec2(1600, 1000));
    ui.state.doc.config = preset("gqa_rope");
    ui.state.doc.config.attnPositions = pos;
    ui.state.doc.config.window = 3;
    ui.state.doc.config.sinks = 1;
    ui.state.doc.configDirty = true;
    ui.update("");
    ASSERT_TRUE(ui.state.shown.hasTrace()) << ui.state.doc.configError;
    ui.view.head = 7;
    for (int i = 0; i < kStageCount; ++i) {
      const auto stage = static_cast<StageId>(i);
      if (!stageRecorded(ui.state.shown.trace, stage)) continue;
      ui.view.stage = stage;
      for (const PanelInfo& p : allPanels()) {
        if (p.area != PanelArea::Main && p.area != PanelArea::Right && p.area != PanelArea::Top) continue;
        if (isLessonTab(p)) continue;  // the lessons have tests of their own
        SCOPED_TRACE(std::string(stageInfo(stage).name) + " / " + p.title);
        EXPECT_GT(ui.drawPanel(p), 0);
        if (std::string(p.id) == kHeatmapTab) {
          const std::string note = ui.probes.labels().count("kv_head_note") ? ui.probes.labels().at("kv_head_note") : "";
          const bool kv = stage == StageId::KHeads || stage == StageId::VHeads || stage == StageId::KRotated;
          EXPECT_EQ(note, kv ? "query head 7 reads K/V head 1 (query heads 4 … 7 share it)" : "");
        }
        if (std::string(p.id) == kAllHeadsTab && stage == StageId::Weights) {
          EXPECT_EQ(ui.probes.labels().at("grid_kv_tag_5"), "K/V 1");
          EXPECT_EQ(ui.probes.labels().at("grid_kv_tag_0"), "K/V 0");
        }
      }
    }
    // W_k and W_v are d_model x N·d_k = 32 x 8: 2·32² + 2·32·8 (no bias in this preset).
    for (const PanelInfo& p : allPanels()) {
      if (p.area == PanelArea::Status) {
        EXPECT_GT(ui.drawPanel(p), 0);
      }
    }
    EXPECT_EQ(ui.probes.labels().at("status_parameters"), "one attention layer's parameters 2,560 (2·d_model² + 2·d_model·N·d_k)");
  }
}

// The Compare tab shows, on the K/V stages of grouped-query attention, the K/V head the picked query
// head reads, as the Heatmap tab does: h = 8, N = 2, query head 3 reads K/V head 3 / 4 = 0 (not the
// query head clamped to N - 1 = 1).
TEST(PanelsVariants, CompareShowsTheKvHeadTheQueryHeadReads) {
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("gqa_rope");
  ui.state.doc.configDirty = true;
  ui.update("");
  ASSERT_TRUE(ui.state.shown.hasTrace()) << ui.state.doc.configError;
  ASSERT_EQ(ui.state.shown.trace.heads, 8);
  ASSERT_EQ(ui.state.shown.trace.kvHeads, 2);
  CompareState& c = compareOf(ui.state);
  compareWithCopyOfA(c, ui.state);
  c.b.shown.trace = ui.state.shown.trace;  // B computed as A (its worker is not part of this test)
  c.b.shown.traceReplaced();
  ui.view.head = 3;
  const PanelInfo* compare = nullptr;
  for (const PanelInfo& p : allPanels()) {
    if (std::string(p.id) == kCompareTab) compare = &p;
  }
  ASSERT_NE(compare, nullptr);
  for (const StageId stage : {StageId::KHeads, StageId::VHeads}) {
    ui.view.stage = stage;
    ui.view.head = 3;
    EXPECT_GT(ui.drawPanel(*compare), 0);
    EXPECT_EQ(ui.probes.labels().at("compare_heads_shown"), "A head 0, B head 0") << stageInfo(stage).name;
  }
}

// "Open as B" with a file the open path refuses leaves A and no B (B is not left as a copy of A).
// A label draws a character when the font has its glyph and spells it "U+XXXX" otherwise; a character
// above U+FFFF can have no glyph in this ImGui (16-bit characters), so it is always spelled, never drawn
// as the replacement box.
TEST(TokenLabels, CharactersWithoutAGlyphAreSpelledByTheirCodePoint) {
  HeadlessImGui imgui(ImVec2(800, 600));
  ImGui::NewFrame();
  const ImFont* font = ImGui::GetFont();  // ImGui's default font: Latin and Latin-1 only
  EXPECT_EQ(readableToken("caf\xC3\xA9", font), "caf\xC3\xA9");
  EXPECT_EQ(readableToken("\xF0\x9F\x98\x80!", font), "U+1F600!");
  EXPECT_EQ(readableToken("\xF0\x9D\x94\xB8", font), "U+1D538");
  EXPECT_EQ(readableToken("\xE4\xB8\xAD", font), "U+4E2D");
  ImGui::EndFrame();
}

// A text field holding a character above U+FFFF is read-only until the user removes such characters: the
// first is named, and removing them keeps every other byte (ill-formed ones too).
TEST(TextFields, CharactersAboveU16AreFoundAndRemovedAlone) {
  EXPECT_EQ(firstWideCharacter("plain caf\xC3\xA9 \xE4\xB8\xAD"), U'\0');
  EXPECT_EQ(firstWideCharacter("a \xF0\x9F\x98\x80 b \xF0\x9D\x94\xB8"), U'\U0001F600');
  EXPECT_EQ(withoutWideCharacters("a \xF0\x9F\x98\x80 b\xFF \xF0\x9D\x94\xB8!"), "a  b\xFF !");
  EXPECT_EQ(withoutWideCharacters("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(CompareOpen, ARefusedFileLeavesNoSideB) {
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  ui.state.doc.configDirty = true;
  ui.update("");
  const std::string path = ::testing::TempDir() + "mhascope_compare_bad_workspace.json";
  {
    std::ofstream out(path);
    out << R"({"mhascope_workspace": "not a version"})";
  }
  CompareState& c = compareOf(ui.state);
  EXPECT_FALSE(compareWithFile(c, ui.state, path, 0));
  EXPECT_FALSE(c.active());
  EXPECT_FALSE(c.message.empty());
  std::remove(path.c_str());
}

// The recomputing lessons are computed for the open tab's choices, by the scheduler: a new
// choice gives a new result before the next frame, never inside a draw call.
TEST(LessonScheduling, ChoicesChangeResultsThroughTheScheduler) {
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  ui.update("pitfalls");
  ASSERT_TRUE(ui.state.shown.lessons.has<lessons::Pitfalls>(ui.state.shown.traceSerial));
  EXPECT_FALSE(ui.state.shown.lessons.has<lessons::Masks>(ui.state.shown.traceSerial));  // not on screen
  ASSERT_TRUE(ui.state.shown.lessons.of<lessons::Pitfalls>().outcome.value);
  EXPECT_EQ(ui.state.shown.lessons.of<lessons::Pitfalls>().outcome.value->pitfall, Pitfall::ScaleBySqrtDModel);
  ui.lessons.c.of<lessons::Pitfalls>().pitfall = static_cast<int>(Pitfall::SumHeads);
  ui.update("pitfalls");
  EXPECT_EQ(ui.state.shown.lessons.of<lessons::Pitfalls>().outcome.value->pitfall, Pitfall::SumHeads);

  ui.lessons.c.of<lessons::Cell>().head = 2;
  ui.lessons.c.of<lessons::Cell>().query = 99;  // out of range: kept inside the trace, as the tab's slider does
  ui.update("cell");
  ASSERT_TRUE(ui.state.shown.lessons.of<lessons::Cell>().outcome.value);
  EXPECT_EQ(ui.state.shown.lessons.of<lessons::Cell>().outcome.value->head, 2);
  EXPECT_EQ(ui.state.shown.lessons.of<lessons::Cell>().outcome.value->query, ui.state.shown.trace.tq - 1);

  // A new trace: every result is for it (the quick ones at once, the open tab's too).
  const std::uint64_t before = ui.state.shown.traceSerial;
  ui.state.doc.config.seed += 1;
  ui.state.doc.configDirty = true;
  ui.update("pitfalls");
  EXPECT_NE(ui.state.shown.traceSerial, before);
  EXPECT_EQ(ui.state.shown.lessons.of<lessons::Cell>().serial, ui.state.shown.traceSerial);
  EXPECT_TRUE(ui.state.shown.lessons.has<lessons::Pitfalls>(ui.state.shown.traceSerial));
  EXPECT_FALSE(ui.state.shown.quiz.empty());
  ASSERT_TRUE(ui.state.shown.model);
}

// Above the recompute limit the recomputing lessons are not computed (the tab says why).
TEST(LessonScheduling, BigTracesSkipTheRecomputingLessons) {
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  ui.state.doc.config.tokens = 800;  // two stored (h, T, T) tables: 82 MiB (scaled and masked are lazy)
  ui.state.doc.config.heads = 16;
  ui.state.doc.config.dModel = 64;
  ui.update("split");
  ASSERT_TRUE(ui.state.shown.hasTrace()) << ui.state.doc.configError;
  ASSERT_GT(recordedTraceBytes(ui.state.shown.trace), kRecomputeLimitBytes);
  EXPECT_FALSE(ui.state.shown.lessons.has<lessons::Split>(ui.state.shown.traceSerial));
  for (const PanelInfo& p : allPanels()) {
    if (std::string(p.id) == "split") {
      EXPECT_GT(ui.drawPanel(p), 0);
    }
  }
}


// Each lesson of the one list is one Main tab (its id and title from the lesson), and the
// scheduler reruns a Rerun lesson for its own tab only, found by id through the panel list.
TEST(LessonScheduling, EachLessonIsOneTabAndRerunsForItsOwnTabOnly) {
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  AllLessons::forEach([&](auto lesson) {
    using L = decltype(lesson);
    int tabs = 0;
    for (const PanelInfo& p : allPanels()) {
      if (std::string(p.id) != L::kId) continue;
      ++tabs;
      EXPECT_EQ(p.area, PanelArea::Main);
      EXPECT_EQ(std::string(p.title), L::kTitle);
      EXPECT_EQ(findPanel(PanelArea::Main, p.id), &p);
      EXPECT_EQ(mainTabIdOf(p.title), L::kId) << "a title saved by an earlier version finds the tab";
    }
    EXPECT_EQ(tabs, 1) << L::kId;
    if constexpr (L::kCost == LessonCost::Rerun) {
      ui.update(L::kId);
      const std::uint64_t serial = ui.state.shown.traceSerial;
      EXPECT_TRUE(ui.state.shown.lessons.has<L>(serial)) << L::kId;
      int others = 0;
      AllLessons::forEach([&](auto other) {
        using O = decltype(other);
        if constexpr (O::kCost == LessonCost::Rerun && !std::is_same_v<O, L>) {
          others += ui.state.shown.lessons.has<O>(serial) ? 1 : 0;
        }
      });
      EXPECT_EQ(others, 0) << "only " << L::kId << "'s tab is open";
      ui.state.doc.config.seed += 1;  // a new trace: no results yet for the next lesson
      ui.state.doc.configDirty = true;
    }
  });
}

// The lessons are not tabs of the strip: the Lessons tab lists them and shows the chosen one. A
// lesson's id (--view, a script, a saved workspace or an earlier version's last session, by id or by
// title) opens the Lessons tab at that lesson, and the open tab is then that lesson's id, so the
// scheduler, the workspace and the session know it as before; the Lessons tab alone opens at the
// lesson chosen last.
TEST(LessonsTab, ALessonsIdOpensTheLessonsTabAtThatLesson) {
  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  ui.state.doc.configDirty = true;
  auto frames = [&] {
    for (int f = 0; f < 2; ++f) {
      ui.update(ui.view.selectTab.empty() ? ui.view.tab : ui.view.selectTab);
      ui.frame([&](UiContext& ctx) { drawLayout(ctx); });
    }
  };
  ui.view.selectTab = "masks";
  frames();
  EXPECT_EQ(ui.view.tab, "masks");
  EXPECT_EQ(ui.view.lesson, "masks");
  EXPECT_EQ(ui.probes.labels().at("main_tab"), "masks");
  EXPECT_NE(ui.probes.find("tab_lessons"), nullptr) << "the Lessons tab is in the strip";
  EXPECT_EQ(ui.probes.find("tab_masks"), nullptr) << "a lesson is no tab of the strip";
  for (const LessonEntry& e : kLessonEntries) {
    EXPECT_NE(ui.probes.find(std::string("lesson_") + e.id), nullptr) << e.id << " is in the list";
  }
  EXPECT_EQ(ui.probes.labels().at("lesson_learn"), lessons::Masks::kLearn);
  EXPECT_TRUE(ui.state.shown.lessons.has<lessons::Masks>(ui.state.shown.traceSerial)) << "rerun for the lesson shown";

  ui.view.selectTab = kHeatmapTab;
  frames();
  EXPECT_EQ(ui.view.tab, kHeatmapTab);
  ui.view.selectTab = kLessonsTab;
  frames();
  EXPECT_EQ(ui.view.tab, "masks") << "the Lessons tab opens at the lesson chosen last";

  // Saved workspaces: a lesson named by its id, or by its title (files written before tabs had ids).
  for (const auto& [saved, id] : std::vector<std::pair<std::string, std::string>>{
           {"windows", "windows"}, {"GQA / MQA", "gqa"}, {"KV cache", "kv_cache"}, {"quiz", "quiz"}}) {
    Workspace ws;
    ws.config = ui.state.doc.config;
    ws.view.tab = saved;
    applyWorkspace(ws, InputFiles{}, ui.state, ui.view, ui.lessons, WorkspaceKeep{});
    frames();
    EXPECT_EQ(ui.view.tab, id) << saved;
    EXPECT_EQ(ui.view.lesson, id) << saved;
    EXPECT_EQ(ui.probes.labels().at("main_tab"), id) << saved;
  }
}

// Every panel has an id, unique across the window (titles may repeat: the pipeline's Circuits tab
// and the Train mode's Circuits panel), and every main tab's id is a --view name.
TEST(PanelIds, EveryPanelHasAUniqueIdAndTheMainTabsOpenByIt) {
  std::set<std::string> ids;
  for (const PanelInfo& p : allPanels()) {
    ASSERT_NE(p.id, nullptr);
    ASSERT_NE(p.title, nullptr);
    EXPECT_GT(std::strlen(p.id), 0u) << p.title;
    EXPECT_EQ(std::string(p.id).find(' '), std::string::npos) << "ids are script words: " << p.id;
    EXPECT_TRUE(ids.insert(p.id).second) << "two panels have the id " << p.id;
    EXPECT_EQ(findPanel(p.area, p.id), &p);
  }
  // The main tabs in order: kMainTabIds (the --view names), the lessons' ids among them.
  std::vector<std::string> tabs, expected(kMainTabIds.begin(), kMainTabIds.end());
  for (const PanelInfo& p : allPanels()) {
    if (p.area == PanelArea::Main && !isLessonTab(p)) tabs.emplace_back(p.id);
  }
  EXPECT_EQ(tabs, expected) << "a main tab --view cannot open, or a --view name with no tab";
  EXPECT_EQ(mainTabIdOf("All heads"), kAllHeadsTab);
  EXPECT_EQ(mainTabIdOf(kAllHeadsTab), kAllHeadsTab);
  EXPECT_EQ(mainTabIdOf("This stage"), "stage") << "a narrow window's tab";
  EXPECT_EQ(mainTabIdOf("Controls"), "") << "not a tab";
  EXPECT_EQ(mainTabIdOf("nope"), "");
}


// A DeepSeek layer (multi-head latent attention) in the pipeline: its pass is the model's own forward's record, the
// numbers the reference has for that layer; every panel draws it; the lessons that re-run the layer with its W_q, W_k,
// W_v say why they cannot, and the Latent attention lesson (its own weights) runs on the layer's input.
TEST(LatentLayer, ThePipelineShowsTheRecordedPassAndTheRerunLessonsSayWhyNot) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mhascope_latent_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string folder = modelFolderCopy(dir, "deepseek_v3");
  // The reference's first sequence as text through the copy's tokenizer (one byte per id).
  const fs::path ref = fs::path(MHASCOPE_SOURCE_DIR) / "tests/fixtures/models/reference/deepseek_v3";
  auto ids = loadNpy((ref / "s0_tokens.npy").string());
  ASSERT_TRUE(ids) << ids.error().message;
  const std::vector<int> bytes = modelFolderCopyBytes();
  std::string text;
  for (std::int64_t i = 0; i < ids->numel(); ++i) text += static_cast<char>(bytes.at(static_cast<std::size_t>(ids->data[i])));
  auto attn = loadNpy((ref / "s0_attn.npy").string());  // (L, h, T, T)
  ASSERT_TRUE(attn) << attn.error().message;

  HeadlessUi ui(ImVec2(1600, 1000));
  ui.state.doc.config = preset("default");
  ui.state.doc.config.text = text;
  ui.state.doc.files.model = folder;
  ui.state.doc.files.layer = 1;
  ui.state.doc.configDirty = true;
  ui.update(kHeatmapTab);
  ASSERT_TRUE(ui.state.shown.hasTrace()) << ui.state.doc.configError;
  const Trace& t = ui.state.shown.trace;
  const std::int64_t h = attn->shape[1], T = attn->shape[2];
  ASSERT_EQ(t.heads, h);
  ASSERT_EQ(t.tq, T);
  EXPECT_EQ(t.layer, 1);
  float worst = 0.0f;
  for (std::int64_t i = 0; i < h * T * T; ++i) {
    worst = std::max(worst, std::abs(t.cell(StageId::Weights, i) - attn->data[h * T * T + i]));  // layer 1
  }
  EXPECT_LT(worst, 2e-5f) << "the pass is not the reference's layer 1";
  // Values d_v wide (qk_nope 8 + qk_rope 8 for q and k, v_head_dim 12), the rotary key one for every head.
  EXPECT_EQ(t.shapeOf(StageId::HeadOutputs), (Shape{1, h, T, 12}));
  EXPECT_EQ(t.dk, 16);
  EXPECT_EQ(t.latentRank + t.latentRopeDim, 16 + 8) << "what the layer caches per token: r + d_r";
  EXPECT_EQ(ui.state.doc.config.mask, MaskKind::Causal) << "the controls show what the folder decided";

  ASSERT_FALSE(ui.state.shown.rerunRefusal.empty());
  ui.update("pitfalls");
  const auto& pit = ui.state.shown.lessons.of<lessons::Pitfalls>().outcome;
  EXPECT_FALSE(pit.value);
  EXPECT_NE(pit.error.find("layer 1 is multi-head latent attention"), std::string::npos) << pit.error;
  EXPECT_FALSE(ui.state.shown.lessons.of<lessons::Mix>().outcome.value) << "Mix multiplies by W_o";
  ui.update("latent_attention");
  const auto& latent = ui.state.shown.lessons.of<lessons::Latent>().outcome;
  EXPECT_TRUE(latent.value) << latent.error;
  EXPECT_TRUE(ui.state.shown.lessons.of<lessons::Roles>().outcome.value) << "a lesson of the trace alone runs";
  for (const PanelInfo& p : allPanels()) {
    SCOPED_TRACE(p.title);
    for (int f = 0; f < 2; ++f) EXPECT_GT(ui.drawPanel(p), 0) << "frame " << f;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mhascope::app
