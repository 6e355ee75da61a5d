// `mhascope attribute --model DIR --text TEXT --answer TOKEN --wrong TOKEN [--json F] [--export-dir D]`: direct
// logit attribution (core/experiments/attribution.hpp) — what each head, each MLP, the embeddings and the biases
// add directly to logit[answer] − logit[wrong] at the last position, through the final norm with its scale frozen
// at the run's — as a table, a JSON file and heatmaps (per layer × head, and per layer accumulated).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command_common.hpp"
#include "commands.hpp"
#include "experiment_args.hpp"
#include "experiments/attribution.hpp"
#include "options.hpp"
#include "util/memory_budget.hpp"
#include "util/utf8.hpp"

namespace mhascope::cli {

namespace {

struct AttributeArgs {
  std::string modelDir, text, answer, wrong;
  ExperimentOutputArgs out;
};

int cmdAttribute(const AttributeArgs& a) {
  const std::uint64_t budget = a.out.budgetBytes();
  auto mt = tokenizeForModel(a.modelDir, a.text, "--text", nullptr, budget);
  if (!mt) return fail(mt.error().message);
  if (!mt->textNote.empty()) warn(mt->textNote);
  auto right = answerToken(*mt, "--answer", a.answer);
  if (!right) return fail(right.error().message);
  auto wrong = answerToken(*mt, "--wrong", a.wrong);
  if (!wrong) return fail(wrong.error().message);
  if (*right == *wrong) return fail("--answer and --wrong are the same token (" + std::to_string(*right) + ")");
  std::filesystem::path target;
  if (auto s = checkExperimentOutputs(*mt, a.out.json, a.out.force, a.out.exportDir, target); !s) return fail(s.error().message);
  auto at = experiments::attributeLogits(mt->folder, mt->ids, *right, *wrong, a.out.threads, budget);
  if (!at) return fail(at.error().message);
  const model::ModelSpec& spec = mt->folder.spec();
  const int L = at->layers, h = at->heads, T = static_cast<int>(mt->ids.size());

  std::printf("%s model %s: T = %d tokens; direct logit attribution at the last position ('%s')\n",
              spec.family->modelType, mt->folder.dir().c_str(), T, mt->labels.back().c_str());
  std::printf("logit['%s' (%d)] − logit['%s' (%d)] = %.5f (the model's); the terms below sum to %.5f\n",
              mt->tokenizer->displayToken(*right).c_str(), *right, mt->tokenizer->displayToken(*wrong).c_str(), *wrong,
              at->modelLogitDiff, at->sum);
  std::printf("the final %s's scale frozen at the run's: 1/%s = %.5f\n", model::normName(spec.family->norm),
              spec.family->norm == model::NormKind::LayerNorm ? "sqrt(var + eps)" : "rms", at->finalScale);
  std::printf("  token embedding %.4f   position embedding %.4f   final norm bias %.4f\n", at->tokenEmbedding,
              at->positionEmbedding, at->finalNormBias);
  std::printf("  %-6s", "layer");
  for (int i = 0; i < h; ++i) std::printf(" %8s", ("H" + std::to_string(i)).c_str());
  std::printf(" %8s %8s %11s\n", "b_o", "MLP", "accumulated");
  nlohmann::json heads = nlohmann::json::array();
  std::vector<float> grid(static_cast<std::size_t>(L * h)), layers(static_cast<std::size_t>(L * 4));
  for (int l = 0; l < L; ++l) {
    std::printf("  %-6d", l);
    nlohmann::json row = nlohmann::json::array();
    double attn = at->outputBias[static_cast<std::size_t>(l)];
    for (int i = 0; i < h; ++i) {
      std::printf(" %8.4f", at->headAt(l, i));
      row.push_back(at->headAt(l, i));
      grid[static_cast<std::size_t>(l * h + i)] = static_cast<float>(at->headAt(l, i));
      attn += at->headAt(l, i);
    }
    const double mlp = at->mlp[static_cast<std::size_t>(l)], acc = at->accumulated[static_cast<std::size_t>(l)];
    std::printf(" %8.4f %8.4f %11.4f\n", at->outputBias[static_cast<std::size_t>(l)], mlp, acc);
    heads.push_back(row);
    layers[static_cast<std::size_t>(l * 4 + 0)] = static_cast<float>(attn);
    layers[static_cast<std::size_t>(l * 4 + 1)] = static_cast<float>(mlp);
    layers[static_cast<std::size_t>(l * 4 + 2)] = static_cast<float>(attn + mlp);
    layers[static_cast<std::size_t>(l * 4 + 3)] = static_cast<float>(acc);
  }
  const nlohmann::json doc = {
      {"model", mt->folder.dir()}, {"text", replaceInvalidUtf8(mt->text)}, {"T", T}, {"answer", *right}, {"wrong", *wrong},
      {"logit_diff", at->modelLogitDiff}, {"sum", at->sum}, {"final_scale", at->finalScale},
      {"token_embedding", at->tokenEmbedding}, {"position_embedding", at->positionEmbedding},
      {"final_norm_bias", at->finalNormBias}, {"head", heads}, {"output_bias", at->outputBias}, {"mlp", at->mlp},
      {"accumulated", at->accumulated}};
  std::vector<std::string> layerLabels, headLabels;
  for (int l = 0; l < L; ++l) layerLabels.push_back("L" + std::to_string(l));
  for (int i = 0; i < h; ++i) headLabels.push_back("H" + std::to_string(i));
  GridFile byHead{"attribution_heads", L, h, grid, layerLabels, headLabels, "layer", "head",
                  "Direct logit attribution: each head's share of logit[answer] − logit[wrong]"};
  GridFile byLayer{"attribution_layers", L, 4, layers, layerLabels, {"attention", "MLP", "layer", "accumulated"},
                   "layer", "term", "Direct logit attribution per layer, and accumulated (the frozen-scale lens)"};
  const std::string subtitle = std::string(spec.family->modelType) + " " + mt->folder.dir() + ", T = " + std::to_string(T) +
                               ", final norm's scale frozen at the run's";
  if (auto s = writeExperimentOutputs(a.out.json, doc.dump(2) + "\n", a.out.exportDir, target, {byHead, byLayer}, subtitle); !s) {
    return fail(s.error().message);
  }
  return 0;
}

}  // namespace

CommandRun addAttributeCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<AttributeArgs>();
  cmd.add_option("--model", a->modelDir, "a Hugging Face model folder with its tokenizer")->required()->check(nonEmptyPath());
  cmd.add_option("--text", a->text, "the text, verbatim; its last token is where the answer is read")->required();
  cmd.add_option("--answer", a->answer, "the right answer: a text of one token (' Mary') or #id")->required();
  cmd.add_option("--wrong", a->wrong, "the wrong answer: a text of one token or #id")->required();
  addExperimentOutputOptions(cmd, a->out);
  return [a](CommandContext&) { return cmdAttribute(*a); };
}

}  // namespace mhascope::cli
