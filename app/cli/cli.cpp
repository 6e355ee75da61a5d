// Subcommands of the headless command line:
//   info    shape trace table, parameter counts, FLOPs, score memory
//   run     --dump DIR: every stage as DIR/<stage>.npy + DIR/trace.json
//   export  one stage slice (or all heads) as PNG / SVG / PDF through the shared exporter
//   bench   median forward time and GFLOP/s vs an Eigen GEMM of the same FLOPs
//
// [SECTION] info
// [SECTION] run
// [SECTION] export
// [SECTION] bench
// [SECTION] dispatch
#include "cli.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "mhascope/export.hpp"
#include "mhascope/npy.hpp"
#include "mhascope/file_io.hpp"
#include "mhascope/lessons.hpp"
#include "mhascope/tokenizer.hpp"
#include "model_options.hpp"
#include "train_command.hpp"

namespace mhascope::cli {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "mhascope: error: %s\n", message.c_str());
  return 1;
}

Result<Trace> computeTrace(const ResolvedModel& r) {
  Trace t;
  if (auto s = forward(r.model.inputs, r.model.weights, r.model.options, t); !s) return s.error();
  return t;
}

std::string withThousands(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > (n < 0 ? 1 : 0); i -= 3) s.insert(static_cast<std::size_t>(i), 1, ',');
  return s;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] info
// ---------------------------------------------------------------------------------------------

int cmdInfo(const ModelOptions& mo) {
  auto r = resolveModel(mo);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  std::printf("mhascope info: %s\n", r->describe.c_str());
  std::printf("\nShape trace (pipeline order)\n");
  std::printf("  %-14s %-22s %-24s %s\n", "stage", "shape", "axes", "formula");
  for (const auto& st : t->stages) {
    const auto& info = stageInfo(st.id);
    std::printf("  %-14s %-22s %-24s %s\n", info.name, shapeToString(st.tensor.shape).c_str(),
                axesToString(st.tensor.axes).c_str(), info.formula);
  }
  const std::int64_t d = t->dModel, h = t->heads, dk = t->dk;
  const ParamCount pc = countParams(d);
  std::printf("\nParameters (d_model = %lld, h = %lld, d_k = %lld)\n", static_cast<long long>(d),
              static_cast<long long>(h), static_cast<long long>(dk));
  std::printf("  %-52s %s\n", "one head's W_Q[h] (d_model x d_k)", withThousands(d * dk).c_str());
  std::printf("  %-52s %s\n", "Q/K/V if every head had full d_model projections", withThousands(3 * h * d * d).c_str());
  std::printf("  %-52s %s\n", "Q/K/V with d_k per head (3*h*d_model*d_k)", withThousands(3 * h * d * dk).c_str());
  std::printf("  %-52s %s\n", "Q/K/V as one big matrix each (3*d_model^2)", withThousands(3 * d * d).c_str());
  std::printf("  %-52s %s\n", "W_o (d_model^2)", withThousands(d * d).c_str());
  std::printf("  %-52s %s\n", "biases (4*d_model)", withThousands(4 * d).c_str());
  std::printf("  %-52s %s\n", "total without bias (4*d_model^2)", withThousands(pc.withoutBias).c_str());
  std::printf("  %-52s %s\n", "total with bias (4*d_model^2 + 4*d_model)", withThousands(pc.withBias).c_str());
  const FlopCount f = countFlops(t->batch, t->tq, t->tk, d, h);
  std::printf("\nFLOPs per forward (multiply-add = 2)\n");
  std::printf("  projections (Q, K, V, W_o)  %.4g\n  attention (QK^T, AV)        %.4g\n  total                       %.4g\n",
              f.projections, f.attention, f.total());
  const double scoreBytes = 4.0 * t->batch * static_cast<double>(h) * t->tq * t->tk;
  std::printf("\nMemory\n  scores (B*h*T_q*T_k floats)  %s per copy; scores, scaled, masked, weights = 4 copies\n",
              formatBytes(scoreBytes).c_str());
  std::printf("  whole recorded trace         %s (budget %s)\n",
              formatBytes(estimateTraceBytes(t->batch, t->tq, t->tk, d, h)).c_str(),
              formatBytes(static_cast<double>(r->model.options.memoryBudgetBytes)).c_str());
  // How the costs grow (lesson 7): each variable doubled on its own, the others kept.
  {
    const CostSizes now = costSizesOf(*t);
    const CostPoint base = costAt(now);
    std::printf("\nGrowth when one variable doubles (x factor)\n");
    std::printf("  %-22s %-8s %-12s %-12s %s\n", "", "params", "proj FLOPs", "attn FLOPs", "score memory");
    for (SweepVariable v : {SweepVariable::Tokens, SweepVariable::DModel, SweepVariable::Heads}) {
      CostSizes s = now;
      if (v == SweepVariable::Tokens) s.tq = s.tk = 2 * now.tq;
      if (v == SweepVariable::DModel) s.dModel = 2 * now.dModel;
      if (v == SweepVariable::Heads) s.heads = 2 * now.heads;
      const CostPoint p = costAt(s);
      const std::string label = std::string(sweepVariableName(v)) + " -> " +
                                std::to_string(v == SweepVariable::Tokens ? s.tq : v == SweepVariable::DModel ? s.dModel : s.heads);
      std::printf("  %-22s x%-7.3g x%-11.3g x%-11.3g x%.3g\n", label.c_str(),
                  static_cast<double>(p.params) / static_cast<double>(base.params),
                  p.projectionFlops / base.projectionFlops, p.attentionFlops / base.attentionFlops,
                  p.scoreBytes / base.scoreBytes);
    }
  }
  int fully = 0;
  for (auto v : t->fullyMasked) fully += v;
  if (fully)
    std::printf("\nNote: %d query row(s) have every key blocked; their weights and head outputs are 0, so their final "
                "output rows are just b_o (PyTorch 1.13 gives NaN there).\n",
                fully);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] run
