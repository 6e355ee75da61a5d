// `mhascope circuits --model DIR` (circuits_command.hpp): around one head (--layer, --head) of a
// Hugging Face model folder on --text / --text-file — its composition with every head of the other
// layers (strongest first), every head's copying score as a layers x heads table, the words of each
// view and the text's rollout; --json every number, --export-dir the head's matrices, the
// composition and copying tables and the rollout. No output goes inside the model folder or onto
// the text file. The checkpoint source and the options: circuits_command.cpp; what both share:
// circuits_files.cpp.
#include "options.hpp"
#include "commands.hpp"
#include "circuits_command.hpp"
#include "circuits_files.hpp"
#include "command_common.hpp"  // fail

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "analysis/circuit_texts.hpp"
#include "analysis/circuits.hpp"
#include "export/export.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "model/circuits_source.hpp"
#include "model_options.hpp"  // nonEmptyPath, decimalInteger
#include "output_folder.hpp"
#include "model_source/model_source.hpp"
#include "model_source/model_text.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {
namespace {

using namespace mhascope::analysis;  // NOLINT(google-build-using-namespace): the circuits' types

void printPairs(const char* title, const std::vector<Composition>& pairs, double baseline, std::size_t shown) {
  std::vector<const Composition*> order;
  for (const Composition& p : pairs) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Composition* x, const Composition* y) { return strongest(*x) > strongest(*y); });
  std::printf("\n%s: %zu pair%s, strongest first%s\n", title, pairs.size(), pairs.size() == 1 ? "" : "s",
              order.size() > shown ? (" (the first " + std::to_string(shown) + "; --json has all)").c_str() : "");
  printPairHeader();
  for (std::size_t i = 0; i < order.size() && i < shown; ++i) printPairRow(*order[i], baseline);
}

void printModelReport(const ModelText& mt, const OneHeadCircuits& c, const std::vector<std::string>& tokens) {
  const model::ModelSpec& s = mt.folder.spec();
  std::printf("mhascope circuits: %s model %s: %d layers x %d heads (%d K/V heads), d_model %d, d_k %d, vocab %d; "
              "T = %zu tokens\n",
              s.family->modelType, mt.folder.dir().c_str(), c.layers, c.heads, c.kvHeads, c.dModel, c.dk, c.vocab,
              mt.ids.size());
  std::printf("The chosen head: %s. Norm gains folded into the weights that read the normed stream; centring and "
              "biases left out\n(Elhage et al. 2021)%s. ",
              headName(c.layer, c.head).c_str(),
              s.rope() ? "; with RoPE, QK is the content part of the score only" : "");
  if (const std::string note = model::circuitsFamilyNote(s); !note.empty()) std::printf("%s\n", note.c_str());
  printScoreDefinitions(c.baseline);
  if (c.reads.empty() && c.readBy.empty()) {
    std::printf("\nComposition: none; this model has one layer\n");
  } else {
    if (c.layer > 0) printPairs(("What " + headName(c.layer, c.head) + " reads (every head of layers 0 .. " +
                                 std::to_string(c.layer - 1) + ")").c_str(),
                                c.reads, c.baseline, 10);
    if (c.layer + 1 < c.layers) printPairs(("Who reads " + headName(c.layer, c.head) + " (every head of layers " +
                                            std::to_string(c.layer + 1) + " .. " + std::to_string(c.layers - 1) + ")").c_str(),
                                           c.readBy, c.baseline, 10);
    for (const char kind : {'Q', 'K', 'V'}) std::printf("  %s\n", oneHeadCompositionText(c, kind).c_str());
  }
  std::printf("\nCopying score of every head (OV's eigenvalues in token space over the whole vocabulary: sum / sum of "
              "moduli; 1 is consistent with copying, not proof: the chosen head's diagonal is below)\n      ");
  for (int h = 0; h < c.heads; ++h) std::printf(" %6s", ("H" + std::to_string(h)).c_str());
  std::printf("\n");
  for (int l = 0; l < c.layers; ++l) {
    std::printf("  %-4s", ("L" + std::to_string(l)).c_str());
    for (int h = 0; h < c.heads; ++h) std::printf(" %6.3f", c.copyingAt(l, h));
    std::printf("\n");
  }
  std::printf("  %s\n", oneHeadCopyingText(c).c_str());
  if (!c.reads.empty() || !c.readBy.empty()) printVirtualHeads(oneHeadVirtualHeadsText(c));
  if (c.picked) std::printf("The pair asked for: %s\n", pickedVirtualText(c).c_str());
  if (c.rollout.empty()) {
    printRolloutMissing(c.rollout.why);
  } else {
    std::printf("\nAttention rollout of the text through %d layers\n  %s\n", c.layers,
                rolloutText(c.rollout.rolled, c.layers, c.rollout.rawLast, tokens, static_cast<int>(c.rollout.rolled.rows()) - 1).c_str());
  }
}

