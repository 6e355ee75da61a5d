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

}  // namespace mhascope
