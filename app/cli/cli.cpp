// Subcommands of the headless command line:
//   info    shape trace table, parameter counts, FLOPs, score memory (info_command.cpp)
//   run     --dump DIR: every stage as DIR/<stage>.npy + DIR/trace.json
//   export  one stage slice (or all heads) as PNG / SVG / PDF through the shared exporter
//   bench   median forward time and GFLOP/s vs the engine's GEMM (bench_command.cpp)
//   circuits  QK/OV circuits, composition and copying of a checkpoint (circuits_command.cpp)
//   decode  KV-cache generation, step by step (decode_command.cpp)
//   compare one stage of two models side by side and B − A (compare_command.cpp)
//   --model DIR    a Hugging Face model folder's layer on a text: one more model source for info,
//                  run, export, bench (app/model_source); predict (model_run_command.cpp)
//
// [SECTION] run
// [SECTION] export
// [SECTION] dispatch
//
// (STYLE: ~500 lines): three subcommands of a few short functions each plus the one
// dispatch; the model options and the trainer's commands already live in their own files.
#include "cli.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cctype>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <unistd.h>

#include "export/export.hpp"
#include "kernels/gemm.hpp"
#include "io/npy.hpp"
#include "io/file_io.hpp"
#include "lessons/lessons.hpp"
#include "attention/tokenizer.hpp"
#include "bench_command.hpp"
#include "command_common.hpp"
#include "info_command.hpp"
#include "info_model.hpp"
#include "circuits_command.hpp"
#include "compare_command.hpp"
#include "decode_command.hpp"
#include "dump_folder.hpp"
#include "model_options.hpp"
#include "model_run_command.hpp"
#include "workspace_options.hpp"
#include "train_command.hpp"
#include "util/format.hpp"

namespace mhascope::cli {

int fail(const std::string& message) {
  std::fprintf(stderr, "mhascope: error: %s\n", message.c_str());
  return 1;
}

Status checkJsonOutput(const std::string& json, bool force, const std::vector<std::pair<std::string, std::string>>& inputs) {
  namespace fs = std::filesystem;
  for (const auto& [flag, input] : inputs) {
    if (sameFile(json, input)) {
      return makeError("--json '" + json + "' is the same file as " + flag + " '" + input +
                       "'; writing it would destroy that input: choose another name");
    }
  }
  std::error_code ec;
  if (fs::is_symlink(json, ec)) {
    return makeError("--json '" + json + "' is a symbolic link; writing would replace the link by a file, so name "
                     "the file itself");
  }
  if (fs::exists(json, ec) && !fs::is_directory(json, ec) && !force) {
    return makeError("--json '" + json + "' already exists; add --force to replace it, or name a new file");
  }
  return checkWritablePath(json);
}

namespace {

void warn(const std::string& message) { std::fprintf(stderr, "mhascope: warning: %s\n", message.c_str()); }

// Overflow and fully masked rows are reported, never silent: finite inputs can still overflow
// float32 (inputs ×1e20 make every score inf and every weight NaN).
void warnAboutNumbers(const Trace& t) {
  for (const NonFiniteStage& n : nonFiniteStages(t)) {
    const std::int64_t cells = Tensor::numelOf(t.shapeOf(n.stage));
    warn("stage '" + std::string(stageInfo(n.stage).name) + "' has " + std::to_string(n.nan + n.inf) + " of " +
         std::to_string(cells) + " cells not finite (" + std::to_string(n.nan) + " NaN, " + std::to_string(n.inf) +
         " inf; the first at flat index " + std::to_string(n.first) +
         "): float32 overflowed; scale the inputs or weights down");
  }
  std::vector<std::string> rows;
  for (int b = 0; b < t.batch; ++b)
    for (int q = 0; q < t.tq; ++q)
      if (t.isFullyMasked(b, q)) rows.push_back("(b " + std::to_string(b) + ", t " + std::to_string(q) + ")");
  if (!rows.empty()) {
    std::string list;
    for (std::size_t i = 0; i < rows.size() && i < 8; ++i) list += (i ? ", " : "") + rows[i];
    if (rows.size() > 8) list += ", ...";
    warn(std::to_string(rows.size()) + " query row(s) have every key blocked: " + list +
         "; their weights and head outputs are 0, so their final output rows are just b_o (" +
         fullyMaskedRowElsewhereText() + ")");
  }
}

}  // namespace

Result<Trace> computeTrace(const ResolvedModel& r) {
  Trace t;
  if (auto s = forward(r.model.inputs, r.model.weights, r.model.options, t); !s) return s.error();
  warnAboutNumbers(t);
  return t;
}

namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] run
// ---------------------------------------------------------------------------------------------

