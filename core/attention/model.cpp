// From a ModelConfig to engine inputs: batch items, tokens, embeddings, masks, weights; and the
// strict JSON preset format.
//
// [SECTION] names
// [SECTION] embeddings
// [SECTION] buildModel
// (presets, the strict JSON and the bundled files: io/presets.cpp)
#include "attention/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "attention/random.hpp"
#include "attention/tokenizer.hpp"

namespace mhascope {

// ---------------------------------------------------------------------------------------------
// [SECTION] names
// ---------------------------------------------------------------------------------------------

const char* maskName(MaskKind m) { return m == MaskKind::Causal ? "causal" : "none"; }

Result<MaskKind> maskFromName(std::string_view name) {
  if (name == "none") return MaskKind::None;
  if (name == "causal") return MaskKind::Causal;
  return makeError("unknown mask '" + std::string(name) + "': use none or causal");
}

Result<ScaleKind> scaleFromName(std::string_view name) {
  if (name == "sqrt-dk") return ScaleKind::SqrtDk;
  if (name == "sqrt-dmodel") return ScaleKind::SqrtDModel;
  if (name == "none") return ScaleKind::None;
  return makeError("unknown scale '" + std::string(name) + "': use sqrt-dk, sqrt-dmodel or none");
}

Result<RopeStyle> ropeStyleFromName(std::string_view name) {
  if (name == "half") return RopeStyle::Half;
  if (name == "interleaved") return RopeStyle::Interleaved;
  return makeError("unknown RoPE style '" + std::string(name) + "': use half or interleaved");
}

std::string positionsName(const ModelConfig& cfg) {
  const char* inside = cfg.attnPositions == AttnPositions::Rope    ? "rope"
                       : cfg.attnPositions == AttnPositions::Alibi ? "alibi"
                                                                   : "";
  if (cfg.positions) return *inside ? std::string("sinusoidal+") + inside : "sinusoidal";
  return *inside ? inside : "none";
}

Status setPositions(ModelConfig& cfg, std::string_view name) {
  if (name == "sinusoidal" || name == "rope" || name == "alibi" || name == "none") {
    cfg.positions = name == "sinusoidal";
    cfg.attnPositions = name == "rope" ? AttnPositions::Rope : name == "alibi" ? AttnPositions::Alibi : AttnPositions::None;
    return Ok{};
  }
  return makeError("unknown positions '" + std::string(name) + "': use sinusoidal, rope, alibi or none");
}

void applyVariants(const ModelConfig& cfg, AttentionOptions& opt) {
  opt.kvHeads = cfg.kvHeads;
  opt.headDim = cfg.headDim;
  opt.positions = cfg.attnPositions;
  opt.ropeBase = cfg.ropeBase;
  opt.ropeStyle = cfg.ropeStyle;
  opt.window = cfg.window;
  opt.sinks = cfg.sinks;
  opt.softcap = cfg.softcap;
  // A norm per head: d_k gains of 1 (random weights have no learned gains to read).
  const auto dk = static_cast<std::size_t>(std::max<std::int64_t>(0, headDimOf(opt, cfg.dModel)));
  opt.qNorm = cfg.qkNorm ? std::vector<float>(dk, 1.0f) : std::vector<float>{};
  opt.kNorm = opt.qNorm;
  opt.sinkLogits = cfg.learnedSink ? std::vector<float>(static_cast<std::size_t>(std::max(0, cfg.heads)), cfg.sinkLogit)
                                   : std::vector<float>{};
}

Result<ParameterTable> parameterTable(const LayerSizes& sizes) {
  const std::int64_t dModel = sizes.dModel, heads = sizes.heads;
  AttentionOptions variant;  // the engine's rules and wording for N and d_k
  variant.heads = static_cast<int>(heads);
  variant.kvHeads = static_cast<int>(sizes.kvHeads);
  variant.headDim = static_cast<int>(sizes.dk);
  if (auto s = validateSizes(1, 1, 1, dModel, heads, std::numeric_limits<std::uint64_t>::max(), withVariants({}, variant));
      !s) {
    return s.error();
  }
  if (auto s = validateVariants(dModel, variant); !s) return s.error();
  ParameterTable p;
  p.counts = layerCounts(sizes);
  const std::int64_t heads2N = p.counts.heads + 2 * p.counts.kvHeads;  // Q heads and K, V heads
  p.oneHeadProjection = dModel * p.counts.dk;
  p.qkvFullPerHead = heads2N * dModel * dModel;
  p.qkvReducedPerHead = heads2N * dModel * p.counts.dk;
  p.qkvReal = p.counts.wq + p.counts.wk + p.counts.wv;
  return p;
}

std::string configSummary(const Trace& t, const ModelConfig& cfg, bool seedUsed) {
  std::string s = "B=" + std::to_string(t.batch) + "  T_q=" + std::to_string(t.tq);
  if (!t.selfAttention || t.tk != t.tq) s += "  T_k=" + std::to_string(t.tk);
  if (!t.selfAttention) s += "  cross-attention";
  s += "  d_model=" + std::to_string(t.dModel) + "  h=" + std::to_string(t.heads) + "  d_k=" + std::to_string(t.dk);
  s += std::string("  mask=") + (t.causal ? "causal" : "none");
  if (cfg.padLastKeys > 0) {
    s += "+pad" + std::to_string(cfg.padLastKeys);
  } else if (t.keyPadding) {
    s += "+padding";
  }
  if (t.attnMask) s += "+attn_mask";
  if (t.window > 0) s += "+window" + std::to_string(t.window) + (t.sinks > 0 ? "+sinks" + std::to_string(t.sinks) : "");
  if (t.kvHeads > 0 && t.kvHeads != t.heads) s += "  kv_heads=" + std::to_string(t.kvHeads);
  if (t.positions == AttnPositions::Rope) {
    char base[32] = "";
    if (t.ropeBase != 10000.0f) std::snprintf(base, sizeof base, ", base %g", static_cast<double>(t.ropeBase));
    s += std::string("  rope(") + ropeStyleName(t.ropeStyle) + base + ")";
  }
  if (t.positions == AttnPositions::Alibi) s += "  alibi";
  if (!t.sinkLogits.empty()) {  // the learned sink: its logit when every head has the same one (random weights)
    const bool same = std::all_of(t.sinkLogits.begin(), t.sinkLogits.end(), [&](float v) { return v == t.sinkLogits[0]; });
    char logit[32];
    std::snprintf(logit, sizeof logit, "%g", static_cast<double>(t.sinkLogits[0]));
    s += same ? std::string("  sink=") + logit : std::string("  learned sinks");
  }
  s += std::string("  scale=") + scaleName(t.scale) + (t.hasBias ? "  bias" : "  no-bias");
  if (seedUsed) s += "  seed=" + std::to_string(cfg.seed);
  return s;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] embeddings
// ---------------------------------------------------------------------------------------------

void embedToken(std::string_view token, std::uint64_t seed, float* out, int dModel) {
  SplitMix64 rng(hashBytes(token) ^ (seed * 0x9E3779B97F4A7C15ull));
  for (int i = 0; i < dModel; ++i) out[i] = rng.normal();
}

void addPositionCode(int position, float* row, int dModel) {
  for (int i = 0; i < dModel; ++i) {
    // Pairs of features share a frequency 1 / 10000^(2i/d_model): sin on the even one, cos on the odd.
    const double freq = std::pow(10000.0, -static_cast<double>(i - (i % 2)) / dModel);
    const double angle = position * freq;
    row[i] += static_cast<float>(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
  }
}

// ---------------------------------------------------------------------------------------------
// [SECTION] buildModel
// ---------------------------------------------------------------------------------------------
namespace {

constexpr const char* kPadToken = "<pad>";

struct Batch {
  std::vector<std::vector<std::string>> tokens;  // (B, T) padded with <pad>
  std::vector<std::vector<bool>> padded;         // (B, T) true where <pad> was added
  std::int64_t maxLen = 0;
};

// Sizes of a batch from the text alone: B and the longest item, computed from the few distinct
// items (B may repeat them a million times) so the memory check runs before any (B, T) table
// of tokens is built.
struct BatchShape {
  std::vector<std::string> items;
  std::int64_t batch = 0, maxLen = 0;
};

Result<BatchShape> batchShape(const std::string& text, int batch, int tokens, const char* which) {
  BatchShape s;
  s.items = splitBatch(text);
  if (s.items.empty()) return makeError(std::string("enter at least one token (the ") + which + " text is empty)");
  if (batch < 0) return makeError("batch size B must be at least 1, got " + std::to_string(batch));
  if (tokens < 0) return makeError("token count must be at least 1, got " + std::to_string(tokens));
  s.batch = batch > 0 ? batch : static_cast<std::int64_t>(s.items.size());
  if (s.batch > (1 << 20)) return makeError("batch size B (" + std::to_string(s.batch) + ") is larger than the limit of 1048576");
  if (tokens > (1 << 20)) return makeError("token count (" + std::to_string(tokens) + ") is larger than the limit of 1048576");
  const auto used = std::min<std::size_t>(s.items.size(), static_cast<std::size_t>(s.batch));
  for (std::size_t i = 0; i < used; ++i) {
    const auto words = splitWords(s.items[i]);
    for (const auto& w : words) {
      if (w == kPadToken) {
        return makeError(std::string("the ") + which + " text contains the word " + kPadToken +
                         ", which mhascope reserves for the padding it adds to shorter batch items; "
                         "write it differently (e.g. pad)");
      }
    }
    s.maxLen = std::max<std::int64_t>(s.maxLen, tokens > 0 ? tokens : static_cast<std::int64_t>(words.size()));
  }
  return s;
}

// Call only after validateConfig: builds the (B, T) token table.
Batch makeBatch(const BatchShape& s, int tokens) {
  Batch out;
  out.maxLen = s.maxLen;
  out.tokens.reserve(static_cast<std::size_t>(s.batch));
  for (std::int64_t b = 0; b < s.batch; ++b) {
    auto t = splitWords(s.items[static_cast<std::size_t>(b) % s.items.size()]);
    if (tokens > 0) t = resizeTokens(std::move(t), tokens);
    out.tokens.push_back(std::move(t));
  }
  for (auto& t : out.tokens) {
    std::vector<bool> pad(t.size(), false);
    while (static_cast<std::int64_t>(t.size()) < out.maxLen) {
      t.emplace_back(kPadToken);
      pad.push_back(true);
    }
    out.padded.push_back(std::move(pad));
  }
  return out;
}

Tensor embedBatch(const Batch& batch, const ModelConfig& cfg) {
  const auto B = static_cast<std::int64_t>(batch.tokens.size()), T = batch.maxLen;
  Tensor x({B, T, cfg.dModel}, {"B", "T", "d_model"});
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) {
      float* row = x.ptr() + (b * T + t) * cfg.dModel;
      embedToken(batch.tokens[static_cast<std::size_t>(b)][static_cast<std::size_t>(t)], cfg.seed, row, cfg.dModel);
      if (cfg.positions) addPositionCode(static_cast<int>(t), row, cfg.dModel);
    }
  }
  return x;
}

// (B, h, T_q, T_k): NaN = keep the computed score; `other`, then `self`, then the cells.
Tensor scoreOverrideTensor(const ScoreOverride& so, const std::vector<std::vector<std::string>>& qTokens,
                           const std::vector<std::vector<std::string>>& kTokens, int heads, int* appliedCells) {
  const auto B = static_cast<std::int64_t>(qTokens.size());
  const auto Tq = static_cast<std::int64_t>(qTokens.empty() ? 0 : qTokens[0].size());
  const auto Tk = static_cast<std::int64_t>(kTokens.empty() ? 0 : kTokens[0].size());
  Tensor t({B, heads, Tq, Tk}, {"B", "h", "T_q", "T_k"});
  std::fill(t.data.begin(), t.data.end(), so.other ? *so.other : std::numeric_limits<float>::quiet_NaN());
  auto cell = [&](std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t k) -> float& {
    return t.data[static_cast<std::size_t>(((b * heads + h) * Tq + q) * Tk + k)];
  };
  if (so.self) {
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t i = 0; i < std::min(Tq, Tk); ++i) cell(b, h, i, i) = *so.self;
  }
  // Positions a cell's query (or key) names in batch item b.
  auto positions = [](int index, const std::string& token, const std::vector<std::string>& tokens) {
    std::vector<std::int64_t> out;
    if (token.empty()) {
      if (index >= 0 && index < static_cast<int>(tokens.size())) out.push_back(index);
    } else {
      for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] == token) out.push_back(static_cast<std::int64_t>(i));
    }
    return out;
  };
  int applied = 0;
  for (const ScoreCell& c : so.cells) {
    if (c.head < 0 || c.head >= heads) continue;
    bool any = false;
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t q : positions(c.query, c.queryToken, qTokens[static_cast<std::size_t>(b)])) {
        for (std::int64_t k : positions(c.key, c.keyToken, kTokens[static_cast<std::size_t>(b)])) {
          cell(b, c.head, q, k) = c.score;
          any = true;
        }
      }
    }
    applied += any ? 1 : 0;
  }
  if (appliedCells) *appliedCells = applied;
  return t;
}

}  // namespace

