// [SECTION] index
//   set-up        — window, ImGui context, first configuration, launch options
//   session       — the last configuration and view, saved next to imgui.ini, back at launch
//   fonts         — DejaVu Sans / Sans Mono with Latin, Greek, Cyrillic, punctuation, math
//   imgui.ini     — in the XDG config folder, validated before ImGui sees it, saved atomically
//   compute       — small configs on the UI thread, big ones on the worker; latest wins
//   input         — keys ← → Space Home End, Play
//   layout        — the columns, the tabs, the status line; panels come from panel_list.cpp
//   loop          — one frame; idle waiting, redrawing until the picture settles; screenshots;
//                   --bench-frames
//   script host   — what input scripts may do
#include "app.hpp"

#include <cctype>
#include <imgui.h>
#include <imgui_internal.h>  // ErrorCheckEndFrameRecover: keep ImGui's stack whole after an exception

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>

#include "io/file_io.hpp"
#include "attention/tokenizer.hpp"
#include "panels/panel.hpp"
#include "train/lab_panels.hpp"
#include "render/gl_frame.hpp"
#include "render/screenshot.hpp"
#include "render/texture.hpp"

namespace mhascope::app {
namespace {

constexpr const char* kFontDir = "/usr/share/fonts/truetype/dejavu/";
constexpr float kBaseFontPx = 15.0f;  // at content scale 1
// Fonts with CJK glyphs, merged in when one is installed (DejaVu has none).
constexpr const char* kCjkFonts[] = {"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
                                     "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
                                     "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"};
// Code point ranges beyond ImGui's default Latin + Latin-1 (pairs, zero-terminated).
constexpr ImWchar kExtraRanges[] = {
    0x0100, 0x024F,  // Latin Extended-A/B (ő, ș, ł ...)
    0x0370, 0x03FF,  // Greek (α, β, Σ)
    0x0400, 0x04FF,  // Cyrillic
    0x1D00, 0x1DBF,  // phonetic extensions (superscript ᵀ)
    0x2000, 0x206F,  // general punctuation (– — … ‘ ’)
    0x2070, 0x209F,  // superscripts and subscripts
    0x2190, 0x21FF,  // arrows
    0x2200, 0x22FF,  // mathematical operators (√ ∞ ·)
    0x2500, 0x25FF,  // box drawing, blocks, geometric shapes (▶ ◀ ■)
    0x2700, 0x27BF,  // dingbats (❚)
    0xFFFD, 0xFFFD,  // the replacement character of invalid UTF-8
    0,
};
// Idle: nothing changes without input (the worker and Play poll faster), so wake rarely.
constexpr double kIdleTimeoutSeconds = 10.0;

bool fileExists(const char* path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// Whether imgui.ini looks like what ImGui writes: UTF-8 text of "[Type][Name]" headers and
// "Key=Value" lines. Anything else (binary junk, a truncated write) is ignored: the app starts
// with its default layout rather than feeding ImGui garbage.
bool plausibleIni(const std::string& text) {
  if (text.size() > (1u << 20)) return false;
  if (sanitizeUtf8(text) != text) return false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    for (char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return false;
    }
    const bool ok = line.empty() || line.front() == '[' || line.find('=') != std::string_view::npos;
    if (!ok) return false;
    pos = end + 1;
  }
  return true;
}

// Sizes from the text alone (no allocation), to decide where to compute.
struct SizeEstimate {
  std::int64_t batch = 1, tq = 1, tk = 1;
};

SizeEstimate estimateSizes(const ModelConfig& c) {
  SizeEstimate e;
  auto longest = [&](const std::string& text) {
    std::int64_t m = 0;
    const auto items = splitBatch(text);
    for (const auto& item : items) m = std::max<std::int64_t>(m, static_cast<std::int64_t>(tokenize(item).size()));
    return std::pair<std::int64_t, std::int64_t>(static_cast<std::int64_t>(items.size()), std::max<std::int64_t>(m, 1));
  };
  const auto [items, longestQ] = longest(c.text);
  e.batch = c.batch > 0 ? c.batch : std::max<std::int64_t>(items, 1);
  e.tq = c.tokens > 0 ? c.tokens : longestQ;
  e.tk = c.crossAttention ? longest(c.kvText).second : e.tq;
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] set-up
// ---------------------------------------------------------------------------------------------

App::App(LaunchOptions options) : options_(std::move(options)) {}

App::~App() { shutdown(); }

bool App::initialise() {
  WindowOptions wo;
  wo.width = options_.width;
  wo.height = options_.height;
  wo.visible = !options_.hidden;
  wo.vsync = options_.benchFrames == 0;
  auto window = Window::create(wo);
  if (!window) {
    std::fprintf(stderr, "mhascope: %s. Without a display, use the headless commands, e.g. "
                         "`mhascope export --help`.\n", window.error().message.c_str());
    exitCode_ = 2;
    return false;
  }
  window_ = std::move(window.value());

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
  baseStyle_ = style;
  if (!window_->initImGuiPlatform() || !initImGuiRenderer()) {
    std::fprintf(stderr, "mhascope: cannot start Dear ImGui's GLFW/OpenGL3 backends (no OpenGL 3.3?). "
                         "Use the headless commands instead, e.g. `mhascope export --help`.\n");
    exitCode_ = 2;
    return false;
  }
  if (options_.maxTextureSize > 0) textures_.setMaxTextureSize(options_.maxTextureSize);
  setupFonts(options_.uiScale > 0 ? options_.uiScale : window_->contentScale());
  if (const std::string dir = configDir(); !dir.empty()) iniPath_ = dir + "/imgui.ini";
  loadIni();

  // Default export folder: ~/Pictures when it exists, else home, else the working folder.
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* home = std::getenv("HOME");
  if (home && fs::is_directory(fs::path(home) / "Pictures", ec)) {
    view_.exportUi.folder = (fs::path(home) / "Pictures").string();
  } else if (home && *home) {
    view_.exportUi.folder = home;
  } else {
    view_.exportUi.folder = fs::current_path(ec).string();
  }

  worker_ = std::make_unique<ComputeWorker>();
  if (!options_.scriptPath.empty()) {
    auto script = InputScript::load(options_.scriptPath);
    if (!script) {
      std::fprintf(stderr, "mhascope: %s\n", script.error().message.c_str());
      exitCode_ = 2;
      return false;
    }
    script_ = std::move(script.value());
  }
  if (!applyLaunchOptions()) return false;
  restoreSession();
  return true;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] session — the last configuration and view, back at the next launch
// ---------------------------------------------------------------------------------------------

bool App::sessionEnabled() const {
  // Screenshots and the benchmark are pictures of exactly their options; --fresh opts out.
  return !options_.fresh && options_.screenshotPath.empty() && options_.benchFrames == 0;
}

void App::restoreSession() {
  if (!sessionEnabled()) return;
  const std::string dir = configDir();
  if (dir.empty()) return;
  sessionPath_ = dir + "/session.json";
  std::error_code ec;
  if (!std::filesystem::exists(sessionPath_, ec)) return;  // first launch
  auto text = readFile(sessionPath_, 1 << 20);
  Result<SavedSession> saved = text ? parseSessionJson(*text, sessionPath_) : Result<SavedSession>(text.error());
  if (!saved) {
    // Ignored as a whole (nothing half-applied); the next save replaces it.
    const std::string msg = "the last session was not restored (" + saved.error().message + "); starting from the defaults";
    std::fprintf(stderr, "mhascope: %s\n", msg.c_str());
    state_.actionError = msg;
    return;
  }
  SavedSession& s = saved.value();
  if (!options_.presetGiven) {
    state_.config = std::move(s.config);
    state_.presetName = s.presetName;
    state_.configDirty = true;
    view_.batch = s.batch;  // clamped by the panels once the trace is there
  }
  if (!options_.stageGiven) view_.stage = s.stage;
  if (!options_.viewGiven && !s.tab.empty()) view_.selectTab = s.tab;
  if (!options_.headGiven) view_.head = s.head;
  view_.colormap = s.colormap;
  view_.sharedScale = s.sharedScale;
  view_.showNumbers = s.showNumbers;
  view_.playStagesPerSecond = s.playStagesPerSecond;
  std::printf("mhascope: restored the last session from %s\n", sessionPath_.c_str());
}

void App::saveSession() {
  if (sessionPath_.empty()) {
    if (!sessionEnabled()) return;
    const std::string dir = configDir();
    if (dir.empty()) return;
    sessionPath_ = dir + "/session.json";
  }
  const auto& labels = probes_.labels();
  const auto tab = labels.find("main_tab");
  const std::string json = sessionToJson(state_, view_, tab == labels.end() ? std::string() : tab->second);
  if (json == savedSessionJson_) return;
  if (auto st = writeFileAtomic(sessionPath_, json); !st) {
    std::fprintf(stderr, "mhascope: cannot save the session: %s\n", st.error().message.c_str());
    sessionPath_.clear();  // say it once
    return;
  }
  savedSessionJson_ = json;
}

std::string App::sessionSummary() {
  const ModelConfig& c = state_.config;
  const auto& labels = probes_.labels();
  const auto tab = labels.find("main_tab");
  return "preset=" + state_.presetName + " text=" + c.text + " d_model=" + std::to_string(c.dModel) +
         " h=" + std::to_string(c.heads) + " seed=" + std::to_string(c.seed) + " mask=" + maskName(c.mask) +
         " stage=" + stageInfo(view_.stage).name + " tab=" + (tab == labels.end() ? std::string() : tab->second);
}

bool App::applyLaunchOptions() {
  auto preset = loadPreset(options_.preset);
  if (!preset) {
    std::fprintf(stderr, "mhascope: %s\n", preset.error().message.c_str());
    exitCode_ = 2;
    return false;
  }
  state_.config = std::move(preset.value());
  state_.presetName = options_.preset;
  if (options_.benchFrames > 0) {  // the benchmark's fixed size: T=512, h=16, d_model=256
    state_.config.tokens = 512;
    state_.config.heads = 16;
    state_.config.dModel = 256;
    state_.config.batch = 1;
    state_.config.crossAttention = false;
    state_.presetName += " (T=512, h=16)";
    options_.view = "grid";
    if (options_.stage.empty()) options_.stage = "weights";
  }
  if (!options_.stage.empty()) {
    auto s = stageFromName(options_.stage);
    if (!s) {
      std::fprintf(stderr, "mhascope: unknown stage \"%s\"; stages: %s\n", options_.stage.c_str(), stageNamesList().c_str());
      exitCode_ = 2;
      return false;
    }
    view_.stage = *s;
  }
  view_.head = options_.head;  // 0-based, checked against h in parseLaunchOptions
  view_.selectTab = options_.view == "grid" ? kAllHeadsTab : kHeatmapTab;
  for (const PanelInfo& p : allPanels()) {  // a lesson tab by its title in lower case: "split" → "Split"
    std::string lower = p.title;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (p.area == PanelArea::Main && lower == options_.view) view_.selectTab = p.title;
  }
  trainLab_.active = options_.view == "train";
  return true;
}

void App::shutdown() {
  if (!window_) return;
  worker_.reset();  // joins the thread before anything it could touch goes away
  saveIni();
  if (ImGui::GetCurrentContext()) saveSession();
  textures_ = TextureCache{};  // textures need the GL context: free them before it goes
  shutdownImGuiRenderer();
  window_->shutdownImGuiPlatform();
  ImGui::DestroyContext();
  window_.reset();
}

// ---------------------------------------------------------------------------------------------
// [SECTION] fonts
// ---------------------------------------------------------------------------------------------

void App::setupFonts(float scale) {
  // The atlas must fit one texture: past GL_MAX_TEXTURE_SIZE every glyph draws as a box. A large
  // --ui-scale with a CJK font merged in can exceed it, so drop the CJK glyphs first, then the scale.
  const int limit = options_.maxTextureSize > 0 ? options_.maxTextureSize : Texture::maxSize();
  requestedUiScale_ = scale;
  bool withCjk = true;
  for (;;) {
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    ImFontGlyphRangesBuilder ranges;
    ranges.AddRanges(io.Fonts->GetGlyphRangesDefault());
    ranges.AddRanges(kExtraRanges);
    glyphRanges_.clear();
    ranges.BuildRanges(&glyphRanges_);

    const std::string sans = std::string(kFontDir) + "DejaVuSans.ttf";
    const std::string mono = std::string(kFontDir) + "DejaVuSansMono.ttf";
    const char* cjk = nullptr;
    for (const char* path : kCjkFonts) {
      if (withCjk && fileExists(path)) {
        cjk = path;
        break;
      }
    }
    auto addFont = [&](const std::string& path, float px) -> ImFont* {
      if (!fileExists(path.c_str())) return nullptr;
      ImFontConfig cfg;
      cfg.OversampleH = 2;
      ImFont* f = io.Fonts->AddFontFromFileTTF(path.c_str(), px * scale, &cfg, glyphRanges_.Data);
      if (f && cjk) {  // CJK glyphs merged into the same font, when a CJK font is installed
        ImFontConfig merge;
        merge.MergeMode = true;
        io.Fonts->AddFontFromFileTTF(cjk, px * scale, &merge, io.Fonts->GetGlyphRangesChineseSimplifiedCommon());
      }
      return f;
    };
    mainFont_ = addFont(sans, kBaseFontPx);
    if (!mainFont_) {
      std::fprintf(stderr, "mhascope: %s not found (install fonts-dejavu-core); using ImGui's built-in font, "
                           "non-ASCII tokens will be spelled as U+XXXX\n", sans.c_str());
      ImFontConfig cfg;
      cfg.SizePixels = 13.0f * scale;
      mainFont_ = io.Fonts->AddFontDefault(&cfg);
    }
    monoFont_ = addFont(mono, kBaseFontPx - 2.0f);  // 80-column pseudocode fits the side column
    titleFont_ = addFont(sans, kBaseFontPx * 1.35f);
    if (!monoFont_) monoFont_ = mainFont_;
    if (!titleFont_) titleFont_ = mainFont_;
    io.FontDefault = mainFont_;
    io.Fonts->Build();
    const ImFontAtlas* atlas = io.Fonts;
    if (limit <= 0 || (atlas->TexWidth <= limit && atlas->TexHeight <= limit)) break;
    if (withCjk && cjk) {
      std::fprintf(stderr, "mhascope: at UI scale %.2f the font atlas with CJK glyphs (%d x %d) exceeds the GPU's "
                           "texture limit of %d; CJK tokens will be spelled as U+XXXX\n",
                   static_cast<double>(scale), atlas->TexWidth, atlas->TexHeight, limit);
      withCjk = false;
      continue;
    }
    if (scale <= 0.5f) break;
    const float smaller = std::max(0.5f, scale * 0.8f);
    std::fprintf(stderr, "mhascope: at UI scale %.2f the font atlas (%d x %d) exceeds the GPU's texture limit of %d; "
                         "using UI scale %.2f\n",
                 static_cast<double>(scale), atlas->TexWidth, atlas->TexHeight, limit, static_cast<double>(smaller));
    scale = smaller;
  }
  uiScale_ = scale;

  // Sizes scale with the monitor, from the unscaled style so changes never compound.
  ImGuiStyle& style = ImGui::GetStyle();
  style = baseStyle_;
  style.ScaleAllSizes(scale);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] imgui.ini
// ---------------------------------------------------------------------------------------------

void App::loadIni() {
  if (iniPath_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(iniPath_, ec)) return;
  auto text = readFile(iniPath_, 1u << 20);
  if (!text) {
    std::fprintf(stderr, "mhascope: ignoring %s (%s); starting with the default layout\n", iniPath_.c_str(),
                 text.error().message.c_str());
    return;
  }
  if (!plausibleIni(*text)) {
    std::fprintf(stderr, "mhascope: ignoring %s: it is not a Dear ImGui settings file (corrupt?); starting "
                         "with the default layout\n", iniPath_.c_str());
    return;
  }
  ImGui::LoadIniSettingsFromMemory(text->data(), text->size());
}

void App::saveIni() {
  ImGuiIO& io = ImGui::GetIO();
  io.WantSaveIniSettings = false;
  if (iniPath_.empty()) return;
  std::size_t size = 0;
  const char* data = ImGui::SaveIniSettingsToMemory(&size);
  // A failed save (read-only or full disk) only loses the layout; say so once, keep going.
  if (auto st = writeFileAtomic(iniPath_, std::string_view(data, size)); !st) {
    std::fprintf(stderr, "mhascope: cannot save the layout: %s\n", st.error().message.c_str());
    iniPath_.clear();
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] compute
// ---------------------------------------------------------------------------------------------

bool App::computeSynchronously(const ModelConfig& c) const {
  // Tests, screenshots and the benchmark want the picture of exactly this config, now.
  if (!options_.screenshotPath.empty() || options_.benchFrames > 0 || (script_ && !scriptAsync_)) return true;
  const SizeEstimate e = estimateSizes(c);
  const FlopCount flops = countFlops(e.batch, e.tq, e.tk, c.dModel, c.heads);
  // ~5 ms of work at the ~100 GFLOP/s measured here leaves room for the frame itself.
  // Weight initialisation (4·d_model² random numbers) also counts for wide models.
  return flops.total() < 5e8 && c.dModel <= 512;
}

void App::applyOutcome(const ComputeOutcome& outcome, Trace& computed) {
  if (outcome.requestId <= shownRequest_) return;  // an older request finished late
  shownRequest_ = outcome.requestId;
  if (!outcome.ok) {
    if (outcome.requestId == requestCounter_) state_.configError = outcome.error;
    return;
  }
  std::swap(state_.trace, computed);
  state_.traceReplaced();
  state_.traceConfig = outcome.config;
  state_.lastComputeMs = outcome.milliseconds;
}

void App::updateCompute() {
  if (auto outcome = worker_->take(spare_)) {
    // take() swapped the worker's trace into spare_; move it on into the state.
    const bool ok = outcome->ok;
    applyOutcome(*outcome, spare_);
    if (ok) state_.lastComputeOnWorker = true;
  }
  if (state_.configDirty) {
    state_.configDirty = false;
    state_.suggestedHeads.clear();
    const ModelConfig& c = state_.config;
    Status valid = Ok{};
    try {
      valid = validateConfig(c, MemoryUse::app());
    } catch (const std::exception& e) {
      valid = makeError(std::string("cannot check this configuration: ") + e.what());
    }
    if (!valid) {
      state_.configError = valid.error().message;
      if (c.dModel > 0 && c.heads > 0 && c.dModel % c.heads != 0) state_.suggestedHeads = nearestValidHeads(c.dModel, c.heads, 2);
      ++requestCounter_;  // whatever is still running is now outdated
    } else {
      state_.configError.clear();
      const std::uint64_t id = ++requestCounter_;
      if (computeSynchronously(c)) {
        ComputeOutcome outcome = computeTrace(c, id, spare_);
        applyOutcome(outcome, spare_);
        state_.lastComputeOnWorker = false;
      } else {
        worker_->submit(c, id);
      }
    }
  }
  state_.computing = worker_->busy() && shownRequest_ < requestCounter_;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] input
// ---------------------------------------------------------------------------------------------

void App::handleKeys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;  // typing in the sentence box must not step the pipeline
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) stepStage(view_, +1);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) stepStage(view_, -1);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) goToStage(view_, StageId::Query);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) goToStage(view_, StageId::Output);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) {
    view_.playing = !view_.playing;
    view_.playAccumulator = 0;
    if (view_.playing && view_.stage == StageId::Output) goToStage(view_, StageId::Query);
  }
}

