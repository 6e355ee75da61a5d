// Tick values for a chart axis, shared by the window's training curves and the exported ones, so
// both show the same numbers. Linear: "nice" steps (1, 2, 5 × 10^k) covering [lo, hi]. Log: the
// powers of ten inside the range (plus 2× and 5× when there are few of them).
#pragma once

#include <string>
#include <vector>

namespace mhascope {

struct AxisRange {
  double lo = 0, hi = 1;  // for a log axis both > 0
};

// The range a chart should show for these values: linear from min(0, min) when `fromZero`, else
// padded by 5 %; log from the decade-rounded bounds of the positive values (1e-3 .. 10 when none).
AxisRange axisRange(const std::vector<double>& values, bool logScale, bool fromZero);
// Ticks inside [lo, hi], about `target` of them for a linear axis.
std::vector<double> axisTicks(AxisRange r, bool logScale, int target = 5);
// Where v falls on the axis, 0 at lo and 1 at hi (log axes: in log10).
double axisFraction(AxisRange r, bool logScale, double v);
// A tick's text: "0.5", "1500", "1e-3" (locale-independent, short).
std::string tickLabel(double v);

}  // namespace mhascope
