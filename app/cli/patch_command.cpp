// `mhascope patch --model DIR --clean TEXT --corrupt TEXT --answer TOKEN --wrong TOKEN [--metric logit-diff|prob]
// [--site resid|attn|mlp|head|head-position|q|k|v|pattern] [--direction denoise|noise] [--json F] [--export-dir D]`:
// activation patching (core/experiments/patching.hpp) — per site the metric restored, 0 = as the corrupted run,
// 1 = as the clean one — as a table, a JSON file and a heatmap. `--site path --sender L.H --receiver L.H
// --into q|k|v`: path patching (core/experiments/path_patching.hpp) of one edge; with only --receiver every earlier
// head as the sender, with only --sender every later head as the receiver (a layer × head grid).
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command_common.hpp"
#include "commands.hpp"
#include "experiment_args.hpp"
#include "experiments/path_patching.hpp"
#include "experiments/patching.hpp"
#include "model/forward.hpp"
#include "options.hpp"
#include "util/memory_budget.hpp"
#include "util/utf8.hpp"

namespace mhascope::cli {

namespace {

struct PatchArgs {
  std::string modelDir, clean, corrupt, answer, wrong;
  std::string metric = "logit-diff", site = "head", direction = "denoise";
  std::string sender, receiver, into;  // --site path
  ExperimentOutputArgs out;
};

// The metric's line and the restored fraction's, the same for every site.
void printMetric(const ModelText& clean, const experiments::Answer& answer, double cleanMetric, double corruptedMetric) {
  const char* metricWords = answer.metric == experiments::Metric::LogitDiff ? "logit difference" : "probability";
  std::printf("metric: %s of '%s' (%d)%s at the last position; clean %.4f, corrupted %.4f\n", metricWords,
              clean.tokenizer->displayToken(answer.right).c_str(), answer.right,
              answer.metric == experiments::Metric::LogitDiff
                  ? (" − '" + clean.tokenizer->displayToken(answer.wrong) + "' (" + std::to_string(answer.wrong) + ")").c_str()
                  : "",
              cleanMetric, corruptedMetric);
  std::printf("restored fraction (metric − corrupted) / (clean − corrupted): 0 = as corrupted, 1 = as clean\n");
}

// "L.H" → a head; the message names the flag and the text.
Result<experiments::HeadRef> headOf(const char* flag, const std::string& text) {
  const std::size_t dot = text.find('.');
  auto number = [](const std::string& t, int& out) {
    if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoi(t);
    return true;
  };
  experiments::HeadRef h;
  if (dot == std::string::npos || !number(text.substr(0, dot), h.layer) || !number(text.substr(dot + 1), h.head)) {
    return makeError(std::string(flag) + " '" + text + "' is not a head: give LAYER.HEAD, e.g. 1.3 (layer 1, head 3)");
  }
  return h;
}

// --site path: one edge (--sender and --receiver), every earlier sender (--receiver alone) or every later receiver
// (--sender alone), as a table, the JSON and a heatmap like the other sites'.
int cmdPathPatch(const PatchArgs& a, const ModelText& clean, const ModelText& corrupt, const experiments::PatchRequest& base,
                 const std::filesystem::path& target) {
  experiments::PathRequest r;
  r.clean = base.clean;
  r.corrupted = base.corrupted;
  r.answer = base.answer;
  r.direction = base.direction;
  r.threads = base.threads;
  r.memoryBudgetBytes = base.memoryBudgetBytes;
  if (a.sender.empty() && a.receiver.empty()) {
    return fail("--site path needs --sender L.H and --receiver L.H (one edge), or one of them (every head on the other side)");
  }
  if (a.into.empty()) return fail("--site path needs --into q, k or v: the receiver's input the sender's output goes into");
  r.into = a.into == "q" ? experiments::PathInput::Query : (a.into == "k" ? experiments::PathInput::Key : experiments::PathInput::Value);
  if (!a.sender.empty()) {
    auto h = headOf("--sender", a.sender);
    if (!h) return fail(h.error().message);
    r.sender = *h;
  }
  if (!a.receiver.empty()) {
    auto h = headOf("--receiver", a.receiver);
    if (!h) return fail(h.error().message);
    r.receiver = *h;
  }
  r.sweep = a.sender.empty() ? experiments::PathSweep::Senders
                             : (a.receiver.empty() ? experiments::PathSweep::Receivers : experiments::PathSweep::Edge);
  const model::ModelSpec& spec = clean.folder.spec();
  if (auto s = experiments::checkPathRequest(spec, r); !s) return fail(s.error().message);
  std::fprintf(stderr, "path patching: about %s of memory\n",
               formatBytes(experiments::estimatePathBytes(spec, static_cast<std::int64_t>(r.clean.size()), true)).c_str());
  auto g = experiments::pathPatch(clean.folder, r, [](int done, int total) {
    if (done == total || done % 50 == 0) std::fprintf(stderr, "\rpath patching: %d of %d edges", done, total);
    if (done == total) std::fprintf(stderr, "\n");
    return true;
  });
  if (!g) return fail(g.error().message);

  const int T = static_cast<int>(r.clean.size());
  const bool edge = r.sweep == experiments::PathSweep::Edge;
  const std::string into = experiments::pathInputName(r.into);
  const std::string senderName = std::to_string(r.sender.layer) + "." + std::to_string(r.sender.head);
  const std::string receiverName = std::to_string(r.receiver.layer) + "." + std::to_string(r.receiver.head);
  const std::string what = edge ? "head " + senderName + " → head " + receiverName + "'s " + into
                                : (r.sweep == experiments::PathSweep::Senders ? "every earlier head → head " + receiverName + "'s " + into
                                                                              : "head " + senderName + " → every later head's " + into);
  const bool denoise = r.direction == experiments::PatchDirection::Denoise;
  std::printf("%s model %s: T = %d tokens; path patching (%s), %s: the %s run with the sender's %s output reaching the "
              "receiver's %s only, through its W_o rows (the direct path)\n",
              spec.family->modelType, clean.folder.dir().c_str(), T, experiments::directionName(r.direction), what.c_str(),
              denoise ? "corrupted" : "clean", denoise ? "clean" : "corrupted", into.c_str());
  printMetric(clean, r.answer, g->cleanMetric, g->corruptedMetric);
  std::vector<std::string> rowLabels, colLabels;
  if (edge) {
    rowLabels = {senderName};
    colLabels = {receiverName};
    std::printf("  %s → %s (%s): restored %.4f, metric %.4f\n", senderName.c_str(), receiverName.c_str(), into.c_str(),
                g->at(0, 0), g->metric[0]);
  } else {
    for (int row = 0; row < g->rows; ++row) rowLabels.push_back("L" + std::to_string(row));
    for (int c = 0; c < g->cols; ++c) colLabels.push_back((g->colAxis == "head" ? "H" : "KV") + std::to_string(c));
    std::printf("  (%s %s; '-': no edge, the sender's layer must come before the receiver's)\n",
                r.sweep == experiments::PathSweep::Senders ? "each cell the sender" : "each cell the receiver",
                "layer × head");
    std::printf("  %-8s", g->rowAxis.c_str());
    for (const std::string& l : colLabels) std::printf(" %s", cell(l, 7).c_str());
    std::printf("\n");
  }
  nlohmann::json rows = nlohmann::json::array(), metric = nlohmann::json::array();
  std::vector<float> values(g->restored.size());
  for (int row = 0; row < g->rows; ++row) {
    if (!edge) std::printf("  %-8s", rowLabels[static_cast<std::size_t>(row)].c_str());
    nlohmann::json jr = nlohmann::json::array();
    for (int c = 0; c < g->cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(row * g->cols + c);
      const double v = g->restored[i];
      if (!edge) std::isnan(g->metric[i]) ? std::printf(" %7s", "-") : std::printf(" %7.3f", v);
      jr.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
      metric.push_back(std::isfinite(g->metric[i]) ? nlohmann::json(g->metric[i]) : nlohmann::json(nullptr));
      values[i] = static_cast<float>(v);
    }
    if (!edge) std::printf("\n");
    rows.push_back(jr);
  }
  nlohmann::json tokens = nlohmann::json::array();
  for (std::size_t t = 0; t < r.clean.size(); ++t) {
    tokens.push_back({{"clean", replaceInvalidUtf8(clean.labels[t])}, {"corrupted", replaceInvalidUtf8(corrupt.labels[t])}});
  }
  auto head = [](const experiments::HeadRef& h) { return nlohmann::json::array({h.layer, h.head}); };
  nlohmann::json doc = {{"model", clean.folder.dir()}, {"site", "path"}, {"sweep", experiments::pathSweepName(r.sweep)},
                        {"into", into}, {"direction", experiments::directionName(r.direction)},
                        {"metric", experiments::metricName(r.answer.metric)}, {"answer", r.answer.right},
                        {"wrong", r.answer.wrong}, {"T", T}, {"tokens", tokens}, {"clean_metric", g->cleanMetric},
                        {"corrupted_metric", g->corruptedMetric}, {"rows", g->rows}, {"cols", g->cols},
                        {"row_axis", g->rowAxis}, {"col_axis", g->colAxis}, {"edges", g->edges},
                        {"restored", rows}, {"patched_metric", metric}};
  if (r.sweep != experiments::PathSweep::Senders) doc["sender"] = head(r.sender);
  if (r.sweep != experiments::PathSweep::Receivers) doc["receiver"] = head(r.receiver);
  GridFile f;
  f.stem = std::string("patch_path_") + experiments::pathSweepName(r.sweep) + "_" + into + "_" + experiments::directionName(r.direction);
  f.rows = g->rows;
  f.cols = g->cols;
  f.values = std::move(values);
  f.rowLabels = rowLabels;
  f.colLabels = colLabels;
  f.rowAxis = edge ? "sender" : (r.sweep == experiments::PathSweep::Senders ? "sender layer" : "receiver layer");
  f.colAxis = edge ? "receiver" : (r.sweep == experiments::PathSweep::Senders ? "sender head" : "receiver " + g->colAxis);
  f.title = std::string("Path patching (") + experiments::directionName(r.direction) + "): " + what + ", restored fraction";
  f.range = 1.0f;
  const std::string subtitle = std::string(spec.family->modelType) + " " + clean.folder.dir() + ", T = " + std::to_string(T);
  if (auto s = writeExperimentOutputs(a.out.json, doc.dump(2) + "\n", a.out.exportDir, target, {f}, subtitle); !s) {
    return fail(s.error().message);
  }
  return 0;
}

int cmdPatch(const PatchArgs& a) {
  const std::uint64_t budget = a.out.budgetBytes();
  TokenizerCache tokenizers;
  auto clean = tokenizeForModel(a.modelDir, a.clean, "--clean", &tokenizers, budget);
  if (!clean) return fail(clean.error().message);
  auto corrupt = tokenizeForModel(a.modelDir, a.corrupt, "--corrupt", &tokenizers, budget);
  if (!corrupt) return fail(corrupt.error().message);
  for (const ModelText* t : {&*clean, &*corrupt}) {
    if (!t->textNote.empty()) warn(t->textNote);
  }
  if (auto s = experiments::checkSameLength(clean->ids.size(), corrupt->ids.size()); !s) return fail(s.error().message);
  experiments::PatchRequest r;
  r.clean = clean->ids;
  r.corrupted = corrupt->ids;
  auto right = answerToken(*clean, "--answer", a.answer);
  if (!right) return fail(right.error().message);
  r.answer.right = *right;
  r.answer.metric = a.metric == "prob" ? experiments::Metric::Probability : experiments::Metric::LogitDiff;
  if (r.answer.metric == experiments::Metric::LogitDiff) {
    if (a.wrong.empty()) return fail("--metric logit-diff needs --wrong (the token the corrupted text leads to)");
    auto wrong = answerToken(*clean, "--wrong", a.wrong);
    if (!wrong) return fail(wrong.error().message);
    r.answer.wrong = *wrong;
  }
  const bool path = a.site == "path";
  if (!path) {
    for (const auto& [flag, value] : {std::pair{"--sender", &a.sender}, {"--receiver", &a.receiver}, {"--into", &a.into}}) {
      if (!value->empty()) return fail(std::string(flag) + " '" + *value + "' is for --site path (path patching), not --site " + a.site);
    }
  }
  for (experiments::PatchSite s : experiments::allSites()) {
    if (a.site == experiments::siteName(s)) r.site = s;
  }
  r.direction = a.direction == "noise" ? experiments::PatchDirection::Noise : experiments::PatchDirection::Denoise;
  r.threads = a.out.threads;
  r.memoryBudgetBytes = budget;
  std::filesystem::path target;
  if (auto s = checkExperimentOutputs(*clean, a.out.json, a.out.force, a.out.exportDir, target); !s) return fail(s.error().message);

  if (path) return cmdPathPatch(a, *clean, *corrupt, r, target);
  const model::ModelSpec& spec = clean->folder.spec();
  std::fprintf(stderr, "patching: about %s of memory\n",
               formatBytes(experiments::estimatePatchBytes(spec, static_cast<std::int64_t>(r.clean.size()), r.site, true)).c_str());
  auto g = experiments::patchSweep(clean->folder, r, [](int done, int total) {
    if (done == total || done % 50 == 0) std::fprintf(stderr, "\rpatching: %d of %d sites", done, total);
    if (done == total) std::fprintf(stderr, "\n");
    return true;
  });
  if (!g) return fail(g.error().message);

  const int T = static_cast<int>(r.clean.size());
  const bool byPosition = g->colAxis == "position";
  std::vector<std::string> rowLabels, colLabels;
  const int perLayer = r.site == experiments::PatchSite::HeadPosition ? spec.heads : 1;
  for (int row = 0; row < g->rows; ++row) {
    rowLabels.push_back(perLayer > 1 ? std::to_string(row / perLayer) + "." + std::to_string(row % perLayer)
                                     : "L" + std::to_string(row));
  }
  for (int c = 0; c < g->cols; ++c) {
    colLabels.push_back(byPosition ? clean->labels[static_cast<std::size_t>(c)] : (g->colAxis == "head" ? "H" : "KV") + std::to_string(c));
  }
  const char* metricWords = r.answer.metric == experiments::Metric::LogitDiff ? "logit difference" : "probability";
  std::printf("%s model %s: T = %d tokens; %s each %s (--site %s)\n", spec.family->modelType, clean->folder.dir().c_str(), T,
              r.direction == experiments::PatchDirection::Denoise ? "denoising: the corrupted run with the clean run's numbers at"
                                                                  : "noising: the clean run with the corrupted run's numbers at",
              experiments::siteWords(r.site), experiments::siteName(r.site));
  printMetric(*clean, r.answer, g->cleanMetric, g->corruptedMetric);
  std::printf("  %-8s", g->rowAxis.c_str());
  for (int c = 0; c < g->cols; ++c) std::printf(" %s", cell(colLabels[static_cast<std::size_t>(c)], 7).c_str());
  std::printf("\n");
  nlohmann::json rows = nlohmann::json::array();
  std::vector<float> values(g->restored.size());
  for (int row = 0; row < g->rows; ++row) {
    std::printf("  %-8s", rowLabels[static_cast<std::size_t>(row)].c_str());
    nlohmann::json jr = nlohmann::json::array();
    for (int c = 0; c < g->cols; ++c) {
      const double v = g->at(row, c);
      std::printf(" %7.3f", v);
      jr.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
      values[static_cast<std::size_t>(row * g->cols + c)] = static_cast<float>(v);
    }
    std::printf("\n");
    rows.push_back(jr);
  }
  nlohmann::json metric = nlohmann::json::array();
  for (double m : g->metric) metric.push_back(m);
  nlohmann::json tokens = nlohmann::json::array();
  for (std::size_t t = 0; t < r.clean.size(); ++t) {
    tokens.push_back({{"clean", replaceInvalidUtf8(clean->labels[t])}, {"corrupted", replaceInvalidUtf8(corrupt->labels[t])}});
  }
  const nlohmann::json doc = {{"model", clean->folder.dir()}, {"site", experiments::siteName(r.site)},
                              {"direction", experiments::directionName(r.direction)},
                              {"metric", experiments::metricName(r.answer.metric)},
                              {"answer", r.answer.right}, {"wrong", r.answer.wrong}, {"T", T}, {"tokens", tokens},
                              {"clean_metric", g->cleanMetric}, {"corrupted_metric", g->corruptedMetric},
                              {"rows", g->rows}, {"cols", g->cols}, {"row_axis", g->rowAxis}, {"col_axis", g->colAxis},
                              {"restored", rows}, {"patched_metric", metric}};
  GridFile f;
  f.stem = std::string("patch_") + experiments::siteName(r.site) + "_" + experiments::directionName(r.direction);
  f.rows = g->rows;
  f.cols = g->cols;
  f.values = std::move(values);
  f.rowLabels = rowLabels;
  f.colLabels = colLabels;
  f.rowAxis = g->rowAxis;
  f.colAxis = g->colAxis;
  f.title = std::string("Activation patching (") + experiments::directionName(r.direction) + "): " + experiments::siteWords(r.site) +
            ", restored fraction of the " + metricWords;
  f.range = 1.0f;
  const std::string subtitle = std::string(spec.family->modelType) + " " + clean->folder.dir() + ", T = " + std::to_string(T);
  if (auto s = writeExperimentOutputs(a.out.json, doc.dump(2) + "\n", a.out.exportDir, target, {f}, subtitle); !s) {
    return fail(s.error().message);
  }
  return 0;
}

}  // namespace

CommandRun addPatchCommand(CLI::App& cmd, CommandContext&) {
  auto a = std::make_shared<PatchArgs>();
  cmd.add_option("--model", a->modelDir, "a Hugging Face model folder with its tokenizer")->required()->check(nonEmptyPath());
  cmd.add_option("--clean", a->clean, "the clean text, verbatim")->required();
  cmd.add_option("--corrupt", a->corrupt, "the corrupted text: the same number of tokens")->required();
  cmd.add_option("--answer", a->answer, "the right answer: a text of one token (' Mary') or #id")->required();
  cmd.add_option("--wrong", a->wrong, "the wrong answer (--metric logit-diff): a text of one token or #id");
  cmd.add_option("--metric", a->metric, "logit-diff (answer − wrong) or prob (of the answer)")
      ->check(CLI::IsMember({"logit-diff", "prob"}))
      ->capture_default_str();
  cmd.add_option("--site", a->site, "what is patched: resid, attn, mlp, head, head-position, q, k, v, pattern or path")
      ->check(CLI::IsMember({"resid", "attn", "mlp", "head", "head-position", "q", "k", "v", "pattern", "path"}))
      ->capture_default_str();
  cmd.add_option("--sender", a->sender, "--site path: the sender head L.H (alone: every later head receives)");
  cmd.add_option("--receiver", a->receiver, "--site path: the receiver head L.H (a K/V head for --into k|v; alone: every earlier head sends)");
  cmd.add_option("--into", a->into, "--site path: the receiver's input the sender's output reaches: q, k or v")
      ->check(CLI::IsMember({"q", "k", "v"}));
  cmd.add_option("--direction", a->direction, "denoise (clean into corrupted) or noise (corrupted into clean)")
      ->check(CLI::IsMember({"denoise", "noise"}))
      ->capture_default_str();
  addExperimentOutputOptions(cmd, a->out);
  return [a](CommandContext&) { return cmdPatch(*a); };
}

}  // namespace mhascope::cli
