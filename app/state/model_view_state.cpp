// The Model tab's state (model_view_state.hpp).
#include "state/model_view_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "analysis/head_roles.hpp"

#include "model/model_view.hpp"
#include "panels/panel.hpp"  // kHeatmapTab
#include "state/app_state.hpp"

namespace mhascope::app {

std::string ModelViewState::progressText() const {
  if (!job) return "";
  const int total = job->total.load(), done = job->done.load(), layers = job->layers.load();
  if (total == 0) return "opening the model folder";
  // The forward's L layers, then the logit lens over the same L layers.
  if (done < layers) return "layer " + std::to_string(done + 1) + " of " + std::to_string(layers);
  return "logit lens, layer " + std::to_string(std::min(done - layers + 1, layers)) + " of " + std::to_string(layers);
}

ModelViewState& modelViewOf(AppState& state) {
  if (!state.modelView) {
    state.modelView = std::make_shared<ModelViewState>();
    // A workspace's choices, checked when it was opened.
    if (!state.modelViewBlock.empty()) {
      if (auto saved = parseModelViewBlock(state.modelViewBlock, "the workspace")) applyModelViewProbe(*saved, *state.modelView);
      state.modelViewBlock.clear();
    }
  }
  return *state.modelView;
}

ModelViewInputs wantedModelView(const AppState& state, const ModelViewState& m) {
  ModelViewInputs in;
  in.folder = state.doc.files.model;
  in.text = state.doc.config.text;
  in.probe = m.probe;
  in.source = m.probeSource;
  in.probePeriod = std::clamp(m.probePeriod, kMinProbePeriod, kMaxProbePeriod);
  in.probeCopies = std::clamp(m.probeCopies, kMinProbeCopies, kMaxProbeCopies);
  in.probeSeed = m.probeSeed;
  in.probeTokens = m.probeTokens;
  return in;
}

std::string modelViewBlockJson(const ModelViewState& m) {
  const nlohmann::json j = {{"probe", m.probe == ModelProbe::Text ? "text" : "random"},
                            {"source", model::probeSourceName(m.probeSource)},
                            {"period", m.probePeriod},
                            {"copies", m.probeCopies},
                            {"seed", m.probeSeed},
                            {"tokens", m.probeTokens}};
  return j.dump();
}

Result<ModelViewInputs> parseModelViewBlock(const std::string& block, const std::string& what) {
  using json = nlohmann::json;
  ModelViewInputs in;
  if (block.empty()) return in;
  const json j = json::parse(block, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError(what + ": /model_view must be a JSON object");
  static const std::set<std::string> kKeys = {"probe", "source", "period", "copies", "seed", "tokens"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) return makeError(what + ": unknown key /model_view/" + key);
  }
  for (const auto& key : kKeys) {
    if (!j.contains(key)) return makeError(what + ": missing key /model_view/" + key);
  }
  const std::string probe = j["probe"].is_string() ? j["probe"].get<std::string>() : "";
  if (probe != "text" && probe != "random") {
    return makeError(what + ": /model_view/probe must be \"text\" or \"random\", got " + j["probe"].dump());
  }
  in.probe = probe == "text" ? ModelProbe::Text : ModelProbe::RepeatedRandom;
  const auto source = j["source"].is_string() ? model::probeSourceFromName(j["source"].get<std::string>()) : std::nullopt;
  if (!source) {
    return makeError(what + ": /model_view/source must be \"vocabulary\", \"text\" or \"tokens\", got " + j["source"].dump());
  }
  in.source = *source;
  for (auto [key, out, lo, hi] : {std::tuple{"period", &in.probePeriod, kMinProbePeriod, kMaxProbePeriod},
                                  {"copies", &in.probeCopies, kMinProbeCopies, kMaxProbeCopies}}) {
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
      return makeError(what + ": /model_view/" + key + " must be an integer " + std::to_string(lo) + " … " +
                       std::to_string(hi) + ", got " + v.dump());
    }
    *out = static_cast<int>(v.get<std::int64_t>());
  }
  if (!j["seed"].is_number_unsigned() && !(j["seed"].is_number_integer() && j["seed"].get<std::int64_t>() >= 0)) {
    return makeError(what + ": /model_view/seed must be an integer from 0 to 18446744073709551615, got " + j["seed"].dump());
  }
  in.probeSeed = j["seed"].get<std::uint64_t>();
  if (!j["tokens"].is_string() || j["tokens"].get<std::string>().size() > kMaxProbeTokensBytes) {
    return makeError(what + ": /model_view/tokens must be a string of at most " + std::to_string(kMaxProbeTokensBytes) +
                     " bytes, got " + (j["tokens"].is_string() ? std::to_string(j["tokens"].get<std::string>().size()) + " bytes" : j["tokens"].dump()));
  }
  in.probeTokens = j["tokens"].get<std::string>();
  return in;
}