void App::advancePlay(double dt) {
  if (!view_.playing) return;
  view_.playAccumulator += dt;
  const double period = 1.0 / std::max(0.05f, view_.playStagesPerSecond);
  if (view_.playAccumulator < period) return;
  view_.playAccumulator = 0;
  if (!stepStage(view_, +1)) view_.playing = false;  // stop at the output
}

bool App::wantsAnimation() const { return view_.playing || state_.computing || trainLab_.animating(); }

void App::clickThroughPopups() {
  // ImGui lets a press outside an open (non-modal) popup only close the popup: the tab, button
  // or stage under the mouse needs a second click. Here such a press closes the popups first,
  // so the same press reaches what is under it.
  ImGuiContext& g = *ImGui::GetCurrentContext();
  const ImGuiIO& io = g.IO;
  const bool pressStarts = io.MouseDown[0] && io.MouseDownDuration[0] < 0.0f;  // not held last frame
  if (!pressStarts || g.OpenPopupStack.Size == 0 || ImGui::GetTopMostPopupModal() != nullptr) return;
  for (const ImGuiPopupData& popup : g.OpenPopupStack) {
    if (popup.Window && popup.Window->WasActive && popup.Window->Rect().Contains(io.MousePos)) return;
  }
  // The deepest window under the mouse. A press in the window that opened the popup keeps
  // ImGui's behaviour (the press only closes it): clicking a combo's or the Export button again
  // must close its popup, not close and reopen it.
  ImGuiWindow* under = nullptr;
  int underDepth = -1;
  for (ImGuiWindow* w : g.Windows) {
    if (!w->WasActive || w->Hidden || (w->Flags & (ImGuiWindowFlags_Tooltip | ImGuiWindowFlags_Popup)) ||
        !w->OuterRectClipped.Contains(io.MousePos)) {
      continue;
    }
    int depth = 0;
    for (ImGuiWindow* p = w->ParentWindow; p; p = p->ParentWindow) ++depth;
    if (depth > underDepth) {
      under = w;
      underDepth = depth;
    }
  }
  if (!under || under == g.OpenPopupStack[0].SourceWindow) return;
  ImGui::ClosePopupToLevel(0, true);
}

