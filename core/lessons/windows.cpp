// Windows — the sliding window with sinks: the kept keys, the weights, memory, the first token's share.
#include <algorithm>
#include <cmath>

#include "attention/uniform_share.hpp"
#include "lessons/common.hpp"
#include "lessons/gqa.hpp"
#include "lessons/windows.hpp"
#include "util/format.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

std::int64_t visibleScoreCells(std::int64_t T, int window, int sinks, bool causal) {
  if (T <= 0) return 0;
  if (window <= 0) return causal ? T * (T + 1) / 2 : T * T;
  const std::int64_t W = window, S = std::min<std::int64_t>(std::max(sinks, 0), T);
  std::int64_t cells = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    // The window's keys [lo, hi], then the sinks outside it (the causal rule still applies to them).
    const std::int64_t lo = std::max<std::int64_t>(0, t - W + 1), hi = causal ? t : std::min(T - 1, t + W - 1);
    cells += hi - lo + 1;
    cells += std::max<std::int64_t>(0, std::min(S, lo));                 // sinks before the window
    if (!causal) cells += std::max<std::int64_t>(0, S - (hi + 1));       // sinks after it
  }
  return cells;
}

namespace {

// Mean share of key 0 in head `head` of batch item 0 (all heads when head < 0).
FirstKeyShare firstKeyShare(const Trace& t, int head) {
  FirstKeyShare s;
  const Tensor& a = t.tensor(StageId::Weights);
  for (int i = 0; i < t.heads; ++i) {
    if (head >= 0 && i != head) continue;
    for (int q = 0; q < t.tq; ++q) {
      if (t.isBlocked(0, q, 0)) continue;
      int seen = 0;
      for (int k = 0; k < t.tk; ++k) seen += t.isBlocked(0, q, k) ? 0 : 1;
      if (seen < 2) continue;  // one key only: its weight is 1 whatever the scores say
      s.weight += a.data[idx((static_cast<std::int64_t>(i) * t.tq + q) * t.tk)];
      s.uniform += uniformShare(seen);
      ++s.queries;
    }
  }
  if (s.queries > 0) {
    s.weight /= s.queries;
    s.uniform /= s.queries;
  }
  return s;
}

std::int64_t visibleCells(const Trace& t) {  // batch item 0
  std::int64_t n = 0;
  for (int q = 0; q < t.tq; ++q)
    for (int k = 0; k < t.tk; ++k) n += t.isBlocked(0, q, k) ? 0 : 1;
  return n;
}

double meanAbsDiff(const Tensor& a, const Tensor& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) sum += std::abs(static_cast<double>(a.data[i]) - b.data[i]);
  return a.data.empty() ? 0.0 : sum / static_cast<double>(a.data.size());
}

// "key 4", "keys 2 .. 4"
std::string keyRange(int lo, int hi) {
  return lo == hi ? "key " + std::to_string(lo) : "keys " + std::to_string(lo) + " .. " + std::to_string(hi);
}

std::string percent(double part, double whole) { return num(whole > 0 ? 100.0 * part / whole : 0.0, 3) + " %"; }

}  // namespace

