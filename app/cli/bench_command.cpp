// `mhascope bench`: median forward time, GFLOP/s, the ratio to the engine's own GEMM, the N-thread
// speed-up and (--torch) PyTorch's time on the same sizes, all in one run; with --model, the
// whole forward of a model folder.
//
// [SECTION] one attention forward against the GEMM
// [SECTION] a model folder's forward (--model)
#include "bench_command.hpp"

#include <algorithm>
#include <climits>
#include <memory>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "command_common.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "train_command.hpp"
#include "attention/engine.hpp"
#include "attention/model.hpp"
#include "io/presets.hpp"
#include "kernels/block_rows.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/gemm.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "model_source/model_text.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {

// ---------------------------------------------------------------------------------------------
// [SECTION] one attention forward against the GEMM
// ---------------------------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double secondsSince(const Clock::time_point& a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

void printGemmChoice() {
  const GemmChoice& g = gemmChoice();
  std::printf("gemm: %s", gemmName(g.backend).c_str());
  std::printf(" (%s)\n", g.how.c_str());
  // The choice is never timed (the same command gives the same numbers in every process); the speeds
  // are shown so a user can pick the faster one with MHASCOPE_GEMM.
  const GemmSpeeds sp = measureGemmBackends();
  if (sp.openblasGflops > 0) {
    std::printf("gemm speeds here, one thread: Eigen %.1f GFLOP/s, OpenBLAS %.1f GFLOP/s (MHASCOPE_GEMM=eigen|openblas "
                "picks one)\n", sp.eigenGflops, sp.openblasGflops);
  } else {
    std::printf("gemm speeds here, one thread: Eigen %.1f GFLOP/s (no OpenBLAS found)\n", sp.eigenGflops);
  }
}

// After the warm-up forward, which measured the choice if its attention was big enough.
void printQueryBlockChoice() {
  const QueryBlockChoice q = queryBlockChoice();
  std::printf("attention blocks: %lld query rows", static_cast<long long>(q.rows));
  if (q.how == "measured") {
    std::printf(" (measured at start-up, one thread: 64 rows %.3f ms, 128 rows %.3f ms)\n", q.seconds64 * 1e3,
                q.seconds128 * 1e3);
  } else if (q.how == "not measured yet") {
    std::printf(" (tables below 64 MiB: not measured)\n");
  } else {
    std::printf(" (%s)\n", q.how.c_str());
  }
}

// One round's medians (seconds): the one-thread forward, the reference GEMM, the N-thread forward
// (0 when N = 1), each run `repeat` times, interleaved so that all see the same machine load.
struct Round {
  double one = 0, gemm = 0, many = 0, torch = 0;  // torch: 0 when not measured
};

// PyTorch's forward on the same sizes (scripts/bench_forward_torch.py, one thread, need_weights with
// per-head weights), or 0 with `why` set when it could not run.
double torchSeconds(const Model& m, int repeat, std::string& why) {
  const std::string script = assetsDir() + "/../scripts/bench_forward_torch.py";
  if (!std::filesystem::exists("/usr/bin/python3") || !std::filesystem::exists(script)) {
    why = "no /usr/bin/python3 or " + script;
    return 0;
  }
  std::string cmd = "env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 '" + script + "'";
  for (const auto& [flag, value] : {std::pair<const char*, std::int64_t>{"--tokens", m.inputs.query.dim(1)},
                                    {"--d-model", m.inputs.query.dim(2)},
                                    {"--heads", m.options.heads},
                                    {"--batch", m.inputs.query.dim(0)},
                                    {"--repeat", repeat}}) {
    cmd += std::string(" ") + flag + " " + std::to_string(value);
  }
  std::string out;
  const int status = captureCommand(cmd + " 2>&1", out);
  const auto at = out.find("median ");
  if (status != 0 || at == std::string::npos) {
    why = "scripts/bench_forward_torch.py failed (/usr/bin/python3 with torch needed): " + out.substr(0, out.find('\n'));
    return 0;
  }
  return std::atof(out.c_str() + at + 7) / 1e3;
}

}  // namespace

int captureCommand(const std::string& cmd, std::string& out) {
  std::fflush(stdout);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  return pclose(pipe);
}