void applyModelViewProbe(const ModelViewInputs& in, ModelViewState& m) {
  m.probe = in.probe;
  m.probeSource = in.source;
  m.probePeriod = in.probePeriod;
  m.probeCopies = in.probeCopies;
  m.probeSeed = in.probeSeed;
  m.probeTokens = in.probeTokens;
  m.probePeriodEdit = m.probeCopiesEdit = 0;  // the sliders show the new values
  m.probeTokensShown = false;
}

const char* headRoleName(HeadRole r) {
  switch (r) {
    case HeadRole::PreviousToken: return "previous-token";
    case HeadRole::Induction: return "induction";
    case HeadRole::Sink: return "sink (first token)";
    case HeadRole::Entropy: return "entropy";
  }
  return "?";
}

double roleValue(const ::mhascope::HeadScores& s, HeadRole r) {
  switch (r) {
    case HeadRole::PreviousToken: return s.prevToken;
    case HeadRole::Induction:
      return s.inductionQueries > 0 ? s.induction : std::numeric_limits<double>::quiet_NaN();
    case HeadRole::Sink: return s.sink;
    case HeadRole::Entropy: return s.entropy;
  }
  return 0.0;
}

bool roleHighIsStrong(HeadRole r) { return r != HeadRole::Entropy; }

namespace {

// The rule a role is judged by; none for the entropy.
std::optional<RuleRole> ruleOf(HeadRole r) {
  switch (r) {
    case HeadRole::PreviousToken: return RuleRole::PreviousToken;
    case HeadRole::Induction: return RuleRole::Induction;
    case HeadRole::Sink: return RuleRole::FirstToken;
    case HeadRole::Entropy: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

bool roleHasRule(HeadRole r) { return ruleOf(r).has_value(); }

std::string noHeadPassesText(HeadRole r) {
  if (r == HeadRole::Induction) return "No head passes the induction rule (" + inductionRuleText() + ")";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", kRoleThreshold);
  return std::string("No head passes the ") + headRoleName(r) + " rule (a score ≥ " + buf + ")";
}

std::string roleRuleText(HeadRole r) {
  if (!roleHasRule(r)) return "no rule: ranked only";
  if (r == HeadRole::Induction) return "the rule: " + inductionRuleText();
  char buf[96];
  std::snprintf(buf, sizeof buf, "the rule: a score ≥ %.2f (half the head's attention or more)", kRoleThreshold);
  return buf;
}

std::vector<RankedHead> headsByRole(const model::ModelView& v, HeadRole r, int n) {
  std::vector<RankedHead> all;
  const std::optional<RuleRole> rule = ruleOf(r);
  for (int l = 0; l < v.layers; ++l) {
    for (int h = 0; h < v.heads; ++h) {
      const double x = roleValue(v.head(l, h).scores, r);
      if (std::isnan(x)) continue;
      RankedHead rh{l, h, x, false, ""};
      if (rule) {
        const RoleVerdict verdict = roleVerdict(roleScoresOf(v.head(l, h).scores, l), *rule);
        rh.passes = verdict.passes;
        rh.verdict = verdict.text;
      } else {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%s %.2f", headRoleName(r), x);
        rh.verdict = buf;
      }
      all.push_back(std::move(rh));
    }
  }
  const bool high = roleHighIsStrong(r);
  // Passing heads first; ties keep the grid's order (layer, then head), so the list does not
  // shuffle between frames.
  std::stable_sort(all.begin(), all.end(), [high](const RankedHead& a, const RankedHead& b) {
    if (a.passes != b.passes) return a.passes;
    return high ? a.value > b.value : a.value < b.value;
  });
  if (static_cast<int>(all.size()) > n) all.resize(static_cast<std::size_t>(std::max(n, 0)));
  return all;
}

void openHeadInPipeline(AppState& state, ViewState& view, int layer, int head) {
  Document& d = state.doc;
  if (d.files.model.empty()) return;
  // An open the compute has not used yet: keep what was in use before, so a layer the pipeline
  // cannot build puts it back with the reason (as the Open popup does).
  if (!d.beforeOpen) {
    d.beforeOpen = Document::BeforeOpen{d.config, d.files, d.trainedLayer, d.presetName,
                                        "cannot open layer " + std::to_string(layer) + " of '" + d.files.model + "'"};
  }
  const std::string folder = d.files.model;
  d.files = {};
  d.files.model = folder;
  d.files.layer = layer;
  d.trainedLayer.reset();
  d.presetName = std::filesystem::path(folder).filename().string() + " layer " + std::to_string(layer);
  d.configDirty = true;
  d.configError.clear();
  view.batch = 0;
  view.head = head;
  view.stage = StageId::Weights;
  view.selectTab = kHeatmapTab;
}

}  // namespace mhascope::app
