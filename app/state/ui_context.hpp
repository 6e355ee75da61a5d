// What every panel and widget gets: the state to read and edit, the texture cache, the fonts,
// and the probes (where named widgets are on screen, for scripted-input tests).
#pragma once

#include <imgui.h>

#include <map>
#include <string>
#include <vector>

#include "state/app_state.hpp"
#include "state/pipeline_session.hpp"
#include "state/requests.hpp"
#include "render/texture_cache.hpp"

namespace mhascope::app {

struct ItemRect {
  ImVec2 min, max;
};

// Screen rectangles of named widgets, refreshed every frame; the input script clicks them by
// name ("click next"), so tests drive the real widgets without hard-coding pixel positions.
class UiProbes {
 public:
  void recordLastItem(const std::string& name) { rects_[name] = {ImGui::GetItemRectMin(), ImGui::GetItemRectMax()}; }
  // A labelled widget (slider, combo): only its frame, without the label on its right, so a
  // fraction across it is a fraction of the slider's range.
  void recordLastFrame(const std::string& name) {
    const ImVec2 min = ImGui::GetItemRectMin();
    rects_[name] = {min, ImVec2(min.x + ImGui::CalcItemWidth(), ImGui::GetItemRectMax().y)};
  }
  void recordRect(const std::string& name, ImVec2 min, ImVec2 max) { rects_[name] = {min, max}; }
  // What a widget says on this frame ("play" → "▶ Play"), for tests of what is on screen.
  void recordLabel(const std::string& name, const std::string& text) { labels_[name] = text; }
  const std::map<std::string, std::string>& labels() const { return labels_; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(rects_.size());
    for (const auto& [name, rect] : rects_) out.push_back(name);
    return out;
  }
  const ItemRect* find(const std::string& name) const {
    auto it = rects_.find(name);
    return it == rects_.end() ? nullptr : &it->second;
  }
  void clear() {
    rects_.clear();
    labels_.clear();
  }

 private:
  std::map<std::string, ItemRect> rects_;
  std::map<std::string, std::string> labels_;
};


struct TrainLab;     // train_lab/lab_state.hpp
struct CircuitsTab;  // circuits/circuits_view.hpp

struct UiContext {
  AppState& state;
  ViewState& view;
  TextureCache& textures;
  UiProbes& probes;
  LessonView& lessons;   // the lesson tabs' choices (their results are state.shown.lessons)
  Requests& requests;    // what a click asks beyond a view edit, performed by the update step
  ImFont* monoFont = nullptr;   // DejaVu Sans Mono for formulas and pseudocode (or the default)
  ImFont* titleFont = nullptr;  // a larger DejaVu Sans for stage titles (or the default)
  TrainLab* train = nullptr;    // the Train mode, whose panels draw it (null: no Train mode here)
  CircuitsTab* circuits = nullptr;  // the pipeline's Circuits tab (null: none here)
};

// The context one frame's panels draw with, over a window's pipeline session.
inline UiContext uiContext(PipelineSession& s, TextureCache& textures, UiProbes& probes, ImFont* monoFont = nullptr,
                           ImFont* titleFont = nullptr) {
  return UiContext{s.state, s.view, textures, probes, s.lessons, s.requests, monoFont, titleFont};
}

// "B=1  T_q=9  T_k=9  d_model=16  h=4  d_k=4  mask=causal  scale=sqrt-dk  seed=42"
std::string configLine(const AppState& state);

// True when a trace exists to draw; otherwise draws why not (computing, or an invalid
// configuration). Every panel that shows the trace starts with it.
bool traceReady(UiContext& ctx);

}  // namespace mhascope::app
