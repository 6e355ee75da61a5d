// Chart axes: ranges, ticks, positions, tick text.
#include "export/axis_ticks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mhascope {

AxisRange axisRange(const std::vector<double>& values, bool logScale, bool fromZero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v) || (logScale && v <= 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (logScale) {
    if (!(lo <= hi)) return {1e-3, 10};
    AxisRange r{std::pow(10.0, std::floor(std::log10(lo))), std::pow(10.0, std::ceil(std::log10(hi)))};
    if (r.hi <= r.lo) r.hi = r.lo * 10;
    return r;
  }
  if (!(lo <= hi)) return {0, 1};
  if (fromZero) lo = std::min(lo, 0.0);
  if (hi == lo) hi = lo + 1;
  if (!fromZero) {
    const double pad = 0.05 * (hi - lo);
    lo -= pad;
    hi += pad;
  }
  return {lo, hi};
}

std::vector<double> axisTicks(AxisRange r, bool logScale, int target) {
  std::vector<double> out;
  if (!(r.hi > r.lo)) return out;
  if (logScale) {
    const int a = static_cast<int>(std::ceil(std::log10(r.lo) - 1e-9)), b = static_cast<int>(std::floor(std::log10(r.hi) + 1e-9));
    for (int k = a; k <= b; ++k) out.push_back(std::pow(10.0, k));
    if (out.size() < 3) {
      std::vector<double> more;
      for (int k = a - 1; k <= b; ++k) {
        for (double m : {1.0, 2.0, 5.0}) {
          const double v = m * std::pow(10.0, k);
          if (v >= r.lo * (1 - 1e-9) && v <= r.hi * (1 + 1e-9)) more.push_back(v);
        }
      }
      out = more;
    }
    return out;
  }
  const double raw = (r.hi - r.lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(r.lo / step - 1e-9) * step; v <= r.hi + step * 1e-9; v += step) {
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

double axisFraction(AxisRange r, bool logScale, double v) {
  if (logScale) {
    if (!(v > 0)) return 0;
    return (std::log10(v) - std::log10(r.lo)) / (std::log10(r.hi) - std::log10(r.lo));
  }
  return (v - r.lo) / (r.hi - r.lo);
}

std::string tickLabel(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (v == 0) return "0";
  if (a >= 1e-2 && a < 1e5) {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.0e", v);
    // "1e-03" → "1e-3"
    std::string s = buf;
    const auto e = s.find('e');
    if (e != std::string::npos) {
      std::string mant = s.substr(0, e), exp = s.substr(e + 1);
      const bool neg = !exp.empty() && exp[0] == '-';
      if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) exp.erase(0, 1);
      while (exp.size() > 1 && exp[0] == '0') exp.erase(0, 1);
      return mant + "e" + (neg ? "-" : "") + exp;
    }
    return s;
  }
  return buf;
}

}  // namespace mhascope