nlohmann::json modelJson(const ModelText& mt, const OneHeadCircuits& c, const std::vector<std::string>& axisLabels,
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
  if (!c.rollout.empty()) rollout = {{"tokens", tokens}, {"matrix", matrixJson(c.rollout.rolled)}};
  nlohmann::json pair = nullptr;  // --pair's
  if (c.picked) {
    const VirtualHead& v = *c.picked;
    nlohmann::json veig = nlohmann::json::array();
    for (const auto& z : v.eigenvalues) veig.push_back({z.real(), z.imag()});
    pair = {{"from", {v.fromLayer, v.fromHead}}, {"to", {v.toLayer, v.toHead}}, {"virtual_copying", v.copying},
            {"eigenvalues", veig}, {"ov_tokens", matrixJson(v.ovTokens)}, {"diagonal", v.diagonalTop}};
  }
  return {{"model", mt.folder.dir()},
          {"layer", c.layer},
          {"head", c.head},
          {"baseline", c.baseline},
          {"reads", pairsJson(c.reads)},
          {"read_by", pairsJson(c.readBy)},
          {"copying", copying},
          {"diagonal", c.diagonalTop},  // the chosen head's diagonal check over the text's tokens
          {"eigenvalues", eig},
          {"token_ids", c.tokenIds},
          {"token_labels", axisLabels},
          {"qk_tokens", matrixJson(c.qkTokens)},
          {"ov_tokens", matrixJson(c.ovTokens)},
          {"qk_positions", matrixJson(c.qkPositions)},
          {"rollout", rollout},
          {"rollout_why", c.rollout.why},
          {"virtual_heads", virtualHeadsJson(pairsThrough(c))},
          {"pair", pair}};
}

// Q, K or V of the chosen head against every head as one layers x heads table: the reads in the
// earlier layers, the readers in the later ones, the head's own layer 0 (drawn blocked).
RowMatrix compositionMap(const OneHeadCircuits& c, char kind) {
  RowMatrix m = RowMatrix::Zero(c.layers, c.heads);
  for (const Composition& p : c.reads) m(p.fromLayer, p.fromHead) = static_cast<float>(compositionScore(p, kind));
  for (const Composition& p : c.readBy) m(p.toLayer, p.toHead) = static_cast<float>(compositionScore(p, kind));
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

// Every file of the export into `dir` (an output folder's temporary folder); the number written.
Result<int> writeModelExport(const std::filesystem::path& dir, const ModelText& mt, const OneHeadCircuits& c,
                             const std::vector<std::string>& axisLabels, const std::vector<std::string>& tokens) {
  namespace fs = std::filesystem;
  const std::string subtitle = fs::path(mt.folder.dir()).filename().string() + " (norm gains folded, biases left out)";
  const std::string at = "_l" + std::to_string(c.layer) + "_h" + std::to_string(c.head);
  const std::string who = headName(c.layer, c.head) + ": ";
  std::vector<MatrixFile> list = {
      {"qk" + at, &c.qk, who + "QK = W_q W_k^T (query x QK key^T = score; W as y = x W stores it)", "d_model (query)", "d_model (key)", false},
      {"ov" + at, &c.ov, who + "OV = W_v W_o (what the head writes for a key; W as y = x W stores it)", "d_model (attended)", "d_model (written)", false},
      {"qk_tokens" + at, &c.qkTokens, who + "E QK E^T over the text's tokens (which token looks at which)", "query token",
       "key token", true},
      {"ov_tokens" + at, &c.ovTokens, who + "E OV U over the text's tokens (attending to a token raises these logits)",
       "attended token", "predicted token", true}};
  if (c.qkPositions.size() > 0) {
    list.push_back({"qk_positions" + at, &c.qkPositions,
                    who + "P QK P^T over the text's positions (which position looks at which, positions alone)",
                    "query position", "key position", false});
  }
  int files = 0;
  for (const MatrixFile& f : list) {
    if (auto s = writeMatrix(dir, f, axisLabels, subtitle); !s) return s.error();
    files += 2;
  }
  if (c.picked) {
    const VirtualHead& v = *c.picked;
    const MatrixFile f{virtualStem({v.fromLayer, v.fromHead, v.toLayer, v.toHead}), &v.ovTokens,
                       headName(v.fromLayer, v.fromHead) + " → " + headName(v.toLayer, v.toHead) +
                           ": the virtual head's E OV^a OV^b U over the text's tokens",
                       "attended token", "predicted token", true};
    if (auto s = writeMatrix(dir, f, axisLabels, subtitle); !s) return s.error();
    files += 2;
  }
  if (auto s = writeVirtualHeads(dir / "virtual_heads.npy", pairsThrough(c)); !s) return s.error();
  ++files;
  if (auto s = writePairs(dir / "composition_reads.npy", c.reads); !s) return s.error();
  if (auto s = writePairs(dir / "composition_read_by.npy", c.readBy); !s) return s.error();
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
    opt.colormap = defaultColormap(DataKind::Probability);
    opt.range = ColorRange{0.0f, top > 0 ? top : 1.0f};
    opt.blockedLegend = "the chosen head's own layer: heads of one layer do not compose";
    opt.title = std::string(1, kind) + "-composition with " + headName(c.layer, c.head) +
                ": earlier layers it reads, later layers that read it (random baseline " + formatGeneral(c.baseline, 3) + ")";
    opt.subtitle = subtitle;
    const std::string name = std::string("composition_") + static_cast<char>(kind - 'A' + 'a') + at + ".png";
    if (auto s = exportHeatmap((dir / name).string(), sl, opt); !s) return s.error();
    ++files;
  }
  RowMatrix copying(c.layers, c.heads);
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) copying(l, h) = static_cast<float>(c.copyingAt(l, h));
  if (auto s = saveNpy((dir / "copying.npy").string(), toTensor(copying.data(), c.layers, c.heads)); !s) return s.error();
  ++files;
  if (!c.rollout.empty()) {
    if (auto s = writeRolloutFiles(dir, c.rollout.rolled, tokens, c.layers, subtitle); !s) return s.error();
    files += 2;
  }
  return files;
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
  if (auto s = refuseInsideModelFolder("--json", a.json, modelDir); !s) return s;
  if (auto s = refuseInsideModelFolder("--export-dir", a.exportDir, modelDir); !s) return s;
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

