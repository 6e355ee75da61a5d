// `mhascope attribute --model DIR --text TEXT --answer TOKEN --wrong TOKEN [--json F] [--export-dir D]`: direct
// logit attribution (core/experiments/attribution.hpp) — what each head, each MLP, the embeddings and the biases
// add directly to logit[answer] − logit[wrong] at the last position, through the final norm with its scale frozen
// at the run's — as a table, a JSON file and heatmaps (per layer × head, and per layer accumulated).
// `mhascope attribute --model DIR --text TEXT --why L.H --key K [--query Q] [--versus K2] [--json F] [--export-dir D]`:
// the QK score decomposition (core/experiments/score_decomposition.hpp) of head L.H's score of query Q (default the
// last token) and key K — or of its difference with key K2 — as the largest cells of the query-side × key-side table,
// each side's totals, the sentence that names them, a JSON file with the whole table and its heatmap.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command_common.hpp"
#include "commands.hpp"
#include "experiment_args.hpp"
#include "experiments/attribution.hpp"
#include "experiments/score_decomposition.hpp"
#include "options.hpp"
#include "util/memory_budget.hpp"
#include "util/utf8.hpp"

namespace mhascope::cli {

namespace {

struct AttributeArgs {
  std::string modelDir, text, answer, wrong;
  std::string why, query, key, versus;  // the score decomposition's head L.H and positions (text: checked here)
  ExperimentOutputArgs out;
};

// "L.H" as (layer, head); the ranges are the decomposition's to check (its message names the model's sizes).
Result<std::pair<int, int>> headOf(const std::string& text) {
  const auto dot = text.find('.');
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dot == std::string::npos || !digits(text.substr(0, dot)) || !digits(text.substr(dot + 1))) {
    return makeError("--why '" + text + "': give a layer and a head as L.H (e.g. 1.1, both from 0)");
  }
  return std::pair<int, int>{std::stoi(text.substr(0, dot)), std::stoi(text.substr(dot + 1))};
}

// A token position 0 .. T − 1 of the text (or "last").
Result<std::int64_t> positionOf(const std::string& flag, const std::string& text, std::int64_t T) {
  if (text == "last") return T - 1;
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return makeError(flag + " '" + text + "': give a token position 0 .. " + std::to_string(T - 1) + " (or 'last')");
  }
  const std::int64_t p = std::stoll(text);
  if (p >= T) {
    return makeError(flag + " " + text + " is outside the text's positions 0 .. " + std::to_string(T - 1) + " (T = " +
                     std::to_string(T) + ")");
  }
  return p;
}

