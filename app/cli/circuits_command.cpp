// `mhascope circuits` (circuits_command.hpp): what the heads of a model compute, from its weights alone
// (core/analysis), for either source of layers — the checkpoint's here, the model folder's in
// circuits_model.cpp, what both share in circuits_files.cpp —
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
// command writes) and is written as one unit after everything else succeeded (output_folder.hpp); no
// output replaces a file of the model folder or the text file.
//
// [SECTION] index: checkpoint · options and dispatch (the model folder: circuits_model.cpp; what both
// share: circuits_files.cpp)
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

void printCheckpointReport(const Checkpoint& ck, const Circuits& c, const Composition* picked) {
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
  printVirtualHeads(virtualHeadsText(c));
  if (picked) std::printf("The pair asked for: %s\n", virtualPairText(c, *picked).c_str());
  const std::vector<Read> reads = readsByStrength(c);
  std::printf("\nStrongest reads\n");
  for (std::size_t i = 0; i < reads.size() && i < 3; ++i) {
    const Read& r = reads[i];
    std::printf("  %s reads %s through %s: %c-composition %.2f, baseline %.2f\n",
                headName(r.pair->toLayer, r.pair->toHead).c_str(), headName(r.pair->fromLayer, r.pair->fromHead).c_str(),
                throughWhat(r.kind), r.kind, r.score, c.baseline);
  }
}

nlohmann::json checkpointJson(const Circuits& c, const ProbeRollout& r, const Composition* picked) {
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
  nlohmann::json pair = nullptr;  // --pair's
  if (picked) {
    const std::size_t i = static_cast<std::size_t>(picked - c.pairs.data());
    pair = {{"from", {picked->fromLayer, picked->fromHead}}, {"to", {picked->toLayer, picked->toHead}},
            {"virtual_copying", picked->virtualCopying},
            {"virtual_diagonal", i < c.virtualDiagonalTop.size() ? nlohmann::json(c.virtualDiagonalTop[i]) : nlohmann::json(nullptr)}};
  }
  return {{"pairs", pairs},       {"copying", copying}, {"diagonal", diagonal},          {"baseline", c.baseline},
          {"rollout", rollout},   {"virtual_heads", virtualHeadsJson(c.pairs)}, {"pair", pair}};
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
    if (auto s = writeVirtualHeads(dir / "virtual_heads.npy", c.pairs); !s) return s.error();
    ++files;
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

}  // namespace

int runCircuitsCheckpoint(const CircuitsArgs& a) {
  if (a.checkpoint.empty()) return fail("circuits needs --checkpoint F (a training checkpoint) or --model DIR (a model folder)");
  std::optional<HeadPair> pair;
  if (!a.pair.empty()) {  // its form now; its range once the model's sizes are known
    auto p = parsePair(a.pair);
    if (!p) return fail(p.error().message);
    pair = *p;
  }
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
  const Composition* picked = nullptr;
  if (pair) {
    if (const std::string why = checkPair(*pair, c.layers, c.heads); !why.empty()) {
      return fail("--pair '" + a.pair + "': " + why + " in '" + a.checkpoint + "'");
    }
    picked = c.pair(*pair);
  }
  const ProbeRollout rollout = checkpointRollout(*ck, a.text.value_or(""), budget);
  if (c.pairs.empty()) {
    std::fprintf(stderr, "mhascope: warning: '%s' has %d layer: composition needs two or more, so only the copying "
                         "scores are shown\n",
                 a.checkpoint.c_str(), c.layers);
  }
  printCheckpointReport(*ck, c, picked);
  printCheckpointRollout(rollout);
  const std::string note = c.tokenSpace ? "" : " (no token-space matrices: vocab " + std::to_string(c.vocab) + " is above " +
                                                   std::to_string(kMaxTokenSpaceVocab) + ")";
  const Status written = writeOutputs(a, exportTarget, checkpointJson(c, rollout, picked), note,
                                      [&](const std::filesystem::path& dir) { return writeCheckpointExport(dir, *ck, c, rollout); });
  return written ? 0 : fail(written.error().message);
}

namespace {

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
  c->add_option("--pair", a.pair, "a pair of heads whose virtual head (the path through both OVs) to show, as "
                                  "LAYER.HEAD,LAYER.HEAD: 0.0,1.1 is layer 0 head 0 → layer 1 head 1 (with --model: its "
                                  "token-space OV over the text's tokens too)");
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

int cmdCircuits(const CircuitsArgs& a) { return a.modelDir.empty() ? runCircuitsCheckpoint(a) : runCircuitsModel(a); }

}  // namespace mhascope::cli
