#include "widgets/lens_export.hpp"

#include <memory>
#include <vector>

#include "export/export.hpp"
#include "model/model_view.hpp"

namespace mhascope::app {

Slice2D lensSlice(const model::ModelView& v, bool byFinal) {
  const int L = v.lens.layers, T = v.lens.positions;
  Slice2D s;
  s.stage = StageId::Weights;  // a probability map: the exporter's sequential scale and rules
  s.rows = L;
  s.cols = T;
  auto values = std::make_shared<std::vector<float>>(static_cast<std::size_t>(L) * static_cast<std::size_t>(T));
  for (int l = 0; l < L; ++l) {
    for (int t = 0; t < T; ++t) {
      const model::LensCell& c = v.lens.at(l, t);
      (*values)[static_cast<std::size_t>(l) * static_cast<std::size_t>(T) + static_cast<std::size_t>(t)] =
          static_cast<float>(byFinal ? c.finalTopProbability : c.top.probability);
    }
  }
  s.data = values->data();
  s.owned = std::move(values);
  s.rowAxis = "layer";
  s.colAxis = "T";
  for (int l = 0; l < L; ++l) s.rowLabels.push_back("layer " + std::to_string(l) + (l == L - 1 ? " (out)" : ""));
  for (int t = 0; t < T; ++t) {
    s.colLabels.push_back(t < static_cast<int>(v.labels.size()) ? v.labels[static_cast<std::size_t>(t)] : std::to_string(t));
  }
  return s;
}

std::string lensTitle(bool byFinal) {
  return byFinal ? "Logit lens: p(the model's final top-1)" : "Logit lens: p(each layer's top-1)";
}

ExportPicture lensPicture(const model::ModelView& v, bool byFinal, ColormapId colormap, const std::string& subtitle) {
  ExportPicture p;
  if (v.lens.layers <= 0 || v.lens.positions <= 0) {
    p.emptyReason = "the lens is empty";
    return p;
  }
  p.options.colormap = colormap;
  p.options.range = ColorRange{0.0f, 1.0f};
  p.options.title = lensTitle(byFinal);
  p.options.subtitle = subtitle;
  p.options.showValues = false;
  p.slices.push_back(lensSlice(v, byFinal));
  return p;
}

}  // namespace mhascope::app
