#include "info_command.hpp"

#include <algorithm>
#include <climits>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "options.hpp"
#include "command_common.hpp"
#include "info_model.hpp"
#include "model_options.hpp"
#include "util/format.hpp"
#include "util/utf8.hpp"
#include "workspace_options.hpp"

namespace mhascope::cli {
namespace {

// `s` padded with spaces to `width` characters (not bytes: "h·d_k" is five characters in six bytes).
std::string padded(std::string s, std::size_t width) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); i += decodeUtf8Step(s, i).len) ++chars;
  if (chars < width) s.append(width - chars, ' ');
  return s;
}

}  // namespace

int cmdInfo(const ModelOptions& mo, const std::optional<Workspace>& ws) {
  // info prints sizes, shapes and costs, never a stage's numbers: a model folder's layer is
  // described without running the layers before it.
  OutputPlan plan;
  plan.describeOnly = true;
  auto r = resolveModel(mo, plan);
  if (!r) return fail(r.error().message);
  auto t = computeTrace(*r);
  if (!t) return fail(t.error().message);
  if (r->modelLayer) {  // the whole model first, then the layer shown
    if (auto s = printModelFolderSummary(r->modelLayer->dir); !s) return fail(s.error().message);
    std::printf("\n");
  }
  std::printf("mhascope info: %s\n", describe(*r, *t).c_str());
  std::printf("\nShape trace (pipeline order)\n");
  std::printf("  %-14s %-22s %-24s %s\n", "stage", "shape", "axes", "formula");
  for (const auto& st : t->stages) {
    if (!stageRecorded(*t, st.id)) continue;  // a variant not in use
    const auto& info = stageInfo(st.id);
    // The split is two steps, as the lessons show: view (B, T, d_model) as (B, T, h, d_k) —
    // free, no copy — then transpose(1, 2) to (B, h, T, d_k).
    if (st.id == StageId::QHeads || st.id == StageId::KHeads || st.id == StageId::VHeads) {
      const Tensor& heads = st.tensor;  // (B, h, T, d_k)
      const Shape viewShape = {heads.dim(0), heads.dim(2), heads.dim(1), heads.dim(3)};
      const std::string tAxis = heads.axes.size() == 4 ? heads.axes[2] : "T";
      const std::string hAxis = heads.axes.size() == 4 ? heads.axes[1] : "h";  // N for grouped K/V heads
      const char* x = st.id == StageId::QHeads ? "Q" : st.id == StageId::KHeads ? "K" : "V";
      const std::string name = std::string(1, static_cast<char>(std::tolower(x[0]))) + "_view";
      std::printf("  %-14s %-22s %s %s\n", name.c_str(), shapeToString(viewShape).c_str(),
                  padded("(B, " + tAxis + ", " + hAxis + ", d_k)", 24).c_str(),
                  (std::string(x) + ".view(B, " + tAxis + ", " + hAxis + ", d_k): no copy").c_str());
    }
    std::printf("  %-14s %-22s %s %s\n", info.name, shapeToString(st.tensor.shape).c_str(),
                padded(axesToString(st.tensor.axes), 24).c_str(), stageFormula(*t, st.id).c_str());
  }
  const std::int64_t d = t->dModel, h = t->heads, dk = t->dk;
  const ParameterTable pt = parameterTable(layerSizesOf(*t)).value();  // the trace's sizes passed validateSizes
  const LayerCounts& c = pt.counts;  // every count below: attention/layer_counts.hpp
  const std::int64_t n = c.kvHeads;
  const bool mha = n == h;
  LayerCounts weightsOnly = c, withBiases = c;
  weightsOnly.bias = false;
  withBiases.bias = true;
  std::printf("\nParameters (d_model = %lld, h = %lld, N = %lld, d_k = %lld)\n", static_cast<long long>(d),
              static_cast<long long>(h), static_cast<long long>(n), static_cast<long long>(dk));
  // A count, and after it the formula when there is one.
  auto row = [](const std::string& what, std::int64_t v, const std::string& formula = {}) {
    if (formula.empty()) std::printf("  %-52s %s\n", what.c_str(), withThousands(v).c_str());
    else std::printf("  %-52s %-10s %s\n", what.c_str(), withThousands(v).c_str(), formula.c_str());
  };
  row("one head's block of W_q (d_model x d_k)", pt.oneHeadProjection);
  row("Q/K/V if every head had full d_model projections", pt.qkvFullPerHead);
  row(mha ? "Q/K/V with d_k per head (3*h*d_model*d_k)" : "Q/K/V with d_k per head ((h + 2*N)*d_model*d_k)",
      pt.qkvReducedPerHead);
  row("W_q (d_model x h*d_k)", c.wq);
  row("W_k (d_model x N*d_k)", c.wk);
  row("W_v (d_model x N*d_k)", c.wv);
  row("W_o (h*d_k x d_model)", c.wo);
  row(mha ? "biases (4*d_model)" : "biases (2*d_model + 2*N*d_k)", c.biases());
  row("total without bias", c.weights(), parameterFormula(weightsOnly));
  row("total with bias", c.withBias(), parameterFormula(withBiases));
  row(std::string("this layer holds (biases ") + (c.bias ? "on)" : "off)"), c.params());
  std::printf("\nAttention variant\n");
  std::printf("  %-30s %lld%s\n", "kv heads N", static_cast<long long>(n),
              mha ? " (= h: multi-head attention)" : n == 1 ? " (multi-query: every query head reads one K/V head)"
                                                          : " (grouped-query: h/N query heads per K/V head)");
  std::printf("  %-30s %s\n", "positions", positionsName(r->config).c_str());
  if (t->positions == AttnPositions::Rope) {
    std::printf("  %-30s base %g, %s pairing\n", "RoPE", static_cast<double>(t->ropeBase),
                t->ropeStyle == RopeStyle::Half ? "rotate-half (i, i + d_k/2)" : "interleaved (2i, 2i + 1)");
  }
  if (t->positions == AttnPositions::Alibi) {
    std::string slopes;
    for (float m : alibiSlopes(static_cast<int>(h))) slopes += (slopes.empty() ? "" : ", ") + formatGeneral(m, 6);
    std::printf("  %-30s %s\n", "ALiBi slopes m_1..m_h", slopes.c_str());
  }
  if (t->window > 0) {
    std::printf("  %-30s W = %d, sinks S = %d\n", "sliding window", t->window, t->sinks);
  } else {
    std::printf("  %-30s none\n", "sliding window");
  }
  std::printf("  %-30s %s per token and layer (2 * N * d_k floats of 4 bytes; %s in 16-bit)\n", "KV cache",
              formatBytes(static_cast<double>(c.kvCacheBytesPerToken())).c_str(),
              formatBytes(static_cast<double>(c.kvCacheBytesPerToken(2))).c_str());
  const FlopCount f = c.flops(t->batch, t->tq, t->tk);
  std::printf("\nFLOPs per forward (multiply-add = 2)\n");
  std::printf("  projections (Q, K, V, W_o)  %.4g\n  attention (QK^T, AV)        %.4g\n  total                       %.4g\n",
              f.projections, f.attention, f.total());
  const double scoreBytes = c.scoreBytes(t->batch, t->tq, t->tk);
  std::printf("\nMemory\n  scores (B*h*T_q*T_k floats)  %s per copy; scores, scaled, masked, weights = 4 copies\n",
              formatBytes(scoreBytes).c_str());
  {
    MemoryUse use;
    use.headDim = r->model.options.headDim;
    use.weightsFile = !mo.files.weights.empty() || !mo.saveWeightsFile.empty();
    const MemoryEstimate e = estimateMemory(t->batch, t->tq, t->tk, d, h, use);
    std::printf("  whole recorded trace         %s (16 stages, mask flags, token labels)\n", formatBytes(e.trace).c_str());
    std::printf("  all buffers (the estimate)   %s = %s (budget %s)\n", formatBytes(e.total()).c_str(),
                e.describe().c_str(), formatBytes(static_cast<double>(r->model.options.memoryBudgetBytes)).c_str());
  }
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
                "output rows are just b_o (%s).\n",
                fully, fullyMaskedRowElsewhereText());
  if (auto s = saveWeightsIfAsked(mo, *r); !s) return fail(s.error().message);
  if (auto s = saveWorkspaceIfAsked(mo, *r, ws, ws ? ws->view : WorkspaceView{}); !s) return fail(s.error().message);
  return 0;
}


CommandRun addInfoCommand(CLI::App& cmd, CommandContext& ctx) {
  cmd.add_option("--save-workspace", ctx.model.saveWorkspace, kSaveWorkspaceHelp)->check(nonEmptyPath());
  CLI::App* info = &cmd;
  return [info](CommandContext& c) {
    // info --model DIR alone: the folder's summary; with a text (or a workspace's), that plus the
    // pipeline info of the layer.
    const ModelOptions& mo = c.model;
    const bool folderSummaryOnly = !mo.files.model.empty() && !mo.text && mo.textFile.empty() && !mo.files.layer &&
                                   mo.workspace.empty();
    return folderSummaryOnly ? cmdInfoModel(mo.files.model, *info) : cmdInfo(mo, c.workspace);
  };
}

}  // namespace mhascope::cli
