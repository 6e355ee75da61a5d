// What a click asks of the app beyond an edit of the view state: write a file (every Export…,
// Save workspace, Save checkpoint), start or step a training run, load a checkpoint, open a trained
// layer in the pipeline. The click files the request here; the app's update step performs every
// filed request, in order, before the next frame draws. So drawing code never writes a file or
// starts work, and what a click asked for is on screen from the next frame on.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attention/trace.hpp"
#include "export/compare_figure.hpp"
#include "export/export.hpp"
#include "export/html_view.hpp"
#include "io/workspace.hpp"
#include "util/result.hpp"

namespace mhascope::app {

class Requests {
 public:
  // A request owns what it reads (copies of this frame's slices, paths) or references state that
  // outlives the frame (AppState, ViewState, LessonView, the Train mode) — never the UiContext.
  void file(std::function<void()> request) { queue_.push_back(std::move(request)); }
  // Performs and forgets every filed request, in the order filed (those a request files go to the
  // next round). Each catches what it can throw and says it where its click was.
  void performAll() {
    std::vector<std::function<void()>> now = std::move(queue_);
    queue_.clear();
    for (auto& r : now) r();
  }
  bool empty() const { return queue_.empty(); }

 private:
  std::vector<std::function<void()>> queue_;
};

// What a write the user asked for says: "Saved <path>", or the error.
void saySaved(const Status& st, const std::string& path, std::string& message, bool& isError);

// A file the user asked for, written new: a path that exists (a file, a folder, a link) is refused
// and nothing is replaced; what `write` throws (bad_alloc, filesystem_error) is caught. Says
// "Saved <path>" or the error in `message`/`isError`. `verb` names the refusal ("export", "save").
void writeNewFile(const std::string& path, const std::function<Status()>& write, std::string& message, bool& isError,
                  const std::string& verb = "export");

// A picture an Export… writes: one slice, or every head of a stage as one grid (core/export).
struct ExportPicture {
  std::vector<Slice2D> slices;  // made to own their numbers and flags when filed
  bool grid = false;
  ExportOptions options;
  std::string emptyReason;      // set: nothing to export, and why (said instead of writing)
  std::optional<Workspace> workspace;  // what an HTML page carries (its files recorded when written)
  std::shared_ptr<const HtmlExport> page;  // set: this page as made (a view of its own), not the slices
};
struct ExportUi;  // state/app_state.hpp

// Files the write of `picture` to `path` (format from the extension), new, with the outcome said
// in `ui`'s message. The slices are copied to own their numbers: the trace they point into may be
// replaced before the write.
void fileExport(Requests& requests, ExportUi& ui, std::string path, ExportPicture picture);

// The same for the Compare tab's A | B | B − A picture: its slices and difference are copied when
// filed; "Saved <path>" or the error lands in `message`.
void fileComparison(Requests& requests, std::string& message, std::string path, const ComparisonPicture& picture);

}  // namespace mhascope::app
