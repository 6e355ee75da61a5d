// The logit lens as a picture: the lens of a model view as one (L, T) slice of probabilities —
// rows the layers, columns the positions' tokens — written as PNG, SVG or PDF by the same exporter
// as every heatmap (core/export), on [0, 1] in the colour map of the window's probabilities. Drawing-free: the panel files it, the update
// step writes it.
#pragma once

#include <string>

#include "attention/trace.hpp"
#include "state/requests.hpp"

namespace mhascope::model {
struct ModelView;  // core/model/model_view.hpp
}

namespace mhascope::app {

// (L, T): p(layer l's own top-1) at each position, or with byFinal p(the model's final top-1).
// Row labels "layer l" (the last "layer L-1 (out)"), column labels the tokens.
Slice2D lensSlice(const model::ModelView& v, bool byFinal);

// "Logit lens: p(each layer's top-1)" or "Logit lens: p(the model's final top-1)".
std::string lensTitle(bool byFinal);

// The lens picture as the Export… form files it (state/requests.hpp: written new, through a
// temporary file); an empty lens gives the reason instead. `subtitle`: what was run (the folder, T).
ExportPicture lensPicture(const model::ModelView& v, bool byFinal, ColormapId colormap, const std::string& subtitle);

}  // namespace mhascope::app
