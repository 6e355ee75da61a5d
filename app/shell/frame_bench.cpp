#include "shell/frame_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mhascope::app {

void FrameBench::addSplit(double uiMs, double glMs, double swapMs) {
  ui_.push_back(uiMs);
  gl_.push_back(glMs);
  swap_.push_back(swapMs);
}

void FrameBench::print(const std::string& what, unsigned long long textureUploads) const {
  if (frames_.empty()) return;
  std::vector<double> t = frames_;
  std::sort(t.begin(), t.end());
  const double median = t[t.size() / 2];
  const double p95 = t[std::min(t.size() - 1, static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(t.size()))) - 1)];
  std::printf("bench-frames: %zu frames, %s\n", t.size(), what.c_str());
  std::printf("frame time: median %.2f ms, p95 %.2f ms, max %.2f ms (target p95 <= 16 ms)\n", median, p95, t.back());
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  std::printf("median split: ImGui %.2f ms, GL draw %.2f ms, swap %.2f ms; %llu texture uploads in all\n", med(ui_),
              med(gl_), med(swap_), textureUploads);
}

}  // namespace mhascope::app
