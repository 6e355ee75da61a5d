// `mhascope circuits`: load a checkpoint, compute its circuits (core/train/circuits.cpp), print the
// composition table, the copying scores and the strongest reads in words, then write what was asked.
// Outputs are checked before anything is computed: an existing --json file is replaced only with
// --force; --export-dir must be new, empty, or an earlier circuits export (only the file names this
// command writes), and each file in it is written atomically.
#include "options.hpp"
#include "commands.hpp"
#include "circuits_command.hpp"
#include "circuits_files.hpp"
#include "command_common.hpp"  // fail

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "export/export.hpp"
#include "io/file_io.hpp"
#include "io/npy.hpp"
#include "model_options.hpp"  // nonEmptyPath, decimalInteger
#include "train/checkpoint.hpp"
#include "train/circuits.hpp"
#include "train/layer_model.hpp"
#include "train/rollout.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {
namespace {

using namespace mhascope::train;

const char* throughWhat(char kind) { return kind == 'Q' ? "its queries" : kind == 'K' ? "its keys" : "its values"; }

// The attention rollout of the task's probe sequence (item 0): the last layer's T x T and the tokens;
// or why there is none (a text task without --text, a forward over the budget).
struct RolloutOut {
  std::vector<std::string> tokens;
  std::vector<RowMatrix> rolled;  // per layer
  RowMatrix rawLast;              // the last layer's weights, mean over heads
  std::string why;                // "" when rolled is filled
  std::string input;              // what was rolled out: "the task's probe sequence" / "--text"
};

RolloutOut probeRollout(const Checkpoint& ck, const std::string& text, std::uint64_t budget) {
  RolloutOut out;
  auto probe = checkpointProbe(ck, 1, text);
  if (!probe) {
    out.why = probe.error().message;
    return out;
  }
  auto snap = sequenceSnapshot(ck.params, probe->batch, budget);
  if (!snap) {
    out.why = snap.error().message;
    return out;
  }
  out.tokens = probe->labels.front();
  out.input = ck.task.kind == TaskKind::Text ? "--text" : "the task's probe sequence";
  out.rolled = attentionRollout(*snap);
  out.rawLast = meanHeadWeights(*snap, snap->layers - 1);
  return out;
}

void printRollout(const RolloutOut& r) {
  if (!r.why.empty()) {
    std::printf("\nAttention rollout: not computed: %s\n", r.why.c_str());
    return;
  }
  std::string seq;
  for (const std::string& t : r.tokens) seq += (seq.empty() ? "" : " ") + t;
  std::printf("\nAttention rollout on %s (T = %zu: %s)\n  %s\n", r.input.c_str(), r.tokens.size(), seq.c_str(),
              rolloutText(r.rolled, r.rawLast, r.tokens, static_cast<int>(r.tokens.size()) - 1).c_str());
}

void printReport(const Checkpoint& ck, const Circuits& c) {
  std::printf("mhascope circuits: %s (%s task, step %lld): %d layer%s x %d head%s, d_model %d, d_k %d, vocab %d\n",
              ck.origin.c_str(), taskName(ck.task.kind), static_cast<long long>(ck.step), c.layers,
              c.layers == 1 ? "" : "s", c.heads, c.heads == 1 ? "" : "s", c.dModel, c.dk, c.vocab);
  std::printf("LayerNorm and biases left out, as in Elhage et al. 2021. Scores are ||product||_F / (||.||_F ||.||_F):\n"
              "  Q = ||OV^a QK^b||  K = ||QK^b OV^a^T||  V = ||OV^a OV^b||  (a earlier, b later)\n"
              "random baseline %.3f: the mean score of random Gaussian heads of these shapes (%d sampled pairs)\n",
              c.baseline, kBaselineSamples);
  if (c.pairs.empty()) {
    std::printf("\nComposition: none; this model has %d layer, and composition needs a head of a later layer reading "
                "one of an earlier layer (train with --layers 2 or more)\n",
                c.layers);
  } else {
    std::printf("\nComposition (every pair of heads in different layers)\n");
    std::printf("  %-16s %-16s %6s %6s %6s %9s\n", "from (a)", "to (b)", "Q", "K", "V", "baseline");
    for (const Composition& p : c.pairs) {
      std::printf("  %-16s %-16s %6.3f %6.3f %6.3f %9.3f\n", headName(p.fromLayer, p.fromHead).c_str(),
                  headName(p.toLayer, p.toHead).c_str(), p.q, p.k, p.v, c.baseline);
    }
  }
  std::printf("\nCopying score (OV's eigenvalues in token space: sum / sum of moduli; 1 = raises the attended token)\n");
  for (const HeadCircuit& h : c.perHead) std::printf("  %-16s %7.3f\n", headName(h.layer, h.head).c_str(), h.copying);
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

nlohmann::json circuitsJson(const Circuits& c, const RolloutOut& r) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const Composition& p : c.pairs) {
    pairs.push_back({{"from", {p.fromLayer, p.fromHead}}, {"to", {p.toLayer, p.toHead}}, {"q", p.q}, {"k", p.k}, {"v", p.v}});
  }
  nlohmann::json copying = nlohmann::json::array();
  for (int l = 0; l < c.layers; ++l) {
    nlohmann::json row = nlohmann::json::array();
    for (int h = 0; h < c.heads; ++h) row.push_back(c.at(l, h).copying);
    copying.push_back(row);
  }
  nlohmann::json rollout = nullptr;  // null: no probe sequence (a text task without --text)
  if (r.why.empty() && !r.rolled.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    const RowMatrix& m = r.rolled.back();
    for (Eigen::Index i = 0; i < m.rows(); ++i) rows.push_back(std::vector<float>(m.row(i).begin(), m.row(i).end()));
    rollout = {{"tokens", r.tokens}, {"matrix", rows}};
  }
  return {{"pairs", pairs}, {"copying", copying}, {"baseline", c.baseline}, {"rollout", rollout}};
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
        opt.colormap = ColormapId::Viridis;
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

Status writeRollout(const std::filesystem::path& dir, const RolloutOut& r, const std::string& subtitle, int& files) {
  if (auto s = writeRolloutFiles(dir, r.rolled.back(), r.tokens, static_cast<int>(r.rolled.size()), subtitle); !s) return s;
  files += 2;
  return Ok{};
}

Status writeExport(const std::string& dirName, const Checkpoint& ck, const Circuits& c, const RolloutOut& rollout) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir(dirName);
  fs::create_directory(dir, ec);
  if (ec) return makeError("cannot create folder '" + dirName + "': " + ec.message());
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
    for (const MatrixFile& f : list) {
      if (auto s = writeMatrix(dir, f, labels, subtitle); !s) return s;
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
    if (auto s = saveNpy((dir / "composition.npy").string(), toTensor(comp.data(), comp.rows(), 3)); !s) return s;
    ++files;
    if (auto s = writeCompositionPictures(dir, c, subtitle, files); !s) return s;
  }
  if (auto s = saveNpy((dir / "copying.npy").string(), toTensor(copying.data(), c.layers, c.heads)); !s) return s;
  ++files;
  if (rollout.why.empty() && !rollout.rolled.empty()) {
    if (auto s = writeRollout(dir, rollout, subtitle, files); !s) return s;
  }
  std::printf("wrote %d files to %s%s\n", files, dirName.c_str(),
              c.tokenSpace ? "" : (" (no token-space matrices: vocab " + std::to_string(c.vocab) + " is above " +
                                   std::to_string(kMaxTokenSpaceVocab) + ")").c_str());
  return Ok{};
}

}  // namespace