Result<WindowLesson> windowLesson(const Model& model, int window, int sinks, bool causal) {
  if (window < 1) return makeError("the window W must be at least 1, got " + std::to_string(window));
  if (sinks < 0) return makeError("the sinks S must be 0 or more, got " + std::to_string(sinks));
  WindowLesson r;
  r.window = window;
  r.sinks = sinks;
  r.causal = causal;
  AttentionOptions full = model.options;
  full.causal = causal;
  full.window = 0;
  full.sinks = 0;
  AttentionOptions win = full, noSinks = full;
  win.window = noSinks.window = window;
  win.sinks = sinks;
  if (auto s = forward(model.inputs, model.weights, full, r.full); !s) return s.error();
  if (auto s = forward(model.inputs, model.weights, win, r.windowed); !s) return s.error();
  const Trace& t = r.windowed;
  r.meanAbsOutputDiff = meanAbsDiff(t.tensor(StageId::Output), r.full.tensor(StageId::Output));
  r.meanAbsOutputDiffNoSinks = r.meanAbsOutputDiff;
  if (sinks > 0) {
    Trace bare;
    if (auto s = forward(model.inputs, model.weights, noSinks, bare); !s) return s.error();
    r.meanAbsOutputDiffNoSinks = meanAbsDiff(bare.tensor(StageId::Output), r.full.tensor(StageId::Output));
  }
  r.keep = Tensor({t.batch, t.tq, t.tk}, {"B", "T_q", "T_k"});
  for (int b = 0; b < t.batch; ++b)
    for (int q = 0; q < t.tq; ++q)
      for (int k = 0; k < t.tk; ++k) {
        float v = 0.0f;
        if (!t.isBlocked(b, q, k)) v = windowHides(noSinks, q, k) ? 0.5f : 1.0f;  // visible only as a sink: 0.5
        r.keep.data[idx((static_cast<std::int64_t>(b) * t.tq + q) * t.tk + k)] = v;
      }
  r.keptCells = visibleCells(t);
  r.fullCells = visibleCells(r.full);
  for (std::int64_t T : {static_cast<std::int64_t>(t.tk), std::int64_t{1024}, std::int64_t{8192}, std::int64_t{131072}}) {
    if (!r.memory.empty() && T <= r.memory.back().tokens) continue;
    r.memory.push_back({T, visibleScoreCells(T, 0, 0, causal), visibleScoreCells(T, window, sinks, causal),
                        std::min<std::int64_t>(T, static_cast<std::int64_t>(window) + sinks)});
  }
  for (int i = 0; i < t.heads; ++i) r.firstKey.push_back(firstKeyShare(r.full, i));
  r.firstKeyAll = firstKeyShare(r.full, -1);
  // The learned sink, with the controls' logits or the lesson's own, on the same inputs without the window.
  AttentionOptions sunk = full;
  r.sinkFromControls = !full.sinkLogits.empty();
  if (!r.sinkFromControls) sunk.sinkLogits.assign(static_cast<std::size_t>(full.heads), kLessonSinkLogit);
  r.sinkLogits = sunk.sinkLogits;
  if (auto s = forward(model.inputs, model.weights, sunk, r.sunk); !s) return s.error();
  const Tensor& share = r.sunk.tensor(StageId::SinkShare);  // (B, h, T_q, 1)
  for (int i = 0; i < t.heads; ++i) {
    double sum = 0;
    for (int q = 0; q < t.tq; ++q) sum += share.data[idx(static_cast<std::int64_t>(i) * t.tq + q)];
    r.sinkShare.push_back(t.tq > 0 ? sum / t.tq : 0.0);
    r.sinkShareAll += r.sinkShare.back() / t.heads;
  }
  r.firstKeySunk = firstKeyShare(r.sunk, -1);
  return r;
}

std::string learnedSinkText(const WindowLesson& r, int head) {
  if (head < 0 || head >= static_cast<int>(r.sinkShare.size())) return "";
  const float s = r.sinkLogits[static_cast<std::size_t>(head)];
  std::string out =
      "A learned sink does by design what StreamingLLM's first tokens do by accident: gpt-oss gives each head one "
      "learned logit s that joins every row's softmax as an extra column and is then dropped, w = e^z / (e^s + Σ e^z), "
      "so a head that finds nothing worth reading can give its weight to no token at all. The row's weights then sum "
      "to less than 1; the missing share is the sink's, and it adds nothing to the output (the sink has no value). " +
      std::string(r.sinkFromControls ? "With the controls' sink" : "With s = " + num(s, 3) + " in every head (the "
                                                                   "controls' learned sink is off)") +
      ", on this sentence without the window, head " + std::to_string(head) + " (s = " + num(s, 3) + ") leaves " +
      num(r.sinkShare[static_cast<std::size_t>(head)], 3) + " of a row's weight on the sink on average, every head " +
      num(r.sinkShareAll, 3) + ".";
  if (r.firstKeyAll.queries > 0 && r.firstKeySunk.queries > 0) {
    out += " The first key's share goes from " + num(r.firstKeyAll.weight, 3) + " without it to " +
           num(r.firstKeySunk.weight, 3) + " with it: the sink takes from every key of a row in the same proportion, "
           "so the keys' ratios stay as they were; a trained model, given a sink, need not make its first token one.";
  }
  return out;
}

