// The patching sweep (patching.hpp): the donor and receiver runs through the forward's hooks, then one partial
// forward per site through the same steps runForward is made of (model/forward_steps.hpp).
#include "experiments/patching.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <new>
#include <optional>

#include "model/forward.hpp"
#include "model/forward_steps.hpp"
#include "util/thread_pool.hpp"

namespace mhascope::experiments {

using model::HookPoint;
using model::HookSite;

const char* siteName(PatchSite s) {
  switch (s) {
    case PatchSite::Resid: return "resid";
    case PatchSite::Attn: return "attn";
    case PatchSite::Mlp: return "mlp";
    case PatchSite::Head: return "head";
    case PatchSite::HeadPosition: return "head-position";
    case PatchSite::Query: return "q";
    case PatchSite::Key: return "k";
    case PatchSite::Value: return "v";
    case PatchSite::Pattern: return "pattern";
  }
  return "?";
}

const char* directionName(PatchDirection d) { return d == PatchDirection::Denoise ? "denoise" : "noise"; }

namespace {

HookPoint pointOf(PatchSite s) {
  switch (s) {
    case PatchSite::Resid: return HookPoint::ResidPre;
    case PatchSite::Attn: return HookPoint::AttnOut;
    case PatchSite::Mlp: return HookPoint::MlpOut;
    case PatchSite::Head: case PatchSite::HeadPosition: return HookPoint::HeadOut;
    case PatchSite::Query: return HookPoint::Query;
    case PatchSite::Key: return HookPoint::Key;
    case PatchSite::Value: return HookPoint::Value;
    case PatchSite::Pattern: return HookPoint::Pattern;
  }
  return HookPoint::ResidPre;
}

// Floats of the site's table in one layer (model/forward.hpp's HookPoint shapes).
double siteFloats(const model::ModelSpec& s, std::int64_t T, PatchSite site) {
  const double t = static_cast<double>(T), d = s.dModel, dk = s.dk(), h = s.heads, N = s.kvHeads > 0 ? s.kvHeads : s.heads;
  switch (site) {
    case PatchSite::Resid: case PatchSite::Attn: case PatchSite::Mlp: return t * d;
    case PatchSite::Head: case PatchSite::HeadPosition: return t * h * dk;
    case PatchSite::Query: return h * t * dk;
    case PatchSite::Key: case PatchSite::Value: return N * t * dk;
    case PatchSite::Pattern: return h * t * t;
  }
  return 0;
}

// One forward from layer `first` (x: the stream before it; empty, with first 0: the embedding) to the end, with `hook`; the final stream's last row.
struct PartialRunner {
  const model::ModelFolder& model;
  const std::vector<int>& tokens;
  const std::vector<model::LayerWeights>* layers;
  model::ForwardOptions opt;

