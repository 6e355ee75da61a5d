// `mhascope predict --model DIR --text …`: per position the top-k next tokens and the logit lens
// (see predict_command.hpp).
#include "predict_command.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "command_common.hpp"
#include "commands.hpp"
#include "io/file_io.hpp"
#include "model/forward.hpp"
#include "model/model_folder.hpp"
#include "model/predictions.hpp"
#include "model_source/model_text.hpp"
#include "options.hpp"
#include "util/utf8.hpp"
#include "util/format.hpp"
#include "util/memory_budget.hpp"

namespace mhascope::cli {

namespace {

std::uint64_t budgetBytes(std::optional<std::uint64_t> mib) { return mib ? *mib << 20 : defaultMemoryBudget(); }

nlohmann::json candidateJson(const ModelText& mt, const model::Candidate& c) {
  return {{"id", c.id}, {"token", replaceInvalidUtf8(mt.tokenizer->displayToken(c.id))}, {"probability", c.probability}};
}

}  // namespace

void addPredictOptions(CLI::App* c, PredictArgs& a) {
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
}

int cmdPredict(const PredictArgs& a) {
  auto mt = loadModelText(a.modelDir, a.text, a.textFile, a.memoryBudgetMib ? *a.memoryBudgetMib << 20 : 0);
  if (!mt) return fail(mt.error().message);
  if (!mt->textNote.empty()) warn(mt->textNote);
  const model::ModelSpec& s = mt->folder.spec();
  if (a.top > s.vocab) {
    return fail("--top " + std::to_string(a.top) + " is more than the model's vocabulary of " + std::to_string(s.vocab));
  }
  if (!a.json.empty()) {
    // Every file the folder is read from, and the text: --force replaces an earlier output, never an input.
    auto inputs = modelFolderFiles(mt->folder.dir());
    if (!a.textFile.empty()) inputs.push_back({"--text-file", a.textFile});
    if (auto st = checkJsonOutput(a.json, a.force, inputs); !st) return fail(st.error().message);
    if (auto st = refuseInsideModelFolder("--json", a.json, mt->folder.dir()); !st) return fail(st.error().message);
  }
  model::ForwardOptions opt;
  opt.keepAttention = false;
  opt.keepHidden = true;  // the logit lens reads every layer's residual stream
  opt.tokenLabels = mt->labels;
  opt.memoryBudgetBytes = budgetBytes(a.memoryBudgetMib);
  auto fr = model::runForward(mt->folder, mt->ids, opt);
  if (!fr) return fail(fr.error().message);
  const int T = static_cast<int>(mt->ids.size()), V = s.vocab;
  if (!fr->nonFinite.empty()) {
    std::fprintf(stderr, "mhascope: warning: %s; the probabilities and the lens below are not numbers (the weights are "
                         "finite, but too large for float32)\n", fr->nonFinite.c_str());
  }

  // predictions[t]: what follows position t; lens.at(l, t): the top-1 of layer l's stream.
  const std::vector<std::vector<model::Candidate>> predictions = model::predictNext(fr->logits, a.top);
  auto lensOr = model::logitLens(mt->folder, *fr);
  if (!lensOr) return fail(lensOr.error().message);
  const model::LogitLens& lens = *lensOr;

  std::printf("%s model %s: T = %d tokens (%s)\n\n", s.family->modelType, mt->folder.dir().c_str(), T,
              bosNote(*mt).c_str());
  std::printf("Next-token predictions (top %d; probability over all %d tokens; '␣' is a space)\n", a.top, V);
  for (int t = 0; t < T; ++t) {
    std::printf("  %4d %s %6d  →", t, cell(mt->labels[static_cast<std::size_t>(t)], 12).c_str(), mt->ids[static_cast<std::size_t>(t)]);
    for (const model::Candidate& c : predictions[static_cast<std::size_t>(t)]) {
      std::printf("  %s (%d) %.4f", mt->tokenizer->displayToken(c.id).c_str(), c.id, c.probability);
    }
    std::printf("\n");
  }
  std::printf("\nLogit lens: top-1 next token of each layer's residual stream through the final norm and unembedding,\n"
              "with the probability that layer gives it (the last layer's column is the model's own prediction)\n");
  // A lens cell: the token cut to kLensToken columns, then its probability ("p       0.993").
  constexpr std::size_t kCell = 12, kLensToken = 8, kLensCell = kLensToken + 6;
  std::printf("  %4s %s", "t", cell("token", kCell).c_str());
  for (int l = 0; l < s.layers; ++l) std::printf(" %s", cell("layer " + std::to_string(l), kLensCell).c_str());
  std::printf("\n");
  for (int t = 0; t < T; ++t) {
    std::printf("  %4d %s", t, cell(mt->labels[static_cast<std::size_t>(t)], kCell).c_str());
    for (int l = 0; l < s.layers; ++l) {
      const model::Candidate& top = lens.at(l, t).top;
      std::printf(" %s %.3f", cell(mt->tokenizer->displayToken(top.id), kLensToken).c_str(), top.probability);
    }
    std::printf("\n");
  }

  if (!a.json.empty()) {
    nlohmann::json tokens = nlohmann::json::array(), preds = nlohmann::json::array(), lensJ = nlohmann::json::array();
    for (int t = 0; t < T; ++t) {
      tokens.push_back({{"id", mt->ids[static_cast<std::size_t>(t)]}, {"token", replaceInvalidUtf8(mt->labels[static_cast<std::size_t>(t)])}});
      nlohmann::json top = nlohmann::json::array();
      for (const model::Candidate& c : predictions[static_cast<std::size_t>(t)]) top.push_back(candidateJson(*mt, c));
      preds.push_back(top);
    }
    for (int l = 0; l < lens.layers; ++l) {
      nlohmann::json r = nlohmann::json::array();
      for (int t = 0; t < T; ++t) {
        // The layer's top-1 with the probability the layer gives it, and the one it gives the
        // model's final top-1 (how early the final answer emerges).
        nlohmann::json c = candidateJson(*mt, lens.at(l, t).top);
        c["final_top_probability"] = lens.at(l, t).finalTopProbability;
        r.push_back(std::move(c));
      }
      lensJ.push_back(r);
    }
    const nlohmann::json doc = {{"model", mt->folder.dir()}, {"architecture", s.family->modelType},
                                {"text", replaceInvalidUtf8(mt->text)}, {"bos", mt->bos}, {"T", T}, {"V", V},
                                {"layers", s.layers}, {"top", a.top}, {"tokens", tokens},
                                {"predictions", preds}, {"logit_lens", lensJ},
                                {"non_finite", fr->nonFinite.empty() ? nlohmann::json(nullptr) : nlohmann::json(fr->nonFinite)}};
    if (auto st = writeOutputFile(a.json, doc.dump(2) + "\n", "\n"); !st) return fail(st.error().message);
  }
  return 0;
}

CommandRun addPredictCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<PredictArgs>();
  addPredictOptions(&cmd, *a);
  return [a](CommandContext&) { return cmdPredict(*a); };
}

}  // namespace mhascope::cli