App::Wake App::scheduleFrame() {
  constexpr int kSettleFrames = 2;  // after a wake-up: hover highlights and popups settle
  // Training in the Train mode: one frame per tick, the tick long enough that drawing takes at
  // most a fifth of the time (TrainLab::tickSeconds; input still wakes the loop at once), so a
  // software renderer leaves the CPU to the training thread instead of drawing settle frames.
  if (trainLab_.animating() && !view_.playing && !state_.computing) return Wake::TrainTick;
  if (settleFrames_ > 0) {
    --settleFrames_;
    return Wake::Now;
  }
  // Every wake-up, by an event or by Play's/the worker's tick, is followed by settle frames:
  // the frame that handles a click draws the old state of what the click changed.
  settleFrames_ = kSettleFrames;
  return wantsAnimation() ? Wake::Tick : Wake::Event;
}

bool App::pictureChanged() {
  // A 64-bit hash of everything ImGui will draw: vertices, indices, textures, clip rects.
  std::uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x100000001B3ull;
      h ^= h >> 29;
    }
    for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  };
  if (const ImDrawData* dd = ImGui::GetDrawData()) {
    for (int n = 0; n < dd->CmdListsCount; ++n) {
      const ImDrawList* list = dd->CmdLists[n];
      mix(list->VtxBuffer.Data, static_cast<std::size_t>(list->VtxBuffer.Size) * sizeof(ImDrawVert));
      mix(list->IdxBuffer.Data, static_cast<std::size_t>(list->IdxBuffer.Size) * sizeof(ImDrawIdx));
      for (const ImDrawCmd& cmd : list->CmdBuffer) {
        mix(&cmd.ClipRect, sizeof cmd.ClipRect);
        mix(&cmd.TextureId, sizeof cmd.TextureId);
        mix(&cmd.ElemCount, sizeof cmd.ElemCount);
      }
    }
  }
  const bool changed = h != lastPictureHash_;
  lastPictureHash_ = h;
  return changed;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] layout
