// The app's state in two explicit structs (no function-local statics anywhere):
//   AppState  — the document being edited (Document), the last good trace and what was made from
//               it (ShownResult), and what the computing is doing (ComputeStatus);
//   ViewState — what the user is looking at: stage, batch item, head, colormap, zoom, play.
// Panels read both and edit them; only the compute scheduler turns a changed document into a new
// shown result (trace, its model and the lesson results).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "color/color_scale.hpp"
#include "color/colormap.hpp"
#include "util/result.hpp"
#include "attention/model.hpp"
#include "attention/trace.hpp"
#include "io/input_files.hpp"
#include "io/workspace.hpp"
#include "lessons/lessons.hpp"
#include "model_source/file_kind.hpp"
#include "model_source/model_source.hpp"
#include "state/compute_status.hpp"
#include "state/lesson_view.hpp"

namespace mhascope::app {

// The token chips under the Input box: how the text is cut into batch items and the first item
// into tokens (cut or extended to T), made by the update step once per edit (refreshTokenChips), so
// the panel draws them without tokenizing every frame.
inline constexpr std::size_t kShownChips = 24;
struct TokenChips {
  std::string text;                // what they were made from (the text as typed and T)
  int limit = -1;
  std::size_t items = 0;           // batch items ("|"-separated sentences; 0: no token at all)
  std::size_t count = 0;           // the first item's tokens (T when T > 0)
  std::vector<std::string> shown;  // the first at most kShownChips of them
};
// Remakes `chips` when the text or T changed since they were made.
void refreshTokenChips(TokenChips& chips, const std::string& text, int limit);

// The document: what the user edits and a workspace saves (the controls, the files in use, an
// Open that may still be undone). Only the compute scheduler turns it into a ShownResult.
struct Document {
  ModelConfig config;               // what the controls show and edit
  InputFiles files;                 // files the model is read from besides config (none: text + seed)
  // The Train mode's "Open in pipeline": a trained layer held in memory (model_source/), recomputed
  // from as it is; the controls that would change it are fixed while it is open.
  std::shared_ptr<const SourcedModel> trainedLayer;
  // An Open (menu, drop, Open in pipeline) not yet computed: what was in use before, restored with
  // the reason in actionError when the opened files cannot be used (nothing half-applied).
  struct BeforeOpen {
    ModelConfig config;
    InputFiles files;
    std::shared_ptr<const SourcedModel> trainedLayer;
    std::string presetName;
    std::string what;  // "cannot open 'w.safetensors'"
  };
  std::optional<BeforeOpen> beforeOpen;
  bool configDirty = true;          // edited since the last compute request
  TokenChips chips;                 // of config.text (the compute scheduler refreshes them)
  std::string presetName = "default";
  // What presetName names, as it was given: the preset box says " (edited)" while `config` differs
  // from it (markEditedIfChanged), so an edit put back clears the mark. Taken by keepNamedConfig
  // when the name changes; namedConfig is empty when the name came already edited (a workspace).
  std::string namedAs;      // presetName without " (edited)" when namedConfig was taken
  std::string namedConfig;  // presetToJson of the config then
  // Every preset file this window read a configuration from (presetFileOf): inputs, so a
  // workspace is never saved over one of them (the command line refuses the same).
  std::set<std::string> presetFiles;
  // `mhascope --model DIR` without a text: the text the window chose and the words under the text
  // box saying so and how to change it (shell/launch_options ModelStartText), shown while the text
  // is still that one.
  std::string startText, startTextNote;
  std::string configError;          // why `config` cannot run (validateConfig); empty when fine
  std::vector<int> suggestedHeads;  // valid h nearest to the requested one, when h ∤ d_model
  bool sizeEditPending = false;     // d_model / h dragged or typed: applied when the edit ends
  // The most one computation may hold: the "memory budget" control under Sizes;
  // at start --memory-budget or the machine's default (half of MemAvailable, util/memory_budget).
  // 0: the config's own (in-process tests).
  std::uint64_t memoryBudgetBytes = 0;
  std::uint64_t defaultBudgetBytes = 0;  // the machine's default at start, for the control's reset