namespace {

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

int cmdCircuits(const CircuitsArgs& a) {
  if (!a.modelDir.empty()) return cmdCircuitsModel(a);
  if (a.checkpoint.empty()) return fail("circuits needs --checkpoint F (a training checkpoint) or --model DIR (a model folder)");
  if (!a.json.empty()) {
    if (auto s = checkJsonOutput(a.json, a.force, {{"--checkpoint", a.checkpoint}}); !s) return fail(s.error().message);
  }
  if (!a.exportDir.empty()) {
    if (auto s = checkExportDir(a.exportDir); !s) return fail(s.error().message);
  }
  const std::uint64_t budget = a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : defaultMemoryBudget();
  auto ck = loadCheckpoint(a.checkpoint, budget);
  if (!ck) return fail(ck.error().message);
  if (auto s = checkCircuitsInput(ck->params); !s) return fail("'" + a.checkpoint + "': " + s.error().message);
  const Circuits c = computeCircuits(ck->params);
  const RolloutOut rollout = probeRollout(*ck, a.text.value_or(""), budget);
  if (c.pairs.empty()) {
    std::fprintf(stderr, "mhascope: warning: '%s' has %d layer: composition needs two or more, so only the copying "
                         "scores are shown\n",
                 a.checkpoint.c_str(), c.layers);
  }
  printReport(*ck, c);
  printRollout(rollout);
  if (!a.json.empty()) {
    if (auto s = writeFileAtomic(a.json, circuitsJson(c, rollout).dump(2) + "\n"); !s) return fail(s.error().message);
    std::printf("wrote %s\n", a.json.c_str());
  }
  if (!a.exportDir.empty()) {
    if (auto s = writeExport(a.exportDir, *ck, c, rollout); !s) return fail(s.error().message);
  }
  return 0;
}

}  // namespace mhascope::cli