// ---------------------------------------------------------------------------------------------

void App::drawUi() {
  UiContext ctx{state_, view_, textures_, probes_, lessons_, monoFont_, titleFont_};
  const auto& panels = allPanels();
  auto drawArea = [&](PanelArea area) {
    for (const PanelInfo& p : panels) {
      if (p.area != area) continue;
      ImGui::PushID(p.title);
      p.draw(ctx);
      ImGui::PopID();
    }
  };

  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0.0f);
  const ImGuiWindowFlags hostFlags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoNavFocus |
                                     ImGuiWindowFlags_NoScrollWithMouse |
                                     // glClear already paints this colour; a full-window quad on top
                                     // costs a software renderer (llvmpipe) several ms per frame
                                     ImGuiWindowFlags_NoBackground;
  ImGui::Begin("mhascope##host", nullptr, hostFlags);
  ImGui::PopStyleVar();
  if (drawModeSwitch(trainLab_, ctx)) {  // the Train mode replaces the pipeline layout
    ImGui::End();
    return;
  }

  const float em = ImGui::GetFontSize();
  const float statusH = ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
  const float tableH = std::max(ImGui::GetContentRegionAvail().y - statusH, 4.0f * em);
  // Narrow windows (under ~72 em, e.g. 1000 px at 15 px text) have no room for a third column:
  // the explanation panels become tabs of the main area instead.
  const bool wide = ImGui::GetContentRegionAvail().x >= 72.0f * em;
  wide_ = wide;
  // The columns' rectangles, for the exploration test's points ("column_left" ...).
  auto recordColumn = [&](const char* name) {
    probes_.recordRect(name, ImGui::GetWindowPos(),
                       ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x, ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
  };
  auto mainTabs = [&] {
    const ImGuiTabBarFlags tabFlags = ImGuiTabBarFlags_FittingPolicyScroll | ImGuiTabBarFlags_TabListPopupButton;
    if (!ImGui::BeginTabBar("main tabs", tabFlags)) return;
    for (const PanelInfo& p : panels) {
      if (p.area != PanelArea::Main && (wide || p.area != PanelArea::Right)) continue;
      ImGui::PushID(p.title);
      const ImGuiTabItemFlags flags = view_.selectTab == p.title ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(p.title, nullptr, flags);
      std::string probe = std::string("tab_") + p.title;  // "tab_All_heads": script words have no spaces
      std::replace(probe.begin(), probe.end(), ' ', '_');
      probes_.recordLastItem(probe);
      if (open) {
        probes_.recordLabel("main_tab", p.title);
        ImGui::BeginChild("content", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
        p.draw(ctx);
        ImGui::EndChild();
        ImGui::EndTabItem();
      }
      ImGui::PopID();
    }
    ImGui::EndTabBar();
    view_.selectTab.clear();
  };
  const ImGuiTableFlags layoutFlags = ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable(wide ? "layout" : "layout narrow", wide ? 3 : 2, layoutFlags, ImVec2(0.0f, tableH))) {
    ImGui::TableSetupColumn("controls", ImGuiTableColumnFlags_WidthStretch, wide ? 0.22f : 0.31f);
    ImGui::TableSetupColumn("main", ImGuiTableColumnFlags_WidthStretch, wide ? 0.50f : 0.69f);
    if (wide) ImGui::TableSetupColumn("explain", ImGuiTableColumnFlags_WidthStretch, 0.28f);
    ImGui::TableNextRow(ImGuiTableRowFlags_None, tableH);
    const float cellH = tableH - 2.0f * ImGui::GetStyle().CellPadding.y;

    ImGui::TableNextColumn();
    ImGui::BeginChild("left", ImVec2(0.0f, cellH));
    recordColumn("column_left");
    drawArea(PanelArea::Left);
    ImGui::EndChild();

    ImGui::TableNextColumn();
    const float top = ImGui::GetCursorPosY();
    const ImVec2 topLeft = ImGui::GetCursorScreenPos();
    drawArea(PanelArea::Top);
    probes_.recordRect("column_top", topLeft,
                       ImVec2(topLeft.x + ImGui::GetContentRegionAvail().x, ImGui::GetCursorScreenPos().y));
    const float mainH = std::max(cellH - (ImGui::GetCursorPosY() - top), 4.0f * em);
    ImGui::BeginChild("main", ImVec2(0.0f, mainH));
    recordColumn("column_main");
    mainTabs();
    ImGui::EndChild();

    if (wide) {
      ImGui::TableNextColumn();
      ImGui::BeginChild("right", ImVec2(0.0f, cellH));
      recordColumn("column_right");
      for (const PanelInfo& p : panels) {
        if (p.area != PanelArea::Right) continue;
        ImGui::PushID(p.title);
        if (ImGui::CollapsingHeader(p.title, ImGuiTreeNodeFlags_DefaultOpen)) p.draw(ctx);
        ImGui::PopID();
      }
      ImGui::EndChild();
    }
    ImGui::EndTable();
  }
  probes_.recordLabel("popup", ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel)
                                   ? "open" : "none");
  ImGui::Separator();
  const ImVec2 statusMin = ImGui::GetCursorScreenPos();
  drawArea(PanelArea::Status);
  probes_.recordRect("column_status", statusMin,
                     ImVec2(statusMin.x + ImGui::GetWindowContentRegionMax().x, ImGui::GetItemRectMax().y));
  ImGui::End();
}

