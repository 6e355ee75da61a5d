// Every head of a model on one sequence, summarised during one forward (see model_view.hpp).
#include "model/model_view.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <unordered_set>

#include "analysis/head_roles.hpp"
#include "attention/random.hpp"
#include "color/downsample.hpp"
#include "model/families/family.hpp"
#include "util/format.hpp"
#include "util/thread_pool.hpp"

namespace mhascope::model {

namespace {

ForwardOptions forwardOptionsFor(const ModelViewOptions& opt) {
  ForwardOptions fo;
  fo.traceLayer = -1;
  fo.keepAttention = false;  // each layer's weights are summarised in onAttention instead
  fo.keepHidden = true;      // the logit lens reads every layer's residual stream
  fo.memoryBudgetBytes = opt.memoryBudgetBytes;
  fo.threads = opt.threads;
  fo.residuals = opt.residuals;
  return fo;
}

// A family whose layers change their scores beyond the scale and the mask: the model view then records every
// layer's scores to say what the rule did (HeadView::scoreStats).
bool hasScoreRules(const ModelSpec& s) {
  return s.attnSoftcap > 0 || s.family->qkNorm != QkNormKind::None || s.family->tensor(TensorRole::Sinks) != nullptr;
}

int thumbnailSide(std::int64_t T, int thumbnail) {
  const int k = cellsPerTexel(static_cast<int>(T), thumbnail);
  return static_cast<int>((T + k - 1) / k);
}

// Floating-point operations of copying for every head over `queries` queries: per query, the head's
// output through W_o^i (d_k · d_model) and the unembedding (d_model · V), two per multiply-add.
double copyingCostFlops(const ModelSpec& s, std::int64_t queries) {
  return 2.0 * s.layers * s.heads * static_cast<double>(queries) * s.dModel * (static_cast<double>(s.vocab) + s.dk());
}

// Copying reads a head's output through the final norm's centring (LayerNorm) and gain.
struct CopyingReadout {
  bool centre = false;
  RowVector gain;  // (1, d_model)
};

// The queries copying is measured over: those with an earlier copy of their token, as prefix matching's.
std::vector<int> copyingQueries(const TokenRepeats& r) {
  std::vector<int> q;
  for (int t = 2; t < r.size(); ++t) {
    if (r.hasEarlierCopy(t)) q.push_back(t);
  }
  return q;
}

// Copying of head i (analysis/head_roles.hpp), kLensRows queries at a time: their (rows, V) logits
// are a block the size of the logit lens's, which estimateModelViewBytes counts and which never
// exists at the same time as this one. `more()` false: stop (cancelled) and return nothing.
Result<std::optional<double>> headCopying(const ModelFolder& model, const CopyingReadout& ro, const LayerHeads& la,
                                          int i, const std::vector<int>& ids, const std::vector<int>& queries,
                                          const std::function<bool()>& more) {
  if (queries.empty()) return std::optional<double>{};
  // Each head's output is d_k wide, d_v on a latent layer: the concat's width over h says which.
  const std::int64_t T = static_cast<std::int64_t>(ids.size()), hq = la.headOutputs->shape.back(), dk = hq / model.spec().heads;
  const float* a = la.weights->ptr() + i * T * T;  // (T, T)
  const float* o = la.headOutputs->ptr();          // (T, h·d_k), head i in columns i·d_k …
  const RowMatrix& outputProjection = la.attention ? la.attention->wo : la.latent->wo;
  const Eigen::Ref<const RowMatrix> wo = outputProjection.middleRows(i * dk, dk);  // W_o^i (d_k, d_model)
  RowMatrix oi, direct, logits;  // (rows, d_k), (rows, d_model), (rows, V)
  std::int64_t copied = 0;
  const auto n = static_cast<std::int64_t>(queries.size());
  for (std::int64_t q0 = 0; q0 < n; q0 += kLensRows) {
    if (!more()) return std::optional<double>{};
    const std::int64_t rows = std::min<std::int64_t>(kLensRows, n - q0);
    oi.resize(rows, dk);
    for (std::int64_t j = 0; j < rows; ++j) {
      oi.row(j) = ConstMatrixMap(o + queries[static_cast<std::size_t>(q0 + j)] * hq + i * dk, 1, dk);
    }
    direct.noalias() = oi * wo;  // the head's own term of the attention output, no output bias
    if (ro.centre) direct.colwise() -= direct.rowwise().mean();
    direct.array().rowwise() *= ro.gain.array();
    if (auto s = model.unembed(direct, logits); !s) return s.error();
    for (std::int64_t j = 0; j < rows; ++j) {
      const int t = queries[static_cast<std::size_t>(q0 + j)];
      const float* row = a + static_cast<std::int64_t>(t) * T;
      int attended = 0;  // the first maximum
      for (int k = 1; k <= t; ++k) {
        if (row[k] > row[attended]) attended = k;
      }
      Eigen::Index top = 0;
      logits.row(j).maxCoeff(&top);
      copied += static_cast<int>(top) == ids[static_cast<std::size_t>(attended)] ? 1 : 0;
    }
  }
  return std::optional<double>{static_cast<double>(copied) / static_cast<double>(n)};
}

}  // namespace

LayerMask layerMaskOf(const ModelSpec& s, int layer) {
  const LayerKind k = s.layerKind(layer);
  LayerMask m;
  const std::string W = std::to_string(k.window);
  m.tag = k.window > 0 ? "W " + W : "full";
  m.words = k.window > 0 ? "causal, sliding window W = " + W + " (query t sees keys t − " + std::to_string(k.window - 1) +
                               " … t)"
                         : "causal, every earlier key";
  if (!s.rope()) {
    m.words += "; learned positions, added before layer 0";
  } else if (!k.rope) {
    m.tag += " · no pos";
    m.words += "; no positions in this layer (no RoPE): only the content of q and k decides";
  } else {
    m.words += "; RoPE θ = " + formatGeneral(k.ropeTheta > 0 ? k.ropeTheta : s.ropeTheta, 9);
  }
  return m;
}

double estimateModelViewBytes(const ModelSpec& s, std::int64_t T, const ModelViewOptions& opt) {
  const double t = static_cast<double>(T), side = thumbnailSide(T, std::max(1, opt.thumbnail));
  const double heads = static_cast<double>(s.layers) * s.heads;
  double bytes = estimateForwardBytes(s, T, forwardOptionsFor(opt));
  bytes += heads * (sizeof(HeadView) + side * side * 4.0);                   // scores + thumbnails
  bytes += heads * static_cast<double>(std::min<std::int64_t>(T, kMaxProfileOffsets)) * 4.0;  // offset profiles
  bytes += t * std::min(opt.top, s.vocab) * sizeof(Candidate);               // predictions
  bytes += static_cast<double>(s.layers) * t * sizeof(LensCell);              // the lens
  bytes += static_cast<double>(std::min<std::int64_t>(T, kLensRows)) * (static_cast<double>(s.vocab) + 2.0 * s.dModel) * 4.0;
  bytes += static_cast<double>(s.vocab) * 4.0 + t * 16.0;                     // top-k order, token repeats
  if (s.moe.experts > 0) bytes += static_cast<double>(s.layers) * t * s.moe.perToken * 8.0;  // the routing shown
  return bytes;
}

Result<ModelView> computeModelView(const ModelFolder& model, const std::vector<int>& ids,
                                   const std::vector<std::string>& labels, const ModelViewOptions& opt) {
  const ModelSpec& s = model.spec();
  if (ids.empty()) return makeError("the model view needs at least one token: enter at least one token");
  if (!labels.empty() && labels.size() != ids.size()) {
    return makeError("the model view got " + std::to_string(labels.size()) + " token labels for " +
                     std::to_string(ids.size()) + " tokens");
  }
  if (opt.thumbnail < 1) return makeError("the thumbnail size (" + std::to_string(opt.thumbnail) + ") must be at least 1");
  if (opt.top < 1 || opt.top > s.vocab) {
    return makeError("predictions per position (" + std::to_string(opt.top) + ") must be in 1 .. " +
                     std::to_string(s.vocab) + " (the model's vocabulary)");
  }
  const auto T = static_cast<std::int64_t>(ids.size());
  const double estimate = estimateModelViewBytes(s, T, opt);
  if (estimate > static_cast<double>(opt.memoryBudgetBytes)) {
    return makeError("the model view of " + std::to_string(T) + " tokens needs an estimated " + formatBytes(estimate) +
                     ", above the memory budget of " + formatBytes(static_cast<double>(opt.memoryBudgetBytes)) +
                     "; shorten the text or raise the budget");
  }
  try {
    ModelView view;
    view.ids = ids;
    view.labels = labels;
    if (view.labels.empty()) {
      for (int id : ids) view.labels.push_back(std::to_string(id));
    }
    view.layers = s.layers;
    view.heads = s.heads;
    view.kvHeads = s.kvHeads;
    for (const FamilyNote& note : familyNotes(s)) {
      if (note.label == "cache per token") view.latentCache = note.text;
    }
    for (int l = 0; l < s.layers; ++l) view.layerMasks.push_back(layerMaskOf(s, l));
    view.headViews.resize(static_cast<std::size_t>(s.layers) * static_cast<std::size_t>(s.heads));

    const int total = 2 * s.layers;  // the forward's layers, then the lens's
    const TokenRepeats repeats(ids.data(), static_cast<int>(T));
    view.uniform = uniformHeadScores(repeats);
    const int k = cellsPerTexel(static_cast<int>(T), opt.thumbnail);
    CopyingReadout readout;
    {
      RowVector bias;  // copying leaves the final norm's bias out
      if (auto st = model.finalNorm(readout.gain, bias); !st) return st.error();
      readout.centre = s.family->norm == NormKind::LayerNorm;
    }
    const std::vector<int> queries = copyingQueries(repeats);
    view.copyingEveryHead = copyingCostFlops(s, static_cast<std::int64_t>(queries.size())) <= opt.copyingEveryHeadFlops;
    bool cancelled = false;
    Status copyingStatus = Ok{};
    ForwardOptions fo = forwardOptionsFor(opt);
    fo.recordScores = hasScoreRules(s);
    view.layerBounds.resize(static_cast<std::size_t>(s.layers));
    view.layerSoftcaps.assign(static_cast<std::size_t>(s.layers), 0.0f);
    fo.onAttention = [&](const LayerHeads& la) {
      const int layer = la.layer;
      const Tensor& weights = *la.weights;  // (1, h, T, T)
      if (fo.recordScores) {
        view.layerBounds[static_cast<std::size_t>(layer)] = qkNormBound(*la.options, la.trace->scaleFactor);
        view.layerSoftcaps[static_cast<std::size_t>(layer)] = la.trace->softcap;
      }
      // Heads are independent: each writes only its own HeadView, so any thread count gives the same view.
      parallelFor(opt.threads, s.heads, [&](std::int64_t i) {
        const float* a = weights.ptr() + i * T * T;  // (T, T)
        HeadView& hv = view.headViews[static_cast<std::size_t>(layer) * static_cast<std::size_t>(s.heads) +
                                      static_cast<std::size_t>(i)];
        hv.scores = headScores(a, repeats);
        // Weights lie in [0, 1], so a linear [0, 1] scale leaves them as they are.
        BlockPositions block;
        downsampleToPositions(a, nullptr, static_cast<int>(T), static_cast<int>(T), k, k, ColorScale::Linear,
                              ColorRange{0.0f, 1.0f}, DownsampleRule::Max, block);
        hv.thumbRows = block.rows;
        hv.thumbCols = block.cols;
        hv.thumbnail = std::move(block.values);
        hv.offsets = offsetProfile(a, static_cast<int>(T), static_cast<int>(std::min<std::int64_t>(T, kMaxProfileOffsets)));
        if (fo.recordScores) hv.scoreStats = headScoreStats(*la.trace, 0, static_cast<int>(i));
      });
      // Copying reads the whole vocabulary per query: one head at a time (one block of logits), and
      // only where the induction rule needs it unless every head is cheap. The cancel is checked
      // between blocks, with the layers done so far.
      const auto more = [&] {
        if (!cancelled && opt.progress && !opt.progress(layer, total)) cancelled = true;
        return !cancelled;
      };
      for (int i = 0; i < s.heads && !cancelled && copyingStatus; ++i) {
        HeadScores& hs = view.headViews[static_cast<std::size_t>(layer) * static_cast<std::size_t>(s.heads) +
                                        static_cast<std::size_t>(i)].scores;
        const std::optional<double> matching = hs.inductionQueries > 0 ? std::optional<double>(hs.induction) : std::nullopt;
        if (!view.copyingEveryHead && !inductionNeedsCopying(layer, matching)) continue;
        auto c = headCopying(model, readout, la, i, ids, queries, more);
        if (!c) {
          copyingStatus = c.error();
        } else if (!cancelled) {
          hs.copying = *c;
        }
      }
    };
    if (opt.progress) fo.progress = [&](int done) { return !cancelled && opt.progress(done, total); };
    auto forward = runForward(model, ids, fo);
    if (!copyingStatus) return copyingStatus.error();
    if (cancelled) return makeError(kForwardCancelled);
    if (!forward) return forward.error();

    view.nonFinite = forward->nonFinite;
    view.routing = std::move(forward->routing);
    view.predictions = predictNext(forward->logits, opt.top);
    std::function<bool(int)> lensProgress;
    if (opt.progress) lensProgress = [&](int done) { return opt.progress(s.layers + done, total); };
    auto lens = logitLens(model, *forward, lensProgress);
    if (!lens) return lens.error();
    view.lens = std::move(*lens);
    return view;
  } catch (const std::bad_alloc&) {
    return makeError("not enough memory for the model view of " + std::to_string(T) + " tokens (estimated " +
                     formatBytes(estimate) + ")");
  }
}

std::vector<std::string> headScoreRuleLines(const ModelView& v, int layer, int head) {
  std::vector<std::string> lines;
  if (layer < 0 || layer >= v.layers || head < 0 || head >= v.heads) return lines;
  const HeadScoreStats& st = v.head(layer, head).scoreStats;
  if (st.visible == 0) return lines;
  if (st.sink) {
    lines.push_back("learned sink: " + formatFixed(st.sinkMean, 3) + " of a row's weight on average, at most " +
                    formatFixed(st.sinkMax, 3) + " — each row's weights sum to 1 minus it");
  }
  const float cap = static_cast<std::size_t>(layer) < v.layerSoftcaps.size() ? v.layerSoftcaps[static_cast<std::size_t>(layer)] : 0.0f;
  if (cap > 0.0f) {
    lines.push_back("softcap c = " + formatFixed(cap, 1) + ": largest |score| " + formatFixed(st.maxAbsScaled, 3) +
                    " before the cap, " + formatFixed(st.maxAbsCapped, 3) + " after; it bent " +
                    formatFixed(100.0 * st.shareBent, 1) + " % of the " + std::to_string(st.visible) +
                    " visible scores by more than 1 % (at most by " + formatFixed(st.largestCut, 3) + ")");
  }
  if (static_cast<std::size_t>(layer) < v.layerBounds.size() && v.layerBounds[static_cast<std::size_t>(layer)].nq > 0) {
    const QkNormBound& b = v.layerBounds[static_cast<std::size_t>(layer)];
    lines.push_back("q/k norm: largest |score| " + formatFixed(st.maxAbsScaled, 3) + " of its bound " +
                    formatFixed(b.value(), 3) + " = √" + std::to_string(b.nq) + " · " + formatFixed(b.maxGainQ, 3) + " · √" +
                    std::to_string(b.nk) + " · " + formatFixed(b.maxGainK, 3) + " · " + formatFixed(b.scale, 4) +
                    " (√n · the largest gain, for q and k, times the scale)");
  }
  return lines;
}

std::string routingText(const ModelView& v, int layer, int t) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= v.routing.size() || t < 0 ||
      static_cast<std::size_t>(t) >= v.labels.size()) {
    return "";
  }
  const LayerRouting& r = v.routing[static_cast<std::size_t>(layer)];
  if (r.k == 0) return "";
  std::string out = "layer " + std::to_string(layer) + ": token «" + v.labels[static_cast<std::size_t>(t)] + "» → expert" +
                    (r.k == 1 ? " " : "s ");
  for (int j = 0; j < r.k; ++j) {
    out += (j ? ", " : "") + std::to_string(r.expert(t, j)) + " (" + formatFixed(r.weight(t, j), 2) + ")";
  }
  return out;
}

