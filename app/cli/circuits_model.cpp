// `mhascope circuits --model DIR --text S|--text-file F --layer L --head H`: a model folder's
// circuits around one head (core/model/model_circuits.hpp). Prints the model and the conventions,
// the head's composition with every head of the other layers (strongest first, against the random
// baseline), every head's copying score as a layers x heads table, the words of each view and the
// attention rollout of the text; --json writes every number, --export-dir the head's QK, OV and
// token-space matrices, the composition and copying tables and the rollout. Outputs are checked
// before anything is computed and never replace a file of the model folder or the text file.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "circuits_command.hpp"
#include "circuits_files.hpp"
#include "command_common.hpp"  // fail
#include "export/export.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "model/model_circuits.hpp"
#include "model_source/model_source.hpp"
#include "model_source/model_text.hpp"
#include "train/rollout.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {
namespace {

using model::ModelCircuits;
using train::Composition;

// The strongest of a composition's three scores.
double strongest(const Composition& p) { return std::max({p.q, p.k, p.v}); }

void printPairs(const char* title, const std::vector<Composition>& pairs, double baseline, std::size_t shown) {
  std::vector<const Composition*> order;
  for (const Composition& p : pairs) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Composition* x, const Composition* y) { return strongest(*x) > strongest(*y); });
  std::printf("\n%s: %zu pair%s, strongest first%s\n", title, pairs.size(), pairs.size() == 1 ? "" : "s",
              order.size() > shown ? (" (the first " + std::to_string(shown) + "; --json has all)").c_str() : "");
  std::printf("  %-16s %-16s %6s %6s %6s %9s\n", "from (a)", "to (b)", "Q", "K", "V", "baseline");
  for (std::size_t i = 0; i < order.size() && i < shown; ++i) {
    const Composition& p = *order[i];
    std::printf("  %-16s %-16s %6.3f %6.3f %6.3f %9.3f\n", train::headName(p.fromLayer, p.fromHead).c_str(),
                train::headName(p.toLayer, p.toHead).c_str(), p.q, p.k, p.v, baseline);
  }
}

void printReport(const ModelText& mt, const ModelCircuits& c, const std::vector<std::string>& tokens) {
  const model::ModelSpec& s = mt.folder.spec();
  std::printf("mhascope circuits: %s model %s: %d layers x %d heads (%d K/V heads), d_model %d, d_k %d, vocab %d; "
              "T = %zu tokens\n",
              s.family->modelType, mt.folder.dir().c_str(), c.layers, c.heads, c.kvHeads, c.dModel, c.dk, c.vocab,
              mt.ids.size());
  std::printf("The chosen head: %s. Norm gains folded into the weights that read the normed stream; centring and "
              "biases left out\n(Elhage et al. 2021)%s. Scores are ||product||_F / (||.||_F ||.||_F):\n"
              "  Q = ||OV^a QK^b||  K = ||QK^b OV^a^T||  V = ||OV^a OV^b||  (a earlier, b later)\n"
              "random baseline %.3f: the mean score of random Gaussian heads of these shapes (%d sampled pairs)\n",
              train::headName(c.layer, c.head).c_str(),
              s.rope() ? "; with RoPE, QK is the content part of the score only" : "", c.baseline,
              train::kBaselineSamples);
  if (c.reads.empty() && c.readBy.empty()) {
    std::printf("\nComposition: none; this model has one layer\n");
  } else {
    if (c.layer > 0) printPairs(("What " + train::headName(c.layer, c.head) + " reads (every head of layers 0 .. " +
                                 std::to_string(c.layer - 1) + ")").c_str(),
                                c.reads, c.baseline, 10);
    if (c.layer + 1 < c.layers) printPairs(("Who reads " + train::headName(c.layer, c.head) + " (every head of layers " +
                                            std::to_string(c.layer + 1) + " .. " + std::to_string(c.layers - 1) + ")").c_str(),
                                           c.readBy, c.baseline, 10);
    for (const char kind : {'Q', 'K', 'V'}) std::printf("  %s\n", model::modelCompositionText(c, kind).c_str());
  }
  std::printf("\nCopying score of every head (OV's eigenvalues in token space over the whole vocabulary: sum / sum of "
              "moduli; 1 = raises the attended token)\n      ");
  for (int h = 0; h < c.heads; ++h) std::printf(" %6s", ("H" + std::to_string(h)).c_str());
  std::printf("\n");
  for (int l = 0; l < c.layers; ++l) {
    std::printf("  %-4s", ("L" + std::to_string(l)).c_str());
    for (int h = 0; h < c.heads; ++h) std::printf(" %6.3f", c.copyingAt(l, h));
    std::printf("\n");
  }
  std::printf("  %s\n", model::modelCopyingText(c).c_str());
  if (c.rollout.size() == 0) {
    std::printf("\nAttention rollout: not computed: %s\n", c.rolloutWhy.c_str());
  } else {
    std::printf("\nAttention rollout of the text through %d layers\n  %s\n", c.layers,
                train::rolloutText(c.rollout, c.layers, c.lastLayerMean, tokens, static_cast<int>(c.rollout.rows()) - 1).c_str());
  }
}

