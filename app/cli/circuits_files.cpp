#include "circuits_files.hpp"

#include <algorithm>
#include <regex>

#include "export/export.hpp"
#include "io/npy.hpp"

namespace mhascope::cli {

// Built by appending (GCC 12 warns, wrongly, on chained + in this function).
std::string headTag(int layer, int head) {
  std::string s = "L";
  s += std::to_string(layer);
  s += " H";
  s += std::to_string(head);
  return s;
}

bool isExportFileName(const std::string& name) {
  const std::regex pattern(
      R"(((qk|ov|qk_tokens|ov_tokens|qk_positions)_l[0-9]+_h[0-9]+\.(npy|png))|(composition|copying)\.npy|rollout\.(npy|png))"
      R"(|composition_[qkv]_l[0-9]+_l[0-9]+\.png|composition_(reads|read_by)\.npy|composition_[qkv]_l[0-9]+_h[0-9]+\.png)"
      R"(|copying\.png)");
  return std::regex_match(name, pattern);
}

Tensor toTensor(const float* data, std::int64_t rows, std::int64_t cols) {
  Tensor t({rows, cols}, {});
  std::copy(data, data + rows * cols, t.ptr());
  return t;
}

Status writeMatrix(const std::filesystem::path& dir, const MatrixFile& f, const std::vector<std::string>& labels,
                   const std::string& subtitle) {
  if (auto s = saveNpy((dir / (f.stem + ".npy")).string(), toTensor(f.m->data(), f.m->rows(), f.m->cols())); !s) return s;
  Slice2D sl;
  sl.stage = StageId::Scores;  // signed numbers: the diverging map on a range symmetric about 0
  sl.rows = static_cast<int>(f.m->rows());
  sl.cols = static_cast<int>(f.m->cols());
  sl.data = f.m->data();
  sl.rowAxis = f.rowAxis;
  sl.colAxis = f.colAxis;
  if (f.tokens) sl.rowLabels = sl.colLabels = labels;
  ExportOptions opt;
  opt.title = f.title;
  opt.subtitle = subtitle;
  return exportHeatmap((dir / (f.stem + ".png")).string(), sl, opt);
}

Status writeRolloutFiles(const std::filesystem::path& dir, const RowMatrix& m, const std::vector<std::string>& tokens,
                         int layers, const std::string& subtitle) {
  if (auto s = saveNpy((dir / "rollout.npy").string(), toTensor(m.data(), m.rows(), m.cols())); !s) return s;
  Slice2D sl;
  sl.stage = StageId::Weights;
  sl.rows = static_cast<int>(m.rows());
  sl.cols = static_cast<int>(m.cols());
  sl.data = m.data();
  sl.rowAxis = "T_q";
  sl.colAxis = "T_k";
  sl.rowLabels = sl.colLabels = tokens;
  ExportOptions opt;
  opt.colormap = defaultColormap(DataKind::Probability);
  opt.range = ColorRange{0.0f, 1.0f};
  opt.title = "Attention rollout (Abnar & Zuidema 2020) through " + std::to_string(layers) + " layers";
  opt.subtitle = subtitle;
  return exportHeatmap((dir / "rollout.png").string(), sl, opt);
}

}  // namespace mhascope::cli