  Result<RowMatrix> run(int first, const RowMatrix& x, model::ForwardHook hook) const {
    model::ForwardOptions o = opt;
    o.hook = std::move(hook);
    model::detail::ForwardState st;
    if (auto s = model::detail::startForward(model, tokens, o, 0.0, st); !s) return s.error();
    if (x.size() > 0) st.x = x;
    st.firstLayer = first;
    st.layers = layers;
    model::ForwardResult out;
    if (auto s = model::detail::runLayers(model, model.spec().layers, o, st, out); !s) return s.error();
    return RowMatrix(st.x.bottomRows(1));
  }
};

// The block of the site's table that site (row r, column c) of the grid replaces: rows [r0, r0 + nr), columns
// [c0, c0 + nc) of the (rows, cols) table the hook is given.
struct Block {
  Eigen::Index r0 = 0, nr = 0, c0 = 0, nc = 0;
};
Block blockOf(const model::ModelSpec& s, std::int64_t T, PatchSite site, int col, int head, Eigen::Index cols) {
  const Eigen::Index t = static_cast<Eigen::Index>(T), dk = s.dk();
  switch (site) {
    case PatchSite::Resid: case PatchSite::Attn: case PatchSite::Mlp: return {col, 1, 0, cols};
    case PatchSite::Head: return {0, t, col * dk, dk};
    case PatchSite::HeadPosition: return {col, 1, head * dk, dk};
    case PatchSite::Query: case PatchSite::Key: case PatchSite::Value: case PatchSite::Pattern:
      return {col * t, t, 0, cols};
  }
  return {};
}

}  // namespace

std::pair<int, int> gridShape(const model::ModelSpec& s, std::int64_t T, PatchSite site) {
  const int L = s.layers, N = s.kvHeads > 0 ? s.kvHeads : s.heads, t = static_cast<int>(T);
  switch (site) {
    case PatchSite::Resid: case PatchSite::Attn: case PatchSite::Mlp: return {L, t};
    case PatchSite::Head: case PatchSite::Query: case PatchSite::Pattern: return {L, s.heads};
    case PatchSite::HeadPosition: return {L * s.heads, t};
    case PatchSite::Key: case PatchSite::Value: return {L, N};
  }
  return {0, 0};
}

double estimatePatchBytes(const model::ModelSpec& s, std::int64_t T, PatchSite site, bool keepLayers) {
  model::ForwardOptions one;
  one.keepAttention = false;
  one.keepHidden = false;
  double bytes = model::detail::forwardBytes(s, T, one, false);
  bytes += 4.0 * s.layers * (siteFloats(s, T, site) + static_cast<double>(T) * s.dModel);  // donor's sites, receiver's streams
  if (keepLayers) {
    for (int l = 0; l < s.layers; ++l) bytes += 4.0 * static_cast<double>(model::layerResidentParameters(s, l));
  }
  return bytes;
}

Status checkSameLength(std::size_t clean, std::size_t corrupted) {
  if (clean == 0 || corrupted == 0) return makeError("enter at least one token in both the clean and the corrupted text");
  if (clean == corrupted) return Ok{};
  return makeError("the clean text has " + std::to_string(clean) + " tokens and the corrupted text " +
                   std::to_string(corrupted) + ": patching replaces numbers position by position, so both need the " +
                   "same count (swap a word for one of the same token count, e.g. one name for another, or add or " +
                   "remove a word on the shorter side)");
}

Result<PatchGrid> patchSweep(const model::ModelFolder& model, const PatchRequest& req, const SweepProgress& progress) {
  const model::ModelSpec& spec = model.spec();
  if (auto s = checkSameLength(req.clean.size(), req.corrupted.size()); !s) return s.error();
  const std::int64_t T = static_cast<std::int64_t>(req.clean.size());
  auto metric = AnswerMetric::make(model, req.answer);
  if (!metric) return metric.error();
  const double without = estimatePatchBytes(spec, T, req.site, false);
  if (without > static_cast<double>(req.memoryBudgetBytes)) {
    return makeError("the " + std::string(siteName(req.site)) + " patching sweep over " + std::to_string(T) +
                     " tokens needs about " + formatBytes(without) + ", more than the memory budget of " +
                     formatBytes(static_cast<double>(req.memoryBudgetBytes)) + " (raise it with --memory-budget MiB)");
  }
  const bool keepLayers = estimatePatchBytes(spec, T, req.site, true) <= static_cast<double>(req.memoryBudgetBytes);
  try {
    std::vector<model::LayerWeights> layers;
    if (keepLayers) {
      for (int l = 0; l < spec.layers; ++l) {
        auto lw = model.layer(l);
        if (!lw) return lw.error();
        layers.push_back(std::move(*lw));
      }
    }
    model::ForwardOptions opt;
    opt.keepAttention = false;
    opt.keepHidden = false;
    opt.threads = 1;  // the cells run req.threads at a time instead (below): a forward of a few tokens gains little
    opt.memoryBudgetBytes = req.memoryBudgetBytes;
    const bool denoise = req.direction == PatchDirection::Denoise;
    const std::vector<int>& donorTokens = denoise ? req.clean : req.corrupted;
    const std::vector<int>& receiverTokens = denoise ? req.corrupted : req.clean;
    const PartialRunner donor{model, donorTokens, keepLayers ? &layers : nullptr, opt};
    const PartialRunner receiver{model, receiverTokens, keepLayers ? &layers : nullptr, opt};

    // The donor's numbers at the site in every layer, and the receiver's stream before every layer.
    const HookPoint point = pointOf(req.site);
    std::vector<RowMatrix> given(static_cast<std::size_t>(spec.layers)), streams(static_cast<std::size_t>(spec.layers));
    auto keep = [](HookPoint want, std::vector<RowMatrix>& into) {
      return [want, &into](const HookSite& site, MatrixMap v) {
        if (site.point == want) into[static_cast<std::size_t>(site.layer)] = v;
      };
    };
    const RowMatrix none;
    auto donorEnd = donor.run(0, none, keep(point, given));
    if (!donorEnd) return donorEnd.error();
    auto receiverEnd = receiver.run(0, none, keep(HookPoint::ResidPre, streams));
    if (!receiverEnd) return receiverEnd.error();
    auto donorMetric = metric->of(*donorEnd);
    if (!donorMetric) return donorMetric.error();
    auto receiverMetric = metric->of(*receiverEnd);
    if (!receiverMetric) return receiverMetric.error();

    PatchGrid g;
    g.site = req.site;
    g.direction = req.direction;
    g.layersKept = keepLayers;
    g.cleanMetric = denoise ? *donorMetric : *receiverMetric;
    g.corruptedMetric = denoise ? *receiverMetric : *donorMetric;
    std::tie(g.rows, g.cols) = gridShape(spec, T, req.site);
    const bool byPosition = req.site == PatchSite::Resid || req.site == PatchSite::Attn || req.site == PatchSite::Mlp;
    g.rowAxis = req.site == PatchSite::HeadPosition ? "layer.head" : "layer";
    g.colAxis = byPosition || req.site == PatchSite::HeadPosition
                    ? "position"
                    : (req.site == PatchSite::Key || req.site == PatchSite::Value ? "K/V head" : "head");
    const std::size_t cells = static_cast<std::size_t>(g.rows) * static_cast<std::size_t>(g.cols);
    g.metric.resize(cells);
    g.restored.resize(cells);
    const double span = g.cleanMetric - g.corruptedMetric;
    const int perLayer = req.site == PatchSite::HeadPosition ? spec.heads : 1;

    // The cells are independent forwards: shared out over req.threads threads (each forward on one), their numbers
    // the same on any number of threads. Progress is reported under a lock, one call per cell finished.
    std::mutex reporting;
    std::atomic<int> done{0};
    std::atomic<bool> stop{false};
    std::vector<std::string> errors(cells);
    parallelFor(std::max(1, req.threads), static_cast<std::int64_t>(cells), [&](std::int64_t at) {
      if (stop.load()) return;
      const int r = static_cast<int>(at / g.cols), c = static_cast<int>(at % g.cols);
      const int layer = r / perLayer, head = r % perLayer;
      const RowMatrix& from = given[static_cast<std::size_t>(layer)];
      const Block b = blockOf(spec, T, req.site, c, head, from.cols());
      Result<RowMatrix> end = RowMatrix();
      if (req.site == PatchSite::Resid) {  // the stream itself: the partial forward starts from the patched one
        RowMatrix x = streams[static_cast<std::size_t>(layer)];
        x.row(c) = from.row(c);
        end = receiver.run(layer, x, {});
      } else {
        end = receiver.run(layer, streams[static_cast<std::size_t>(layer)], [&](const HookSite& site, MatrixMap v) {
          if (site.point != point || site.layer != layer) return;
          v.block(b.r0, b.c0, b.nr, b.nc) = from.block(b.r0, b.c0, b.nr, b.nc);
        });
      }
      Result<double> m = end ? metric->of(*end) : Result<double>(end.error());
      if (!m) {
        errors[static_cast<std::size_t>(at)] = m.error().message;
        stop = true;
        return;
      }
      g.metric[static_cast<std::size_t>(at)] = *m;
      g.restored[static_cast<std::size_t>(at)] = span != 0.0 ? (*m - g.corruptedMetric) / span : std::numeric_limits<double>::quiet_NaN();
      if (progress) {
        const std::lock_guard<std::mutex> lock(reporting);
        const int finished = ++done;  // counted under the lock: the calls see 1, 2, 3, … in order
        if (!stop.load() && !progress(finished, static_cast<int>(cells))) stop = true;
      }
    });
    for (const std::string& e : errors) {
      if (!e.empty()) return makeError(e);
    }
    if (stop.load()) return makeError(model::kForwardCancelled);
    return g;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the patching sweep (estimated " + formatBytes(without) + ")");
  }
}

}  // namespace mhascope::experiments