nlohmann::json pairsJson(const std::vector<Composition>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const Composition& p : pairs) {
    out.push_back({{"from", {p.fromLayer, p.fromHead}}, {"to", {p.toLayer, p.toHead}}, {"q", p.q}, {"k", p.k}, {"v", p.v}});
  }
  return out;
}

nlohmann::json matrixJson(const RowMatrix& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) rows.push_back(std::vector<float>(m.row(i).begin(), m.row(i).end()));
  return rows;
}

nlohmann::json circuitsJson(const ModelText& mt, const ModelCircuits& c, const std::vector<std::string>& axisLabels,
                            const std::vector<std::string>& tokens) {
  nlohmann::json copying = nlohmann::json::array();
  for (int l = 0; l < c.layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int h = 0; h < c.heads; ++h) row.push_back(c.copyingAt(l, h));
    copying.push_back(row);
  }
  nlohmann::json eig = nlohmann::json::array();
  for (const auto& z : c.eigenvalues) eig.push_back({z.real(), z.imag()});
  nlohmann::json rollout = nullptr;
  if (c.rollout.size() > 0) rollout = {{"tokens", tokens}, {"matrix", matrixJson(c.rollout)}};
  return {{"model", mt.folder.dir()},
          {"layer", c.layer},
          {"head", c.head},
          {"baseline", c.baseline},
          {"reads", pairsJson(c.reads)},
          {"read_by", pairsJson(c.readBy)},
          {"copying", copying},
          {"eigenvalues", eig},
          {"token_ids", c.tokenIds},
          {"token_labels", axisLabels},
          {"qk_tokens", matrixJson(c.qkTokens)},
          {"ov_tokens", matrixJson(c.ovTokens)},
          {"rollout", rollout},
          {"rollout_why", c.rolloutWhy}};
}

// Q, K or V of the chosen head against every head as one layers x heads table: the reads in the
// earlier layers, the readers in the later ones, the head's own layer 0 (drawn blocked).
RowMatrix compositionMap(const ModelCircuits& c, char kind) {
  RowMatrix m = RowMatrix::Zero(c.layers, c.heads);
  for (const Composition& p : c.reads) m(p.fromLayer, p.fromHead) = static_cast<float>(train::compositionScore(p, kind));
  for (const Composition& p : c.readBy) m(p.toLayer, p.toHead) = static_cast<float>(train::compositionScore(p, kind));
  return m;
}

Status writePairs(const std::filesystem::path& file, const std::vector<Composition>& pairs) {
  RowMatrix m(static_cast<Eigen::Index>(pairs.size()), 7);  // from layer, from head, to layer, to head, Q, K, V
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Composition& p = pairs[i];
    m.row(static_cast<Eigen::Index>(i)) << static_cast<float>(p.fromLayer), static_cast<float>(p.fromHead),
        static_cast<float>(p.toLayer), static_cast<float>(p.toHead), static_cast<float>(p.q), static_cast<float>(p.k),
        static_cast<float>(p.v);
  }
  return saveNpy(file.string(), toTensor(m.data(), m.rows(), 7));
}

