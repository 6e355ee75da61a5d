// Conversion between PyTorch's MHA state_dict (weights stored (out, in)) and MhaWeights (x W).
#include "io/weights_io.hpp"

#include <set>

namespace mhascope {

Result<MhaWeights> weightsFromStateDict(const StateDict& sd, int dModel) {
  const std::int64_t d = dModel;
  const std::map<std::string, Shape> expected = {{"in_proj_weight", {3 * d, d}},
                                                 {"in_proj_bias", {3 * d}},
                                                 {"out_proj.weight", {d, d}},
                                                 {"out_proj.bias", {d}}};
  std::vector<std::string> problems;
  for (const auto& [name, shape] : expected) {
    auto it = sd.find(name);
    const bool isBias = name.find("bias") != std::string::npos;
    if (it == sd.end()) {
      if (!isBias) problems.push_back("missing tensor '" + name + "' " + shapeToString(shape));
      continue;
    }
    if (it->second.shape != shape) {
      problems.push_back("'" + name + "' has shape " + shapeToString(it->second.shape) + ", expected " +
                         shapeToString(shape) + " for d_model = " + std::to_string(dModel));
    }
  }
  // PyTorch writes q_proj_weight, k_proj_weight, v_proj_weight instead of in_proj_weight when
  // kdim/vdim differ from embed_dim: name that layout only when it is the one in the file.
  const bool separate = sd.count("q_proj_weight") || sd.count("k_proj_weight") || sd.count("v_proj_weight");
  for (const auto& [name, t] : sd) {
    if (!expected.count(name)) {
      const bool proj = name == "q_proj_weight" || name == "k_proj_weight" || name == "v_proj_weight";
      problems.push_back("unexpected tensor '" + name + "' " + shapeToString(t.shape) +
                         (proj ? " (separate q/k/v_proj_weight layouts, PyTorch's kdim/vdim != embed_dim, are not "
                                 "supported)"
                               : ""));
    }
  }
  if (!separate && problems.size() > 0) {
    std::string names;
    for (const auto& [name, shape] : expected) names += (names.empty() ? "" : ", ") + name;
    problems.push_back("expected the names of PyTorch's nn.MultiheadAttention state_dict: " + names);
  }
  const bool hasIn = sd.count("in_proj_bias") != 0, hasOut = sd.count("out_proj.bias") != 0;
  if (hasIn != hasOut) problems.push_back("in_proj_bias and out_proj.bias must both be present or both absent");
  if (!problems.empty()) {
    std::string msg = "the weights do not fit this model (d_model = " + std::to_string(dModel) + "):";
    for (const auto& p : problems) msg += "\n  - " + p;
    return makeError(msg);
  }
  MhaWeights w;
  w.dModel = dModel;
  w.hasBias = hasIn;
  const Tensor& in = sd.at("in_proj_weight");
  // PyTorch computes y = x W^T; our layout is y = x W, so each block is transposed here.
  RowMatrix* dst[3] = {&w.wq, &w.wk, &w.wv};
  for (int i = 0; i < 3; ++i) {
    *dst[i] = ConstMatrixMap(in.ptr() + static_cast<std::ptrdiff_t>(i) * d * d, d, d).transpose();
  }
  w.wo = ConstMatrixMap(sd.at("out_proj.weight").ptr(), d, d).transpose();
  for (RowVector* b : {&w.bq, &w.bk, &w.bv, &w.bo}) b->setZero(d);
  if (w.hasBias) {
    const float* ib = sd.at("in_proj_bias").ptr();
    w.bq = Eigen::Map<const RowVector>(ib, d);
    w.bk = Eigen::Map<const RowVector>(ib + d, d);
    w.bv = Eigen::Map<const RowVector>(ib + 2 * d, d);
    w.bo = Eigen::Map<const RowVector>(sd.at("out_proj.bias").ptr(), d);
  }
  return w;
}

StateDict stateDictFromWeights(const MhaWeights& w) {
  const std::int64_t d = w.dModel;
  StateDict sd;
  Tensor in({3 * d, d}, {});
  const RowMatrix* src[3] = {&w.wq, &w.wk, &w.wv};
  for (int i = 0; i < 3; ++i) {
    MatrixMap(in.ptr() + static_cast<std::ptrdiff_t>(i) * d * d, d, d) = src[i]->transpose();
  }
  sd["in_proj_weight"] = std::move(in);
  Tensor out({d, d}, {});
  MatrixMap(out.ptr(), d, d) = w.wo.transpose();
  sd["out_proj.weight"] = std::move(out);
  if (w.hasBias) {
    Tensor ib({3 * d}, {});
    Eigen::Map<RowVector>(ib.ptr(), d) = w.bq;
    Eigen::Map<RowVector>(ib.ptr() + d, d) = w.bk;
    Eigen::Map<RowVector>(ib.ptr() + 2 * d, d) = w.bv;
    sd["in_proj_bias"] = std::move(ib);
    Tensor ob({d}, {});
    Eigen::Map<RowVector>(ob.ptr(), d) = w.bo;
    sd["out_proj.bias"] = std::move(ob);
  }
  return sd;
}

}  // namespace mhascope
