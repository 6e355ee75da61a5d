// The comparison picture (compare_figure.hpp): three heatmap figures built as any export builds
// them, painted side by side on one surface.
#include "export/compare_figure.hpp"

#include <algorithm>
#include <new>
#include <vector>

#include "export/figure.hpp"
#include "export/surface.hpp"

namespace mhascope {

using namespace export_detail;

namespace {

ColorRange sidesRange(const ComparisonPicture& p) {
  if (p.range) return *p.range;
  const DataKind kind = stageInfo(p.a->stage).kind;
  const auto cells = [](const Slice2D& s) { return static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols); };
  return unionRange(rangeFor(kind, p.a->data, cells(*p.a)), rangeFor(kind, p.b->data, cells(*p.b)));
}

}  // namespace

Result<std::string> renderComparison(const ComparisonPicture& p, ImageFormat format) {
  if (!p.a || !p.b) return makeError("a comparison needs both sides");
  try {
    Fonts fonts;
    SurfacePtr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
    ContextPtr measure(cairo_create(scratch.get()));
    if (auto st = cairoOk(cairo_status(measure.get()), "cannot set up text measurement"); !st) return st.error();

    ExportOptions sides;
    sides.colormap = p.colormap ? *p.colormap : defaultColormap(stageInfo(p.a->stage).kind);
    sides.range = sidesRange(p);
    std::vector<Figure> figures;
    auto add = [&](const Slice2D& s, ExportOptions o, const std::string& title, const std::string& subtitle) -> Status {
      o.title = title;
      o.subtitle = subtitle;
      auto fig = buildFigure({&s}, false, o, fonts, measure.get());
      if (!fig) return fig.error();
      figures.push_back(std::move(*fig));
      return Ok{};
    };
    if (auto st = add(*p.a, sides, p.titleA, p.subtitleA); !st) return st.error();
    const std::string subtitleB =
        p.difference || p.noDifferenceReason.empty() ? p.subtitleB : p.subtitleB + "\nno difference map: " + p.noDifferenceReason;
    if (auto st = add(*p.b, sides, p.titleB, subtitleB); !st) return st.error();
    Slice2D diff;
    if (p.difference) {
      diff = differenceSlice(*p.difference, *p.a);
      ExportOptions d;
      d.colormap = ColormapId::Diverging;  // signed, one scale centred on 0
      d.range = ColorRange{p.difference->lo, p.difference->hi};
      if (auto st = add(diff, d, p.differenceTitle, p.differenceSubtitle); !st) return st.error();
    }

    int width = 0, height = 0;
    for (const Figure& f : figures) {
      width += f.layout.width;
      height = std::max(height, f.layout.height);
    }
    Sink sink;
    const std::string docTitle = p.titleA + " | " + p.titleB;
    auto surface = openSurface(format, width, height, sink, docTitle, p.seeAs);
    if (!surface) return surface.error();
    {
      ContextPtr cr(cairo_create(surface->get()));
      setInk(cr.get(), 1, 1, 1);
      cairo_paint(cr.get());
      double x = 0;
      for (const Figure& f : figures) {
        cairo_save(cr.get());
        cairo_translate(cr.get(), x, 0);
        // drawFigure paints its background over everything it may: only its own rectangle.
        cairo_rectangle(cr.get(), 0, 0, f.layout.width, f.layout.height);
        cairo_clip(cr.get());
        if (auto st = drawFigure(cr.get(), fonts, f); !st) return st.error();
        cairo_restore(cr.get());
        x += f.layout.width;
      }
    }
    if (auto st = closeSurface(surface->get(), format, sink, docTitle); !st) return st.error();
    return std::move(sink.bytes);
  } catch (const std::bad_alloc&) {
    return makeError("out of memory while rendering the comparison");
  }
}

Status exportComparison(const std::string& path, const ComparisonPicture& picture) {
  return renderAndWrite(path, [&](ImageFormat f) { return renderComparison(picture, f); });
}

}  // namespace mhascope