int cmdWhy(const AttributeArgs& a, const ModelText& mt, std::uint64_t budget) {
  const std::int64_t T = static_cast<std::int64_t>(mt.ids.size());
  auto lh = headOf(a.why);
  if (!lh) return fail(lh.error().message);
  experiments::ScoreRequest rq;
  rq.layer = lh->first;
  rq.head = lh->second;
  auto q = positionOf("--query", a.query.empty() ? "last" : a.query, T);
  if (!q) return fail(q.error().message);
  auto k = positionOf("--key", a.key, T);
  if (!k) return fail(k.error().message);
  rq.query = *q;
  rq.key = *k;
  if (!a.versus.empty()) {
    auto v = positionOf("--versus", a.versus, T);
    if (!v) return fail(v.error().message);
    rq.versus = *v;
  }
  std::filesystem::path target;
  if (auto s = checkExperimentOutputs(mt, a.out.json, a.out.force, a.out.exportDir, target); !s) return fail(s.error().message);
  auto d = experiments::decomposeScore(mt.folder, mt.ids, rq, a.out.threads, budget);
  if (!d) return fail("--why " + a.why + ": " + d.error().message);
  const model::ModelSpec& spec = mt.folder.spec();
  auto tok = [&](std::int64_t p) { return "'" + mt.labels[static_cast<std::size_t>(p)] + "' (" + std::to_string(p) + ")"; };
  const bool versus = rq.versus >= 0;
  std::printf("%s model %s: T = %d tokens; head %d.%d (K/V head %d), query %s, key %s%s\n", spec.family->modelType,
              mt.folder.dir().c_str(), static_cast<int>(T), rq.layer, rq.head, d->kvHead, tok(rq.query).c_str(),
              tok(rq.key).c_str(), versus ? (", versus key " + tok(rq.versus)).c_str() : "");
  std::printf("s = q·k × %.6g = %.5f (the model's), attention weight %.4f", d->scale, d->modelScore, d->weight);
  if (versus) {
    std::printf("; versus key: s = %.5f, weight %.4f; difference %.5f", d->modelScoreVersus, d->weightVersus, d->modelValue);
  }
  std::printf("\nthe terms below sum to %.5f%s\n", d->sum, d->softcap > 0 ? " (the score before the layer's softcap)" : "");
  std::printf("the input %s's scale frozen at the run's (1/%s): %.5f at the query, %.5f at the key", model::normName(spec.family->norm),
              spec.family->norm == model::NormKind::LayerNorm ? "sqrt(var + eps)" : "rms", d->normScaleQuery, d->normScaleKey);
  if (versus) std::printf(", %.5f at the versus key", d->normScaleVersus);
  std::printf("\nlargest cells (query-side term × key-side term%s):\n", versus ? ", the key terms' difference between the keys" : "");
  for (const auto& [i, j] : experiments::largestCells(*d, 12)) {
    std::printf("  %+10.4f  %-20s × %s\n", d->at(i, j), experiments::sideTermName(d->queryTerms[i], true).c_str(),
                experiments::sideTermName(d->keyTerms[j], false).c_str());
  }
  auto totals = [](const char* title, const std::vector<experiments::SideTerm>& terms, const std::vector<double>& v, bool query) {
    std::vector<std::size_t> order(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return std::abs(v[x]) > std::abs(v[y]); });
    std::printf("%s", title);
    for (std::size_t n = 0; n < std::min<std::size_t>(6, order.size()); ++n) {
      std::printf("%s %s %+.4f", n ? "," : "", experiments::sideTermName(terms[order[n]], query).c_str(), v[order[n]]);
    }
    std::printf("\n");
  };
  totals("by query-side term (summed over the key side):", d->queryTerms, d->queryTotals, true);
  totals("by key-side term (summed over the query side):", d->keyTerms, d->keyTotals, false);
  std::printf("%s\n", experiments::describeScore(*d, mt.labels).c_str());

  nlohmann::json qn = nlohmann::json::array(), kn = nlohmann::json::array(), table = nlohmann::json::array();
  std::vector<std::string> qLabels, kLabels;
  for (const auto& t : d->queryTerms) qLabels.push_back(experiments::sideTermName(t, true));
  for (const auto& t : d->keyTerms) kLabels.push_back(experiments::sideTermName(t, false));
  std::vector<float> grid;
  for (std::size_t i = 0; i < d->queryTerms.size(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t j = 0; j < d->keyTerms.size(); ++j) {
      row.push_back(d->at(i, j));
      grid.push_back(static_cast<float>(d->at(i, j)));
    }
    table.push_back(row);
  }
  const nlohmann::json doc = {
      {"model", mt.folder.dir()}, {"text", replaceInvalidUtf8(mt.text)}, {"T", T}, {"layer", rq.layer}, {"head", rq.head},
      {"kv_head", d->kvHead}, {"query", rq.query}, {"key", rq.key}, {"versus", rq.versus}, {"scale", d->scale},
      {"softcap", d->softcap}, {"model_score", d->modelScore}, {"model_score_versus", d->modelScoreVersus},
      {"model_value", d->modelValue}, {"weight", d->weight}, {"weight_versus", d->weightVersus}, {"sum", d->sum},
      {"norm_scale_query", d->normScaleQuery}, {"norm_scale_key", d->normScaleKey},
      {"norm_scale_versus", d->normScaleVersus}, {"query_terms", qLabels}, {"key_terms", kLabels}, {"table", table},
      {"query_totals", d->queryTotals}, {"key_totals", d->keyTotals},
      {"summary", experiments::describeScore(*d, mt.labels)}};
  GridFile cells{"score_terms", static_cast<int>(qLabels.size()), static_cast<int>(kLabels.size()), grid, qLabels, kLabels,
                 "query-side term", "key-side term",
                 "Head " + a.why + "'s score split: query-side × key-side terms" + (versus ? " (versus key)" : "")};
  const std::string subtitle = std::string(spec.family->modelType) + " " + mt.folder.dir() + ", query " + tok(rq.query) +
                               ", key " + tok(rq.key) + (versus ? ", versus " + tok(rq.versus) : std::string()) +
                               ", norm scales frozen at the run's";
  if (auto s = writeExperimentOutputs(a.out.json, doc.dump(2) + "\n", a.out.exportDir, target, {cells}, subtitle); !s) {
    return fail(s.error().message);
  }
  return 0;
}

int cmdAttribute(const AttributeArgs& a) {
  const std::uint64_t budget = a.out.budgetBytes();
  if (a.why.empty()) {
    for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--query", &a.query}, {"--key", &a.key},
                                      {"--versus", &a.versus}}) {
      if (!value->empty()) return fail(std::string(flag) + " is a position of the score decomposition: give --why L.H with it");
    }
    if (a.answer.empty() || a.wrong.empty()) {
      return fail("give --answer and --wrong (direct logit attribution), or --why L.H --key K (the QK score decomposition)");
    }
  } else {
    if (!a.answer.empty() || !a.wrong.empty()) {
      return fail("--why decomposes a head's attention score; --answer and --wrong are for direct logit attribution: give one or the other");
    }
    if (a.key.empty()) return fail("--why " + a.why + " needs --key K, the key position of the score to split");
  }
  auto mt = tokenizeForModel(a.modelDir, a.text, "--text", nullptr, budget);
  if (!mt) return fail(mt.error().message);
  if (!mt->textNote.empty()) warn(mt->textNote);
  if (!a.why.empty()) return cmdWhy(a, *mt, budget);
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
  cmd.add_option("--answer", a->answer, "the right answer: a text of one token (' Mary') or #id (logit attribution)");
  cmd.add_option("--wrong", a->wrong, "the wrong answer: a text of one token or #id (logit attribution)");
  cmd.add_option("--why", a->why, "instead: split head L.H's pre-softmax score of --query and --key into what wrote "
                 "the stream at each side (e.g. 1.1)");
  cmd.add_option("--query", a->query, "--why: the query position, 0 .. T-1 (default: last)");
  cmd.add_option("--key", a->key, "--why: the key position, 0 .. T-1, visible from the query");
  cmd.add_option("--versus", a->versus, "--why: a second key K2: split s(query, key) - s(query, K2) instead");
  addExperimentOutputOptions(cmd, a->out);
  return [a](CommandContext&) { return cmdAttribute(*a); };
}

}  // namespace mhascope::cli
