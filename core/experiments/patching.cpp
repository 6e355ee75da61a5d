// The patching sweep (patching.hpp): the donor and receiver runs through the forward's hooks, then one partial
// forward per site through the same steps runForward is made of (model/forward_steps.hpp).
#include "experiments/patching.hpp"

#include <cmath>
#include <limits>
#include <new>

#include "model/forward.hpp"
#include "experiments/sweep_steps.hpp"
#include "model/forward_steps.hpp"

namespace mhascope::experiments {

using model::HookPoint;
using model::HookSite;

const char* siteWords(PatchSite s) {
  switch (s) {
    case PatchSite::Resid: return "residual stream row (a layer's input at one position)";
    case PatchSite::Attn: return "attention output at one position";
    case PatchSite::Mlp: return "MLP output at one position";
    case PatchSite::Head: return "head output (A V before W_o), every position";
    case PatchSite::HeadPosition: return "head output at one position";
    case PatchSite::Query: return "head's queries";
    case PatchSite::Key: return "K/V head's keys";
    case PatchSite::Value: return "K/V head's values";
    case PatchSite::Pattern: return "head's attention pattern";
  }
  return "";
}

const std::vector<PatchSite>& allSites() {
  // A constant table, not state.
  static const std::vector<PatchSite> kSites = {PatchSite::Resid, PatchSite::Attn,  PatchSite::Mlp,
                                                PatchSite::Head,  PatchSite::HeadPosition, PatchSite::Query,
                                                PatchSite::Key,   PatchSite::Value, PatchSite::Pattern};
  return kSites;
}

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
  const int batch = detail::cellsPerForward(s, T, gridShape(s, T, site).second);
  // One forward of `batch` stacked cells, counted as one of batch·T tokens (its attention tables batch times too large).
  double bytes = model::detail::forwardBytes(s, batch * T, one, false);
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
    auto converted = detail::convertLayers(model, keepLayers);
    if (!converted) return converted.error();
    const std::vector<model::LayerWeights>& layers = *converted;
    const model::ForwardOptions opt = detail::sweepForwardOptions(req.memoryBudgetBytes);
    const bool denoise = req.direction == PatchDirection::Denoise;
    const std::vector<int>& donorTokens = denoise ? req.clean : req.corrupted;
    const std::vector<int>& receiverTokens = denoise ? req.corrupted : req.clean;
    const detail::PartialRunner donor{model, donorTokens, keepLayers ? &layers : nullptr, opt};
    const detail::PartialRunner receiver{model, receiverTokens, keepLayers ? &layers : nullptr, opt};

    // The donor's numbers at the site in every layer, and the receiver's stream before every layer.
    const HookPoint point = pointOf(req.site);
    std::vector<RowMatrix> given(static_cast<std::size_t>(spec.layers)), streams(static_cast<std::size_t>(spec.layers));
    const RowMatrix none;
    auto donorEnd = donor.run(0, none, detail::keepAt(point, given));
    if (!donorEnd) return donorEnd.error();
    auto receiverEnd = receiver.run(0, none, detail::keepAt(HookPoint::ResidPre, streams));
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
    const int perLayer = req.site == PatchSite::HeadPosition ? spec.heads : 1;
    std::vector<std::int64_t> all(cells);
    for (std::size_t i = 0; i < cells; ++i) all[i] = static_cast<std::int64_t>(i);
    // The cells of one grid row patch the same layer: up to `batch` of them run as one forward of stacked sequences,
    // each sequence the receiver's stream before the layer with its own cell's block replaced.
    const int batch = detail::cellsPerForward(spec, T, g.cols);
    const auto groups = detail::groupCells(all, batch, [&](std::int64_t a, std::int64_t b) { return a / g.cols == b / g.cols; });
    auto group = [&](const detail::CellGroup& these) -> Result<std::vector<double>> {
      const int r = static_cast<int>(these.front() / g.cols);
      const int layer = r / perLayer, head = r % perLayer, n = static_cast<int>(these.size());
      const RowMatrix& from = given[static_cast<std::size_t>(layer)];
      const RowMatrix& stream = streams[static_cast<std::size_t>(layer)];
      const Eigen::Index t = static_cast<Eigen::Index>(T);
      RowMatrix xs = stream.replicate(n, 1);  // (n·T, d_model)
      Result<RowMatrix> ends = RowMatrix();
      if (req.site == PatchSite::Resid) {  // the stream itself: the partial forward starts from the patched one
        for (int j = 0; j < n; ++j) {
          const Eigen::Index c = static_cast<Eigen::Index>(these[static_cast<std::size_t>(j)] % g.cols);
          xs.row(j * t + c) = from.row(c);
        }
        ends = receiver.runBatch(layer, xs, n, {});
      } else {
        ends = receiver.runBatch(layer, xs, n, [&](const HookSite& site, MatrixMap v) {
          if (site.point != point || site.layer != layer) return;
          const Eigen::Index per = v.rows() / n;  // one sequence's rows of the table
          for (int j = 0; j < n; ++j) {
            const Block b = blockOf(spec, T, req.site, static_cast<int>(these[static_cast<std::size_t>(j)] % g.cols), head, from.cols());
            v.block(j * per + b.r0, b.c0, b.nr, b.nc) = from.block(b.r0, b.c0, b.nr, b.nc);
          }
        });
      }
      if (!ends) return ends.error();
      return detail::metricsOfRows(*metric, *ends);
    };
    if (auto s = detail::runGroups(req.threads, groups, group, g.cleanMetric, g.corruptedMetric, g.metric, g.restored, progress); !s) {
      return s.error();
    }
    return g;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the patching sweep (estimated " + formatBytes(without) + ")");
  }
}

}  // namespace mhascope::experiments