Status validateConfig(const ModelConfig& cfg, const MemoryUse& use) {
  auto q = batchShape(cfg.text, cfg.batch, cfg.tokens, "query");
  if (!q) return q.error();
  std::int64_t tk = q->maxLen;
  if (cfg.crossAttention) {
    auto kv = batchShape(cfg.kvText, static_cast<int>(q->batch), 0, "key/value");
    if (!kv) return kv.error();
    tk = kv->maxLen;
  }
  if (cfg.padLastKeys < 0) return makeError("padding count must be 0 or more, got " + std::to_string(cfg.padLastKeys));
  if (cfg.padLastKeys > tk) {
    return makeError("cannot pad the last " + std::to_string(cfg.padLastKeys) + " keys: there are only T_k = " +
                     std::to_string(tk));
  }
  AttentionOptions variants;
  variants.heads = cfg.heads;
  variants.causal = cfg.mask == MaskKind::Causal;
  applyVariants(cfg, variants);
  MemoryUse u = withVariants(use, variants);
  u.scoreOverride = u.scoreOverride || !cfg.scoreOverride.empty();
  if (auto s = validateSizes(q->batch, q->maxLen, tk, cfg.dModel, cfg.heads, cfg.memoryBudgetBytes, u); !s) return s;
  return validateVariants(cfg.dModel, variants);
}