std::string routingSummary(const ModelView& v, int layer) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= v.routing.size()) return "";
  const LayerRouting& r = v.routing[static_cast<std::size_t>(layer)];
  if (r.k == 0) return "";
  std::map<int, int> load;  // expert → tokens that went to it
  for (int e : r.experts) ++load[e];
  std::string out = "layer " + std::to_string(layer) + "'s MLP, a mixture: tokens per expert";
  bool first = true;
  for (const auto& [e, n] : load) {
    out += (first ? " " : ", ") + std::to_string(e) + ": " + std::to_string(n);
    first = false;
  }
  return out + " (each token to " + std::to_string(r.k) + "; an expert not named got none)";
}

std::vector<std::string> tokenRoutingLines(const ModelView& v, int t) {
  std::vector<std::string> lines;
  for (int l = 0; l < static_cast<int>(v.routing.size()); ++l) {
    if (std::string line = routingText(v, l, t); !line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

std::string nonFiniteWarning(const ModelView& v) {
  if (v.nonFinite.empty()) return "";
  return "Not numbers: " + v.nonFinite +
         ". The weights are finite but too large for float32, so the maps, scores and predictions shown are "
         "meaningless.";
}

void nameTokens(ModelView& v, const std::function<std::string(int id)>& text) {
  const auto name = [&](int id) {
    if (v.tokenTexts.find(id) == v.tokenTexts.end()) v.tokenTexts.emplace(id, text(id));
  };
  for (const auto& row : v.predictions) {
    for (const Candidate& c : row) name(c.id);
  }
  for (const LensCell& c : v.lens.cells) name(c.top.id);
  for (int id : v.lens.finalTop) name(id);
}

std::vector<float> offsetProfile(const float* a, int T, int offsets) {
  offsets = std::clamp(offsets, 0, std::max(T, 0));
  std::vector<float> profile(static_cast<std::size_t>(offsets), 0.0f);
  for (int d = 0; d < offsets; ++d) {
    double sum = 0.0;  // in double: T − d terms, each at most 1
    for (int t = d; t < T; ++t) sum += a[static_cast<std::int64_t>(t) * T + (t - d)];
    profile[static_cast<std::size_t>(d)] = static_cast<float>(sum / static_cast<double>(T - d));
  }
  return profile;
}

std::vector<int> strongestOffsets(const std::vector<float>& profile, int T, int n) {
  const int counted = std::min(static_cast<int>(profile.size()), std::max(T, 0) / 2 + 1);
  std::vector<int> order;
  for (int d = 0; d < counted; ++d) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return profile[static_cast<std::size_t>(x)] > profile[static_cast<std::size_t>(y)];
  });
  if (static_cast<int>(order.size()) > n) order.resize(static_cast<std::size_t>(std::max(n, 0)));
  return order;
}

int strongestOffset(const std::vector<float>& profile, int T) {
  const std::vector<int> top = strongestOffsets(profile, T, 1);
  return top.empty() ? -1 : top[0];
}

std::string offsetSentence(const std::vector<float>& profile, int T) {
  const int d = strongestOffset(profile, T);
  if (d < 0) return "no offsets";
  const double w = profile[static_cast<std::size_t>(d)];
  char buf[160];
  // Half the weight, the bar a role score must pass (a head's role needs half its attention).
  if (!(w >= 0.5)) {
    std::snprintf(buf, sizeof buf, "no offset holds half its weight: the strongest is offset %d, %.2f mean weight", d, w);
  } else if (d == 0) {
    std::snprintf(buf, sizeof buf, "attends to itself: %.2f mean weight at offset 0", w);
  } else {
    std::snprintf(buf, sizeof buf, "looks back %d position%s: %.2f mean weight at offset %d", d, d == 1 ? "" : "s", w, d);
  }
  return buf;
}

const char* probeSourceName(ProbeSource s) {
  switch (s) {
    case ProbeSource::Vocabulary: return "vocabulary";
    case ProbeSource::TextTokens: return "text";
    case ProbeSource::GivenTokens: return "tokens";
  }
  return "?";
}

std::optional<ProbeSource> probeSourceFromName(const std::string& name) {
  for (int i = 0; i < kProbeSourceCount; ++i) {
    if (name == probeSourceName(static_cast<ProbeSource>(i))) return static_cast<ProbeSource>(i);
  }
  return std::nullopt;
}

std::vector<int> vocabularyPool(int vocab, const std::vector<int>& avoid) {
  const std::unordered_set<int> skip(avoid.begin(), avoid.end());
  std::vector<int> pool;
  for (int v = 0; v < vocab; ++v) {
    if (skip.count(v) == 0) pool.push_back(v);
  }
  return pool;
}

std::vector<int> distinctTokens(const std::vector<int>& ids, const std::vector<int>& avoid) {
  const std::unordered_set<int> skip(avoid.begin(), avoid.end());
  std::vector<int> out;
  for (int id : ids) {
    if (skip.count(id) == 0) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> repeatedRandomTokens(const std::vector<int>& pool, int period, int copies, std::uint64_t seed) {
  if (period <= 0 || copies <= 0 || pool.empty()) return {};
  SplitMix64 rng(seed);
  std::vector<int> bag = pool;
  const std::size_t n = bag.size();
  std::vector<int> run(static_cast<std::size_t>(period));
  std::size_t left = 0;  // bag[left ..) not yet drawn in this round
  for (std::size_t i = 0; i < run.size(); ++i) {
    if (left == n) left = 0;  // the pool is spent: a new round over all of it
    const std::size_t j = left + static_cast<std::size_t>(rng.next() % (n - left));
    std::swap(bag[left], bag[j]);
    run[i] = bag[left++];
  }
  std::vector<int> out;
  out.reserve(run.size() * static_cast<std::size_t>(copies));
  for (int c = 0; c < copies; ++c) out.insert(out.end(), run.begin(), run.end());
  return out;
}

std::string describeProbe(const RepeatedProbe& p) {
  const std::string pool = withThousands(p.pool);
  std::string from;
  switch (p.source) {
    case ProbeSource::Vocabulary: from = "the vocabulary's " + pool; break;
    case ProbeSource::TextTokens: from = "the text's " + pool; break;
    case ProbeSource::GivenTokens: from = "the " + pool + " you gave"; break;
  }
  const std::string run = std::to_string(p.period);
  std::string s = "T = " + std::to_string(p.length()) + " tokens: " + (p.bos ? "the BOS, then " : "") + run +
                  " random token" + (p.period == 1 ? "" : "s") + " of " + from;
  if (p.copies == 2) s += ", then the same " + run + " again";
  else if (p.copies == 3) s += ", then the same " + run + " twice more";
  else if (p.copies > 3) s += ", then the same " + run + " again, " + std::to_string(p.copies) + " copies in all";
  if (p.period > p.pool) {
    s += "; a run longer than the " + pool + " repeats them (drawn in shuffled rounds)";
  } else {
    s += " (no token twice in a run: drawn without replacement)";
  }
  if (!p.cut.empty()) s += "; " + p.cut;
  return s + " · seed " + std::to_string(p.seed);
}

}  // namespace mhascope::model