std::string windowKeepText(const WindowLesson& r) {
  const Trace& t = r.windowed;
  if (t.tq < 1 || t.tk < 1 || t.blocked.empty() || r.memory.empty()) return "";
  const int q = t.tq - 1;
  int lo = -1, hi = -1, sinkCount = 0, sinkLast = -1, unwindowed = 0;
  for (int k = 0; k < t.tk; ++k) {
    if (!r.full.isBlocked(0, q, k)) ++unwindowed;
    const float v = r.keep.data[idx(static_cast<std::int64_t>(q) * t.tk + k)];
    if (v == 1.0f) {
      if (lo < 0) lo = k;
      hi = k;
    } else if (v == 0.5f) {
      ++sinkCount;
      sinkLast = k;
    }
  }
  std::string s = "Query " + std::to_string(q) + " keeps ";
  if (lo >= 0) s += keyRange(lo, hi) + " (its window, W = " + std::to_string(r.window) + ")";
  if (sinkCount > 0) s += std::string(lo >= 0 ? " and " : "") + keyRange(0, sinkLast) + (sinkCount == 1 ? " (a sink)" : " (sinks)");
  if (lo < 0 && sinkCount == 0) s += "no key";
  const int kept = (lo >= 0 ? hi - lo + 1 : 0) + sinkCount;
  s += ": " + std::to_string(kept) + " of the " + std::to_string(unwindowed) + " keys it sees without the window. ";
  s += "Per head, " + grouped(r.keptCells) + " of " + grouped(r.fullCells) +
       " score cells remain here (" + percent(static_cast<double>(r.keptCells), static_cast<double>(r.fullCells)) + ")";
  const WindowMemoryRow& last = r.memory.back();
  if (last.tokens > t.tk) {
    s += "; at T = " + grouped(last.tokens) + ": " + grouped(last.windowCells) + " of " +
         grouped(last.fullCells) + " (" +
         percent(static_cast<double>(last.windowCells), static_cast<double>(last.fullCells)) +
         "): they grow as T·(W + S), not T².";
  } else {
    s += ".";
  }
  return s;
}

std::string firstKeyText(const WindowLesson& r, int head) {
  if (head < 0 || head >= static_cast<int>(r.firstKey.size())) return "";
  const FirstKeyShare& h = r.firstKey[static_cast<std::size_t>(head)];
  const FirstKeyShare& all = r.firstKeyAll;
  if (h.queries == 0 || all.queries == 0) return "No query here sees the first key and another one: nothing to measure.";
  std::string s = "Without the window, the first key takes on average " + num(h.weight, 3) + " of a query's weight in head " +
                  std::to_string(head) + " (a uniform share would be " + num(h.uniform, 3) + ", " + num(h.ratio(), 3) +
                  "x that), " + num(all.weight, 3) + " over every head (" + num(all.ratio(), 3) + "x a uniform share). ";
  if (all.ratio() >= 2.0) {
    s += "That is a sink: these heads park weight on the first token, and a window that dropped it would move that "
         "weight onto the keys left.";
  } else {
    s += "That is no sink: the first key gets about a uniform share, as random weights give it.";
  }
  return s;
}

std::int64_t windowReach(std::int64_t layers, std::int64_t window) { return layers * (window - 1); }

std::string windowReachText(const WindowLesson& r) {
  const std::int64_t W = r.window;
  std::string s = "Stacked layers see further than one: under the causal mask query t reads keys back to t - " + std::to_string(W - 1) +
                  " here, and what those keys hold was read by the layer below from " + std::to_string(W - 1) +
                  " positions further back, so L layers reach L x (W - 1) positions back (" +
                  std::to_string(windowReach(2, W)) + " with 2 layers of W = " + std::to_string(W) + ").";
  if (const auto m = publishedAttention("Mistral-7B")) {
    s += " " + std::string(m->name) + " (Jiang et al. 2023): " + std::to_string(m->layers) + " layers x (" +
         grouped(kMistralWindow) + " - 1) = " + grouped(windowReach(m->layers, kMistralWindow)) +
         " positions (the paper rounds it to 32 x 4,096, about 131K tokens). A reach, not a memory: what arrives from that "
         "far has passed through every layer's window. A decoder's cache for the window is a rolling buffer of W "
         "keys per layer: token t's K and V overwrite slot t mod W, so the cache stops growing at W.";
  }
  return s;
}

std::vector<PublishedLayerPattern> publishedLayerPatterns() {
  // config.json of mistralai/Mistral-7B-v0.1 (sliding_window 4096 on every layer); google/gemma-2-2b (26 layers,
  // sliding_window 4096, Gemma2Config's layer_types: every other layer sliding from layer 0); google/gemma-3-1b-pt
  // and google/gemma-3-27b-pt's text_config (sliding_window 512 and 1024, sliding_window_pattern 6);
  // openai/gpt-oss-20b and -120b (24 and 36 layers, sliding_window 128, layer_types alternating from a sliding one).
  return {
      {"Mistral-7B", 32, 4096, 0},  {"Gemma-2-2B", 26, 4096, 2},   {"Gemma-3-1B", 26, 512, 6},
      {"Gemma-3-27B", 62, 1024, 6}, {"gpt-oss-20b", 24, 128, 2},    {"gpt-oss-120b", 36, 128, 2},
  };
}