// trace.json: the configuration used, the sizes, the tokens, the fully masked rows, the
// non-finite cells, the GEMM that computed the numbers (`gemm`: Eigen and OpenBLAS sum in other
// orders, so their last bits differ; it says why two dumps of one command may, e.g. with
// MHASCOPE_GEMM=openblas) and the list of stage files (`stages`).
nlohmann::json traceDocument(const ModelOptions& mo, const ResolvedModel& r, const Trace& tr, nlohmann::json stages) {
  auto clean = [](const std::vector<std::vector<std::string>>& rows) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& row : rows) {
      nlohmann::json jr = nlohmann::json::array();
      for (const auto& tok : row) jr.push_back(sanitizeUtf8(tok));
      j.push_back(jr);
    }
    return j;
  };
  nlohmann::json fullyMasked = nlohmann::json::array();
  for (int b = 0; b < tr.batch; ++b)
    for (int q = 0; q < tr.tq; ++q)
      if (tr.isFullyMasked(b, q)) fullyMasked.push_back({b, q});
  nlohmann::json nonFinite = nlohmann::json::array();
  for (const NonFiniteStage& n : nonFiniteStages(tr)) {
    nonFinite.push_back({{"stage", stageInfo(n.stage).name}, {"nan", n.nan}, {"inf", n.inf}, {"first_index", n.first}});
  }
  nlohmann::json doc = {{"mhascope_trace_version", 1},
                        {"config", nlohmann::json::parse(usedConfigJson(mo, r))},
                        {"describe", describe(r, tr)},
                        {"B", tr.batch}, {"T_q", tr.tq}, {"T_k", tr.tk}, {"d_model", tr.dModel},
                        {"h", tr.heads}, {"d_k", tr.dk}, {"kv_heads", tr.kvHeads}, {"scale_factor", tr.scaleFactor},
                        {"query_tokens", clean(tr.queryTokens)}, {"key_tokens", clean(tr.keyTokens)},
                        {"fully_masked_rows", fullyMasked}, {"non_finite", nonFinite},
                        {"gemm", gemmName(gemmChoice().backend) + " (" + gemmChoice().how + ")"}, {"stages", stages}};
  return doc;
}