// ---------------------------------------------------------------------------------------------
// [SECTION] loop
// ---------------------------------------------------------------------------------------------

void App::frame() {
  const bool automated = script_ || !options_.screenshotPath.empty() || options_.benchFrames > 0;
  // Idle: sleep until input arrives. After any wake-up keep drawing until the picture is
  // settled (see pictureChanged), so what a click or key changed is on screen without another
  // mouse move. Play, a running worker and a blinking text cursor need steady frames.
  const Wake wake = scheduleFrame();
  if (automated || wake == Wake::Now) {
    window_->pollEvents();
  } else if (wake == Wake::Tick) {
    window_->waitEvents(1.0 / 60.0);
  } else if (wake == Wake::TrainTick) {
    window_->waitEvents(trainLab_.tickSeconds());
  } else {
    window_->waitEvents(ImGui::GetIO().WantTextInput ? 0.5 : kIdleTimeoutSeconds);
  }
  // A key pressed and released within that one poll: ImGui 1.86 would never see it down. Hold it
  // for this frame (ImGui then sees the press), let go on the next.
  {
    ImGuiIO& io = ImGui::GetIO();
    for (int key : heldTaps_) {
      if (key < IM_ARRAYSIZE(io.KeysDown) && !window_->keyIsDown(key)) io.KeysDown[key] = false;
    }
    heldTaps_.clear();
    for (int key : window_->takePressedKeys()) {
      if (key < IM_ARRAYSIZE(io.KeysDown) && !io.KeysDown[key]) {
        io.KeysDown[key] = true;
        heldTaps_.push_back(key);
      }
    }
  }
  trainLab_.frameBegan(Window::now());
  for (const std::string& path : window_->takeDroppedPaths()) trainDropPath(trainLab_, path);
  const double now = Window::now();
  const double dt = lastFrameTime_ > 0 ? now - lastFrameTime_ : 0.0;
  lastFrameTime_ = now;

  // Monitor moved or DPI changed: rebuild the fonts at the new scale (outside a frame).
  if (options_.uiScale <= 0) {
    const float scale = window_->contentScale();
    if (std::fabs(scale - requestedUiScale_) > 0.01f) {
      setupFonts(scale);
      rebuildImGuiFontTexture();
    }
  }

  try {
    updateCompute();
  } catch (const std::exception& e) {  // bad_alloc and friends: shown, the app keeps running
    state_.actionError = std::string("compute failed: ") + e.what();
  }

  FramebufferSize fb = window_->framebufferSize();
  if (zeroFramesLeft_ > 0) {
    --zeroFramesLeft_;
    fb = {};
  }
  if (fb.empty()) {
    // Minimised (or resized to nothing): no ImGui frame, no GL calls, no division by a zero
    // size. The script still advances so tests can leave this state.
    if (script_) {
      ImGuiIO& io = ImGui::GetIO();
      script_->frame(*this, io);
    }
    if (!automated) window_->waitEvents(0.25);
    return;
  }

  const bool bench = options_.benchFrames > 0;
  const double tUi = Window::now();
  imguiRendererNewFrame();
  window_->imguiPlatformNewFrame();
  ImGuiIO& io = ImGui::GetIO();
  // event_driven scripts: would the real loop draw this frame? Not when it would still be
  // asleep waiting for an event and the script brought no new input.
  bool realFrame = true;
  if (script_) {
    const bool input = script_->frame(*this, io);
    if (eventDriven_ && wake == Wake::Event && !input) {
      realFrame = false;
      settleFrames_ = 0;  // this wake-up never happened
    }
  }
  clickThroughPopups();
  ImGui::NewFrame();
  probes_.clear();
  try {
    handleKeys();
    advancePlay(dt);
    drawUi();
  } catch (const std::exception& e) {
    // An exception mid-frame leaves Begin/End unbalanced: let ImGui close what is open.
    ImGui::ErrorCheckEndFrameRecover(nullptr);
    state_.actionError = std::string("something went wrong: ") + e.what() + " (the app keeps running)";
  }
  ImGui::Render();
  if (!automated || eventDriven_) {
    // Keep drawing while the picture still changes (a tab selected on the click's frame shows on
    // the next one; a button's label changes after it was drawn), a bounded number of frames.
    if (pictureChanged() && realFrame && ++changingFrames_ < 60) {
      settleFrames_ = std::max(settleFrames_, 1);
    } else if (!realFrame || settleFrames_ == 0) {
      changingFrames_ = 0;
    }
  }
  if (realFrame) shownLabels_ = probes_.labels();
  const double tGl = Window::now();
  beginGlFrame(fb.width, fb.height);
  renderImGuiDrawData();
  textures_.endFrame();
  if (bench) finishGl();
  const double tSwap = Window::now();
  glErrors_ += drainGlErrors();
  ++framesDrawn_;

  if (!screenshotPath_.empty()) {
    const RgbaImage img = readFramebuffer(fb.width, fb.height);
    if (auto st = savePng(screenshotPath_, img); !st) {
      std::fprintf(stderr, "mhascope: %s\n", st.error().message.c_str());
      exitCode_ = 1;
    } else {
      std::printf("saved %s (%dx%d)\n", screenshotPath_.c_str(), img.width, img.height);
    }
    screenshotPath_.clear();
  }
  window_->swapBuffers();
  trainLab_.frameEnded(Window::now());
  if (bench) {
    uiTimes_.push_back((tGl - tUi) * 1000.0);
    glTimes_.push_back((tSwap - tGl) * 1000.0);
    swapTimes_.push_back((Window::now() - tSwap) * 1000.0);
  }
  if (io.WantSaveIniSettings) saveIni();
  // The session is saved about once a second while it changes (and at exit), so a crash or a
  // killed process loses at most the last second.
  if (now - sessionCheckedAt_ >= 1.0) {
    sessionCheckedAt_ = now;
    saveSession();
  }
}

