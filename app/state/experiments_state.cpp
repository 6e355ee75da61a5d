#include "state/experiments_state.hpp"

#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "attention/engine.hpp"  // formatBytes
#include "panels/compare_panel.hpp"  // kCompareTab
#include "state/app_state.hpp"
#include "state/compare_state.hpp"
#include "state/model_view_state.hpp"

namespace mhascope::app {

ExperimentsState& experimentsOf(AppState& state) {
  if (!state.experiments) {
    state.experiments = std::make_shared<ExperimentsState>();
    if (!state.experimentsBlock.empty()) {  // a workspace's form, checked when it was opened
      if (auto saved = parseExperimentsBlock(state.experimentsBlock, "the workspace")) state.experiments->form = *saved;
      state.experimentsBlock.clear();
    }
  }
  return *state.experiments;
}

std::string experimentsBlockJson(const ExperimentsState& m) {
  const ExperimentInputs& f = m.form;
  const nlohmann::json j = {{"clean", f.clean},
                            {"corrupted", f.corrupted},
                            {"answer", f.answer},
                            {"wrong", f.wrong},
                            {"metric", experiments::metricName(f.metric)},
                            {"site", experiments::siteName(f.site)},
                            {"direction", experiments::directionName(f.direction)}};
  return j.dump();
}

Result<ExperimentInputs> parseExperimentsBlock(const std::string& block, const std::string& what) {
  using json = nlohmann::json;
  ExperimentInputs in;
  if (block.empty()) return in;
  const json j = json::parse(block, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError(what + ": /experiments must be a JSON object");
  static const std::set<std::string> kKeys = {"clean", "corrupted", "answer", "wrong", "metric", "site", "direction"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) return makeError(what + ": unknown key /experiments/" + key);
  }
  for (const auto& key : kKeys) {
    if (!j.contains(key)) return makeError(what + ": missing key /experiments/" + key);
  }
  for (auto [key, out] : {std::pair{"clean", &in.clean}, {"corrupted", &in.corrupted}, {"answer", &in.answer}, {"wrong", &in.wrong}}) {
    if (!j[key].is_string()) return makeError(what + ": /experiments/" + key + " must be a string, got " + j[key].dump());
    *out = j[key].get<std::string>();
  }
  const auto named = [&](const char* key) { return j[key].is_string() ? j[key].get<std::string>() : std::string(); };
  bool found = false;
  for (experiments::Metric mt : {experiments::Metric::LogitDiff, experiments::Metric::Probability}) {
    if (named("metric") == experiments::metricName(mt)) in.metric = mt, found = true;
  }
  if (!found) return makeError(what + ": /experiments/metric must be \"logit-diff\" or \"prob\", got " + j["metric"].dump());
  found = false;
  for (experiments::PatchSite s : experiments::allSites()) {
    if (named("site") == experiments::siteName(s)) in.site = s, found = true;
  }
  if (!found) {
    return makeError(what + ": /experiments/site must be one of resid, attn, mlp, head, head-position, q, k, v, pattern, got " +
                     j["site"].dump());
  }
  found = false;
  for (experiments::PatchDirection d : {experiments::PatchDirection::Denoise, experiments::PatchDirection::Noise}) {
    if (named("direction") == experiments::directionName(d)) in.direction = d, found = true;
  }
  if (!found) return makeError(what + ": /experiments/direction must be \"denoise\" or \"noise\", got " + j["direction"].dump());
  return in;
}

std::string ExperimentsState::progressText() const {
  if (!job) return "";
  const double bytes = job->estimateBytes.load();
  const std::string memory = bytes > 0 ? " · about " + formatBytes(bytes) : std::string();
  const int total = job->total.load();
  if (total <= 0) return "reading the folder and the texts" + memory;
  const int done = job->done.load();
  if (done >= total - 1 && total > 1) return "direct logit attribution" + memory;
  return "site " + std::to_string(done) + " of " + std::to_string(total - 1) + memory;
}

namespace experiment_words {  // named: a unity batch merges anonymous namespaces
std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
}  // namespace experiment_words

std::string patchCellText(const ExperimentResult& r, int row, int col) {
  const experiments::PatchGrid& g = r.grid;
  if (row < 0 || row >= g.rows || col < 0 || col >= g.cols) return {};
  const std::size_t i = static_cast<std::size_t>(row) * static_cast<std::size_t>(g.cols) + static_cast<std::size_t>(col);
  const std::string rowLabel = row < static_cast<int>(r.patchSlice.rowLabels.size()) ? r.patchSlice.rowLabels[static_cast<std::size_t>(row)] : std::to_string(row);
  std::string colLabel = col < static_cast<int>(r.patchSlice.colLabels.size()) ? r.patchSlice.colLabels[static_cast<std::size_t>(col)] : std::to_string(col);
  if (g.colAxis == "position") colLabel = "position " + std::to_string(col) + " '" + colLabel + "'";
  const char* metric = r.metric == experiments::Metric::LogitDiff ? "logit difference" : "probability";
  return rowLabel + " " + colLabel + ": restored " + experiment_words::fixed(g.restored[i], 3) + ", " + metric + " " + experiment_words::fixed(g.metric[i], 4) +
         " (clean " + experiment_words::fixed(g.cleanMetric, 4) + ", corrupted " + experiment_words::fixed(g.corruptedMetric, 4) + ")";
}

std::string dlaCellText(const ExperimentResult& r, int layer, int head) {
  if (!r.dla || layer < 0 || layer >= r.dla->layers || head < 0 || head >= r.dla->heads) return {};
  return "head " + std::to_string(layer) + "." + std::to_string(head) + " adds " + experiment_words::fixed(r.dla->headAt(layer, head), 4) +
         " to the logit difference '" + r.answerText + "' − '" + r.wrongText + "'";
}

std::pair<int, int> cellLayerHead(const ExperimentResult& r, int row, int col) {
  using experiments::PatchSite;
  const experiments::PatchGrid& g = r.grid;
  if (row < 0 || row >= g.rows || col < 0 || col >= g.cols || r.heads <= 0) return {-1, -1};
  switch (g.site) {
    case PatchSite::Head:
    case PatchSite::Query:
    case PatchSite::Pattern: return {row, col};
    case PatchSite::Key:
    case PatchSite::Value: return {row, r.kvHeads > 0 ? col * (r.heads / r.kvHeads) : col};
    case PatchSite::HeadPosition: return {row / r.heads, row % r.heads};
    case PatchSite::Resid:
    case PatchSite::Attn:
    case PatchSite::Mlp: return {row, 0};
  }
  return {-1, -1};
}

void openExperimentCell(AppState& state, ViewState& view, const ExperimentInputs& in, int layer, int head) {
  if (state.doc.files.model.empty() || in.folder != state.doc.files.model) return;
  // The clean text in the pipeline (its layer and head), then side B a copy of that on the corrupted text.
  if (state.doc.config.text != in.clean) {
    state.doc.config.text = in.clean;
    state.doc.configDirty = true;
  }
  openHeadInPipeline(state, view, layer, head);
  if (state.modelView) {
    state.modelView->layer = layer;
    state.modelView->head = head;
  }
  CompareState& c = compareOf(state);
  compareWithCopyOfA(c, state);
  c.b.doc.config.text = in.corrupted;
  c.b.doc.beforeOpen.reset();
  compareEdited(c);
  view.selectTab = kCompareTab;
}

}  // namespace mhascope::app
