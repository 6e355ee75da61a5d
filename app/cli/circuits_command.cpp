// `mhascope circuits`: what the heads of a model compute, from its weights alone (core/analysis), for
// either source of layers —
//   --checkpoint F  a training checkpoint: the composition of every pair of heads in different layers
//                   with the random baseline, each head's copying score, the strongest reads in words,
//                   and the attention rollout of the task's probe sequence (--text: the text task's
//                   input, which its checkpoint does not store); --json the scores, --export-dir every
//                   head's QK / OV matrices and their token-space versions as .npy and PNG heatmaps;
//   --model DIR     a Hugging Face model folder, around one head (--layer, --head) on --text /
//                   --text-file: its composition with every head of the other layers (strongest first),
//                   every head's copying score as a layers x heads table, the words of each view and
//                   the text's rollout; --json every number, --export-dir the head's matrices, the
//                   composition and copying tables and the rollout.
// Outputs are checked before anything is computed: an existing --json file is replaced only with
// --force; --export-dir must be new, empty, or an earlier circuits export (only the file names this
// command writes), and each file in it is written atomically; no output replaces a file of the model
// folder or the text file.
//
// [SECTION] index: shared printing · checkpoint · model folder · options and dispatch
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
#include "analysis/rollout.hpp"
#include "export/export.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "model/circuits_source.hpp"
#include "model_options.hpp"  // nonEmptyPath, decimalInteger
#include "output_folder.hpp"
#include "model_source/model_source.hpp"
#include "model_source/model_text.hpp"
#include "train/checkpoint.hpp"
#include "train/circuits_source.hpp"
#include "train/layer_model.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {
namespace {

using namespace mhascope::analysis;
using train::Checkpoint;
using train::checkCircuitsInput;
using train::checkpointRollout;
using train::loadCheckpoint;
using train::ProbeRollout;
using train::taskName;

// [SECTION] shared printing

// What the scores are and the baseline they stand against (after each source's conventions).
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

// The strongest of a composition's three scores.
double strongest(const Composition& p) { return std::max({p.q, p.k, p.v}); }

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

// [SECTION] checkpoint

const char* throughWhat(char kind) { return kind == 'Q' ? "its queries" : kind == 'K' ? "its keys" : "its values"; }

void printCheckpointRollout(const ProbeRollout& r) {
  if (r.rollout.empty()) {
    printRolloutMissing(r.rollout.why);
    return;
  }
  std::string seq;
  for (const std::string& t : r.tokens) seq += (seq.empty() ? "" : " ") + t;
  std::printf("\nAttention rollout on %s (T = %zu: %s)\n  %s\n", r.input.c_str(), r.tokens.size(), seq.c_str(),
              rolloutText(r.rollout, r.tokens, static_cast<int>(r.tokens.size()) - 1).c_str());
}

void printCheckpointReport(const Checkpoint& ck, const Circuits& c) {
  std::printf("mhascope circuits: %s (%s task, step %lld): %d layer%s x %d head%s, d_model %d, d_k %d, vocab %d\n",
              ck.origin.c_str(), taskName(ck.task.kind), static_cast<long long>(ck.step), c.layers,
              c.layers == 1 ? "" : "s", c.heads, c.heads == 1 ? "" : "s", c.dModel, c.dk, c.vocab);
  std::printf("LayerNorm and biases left out, as in Elhage et al. 2021. ");
  printScoreDefinitions(c.baseline);
  if (c.pairs.empty()) {
    std::printf("\nComposition: none; this model has %d layer, and composition needs a head of a later layer reading "
                "one of an earlier layer (train with --layers 2 or more)\n",
                c.layers);
  } else {
    std::printf("\nComposition (every pair of heads in different layers)\n");
    printPairHeader();
    for (const Composition& p : c.pairs) printPairRow(p, c.baseline);
  }
  std::printf("\nCopying score (OV's eigenvalues in token space: sum / sum of moduli; 1 is consistent with copying, "
              "not proof) and diagonal (share of tokens whose own logit E OV U raises most)\n");
  for (const HeadCircuit& h : c.perHead) {
    if (c.tokenSpace) {
      std::printf("  %-16s %7.3f %7.1f %%\n", headName(h.layer, h.head).c_str(), h.copying, 100.0 * h.diagonalTop);
    } else {
      std::printf("  %-16s %7.3f       -\n", headName(h.layer, h.head).c_str(), h.copying);
    }
  }
  if (c.pairs.empty()) return;
  const std::vector<Read> reads = readsByStrength(c);
  std::printf("\nStrongest reads\n");
  for (std::size_t i = 0; i < reads.size() && i < 3; ++i) {
    const Read& r = reads[i];
    std::printf("  %s reads %s through %s: %c-composition %.2f, baseline %.2f\n",
                headName(r.pair->toLayer, r.pair->toHead).c_str(), headName(r.pair->fromLayer, r.pair->fromHead).c_str(),
                throughWhat(r.kind), r.kind, r.score, c.baseline);
  }
}

nlohmann::json checkpointJson(const Circuits& c, const ProbeRollout& r) {
  const nlohmann::json pairs = pairsJson(c.pairs);
  nlohmann::json copying = nlohmann::json::array(), diagonal = nlohmann::json::array();
  for (int l = 0; l < c.layers; ++l) {
    nlohmann::json row = nlohmann::json::array(), drow = nlohmann::json::array();
    for (int h = 0; h < c.heads; ++h) {
      row.push_back(c.at(l, h).copying);
      // The diagonal check beside the copying score; null where the token-space matrices are skipped.
      const double d = c.at(l, h).diagonalTop;
      drow.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
    }
    copying.push_back(row);
    diagonal.push_back(drow);
  }
  nlohmann::json rollout = nullptr;  // null: no probe sequence (a text task without --text)
  if (!r.rollout.empty()) rollout = {{"tokens", r.tokens}, {"matrix", matrixJson(r.rollout.rolled)}};
  return {{"pairs", pairs}, {"copying", copying}, {"diagonal", diagonal}, {"baseline", c.baseline}, {"rollout", rollout}};
}

std::vector<std::string> tokenLabels(const Checkpoint& ck, int vocab) {
  std::vector<std::string> out;
  for (int v = 0; v < vocab; ++v) {
    out.push_back(static_cast<std::size_t>(v) < ck.alphabet.size() ? ck.alphabet[static_cast<std::size_t>(v)] : std::to_string(v));
  }
  return out;
}

// Per kind and per (earlier layer, later layer): an h x h picture, rows the earlier layer's heads,
// columns the later layer's; one range, 0 … the largest score of any kind, so Q, K and V compare.
Status writeCompositionPictures(const std::filesystem::path& dir, const Circuits& c, const std::string& subtitle,
                                int& files) {
  float top = 0;
  for (const Composition& p : c.pairs) top = std::max({top, static_cast<float>(p.q), static_cast<float>(p.k), static_cast<float>(p.v)});
  for (int la = 0; la < c.layers; ++la) {
    for (int lb = la + 1; lb < c.layers; ++lb) {
      for (const char kind : {'q', 'k', 'v'}) {
        RowMatrix m(c.heads, c.heads);  // (h of layer la, h of layer lb)
        for (const Composition& p : c.pairs) {
          if (p.fromLayer != la || p.toLayer != lb) continue;
          m(p.fromHead, p.toHead) = static_cast<float>(kind == 'q' ? p.q : kind == 'k' ? p.k : p.v);
        }
        Slice2D sl;
        sl.stage = StageId::Scores;
        sl.rows = sl.cols = c.heads;
        sl.data = m.data();
        sl.rowAxis = "a (writes)";
        sl.colAxis = "b (reads)";
        for (int h = 0; h < c.heads; ++h) {
          sl.rowLabels.push_back(headTag(la, h));
          sl.colLabels.push_back(headTag(lb, h));
        }
        ExportOptions opt;
        opt.colormap = defaultColormap(DataKind::Probability);
        opt.range = ColorRange{0.0f, top > 0 ? top : 1.0f};
        opt.cellPixels = 64;  // a few heads: cells big enough for their numbers
        opt.title = kind == 'q' ? "Q" : kind == 'k' ? "K" : "V";
        opt.title += "-composition of layer ";
        opt.title += std::to_string(lb);
        opt.title += " with layer ";
        opt.title += std::to_string(la);
        opt.title += " (random baseline ";
        opt.title += formatGeneral(c.baseline, 3);
        opt.title += ")";
        opt.subtitle = subtitle;
        const std::string name = std::string("composition_") + kind + "_l" + std::to_string(la) + "_l" + std::to_string(lb) + ".png";
        if (auto s = exportHeatmap((dir / name).string(), sl, opt); !s) return s;
        ++files;
      }
    }
  }
  return Ok{};
}

// What --export-dir writes, as one output folder: the per-head matrices, the score tables, the
// composition pictures and the rollout (isExportFileName).
const OutputFolderKind kCircuitsExport{"--export-dir", "a circuits export", isExportFileName};

// The outputs last, as one unit: the export into its temporary folder, then --json, then the
// export into place — a failure anywhere leaves the earlier export and the earlier --json file.
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

// Every file of the export into `dir` (an output folder's temporary folder); the number written.
Result<int> writeCheckpointExport(const std::filesystem::path& dir, const Checkpoint& ck, const Circuits& c,
                                  const ProbeRollout& rollout) {
  const std::vector<std::string> labels = tokenLabels(ck, c.vocab);
  const std::string subtitle = ck.origin + ", step " + std::to_string(ck.step) + " (LayerNorm and biases left out)";
  int files = 0;
  for (const HeadCircuit& h : c.perHead) {
    const std::string at = "_l" + std::to_string(h.layer) + "_h" + std::to_string(h.head);
    const std::string who = headName(h.layer, h.head) + ": ";
    std::vector<MatrixFile> list = {
        {"qk" + at, &h.qk, who + "QK = W_q^T W_k (query x QK key^T = score)", "d_model (query)", "d_model (key)", false},
        {"ov" + at, &h.ov, who + "OV = W_v^T W_o^T (what the head writes for a key)", "d_model (attended)", "d_model (written)", false}};
    if (c.tokenSpace) {
      list.push_back({"qk_tokens" + at, &h.qkTokens, who + "E QK E^T (which token looks at which)", "query token", "key token", true});
      list.push_back({"ov_tokens" + at, &h.ovTokens, who + "E OV U (attending to a token raises these logits)",
                      "attended token", "predicted token", true});
    }
    if (c.positions > 0) {
      list.push_back({"qk_positions" + at, &h.qkPositions, who + "P QK P^T (which position looks at which, positions alone)",
                      "query position", "key position", false});
    }
    for (const MatrixFile& f : list) {
      if (auto s = writeMatrix(dir, f, labels, subtitle); !s) return s.error();
      files += 2;
    }
  }
  RowMatrix comp(static_cast<Eigen::Index>(c.pairs.size()), 3);  // (pairs, 3): Q, K, V in the table's order
  for (std::size_t i = 0; i < c.pairs.size(); ++i) comp.row(static_cast<Eigen::Index>(i)) << static_cast<float>(c.pairs[i].q),
      static_cast<float>(c.pairs[i].k), static_cast<float>(c.pairs[i].v);
  RowMatrix copying(c.layers, c.heads);
  for (int l = 0; l < c.layers; ++l)
    for (int h = 0; h < c.heads; ++h) copying(l, h) = static_cast<float>(c.at(l, h).copying);
  if (!c.pairs.empty()) {
    if (auto s = saveNpy((dir / "composition.npy").string(), toTensor(comp.data(), comp.rows(), 3)); !s) return s.error();
    ++files;
    if (auto s = writeCompositionPictures(dir, c, subtitle, files); !s) return s.error();
  }
  if (auto s = saveNpy((dir / "copying.npy").string(), toTensor(copying.data(), c.layers, c.heads)); !s) return s.error();
  ++files;
  if (!rollout.rollout.empty()) {
    const analysis::Rollout& r = rollout.rollout;
    if (auto s = writeRolloutFiles(dir, r.rolled, rollout.tokens, r.layers, subtitle); !s) return s.error();
    files += 2;
  }
  return files;
}

int runCheckpoint(const CircuitsArgs& a) {
  if (a.checkpoint.empty()) return fail("circuits needs --checkpoint F (a training checkpoint) or --model DIR (a model folder)");
  if (!a.json.empty()) {
    if (auto s = checkJsonOutput(a.json, a.force, {{"--checkpoint", a.checkpoint}}); !s) return fail(s.error().message);
  }
  std::filesystem::path exportTarget;
  if (!a.exportDir.empty()) {
    auto t = outputFolderTarget(kCircuitsExport, a.exportDir);
    if (!t) return fail(t.error().message);
    exportTarget = *t;
  }
  const std::uint64_t budget = a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : defaultMemoryBudget();
  auto ck = loadCheckpoint(a.checkpoint, budget);
  if (!ck) return fail(ck.error().message);
  if (auto s = checkCircuitsInput(ck->params); !s) return fail("'" + a.checkpoint + "': " + s.error().message);
  const Circuits c = train::computeCircuits(ck->params);
  const ProbeRollout rollout = checkpointRollout(*ck, a.text.value_or(""), budget);
  if (c.pairs.empty()) {
    std::fprintf(stderr, "mhascope: warning: '%s' has %d layer: composition needs two or more, so only the copying "
                         "scores are shown\n",
                 a.checkpoint.c_str(), c.layers);
  }
  printCheckpointReport(*ck, c);
  printCheckpointRollout(rollout);
  const std::string note = c.tokenSpace ? "" : " (no token-space matrices: vocab " + std::to_string(c.vocab) + " is above " +
                                                   std::to_string(kMaxTokenSpaceVocab) + ")";
  const Status written = writeOutputs(a, exportTarget, checkpointJson(c, rollout), note,
                                      [&](const std::filesystem::path& dir) { return writeCheckpointExport(dir, *ck, c, rollout); });
  return written ? 0 : fail(written.error().message);
}

// [SECTION] model folder

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
          {"rollout_why", c.rollout.why}};
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

