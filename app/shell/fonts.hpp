// The UI fonts and the size of everything: DejaVu Sans / Sans Mono (fonts-dejavu-core) with
// Latin, Greek, Cyrillic, punctuation and math glyphs, CJK merged in when such a font is
// installed, at the monitor's content scale — shrunk until the atlas fits the GPU's texture limit.
#pragma once

#include <imgui.h>

namespace mhascope::app {

class Fonts {
 public:
  // The unscaled style every scale starts from, so scale changes never compound.
  void setBaseStyle(const ImGuiStyle& style) { baseStyle_ = style; }
  // Rebuilds the atlas and the style at `scale`; `textureLimit` <= 0: no limit. Call outside a frame.
  void build(float scale, int textureLimit);
  float requestedScale() const { return requestedScale_; }  // what build() was asked for
  float scale() const { return scale_; }                    // maybe smaller, to fit the GPU
  ImFont* main() const { return main_; }
  ImFont* mono() const { return mono_; }    // formulas and pseudocode (or the default font)
  ImFont* title() const { return title_; }  // stage titles (or the default font)

 private:
  ImFont* main_ = nullptr;
  ImFont* mono_ = nullptr;
  ImFont* title_ = nullptr;
  ImVector<ImWchar> glyphRanges_;  // must outlive the font atlas build
  ImGuiStyle baseStyle_;
  float scale_ = 1.0f;
  float requestedScale_ = 1.0f;
};

}  // namespace mhascope::app
