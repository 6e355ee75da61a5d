// --bench-frames: whole frame times after a warm-up, and where the time goes (ImGui, GL draw,
// swap); printed as median, p95 and max.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mhascope::app {

class FrameBench {
 public:
  void addSplit(double uiMs, double glMs, double swapMs);
  void addFrame(double ms) { frames_.push_back(ms); }
  std::size_t frames() const { return frames_.size(); }
  // `what`: "all-heads grid of weights, T=512 h=16 d_model=256, 1600x1000, GL renderer: …"
  void print(const std::string& what, unsigned long long textureUploads) const;

 private:
  std::vector<double> frames_, ui_, gl_, swap_;
};

}  // namespace mhascope::app
