#include "attention/tensor.hpp"

namespace mhascope {

std::string shapeToString(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string axesToString(const std::vector<std::string>& axes) {
  std::string s = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (i) s += ", ";
    s += axes[i];
  }
  return s + ")";
}

AxisKind axisKind(std::string_view name) {
  if (name == "B") return AxisKind::Batch;
  if (name == "h") return AxisKind::Heads;
  if (name == "T_q") return AxisKind::QueryTokens;
  if (name == "T_k") return AxisKind::KeyTokens;
  if (name == "d_model") return AxisKind::DModel;
  if (name == "d_k") return AxisKind::HeadDim;
  return AxisKind::Other;
}

}  // namespace mhascope
