// `run --model DIR` and `predict --model DIR` (see model_run_command.hpp).
//
// [SECTION] run --model
// [SECTION] predict
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
#include "tokenize/text_utf8.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {

namespace {

std::uint64_t budgetBytes(std::optional<std::uint64_t> mib) { return mib ? *mib << 20 : defaultMemoryBudget(); }

// ---------------------------------------------------------------------------------------------
// [SECTION] run --model
// ---------------------------------------------------------------------------------------------

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
  for (const auto& l : m.labels) tokens.push_back(tokenize::replaceInvalidUtf8(l));
  nlohmann::json nonFinite = nlohmann::json::array();
  for (const NonFiniteStage& n : nonFiniteStages(tr)) {
    nonFinite.push_back({{"stage", stageInfo(n.stage).name}, {"nan", n.nan}, {"inf", n.inf}, {"first_index", n.first}});
  }
  nlohmann::json config = {{"model", m.dir},
                           {"architecture", m.architecture},
                           {"layer", m.layer},
                           {"layer_given", m.layerGiven},
                           {"layers", m.layers},
                           {"text", tokenize::replaceInvalidUtf8(m.text)},
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

// ---------------------------------------------------------------------------------------------
// [SECTION] predict
// ---------------------------------------------------------------------------------------------

// Columns of the table count characters, not bytes ('␣' is three bytes, one column).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// A token for a table cell: at most `width` columns (cut with '…'), padded to `width`.
std::string cell(const std::string& token, std::size_t width) {
  std::string out;
  std::size_t cols = 0;
  for (std::size_t i = 0; i < token.size();) {
    std::size_t len = 1;
    while (i + len < token.size() && (static_cast<unsigned char>(token[i + len]) & 0xC0) == 0x80) ++len;
    if (cols + 1 == width && columns(token.substr(i)) > 1) {
      out += "…";
      ++cols;
      break;
    }
    out.append(token, i, len);
    ++cols;
    i += len;
  }
  out.append(width > cols ? width - cols : 0, ' ');
  return out;
}

nlohmann::json candidateJson(const ModelText& mt, const model::Candidate& c) {
  return {{"id", c.id}, {"token", tokenize::replaceInvalidUtf8(mt.tokenizer.displayToken(c.id))}, {"probability", c.probability}};
}

}  // namespace

std::string modelDumpLine(const ModelLayerInfo& m) {
  return m.architecture + " model " + m.dir + ", layer " + std::to_string(m.layer) +
         (m.layerGiven ? " (" : " (no --layer given; ") + "layers 0 .. " + std::to_string(m.layers - 1) +
         "), T = " + std::to_string(m.ids.size()) + " tokens (" + m.bosNote + "), h = " + std::to_string(m.heads) +
         ", N = " + std::to_string(m.kvHeads) + " K/V heads";
}

Result<int> writeModelDump(const ModelLayerInfo& m, const Trace& t, const std::string& dumpDir,
                           const std::filesystem::path& target) {
  const std::string line = modelDumpLine(m);
  return writeDump(t, dumpDir, target,
                   [&](nlohmann::json stages) { return modelTraceDocument(m, t, line, std::move(stages)); },
                   {{kTokenIdsFile, encodeTokenIdsNpy(m.ids)}});
}

CLI::App* addPredictCommand(CLI::App& app, PredictArgs& a) {
  auto* c = app.add_subcommand("predict", "a model folder's next-token predictions on your text, and the logit lens");
  c->add_option("--model", a.modelDir, "a Hugging Face model folder (config.json, safetensors, tokenizer.json or "
                                      "vocab.json + merges.txt)")
      ->required()
      ->check(nonEmptyPath());
  auto* text = c->add_option("--text", a.text, "the text, verbatim (newlines, tabs and '|' are text)");
  c->add_option("--text-file", a.textFile, "read the text from this file, verbatim")->check(nonEmptyPath())->excludes(text);
  c->add_option("--top", a.top, "next tokens shown per position")->transform(decimalInteger(1, INT_MAX))->capture_default_str();
  c->add_option("--json", a.json, "write the predictions and the logit lens to this file")->check(nonEmptyPath());
  c->add_flag("--force", a.force, "replace an existing --json file");
  c->add_option("--memory-budget", a.memoryBudgetMib, "memory budget for the forward, MiB (default: half of the "
                "available memory, 512 MiB … 32 GiB)")
      ->transform(decimalInteger(1, 1ull << 30));
  return c;
}

int cmdPredict(const PredictArgs& a) {
  auto mt = loadModelText(a.modelDir, a.text, a.textFile);
  if (!mt) return fail(mt.error().message);
  const model::ModelSpec& s = mt->folder.spec();
  if (a.top > s.vocab) {
    return fail("--top " + std::to_string(a.top) + " is more than the model's vocabulary of " + std::to_string(s.vocab));
  }
  if (!a.json.empty()) {
    // Every file the folder is read from, and the text: --force replaces an earlier output, never an input.
    auto inputs = modelFolderFiles(mt->folder.dir());
    if (!a.textFile.empty()) inputs.push_back({"--text-file", a.textFile});
    if (auto st = checkJsonOutput(a.json, a.force, inputs); !st) return fail(st.error().message);
  }
  model::ForwardOptions opt;
  opt.keepAttention = false;
  opt.keepHidden = true;  // the logit lens reads every layer's residual stream
  opt.tokenLabels = mt->labels;
  opt.memoryBudgetBytes = budgetBytes(a.memoryBudgetMib);
  auto fr = model::runForward(mt->folder, mt->ids, opt);
  if (!fr) return fail(fr.error().message);
  const int T = static_cast<int>(mt->ids.size()), V = s.vocab;

  // predictions[t]: what follows position t; lens.at(l, t): the top-1 of layer l's stream.
  const std::vector<std::vector<model::Candidate>> predictions = model::predictNext(fr->logits, a.top);
  auto lensOr = model::logitLens(mt->folder, *fr);
  if (!lensOr) return fail(lensOr.error().message);
  const model::LogitLens& lens = *lensOr;

  std::printf("%s model %s: T = %d tokens (%s)\n\n", model::archName(s.arch), mt->folder.dir().c_str(), T,
              bosNote(*mt).c_str());
  std::printf("Next-token predictions (top %d; probability over all %d tokens; '␣' is a space)\n", a.top, V);
  for (int t = 0; t < T; ++t) {
    std::printf("  %4d %s %6d  →", t, cell(mt->labels[static_cast<std::size_t>(t)], 12).c_str(), mt->ids[static_cast<std::size_t>(t)]);
    for (const model::Candidate& c : predictions[static_cast<std::size_t>(t)]) {
      std::printf("  %s (%d) %.4f", mt->tokenizer.displayToken(c.id).c_str(), c.id, c.probability);
    }
    std::printf("\n");
  }
  std::printf("\nLogit lens: top-1 next token of each layer's residual stream through the final norm and unembedding\n"
              "(the last layer's column is the model's own prediction)\n");
  constexpr std::size_t kCell = 12;
  std::printf("  %4s %s", "t", cell("token", kCell).c_str());
  for (int l = 0; l < s.layers; ++l) std::printf(" %s", cell("layer " + std::to_string(l), kCell).c_str());
  std::printf("\n");
  for (int t = 0; t < T; ++t) {
    std::printf("  %4d %s", t, cell(mt->labels[static_cast<std::size_t>(t)], kCell).c_str());
    for (int l = 0; l < s.layers; ++l) {
      std::printf(" %s", cell(mt->tokenizer.displayToken(lens.at(l, t).top.id), kCell).c_str());
    }
    std::printf("\n");
  }

  if (!a.json.empty()) {
    nlohmann::json tokens = nlohmann::json::array(), preds = nlohmann::json::array(), lensJ = nlohmann::json::array();
    for (int t = 0; t < T; ++t) {
      tokens.push_back({{"id", mt->ids[static_cast<std::size_t>(t)]}, {"token", tokenize::replaceInvalidUtf8(mt->labels[static_cast<std::size_t>(t)])}});
      nlohmann::json top = nlohmann::json::array();
      for (const model::Candidate& c : predictions[static_cast<std::size_t>(t)]) top.push_back(candidateJson(*mt, c));
      preds.push_back(top);
    }
    for (int l = 0; l < lens.layers; ++l) {
      nlohmann::json r = nlohmann::json::array();
      for (int t = 0; t < T; ++t) r.push_back(candidateJson(*mt, lens.at(l, t).top));
      lensJ.push_back(r);
    }
    const nlohmann::json doc = {{"model", mt->folder.dir()}, {"architecture", model::archName(s.arch)},
                                {"text", tokenize::replaceInvalidUtf8(mt->text)}, {"bos", mt->bos}, {"T", T}, {"V", V},
                                {"layers", s.layers}, {"top", a.top}, {"tokens", tokens},
                                {"predictions", preds}, {"logit_lens", lensJ}};
    if (auto st = writeFileAtomic(a.json, doc.dump(2) + "\n"); !st) return fail(st.error().message);
    std::printf("\nwrote %s\n", a.json.c_str());
  }
  return 0;
}

}  // namespace mhascope::cli