namespace {

// --gemm and --query-block: checked, then pinned for the rest of the process (a layer's bench and
// a whole model's alike).
Status pinKernelChoices(const BenchArgs& a) {
  if (!a.gemm.empty() && a.gemm != "eigen" && a.gemm != "openblas") {
    return makeError("--gemm must be eigen or openblas, got '" + a.gemm + "'");
  }
  if (a.gemm == "openblas" && !setGemmBackend(GemmBackend::OpenBlas)) {
    return makeError("--gemm openblas: no OpenBLAS library found (Debian: libopenblas0-pthread)");
  }
  if (a.gemm == "eigen") setGemmBackend(GemmBackend::Eigen);
  if (a.queryBlock != 0 && !setQueryBlockRows(a.queryBlock)) {
    return makeError("--query-block must be 64 or 128, got " + std::to_string(a.queryBlock));
  }
  return Ok{};
}

}  // namespace

Status cmdBench(const ModelOptions& mo, const BenchArgs& a) {
  // A model folder without --layer: its whole forward; with --layer L, that layer's attention as
  // any other model source (core/model_source), timed below.
  if (!mo.files.model.empty() && !mo.files.layer) return cmdBenchModel(mo, a);
  if (a.repeat < 1) return makeError("--repeat must be at least 1, got " + std::to_string(a.repeat));
  if (a.rounds < 1) return makeError("--rounds must be at least 1, got " + std::to_string(a.rounds));
  if (a.threads < 1 || a.threads > 64) return makeError("--threads must be 1 to 64, got " + std::to_string(a.threads));
  if (auto pinned = pinKernelChoices(a); !pinned) return pinned;
  auto r = resolveModel(mo);
  if (!r) return r.error();
  const Model& m = r->model;
  AttentionOptions many = m.options, one = m.options;
  many.threads = a.threads;
  one.threads = 1;
  const auto B = m.inputs.query.dim(0), Tq = m.inputs.query.dim(1), Tk = m.inputs.key.dim(1),
             d = m.inputs.query.dim(2);
  const FlopCount f = countFlops(B, Tq, Tk, d, m.options.heads, kvHeadsOf(m.options), headDimOf(m.options, d));
  // The reference: one GEMM (M x K) * (K x N) on the engine's backend, M = B*T_q, K = d_model and N
  // chosen so that it does the same number of FLOPs as one forward (f: the four projections, Q K^T
  // and A V, 2 per multiply-add; the softmax and the copies are not counted as work).
  const std::int64_t M = B * Tq, K = d;
  const std::int64_t N = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(f.total() / (2.0 * static_cast<double>(M) * static_cast<double>(K)) + 0.5));
  std::vector<float> ga(static_cast<std::size_t>(M * K)), gb(static_cast<std::size_t>(K * N)),
      gc(static_cast<std::size_t>(M * N));
  for (std::size_t i = 0; i < ga.size(); ++i) ga[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  for (std::size_t i = 0; i < gb.size(); ++i) gb[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  auto gemm = [&] { sgemm(false, false, M, N, K, ga.data(), K, gb.data(), N, 0.0f, gc.data(), N); };
  // Shared with the traces, as the window's worker does: a trace records them without a copy.
  const auto weights = std::make_shared<const MhaWeights>(m.weights);
  // An engine per trace, as the window keeps one: the packed weights are made once, not per run.
  Trace trace1, traceN;
  Engine engine1, engineN;
  if (auto s = engine1.forward(m.inputs, weights, one, trace1); !s) return s;  // warm-up
  if (a.threads > 1) (void)engineN.forward(m.inputs, weights, many, traceN);
  gemm();
  const bool rounds = a.rounds > 1 || a.torch;
  std::printf("config: %s (threads: %d)\n", describe(*r, trace1).c_str(), a.threads);
  printGemmChoice();
  // Which kernels ran the attention's products: the widest head kernels this CPU runs, or the general
  // path. Every variant runs on that path: RoPE is a step on q and k before the scores, N K/V heads
  // is which K/V head a query head reads, ALiBi a step after the scale, the window a mask rule; only
  // the packed copies of W_k and W_v are skipped when N != h.
  const bool variant = kvHeadsOf(m.options) != m.options.heads || m.options.positions != AttnPositions::None ||
                       m.options.window > 0 || m.options.heads * headDimOf(m.options, d) != d;
  std::printf("kernels: %s\n", kernels::kernelPathName(kernels::kernelPath()));
  if (variant) {
    std::printf("with this variant: RoPE a step on q and k, grouped K/V heads read by index, ALiBi after the scale, "
                "the window a mask rule; the weights packed per block when N != h or h*d_k != d_model\n");
  }
  printQueryBlockChoice();
  std::vector<Round> all;
  std::string torchWhy;
  if (variant) torchWhy = "nn.MultiheadAttention has no grouped K/V heads, RoPE, ALiBi, window or heads other than d_model / h wide";
  for (int round = 0; round < a.rounds; ++round) {
    std::vector<double> t1, tg, tn;
    // Each kind of run `repeat` times in a row, as scripts/bench_forward_torch.py times PyTorch, so
    // each starts with its data as warm as the run before left it. (Interleaved, our one-thread
    // forward ran right after the two-thread one had pushed its tables out of the cache: 1.9-2.4
    // ms at T = 128 against 1.7 in a row: docs/performance.md, "Each kind of run timed in a row".)
    auto timed = [&](std::vector<double>& out, const auto& run) {
      for (int i = 0; i < a.repeat; ++i) {
        const auto c = Clock::now();
        run();
        out.push_back(secondsSince(c));
      }
    };
    timed(t1, [&] { (void)engine1.forward(m.inputs, weights, one, trace1); });
    timed(tg, gemm);
    if (a.threads > 1) timed(tn, [&] { (void)engineN.forward(m.inputs, weights, many, traceN); });
    Round x{median(t1), median(tg), median(tn), 0};
    if (a.torch && torchWhy.empty()) x.torch = torchSeconds(m, a.repeat, torchWhy);
    all.push_back(x);
    if (!rounds) continue;
    std::printf("round %d: forward %.3f ms, gemm %.3f ms (ratio-to-gemm %.3f)", round + 1, x.one * 1e3, x.gemm * 1e3,
                x.gemm / x.one);
    if (a.threads > 1) std::printf(", %d threads %.3f ms (%.2fx)", a.threads, x.many * 1e3, x.one / x.many);
    if (x.torch > 0) std::printf(", PyTorch %.3f ms (PyTorch / ours %.2f)", x.torch * 1e3, x.torch / x.one);
    std::printf("\n");
  }
  // Figures below: medians over the rounds of each round's median (times) or ratio (ratios), so a
  // ratio always compares two measurements made under the same load.
  auto over = [&all](auto get) {
    std::vector<double> v;
    for (const Round& x : all) v.push_back(get(x));
    return median(v);
  };
  const double mf = over([](const Round& x) { return x.one; }), mg = over([](const Round& x) { return x.gemm; });
  const double gemmFlops = 2.0 * static_cast<double>(M) * static_cast<double>(K) * static_cast<double>(N);
  if (rounds) std::printf("medians over %d rounds of %d runs each:\n", a.rounds, a.repeat);
  std::printf("flops per forward: %.3f GFLOP (projections %.3f, attention %.3f)\n", f.total() / 1e9,
              f.projections / 1e9, f.attention / 1e9);
  std::printf("forward with full recording: median %.3f ms over %d runs -> %.1f GFLOP/s (one thread)\n", mf * 1e3,
              a.repeat, f.total() / mf / 1e9);
  if (a.threads > 1) {
    std::printf("forward on %d threads: median %.3f ms -> %d threads are %.2fx faster\n", a.threads,
                over([](const Round& x) { return x.many; }) * 1e3, a.threads,
                over([](const Round& x) { return x.one / x.many; }));
  }
  if (a.torch && torchWhy.empty()) {
    std::printf("PyTorch forward (nn.MultiheadAttention, need_weights, per-head weights, one thread): median %.3f ms "
                "-> PyTorch / ours %.2f\n",
                over([](const Round& x) { return x.torch; }) * 1e3, over([](const Round& x) { return x.torch / x.one; }));
  } else if (a.torch) {
    std::printf("PyTorch: not measured (%s)\n", torchWhy.c_str());
  }
  std::printf("%s gemm %lldx%lld * %lldx%lld (same FLOPs, one thread): median %.3f ms -> %.1f GFLOP/s\n",
              gemmChoice().backend == GemmBackend::OpenBlas ? "openblas" : "eigen", static_cast<long long>(M),
              static_cast<long long>(K), static_cast<long long>(K), static_cast<long long>(N), mg * 1e3,
              gemmFlops / mg / 1e9);
  std::printf("ratio-to-gemm: %.3f\n", over([&](const Round& x) { return (f.total() / x.one) / (gemmFlops / x.gemm); }));
  return Ok{};
}

// ---------------------------------------------------------------------------------------------
// [SECTION] a model folder's forward (--model)
// ---------------------------------------------------------------------------------------------

namespace {

// Options that set what the folder decides, or that only the attention benchmark reads: listed
// together in one refusal.
std::string optionsTheFolderDecides(const ModelOptions& mo, const BenchArgs& a) {
  std::string list;
  auto add = [&list](bool given, const char* name) {
    if (given) list += (list.empty() ? "" : ", ") + std::string(name);
  };
  add(mo.presetGiven, "--preset");
  add(mo.dModel.has_value(), "--d-model");
  add(mo.heads.has_value(), "--heads");
  add(mo.kvHeads.has_value(), "--kv-heads");
  add(mo.headDim.has_value(), "--head-dim");
  add(mo.batch.has_value(), "--batch");
  add(mo.padLast.has_value(), "--pad-last");
  add(mo.kvText.has_value(), "--kv-text");
  add(mo.bias || mo.noBias, "--bias/--no-bias");
  add(mo.mask.has_value(), "--mask");
  add(mo.scale.has_value(), "--scale");
  add(mo.noPositions || mo.positions.has_value(), "--positions");
  add(mo.ropeStyle.has_value() || mo.ropeBase.has_value(), "--rope-*");
  add(mo.window.has_value(), "--window");
  add(mo.sinks.has_value(), "--sinks");
  add(!mo.files.query.empty() || !mo.files.key.empty() || !mo.files.value.empty(), "--query/--key/--value");
  add(!mo.files.weights.empty(), "--weights");
  add(!mo.files.checkpoint.empty(), "--checkpoint");
  add(!mo.workspace.empty() || !mo.saveWorkspace.empty(), "--workspace/--save-workspace");
  add(!mo.saveWeightsFile.empty(), "--save-weights");
  add(a.rounds != 1, "--rounds");
  add(a.torch, "--torch (scripts/bench_model.py times the PyTorch reference beside this command)");
  return list;
}

// T token ids in [0, V), the same for a given seed on every machine (splitmix64, not <random>'s
// distributions, whose results differ between standard libraries).
std::vector<int> seededTokenIds(std::int64_t T, int V, std::uint64_t seed) {
  std::vector<int> ids;
  std::uint64_t x = seed;
  for (std::int64_t t = 0; t < T; ++t) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    ids.push_back(static_cast<int>(z % static_cast<std::uint64_t>(V)));
  }
  return ids;
}

// Where one forward's time went, from the forward's own per-layer callbacks: from the previous
// layer's end to this layer's attention weights (the layer's weights converted from the file, the
// norm, the attention; layer 0 also the embedding), from there to the layer's end (the norm and
// the MLP), and after the last layer (the final norm and the logits).
struct Parts {
  double attention = 0, mlp = 0, logits = 0;  // seconds
};

struct ForwardTiming {
  double seconds = 0;
  Parts parts;
  std::string nonFinite;  // ForwardResult::nonFinite
};

Result<ForwardTiming> timedForward(const model::ModelFolder& folder, const std::vector<int>& ids,
                                   model::ForwardOptions opt) {
  ForwardTiming t;
  Clock::time_point last = Clock::now();
  const Clock::time_point start = last;
  opt.onAttention = [&](const model::LayerHeads&) {
    const auto now = Clock::now();
    t.parts.attention += std::chrono::duration<double>(now - last).count();
    last = now;
  };
  opt.progress = [&](int) {
    const auto now = Clock::now();
    t.parts.mlp += std::chrono::duration<double>(now - last).count();
    last = now;
    return true;
  };
  auto r = model::runForward(folder, ids, opt);
  if (!r) return r.error();
  const auto end = Clock::now();
  t.parts.logits = std::chrono::duration<double>(end - last).count();
  t.seconds = std::chrono::duration<double>(end - start).count();
  t.nonFinite = r->nonFinite;
  return t;
}

}  // namespace