  // Files or a trained layer in use (the "Files in use" list; the scheduler reads them).
  bool fromFiles() const { return !files.empty() || trainedLayer != nullptr; }
};

// The shown result: the last good forward pass and what was made from it (its model, the quiz,
// the lesson results), written by the compute scheduler, read by every panel; plus the caches of
// what the panels read from it.
struct ShownResult {
  Trace trace;                      // the last good forward pass: what every panel shows
  ModelConfig traceConfig;          // the config `trace` was computed from
  bool traceSeedUsed = true;        // its subtitle (configLine): whether the seed made anything
  std::string traceNote;            // its subtitle's note: "; trained layer 1 of 2 (…)"
  std::uint64_t traceSerial = 0;    // ++ whenever `trace` is replaced (texture cache key)
  std::shared_ptr<const Model> model;  // what `trace` was computed from: the lessons need its weights
  // Set when `trace` is a model forward's record (a latent layer: `model` has its input and options, no W_q, W_k,
  // W_v): why the lessons that read those weights (readsLayerWeights) show no result.
  std::string rerunRefusal;
  std::vector<QuizQuestion> quiz;   // the quiz lesson's questions about `trace`
  LessonResults lessons;            // every lesson's result for `trace` (shell/compute_scheduler.cpp)

  bool hasTrace() const { return trace.stages.size() == static_cast<std::size_t>(kStageCount); }

  // One 2-D matrix of the trace (cached per trace: slices copy their labels).
  // nullptr when the indices are out of range.
  const Slice2D* slice(StageId stage, int batch, int head);
  // The colour range of one stage for one batch item over every head, so all heads share one
  // scale and can be compared by colour (cached per trace: it scans B·h·T² values).
  ColorRange stageRange(StageId stage, int batch);
  // Forget the caches; called whenever `trace` is replaced.
  void traceReplaced();
  // Called once at the start of every frame: slices of lazy stages (which own a copy, 64 MiB per
  // head at T = 4096) that the previous frame did not ask for are freed, so stepping through the
  // scaled and masked stages holds at most what is on screen. Pointers from slice() are valid until
  // the next call.
  void beginFrame();
  // Bytes held by slices that own their numbers (lazy stages); tests and `stats`.
  std::uint64_t ownedSliceBytes() const;

 private:
  struct CachedSlice {
    Slice2D slice;
    std::uint64_t lastFrame = 0;
  };
  std::map<std::tuple<int, int, int>, CachedSlice> sliceCache_;
  std::uint64_t frame_ = 0;
  std::map<std::pair<int, int>, ColorRange> rangeCache_;
};

struct CompareState;  // state/compare_state.hpp
struct ModelViewState;  // state/model_view_state.hpp
struct ExperimentsState;  // state/experiments_state.hpp

// The app's state in three parts: the document the user edits, the result on screen, and what
// the computing is doing (state/compute_status.hpp; written only by the compute scheduler).
struct AppState {
  Document doc;
  ShownResult shown;
  ComputeStatus compute;
  std::string actionError;          // an exception caught at a user action, shown until dismissed
  // The Compare tab's side B (an AppState of its own, computed beside this one); null until the
  // tab is first shown (the update step makes it: compareOf).
  std::shared_ptr<CompareState> compare;
  // The Model tab: every layer and head of the model folder in use (its own worker); null until
  // the Model or Predictions tab is first shown (the update step makes it: modelViewOf).
  std::shared_ptr<ModelViewState> modelView;
  // A workspace's Model tab probe ("model_view", checked) while modelView is not made yet: applied
  // when it is, and saved as it is until then.
  std::string modelViewBlock;
  // The Experiments tab: activation patching and direct logit attribution on the model folder in use (its own
  // job); null until the tab is first shown (the update step makes it: experimentsOf).
  std::shared_ptr<ExperimentsState> experiments;
  std::string experimentsBlock;  // a workspace's Experiments form ("experiments", checked) until the tab is made
};

// Zoom and pan of one heatmap view. zoom 1 = the whole matrix fits the view; pan: the top-left
// of the view, in cells. The workspace's type, so the view is saved as it is.
using HeatmapZoom = WorkspaceZoom;

struct ExportUi {
  std::string folder;       // default: ~/Pictures if it exists, else ~ (chosen at start)
  std::string fileName;     // proposed when the popup opens: "weights_b0_h1.png"
  int format = 0;           // 0 PNG, 1 SVG, 2 PDF, 3 HTML
  std::string message;      // "Saved /path" or the error
  bool messageIsError = false;
};

// The File › Open popup (state/open_file.hpp, panels/open_file_popup.cpp).
inline constexpr std::size_t kMaxRecent = 12;
// One row of the popup's folder list.
struct OpenEntry {
  std::string name;
  bool folder = false;
  bool model = false;  // a folder with a config.json: a Hugging Face model, opened on click
};
struct OpenUi {
  bool requestOpen = false;         // open the popup next frame (the button, a script)
  bool popupShown = false;          // the popup was drawn last frame: its listing is kept fresh
  std::string path;                 // the path field
  std::string folder;               // the folder to list: the last one used, else ~
  std::vector<std::string> recent;  // most recent first, at most kMaxRecent
  std::string recentFile;           // where `recent` is kept (config dir); "" = not kept
  // What the popup shows of the disk, made by refreshOpenFileListing in the update step (drawing
  // never touches the file system).
  std::string listedFor;                   // `folder` when it was listed
  std::string listedFolder;                // the folder listed (`folder`, else ~, else the cwd)
  std::vector<OpenEntry> entries;          // its sub-folders and openable files, folders first
  std::string listError;                   // why it could not be listed ("" = listed)
  std::vector<std::string> recentMissing;  // the recent files not there at the last look
  double listedAt = -1.0;                  // when (the update step's clock); < 0 = never
  // A file that needs a choice first: a .npy's role, a checkpoint's layer.
  std::string pendingPath;
  FileInfo pendingInfo;
  int role = 0, layer = 0;
  std::string message;              // the last error, shown in the popup
};

struct WorkspaceUi {
  std::string path;         // the workspace this window was opened from or last saved to ("" = none)
  std::string pathField;    // what the "Save workspace as" popup proposes and edits
  std::string message;      // "Saved /path" or the error
  bool messageIsError = false;
};

// What the user is looking at. Its WorkspaceView part (core/io/workspace.hpp: stage, batch,
// head, the open tab, both zooms, colours, the Learned tab's matrix, the play speed) is what a
// workspace saves, so saving and opening are one assignment (state/workspace_state.cpp).
struct ViewState : WorkspaceView {
  // WorkspaceView::tab is the main-area tab drawn last frame (layout.cpp sets it): the lesson's id
  // when the Lessons tab is open.
  std::string lesson = kLessonEntries.front().id;  // the lesson the Lessons tab shows (its id)
  // The trace shape (T_q, T_k, d_model) both zooms were set on; {0, 0, 0} until a trace is shown.
  // A trace of another shape fits both views again (1455 % of a T = 1024 matrix is a blur of a
  // few cells at T = 32). A workspace's zooms belong to the first trace computed after it was
  // applied: zoomAdoptAfterSerial holds the serial they wait for a trace beyond.
  std::array<int, 3> zoomShape{};
  std::optional<std::uint64_t> zoomAdoptAfterSerial;

