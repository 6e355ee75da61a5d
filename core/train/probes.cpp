// Head-role scores from the recorded attention weights.
#include "train/probes.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/head_scores.hpp"
#include "attention/random.hpp"

namespace mhascope::train {

Batch repeatedTokensProbe(int vocab, int seq, int batch) {
  Batch b;
  b.batch = batch;
  b.seq = seq;
  b.tokens.assign(static_cast<std::size_t>(batch) * static_cast<std::size_t>(seq), 0);
  b.targets.assign(b.tokens.size(), -1);
  const int n = std::max(1, seq / 2);
  SplitMix64 rng(0x5245504541540000ull /*"REPEAT"*/ ^ static_cast<std::uint64_t>(vocab));
  std::vector<int> half(static_cast<std::size_t>(n));
  for (int item = 0; item < batch; ++item) {
    for (int& v : half) v = static_cast<int>(rng.next() % static_cast<std::uint64_t>(std::max(1, vocab)));
    for (int t = 0; t < seq; ++t) {
      b.tokens[static_cast<std::size_t>(item) * static_cast<std::size_t>(seq) + static_cast<std::size_t>(t)] =
          half[static_cast<std::size_t>(t % n)];
    }
  }
  return b;
}

// The role scores are the shared definitions of analysis/head_scores.hpp (the same a real
// model's heads are measured by), summed over the batch's sequences; this file adds only what
// needs the trained model's weights (copying).
namespace {

std::vector<TokenRepeats> repeatsOf(const Batch& b) {
  std::vector<TokenRepeats> r;
  for (int item = 0; item < b.batch; ++item) r.emplace_back(b.tokens.data() + item * b.seq, b.seq);
  return r;
}

}  // namespace

std::vector<HeadScores> headScores(const ForwardCache& cache, const Batch& b) {
  std::vector<HeadScores> out;
  const int T = b.seq;
  const std::vector<TokenRepeats> repeats = repeatsOf(b);
  for (const LayerCache& lc : cache.layers) {
    const Tensor& w = lc.attn.tensor(StageId::Weights);  // (B, h, T, T)
    const int h = lc.attn.heads;
    for (int i = 0; i < h; ++i) {
      HeadScoreSums sums;
      for (int item = 0; item < b.batch; ++item) {
        sums.addRoles(w.ptr() + (static_cast<std::int64_t>(item) * h + i) * T * T, repeats[static_cast<std::size_t>(item)]);
      }
      const mhascope::HeadScores m = sums.scores();
      HeadScores s;
      s.prevToken = m.prevToken;
      s.prevTokenNew = m.prevTokenNew;
      s.prevTokenSeen = m.prevTokenSeen;
      s.self = m.self;
      s.firstToken = m.sink;
      s.entropy = m.entropy;
      out.push_back(s);
    }
  }
  return out;
}

void inductionScores(const GptParams& p, const ForwardCache& cache, const Batch& b, std::vector<HeadScores>& scores) {
  const int T = b.seq, d = p.cfg.dModel, V = p.cfg.vocab;
  RowMatrix direct(1, d), logits(1, V);
  const std::vector<TokenRepeats> repeats = repeatsOf(b);
  for (std::size_t l = 0; l < cache.layers.size(); ++l) {
    const Trace& tr = cache.layers[l].attn;
    const Tensor& w = tr.tensor(StageId::Weights);  // (B, h, T, T)
    const Tensor& concat = tr.tensor(StageId::Concat);  // (B, T, d_model), head i in columns i*d_k …
    const int h = tr.heads, dk = d / h;
    const RowMatrix& wo = p.blocks[l].outW;  // (d_model, d_model); y = concat W_o^T + b
    for (int i = 0; i < h; ++i) {
      HeadScores& s = scores[l * static_cast<std::size_t>(h) + static_cast<std::size_t>(i)];
      HeadScoreSums matching;
      double copied = 0, n = 0;
      for (int item = 0; item < b.batch; ++item) {
        const int* tok = b.tokens.data() + item * T;
        const float* a = w.ptr() + (static_cast<std::int64_t>(item) * h + i) * T * T;
        const TokenRepeats& r = repeats[static_cast<std::size_t>(item)];
        matching.addPrefixMatching(a, r);
        // Copying is scored over the same queries as prefix matching.
        for (int t = 2; t < T; ++t) {
          if (!r.hasEarlierCopy(t)) continue;
          const float* row = a + static_cast<std::int64_t>(t) * T;
          n += 1;
          // Copying: this head's term of the attention output, O_i W_o^(i)^T (d_model), read by
          // the unembedding through the final LayerNorm's centring and weights. Its 1/sigma
          // scale is positive and the same for every logit, so the top logit does not need it.
          const std::int64_t q = static_cast<std::int64_t>(item) * T + t;  // row of (B·T, d_model)
          const ConstMatrixMap oi(concat.ptr() + q * d + i * dk, 1, dk);
          direct.noalias() = oi * wo.middleCols(i * dk, dk).transpose();
          direct.array() -= direct.mean();
          direct.array() *= p.lnfW.array();
          logits.noalias() = direct * p.outW.transpose();
          int attended = 0;
          for (int k = 1; k <= t; ++k) {
            if (row[k] > row[attended]) attended = k;
          }
          Eigen::Index top = 0;
          logits.row(0).maxCoeff(&top);
          copied += static_cast<int>(top) == tok[attended] ? 1.0 : 0.0;
        }
      }
      s.induction = matching.scores().induction;
      s.copying = n > 0 ? copied / n : 0.0;
    }
  }
}

Snapshot takeSnapshot(const ForwardCache& cache, std::int64_t step) {
  Snapshot s;
  s.step = step;
  s.layers = static_cast<int>(cache.layers.size());
  if (cache.layers.empty()) return s;
  s.heads = cache.layers[0].attn.heads;
  s.seq = cache.layers[0].attn.tq;
  const std::size_t per = static_cast<std::size_t>(s.heads) * static_cast<std::size_t>(s.seq * s.seq);
  for (const LayerCache& lc : cache.layers) {
    const float* p = lc.attn.tensor(StageId::Weights).ptr();  // item 0 comes first
    s.weights.insert(s.weights.end(), p, p + per);
  }
  return s;
}

RoleScores roleScoresOf(const HeadScores& s, int layer) {
  // The repeated probe gives every head both prefix matching and copying: its second half repeats every token.
  return {.layer = layer, .prevToken = s.prevToken, .prevTokenNew = s.prevTokenNew, .self = s.self,
          .firstToken = s.firstToken, .entropy = s.entropy, .prefixMatching = s.induction, .copying = s.copying};
}

bool isInductionHead(const HeadScores& s, int layer) { return mhascope::isInductionHead(roleScoresOf(s, layer)); }

std::string roleOf(const HeadScores& s, int layer) { return mhascope::roleOf(roleScoresOf(s, layer)); }

}  // namespace mhascope::train
