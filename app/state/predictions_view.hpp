// What the user looks at in the Predictions tab (panels/predictions_panel.cpp): the position
// picked, the lens column under the mouse, what the lens is coloured by, its column width. Plain
// view state: the numbers themselves are the model view's result (state/model_view_state.hpp).
#pragma once

namespace mhascope::app {

struct PredictionsView {
  int selected = -1;            // the position clicked in the list or the lens (-1: none)
  int lensHover = -1;           // the lens column under the mouse last frame (-1: none)
  bool colourByFinal = false;   // the lens coloured by p(the model's final top-1), not p(the layer's own top-1)
  float lensCellEm = 4.5f;      // a lens column's width in font units (the token fits from ~2.5)
  bool scrollListToSelected = false;  // a lens click brings its row into the list next frame
};

inline constexpr float kLensCellMinEm = 0.5f;   // thousands of tokens at a glance
inline constexpr float kLensCellMaxEm = 12.0f;

}  // namespace mhascope::app