// ---------------------------------------------------------------------------------------------

int cmdRun(const ModelOptions& mo, const std::string& dumpDir) {
  namespace fs = std::filesystem;
  auto r = resolveModel(mo);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  if (dumpDir.empty()) return fail("run needs --dump DIR");
  std::error_code ec;
  if (fs::exists(dumpDir, ec) && !fs::is_directory(dumpDir, ec)) {
    return fail("--dump '" + dumpDir + "' exists and is not a folder");
  }
  fs::create_directories(dumpDir, ec);
  if (ec) return fail("cannot create folder '" + dumpDir + "': " + ec.message());
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& st : t->stages) {
    const auto& info = stageInfo(st.id);
    const std::string file = std::string(info.name) + ".npy";
    if (auto s = saveNpy((fs::path(dumpDir) / file).string(), st.tensor); !s) return fail(s.error().message);
    stages.push_back({{"stage", info.name},
                      {"shape", st.tensor.shape},
                      {"axes", st.tensor.axes},
                      {"file", file},
                      {"formula", info.formula}});
  }
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
  for (int b = 0; b < t->batch; ++b)
    for (int q = 0; q < t->tq; ++q)
      if (t->isFullyMasked(b, q)) fullyMasked.push_back({b, q});
  nlohmann::json doc = {{"mhascope_trace_version", 1},
                        {"config", nlohmann::json::parse(presetToJson(r->config))},
                        {"describe", r->describe},
                        {"B", t->batch}, {"T_q", t->tq}, {"T_k", t->tk}, {"d_model", t->dModel},
                        {"h", t->heads}, {"d_k", t->dk}, {"scale_factor", t->scaleFactor},
                        {"query_tokens", clean(t->queryTokens)}, {"key_tokens", clean(t->keyTokens)},
                        {"fully_masked_rows", fullyMasked}, {"stages", stages}};
  if (auto s = writeFileAtomic((fs::path(dumpDir) / "trace.json").string(), doc.dump(2) + "\n"); !s) {
    return fail(s.error().message);
  }
  std::printf("wrote %d stages + trace.json to %s (%s)\n", kStageCount, dumpDir.c_str(), r->describe.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] export