  bool playing = false;               // playStagesPerSecond: WorkspaceView's
  double playAccumulator = 0.0;        // seconds since the last automatic step

  std::string selectTab;               // a main-area tab to bring to front (consumed once)
  ExportUi exportUi;
  OpenUi openUi;
  WorkspaceUi workspaceUi;
};

ColormapId effectiveColormap(const ViewState& view, StageId stage);
// The colour map of every probability picture that is not a stage of the trace (the Model tab's
// grid, the logit lens, the circuits' maps, the Train mode's attention): the user's choice, or the
// default for probabilities.
ColormapId probabilityColormap(const ViewState& view);
// The range the large view and the grid use for this stage.
ColorRange viewRange(AppState& state, const ViewState& view, StageId stage, int batch, int head);

}  // namespace mhascope::app

namespace mhascope::app {

// The file a preset name or path reads ("cat" → <assets>/presets/cat.json, "my.json" → itself),
// or "" when there is none. The suffixes the window adds to the name (" (edited)", " (command
// line)") are ignored.
std::string presetFileOf(std::string nameOrPath);
// Notes that the configuration was read from `nameOrPath`'s file (Document::presetFiles).
void notePresetRead(AppState& state, const std::string& nameOrPath);
// The preset box's " (edited)" follows the config, not the history of edits: keepNamedConfig (the
// compute update, every frame, and when a computed layer's files decide the config) takes the config
// a new name names; markEditedIfChanged (after an edit) adds the mark when the config differs from
// it and takes it away when it is the same again.
void keepNamedConfig(Document& doc, bool configDecided = false);
void markEditedIfChanged(Document& doc);

// "Reset to defaults": the default preset and a fresh view (stage, head, batch, colours, tab).
// False (with state.actionError set) when the default preset cannot be read.
bool resetToDefaults(AppState& state, ViewState& view);

// Called once a frame after the compute update: fits both heatmap views when the shown trace's
// shape differs from the one their zooms were set on (ViewState::zoomShape).
void fitZoomToNewShape(const AppState& state, ViewState& view);

// Stage navigation shared by the stepper's buttons, the keys and Play.
void goToStage(ViewState& view, StageId stage);
// false at either end (nothing changes). Skips the variants' stages the trace did not record (all
// of them when no trace is given).
bool stepStage(ViewState& view, int delta, const Trace* trace = nullptr);

}  // namespace mhascope::app