Result<Model> buildModel(const ModelConfig& cfg, const MemoryUse& use) {
  if (auto s = validateConfig(cfg, use); !s) return s.error();
  const BatchShape qs = batchShape(cfg.text, cfg.batch, cfg.tokens, "query").value();
  auto q = std::make_optional(makeBatch(qs, cfg.tokens));
  const auto B = static_cast<std::int64_t>(q->tokens.size());
  Batch kv = cfg.crossAttention
                 ? makeBatch(batchShape(cfg.kvText, static_cast<int>(B), 0, "key/value").value(), 0)
                 : *q;
  AttentionInputs inputs;
  inputs.selfAttention = !cfg.crossAttention;
  inputs.query = embedBatch(*q, cfg);
  inputs.query.axes = {"B", "T_q", "d_model"};
  if (cfg.crossAttention) {
    inputs.key = embedBatch(kv, cfg);
    inputs.key.axes = {"B", "T_k", "d_model"};
  } else {
    inputs.key = inputs.query;
    inputs.key.axes = {"B", "T_k", "d_model"};
  }
  inputs.value = inputs.key;
  inputs.queryTokens = q->tokens;
  inputs.keyTokens = kv.tokens;

  // Key padding: the <pad> tokens that even out the batch (the last n keys are added by modelFromInputs).
  const std::int64_t Tk = kv.maxLen;
  std::vector<std::uint8_t> padded(static_cast<std::size_t>(B * Tk), 0);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t k = 0; k < Tk; ++k) {
      padded[static_cast<std::size_t>(b * Tk + k)] = kv.padded[static_cast<std::size_t>(b)][static_cast<std::size_t>(k)];
    }
  }
  return modelFromInputs(cfg, std::move(inputs), padded);
}

