#include "color/color_scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mhascope {
namespace {

std::string formatTick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

const char* colorScaleName(ColorScale s) {
  switch (s) {
    case ColorScale::Linear: return "linear";
    case ColorScale::Log: return "log";
    case ColorScale::PerRow: return "per row";
  }
  return "?";
}

ColorScale effectiveColorScale(ColorScale chosen, DataKind kind) {
  return kind == DataKind::Probability ? chosen : ColorScale::Linear;
}

float colorPosition(ColorScale s, ColorRange range, float v, float rowMax) {
  if (std::isnan(v) || v == -std::numeric_limits<float>::infinity()) return v;
  double t = 0.0;
  switch (s) {
    case ColorScale::Linear: {
      const double width = static_cast<double>(range.hi) - range.lo;
      t = width > 0 ? (static_cast<double>(v) - range.lo) / width : 0.5;
      break;
    }
    case ColorScale::Log: {
      const double hi = range.hi > 0 ? range.hi : 1.0;
      t = v > 0 ? (std::log10(static_cast<double>(v)) - std::log10(hi)) / kLogDecades + 1.0 : 0.0;
      break;
    }
    case ColorScale::PerRow:
      t = rowMax > 0 && std::isfinite(rowMax) ? static_cast<double>(v) / rowMax : 0.0;
      break;
  }
  if (std::isnan(t)) t = 0.0;  // +inf / +inf
  return static_cast<float>(std::clamp(t, 0.0, 1.0));
}

ColorbarTicks colorbarTicks(ColorScale s, ColorRange range) {
  switch (s) {
    case ColorScale::Log: {
      const double hi = range.hi > 0 ? range.hi : 1.0;
      return {formatTick(hi), formatTick(hi * std::pow(10.0, -kLogDecades / 2)),
              "≤ " + formatTick(hi * std::pow(10.0, -kLogDecades))};
    }
    case ColorScale::PerRow: return {"row max", "½", "0"};
    case ColorScale::Linear: break;
  }
  return {formatTick(range.hi), formatTick(0.5 * (static_cast<double>(range.lo) + range.hi)), formatTick(range.lo)};
}

std::string colorScaleLegend(ColorScale s, ColorRange range) {
  const ColorbarTicks t = colorbarTicks(s, range);
  switch (s) {
    case ColorScale::Log:
      return "colour scale: log10, " + t.bottom + " … " + t.top + " (" + formatTick(kLogDecades) + " decades)";
    case ColorScale::PerRow: return "colour scale: per row, each query row's largest weight at the top";
    case ColorScale::Linear: break;
  }
  return "colour scale: linear, " + t.bottom + " … " + t.top;
}

}  // namespace mhascope
