// `mhascope run --dump DIR [MODEL options]`: every stage as DIR/<stage>.npy and DIR/trace.json (a
// model folder's layer: its own trace.json block and token_ids.npy, model_run_command.cpp).
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "util/utf8.hpp"
#include "command_common.hpp"
#include "commands.hpp"
#include "dump_folder.hpp"
#include "kernels/gemm.hpp"
#include "model_run_command.hpp"
#include "options.hpp"
#include "workspace_options.hpp"

namespace mhascope::cli {

namespace {

// trace.json: the configuration used, the sizes, the tokens, the fully masked rows, the
// non-finite cells, the GEMM that computed the numbers (`gemm`: Eigen and OpenBLAS sum in other
// orders, so their last bits differ; it says why two dumps of one command may, e.g. with
// MHASCOPE_GEMM=openblas) and the list of stage files (`stages`).
nlohmann::json traceDocument(const ModelOptions& mo, const ResolvedModel& r, const Trace& tr, nlohmann::json stages) {
  auto clean = [](const std::vector<std::vector<std::string>>& rows) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& row : rows) {
      nlohmann::json jr = nlohmann::json::array();
      for (const auto& tok : row) jr.push_back(replaceInvalidUtf8(tok));
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
  plan.recordedLatentLayer = mo.saveWeightsFile.empty();  // a latent layer has no W_q, W_k, W_v to save
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

}  // namespace

CommandRun addRunCommand(CLI::App& cmd, CommandContext& ctx) {
  cmd.add_option("--save-workspace", ctx.model.saveWorkspace, kSaveWorkspaceHelp)->check(nonEmptyPath());
  auto dumpDir = std::make_shared<std::string>();
  cmd.add_option("--dump", *dumpDir, "folder for <stage>.npy and trace.json")->required()->check(nonEmptyPath());
  return [dumpDir](CommandContext& c) { return cmdRun(c.model, *dumpDir, c.workspace); };
}

}  // namespace mhascope::cli