Model modelFromInputs(const ModelConfig& cfg, AttentionInputs inputs, const std::vector<std::uint8_t>& paddedKeys) {
  Model m;
  m.inputs = std::move(inputs);
  const std::int64_t B = m.inputs.key.dim(0), Tk = m.inputs.key.dim(1);
  Tensor pad({B, Tk}, {"B", "T_k"});
  bool anyPad = false;
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t k = 0; k < Tk; ++k) {
      const std::size_t i = static_cast<std::size_t>(b * Tk + k);
      const bool p = (i < paddedKeys.size() && paddedKeys[i] != 0) || k >= Tk - cfg.padLastKeys;
      pad.data[i] = p ? 1.0f : 0.0f;
      anyPad = anyPad || p;
    }
  }
  if (anyPad) m.options.keyPaddingMask = std::move(pad);
  m.options.heads = cfg.heads;
  m.options.scale = cfg.scale;
  m.options.causal = cfg.mask == MaskKind::Causal;
  m.options.memoryBudgetBytes = cfg.memoryBudgetBytes;
  applyVariants(cfg, m.options);
  const int kvHeads = kvHeadsOf(m.options);
  const auto dk = static_cast<int>(headDimOf(m.options, cfg.dModel));
  m.weights = initWeights(cfg.dModel, cfg.bias, cfg.seed, kvHeads != cfg.heads || cfg.headDim > 0 ? kvHeads * dk : 0,
                          cfg.headDim > 0 ? cfg.heads * dk : 0);
  if (!cfg.scoreOverride.empty()) {
    m.options.scoresOverride = scoreOverrideTensor(cfg.scoreOverride, m.inputs.queryTokens, m.inputs.keyTokens,
                                                   cfg.heads, nullptr);
  }
  return m;
}

int countAppliedScoreCells(const ModelConfig& cfg, const Model& model) {
  int applied = 0;
  (void)scoreOverrideTensor(cfg.scoreOverride, model.inputs.queryTokens, model.inputs.keyTokens,
                            model.options.heads, &applied);
  return applied;
}

}  // namespace mhascope