Status writeExport(const std::string& dirName, const ModelText& mt, const ModelCircuits& c,
                   const std::vector<std::string>& axisLabels, const std::vector<std::string>& tokens) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir(dirName);
  fs::create_directory(dir, ec);
  if (ec) return makeError("cannot create folder '" + dirName + "': " + ec.message());
  const std::string subtitle = fs::path(mt.folder.dir()).filename().string() + " (norm gains folded, biases left out)";
  const std::string at = "_l" + std::to_string(c.layer) + "_h" + std::to_string(c.head);
  const std::string who = train::headName(c.layer, c.head) + ": ";
  const std::vector<MatrixFile> list = {
      {"qk" + at, &c.qk, who + "QK = W_q W_k^T (query x QK key^T = score; W as y = x W stores it)", "d_model (query)", "d_model (key)", false},
      {"ov" + at, &c.ov, who + "OV = W_v W_o (what the head writes for a key; W as y = x W stores it)", "d_model (attended)", "d_model (written)", false},
      {"qk_tokens" + at, &c.qkTokens, who + "E QK E^T over the text's tokens (which token looks at which)", "query token",
       "key token", true},
      {"ov_tokens" + at, &c.ovTokens, who + "E OV U over the text's tokens (attending to a token raises these logits)",
       "attended token", "predicted token", true}};
  int files = 0;
  for (const MatrixFile& f : list) {
    if (auto s = writeMatrix(dir, f, axisLabels, subtitle); !s) return s;
    files += 2;
  }
  if (auto s = writePairs(dir / "composition_reads.npy", c.reads); !s) return s;
  if (auto s = writePairs(dir / "composition_read_by.npy", c.readBy); !s) return s;
  files += 2;
  float top = 0;
  for (const auto* pairs : {&c.reads, &c.readBy})
    for (const Composition& p : *pairs) top = std::max(top, static_cast<float>(strongest(p)));
  for (const char kind : {'Q', 'K', 'V'}) {
    const RowMatrix m = compositionMap(c, kind);
    Slice2D sl;
    sl.stage = StageId::Scores;
    sl.rows = c.layers;
    sl.cols = c.heads;
    sl.data = m.data();
    sl.rowAxis = "layer";
    sl.colAxis = "head";
    for (int l = 0; l < c.layers; ++l) sl.rowLabels.push_back("L" + std::to_string(l));
    for (int h = 0; h < c.heads; ++h) sl.colLabels.push_back("H" + std::to_string(h));
    // The chosen head's own layer cannot compose with it: drawn as blocked cells.
    auto own = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(c.layers * c.heads), 0);
    std::fill_n(own->begin() + static_cast<std::ptrdiff_t>(c.layer) * c.heads, c.heads, std::uint8_t{1});
    sl.ownBlocked = own;
    sl.blockedCells = own->data();
    ExportOptions opt;
    opt.colormap = ColormapId::Viridis;
    opt.range = ColorRange{0.0f, top > 0 ? top : 1.0f};
    opt.blockedLegend = "the chosen head's own layer: heads of one layer do not compose";
    opt.title = std::string(1, kind) + "-composition with " + train::headName(c.layer, c.head) +
                ": earlier layers it reads, later layers that read it (random baseline " + formatGeneral(c.baseline, 3) + ")";
    opt.subtitle = subtitle;
    const std::string name = std::string("composition_") + static_cast<char>(kind - 'A' + 'a') + at + ".png";
    if (auto s = exportHeatmap((dir / name).string(), sl, opt); !s) return s;
    ++files;
  }
  RowMatrix copying(c.layers, c.heads);
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) copying(l, h) = static_cast<float>(c.copyingAt(l, h));
  if (auto s = saveNpy((dir / "copying.npy").string(), toTensor(copying.data(), c.layers, c.heads)); !s) return s;
  ++files;
  if (c.rollout.size() > 0) {
    if (auto s = writeRolloutFiles(dir, c.rollout, tokens, c.layers, subtitle); !s) return s;
    files += 2;
  } else {
    // An earlier export's rollout is of another text: it must not pass for this one's.
    fs::remove(dir / "rollout.npy", ec);
    fs::remove(dir / "rollout.png", ec);
  }
  std::printf("wrote %d files to %s\n", files, dirName.c_str());
  return Ok{};
}