bool isGlobalLayer(const PublishedLayerPattern& p, int layer) { return p.globalEvery > 0 && (layer + 1) % p.globalEvery == 0; }

int globalLayerCount(const PublishedLayerPattern& p) {
  int global = 0;
  for (int l = 0; l < p.layers; ++l) global += isGlobalLayer(p, l);
  return global;
}

double layerPatternCacheShare(const PublishedLayerPattern& p, std::int64_t n) {
  if (p.layers < 1 || n < 1) return 0.0;
  double kept = 0;
  for (int l = 0; l < p.layers; ++l) kept += static_cast<double>(isGlobalLayer(p, l) ? n : std::min<std::int64_t>(n, p.window));
  return kept / (static_cast<double>(p.layers) * static_cast<double>(n));
}

std::string layerPatternStrip(const PublishedLayerPattern& p, int count) {
  std::string s;
  for (int l = 0; l < std::min(count, p.layers); ++l) s += isGlobalLayer(p, l) ? 'G' : 'L';
  return s;
}

std::string layerPatternsText() {
  std::string s = "Today's models mix the two: local layers with a window and global layers that read the whole past. "
                  "Only the global layers' caches grow with the context; the local ones stop at W keys, and the global "
                  "layers carry what lies further back than any window reaches.";
  for (const PublishedLayerPattern& p : publishedLayerPatterns()) {
    if (std::string(p.name) != "Gemma-3-27B") continue;
    const int global = globalLayerCount(p);
    // Appended piece by piece: on one long chain of + GCC 12 warns of a memcpy past the object.
    s.append(" ").append(p.name).append(": ").append(std::to_string(p.layers - global));
    s.append(" local layers of W = ").append(grouped(p.window)).append(" and ").append(std::to_string(global));
    s.append(" global ones (five local, then one global), so at ").append(grouped(kPatternLongContext));
    s.append(" tokens its cache holds ").append(formatFixed(100.0 * layerPatternCacheShare(p, kPatternLongContext), 1));
    s.append(" % of what ").append(std::to_string(p.layers));
    s.append(" global layers would hold. The table counts keys per layer alike for every layer, as these models have "
             "one K/V width for both kinds.");
  }
  return s;
}

const char* windowLessonIntro() {
  return "A sliding window lets each query see only its last W keys: query t sees keys j with t - W < j <= t under the "
         "causal mask, |t - j| < W without it. Sinks are the first S keys, kept visible to every query however far "
         "back they are (the causal rule still applies). The scores a head can use then grow as T·(W + S) instead of "
         "T² (a kernel that skips blocked blocks saves the rest of the work; this engine computes every score and "
         "masks), and a decoder's cache can hold W + S keys per layer instead of all T (Mistral 7B: W = 4096).";
}

const char* streamingLlmText() {
  return "StreamingLLM keeps the first S tokens (4 in the paper) plus the last W in the cache and evicts the rest. "
         "Why the first ones: trained language models give them a large share of the weight whatever they say (the "
         "softmax must put its weight somewhere, and the first tokens, seen by every query, become the dump; the "
         "paper measured it in Llama-2, MPT, Falcon and Pythia). Evict them and that weight lands on the other keys: "
         "the outputs shift and perplexity blows up; keep them and perplexity stays stable over millions of tokens "
         "(Xiao et al. 2023). It does not remember what it evicted: only the kept W + S keys reach the output. It "
         "stores keys before RoPE and gives each its place in the cache, not in the text, as its position. Random "
         "weights show no sink, as the numbers below say. Whether a model has one is measured here, not assumed: open "
         "a trained layer in the pipeline (the Train mode's Open in pipeline, or --checkpoint with --layer) and the "
         "numbers below are its own; the Train mode's tiny models need not have learnt one.";
}

std::string windowStartText(const Trace& t) {
  using C = lessons::Windows::Choices;
  if (t.window > 0) {
    return "Started from the controls: W = " + std::to_string(t.window) + ", S = " + std::to_string(t.sinks) +
           ", compared with no window.";
  }
  return "The controls set no window: the lesson starts at W = " + std::to_string(C::kStartWindow) + ", S = " +
         std::to_string(C::kStartSinks) + " and compares that with no window.";
}

}  // namespace mhascope
