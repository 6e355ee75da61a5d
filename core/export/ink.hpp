// The exporter's one colour path: every colour an exported picture holds — fills, lines, text,
// the colour bar's pixels — is set through setInk or painted through inkImage, which apply the
// picture's "see as" preview (color/see_as.hpp). The preview rides on the surface (openSurface
// attaches it), so drawing code passes nothing extra and a new part of a picture cannot forget
// it: tests/core/purity_test.cpp fails on any other cairo colour call in core/export/.
#pragma once

#include <cairo.h>

#include "color/colormap.hpp"
#include "color/see_as.hpp"

namespace mhascope::export_detail {

// Attaches the preview to a surface (no preview: Normal).
void attachSeeAs(cairo_surface_t* surface, SeeAs kind);
// The preview of the surface `cr` draws on.
SeeAs seeAsOf(cairo_t* cr);

// The source colour, sRGB in [0, 1] or 8-bit, as the picture's reader sees it.
void setInk(cairo_t* cr, double r, double g, double b);
void setInk(cairo_t* cr, RGBA8 c);
// An RGB24 image surface's pixels as the reader sees them (in place), for use as a source.
void inkImage(cairo_t* cr, cairo_surface_t* image);

}  // namespace mhascope::export_detail