Status cmdBenchModel(const ModelOptions& mo, const BenchArgs& a) {
  if (a.repeat < 1) return makeError("--repeat must be at least 1, got " + std::to_string(a.repeat));
  if (a.threads < 1 || a.threads > 64) return makeError("--threads must be 1 to 64, got " + std::to_string(a.threads));
  if (const std::string list = optionsTheFolderDecides(mo, a); !list.empty()) {
    return makeError("bench --model takes the sizes, positions and weights from the folder's config.json and "
                     "safetensors; drop " + list);
  }
  const bool text = mo.text.has_value() || !mo.textFile.empty();
  if (text && mo.tokens) return makeError("--text/--text-file and --tokens both give the tokens; keep one");
  if (!text && !mo.tokens) {
    return makeError("bench --model needs the tokens: --tokens T (seeded token ids), --text \"...\" or --text-file FILE");
  }
  if (mo.tokens && *mo.tokens < 1) {
    return makeError("--tokens must be at least 1 with --model, got " + std::to_string(*mo.tokens));
  }
  if (auto pinned = pinKernelChoices(a); !pinned) return pinned;

  const Clock::time_point openStart = Clock::now();
  auto opened = model::ModelFolder::open(mo.files.model);
  if (!opened) return opened.error();
  const double openSeconds = secondsSince(openStart);
  std::optional<ModelText> mt;  // with a text: the folder again, its tokenizer and the text's ids
  if (text) {
    auto loaded = loadModelText(mo.files.model, mo.text, mo.textFile, mo.memoryBudgetMib ? *mo.memoryBudgetMib << 20 : 0);
    if (!loaded) return loaded.error();
    mt = std::move(*loaded);
  }
  const model::ModelFolder* folder = mt ? &mt->folder : &*opened;
  const model::ModelSpec& s = folder->spec();
  const std::uint64_t seed = mo.seed.value_or(1);
  // Checked before any id is made (--tokens 1000000000 must not build a 4 GB list first); a text's
  // length is checked by the tokenizing step, naming the text.
  if (!mt && *mo.tokens > s.maxPositions) {
    return makeError("--tokens " + std::to_string(*mo.tokens) + " is more than the model's " +
                     std::to_string(s.maxPositions) + " positions (" + positionsKey(s) + " in " + folder->dir() +
                     "/config.json)");
  }
  const std::vector<int> ids = mt ? mt->ids : seededTokenIds(*mo.tokens, s.vocab, seed);
  const std::int64_t T = static_cast<std::int64_t>(ids.size());

  model::ForwardOptions opt;
  opt.keepAttention = true;  // every layer's attention recorded, as the window's model view holds it
  opt.keepHidden = true;
  opt.threads = a.threads;
  opt.memoryBudgetBytes = mo.memoryBudgetMib ? *mo.memoryBudgetMib << 20 : defaultMemoryBudget();
  const double estimate = model::estimateForwardBytes(s, T, opt);

  // The first forward is timed apart: it reads the file's pages into the page cache and faults
  // the fresh tables in.
  auto first = timedForward(*folder, ids, opt);
  if (!first) return first.error();
  if (!first->nonFinite.empty()) {
    std::fprintf(stderr, "mhascope: warning: %s; the timings are of numbers that are not finite\n", first->nonFinite.c_str());
  }
  std::vector<ForwardTiming> runs;
  for (int i = 0; i < a.repeat; ++i) {
    auto t = timedForward(*folder, ids, opt);
    if (!t) return t.error();
    runs.push_back(*t);
  }
  auto med = [&runs](auto get) {
    std::vector<double> v;
    for (const ForwardTiming& r : runs) v.push_back(get(r));
    return median(v);
  };
  double minSeconds = runs.front().seconds;
  for (const ForwardTiming& r : runs) minSeconds = std::min(minSeconds, r.seconds);
  const double medSeconds = med([](const ForwardTiming& r) { return r.seconds; });
  const Parts parts{med([](const ForwardTiming& r) { return r.parts.attention; }),
                    med([](const ForwardTiming& r) { return r.parts.mlp; }),
                    med([](const ForwardTiming& r) { return r.parts.logits; })};
  const std::string gemm = gemmName(gemmChoice().backend);
  const char* kernels = kernels::kernelPathName(kernels::kernelPath());

  if (a.json) {
    nlohmann::json runsMs = nlohmann::json::array();
    for (const ForwardTiming& r : runs) runsMs.push_back(r.seconds * 1e3);
    const nlohmann::json j = {
        {"model", folder->dir()},
        {"architecture", s.family->modelType},
        {"dtype", folder->dtype()},
        {"layers", s.layers}, {"d_model", s.dModel}, {"heads", s.heads}, {"kv_heads", s.kvHeads},
        {"vocab", s.vocab}, {"parameters", model::parameterCount(s)},
        {"tokens", T}, {"token_source", mt ? "text" : "seeded"}, {"seed", mt ? 0 : seed},
        {"threads", a.threads}, {"repeat", a.repeat},
        {"gemm", gemm}, {"kernels", kernels},
        {"memory_estimate_bytes", estimate},
        {"open_ms", openSeconds * 1e3},
        {"first_forward_ms", first->seconds * 1e3},
        {"forward_ms", {{"min", minSeconds * 1e3}, {"median", medSeconds * 1e3}, {"runs", runsMs}}},
        {"parts_median_ms", {{"attention", parts.attention * 1e3}, {"mlp", parts.mlp * 1e3},
                             {"logits", parts.logits * 1e3}}}};
    std::printf("%s\n", j.dump(2).c_str());
    return Ok{};
  }
  std::printf("model: %s %s (%s): L %d, d_model %d, h %d, N %d, V %d, %s parameters\n", s.family->modelType,
              folder->dir().c_str(), folder->dtype().c_str(), s.layers, s.dModel, s.heads, s.kvHeads, s.vocab,
              withThousands(model::parameterCount(s)).c_str());
  if (mt) {
    std::printf("tokens: T = %lld from the text through the folder's tokenizer (%s)\n", static_cast<long long>(T),
                bosNote(*mt).c_str());
  } else {
    std::printf("tokens: T = %lld seeded token ids (seed %llu)\n", static_cast<long long>(T),
                static_cast<unsigned long long>(seed));
  }
  std::printf("threads: %d; gemm: %s; kernels: %s\n", a.threads, gemm.c_str(), kernels);
  std::printf("memory estimate of the forward: %s (budget %s)\n", formatBytes(estimate).c_str(),
              formatBytes(static_cast<double>(opt.memoryBudgetBytes)).c_str());
  std::printf("open (config.json, safetensors headers, mapping): %.3f ms\n", openSeconds * 1e3);
  std::printf("first forward (faults the mapped weights and fresh tables in): %.3f ms\n", first->seconds * 1e3);
  std::printf("forward with every layer's attention recorded: min %.3f ms, median %.3f ms over %d runs\n",
              minSeconds * 1e3, medSeconds * 1e3, a.repeat);
  std::printf("  of which (medians): layers' weights + norm + attention %.3f ms, layers' norm + MLP %.3f ms, "
              "final norm + logits %.3f ms\n", parts.attention * 1e3, parts.mlp * 1e3, parts.logits * 1e3);
  return Ok{};
}


