// Path patching (path_patching.hpp): both runs through the forward's hooks, then per edge the receiver's layer on the
// patched stream x̃ (its queries, keys or values taken) and one partial forward from that layer with them replaced —
// the same steps as activation patching's cells (sweep_steps.hpp).
#include "experiments/path_patching.hpp"

#include <limits>
#include <new>

#include "experiments/sweep_steps.hpp"
#include "model/forward_steps.hpp"

namespace mhascope::experiments {

using model::HookPoint;
using model::HookSite;

const char* pathInputName(PathInput p) {
  switch (p) {
    case PathInput::Query: return "q";
    case PathInput::Key: return "k";
    case PathInput::Value: return "v";
  }
  return "?";
}

const char* pathSweepName(PathSweep s) {
  switch (s) {
    case PathSweep::Edge: return "edge";
    case PathSweep::Senders: return "senders";
    case PathSweep::Receivers: return "receivers";
  }
  return "?";
}

namespace {

HookPoint pointOf(PathInput p) {
  return p == PathInput::Query ? HookPoint::Query : (p == PathInput::Key ? HookPoint::Key : HookPoint::Value);
}

int kvHeads(const model::ModelSpec& s) { return s.kvHeads > 0 ? s.kvHeads : s.heads; }

// Heads a receiver of this input is counted in: query heads for q, K/V heads for k and v.
int receiverHeadCount(const model::ModelSpec& s, PathInput p) { return p == PathInput::Query ? s.heads : kvHeads(s); }

std::string headName(const HeadRef& r) { return std::to_string(r.layer) + "." + std::to_string(r.head); }

Status checkHead(const model::ModelSpec& s, const HeadRef& r, const char* role, int heads, const char* kind) {
  if (r.layer < 0 || r.layer >= s.layers) {
    return makeError(std::string("the ") + role + " " + headName(r) + ": layer " + std::to_string(r.layer) +
                     " is outside the model's " + std::to_string(s.layers) + " layers (0 .. " +
                     std::to_string(s.layers - 1) + ")");
  }
  if (r.head < 0 || r.head >= heads) {
    return makeError(std::string("the ") + role + " " + headName(r) + ": head " + std::to_string(r.head) +
                     " is outside the layer's " + std::to_string(heads) + " " + kind + " (0 .. " +
                     std::to_string(heads - 1) + ")");
  }
  return Ok{};
}

}  // namespace

Status checkPathRequest(const model::ModelSpec& s, const PathRequest& req) {
  if (!s.family->normsBefore() || s.family->normsAfter()) {
    return makeError(std::string("path patching follows a head's output through W_o straight into a later layer's "
                                 "input, which needs blocks that add their sublayers' outputs to the stream as they "
                                 "are; ") + s.family->displayName +
                     " norms each sublayer's output before adding it, so one head's share of the stream is not linear");
  }
  if (s.family->latentAttention()) {
    return makeError(std::string(s.family->displayName) + " computes its queries, keys and values through a shared "
                     "latent (multi-head latent attention): there is no per-head input for path patching to replace");
  }
  const char* kvKind = kvHeads(s) < s.heads ? "K/V heads" : "heads";
  const char* receiverKind = req.into == PathInput::Query ? "query heads" : kvKind;
  const bool withSender = req.sweep != PathSweep::Senders, withReceiver = req.sweep != PathSweep::Receivers;
  if (withSender) {
    if (auto st = checkHead(s, req.sender, "sender", s.heads, "heads"); !st) return st;
  }
  if (withReceiver) {
    if (auto st = checkHead(s, req.receiver, "receiver", receiverHeadCount(s, req.into), receiverKind); !st) return st;
  }
  if (req.sweep == PathSweep::Edge && req.sender.layer >= req.receiver.layer) {
    return makeError("the sender " + headName(req.sender) + " must be in an earlier layer than the receiver " +
                     headName(req.receiver) + " (layer " + std::to_string(req.sender.layer) + " is not before layer " +
                     std::to_string(req.receiver.layer) + "): a head reads only what earlier layers wrote");
  }
  if (req.sweep == PathSweep::Senders && req.receiver.layer == 0) {
    return makeError("the receiver " + headName(req.receiver) + " is in layer 0: no earlier head can send to it");
  }
  if (req.sweep == PathSweep::Receivers && req.sender.layer == s.layers - 1) {
    return makeError("the sender " + headName(req.sender) + " is in the last layer (" + std::to_string(s.layers - 1) +
                     "): no later head can receive from it");
  }
  return Ok{};
}

double estimatePathBytes(const model::ModelSpec& s, std::int64_t T, bool keepLayers) {
  const double t = static_cast<double>(T), hdk = static_cast<double>(s.heads) * s.dk();
  const int batch = detail::cellsPerForward(s, T, s.heads);  // a grid row's edges at once, each two forwards
  double bytes = 2.0 * model::detail::forwardBytes(s, batch * T, detail::sweepForwardOptions(kDefaultMemoryBudget), false);
  bytes += 4.0 * s.layers * (2.0 * t * hdk + t * s.dModel);  // both runs' head outputs, the receiver's streams
  bytes += 4.0 * s.layers * (t * s.dModel + t * hdk);        // a pass on x̃ and its taken table per layer
  if (keepLayers) {
    for (int l = 0; l < s.layers; ++l) bytes += 4.0 * static_cast<double>(model::layerResidentParameters(s, l));
  } else {
    bytes += 4.0 * s.layers * hdk * s.dModel;  // every layer's W_o alone
  }
  return bytes;
}

Result<PathGrid> pathPatch(const model::ModelFolder& model, const PathRequest& req, const SweepProgress& progress) {
  const model::ModelSpec& spec = model.spec();
  if (auto s = checkSameLength(req.clean.size(), req.corrupted.size()); !s) return s.error();
  if (auto s = checkPathRequest(spec, req); !s) return s.error();
  const std::int64_t T = static_cast<std::int64_t>(req.clean.size());
  auto metric = AnswerMetric::make(model, req.answer);
  if (!metric) return metric.error();
  const double without = estimatePathBytes(spec, T, false);
  if (without > static_cast<double>(req.memoryBudgetBytes)) {
    return makeError("path patching over " + std::to_string(T) + " tokens needs about " + formatBytes(without) +
                     ", more than the memory budget of " + formatBytes(static_cast<double>(req.memoryBudgetBytes)) +
                     " (raise it with --memory-budget MiB)");
  }
  const bool keepLayers = estimatePathBytes(spec, T, true) <= static_cast<double>(req.memoryBudgetBytes);
  try {
    auto converted = detail::convertLayers(model, keepLayers);
    if (!converted) return converted.error();
    const std::vector<model::LayerWeights>& layers = *converted;
    const std::size_t L = static_cast<std::size_t>(spec.layers);
    // Every layer's W_o (h·d_k, d_model): the kept layers', else copied from each layer converted once.
    std::vector<RowMatrix> ownWo;
    std::vector<const RowMatrix*> wo(L, nullptr);
    if (keepLayers) {
      for (std::size_t l = 0; l < L; ++l) wo[l] = &layers[l].attention->wo;
    } else {
      ownWo.resize(L);
      for (std::size_t l = 0; l < L; ++l) {
        auto lw = model.layer(static_cast<int>(l));
        if (!lw) return lw.error();
        ownWo[l] = lw->attention->wo;
        wo[l] = &ownWo[l];
      }
    }
    const model::ForwardOptions opt = detail::sweepForwardOptions(req.memoryBudgetBytes);
    const bool denoise = req.direction == PatchDirection::Denoise;
    const detail::PartialRunner donor{model, denoise ? req.clean : req.corrupted, keepLayers ? &layers : nullptr, opt};
    const detail::PartialRunner receiver{model, denoise ? req.corrupted : req.clean, keepLayers ? &layers : nullptr, opt};

    // Both runs' head outputs in every layer, and the receiver's stream before every layer.
    std::vector<RowMatrix> donorHeads(L), receiverHeads(L), streams(L);
    const RowMatrix none;
    auto donorEnd = donor.run(0, none, detail::keepAt(HookPoint::HeadOut, donorHeads));
    if (!donorEnd) return donorEnd.error();
    const model::ForwardHook keepHeads = detail::keepAt(HookPoint::HeadOut, receiverHeads);
    const model::ForwardHook keepStreams = detail::keepAt(HookPoint::ResidPre, streams);
    auto receiverEnd = receiver.run(0, none, [&](const HookSite& site, MatrixMap v) {
      keepHeads(site, v);
      keepStreams(site, v);
    });
    if (!receiverEnd) return receiverEnd.error();
    auto donorMetric = metric->of(*donorEnd);
    if (!donorMetric) return donorMetric.error();
    auto receiverMetric = metric->of(*receiverEnd);
    if (!receiverMetric) return receiverMetric.error();

    PathGrid g;
    g.sweep = req.sweep;
    g.direction = req.direction;
    g.into = req.into;
    g.sender = req.sender;
    g.receiver = req.receiver;
    g.layersKept = keepLayers;
    g.cleanMetric = denoise ? *donorMetric : *receiverMetric;
    g.corruptedMetric = denoise ? *receiverMetric : *donorMetric;
    const int rh = receiverHeadCount(spec, req.into);
    if (req.sweep == PathSweep::Edge) {
      g.rows = g.cols = 1;
      g.rowAxis = "sender";
      g.colAxis = "receiver";
    } else {
      g.rows = spec.layers;
      g.cols = req.sweep == PathSweep::Senders ? spec.heads : rh;
      g.rowAxis = "layer";
      g.colAxis = req.sweep == PathSweep::Receivers && req.into != PathInput::Query && rh < spec.heads ? "K/V head" : "head";
    }
    const std::size_t cellCount = static_cast<std::size_t>(g.rows) * static_cast<std::size_t>(g.cols);
    g.metric.assign(cellCount, std::numeric_limits<double>::quiet_NaN());
    g.restored.assign(cellCount, std::numeric_limits<double>::quiet_NaN());
    // The edge of each grid cell that is one.
    auto edgeOf = [&](std::int64_t at) -> std::pair<HeadRef, HeadRef> {
      if (req.sweep == PathSweep::Edge) return {req.sender, req.receiver};
      const HeadRef cellHead{static_cast<int>(at / g.cols), static_cast<int>(at % g.cols)};
      return req.sweep == PathSweep::Senders ? std::make_pair(cellHead, req.receiver) : std::make_pair(req.sender, cellHead);
    };
    std::vector<std::int64_t> cells;
    for (std::int64_t at = 0; at < static_cast<std::int64_t>(cellCount); ++at) {
      const auto [s, r] = edgeOf(at);
      if (s.layer < r.layer) cells.push_back(at);
    }
    g.edges = static_cast<int>(cells.size());

    const HookPoint point = pointOf(req.into);
    const Eigen::Index dk = spec.dk(), t = static_cast<Eigen::Index>(T);
    // x̃ for a sender and the receiver's layer (T, d_model).
    auto patchedStream = [&](const HeadRef& s, int receiverLayer) {
      const std::size_t ls = static_cast<std::size_t>(s.layer);
      const Eigen::Index c0 = static_cast<Eigen::Index>(s.head) * dk;
      RowMatrix change = donorHeads[ls].middleCols(c0, dk) - receiverHeads[ls].middleCols(c0, dk);  // (T, d_k)
      RowMatrix x = streams[static_cast<std::size_t>(receiverLayer)];
      x.noalias() += change * wo[ls]->middleRows(c0, dk);
      return x;
    };
    // The cells of one grid row share the receiver's layer: up to `batch` of them run as one forward of stacked
    // sequences. Their x̃ passes likewise — one per sender; a row of receivers shares one sender's x̃, so one pass
    // gives every receiver's table.
    const int batch = detail::cellsPerForward(spec, T, g.cols);
    const auto groups = detail::groupCells(cells, batch, [&](std::int64_t a, std::int64_t b) { return a / g.cols == b / g.cols; });
    auto group = [&](const detail::CellGroup& these) -> Result<std::vector<double>> {
      const int n = static_cast<int>(these.size());
      const bool oneSender = req.sweep != PathSweep::Senders;
      const int lr = edgeOf(these.front()).second.layer;
      // The table at `point` of layer lr computed from x̃: one pass per sender (stacked), one for a shared sender.
      const int passes = oneSender ? 1 : n;
      RowMatrix xs(passes * t, spec.dModel);
      for (int j = 0; j < passes; ++j) xs.middleRows(j * t, t) = patchedStream(edgeOf(these[static_cast<std::size_t>(j)]).first, lr);
      RowMatrix table;  // (passes·R, d_k), R one sequence's rows
      auto ran = receiver.runBatch(lr, xs, passes, [&](const HookSite& site, MatrixMap v) {
        if (site.point == point && site.layer == lr) table = v;
      }, lr + 1);
      if (!ran) return ran.error();
      const Eigen::Index per = table.rows() / passes;
      // The receiving run from layer lr on, each sequence with its receiver's rows from its x̃ pass.
      auto ends = receiver.runBatch(lr, streams[static_cast<std::size_t>(lr)].replicate(n, 1), n, [&](const HookSite& site, MatrixMap v) {
        if (site.point != point || site.layer != lr) return;
        for (int j = 0; j < n; ++j) {
          const Eigen::Index r0 = static_cast<Eigen::Index>(edgeOf(these[static_cast<std::size_t>(j)]).second.head) * t;
          v.middleRows(j * per + r0, t) = table.middleRows((oneSender ? 0 : j) * per + r0, t);
        }
      });
      if (!ends) return ends.error();
      return detail::metricsOfRows(*metric, *ends);
    };
    if (auto st = detail::runGroups(req.threads, groups, group, g.cleanMetric, g.corruptedMetric, g.metric, g.restored, progress); !st) {
      return st.error();
    }
    return g;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for path patching (estimated " + formatBytes(without) + ")");
  }
}

}  // namespace mhascope::experiments