int runCircuitsModel(const CircuitsArgs& a) {
  auto mt = loadModelText(a.modelDir, a.text, a.textFile, a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : 0);
  if (!mt) return fail(mt.error().message);
  if (!mt->textNote.empty()) warn(mt->textNote);
  // Every file the folder is read from, and the text: no output may replace one, --force or not.
  auto inputs = modelFolderFiles(mt->folder.dir());
  if (!a.textFile.empty()) inputs.push_back({"--text-file", a.textFile});
  if (auto s = checkModelOutputs(a, mt->folder.dir()); !s) return fail(s.error().message);
  if (!a.json.empty()) {
    if (auto s = checkJsonOutput(a.json, a.force, inputs); !s) return fail(s.error().message);
  }
  // Checked now (and its temporary folder tried), so a name that cannot be made fails before
  // minutes of computing.
  std::filesystem::path exportTarget;
  if (!a.exportDir.empty()) {
    auto t = outputFolderTarget(kCircuitsExport, a.exportDir);
    if (!t) return fail(t.error().message);
    exportTarget = *t;
  }
  model::ModelCircuitsOptions opt;
  opt.layer = a.layer;
  opt.head = a.head;
  if (!a.pair.empty()) {  // its form, then its range against the folder's sizes
    auto p = parsePair(a.pair);
    if (!p) return fail(p.error().message);
    const model::ModelSpec& spec = mt->folder.spec();
    if (const std::string why = checkPair(*p, spec.layers, spec.heads); !why.empty()) {
      return fail("--pair '" + a.pair + "': " + why + " (" + mt->folder.dir() + "/config.json)");
    }
    opt.pair = *p;
  }
  opt.memoryBudgetBytes = a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : defaultMemoryBudget();
  auto c = model::computeModelCircuits(mt->folder, mt->ids, opt);
  if (!c) return fail(c.error().message);
  // The token-space axes as the text spells them (the Model tab's labels, a token's first occurrence).
  std::map<int, std::string> spelled;
  for (std::size_t t = 0; t < mt->ids.size(); ++t) spelled.emplace(mt->ids[t], mt->labels[t]);
  std::vector<std::string> axisLabels;
  for (const int id : c->tokenIds) axisLabels.push_back(spelled.count(id) ? spelled[id] : "#" + std::to_string(id));
  printModelReport(*mt, *c, mt->labels);
  const Status written = writeOutputs(a, exportTarget, modelJson(*mt, *c, axisLabels, mt->labels), "",
                                      [&](const std::filesystem::path& dir) {
                                        return writeModelExport(dir, *mt, *c, axisLabels, mt->labels);
                                      });
  return written ? 0 : fail(written.error().message);
}

}  // namespace mhascope::cli
