// The Compare tab's state: a second side, B, beside the model on screen (A). B is a whole
// AppState of its own — the document it is computed from (a changed copy of A's configuration,
// or a preset / workspace / checkpoint opened for it), its result and its compute status — so
// it is computed by a compute scheduler of its own exactly as A is (shell/compare_compute.cpp),
// off the UI thread when big. The maps show A's stage, batch item and head on both sides; the
// difference B − A and its words are made in core (attention/compare.hpp) and kept here per
// pair of traces, so drawing them is a pure function of the two results and the view.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "attention/compare.hpp"
#include "state/app_state.hpp"
#include "state/lesson_view.hpp"

namespace mhascope::app {

// Where B came from, for the tab's words.
enum class CompareSource { None, EditedCopy, File };

struct CompareState {
  AppState b;          // side B: document, result on screen, compute status
  ViewState bView;     // B's own view: what opening a file for B changes (its open popup's state)
  LessonView bLessons; // B's lesson choices (its scheduler computes the quick lessons too)
  CompareSource source = CompareSource::None;
  std::string fileName;     // the file B was opened from ("step200.safetensors layer 0")
  // The form "compare with a file": its path field, a checkpoint's layer, the last error.
  std::string pathField;
  int layer = 0;
  std::string message;
  // The picture A | B | B − A written from the tab: its path field and the last message.
  std::string exportPath;
  std::string exportMessage;

  bool active() const { return source != CompareSource::None; }

  // B − A of one slice pair, made once per (trace A, trace B, stage, batch, head) and kept;
  // null when either side has no such slice. `blocker`: why there is no difference ("" = there is).
  struct Shown {
    const Slice2D* a = nullptr;
    const Slice2D* b = nullptr;
    std::string blocker;                        // differenceBlocker, or the slice error
    std::optional<SliceDifference> difference;  // set when the shapes agree
    Slice2D differenceSlice;                    // points into *difference
    std::string stageWords;                     // the largest |B − A| over every head, in words
  };
  const Shown& shown(AppState& a, StageId stage, int batch, int headA, int headB);
  void forgetShown() { shownKey_.reset(); }  // B closed: nothing kept for its old trace

 private:
  using Key = std::tuple<std::uint64_t, std::uint64_t, int, int, int, int>;
  std::optional<Key> shownKey_;
  Shown shown_;
};

// B becomes a copy of A's document (configuration, files, a trained layer), ready to be changed.
void compareWithCopyOfA(CompareState& c, const AppState& a);
// B is opened from a file (preset, workspace or checkpoint, with `layer` for a checkpoint) through
// the window's own open path (state/open_file.hpp). False with c.message when it cannot be.
bool compareWithFile(CompareState& c, const AppState& a, const std::string& path, int layer);
// B's configuration changed by the form: recomputed by its scheduler.
void compareEdited(CompareState& c);
// No side B any more (its trace freed).
void closeCompare(CompareState& c);

// The Compare state of a window, made on first use.
CompareState& compareOf(AppState& a);

}  // namespace mhascope::app