namespace {

// `bench --train`'s own options (train_command.cpp's cmdBenchTrain runs it).
struct BenchTrainArgs {
  bool train = false;
  int seeds = 5, steps = 300;
  double budget = 10.0;
};

}  // namespace

CommandRun addBenchCommand(CLI::App& cmd, CommandContext&) {
  CLI::App* bench = &cmd;
  auto a = std::make_shared<BenchArgs>();
  auto t = std::make_shared<BenchTrainArgs>();
  bench->add_option("--repeat", a->repeat, "number of timed runs")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  bench->add_option("--threads", a->threads, "threads of the forward (heads and row blocks shared out)")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  bench->add_option("--gemm", a->gemm, "eigen | openblas: pin the GEMM (default: MHASCOPE_GEMM, else Eigen)");
  bench->add_option("--rounds", a->rounds, "rounds of --repeat runs; figures are medians over the rounds")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  bench->add_option("--query-block", a->queryBlock,
                    "64 | 128: pin the attention's query rows per block instead of the measured choice")
      ->transform(decimalInteger(INT_MIN, INT_MAX));
  bench->add_flag("--torch", a->torch, "also time PyTorch's forward (scripts/bench_forward_torch.py) once per round");
  bench->add_flag("--json", a->json, "with --model: print the figures as one JSON object");
  bench->add_flag("--train", t->train, "training speed vs PyTorch and induction-circuit formation (mhascope train)");
  bench->add_option("--seeds", t->seeds, "--train: seeds 1..N for the circuit check")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  bench->add_option("--budget", t->budget, "--train: seconds per seed for the circuit")->capture_default_str();
  bench->add_option("--train-steps", t->steps, "--train: timed steps for the speed comparison")->transform(decimalInteger(INT_MIN, INT_MAX))->capture_default_str();
  return [a, t, bench](CommandContext& c) {
    if (t->train) return cmdBenchTrain(*bench, t->seeds, t->budget, t->steps);
    const Status s = cmdBench(c.model, *a);
    return s ? 0 : fail(s.error().message);
  };
}

}  // namespace mhascope::cli
