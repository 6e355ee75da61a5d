#include "state/requests.hpp"

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include "export/html_view.hpp"
#include "io/file_io.hpp"
#include "io/workspace.hpp"
#include "state/app_state.hpp"

namespace mhascope::app {

void writeNewFile(const std::string& path, const std::function<Status()>& write, std::string& message, bool& isError,
                  const std::string& verb) {
  Status st = refuseToReplace(path, verb);
  if (st) {
    try {
      st = write();
    } catch (const std::exception& e) {
      st = makeError("cannot " + verb + " " + path + ": " + e.what());
    }
  }
  saySaved(st, path, message, isError);
}

void saySaved(const Status& st, const std::string& path, std::string& message, bool& isError) {
  isError = !st.ok();
  message = st.ok() ? "Saved " + path : st.error().message;
}

namespace {

// The slice with its own copy of its numbers and blocked flags.
Slice2D owning(Slice2D s) {
  const std::size_t n = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols);
  if (s.data && !s.owned) {
    auto values = std::make_shared<const std::vector<float>>(s.data, s.data + n);
    s.data = values->data();
    s.owned = std::move(values);
  }
  if (s.blockedCells && !s.ownBlocked) {
    auto flags = std::make_shared<const std::vector<std::uint8_t>>(s.blockedCells, s.blockedCells + n);
    s.blockedCells = flags->data();
    s.ownBlocked = std::move(flags);
  }
  return s;
}

// The page, with the window's workspace (its files recorded relative to the page).
Status exportPage(const std::string& path, const ExportPicture& picture) {
  HtmlExport page;
  if (picture.page) {
    page = *picture.page;
  } else {
    page.slices = picture.slices;
    page.grid = picture.grid;
    page.options = picture.options;
  }
  if (picture.workspace) {
    Workspace ws = *picture.workspace;
    auto records = recordWorkspaceFiles(ws.files, path);
    if (!records) return records.error();
    ws.fileRecords = std::move(*records);
    page.workspaceJson = workspaceToJson(ws);
  }
  return exportHtml(path, page);
}

}  // namespace

void fileExport(Requests& requests, ExportUi& ui, std::string path, ExportPicture picture) {
  for (Slice2D& s : picture.slices) s = owning(std::move(s));
  requests.file([&ui, path = std::move(path), picture = std::move(picture)] {
    if (!picture.emptyReason.empty() || (picture.slices.empty() && !picture.page)) {
      ui.messageIsError = true;
      ui.message = "cannot export " + path + ": " + (picture.emptyReason.empty() ? "nothing to export" : picture.emptyReason);
      return;
    }
    writeNewFile(path, [&]() -> Status {
      if (isHtmlPath(path)) return exportPage(path, picture);
      if (picture.page) return makeError("cannot export " + path + ": this view is written as one page: name it .html");
      return picture.grid ? exportHeadGrid(path, picture.slices, picture.options)
                          : exportHeatmap(path, picture.slices.front(), picture.options);
    }, ui.message, ui.messageIsError);
  });
}

void fileComparison(Requests& requests, std::string& message, std::string path, const ComparisonPicture& picture) {
  // What the picture points at, owned by the request.
  struct Held {
    ComparisonPicture picture;
    Slice2D a, b;
    std::optional<SliceDifference> difference;
  };
  auto held = std::make_shared<Held>();
  held->picture = picture;
  if (picture.a) held->a = owning(*picture.a);
  if (picture.b) held->b = owning(*picture.b);
  if (picture.difference) held->difference = *picture.difference;
  held->picture.a = picture.a ? &held->a : nullptr;
  held->picture.b = picture.b ? &held->b : nullptr;
  held->picture.difference = held->difference ? &*held->difference : nullptr;
  requests.file([&message, path = std::move(path), held] {
    bool isError = false;
    writeNewFile(path, [&] { return exportComparison(path, held->picture); }, message, isError);
  });
}

}  // namespace mhascope::app
