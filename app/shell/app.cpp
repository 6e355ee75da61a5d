// [SECTION] index
//   set-up   — window, ImGui context, first configuration, launch options
//   loop     — one frame: events, compute update, ImGui frame, render, screenshot, session;
//              run() with --bench-frames
//   input    — keys ← → Space Home End, Play
// Fonts, imgui.ini, the session file, frame pacing, benchmark statistics, the compute scheduler and
// the script adapter are their own files in shell/ and testing/.
#include "shell/app.hpp"
#include "util/format.hpp"
#include "shell/heap_reserve.hpp"
#include "shell/window_drop.hpp"

#include <imgui.h>
#include <imgui_internal.h>  // ErrorCheckEndFrameRecover: keep ImGui's stack whole after an exception

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "panels/layout.hpp"
#include "util/memory_budget.hpp"
#include "panels/compare_panel.hpp"
#include "panels/panel.hpp"
#include "panels/experiments_panel.hpp"
#include "panels/predictions_panel.hpp"
#include "render/gl_frame.hpp"
#include "render/screenshot.hpp"
#include "render/texture.hpp"
#include "state/compare_state.hpp"
#include "state/experiments_state.hpp"
#include "state/model_view_state.hpp"
#include "state/open_file.hpp"
#include "state/workspace_state.hpp"
#include "testing/script_host.hpp"
#include "circuits/circuits_view.hpp"
#include "train_lab/lab_panels.hpp"
#include "train_lab/lab_state.hpp"
#include "io/presets.hpp"
#include "model/model_folder.hpp"
#include "model_source/model_text.hpp"  // TokenizerCache

