// `mhascope decode` (decode_command.hpp).
#include "options.hpp"
#include "commands.hpp"
#include "command_common.hpp"
#include "decode_command.hpp"

#include <climits>
#include <cstdio>
#include <filesystem>

#include "attention/decode.hpp"
#include "io/npy.hpp"
#include "output_folder.hpp"
#include "util/format.hpp"

namespace mhascope::cli {

namespace {

bool isDecodeFile(const std::string& name) { return name == "output.npy" || name == "k_cache.npy" || name == "v_cache.npy"; }

// What `decode --dump` writes, as one output folder.
const OutputFolderKind kDecodeDump{"--dump", "a decode dump (output.npy, k_cache.npy, v_cache.npy)", isDecodeFile};

void addDecodeOptions(CLI::App* cmd, DecodeArgs& a) {
  cmd->add_option("--prefill", a.prefill, "P: tokens run at once before decoding one at a time (1 .. T)")
      ->transform(decimalInteger(INT_MIN, INT_MAX))
      ->capture_default_str();
  cmd->add_option("--dump", a.dump, "folder for output.npy (B, T, d_model), k_cache.npy and v_cache.npy (B, N, T, d_k)")
      ->check(nonEmptyPath());
}

}  // namespace

CommandRun addDecodeCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<DecodeArgs>();
  addDecodeOptions(&cmd, *a);
  return [a](CommandContext& ctx) {
    const Status s = cmdDecode(ctx.model, *a);
    return s ? 0 : fail(s.error().message);
  };
}

Status cmdDecode(const ModelOptions& mo, const DecodeArgs& a) {
  if (mo.mask && *mo.mask != "causal") {
    return makeError("decode generates with a causal mask: --mask " + *mo.mask + " cannot be used (leave --mask out "
                     "or give --mask causal)");
  }
  // The dump folder is checked before any work: new, empty, or an earlier decode dump.
  std::filesystem::path target;
  if (!a.dump.empty()) {
    auto t = outputFolderTarget(kDecodeDump, a.dump);
    if (!t) return t.error();
    target = *t;
  }
  OutputPlan plan;
  plan.folder = a.dump;
  auto r = resolveModel(mo, plan);
  if (!r) return r.error();
  auto d = decode(r->model.inputs, r->model.weights, r->model.options, a.prefill);
  if (!d) return d.error();
  const Model& m = r->model;
  const int h = m.options.heads, n = kvHeadsOf(m.options);
  std::printf("mhascope decode: B=%lld  T=%lld  d_model=%lld  h=%d  N=%d  d_k=%lld  prefill P=%d\n",
              static_cast<long long>(d->output.dim(0)), static_cast<long long>(d->output.dim(1)),
              static_cast<long long>(d->output.dim(2)), h, n, static_cast<long long>(d->kCache.dim(3)), a.prefill);
  std::printf("  %-10s %-8s %-14s %-14s %-16s %s\n", "step", "tokens", "cache bytes", "FLOPs (cache)",
              "FLOPs (recompute)", "saved");
  double cached = 0, recomputed = 0;
  for (std::size_t i = 0; i < d->steps.size(); ++i) {
    const DecodeStep& s = d->steps[i];
    const std::string step = i == 0 ? "prefill" : "t=" + std::to_string(s.first);
    const std::string tokens = i == 0 ? "0.." + std::to_string(s.count - 1) : std::to_string(s.first);
    std::printf("  %-10s %-8s %-14s %-14s %-16s x%.3g\n", step.c_str(), tokens.c_str(),
                withThousands(static_cast<std::int64_t>(s.cacheBytes)).c_str(), formatGeneral(s.flops, 4).c_str(),
                formatGeneral(s.recomputeFlops, 4).c_str(), s.recomputeFlops / s.flops);
    cached += s.flops;
    recomputed += s.recomputeFlops;
  }
  std::printf("total FLOPs: %s with the cache, %s recomputing every step (x%.3g)\n", formatGeneral(cached, 4).c_str(),
              formatGeneral(recomputed, 4).c_str(), recomputed / cached);
  if (!a.dump.empty()) {
    auto out = OutputFolderWrite::begin(kDecodeDump, a.dump, target);
    if (!out) return out.error();
    const std::pair<const char*, const Tensor*> files[] = {
        {"output.npy", &d->output}, {"k_cache.npy", &d->kCache}, {"v_cache.npy", &d->vCache}};
    for (const auto& [name, tensor] : files) {
      if (OutputFolderWrite::interrupted()) return out->abandon("interrupted");
      if (auto s = saveNpy(out->file(name).string(), *tensor); !s) return out->abandon(s.error().message);
    }
    if (auto s = out->commit(); !s) return s.error();
    std::printf("wrote output.npy, k_cache.npy, v_cache.npy to %s\n", a.dump.c_str());
  }
  return saveWeightsIfAsked(mo, *r);
}

}  // namespace mhascope::cli
