#include "experiments/stream_terms.hpp"

#include <algorithm>
#include <cmath>

namespace mhascope::experiments {

using model::HookPoint;

std::string writerName(const StreamWriter& w) {
  switch (w.kind) {
    case WriterKind::TokenEmbedding: return "token embedding";
    case WriterKind::PositionEmbedding: return "position embedding";
    case WriterKind::Head: return "head " + std::to_string(w.layer) + "." + std::to_string(w.head);
    case WriterKind::OutputBias: return "output bias " + std::to_string(w.layer);
    case WriterKind::Mlp: return "MLP " + std::to_string(w.layer);
  }
  return "?";
}

double StreamTerms::largestGap() const {
  double gap = 0;
  for (std::size_t p = 0; p < terms.size(); ++p) {
    const Eigen::RowVectorXd sum = terms[p].colwise().sum();
    gap = std::max(gap, (sum - stream.row(static_cast<Eigen::Index>(p))).cwiseAbs().maxCoeff());
  }
  return gap;
}

Status checkAdditiveStream(const model::ModelSpec& spec, const std::string& what) {
  if (spec.family->latentAttention()) {
    return makeError(what + " reads each head's W_q and W_k; " + spec.family->displayName +
                     "'s latent attention makes its keys from a shared latent and rotary key, which this "
                     "decomposition does not split");
  }
  if (!spec.family->normsBefore() || spec.family->normsAfter()) {
    return makeError(what + " needs blocks that add their sublayers' outputs to the stream as they are; " +
                     spec.family->displayName +
                     " norms each sublayer's output before adding it, which one frozen scale does not make linear");
  }
  return Ok{};
}

Result<StreamTerms> streamTerms(const model::ModelFolder& model, const std::vector<int>& tokens, int layer,
                                const std::vector<std::int64_t>& positions, model::ForwardOptions opt) {
  const model::ModelSpec& spec = model.spec();
  if (tokens.empty()) return makeError("enter at least one token");
  const std::int64_t T = static_cast<std::int64_t>(tokens.size());
  const int L = spec.layers, h = spec.heads, d = spec.dModel;
  if (layer < 0 || layer > L) {
    return makeError("layer " + std::to_string(layer) + " is outside 0 .. " + std::to_string(L));
  }
  for (std::int64_t p : positions) {
    if (p < 0 || p >= T) {
      return makeError("position " + std::to_string(p) + " is outside 0 .. " + std::to_string(T - 1) + " (T = " +
                       std::to_string(T) + ")");
    }
  }
  const Eigen::Index P = static_cast<Eigen::Index>(positions.size()), dk = spec.dk();
  // The terms are P · C · d_model doubles: checked against the budget before the forward.
  const double bytes = static_cast<double>(P) * (2.0 + static_cast<double>(layer) * (h + 2)) * d * sizeof(double);
  if (bytes > static_cast<double>(opt.memoryBudgetBytes)) {
    return makeError("the stream's terms at " + std::to_string(P) + " positions take " + formatBytes(bytes) +
                     ", more than the memory budget of " + formatBytes(static_cast<double>(opt.memoryBudgetBytes)) +
                     " (raise it with --memory-budget MiB)");
  }
  // The asked-for rows of what every writer wrote, from the forward's own tables.
  RowMatrix embedded(P, d), stream(P, d);
  std::vector<RowMatrix> concat(static_cast<std::size_t>(layer), RowMatrix(P, static_cast<Eigen::Index>(h) * dk));
  std::vector<RowMatrix> mlp(static_cast<std::size_t>(layer), RowMatrix(P, d));
  auto rows = [&](const MatrixMap& v, RowMatrix& out) {
    for (Eigen::Index r = 0; r < P; ++r) out.row(r) = v.row(static_cast<Eigen::Index>(positions[static_cast<std::size_t>(r)]));
  };
  model::ForwardHook also = opt.hook;
  opt.keepHidden = opt.keepHidden || layer == L;
  opt.hook = [&](const model::HookSite& site, MatrixMap v) {
    if (site.point == HookPoint::ResidPre && site.layer == 0) rows(v, embedded);
    if (site.point == HookPoint::ResidPre && site.layer == layer) rows(v, stream);
    if (site.layer < layer && site.point == HookPoint::HeadOut) rows(v, concat[static_cast<std::size_t>(site.layer)]);
    if (site.layer < layer && site.point == HookPoint::MlpOut) rows(v, mlp[static_cast<std::size_t>(site.layer)]);
    if (also) also(site, v);
  };
  auto run = model::runForward(model, tokens, opt);
  if (!run) return run.error();
  if (layer == L) {
    const Tensor& hidden = run->hidden.back();  // (T, d_model)
    for (Eigen::Index r = 0; r < P; ++r) {
      for (int c = 0; c < d; ++c) {
        stream(r, c) = hidden.data[static_cast<std::size_t>(positions[static_cast<std::size_t>(r)] * d + c)];
      }
    }
  }

  StreamTerms s;
  s.layer = layer;
  s.positions = positions;
  s.stream = stream.cast<double>();
  const bool learned = spec.family->positions == model::PositionKind::Learned;
  std::vector<std::vector<Eigen::RowVectorXd>> rowsOf(static_cast<std::size_t>(P));  // per position, per writer
  s.writers.push_back({WriterKind::TokenEmbedding, -1, -1});
  if (learned) s.writers.push_back({WriterKind::PositionEmbedding, -1, -1});
  for (Eigen::Index r = 0; r < P; ++r) {
    RowVector pos = RowVector::Zero(d);
    if (learned) {
      const std::int64_t p = positions[static_cast<std::size_t>(r)];
      if (auto st = model.store().readRows(model.positionTable(), p, 1, pos.data()); !st) return st.error();
    }
    rowsOf[static_cast<std::size_t>(r)].push_back((embedded.row(r) - pos).cast<double>());
    if (learned) rowsOf[static_cast<std::size_t>(r)].push_back(pos.cast<double>());
  }
  for (int l = 0; l < layer; ++l) {  // one layer's weights at a time
    auto lw = model.layer(l);
    if (!lw) return lw.error();
    if (!lw->attention) return makeError("layer " + std::to_string(l) + " has no W_o to split its heads by");
    const MhaWeights& a = *lw->attention;
    for (int i = 0; i < h; ++i) s.writers.push_back({WriterKind::Head, l, i});
    if (a.hasBias) s.writers.push_back({WriterKind::OutputBias, l, -1});
    s.writers.push_back({WriterKind::Mlp, l, -1});
    const RowMatrix& z = concat[static_cast<std::size_t>(l)];  // (P, h·d_k)
    for (Eigen::Index r = 0; r < P; ++r) {
      auto& out = rowsOf[static_cast<std::size_t>(r)];
      for (int i = 0; i < h; ++i) {
        // head i's term: its d_k features of A V times its d_k rows of W_o (h·d_k, d_model)
        out.push_back(z.row(r).segment(i * dk, dk).cast<double>() * a.wo.middleRows(i * dk, dk).cast<double>());
      }
      if (a.hasBias) out.push_back(a.bo.cast<double>());
      out.push_back(mlp[static_cast<std::size_t>(l)].row(r).cast<double>());
    }
  }
  const Eigen::Index C = static_cast<Eigen::Index>(s.writers.size());
  for (const auto& rs : rowsOf) {
    TermMatrix t(C, d);
    for (Eigen::Index c = 0; c < C; ++c) t.row(c) = rs[static_cast<std::size_t>(c)];
    s.terms.push_back(std::move(t));
  }
  s.run = std::move(*run);
  return s;
}

}  // namespace mhascope::experiments
