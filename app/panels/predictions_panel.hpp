// The Predictions tab (predictions_panel.cpp): a model folder's next-token predictions per
// position and its logit lens, drawn from the model view's last result (never computed here).
#pragma once

#include <string>

#include "state/predictions_view.hpp"
#include "state/ui_context.hpp"

namespace mhascope::model {
struct ModelView;  // core/model/model_view.hpp
}

namespace mhascope::app {

void drawPredictionsPanel(UiContext& ctx);  // panels/predictions_panel.cpp
inline constexpr const char* kPredictionsTab = "predictions";  // the tab's id

// The words under a lens cell: "layer 3 · position 5 'cat'", its top-1 with its probability, the
// model's final top-1 with its probability at this layer (and at the last). Plain text, tested.
std::string lensCellText(const model::ModelView& v, int layer, int position);

}  // namespace mhascope::app
