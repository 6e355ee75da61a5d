#include "export/html_view.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "color/colormap.hpp"
#include "color/downsample.hpp"
#include "color/see_as.hpp"
#include "io/file_io.hpp"
#include "io/workspace.hpp"
#include "export/html_view_page.hpp"
#include "util/format.hpp"
#include "util/utf8.hpp"

namespace mhascope {

namespace {

using nlohmann::json;


// JSON text safe inside a <script> element: '<' appears in JSON only inside strings, where
// \u003c means the same character, so no "</script>" or "<!--" can end or bend the element.
std::string scriptSafe(std::string_view jsonText) {
  std::string out;
  out.reserve(jsonText.size());
  for (char c : jsonText) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string hex2(int v) {
  char b[3];
  std::snprintf(b, sizeof b, "%02x", v);
  return b;
}

DataKind pageKindOf(const Slice2D& s) { return s.weight ? DataKind::Signed : stageInfo(s.stage).kind; }

// One head's cells as the page draws them: two characters each, the table index in hex, "--" for
// a blocked cell (the mask's, or −inf), "nn" for NaN; and each cell's number as the window writes it.
struct HeadCells {
  std::string index;
  json values = json::array();
};

HeadCells cellsOf(const Slice2D& s, const FigureLayout& L) {
  HeadCells h;
  const std::size_t n = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols);
  h.index.reserve(2 * n);
  for (int r = 0; r < s.rows; ++r) {
    for (int c = 0; c < s.cols; ++c) {
      const float v = s.at(r, c);
      const bool blocked = s.isBlockedCell(r, c) || v == -INFINITY;
      h.index += blocked ? "--" : std::isnan(v) ? "nn" : hex2(tableIndex(L.range, v));
      h.values.push_back(blocked ? std::string() : formatCellValue(v));
    }
  }
  return h;
}

// Past the page's bound: ky × kx blocks by the window's rule, each shown as its chosen value.
HeadCells blocksOf(const Slice2D& s, const FigureLayout& L, int k, BlockPositions& scratch) {
  downsampleToPositions(s.data, s.blockedCells, s.rows, s.cols, k, k, ColorScale::Linear, L.range,
                        downsampleRuleFor(pageKindOf(s)), scratch);
  const double lo = std::min(L.range.lo, L.range.hi), hi = std::max(L.range.lo, L.range.hi);
  HeadCells h;
  h.index.reserve(scratch.values.size() * 2);
  for (float p : scratch.values) {
    if (p == -INFINITY) {
      h.index += "--";
      h.values.push_back("");
    } else if (std::isnan(p)) {
      h.index += "nn";
      h.values.push_back("NaN");
    } else {
      const float v = static_cast<float>(lo + static_cast<double>(p) * (hi - lo));
      h.index += hex2(tableIndex(L.range, v));
      h.values.push_back(formatCellValue(v));
    }
  }
  return h;
}

std::string rgbHex(RGBA8 c) { return hex2(c.r) + hex2(c.g) + hex2(c.b); }

std::vector<std::string> labelsOf(const std::vector<std::string>& labels, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(labels.empty() ? std::to_string(i) : replaceInvalidUtf8(labels[static_cast<std::size_t>(i)]));
  }
  return out;
}

}  // namespace

bool isHtmlPath(const std::string& path) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto ends = [&](std::string_view e) { return lower.size() >= e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0; };
  return ends(".html") || ends(".htm");
}