namespace mhascope::app {

namespace {
// A window that cannot start on the options given says why as the commands do
// ("mhascope: error: …", names from files escaped) and exits 2.
void startupError(const std::string& message) {
  std::fprintf(stderr, "mhascope: error: %s\n", printableMessage(message).c_str());
}
}  // namespace
namespace {

// Idle: nothing changes without input (the worker and Play poll faster), so wake rarely.
constexpr double kIdleTimeoutSeconds = 10.0;

// Default export folder: ~/Pictures when it exists, else home, else the working folder.
std::string defaultExportFolder() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* home = std::getenv("HOME");
  if (home && fs::is_directory(fs::path(home) / "Pictures", ec)) return (fs::path(home) / "Pictures").string();
  if (home && *home) return home;
  return fs::current_path(ec).string();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] set-up
// ---------------------------------------------------------------------------------------------

App::App(LaunchOptions options) : options_(std::move(options)) {}

App::~App() { shutdown(); }

bool App::initialise() {
  keepHeapPages();
  WindowOptions wo;
  wo.width = options_.width;
  wo.height = options_.height;
  wo.visible = !options_.hidden;
  wo.vsync = options_.benchFrames == 0;
  auto window = Window::create(wo);
  if (!window) {
    std::fprintf(stderr, "mhascope: %s. Without a display, use the headless commands, e.g. "
                         "`mhascope export --help`.\n", window.error().message.c_str());
    loop_.exitCode = 2;
    return false;
  }
  window_ = std::move(window.value());
  if (!initialiseImGui()) return false;
  if (options_.maxTextureSize > 0) textures_.setMaxTextureSize(options_.maxTextureSize);
  fonts_.build(options_.uiScale > 0 ? options_.uiScale : window_->contentScale(),
               options_.maxTextureSize > 0 ? options_.maxTextureSize : Texture::maxSize());
  if (const std::string dir = configDir(); !dir.empty()) ini_.setPath(dir + "/imgui.ini");
  ini_.load();
  pipeline_.view.exportUi.folder = defaultExportFolder();
  if (const std::string dir = configDir(); !dir.empty()) pipeline_.view.openUi.recentFile = dir + "/recent_files.txt";
  loadRecent(pipeline_.view.openUi);

  scheduler_ = std::make_unique<ComputeScheduler>();
  scheduler_->setResultReady([] { Window::postEmptyEvent(); });
  compareCompute_ = std::make_unique<CompareCompute>();
  compareCompute_->setResultReady([] { Window::postEmptyEvent(); });
  modelViewCompute_ = std::make_unique<ModelViewCompute>();
  modelViewCompute_->setResultReady([] { Window::postEmptyEvent(); });
  experimentsCompute_ = std::make_unique<ExperimentsCompute>();
  experimentsCompute_->setResultReady([] { Window::postEmptyEvent(); });
  practiceCompute_ = std::make_unique<PracticeCompute>([] { Window::postEmptyEvent(); });
  // The learner's progress is theirs: --fresh neither reads nor writes it.
  if (const std::string dir = configDir(); !dir.empty() && !options_.fresh) practice_.progressPath = practice::progressPath(dir);
  // One set of model-folder caches for every job that reads a folder: its tokenizer, loaded once,
  // and its residual streams, at most 256 MiB of them (or an eighth of the machine's memory budget
  // when that is less).
  ModelCaches caches;
  caches.tokenizers = std::make_shared<TokenizerCache>();
  caches.residuals = std::make_shared<model::ResidualCache>(std::min<std::uint64_t>(std::uint64_t{256} << 20, defaultMemoryBudget() / 8));
  scheduler_->setCaches(caches);
  compareCompute_->setCaches(caches);
  modelViewCompute_->setCaches(caches);
  experimentsCompute_->setCaches(caches);
  circuitsTab_.modelCaches = caches;
  pipeline_.state.doc.memoryBudgetBytes = options_.memoryBudgetMib > 0 ? options_.memoryBudgetMib << 20 : defaultMemoryBudget();
  pipeline_.state.doc.defaultBudgetBytes = defaultMemoryBudget();
  if (!options_.scriptPath.empty()) {
    auto script = InputScript::load(options_.scriptPath);
    if (!script) {
      startupError(script.error().message);
      loop_.exitCode = 2;
      return false;
    }
    script_ = std::move(script.value());
    scriptHost_ = std::make_unique<AppScriptHost>(ScriptTargets{pipeline_, probes_, *window_, loop_, trainLab_, practice_});
  }
  if (!applyLaunchOptions()) return false;
  // Screenshots and the benchmark are pictures of exactly their options; --fresh opts out.
  session_.setEnabled(!options_.fresh && options_.screenshotPath.empty() && options_.benchFrames == 0);
  session_.restore(pipeline_, options_, &trainLab_);
  if (!options_.workspacePath.empty()) {
    if (auto st = openWorkspace(pipeline_.state, pipeline_.view, pipeline_.lessons, options_.workspacePath,
                                {options_.presetGiven, options_.stageGiven, options_.viewGiven, options_.headGiven});
        !st) {
      startupError(st.error().message);
      loop_.exitCode = 2;
      return false;
    }
  }
  return true;
}

bool App::initialiseImGui() {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // loaded and saved by hand: XDG folder, validated, atomic writes
  io.ConfigWindowsMoveFromTitleBarOnly = true;
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.TabRounding = 3.0f;
  style.ItemSpacing = ImVec2(7.0f, 5.0f);
  style.Colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
  style.Colors[ImGuiCol_ChildBg] = ImVec4(0.0f, 0.0f, 0.0f, 0.0f);
  style.Colors[ImGuiCol_PopupBg] = ImVec4(0.07f, 0.07f, 0.09f, 1.0f);  // tooltips over text stay readable
  fonts_.setBaseStyle(style);
  if (!window_->initImGuiPlatform() || !initImGuiRenderer()) {
    std::fprintf(stderr, "mhascope: cannot start Dear ImGui's GLFW/OpenGL3 backends (no OpenGL 3.3?). "
                         "Use the headless commands instead, e.g. `mhascope export --help`.\n");
    loop_.exitCode = 2;
    return false;
  }
  return true;
}

// The window's MODEL options (`mhascope --text … --weights w.safetensors`): resolved once exactly as
// `mhascope export` resolves them, so a bad option fails here with the command's message; the
// scheduler then builds the same model from the same config and files.
bool App::applyModelOptions() {
  Document& doc = pipeline_.state.doc;
  // `mhascope --model DIR` alone opens on a text of the window's choosing (said under the text box).
  const std::optional<ModelStartText> start = modelStartText(options_.model);
  if (start) {
    doc.startText = start->text;
    doc.startTextNote = start->note;
    options_.model.text = start->text;
  }
  // A latent-attention folder opens like one without a tokenizer (nothing resolved here): the Model tab runs the
  // whole forward on the text, and the pipeline shows its layer as that forward recorded it (the compute worker).
  bool latent = false;
  if (!options_.model.files.model.empty() && !(start && start->randomProbe)) {
    auto folder = model::ModelFolder::open(options_.model.files.model);
    latent = folder && folder->spec().latent.enabled();
  }
  if ((start && start->randomProbe) || latent) {
    // No tokenizer, so nothing resolves a text: the options and the folder are checked as
    // resolveModel and the Open menu check them, the pipeline says that its text needs a
    // tokenizer, and the Model tab runs on random tokens.
    if (auto st = cli::checkOptionConflicts(options_.model); !st) {
      startupError(st.error().message);
      return false;
    }
    auto folder = model::ModelFolder::open(options_.model.files.model);
    if (!folder) {
      startupError(folder.error().message);
      return false;
    }
    auto preset = loadPreset("default");
    if (preset) doc.config = std::move(*preset);
    // The sizes the left column says the folder sets are the folder's (no layer is resolved to give them).
    const model::ModelSpec& spec = folder->spec();
    doc.config.dModel = spec.dModel;
    doc.config.heads = spec.heads;
    doc.config.kvHeads = spec.kvHeads == spec.heads ? 0 : spec.kvHeads;
    doc.config.headDim = spec.headDim;
    if (start) {
      doc.config.text = start->text;
    } else {  // the latent folder's text as resolveModel would read it (--text or --text-file)
      auto text = readModelText(options_.model.text, options_.model.textFile);
      if (!text) {
        startupError(text.error().message);
        return false;
      }
      doc.config.text = std::move(*text);
    }
    doc.files = options_.model.files;
    doc.files.model = folder->dir();
    if (!doc.files.layer) doc.files.layer = 0;
    doc.presetName = std::filesystem::path(folder->dir()).filename().string() + " layer " + std::to_string(*doc.files.layer);
    if (!latent) modelViewOf(pipeline_.state).probe = ModelProbe::RepeatedRandom;
    return true;
  }
  auto r = cli::resolveModel(options_.model);
  if (!r) {
    startupError(r.error().message);
    return false;
  }
  if (options_.headGiven && options_.head >= r->config.heads) {
    std::fprintf(stderr, "mhascope: --head %d is out of range: this model has h = %d head%s, indices 0 .. %d\n",
                 options_.head, r->config.heads, r->config.heads == 1 ? "" : "s", r->config.heads - 1);
    return false;
  }
  pipeline_.state.doc.config = std::move(r->config);
  pipeline_.state.doc.files = options_.model.files;
  if (!pipeline_.state.doc.files.checkpoint.empty() && !pipeline_.state.doc.files.layer) pipeline_.state.doc.files.layer = 0;
  // A model folder's layer is named as the Open menu and the Model tab name it.
  pipeline_.state.doc.presetName = r->modelLayer ? std::filesystem::path(r->modelLayer->dir).filename().string() +
                                                       " layer " + std::to_string(r->modelLayer->layer)
                                                 : options_.preset + " (command line)";
  notePresetRead(pipeline_.state, options_.preset);
  return true;
}

bool App::applyLaunchOptions() {
  if (options_.modelGiven) {
    if (!applyModelOptions()) {
      loop_.exitCode = 2;
      return false;
    }
  } else {
    auto preset = loadPreset(options_.preset);
    if (!preset) {
      startupError(preset.error().message);
      loop_.exitCode = 2;
      return false;
    }
    pipeline_.state.doc.config = std::move(preset.value());
    pipeline_.state.doc.presetName = options_.preset;
    notePresetRead(pipeline_.state, options_.preset);
  }
  if (options_.benchFrames > 0) {  // the benchmark's fixed size: T=512, h=16, d_model=256
    pipeline_.state.doc.config.tokens = 512;
    pipeline_.state.doc.config.heads = 16;
    pipeline_.state.doc.config.dModel = 256;
    pipeline_.state.doc.config.batch = 1;
    pipeline_.state.doc.config.crossAttention = false;
    pipeline_.state.doc.presetName += " (T=512, h=16)";
    options_.view = "grid";
    if (options_.stage.empty()) options_.stage = "weights";
  }
  if (!options_.stage.empty()) {
    auto s = stageFromName(options_.stage);
    if (!s) {
      std::fprintf(stderr, "mhascope: unknown stage \"%s\"; stages: %s\n", options_.stage.c_str(), stageNamesList().c_str());
      loop_.exitCode = 2;
      return false;
    }
    pipeline_.view.stage = *s;
  }
  pipeline_.view.head = options_.head;  // 0-based, checked against h in parseLaunchOptions
  // A main tab's id is its --view name ("train" is the Train mode, over the pipeline's tabs).
  pipeline_.view.selectTab = findPanel(PanelArea::Main, options_.view) ? options_.view : kHeatmapTab;
  trainLab_.active = options_.view == "train";
  practice_.active = options_.view == "practice";
  return true;
}

void App::shutdown() {
  if (!window_) return;
  scheduler_.reset();  // joins the threads before anything they could touch goes away
  compareCompute_.reset();
  modelViewCompute_.reset();
  experimentsCompute_.reset();
  practiceCompute_.reset();
  ini_.save();
  if (ImGui::GetCurrentContext()) session_.save(pipeline_, &trainLab_);
  textures_ = TextureCache{};  // textures need the GL context: free them before it goes
  seeAs_.release();
  shutdownImGuiRenderer();
  window_->shutdownImGuiPlatform();
  ImGui::DestroyContext();
  window_.reset();
}

bool App::automated() const { return script_ || !options_.screenshotPath.empty() || options_.benchFrames > 0; }

// ---------------------------------------------------------------------------------------------
// [SECTION] loop
// ---------------------------------------------------------------------------------------------

void App::updateCompute() {
  // Tests, screenshots and the benchmark want the picture of exactly this config, now.
  const bool forceSync = !options_.screenshotPath.empty() || options_.benchFrames > 0 || (script_ && !loop_.scriptAsync);
  // The tab about to be drawn: one a launch option, a script or a click asked for, else the last one.
  const std::string& tab = pipeline_.view.selectTab.empty() ? pipeline_.view.tab : pipeline_.view.selectTab;
  try {
    pipeline_.requests.performAll();  // what the last frame's clicks asked for: writes, runs, loads
    scheduler_->update(pipeline_.state, pipeline_.view, pipeline_.lessons, tab, forceSync);
    // The Compare, Model and Predictions tabs' own states (each with its jobs) are made here on the
    // first frame their tab is shown, never by the panel.
    if (tab == kModelTab || tab == kPredictionsTab) modelViewOf(pipeline_.state);
    if (tab == kCompareTab) compareOf(pipeline_.state);
    if (tab == kExperimentsTab) experimentsOf(pipeline_.state);
    compareCompute_->update(pipeline_.state, pipeline_.view, forceSync);
    modelViewCompute_->update(pipeline_.state, forceSync);
    experimentsCompute_->update(pipeline_.state, forceSync);
    if (OpenUi& o = pipeline_.view.openUi; o.popupShown || o.requestOpen) refreshOpenFileListing(o, Window::now());
    // The Train mode's frame: the latest view of its run, the chosen step, the ablated probe; then
    // every Circuits view's jobs (the Train mode's, or the pipeline tab's when it is the one open).
    trainLab_.setup.memoryBudgetBytes = pipeline_.state.doc.memoryBudgetBytes;  // the window's one budget
    practiceCompute_->update(practice_, Window::now(), !options_.screenshotPath.empty());
    if (trainLab_.active) {
      updateTrainLab(trainLab_, forceSync);
      updateTrainCircuits(trainLab_);
    } else {
      updateCircuitsTab(circuitsTab_, pipeline_.state, pipeline_.view, tab, Window::now());
    }
  } catch (const std::exception& e) {  // bad_alloc and friends: shown, the app keeps running
    pipeline_.state.actionError = std::string("compute failed: ") + e.what();
  }
}

void App::frame() {
  const bool automatedRun = automated();
  // Training in the Train mode: one frame per tick, at most 4 per second and the tick long enough
  // that drawing takes at most a ninth of the time (TrainLab::tickSeconds; input still wakes the
  // loop at once), so a software renderer leaves the CPU to the training thread.
  // The Circuits tab's workers likewise: their result is drawn within a tick, not at the next input.
  const bool trainTick = (trainLab_.animating() || circuitsTab_.busy()) && !pipeline_.view.playing &&
                         !pipeline_.state.compute.computing;
  const FramePacer::Wake wake =
      trainTick ? FramePacer::Wake::Tick : pacer_.schedule(pipeline_.view.playing || pipeline_.state.compute.computing || pipeline_.state.compute.lessonComputing);
  // A worker computing a long job: the progress line needs a few frames a second and the worker
  // the CPU (drawing 60 frames a second with a software renderer, the window would take one of two
  // cores from it). Scripts that run async are paced alike, so their stopwatch measures what a
  // user gets; input still wakes the loop at once.
  const bool computeTick = pipeline_.state.compute.computing && !pipeline_.view.playing && (!automatedRun || loop_.scriptAsync);
  if (computeTick && (automatedRun || wake == FramePacer::Wake::Tick)) {
    const double tick = yieldingTickSeconds(frameWork_.seconds), waitStart = Window::now();
    window_->waitEvents(tick);
    if (!automatedRun && Window::now() - waitStart >= 0.9 * tick) pacer_.cancelSettling();  // no input: one frame
  } else if (automatedRun || wake == FramePacer::Wake::Now) {
    window_->pollEvents();
  } else if (trainTick) {
    window_->waitEvents(trainLab_.tickSeconds());
  } else if (wake == FramePacer::Wake::Tick) {
    window_->waitEvents(1.0 / 60.0);
  } else {
    // The Practice mode looks at the learner's file a few times a second: a save is checked unasked.
    window_->waitEvents(ImGui::GetIO().WantTextInput ? 0.5 : practice_.active ? 0.3 : kIdleTimeoutSeconds);
  }
  keyTaps_.apply(*window_);
  frameStart_ = Window::now();
  trainLab_.frameBegan(frameStart_);
  for (const std::string& path : window_->takeDroppedPaths()) dropOnWindow(trainLab_, practice_, pipeline_, path);
  const double now = Window::now();
  const double dt = lastFrameTime_ > 0 ? now - lastFrameTime_ : 0.0;
  lastFrameTime_ = now;

  // Monitor moved or DPI changed: rebuild the fonts at the new scale (outside a frame).
  if (options_.uiScale <= 0) {
    const float scale = window_->contentScale();
    if (std::fabs(scale - fonts_.requestedScale()) > 0.01f) {
      fonts_.build(scale, options_.maxTextureSize > 0 ? options_.maxTextureSize : Texture::maxSize());
      rebuildImGuiFontTexture();
    }
  }
  updateCompute();
  fitZoomToNewShape(pipeline_.state, pipeline_.view);

  FramebufferSize fb = window_->framebufferSize();
  if (loop_.zeroFramesLeft > 0) {
    --loop_.zeroFramesLeft;
    fb = {};
  }
  if (fb.empty()) {
    // Minimised (or resized to nothing): no ImGui frame, no GL calls, no division by a zero
    // size. The script still advances so tests can leave this state.
    if (script_) script_->frame(*scriptHost_, ImGui::GetIO());
    if (!automatedRun) window_->waitEvents(0.25);
    return;
  }

  const bool bench = options_.benchFrames > 0;
  const double tUi = Window::now();
  imguiRendererNewFrame();
  window_->imguiPlatformNewFrame();
  // event_driven scripts: would the real loop draw this frame? Not when it would still be
  // asleep waiting for an event and the script brought no new input.
  bool realFrame = true;
  if (script_) {
    const bool input = script_->frame(*scriptHost_, ImGui::GetIO());
    if (loop_.eventDriven && wake == FramePacer::Wake::Event && !input) {
      realFrame = false;
      pacer_.cancelSettling();  // this wake-up never happened
    }
  }
  clickThroughPopups();
  ImGui::NewFrame();
  probes_.clear();
  pipeline_.state.shown.beginFrame();
  try {
    handleKeys();
    advancePlay(dt);
    UiContext ctx = uiContext(pipeline_, textures_, probes_, fonts_.mono(), fonts_.title());
    ctx.train = &trainLab_;
    ctx.circuits = &circuitsTab_;
    loop_.wide = drawLayout(ctx, [this](UiContext& c) { return drawModeSwitch(trainLab_, practice_, c); });
  } catch (const std::exception& e) {
    // An exception mid-frame leaves Begin/End unbalanced: let ImGui close what is open.
    ImGui::ErrorCheckEndFrameRecover(nullptr);
    pipeline_.state.actionError = std::string("something went wrong: ") + e.what() + " (the app keeps running)";
  }
  ImGui::Render();
  if (!automatedRun || loop_.eventDriven) pacer_.afterRender(realFrame);
  if (realFrame) loop_.shownLabels = probes_.labels();
  render(fb, bench, tUi);
  if (framesDrawn_ == 1 && !heapWarmed_) {  // once the start-up allocations are in
    heapWarmed_ = true;
    warmHeap();
  }
  if (ImGui::GetIO().WantSaveIniSettings) ini_.save();
  // The session is saved about once a second while it changes (and at exit), so a crash or a
  // killed process loses at most the last second.
  if (now - sessionCheckedAt_ >= 1.0) {
    sessionCheckedAt_ = now;
    session_.save(pipeline_, &trainLab_);
    if (std::string notice = session_.takeNotice(); !notice.empty()) pipeline_.state.actionError = std::move(notice);
  }
}

void App::render(const FramebufferSize& fb, bool bench, double tUi) {
  const double tGl = Window::now();
  // A test's frame whose pixels nothing reads (no screenshot, no benchmark, no script timing it):
  // every GL call is made, the rasteriser discards (gl_frame.hpp). A user's frames are all drawn.
  const bool discard = automated() && !bench && loop_.screenshotPath.empty() && !(script_ && script_->measuringTime());
  beginGlFrame(fb.width, fb.height, discard);
  renderImGuiDrawData();
  // The preview applies to the frame as a whole, so a screenshot shows what the reader sees.
  if (!discard) seeAs_.apply(pipeline_.view.seeAs, fb.width, fb.height);
  textures_.endFrame();
  if (bench) finishGl();
  const double tSwap = Window::now();
  loop_.glErrors += drainGlErrors();
  ++framesDrawn_;

  if (!loop_.screenshotPath.empty()) {
    const RgbaImage img = readFramebuffer(fb.width, fb.height);
    if (auto st = savePng(loop_.screenshotPath, img); !st) {
      startupError(st.error().message);
      loop_.exitCode = 1;
    } else {
      std::printf("saved %s (%dx%d)\n", loop_.screenshotPath.c_str(), img.width, img.height);
    }
    loop_.screenshotPath.clear();
  }
  window_->swapBuffers();
  trainLab_.frameEnded(Window::now());
  loop_.lastFrameWorkSeconds = Window::now() - frameStart_;
  frameWork_.add(loop_.lastFrameWorkSeconds);
  if (bench) bench_.addSplit((tGl - tUi) * 1000.0, (tSwap - tGl) * 1000.0, (Window::now() - tSwap) * 1000.0);
}

int App::run() {
  if (!initialise()) return loop_.exitCode;
  const int warmup = 10;
  double benchStart = 0.0;
  while (!window_->shouldClose() && !loop_.quitRequested) {
    if (options_.benchFrames > 0 && framesDrawn_ >= warmup) benchStart = Window::now();
    frame();
    if (options_.benchFrames > 0 && framesDrawn_ > warmup) {
      bench_.addFrame((Window::now() - benchStart) * 1000.0);
      if (static_cast<int>(bench_.frames()) >= options_.benchFrames) break;
    }
    if (!options_.screenshotPath.empty() && framesDrawn_ == options_.frames - 1) loop_.screenshotPath = options_.screenshotPath;
    if (!options_.screenshotPath.empty() && framesDrawn_ >= options_.frames) break;
    if (script_ && script_->finished() && !loop_.quitRequested) loop_.quit(0);
  }
  if (options_.benchFrames > 0) {
    const FramebufferSize fb = window_->framebufferSize();
    char what[512];
    std::snprintf(what, sizeof what, "all-heads grid of %s, T=%d h=%d d_model=%d, %dx%d, GL renderer: %s",
                  stageInfo(pipeline_.view.stage).name, pipeline_.state.shown.trace.tq, pipeline_.state.shown.trace.heads, pipeline_.state.shown.trace.dModel, fb.width,
                  fb.height, glRendererName());
    bench_.print(what, static_cast<unsigned long long>(textures_.uploads()));
  }
  if (loop_.glErrors > 0) std::fprintf(stderr, "mhascope: %d OpenGL errors were reported\n", loop_.glErrors);
  return loop_.exitCode;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] input
// ---------------------------------------------------------------------------------------------

void App::handleKeys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;  // typing in the sentence box must not step the pipeline
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) stepStage(pipeline_.view, +1, &pipeline_.state.shown.trace);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) stepStage(pipeline_.view, -1, &pipeline_.state.shown.trace);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) goToStage(pipeline_.view, StageId::Query);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) goToStage(pipeline_.view, StageId::Output);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) {
    pipeline_.view.playing = !pipeline_.view.playing;
    pipeline_.view.playAccumulator = 0;
    if (pipeline_.view.playing && pipeline_.view.stage == StageId::Output) goToStage(pipeline_.view, StageId::Query);
  }
}

void App::advancePlay(double dt) {
  if (!pipeline_.view.playing) return;
  pipeline_.view.playAccumulator += dt;
  const double period = 1.0 / std::max(0.05f, pipeline_.view.playStagesPerSecond);
  if (pipeline_.view.playAccumulator < period) return;
  pipeline_.view.playAccumulator = 0;
  if (!stepStage(pipeline_.view, +1, &pipeline_.state.shown.trace)) pipeline_.view.playing = false;  // stop at the output
}

}  // namespace mhascope::app
