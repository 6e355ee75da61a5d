// Contact sheet and curves from a training run's view.
#include "train_lab/lab_figures.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "analysis/circuit_texts.hpp"
#include "model_source/training_page.hpp"
#include "widgets/colors.hpp"

namespace mhascope::app {

using namespace mhascope::train;

namespace {
std::string ordinal(int k) {
  const int tens = k % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd" : k % 10 == 3 ? "rd" : "th";
  return std::to_string(k) + suffix;
}
}  // namespace

std::string tokenLabelNote(int T, float plotH, float plotW, float lineHeight) {
  if (T < 1 || plotH <= 0 || plotW <= 0) return {};
  auto stride = [&](float extent) {
    return std::max(1, static_cast<int>(std::ceil(lineHeight / (extent / static_cast<float>(T)))));
  };
  const int rows = stride(plotH), cols = stride(plotW);
  if (rows == 1 && cols == 1) return "every token labelled";
  if (rows == cols) return "every " + ordinal(rows) + " token labelled (hover a cell for its tokens)";
  auto every = [&](int k) { return k == 1 ? std::string("every") : "every " + ordinal(k); };
  return every(rows) + " query and " + every(cols) + " key labelled (hover a cell for its tokens)";
}

std::string headTitle(int layer, int head) { return analysis::headName(layer, head); }

Result<std::vector<std::int64_t>> sheetStepList(const TrainLab& lab) {
  // Only steps with an attention picture: a checkpoint's saved history has curves and roles of
  // earlier steps but no pictures of them.
  std::vector<std::int64_t> h;
  for (const auto& s : lab.run.view->snapshots) h.push_back(s->step);
  std::sort(h.begin(), h.end());
  if (h.empty()) return makeError("no attention pictures yet: train or step first");
  std::vector<std::int64_t> out;
  if (lab.files.sheetSteps.find_first_not_of(" ,") == std::string::npos) {
    const std::size_t n = std::min<std::size_t>(6, h.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = n == 1 ? h.size() - 1 : i * (h.size() - 1) / (n - 1);
      out.push_back(h[at]);
    }
  } else {
    std::string s = lab.files.sheetSteps;
    std::replace(s.begin(), s.end(), ',', ' ');
    std::istringstream in(s);
    std::string word;
    while (in >> word) {
      char* end = nullptr;
      const long long v = std::strtoll(word.c_str(), &end, 10);
      if (end == word.c_str() || *end != '\0' || v < 0) {
        return makeError("steps for the contact sheet: '" + word + "' is not a step number (type e.g. 0 200 400 800)");
      }
      out.push_back(*std::min_element(h.begin(), h.end(), [&](std::int64_t a, std::int64_t b) {
        return std::llabs(a - v) < std::llabs(b - v);
      }));
    }
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<ContactSheet> buildContactSheet(const TrainLab& lab) {
  auto steps = sheetStepList(lab);
  if (!steps) return steps.error();
  return buildContactSheet(lab, *steps);
}

Result<TrainingAnimation> buildAnimation(const TrainLab& lab) {
  std::vector<std::int64_t> all;
  for (const auto& s : lab.run.view->snapshots) all.push_back(s->step);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.empty()) return makeError("no attention pictures yet: train or step first");
  std::vector<std::int64_t> steps;
  for (std::size_t i : evenlySpaced(all.size(), static_cast<std::size_t>(kDefaultAnimationFrames))) steps.push_back(all[i]);
  TrainingAnimation a;
  auto sheet = buildContactSheet(lab, steps);
  if (!sheet) return sheet.error();
  a.sheet = std::move(*sheet);
  a.curves = buildCurves(lab);
  return a;
}

Result<ContactSheet> buildContactSheet(const TrainLab& lab, const std::vector<std::int64_t>& steps) {
  const SessionView& v = *lab.run.view;
  const int L = v.settings->model.layers, H = v.settings->model.heads, T = v.probe->seq;
  std::vector<std::string> tokens;
  for (int t = 0; t < T; ++t) tokens.push_back(v.task->symbol(v.probe->tokens[static_cast<std::size_t>(t)]));
  std::vector<std::pair<int, int>> heads;
  for (int l = 0; l < L; ++l) {
    for (int i = 0; i < H; ++i) {
      const std::size_t k = static_cast<std::size_t>(l * H + i);
      if (lab.files.sheetHeads.empty() || (k < lab.files.sheetHeads.size() && lab.files.sheetHeads[k])) heads.emplace_back(l, i);
    }
  }
  std::vector<const Snapshot*> snaps;
  for (const auto& s : v.snapshots) snaps.push_back(s.get());
  return runContactSheet(snaps, steps, heads, tokens, L, H, sheetTitle(v));
}

std::string sheetTitle(const SessionView& v) {
  return std::string(taskName(v.settings->task.kind)) + " · " + std::to_string(v.settings->model.layers) + " layers × " +
         std::to_string(v.settings->model.heads) + " heads · attention on the probe sequence";
}

CurvesFigure buildCurves(const TrainLab& lab) {
  const SessionView& v = *lab.run.view;
  const int L = v.settings->model.layers, H = v.settings->model.heads;
  return runCurves(v.history, L, H, runTitle(v), lab.logY, lab.run.shown.evaluation ? lab.run.shown.step : -1,
                   [H](int l, int i) { return headRgb(l, i, H); });
}

std::string runTitle(const SessionView& v) {
  return std::string(taskName(v.settings->task.kind)) + " · " + std::to_string(v.settings->model.layers) + " layers × " +
         std::to_string(v.settings->model.heads) + " heads · seed " + std::to_string(v.settings->seed) + " · probe batch";
}

Result<HtmlExport> buildTimelinePage(const TrainLab& lab) {
  const SessionView& v = *lab.run.view;
  std::vector<const Snapshot*> snaps;
  for (const auto& s : v.snapshots) snaps.push_back(s.get());
  std::vector<std::string> tokens;
  for (int t = 0; t < v.probe->seq; ++t) tokens.push_back(v.task->symbol(v.probe->tokens[static_cast<std::size_t>(t)]));
  return trainingTimelinePage(v.history, snaps, tokens, v.settings->model.layers, v.settings->model.heads, runTitle(v));
}

}  // namespace mhascope::app
