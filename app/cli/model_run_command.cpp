// `run --model DIR`'s dump (see model_run_command.hpp).
#include "model_run_command.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "command_common.hpp"
#include "dump_folder.hpp"
#include "io/file_io.hpp"
#include "kernels/gemm.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "model/predictions.hpp"
#include "model_options.hpp"
#include "model_source/model_text.hpp"
#include "util/utf8.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {

namespace {

// (1, T) little-endian int64, NumPy format 1.0 with the header padded to 64 bytes as np.save does.
std::string encodeTokenIdsNpy(const std::vector<int>& ids) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, " + std::to_string(ids.size()) + "), }";
  const std::size_t unpadded = 10 + header.size() + 1;  // magic, version, length, header, '\n'
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  for (int id : ids) {
    const auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(id));
    for (int b = 0; b < 8; ++b) out += static_cast<char>((v >> (8 * b)) & 0xff);
  }
  return out;
}

nlohmann::json modelTraceDocument(const ModelLayerInfo& m, const Trace& tr, const std::string& describeLine,
                                  nlohmann::json stages) {
  nlohmann::json tokens = nlohmann::json::array();
  for (const auto& l : m.labels) tokens.push_back(replaceInvalidUtf8(l));
  nlohmann::json nonFinite = nlohmann::json::array();
  for (const NonFiniteStage& n : nonFiniteStages(tr)) {
    nonFinite.push_back({{"stage", stageInfo(n.stage).name}, {"nan", n.nan}, {"inf", n.inf}, {"first_index", n.first}});
  }
  nlohmann::json config = {{"model", m.dir},
                           {"architecture", m.architecture},
                           {"layer", m.layer},
                           {"layer_given", m.layerGiven},
                           {"layers", m.layers},
                           {"text", replaceInvalidUtf8(m.text)},
                           {"bos", m.bos},
                           {"mask", "causal"},
                           {"positions", m.rope ? "rope" : "learned (added to the embeddings)"},
                           {"window", m.window}};
  return {{"mhascope_trace_version", 1},
          {"config", config},
          {"describe", describeLine},
          {"B", tr.batch}, {"T_q", tr.tq}, {"T_k", tr.tk}, {"d_model", tr.dModel},
          {"h", tr.heads}, {"d_k", tr.dk}, {"kv_heads", tr.kvHeads}, {"scale_factor", tr.scaleFactor},
          {"query_tokens", {tokens}}, {"key_tokens", {tokens}},
          {"token_ids", m.ids}, {"token_ids_file", kTokenIdsFile},
          {"fully_masked_rows", nlohmann::json::array()}, {"non_finite", nonFinite},
          {"gemm", gemmName(gemmChoice().backend) + " (" + gemmChoice().how + ")"}, {"stages", stages}};
}

}  // namespace

std::string modelDumpLine(const ModelLayerInfo& m) {
  return m.architecture + " model " + m.dir + ", layer " + std::to_string(m.layer) +
         (m.layerGiven ? " (" : " (no --layer given; ") + "layers 0 .. " + std::to_string(m.layers - 1) +
         "), T = " + std::to_string(m.ids.size()) + " tokens (" + m.bosNote + "), h = " + std::to_string(m.heads) +
         (m.latentRank > 0 ? ", no K/V heads: one latent of r + d_r = " + std::to_string(m.latentRank) + " + " +
                                 std::to_string(m.latentRopeDim) + " = " +
                                 std::to_string(m.latentRank + m.latentRopeDim) +
                                 " numbers per token, shared by all " + std::to_string(m.heads) + " heads"
                           : ", N = " + std::to_string(m.kvHeads) + " K/V heads");
}

Result<int> writeModelDump(const ModelLayerInfo& m, const Trace& t, const std::string& dumpDir,
                           const std::filesystem::path& target) {
  const std::string line = modelDumpLine(m);
  return writeDump(t, dumpDir, target,
                   [&](nlohmann::json stages) { return modelTraceDocument(m, t, line, std::move(stages)); },
                   {{kTokenIdsFile, encodeTokenIdsNpy(m.ids)}});
}

}  // namespace mhascope::cli
