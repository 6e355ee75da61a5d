// What `mhascope circuits`' two sources share — a training checkpoint (circuits_command.cpp) and a
// model folder (circuits_model.cpp): the printed score rows, the JSON pieces, the export's folder
// kind and the one way both write their outputs, the .npy + PNG pair of one matrix.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/circuits.hpp"
#include "attention/tensor.hpp"
#include "circuits_command.hpp"
#include "output_folder.hpp"
#include "util/result.hpp"

namespace mhascope::cli {

// The two sources (cmdCircuits picks one).
int runCircuitsCheckpoint(const CircuitsArgs& a);
int runCircuitsModel(const CircuitsArgs& a);

// What the scores are and the baseline they stand against (after each source's conventions).
void printScoreDefinitions(double baseline);
void printPairHeader();
void printPairRow(const analysis::Composition& p, double baseline);
void printRolloutMissing(const std::string& why);
// The strongest of a composition's three scores.
double strongest(const analysis::Composition& p);
nlohmann::json pairsJson(const std::vector<analysis::Composition>& pairs);
// The pairs V-composition ranks first (topValuePairs, kTopVirtualPairs): from, to, v, virtual_copying.
nlohmann::json virtualHeadsJson(const std::vector<analysis::Composition>& pairs);
// A virtualHeadsText paragraph: its first line, then each pair's line and the meaning indented.
void printVirtualHeads(const std::string& text);
// --pair "0.0,1.1" (layer 0 head 0 → layer 1 head 1); the error quotes the value and the form it needs.
// The range is checked against the model by analysis::checkPair.
Result<analysis::HeadPair> parsePair(const std::string& text);
// virtual_heads.npy: one row per pair (from layer, from head, to layer, to head, V, virtual copying).
Status writeVirtualHeads(const std::filesystem::path& file, const std::vector<analysis::Composition>& pairs);
// "virtual_ov_tokens_l0_h0_l1_h1": a picked pair's token-space OV files.
std::string virtualStem(const analysis::HeadPair& p);
nlohmann::json matrixJson(const RowMatrix& m);

// What --export-dir writes, as one output folder: the per-head matrices, the score tables, the
// composition pictures and the rollout (isExportFileName).
extern const OutputFolderKind kCircuitsExport;

// The outputs last, as one unit: the export (writeExport into its temporary folder, the number of
// files written), then --json, then the export into place — a failure anywhere leaves the earlier
// export and the earlier --json file.
Status writeOutputs(const CircuitsArgs& a, const std::filesystem::path& exportTarget, const nlohmann::json& json,
                    const std::string& exportNote,
                    const std::function<Result<int>(const std::filesystem::path&)>& writeExport);

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
