#include "circuits_files.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <regex>

#include "analysis/circuit_texts.hpp"  // headName
#include "command_common.hpp"  // writeOutputFile
#include "export/export.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"

namespace mhascope::cli {

using namespace mhascope::analysis;  // NOLINT(google-build-using-namespace): the circuits' types

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
      R"(|copying\.png|virtual_heads\.npy|virtual_ov_tokens_l[0-9]+_h[0-9]+_l[0-9]+_h[0-9]+\.(npy|png))");
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

void printScoreDefinitions(double baseline) {
  std::printf("Scores are ||product||_F / (||.||_F ||.||_F):\n"
              "  Q = ||OV^a QK^b||  K = ||QK^b OV^a^T||  V = ||OV^a OV^b||  (a earlier, b later)\n"
              "random baseline %.3f: the mean score of random Gaussian heads of these shapes (%d sampled pairs)\n",
              baseline, kBaselineSamples);
}

void printPairHeader() { std::printf("  %-16s %-16s %6s %6s %6s %9s\n", "from (a)", "to (b)", "Q", "K", "V", "baseline"); }

void printPairRow(const Composition& p, double baseline) {
  std::printf("  %-16s %-16s %6.3f %6.3f %6.3f %9.3f\n", headName(p.fromLayer, p.fromHead).c_str(),
              headName(p.toLayer, p.toHead).c_str(), p.q, p.k, p.v, baseline);
}

void printRolloutMissing(const std::string& why) { std::printf("\nAttention rollout: not computed: %s\n", why.c_str()); }

double strongest(const Composition& p) { return std::max({p.q, p.k, p.v}); }

nlohmann::json pairsJson(const std::vector<Composition>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const Composition& p : pairs) {
    out.push_back({{"from", {p.fromLayer, p.fromHead}},
                   {"to", {p.toLayer, p.toHead}},
                   {"q", p.q},
                   {"k", p.k},
                   {"v", p.v},
                   {"virtual_copying", p.virtualCopying}});
  }
  return out;
}

nlohmann::json virtualHeadsJson(const std::vector<Composition>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const Composition* p : topValuePairs(pairs, kTopVirtualPairs)) {
    out.push_back({{"from", {p->fromLayer, p->fromHead}}, {"to", {p->toLayer, p->toHead}}, {"v", p->v},
                   {"virtual_copying", p->virtualCopying}});
  }
  return out;
}

void printVirtualHeads(const std::string& text) {
  std::printf("\n");
  std::size_t start = 0;
  while (start < text.size()) {  // one line per pair, the meaning last, each indented
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::printf("%s%s\n", start == 0 ? "" : "  ", text.substr(start, end - start).c_str());
    start = end + 1;
  }
}

Result<HeadPair> parsePair(const std::string& text) {
  const std::regex pattern(R"(\s*(-?[0-9]+)\.(-?[0-9]+)\s*,\s*(-?[0-9]+)\.(-?[0-9]+)\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, pattern) || m[1].length() > 6 || m[2].length() > 6 || m[3].length() > 6 || m[4].length() > 6) {
    return makeError("--pair '" + text + "' is not two heads LAYER.HEAD,LAYER.HEAD (e.g. --pair 0.0,1.1: layer 0 head 0 "
                     "→ layer 1 head 1)");
  }
  return HeadPair{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
}

Status writeVirtualHeads(const std::filesystem::path& file, const std::vector<Composition>& pairs) {
  RowMatrix m(static_cast<Eigen::Index>(pairs.size()), 6);  // from layer, from head, to layer, to head, V, copying
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Composition& p = pairs[i];
    m.row(static_cast<Eigen::Index>(i)) << static_cast<float>(p.fromLayer), static_cast<float>(p.fromHead),
        static_cast<float>(p.toLayer), static_cast<float>(p.toHead), static_cast<float>(p.v),
        static_cast<float>(p.virtualCopying);
  }
  return saveNpy(file.string(), toTensor(m.data(), m.rows(), 6));
}

std::string virtualStem(const HeadPair& p) {
  return "virtual_ov_tokens_l" + std::to_string(p.fromLayer) + "_h" + std::to_string(p.fromHead) + "_l" +
         std::to_string(p.toLayer) + "_h" + std::to_string(p.toHead);
}

nlohmann::json matrixJson(const RowMatrix& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) rows.push_back(std::vector<float>(m.row(i).begin(), m.row(i).end()));
  return rows;
}

const OutputFolderKind kCircuitsExport{"--export-dir", "a circuits export", isExportFileName};

Status writeOutputs(const CircuitsArgs& a, const std::filesystem::path& exportTarget, const nlohmann::json& json,
                    const std::string& exportNote,
                    const std::function<Result<int>(const std::filesystem::path&)>& writeExport) {
  std::optional<OutputFolderWrite> out;
  int files = 0;
  if (!a.exportDir.empty()) {
    auto begun = OutputFolderWrite::begin(kCircuitsExport, a.exportDir, exportTarget);
    if (!begun) return begun.error();
    out.emplace(std::move(*begun));
    auto n = writeExport(out->folder());
    if (!n) return out->abandon(n.error().message);
    files = *n;
    if (OutputFolderWrite::interrupted()) return out->abandon("interrupted");
  }
  if (!out) return a.json.empty() ? Status(Ok{}) : writeOutputFile(a.json, json.dump(2) + "\n");
  // The export's writer holds the signals already: the --json file is written under it.
  if (!a.json.empty()) {
    if (auto s = writeFileAtomic(a.json, json.dump(2) + "\n"); !s) {
      return out->abandon(s.error().message + " (so the export was not written either)");
    }
  }
  if (auto s = out->commit(); !s) return s.error();
  if (!a.json.empty()) std::printf("wrote %s\n", a.json.c_str());
  std::printf("wrote %d files to %s%s\n", files, a.exportDir.c_str(), exportNote.c_str());
  return Ok{};
}

}  // namespace mhascope::cli