// ---------------------------------------------------------------------------------------------

struct ExportArgs {
  std::string stage = "weights";
  std::string head = "0";
  int batchIndex = 0;
  std::string out;
  std::string colormap;
};

int cmdExport(const ModelOptions& mo, const ExportArgs& a) {
  const auto stage = stageFromName(a.stage);
  if (!stage) return fail("unknown stage '" + a.stage + "'; stages: " + stageNamesList());
  if (a.out.empty()) return fail("export needs --out FILE.png|.svg|.pdf");
  if (auto f = formatFromPath(a.out); !f) return fail(f.error().message);
  ExportOptions opt;
  if (!a.colormap.empty()) {
    auto c = colormapFromName(a.colormap);
    if (!c) return fail(c.error().message);
    opt.colormap = *c;
  }
  auto r = resolveModel(mo);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  opt.subtitle = r->describe;
  Status s = Ok{};
  if (a.head == "all" && stageHasHeads(*stage)) {
    std::vector<Slice2D> slices;
    for (int h = 0; h < t->heads; ++h) {
      auto sl = sliceStage(*t, *stage, a.batchIndex, h);
      if (!sl) return fail(sl.error().message);
      slices.push_back(std::move(*sl));
    }
    s = exportHeadGrid(a.out, slices, opt);
  } else {
    int head = 0;
    if (a.head != "all") {
      char* end = nullptr;
      const long v = std::strtol(a.head.c_str(), &end, 10);
      if (a.head.empty() || *end != '\0') return fail("--head must be a number or 'all', got '" + a.head + "'");
      head = static_cast<int>(v);
    }
    auto sl = sliceStage(*t, *stage, a.batchIndex, stageHasHeads(*stage) ? head : -1);
    if (!sl) return fail(sl.error().message);
    s = exportHeatmap(a.out, *sl, opt);
  }
  if (!s) return fail(s.error().message);
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] bench
// ---------------------------------------------------------------------------------------------

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cmdBench(const ModelOptions& mo, int repeat) {
  using Clock = std::chrono::steady_clock;
  if (repeat < 1) return fail("--repeat must be at least 1, got " + std::to_string(repeat));
  auto r = resolveModel(mo);
  if (!r) return fail(r.error().message);
  const Model& m = r->model;
  const auto B = m.inputs.query.dim(0), Tq = m.inputs.query.dim(1), Tk = m.inputs.key.dim(1),
             d = m.inputs.query.dim(2);
  const FlopCount f = countFlops(B, Tq, Tk, d, m.options.heads);
  // The reference: one Eigen GEMM (M x K) * (K x N) with M = B*T_q, K = d_model and N chosen so
  // that it does the same number of FLOPs as one forward.
  const Eigen::Index M = B * Tq, K = d;
  const Eigen::Index N = std::max<Eigen::Index>(1, static_cast<Eigen::Index>(f.total() / (2.0 * static_cast<double>(M) * static_cast<double>(K)) + 0.5));
  RowMatrix a = RowMatrix::Random(M, K), b = RowMatrix::Random(K, N), c(M, N);
  Trace trace;
  if (auto s = forward(m.inputs, m.weights, m.options, trace); !s) return fail(s.error().message);  // warm-up
  c.noalias() = a * b;
  std::vector<double> tf, tg;
  for (int i = 0; i < repeat; ++i) {  // interleaved, so both see the same machine load
    auto t0 = Clock::now();
    (void)forward(m.inputs, m.weights, m.options, trace);
    auto t1 = Clock::now();
    c.noalias() = a * b;
    auto t2 = Clock::now();
    tf.push_back(std::chrono::duration<double>(t1 - t0).count());
    tg.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const double mf = median(tf), mg = median(tg);
  const double gemmFlops = 2.0 * static_cast<double>(M) * static_cast<double>(K) * static_cast<double>(N);
  std::printf("config: %s (threads: %d)\n", r->describe.c_str(), Eigen::nbThreads());
  std::printf("flops per forward: %.3f GFLOP (projections %.3f, attention %.3f)\n", f.total() / 1e9,
              f.projections / 1e9, f.attention / 1e9);
  std::printf("forward with full recording: median %.3f ms over %d runs -> %.1f GFLOP/s\n", mf * 1e3, repeat,
              f.total() / mf / 1e9);
  std::printf("eigen gemm %lldx%lld * %lldx%lld (same FLOPs): median %.3f ms -> %.1f GFLOP/s\n",
              static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(K),
              static_cast<long long>(N), mg * 1e3, gemmFlops / mg / 1e9);
  std::printf("ratio-to-gemm: %.3f\n", (f.total() / mf) / (gemmFlops / mg));
  return 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] dispatch
// ---------------------------------------------------------------------------------------------

bool isCommand(std::string_view arg) {
  return arg == "info" || arg == "run" || arg == "export" || arg == "bench" || arg == "train";
}

int run(int argc, char** argv) {
  CLI::App app{"mhascope: see inside multi-head attention (headless commands)", "mhascope"};
  app.require_subcommand(1);
  ModelOptions mo;
  auto* info = app.add_subcommand("info", "shape trace table, parameter counts, FLOPs, score memory");
  addModelOptions(*info, mo);
  auto* runCmd = app.add_subcommand("run", "run the model and dump every stage as .npy + trace.json");
  addModelOptions(*runCmd, mo);
  std::string dumpDir;
  runCmd->add_option("--dump", dumpDir, "folder for <stage>.npy and trace.json")->required();
  auto* exportCmd = app.add_subcommand("export", "export a stage's heatmap as PNG, SVG or PDF");
  addModelOptions(*exportCmd, mo);
  ExportArgs ea;
  exportCmd->add_option("--stage", ea.stage, "stage name: " + stageNamesList())->capture_default_str();
  exportCmd->add_option("--head", ea.head, "head index, or 'all' for the grid of every head")->capture_default_str();
  exportCmd->add_option("--batch-index", ea.batchIndex, "which batch item")->capture_default_str();
  exportCmd->add_option("--out", ea.out, "output file: .png, .svg or .pdf")->required();
  exportCmd->add_option("--colormap", ea.colormap, "viridis | magma | diverging | gray (default: by data kind)");
  auto* bench = app.add_subcommand("bench", "time one forward with full recording against an Eigen GEMM");
  addModelOptions(*bench, mo);
  int repeat = 10;
  bench->add_option("--repeat", repeat, "number of timed runs")->capture_default_str();
  bool benchTrain = false;
  int benchSeeds = 5, benchSteps = 300;
  double benchBudget = 10.0;
  bench->add_flag("--train", benchTrain, "training speed vs PyTorch and induction-circuit formation (mhascope train)");
  bench->add_option("--seeds", benchSeeds, "--train: seeds 1..N for the circuit check")->capture_default_str();
  bench->add_option("--budget", benchBudget, "--train: seconds per seed for the circuit")->capture_default_str();
  bench->add_option("--train-steps", benchSteps, "--train: timed steps for the speed comparison")->capture_default_str();
  TrainArgs trainArgs;
  auto* trainCmd = addTrainCommand(app, trainArgs);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (info->parsed()) return cmdInfo(mo);
    if (runCmd->parsed()) return cmdRun(mo, dumpDir);
    if (exportCmd->parsed()) return cmdExport(mo, ea);
    if (bench->parsed()) return benchTrain ? cmdBenchTrain(benchSeeds, benchBudget, benchSteps) : cmdBench(mo, repeat);
    if (trainCmd->parsed()) return cmdTrain(trainArgs);
  } catch (const std::exception& e) {  // bad_alloc, filesystem_error, JSON errors: a message, not a crash
    return fail(e.what());
  }
  return 2;
}

}  // namespace mhascope::cli