int runModel(const CircuitsArgs& a) {
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

// [SECTION] options and dispatch

void addCircuitsOptions(CLI::App* c, CircuitsArgs& a) {
  c->footer("Outputs: an existing --json file is replaced only with --force; --export-dir must be a new or empty "
            "folder or an earlier circuits export.");
  auto* checkpoint = c->add_option("--checkpoint", a.checkpoint, "a training checkpoint .safetensors (mhascope train --save)")
                         ->check(nonEmptyPath());
  auto* model = c->add_option("--model", a.modelDir, "a Hugging Face model folder (or its config.json): the circuits "
                                                   "around one head (--layer, --head) on --text / --text-file")
                    ->check(nonEmptyPath())
                    ->excludes(checkpoint);
  c->add_option("--layer", a.layer, "with --model: the chosen head's layer")
      ->transform(decimalInteger(0, INT_MAX))
      ->needs(model)
      ->capture_default_str();
  c->add_option("--head", a.head, "with --model: the chosen head")
      ->transform(decimalInteger(0, INT_MAX))
      ->needs(model)
      ->capture_default_str();
  c->add_option("--json", a.json, "write every score to this file (checkpoint: pairs, copying, baseline, rollout; "
                                  "--model: the head's reads, read_by, copying of every head, token-space matrices, "
                                  "rollout)")
      ->check(nonEmptyPath());
  c->add_option("--export-dir", a.exportDir, "write QK, OV, E QK E^T and E OV U as .npy and PNG heatmaps (checkpoint: "
                                             "every head's, composition.npy, copying.npy; --model: the head's, its "
                                             "composition maps and tables, copying.npy) and the rollout, into this folder")
      ->check(nonEmptyPath());
  c->add_flag("--force", a.force, "replace an existing --json file");
  auto* text = c->add_option("--text", a.text, "the rollout's input for a checkpoint of the text task (which does not "
                                              "store its text; the other tasks use their probe sequence); with --model, "
                                              "the model's text, verbatim");
  c->add_option("--text-file", a.textFile, "with --model: read the text from this file, verbatim")
      ->check(nonEmptyPath())
      ->excludes(text)
      ->needs(model);
  c->add_option("--memory-budget", a.memoryBudgetMib, "refuse a checkpoint or model whose reading would pass this "
                                                      "many MiB (default: half of the available memory)")
      ->transform(decimalInteger(1, 1ull << 30));
}

}  // namespace

CommandRun addCircuitsCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<CircuitsArgs>();
  addCircuitsOptions(&cmd, *a);
  return [a](CommandContext&) { return cmdCircuits(*a); };
}

int cmdCircuits(const CircuitsArgs& a) { return a.modelDir.empty() ? runCheckpoint(a) : runModel(a); }

}  // namespace mhascope::cli