int App::run() {
  if (!initialise()) return exitCode_;
  const int warmup = 10;
  double benchStart = 0.0;
  while (!window_->shouldClose() && !quitRequested_) {
    if (options_.benchFrames > 0 && framesDrawn_ >= warmup) benchStart = Window::now();
    frame();
    if (options_.benchFrames > 0 && framesDrawn_ > warmup) {
      frameTimes_.push_back((Window::now() - benchStart) * 1000.0);
      if (static_cast<int>(frameTimes_.size()) >= options_.benchFrames) break;
    }
    if (!options_.screenshotPath.empty() && framesDrawn_ == options_.frames - 1) screenshotPath_ = options_.screenshotPath;
    if (!options_.screenshotPath.empty() && framesDrawn_ >= options_.frames) break;
    if (script_ && script_->finished() && !quitRequested_) quit(0);
  }
  if (options_.benchFrames > 0 && !frameTimes_.empty()) {
    std::vector<double> t = frameTimes_;
    std::sort(t.begin(), t.end());
    const double median = t[t.size() / 2];
    const double p95 = t[std::min(t.size() - 1, static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(t.size()))) - 1)];
    const FramebufferSize fb = window_->framebufferSize();
    std::printf("bench-frames: %zu frames, all-heads grid of %s, T=%d h=%d d_model=%d, %dx%d, GL renderer: %s\n",
                t.size(), stageInfo(view_.stage).name, state_.trace.tq, state_.trace.heads, state_.trace.dModel, fb.width,
                fb.height, glRendererName());
    std::printf("frame time: median %.2f ms, p95 %.2f ms, max %.2f ms (target p95 <= 16 ms)\n", median, p95, t.back());
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    std::printf("median split: ImGui %.2f ms, GL draw %.2f ms, swap %.2f ms; %llu texture uploads in all\n",
                med(uiTimes_), med(glTimes_), med(swapTimes_), static_cast<unsigned long long>(textures_.uploads()));
  }
  if (glErrors_ > 0) std::fprintf(stderr, "mhascope: %d OpenGL errors were reported\n", glErrors_);
  return exitCode_;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] script host