Result<std::string> renderHtml(const HtmlExport& view) {
  const bool timeline = !view.frames.empty();
  const std::vector<Slice2D>& given = timeline ? view.frames.front().slices : view.slices;
  if (given.empty()) return makeError("nothing to export");
  // The picture's own checks and choices (colormap, one range over every head).
  auto layout = view.grid ? layoutHeadGrid(given, view.options) : layoutHeatmap(given.front(), view.options);
  if (!layout) return layout.error();
  const FigureLayout& L = *layout;
  const std::vector<Slice2D>& heads = view.grid ? given : std::vector<Slice2D>{given.front()};
  const Slice2D& first = heads.front();
  const std::size_t perFrame = heads.size() * static_cast<std::size_t>(first.rows) * static_cast<std::size_t>(first.cols);
  // A timeline keeps whole frames, every `stride`-th (and the last); a single view downsamples its heads.
  std::vector<std::size_t> kept;
  std::string framesNote;
  if (timeline) {
    for (const HtmlFrame& f : view.frames) {
      if (f.slices.size() != given.size()) return makeError("a timeline's frames hold different numbers of heads");
      for (const Slice2D& s : f.slices) {
        if (s.rows != first.rows || s.cols != first.cols) return makeError("a timeline's frames hold heads of other shapes");
      }
    }
    const std::size_t n = view.frames.size(), fit = std::max<std::size_t>(1, kMaxHtmlCells / std::max<std::size_t>(1, perFrame));
    const std::size_t stride = (n + fit - 1) / fit;
    for (std::size_t i = 0; i < n; i += stride) kept.push_back(i);
    if (kept.back() != n - 1) kept.push_back(n - 1);
    if (stride > 1) {
      framesNote = std::to_string(kept.size()) + " of the run's " + std::to_string(n) + " pictures of attention (every " +
                   std::to_string(stride) + "th, and the last), so the page stays under " + std::to_string(kMaxHtmlCells) +
                   " cells; the curves keep every evaluation.";
    }
  }
  int k = 1;
  while (!timeline && perFrame / (static_cast<std::size_t>(k) * static_cast<std::size_t>(k)) > kMaxHtmlCells) ++k;

  json d;
  // Every colour as the picture's: through the reader's "see as" preview.
  const SeeAs seeAs = view.options.seeAs;
  auto ink = [seeAs](RGBA8 c) { return rgbHex(seeAsColor(seeAs, c)); };
  d["lut"] = [&] {
    std::string s;
    for (int i = 0; i < kColormapEntries; ++i) s += ink(tableColor(L.colormap, i));
    return s;
  }();
  d["blocked"] = ink(blockedColor(L.colormap));
  d["blockedMark"] = ink(blockedMarkColor());
  d["nan"] = ink(nanColor());
  d["nanMark"] = ink(nanMarkColor());
  d["block"] = k;
  BlockPositions scratch;
  auto headsJson = [&](const std::vector<Slice2D>& slices, const std::vector<std::string>& notes) {
    json hs = json::array();
    for (std::size_t i = 0; i < (view.grid ? slices.size() : 1); ++i) {
      const Slice2D& s = slices[i];
      HeadCells c = k == 1 ? cellsOf(s, L) : blocksOf(s, L, k, scratch);
      const int gridHeads = view.grid ? static_cast<int>(slices.size()) : 0;
      std::string name = i < view.names.size() && !view.names[i].empty() ? view.names[i]
                         : s.head >= 0                                  ? "head " + std::to_string(s.head)
                                                                        : nameSlice(s, gridHeads).title;
      const std::string note = i < notes.size() ? notes[i] : std::string();
      hs.push_back({{"name", name}, {"note", note}, {"index", std::move(c.index)}, {"values", std::move(c.values)}});
    }
    return hs;
  };
  if (timeline) {
    json frames = json::array();
    for (std::size_t i : kept) {
      const HtmlFrame& f = view.frames[i];
      frames.push_back({{"step", f.step}, {"heads", headsJson(f.slices, f.notes)}});
    }
    d["heads"] = frames.front()["heads"];
    d["frames"] = std::move(frames);
    json curves = json::array();
    for (const HtmlCurve& c : view.curves) {
      json ys = json::array();
      for (double v : c.values) ys.push_back(std::isfinite(v) ? json(v) : json(nullptr));
      curves.push_back({{"panel", c.panel}, {"name", c.name}, {"steps", c.steps}, {"values", std::move(ys)}});
    }
    d["curves"] = std::move(curves);
  } else {
    d["heads"] = headsJson(view.slices, view.notes);
    d["frames"] = json::array();
    d["curves"] = json::array();
  }
  const int rows = k == 1 ? first.rows : (first.rows + k - 1) / k;
  const int cols = k == 1 ? first.cols : (first.cols + k - 1) / k;
  auto thin = [k](std::vector<std::string> labels) {
    if (k == 1) return labels;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < labels.size(); i += static_cast<std::size_t>(k)) out.push_back(labels[i]);
    return out;
  };
  d["rows"] = rows;
  d["cols"] = cols;
  d["rowLabels"] = thin(labelsOf(first.rowLabels, first.rows));
  d["colLabels"] = thin(labelsOf(first.colLabels, first.cols));
  d["rowAxis"] = first.rowAxis.empty() ? "row" : first.rowAxis;
  d["colAxis"] = first.colAxis.empty() ? "column" : first.colAxis;
  d["labelWidth"] = 110;
  d["hint"] = "Point at a cell for its value; click a head in the grid to show it large.";
  d["gridColumns"] = view.gridColumns;
  d["rowHeadings"] = view.rowHeadings;

  const std::string title = view.options.title.empty()
                                ? nameSlice(first, view.grid ? static_cast<int>(heads.size()) : 0).title
                                : replaceInvalidUtf8(view.options.title);
  const std::string formula = first.weight ? weightMeaning(*first.weight) : stageInfo(first.stage).formula;
  // The head view: lines from queries to keys, for attention weights of the sequence's own tokens.
  const bool headView = k == 1 && !first.weight && first.stage == StageId::Weights && first.rowKind == AxisKind::QueryTokens &&
                        first.colKind == AxisKind::KeyTokens;

  std::string p;
  p += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  p += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'\">\n";
  p += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  p += "<meta name=\"generator\" content=\"mhascope\">\n";
  p += "<title>" + escapeMarkup(title) + "</title>\n<style>" + export_detail::kHtmlViewStyle + "</style>\n</head>\n<body>\n";
  p += "<h1>" + escapeMarkup(title) + "</h1>\n";
  if (!view.options.subtitle.empty()) p += "<p class=\"sub\">" + escapeMarkup(replaceInvalidUtf8(view.options.subtitle)) + "</p>\n";
  p += "<p class=\"sub\">" + escapeMarkup(formula) + "</p>\n";
  if (timeline) {
    p += "<div class=\"timeline\"><label>step <input id=\"step\" type=\"range\" min=\"0\" max=\"" +
         std::to_string(kept.size() - 1) + "\" value=\"0\" step=\"1\"></label> <span id=\"step-label\"></span>"
         " <button id=\"play\" type=\"button\">Play</button></div>\n<div id=\"curves\"></div>\n";
    if (!framesNote.empty()) p += "<p class=\"note\">" + escapeMarkup(framesNote) + "</p>\n";
  }
  if (view.grid) p += "<div id=\"grid\"></div>\n";
  p += "<div class=\"row\">\n<div id=\"main-box\"><h2 id=\"main-title\" style=\"font-size:16px\"></h2>"
       "<p id=\"main-note\" class=\"note\"></p>"
       "<canvas id=\"main\"></canvas>\n";
  p += "<p id=\"readout\"></p>\n";
  char lohi[96];
  std::snprintf(lohi, sizeof lohi, "%s</span><span id=\"bar\"></span><span>%s", formatCellValue(L.range.lo).c_str(),
                formatCellValue(L.range.hi).c_str());
  p += std::string("<div class=\"bar\"><span>") + lohi + "</span></div>\n";
  p += "<p class=\"note\"><span class=\"swatch\" style=\"background:#" + ink(blockedColor(L.colormap)) +
       "\"></span> blocked by the mask (a cross) &nbsp; <span class=\"swatch\" style=\"background:#" + ink(nanColor()) +
       "\"></span> NaN (a dark dot)</p>\n";
  if (!view.sourceNote.empty()) p += "<p class=\"note\">" + escapeMarkup(view.sourceNote) + "</p>\n";
  if (k > 1) {
    p += "<p class=\"note\">Each cell shows a block of " + std::to_string(k) + " × " + std::to_string(k) +
         " cells by its " + downsampleRuleName(downsampleRuleFor(pageKindOf(first))) + " (the window's rule), so the page stays under " +
         std::to_string(kMaxHtmlCells) + " cells; the window and the PNG export show every cell.</p>\n";
  }
  p += "</div>\n";
  if (headView) {
    p += "<div><h2 style=\"font-size:16px\">Head view</h2><p class=\"note\">Each query (left) to each key (right); "
         "a line's opacity is the weight. Point at a query for its lines alone; click to keep it.</p>"
         "<div id=\"toggles\"></div><svg id=\"headview\"></svg></div>\n";
  }
  p += "</div>\n";
  p += "<p class=\"note\">Written by mhascope; this file makes no request to any network. ";
  if (!view.workspaceJson.empty()) p += "Open it with <code>mhascope --workspace FILE</code> to see the same view in the window.";
  p += "</p>\n";
  p += "<script type=\"application/json\" id=\"mhascope-data\">" + scriptSafe(d.dump()) + "</script>\n";
  if (!view.workspaceJson.empty()) {
    p += std::string(kHtmlWorkspaceOpen) + scriptSafe(view.workspaceJson) + "</script>" + "\n";
  }
  p += std::string("<script>") + export_detail::kHtmlViewScript + "</script>\n</body>\n</html>\n";
  return p;
}

Status exportHtml(const std::string& path, const HtmlExport& view) {
  auto bytes = renderHtml(view);
  if (!bytes) return makeError("cannot export '" + path + "': " + bytes.error().message);
  return writeFileAtomic(path, *bytes);
}

}  // namespace mhascope
