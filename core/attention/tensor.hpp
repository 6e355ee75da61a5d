// Tensor: the plain data every stage of the trace is recorded as — a row-major float32 array
// with its shape and one axis name per dimension in the paper's symbols (B, h, T_q, T_k, d_k,
// d_model). Row-major because pixels and NumPy are row-major.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/allocation.hpp"  // FloatBuffer: the tables' line-aligned memory

namespace mhascope {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

using Shape = std::vector<std::int64_t>;

struct Tensor {
  Shape shape;                     // e.g. {B, h, T_q, T_k}
  std::vector<std::string> axes;   // same length as shape, e.g. {"B","h","T_q","T_k"}; may be empty
  FloatBuffer data;                // row-major, numel() values, 64-byte aligned

  Tensor() = default;
  Tensor(Shape s, std::vector<std::string> a) : shape(std::move(s)), axes(std::move(a)) {
    data.assign(static_cast<std::size_t>(numelOf(shape)), 0.0f);
  }

  static std::int64_t numelOf(const Shape& s) {
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  }
  std::int64_t numel() const { return numelOf(shape); }
  int rank() const { return static_cast<int>(shape.size()); }
  std::int64_t dim(int i) const { return shape.at(static_cast<std::size_t>(i)); }
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }

  // Reuse the buffer when the element count is unchanged (no reallocation per recompute).
  void reshape(Shape s, std::vector<std::string> a) {
    shape = std::move(s);
    axes = std::move(a);
    const auto n = static_cast<std::size_t>(numelOf(shape));
    if (data.size() != n) data.assign(n, 0.0f);
  }
};

// "(2, 8, 5, 5)"
std::string shapeToString(const Shape& shape);
// "(B, h, T_q, T_k)"
std::string axesToString(const std::vector<std::string>& axes);

// What an axis holds. The names ("T_q") are for people and files; code that decides something
// from an axis (token labels, which rows a mask can empty, where heads own columns) asks for its
// kind, decided here in one place — the way polyscope's DataType picks a colormap once.
enum class AxisKind {
  Batch,        // "B"
  Heads,        // "h"
  QueryTokens,  // "T_q"
  KeyTokens,    // "T_k"
  DModel,       // "d_model": the features of a token (inputs, projections, merged heads, output)
  HeadDim,      // "d_k": the features of one head
  Other,        // anything else (a learned matrix's "d_model_in", "rows", …)
};
AxisKind axisKind(std::string_view name);

}  // namespace mhascope