// ---------------------------------------------------------------------------------------------

bool App::probePoint(const std::string& name, float fx, float fy, ImVec2& out) {
  const ItemRect* r = probes_.find(name);
  if (!r) return false;
  out = ImVec2(r->min.x + (r->max.x - r->min.x) * fx, r->min.y + (r->max.y - r->min.y) * fy);
  return true;
}

std::string App::currentStageName() { return stageInfo(view_.stage).name; }

std::vector<std::string> App::tabTitles() {
  std::vector<std::string> out;
  for (const PanelInfo& p : allPanels()) {
    if (p.area == PanelArea::Main || (!wide_ && p.area == PanelArea::Right)) out.push_back(p.title);
  }
  out.push_back(kTrainModeTitle);
  return out;
}

bool App::itemHovered() { return ImGui::GetCurrentContext()->HoveredId != 0; }

std::string App::shownLabel(const std::string& name) {
  const auto& labels = eventDriven_ ? shownLabels_ : probes_.labels();
  auto it = labels.find(name);
  return it == labels.end() ? std::string() : it->second;
}

void App::resize(int w, int h) { window_->resize(w, h); }

int App::textureCount() { return Texture::liveCount(); }

void App::quit(int exitCode) {
  if (exitCode_ == 0) exitCode_ = exitCode;
  quitRequested_ = true;
}

std::string App::loadPresetByName(const std::string& name) {
  auto preset = loadPreset(name);
  if (!preset) return preset.error().message;
  state_.config = std::move(preset.value());
  state_.presetName = name;
  state_.configDirty = true;
  return {};
}

void App::churnStep(int i) {
  // A walk through sizes, masks and stages, as a user dragging sliders would.
  constexpr int kModels[] = {8, 12, 16, 24, 32, 48};
  ModelConfig& c = state_.config;
  c.dModel = kModels[i % 6];
  c.heads = (i / 6) % 2 == 0 ? 2 : 4;
  c.tokens = 3 + (i * 7) % 40;
  c.seed = static_cast<std::uint64_t>(i);
  c.mask = i % 3 == 0 ? MaskKind::Causal : MaskKind::None;
  state_.configDirty = true;
  view_.stage = static_cast<StageId>(i % kStageCount);
  if (i % 50 == 0) view_.selectTab = (i / 50) % 2 == 0 ? kAllHeadsTab : kHeatmapTab;
}

}  // namespace mhascope::app
