// Conversion between PyTorch's MHA state_dict (weights stored (out, in)) and MhaWeights (x W).
#include "io/weights_io.hpp"

#include <set>

namespace mhascope {

namespace {

constexpr const char* kSelfAttn = "self_attn.";
constexpr const char* kProjections[] = {"q_proj", "k_proj", "v_proj", "o_proj"};

// The file's name of a separate projection's tensor, with or without the self_attn. prefix.
const Tensor* findProjection(const StateDict& sd, const std::string& name, std::string* foundAs = nullptr) {
  for (const std::string& n : {name, std::string(kSelfAttn) + name}) {
    if (auto it = sd.find(n); it != sd.end()) {
      if (foundAs) *foundAs = n;
      return &it->second;
    }
  }
  return nullptr;
}

// y = x W^T + b in the file; x W + b here: each matrix transposed.
Result<MhaWeights> separateProjections(const StateDict& sd, int dModel) {
  const std::int64_t d = dModel;
  std::vector<std::string> problems;
  std::set<std::string> used;
  const Tensor* w[4] = {};
  const Tensor* b[4] = {};
  for (int i = 0; i < 4; ++i) {
    std::string as;
    w[i] = findProjection(sd, std::string(kProjections[i]) + ".weight", &as);
    if (!w[i]) {
      problems.push_back(std::string("missing tensor '") + kProjections[i] + ".weight'");
    } else {
      used.insert(as);
      if (w[i]->rank() != 2) problems.push_back("'" + as + "' must have 2 axes, got shape " + shapeToString(w[i]->shape));
    }
    b[i] = findProjection(sd, std::string(kProjections[i]) + ".bias", &as);
    if (b[i]) used.insert(as);
  }
  for (const auto& [name, t] : sd) {
    if (!used.count(name)) problems.push_back("unexpected tensor '" + name + "' " + shapeToString(t.shape));
  }
  const int biases = (b[0] != nullptr) + (b[1] != nullptr) + (b[2] != nullptr) + (b[3] != nullptr);
  if (biases != 0 && biases != 4) problems.push_back("q_proj, k_proj, v_proj and o_proj must all have a .bias or none");
  std::int64_t kvWidth = 0, qWidth = 0;  // N * d_k, h * d_k
  if (problems.empty()) {
    qWidth = w[0]->dim(0);
    kvWidth = w[1]->dim(0);
    const Shape want[4] = {{qWidth, d}, {kvWidth, d}, {kvWidth, d}, {d, qWidth}};
    const char* meaning[4] = {"(h*d_k, d_model)", "(N*d_k, d_model)", "(N*d_k, d_model)", "(d_model, h*d_k)"};
    for (int i = 0; i < 4; ++i) {
      if (w[i]->shape != want[i]) {
        problems.push_back(std::string(kProjections[i]) + ".weight has shape " + shapeToString(w[i]->shape) +
                           ", expected " + meaning[i] + " = " + shapeToString(want[i]) + " for d_model = " +
                           std::to_string(d));
      }
      const std::int64_t out = i == 0 ? qWidth : i == 1 || i == 2 ? kvWidth : d;
      if (b[i] && b[i]->shape != Shape{out}) {
        problems.push_back(std::string(kProjections[i]) + ".bias has shape " + shapeToString(b[i]->shape) +
                           ", expected " + shapeToString({out}));
      }
    }
  }
  if (!problems.empty()) {
    std::string msg = "the weights do not fit this model (d_model = " + std::to_string(dModel) + "):";
    for (const auto& p : problems) msg += "\n  - " + p;
    return makeError(msg);
  }
  MhaWeights out;
  out.dModel = dModel;
  out.hasBias = biases == 4;
  RowMatrix* dst[4] = {&out.wq, &out.wk, &out.wv, &out.wo};
  RowVector* bias[4] = {&out.bq, &out.bk, &out.bv, &out.bo};
  for (int i = 0; i < 4; ++i) {
    *dst[i] = ConstMatrixMap(w[i]->ptr(), w[i]->dim(0), w[i]->dim(1)).transpose();
    bias[i]->setZero(w[i]->dim(0));
    if (b[i]) *bias[i] = Eigen::Map<const RowVector>(b[i]->ptr(), w[i]->dim(0));
  }
  return out;
}

}  // namespace

bool hasSeparateProjections(const StateDict& sd) {
  for (const char* p : kProjections) {
    if (findProjection(sd, std::string(p) + ".weight")) return true;
  }
  return false;
}

std::int64_t stateDictDModel(const StateDict& sd) {
  const Tensor* t = nullptr;
  if (auto it = sd.find("in_proj_weight"); it != sd.end()) t = &it->second;
  if (!t) t = findProjection(sd, "q_proj.weight");
  if (!t || t->rank() != 2) return 0;
  return t->dim(1);
}

Result<MhaWeights> weightsFromStateDict(const StateDict& sd, int dModel) {
  if (hasSeparateProjections(sd)) return separateProjections(sd, dModel);
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
  if (w.kvWidth() != d || w.qWidth() != d) {  // in_proj_weight stacks three (d_model, d_model) blocks: else the separate names
    const RowMatrix* m[4] = {&w.wq, &w.wk, &w.wv, &w.wo};
    const RowVector* b[4] = {&w.bq, &w.bk, &w.bv, &w.bo};
    for (int i = 0; i < 4; ++i) {
      Tensor t({m[i]->cols(), m[i]->rows()}, {});  // (out, in) as PyTorch stores it
      MatrixMap(t.ptr(), m[i]->cols(), m[i]->rows()) = m[i]->transpose();
      sd[std::string(kProjections[i]) + ".weight"] = std::move(t);
      if (w.hasBias) {
        Tensor bt({b[i]->size()}, {});
        Eigen::Map<RowVector>(bt.ptr(), b[i]->size()) = *b[i];
        sd[std::string(kProjections[i]) + ".bias"] = std::move(bt);
      }
    }
    return sd;
  }
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