int cmdRun(const ModelOptions& mo, const std::string& dumpDir, const std::optional<Workspace>& ws) {
  if (dumpDir.empty()) return fail("run needs --dump DIR");
  auto targetOr = dumpTarget(dumpDir);
  if (!targetOr) return fail(targetOr.error().message);
  OutputPlan plan;
  plan.stageFile = true;
  plan.folder = dumpDir;
  auto r = resolveModel(mo, plan);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  // A model folder's layer: its own trace.json config block (folder, layer, text) and token_ids.npy.
  auto written = r->modelLayer ? writeModelDump(*r->modelLayer, *t, dumpDir, *targetOr)
                               : writeDump(*t, dumpDir, *targetOr, [&](nlohmann::json stages) {
                                   return traceDocument(mo, *r, *t, std::move(stages));
                                 });
  if (!written) return fail(written.error().message);
  if (auto s = saveWeightsIfAsked(mo, *r); !s) return fail(s.error().message);
  if (auto s = saveWorkspaceIfAsked(mo, *r, ws, ws ? ws->view : WorkspaceView{}); !s) return fail(s.error().message);
  if (r->modelLayer) {
    std::printf("wrote %d stages + trace.json + %s to %s (%s)\n", *written, kTokenIdsFile, dumpDir.c_str(),
                modelDumpLine(*r->modelLayer).c_str());
  } else {
    std::printf("wrote %d stages + trace.json to %s (%s)\n", *written, dumpDir.c_str(), describe(*r, *t).c_str());
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] export
// ---------------------------------------------------------------------------------------------

struct ExportArgs {
  std::string stage = "weights";
  std::optional<std::string> head;  // unset: head 0 on stages with heads
  int batchIndex = 0;
  std::string out;
  std::string colormap;
  std::string weight;  // a learned matrix instead of a stage: w_q, w_k, w_v, w_o, b_q, …
};

// A learned matrix, as the trace recorded it (the numbers the pass used).
int cmdExportWeight(const ModelOptions& mo, const ExportArgs& a, const std::optional<Workspace>& ws) {
  const auto id = weightFromName(a.weight);
  if (!id) return fail("unknown weight '" + a.weight + "'; weights: " + weightNamesList());
  if (a.out.empty()) return fail("export needs --out FILE.png|.svg|.pdf");
  if (auto f = formatFromPath(a.out); !f) return fail(f.error().message);
  ExportOptions opt;
  if (!a.colormap.empty()) {
    auto c = colormapFromName(a.colormap);
    if (!c) return fail(c.error().message);
    opt.colormap = *c;
  }
  OutputPlan plan;
  plan.files = {a.out};  // checked against every input, as for a stage's picture
  auto r = resolveModel(mo, plan);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  opt.subtitle = describe(*r, *t);
  auto sl = sliceWeight(*t, *id);
  if (!sl) return fail(sl.error().message);
  if (Status s = exportHeatmap(a.out, *sl, opt); !s) return fail(s.error().message);
  WorkspaceView view = ws ? ws->view : WorkspaceView{};
  view.weight = *id;
  if (auto s = saveWorkspaceIfAsked(mo, *r, ws, view); !s) return fail(s.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

int cmdExport(const ModelOptions& mo, const ExportArgs& a, const std::optional<Workspace>& ws) {
  if (!a.weight.empty()) return cmdExportWeight(mo, a, ws);
  const auto stage = stageFromName(a.stage);
  if (!stage) return fail("unknown stage '" + a.stage + "'; stages: " + stageNamesList());
  if (a.out.empty()) return fail("export needs --out FILE.png|.svg|.pdf");
  if (auto f = formatFromPath(a.out); !f) return fail(f.error().message);
  if (a.head && !stageHasHeads(*stage)) {
    return fail("--head " + *a.head + " does not apply to stage '" + a.stage +
                "': it has no head axis (stages with heads: q_heads, k_heads, v_heads, scores, scaled_scores, "
                "masked_scores, weights, head_outputs); leave --head out");
  }
  int head = 0;
  const bool allHeads = a.head && *a.head == "all";
  if (a.head && !allHeads) {
    auto v = parseDecimal(*a.head, "--head", 0, INT_MAX);
    if (!v) return fail(v.error().message + "; or give 'all'");
    head = static_cast<int>(*v);
  }
  ExportOptions opt;
  if (!a.colormap.empty()) {
    auto c = colormapFromName(a.colormap);
    if (!c) return fail(c.error().message);
    opt.colormap = *c;
  }
  OutputPlan plan;
  plan.picture = true;
  plan.allHeads = allHeads;
  plan.files = {a.out};
  auto r = resolveModel(mo, plan);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  opt.subtitle = describe(*r, *t);
  Status s = Ok{};
  if (allHeads) {
    std::vector<Slice2D> slices;
    for (int h = 0; h < t->heads; ++h) {
      auto sl = sliceStage(*t, *stage, a.batchIndex, h);
      if (!sl) return fail(sl.error().message);
      slices.push_back(std::move(*sl));
    }
    s = exportHeadGrid(a.out, slices, opt);
  } else {
    auto sl = sliceStage(*t, *stage, a.batchIndex, stageHasHeads(*stage) ? head : -1);
    if (!sl) return fail(sl.error().message);
    s = exportHeatmap(a.out, *sl, opt);
  }
  if (!s) return fail(s.error().message);
  if (auto w = saveWeightsIfAsked(mo, *r); !w) return fail(w.error().message);
  WorkspaceView view = ws ? ws->view : WorkspaceView{};
  view.stage = *stage;
  view.head = head;
  view.batch = a.batchIndex;
  if (opt.colormap) view.colormap = opt.colormap;
  if (auto w = saveWorkspaceIfAsked(mo, *r, ws, view); !w) return fail(w.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

// export --workspace without --stage/--weight, --head, --batch-index, --colormap: the workspace's
// own picture (its stage, head, batch item and colormap).
void defaultPictureFromWorkspace(const Workspace& ws, CLI::App& exportCmd, ExportArgs& a) {
  const bool pictureGiven = exportCmd.get_option("--stage")->count() > 0 || exportCmd.get_option("--weight")->count() > 0;
  if (!pictureGiven) a.stage = stageInfo(ws.view.stage).name;
  if (!pictureGiven && exportCmd.get_option("--head")->count() == 0 && stageHasHeads(ws.view.stage)) {
    a.head = std::to_string(ws.view.head);
  }
  if (exportCmd.get_option("--batch-index")->count() == 0 && a.weight.empty()) a.batchIndex = ws.view.batch;
  if (exportCmd.get_option("--colormap")->count() == 0 && ws.view.colormap) a.colormap = colormapName(*ws.view.colormap);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] dispatch
// ---------------------------------------------------------------------------------------------

bool isCommand(std::string_view arg) {
  return arg == "info" || arg == "run" || arg == "export" || arg == "bench" || arg == "train" || arg == "circuits" ||
         arg == "decode" || arg == "compare" || arg == "predict";
}

int run(int argc, char** argv) {
  // A signal or `ulimit -f` must not kill a save half-way with its temporary file left behind.
  removeTemporaryFilesOnSignals();
  CLI::App app{"mhascope: see inside multi-head attention (headless commands)", "mhascope"};
  app.require_subcommand(1);
  ModelOptions mo;
  auto* info = app.add_subcommand("info", "shape trace table, parameter counts, FLOPs, score memory");
  addModelOptions(*info, mo);
  const char* saveWorkspaceHelp = "write a workspace .json of this command's model (configuration, files with their "
                                  "SHA-256, the picture) for the window or --workspace";
  info->add_option("--save-workspace", mo.saveWorkspace, saveWorkspaceHelp)->check(nonEmptyPath());
  auto* runCmd = app.add_subcommand("run", "run the model and dump every stage as .npy + trace.json");
  addModelOptions(*runCmd, mo);
  runCmd->add_option("--save-workspace", mo.saveWorkspace, saveWorkspaceHelp)->check(nonEmptyPath());
  std::string dumpDir;
  runCmd->add_option("--dump", dumpDir, "folder for <stage>.npy and trace.json")->required()->check(nonEmptyPath());
  auto* exportCmd = app.add_subcommand("export", "export a stage's heatmap as PNG, SVG or PDF");
  addModelOptions(*exportCmd, mo);
  exportCmd->add_option("--save-workspace", mo.saveWorkspace, saveWorkspaceHelp)->check(nonEmptyPath());
  ExportArgs ea;
  exportCmd->add_option("--stage", ea.stage, "stage name: " + stageNamesList())->capture_default_str();
  exportCmd->add_option("--head", ea.head, "head index counted from 0 (default 0), or 'all' for the grid of every head; "
                                           "only for stages with a head axis");
  exportCmd->add_option("--batch-index", ea.batchIndex, "which batch item, counted from 0")
      ->transform(decimalInteger(0, INT_MAX))
      ->capture_default_str();
  exportCmd->add_option("--out", ea.out, "output file: .png, .svg or .pdf")->required()->check(nonEmptyPath());
  exportCmd->add_option("--colormap", ea.colormap, "viridis | magma | diverging | gray (default: by data kind)");
  exportCmd->add_option("--weight", ea.weight, "a learned matrix instead of a stage: " + weightNamesList())
      ->excludes(exportCmd->get_option("--stage"))
      ->excludes(exportCmd->get_option("--head"))
      ->excludes(exportCmd->get_option("--batch-index"));
  auto* bench = app.add_subcommand("bench", "time one forward with full recording against the engine's GEMM");
  addModelOptions(*bench, mo);
  BenchArgs ba;
  bench->add_option("--repeat", ba.repeat, "number of timed runs")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  bench->add_option("--threads", ba.threads, "threads of the forward (heads and row blocks shared out)")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  bench->add_option("--gemm", ba.gemm, "eigen | openblas: pin the GEMM (default: MHASCOPE_GEMM, else Eigen)");
  bench->add_option("--rounds", ba.rounds, "rounds of --repeat runs; figures are medians over the rounds")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  bench->add_option("--query-block", ba.queryBlock,
                    "64 | 128: pin the attention's query rows per block instead of the measured choice")
      ->transform(decimalInteger(INT_MIN, INT_MAX));
  bench->add_flag("--torch", ba.torch, "also time PyTorch's forward (scripts/bench_forward_torch.py) once per round");
  bench->add_flag("--json", ba.json, "with --model: print the figures as one JSON object");
  bool benchTrain = false;
  int benchSeeds = 5, benchSteps = 300;
  double benchBudget = 10.0;
  bench->add_flag("--train", benchTrain, "training speed vs PyTorch and induction-circuit formation (mhascope train)");
  bench->add_option("--seeds", benchSeeds, "--train: seeds 1..N for the circuit check")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  bench->add_option("--budget", benchBudget, "--train: seconds per seed for the circuit")->capture_default_str();
  bench->add_option("--train-steps", benchSteps, "--train: timed steps for the speed comparison")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  TrainArgs trainArgs;
  auto* trainCmd = addTrainCommand(app, trainArgs);
  CircuitsArgs circuitsArgs;
  auto* circuitsCmd = addCircuitsCommand(app, circuitsArgs);
  DecodeArgs decodeArgs;
  auto* decodeCmd = addDecodeCommand(app, mo, decodeArgs);
  CompareArgs compareArgs;
  auto* compareCmd = addCompareCommand(app, mo, compareArgs);
  PredictArgs predictArgs;
  auto* predictCmd = addPredictCommand(app, predictArgs);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return exitForParseError(app, e, std::string("mhascope ") + (argc > 1 ? argv[1] : ""));
  }
  int rc = 2;
  try {
    if (trainCmd->parsed() && !trainArgs.workspace.empty()) {
      return fail("train does not read --workspace: it trains a new model from its own options (--task, --layers "
                  "…); a trained layer opens in the other commands and the window with --checkpoint FILE --layer L, "
                  "and --save-workspace on info/run/export keeps that as a workspace");
    }
    if (predictCmd->parsed()) {
      rc = cmdPredict(predictArgs);
    } else {
      auto ws = applyWorkspaceOptions(mo);
      if (!ws) return fail(ws.error().message);
      if (*ws && exportCmd->parsed()) defaultPictureFromWorkspace(**ws, *exportCmd, ea);
      // info --model DIR alone: the folder's summary; with a text (or a workspace's), that plus
      // the pipeline info of the layer.
      const bool folderSummaryOnly = !mo.files.model.empty() && !mo.text && mo.textFile.empty() &&
                                     !mo.files.layer && mo.workspace.empty();
      if (info->parsed()) rc = folderSummaryOnly ? cmdInfoModel(mo.files.model, *info) : cmdInfo(mo, *ws);
      if (runCmd->parsed()) rc = cmdRun(mo, dumpDir, *ws);
      if (exportCmd->parsed()) rc = cmdExport(mo, ea, *ws);
      if (bench->parsed()) {
        if (benchTrain) {
          rc = cmdBenchTrain(*bench, benchSeeds, benchBudget, benchSteps);
        } else {
          const Status s = cmdBench(mo, ba);
          rc = s ? 0 : fail(s.error().message);
        }
      }
      if (trainCmd->parsed()) rc = cmdTrain(trainArgs);
      if (circuitsCmd->parsed()) rc = cmdCircuits(circuitsArgs);
      if (compareCmd->parsed()) rc = cmdCompare(mo, compareArgs);
      if (decodeCmd->parsed()) {
        const Status s = cmdDecode(mo, decodeArgs);
        rc = s ? 0 : fail(s.error().message);
      }
    }
  } catch (const std::bad_alloc&) {
    rc = fail("out of memory: the system refused an allocation although the estimate fit the budget; lower "
              "--memory-budget or use smaller sizes");
  } catch (const std::exception& e) {  // filesystem_error, JSON errors: a message, not a crash
    rc = fail(e.what());
  }
  // What was printed must have arrived: `mhascope info > /dev/full` is an error, not exit 0.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    std::fprintf(stderr, "mhascope: error: cannot write to standard output: %s\n",
                 err ? std::strerror(err) : "write error");
    return 1;
  }
  return rc;
}

}  // namespace mhascope::cli