// What the file checks of circuits_files.cpp do not know about a model: --json is no file of the
// model folder at all (a file the commands do not read, such as generation_config.json, is still
// the user's), and neither --json nor the --text-file is a file this export writes.
Status checkModelOutputs(const CircuitsArgs& a, const std::string& modelDir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto folderOf = [](const std::string& file) {
    const fs::path parent = fs::path(file).parent_path();
    return parent.empty() ? fs::path(".") : parent;
  };
  if (!a.json.empty() && fs::equivalent(folderOf(a.json), modelDir, ec)) {
    return makeError("--json '" + a.json + "' is inside the model folder '" + modelDir +
                     "'; writing there could replace one of its files: choose a file outside it");
  }
  if (a.exportDir.empty()) return Ok{};
  const std::string name = fs::path(a.json).filename().string();
  if (!a.json.empty() && isExportFileName(name) && fs::equivalent(folderOf(a.json), a.exportDir, ec)) {
    return makeError("--json '" + a.json + "' is a file --export-dir '" + a.exportDir + "' writes; choose another name");
  }
  if (!a.textFile.empty() && isExportFileName(fs::path(a.textFile).filename().string()) &&
      fs::equivalent(folderOf(a.textFile), a.exportDir, ec)) {
    return makeError("--text-file '" + a.textFile + "' is a file --export-dir '" + a.exportDir +
                     "' writes; writing there would destroy the text: move it or choose another folder");
  }
  return Ok{};
}

}  // namespace

int cmdCircuitsModel(const CircuitsArgs& a) {
  auto mt = loadModelText(a.modelDir, a.text, a.textFile);
  if (!mt) return fail(mt.error().message);
  // Every file the folder is read from, and the text: no output may replace one, --force or not.
  auto inputs = modelFolderFiles(mt->folder.dir());
  if (!a.textFile.empty()) inputs.push_back({"--text-file", a.textFile});
  if (auto s = checkModelOutputs(a, mt->folder.dir()); !s) return fail(s.error().message);
  if (!a.json.empty()) {
    if (auto s = checkJsonOutput(a.json, a.force, inputs); !s) return fail(s.error().message);
  }
  if (!a.exportDir.empty()) {
    if (auto s = checkExportDir(a.exportDir); !s) return fail(s.error().message);
  }
  // The folder is made now, so a name that cannot be made fails before minutes of computing; it
  // is removed again if nothing gets written into it.
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool madeExportDir = !a.exportDir.empty() && fs::create_directory(a.exportDir, ec);
  if (ec) return fail("cannot create folder '" + a.exportDir + "': " + ec.message());
  const auto failClean = [&](const std::string& message) {
    if (madeExportDir) fs::remove(a.exportDir, ec);  // only while empty
    return fail(message);
  };
  model::ModelCircuitsOptions opt;
  opt.layer = a.layer;
  opt.head = a.head;
  opt.memoryBudgetBytes = a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : defaultMemoryBudget();
  auto c = model::computeModelCircuits(mt->folder, mt->ids, opt);
  if (!c) return failClean(c.error().message);
  // The token-space axes as the text spells them (the Model tab's labels, a token's first occurrence).
  std::map<int, std::string> spelled;
  for (std::size_t t = 0; t < mt->ids.size(); ++t) spelled.emplace(mt->ids[t], mt->labels[t]);
  std::vector<std::string> axisLabels;
  for (const int id : c->tokenIds) axisLabels.push_back(spelled.count(id) ? spelled[id] : "#" + std::to_string(id));
  printReport(*mt, *c, mt->labels);
  // The pictures first: if one cannot be written, the command fails with no --json either.
  if (!a.exportDir.empty()) {
    if (auto s = writeExport(a.exportDir, *mt, *c, axisLabels, mt->labels); !s) return failClean(s.error().message);
  }
  if (!a.json.empty()) {
    if (auto s = writeFileAtomic(a.json, circuitsJson(*mt, *c, axisLabels, mt->labels).dump(2) + "\n"); !s) {
      return fail(s.error().message);
    }
    std::printf("wrote %s\n", a.json.c_str());
  }
  return 0;
}

}  // namespace mhascope::cli
