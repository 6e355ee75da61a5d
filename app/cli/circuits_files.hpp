// What `mhascope circuits` writes (circuits_command.cpp), for a training checkpoint and a model
// folder alike: the checks that keep its outputs off the user's files, and
// the .npy + PNG pair of one matrix.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "attention/tensor.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

// "L0 H1": a picture's axis label.
std::string headTag(int layer, int head);

// The file names a circuits export writes (the per-head matrices, the score tables, the
// composition pictures, the rollout): an --export-dir holding anything else is refused.
bool isExportFileName(const std::string& name);

Tensor toTensor(const float* data, std::int64_t rows, std::int64_t cols);

struct MatrixFile {
  std::string stem;        // "qk_l0_h1"
  const RowMatrix* m;
  std::string title;       // the picture's first line
  std::string rowAxis, colAxis;
  bool tokens;             // token labels on both axes
};

// stem.npy and stem.png (signed: the diverging map on a range symmetric about 0).
Status writeMatrix(const std::filesystem::path& dir, const MatrixFile& f, const std::vector<std::string>& labels,
                   const std::string& subtitle);

// rollout.npy (T x T) and its picture, the tokens on both axes, the weights' viridis map on [0, 1].
Status writeRolloutFiles(const std::filesystem::path& dir, const RowMatrix& rollout, const std::vector<std::string>& tokens,
                         int layers, const std::string& subtitle);

}  // namespace mhascope::cli
