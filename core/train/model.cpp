// The model's forward (calling the engine for attention) and its backward, layer by layer.
#include "train/model.hpp"

#include <algorithm>

#include "train/mha_backward.hpp"

namespace mhascope::train {

void applyVariants(const GptConfig& cfg, AttentionOptions& opt) {
  opt.kvHeads = cfg.kv();
  opt.positions = cfg.positions == TrainPositions::Rope    ? AttnPositions::Rope
                  : cfg.positions == TrainPositions::Alibi ? AttnPositions::Alibi
                                                           : AttnPositions::None;
  opt.ropeBase = cfg.ropeBase;
  opt.ropeStyle = RopeStyle::Half;  // Hugging Face Llama's rotate_half, as scripts/mhascope_model.py
}

Status validateBatch(const GptParams& p, const Batch& b) {
  if (b.batch < 1 || b.seq < 1) return makeError("a batch needs B >= 1 and T >= 1");
  if (b.seq > p.cfg.seqLen) {
    return makeError("sequence length " + std::to_string(b.seq) + " exceeds the model's T_max = " +
                     std::to_string(p.cfg.seqLen));
  }
  const std::size_t n = static_cast<std::size_t>(b.batch) * static_cast<std::size_t>(b.seq);
  if (b.tokens.size() != n || b.targets.size() != n) return makeError("batch tokens/targets do not have B*T entries");
  for (std::size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= p.cfg.vocab || b.targets[i] < -1 || b.targets[i] >= p.cfg.vocab) {
      return makeError("token " + std::to_string(b.tokens[i]) + " / target " + std::to_string(b.targets[i]) +
                       " at index " + std::to_string(i) + " is outside the vocabulary of " +
                       std::to_string(p.cfg.vocab));
    }
  }
  return Ok{};
}

Result<LossResult> forward(const GptParams& p, const Batch& b, ForwardCache& c, const std::vector<std::uint8_t>* readCuts) {
  c.hasDLogits = false;
  if (auto s = validateBatch(p, b); !s) return s.error();
  const std::size_t heads = static_cast<std::size_t>(p.cfg.heads);
  if (readCuts && readCuts->size() != p.blocks.size() * heads) {
    return makeError("the read cuts are for " + std::to_string(readCuts->size()) + " heads; the model has " +
                     std::to_string(p.blocks.size() * heads));
  }
  const bool cutting = readCuts && std::any_of(readCuts->begin(), readCuts->end(), [](std::uint8_t m) { return m != 0; });
  // removed[r]: the sum of the cut heads' terms that later layers' query (0), key (1), value (2) do not see.
  RowMatrix removed[3];
  bool anyRemoved = false;
  const Eigen::Index B = b.batch, T = b.seq, d = p.cfg.dModel, rows = B * T;
  Workspace& ws = c.work;
  RowMatrix& x = ws.x;
  x.resize(rows, d);
  const bool learned = p.cfg.learnedPositions();  // else positions act inside attention (RoPE, ALiBi)
  for (Eigen::Index r = 0; r < rows; ++r) {
    x.row(r) = p.emb.row(b.tokens[static_cast<std::size_t>(r)]);
    if (learned) x.row(r) += p.pos.row(r % T);
  }
  c.layers.resize(p.blocks.size());
  AttentionOptions opt;
  opt.heads = p.cfg.heads;
  opt.causal = true;
  opt.recordEveryStage = false;
  opt.memoryBudgetBytes = c.memoryBudgetBytes;  // backward reads query, the heads, weights and concat only
  applyVariants(p.cfg, opt);
  AttentionInputs& in = ws.attnIn;
  RowMatrix &a = ws.a, &y = ws.y;
  for (std::size_t l = 0; l < p.blocks.size(); ++l) {
    const BlockParams& bp = p.blocks[l];
    LayerCache& lc = c.layers[l];
    layerNormForward(x, bp.ln1w, bp.ln1b, a, lc.ln1);
    in.query.reshape({B, T, d}, {"B", "T_q", "d_model"});
    std::copy(a.data(), a.data() + a.size(), in.query.data.begin());
    in.key = in.query;
    in.value = in.query;
    in.selfAttention = true;
    if (anyRemoved) {  // each input reads LN1 of the stream without the heads cut from it
      Tensor* inputs[3] = {&in.query, &in.key, &in.value};
      LayerNormCache scratch;
      for (int r = 0; r < 3; ++r) {
        if (removed[r].size() == 0) continue;
        RowMatrix xr = x - removed[r];
        layerNormForward(xr, bp.ln1w, bp.ln1b, a, scratch);
        std::copy(a.data(), a.data() + a.size(), inputs[r]->data.begin());
      }
      in.selfAttention = false;
    }
    const MhaWeights w = mhaWeightsFromPacked(bp.inW, bp.inB, bp.outW, bp.outB);
    if (auto s = mhascope::forward(in, w, opt, lc.attn); !s) return s.error();
    x += ConstMatrixMap(lc.attn.tensor(StageId::Output).ptr(), rows, d);
    if (cutting) {
      const Eigen::Index dk = d / p.cfg.heads;
      const ConstMatrixMap concat(lc.attn.tensor(StageId::Concat).ptr(), rows, d);  // (B*T, d), head i in columns i*d_k
      for (std::size_t i = 0; i < heads; ++i) {
        const std::uint8_t m = (*readCuts)[l * heads + i];
        for (int r = 0; r < 3; ++r) {
          if (!(m & (1u << r))) continue;
          if (removed[r].size() == 0) removed[r] = RowMatrix::Zero(rows, d);
          const Eigen::Index c0 = static_cast<Eigen::Index>(i) * dk;
          removed[r].noalias() += concat.middleCols(c0, dk) * bp.outW.middleCols(c0, dk).transpose();
          anyRemoved = true;
        }
      }
    }
    if (p.cfg.mlp) {
      lc.xMid = x;
      layerNormForward(x, bp.ln2w, bp.ln2b, lc.ln2Out, lc.ln2);
      linearForward(lc.ln2Out, bp.fc1W, bp.fc1b, lc.pre);
      geluForward(lc.pre, lc.act);
      linearForward(lc.act, bp.fc2W, bp.fc2b, y);
      x += y;
    }
  }
  layerNormForward(x, p.lnfW, p.lnfB, c.lnfOut, c.lnf);
  linearForward(c.lnfOut, p.outW, p.outB, c.logits);
  // The loss and its gradient in one pass over the logits; backward() reuses the gradient.
  const CrossEntropyResult ce = crossEntropy(c.logits, b.targets, &ws.dLogits);
  c.hasDLogits = true;
  return LossResult{ce.loss, ce.count, ce.correct};
}

void backward(const GptParams& p, const Batch& b, ForwardCache& c, GptParams& g) {
  const Eigen::Index T = b.seq, rows = static_cast<Eigen::Index>(b.batch) * T;
  for (auto& np : g.list()) np.value->setZero();
  Workspace& ws = c.work;
  RowMatrix &dLogits = ws.dLogits, &dx = ws.dx, &tmp = ws.tmp, &dAct = ws.dAct, &dPre = ws.dPre, &dLn = ws.dLn,
            &dA = ws.dA;
  if (!c.hasDLogits) crossEntropy(c.logits, b.targets, &dLogits);
  linearBackward(dLogits, c.lnfOut, p.outW, &tmp, g.outW, g.outB);
  layerNormBackward(tmp, p.lnfW, c.lnf, dx, g.lnfW, g.lnfB);  // dx: gradient of the residual stream
  for (std::size_t li = p.blocks.size(); li-- > 0;) {
    const BlockParams& bp = p.blocks[li];
    BlockParams& gb = g.blocks[li];
    const LayerCache& lc = c.layers[li];
    if (p.cfg.mlp) {
      linearBackward(dx, lc.act, bp.fc2W, &dAct, gb.fc2W, gb.fc2b);
      geluBackward(lc.pre, dAct, dPre);
      linearBackward(dPre, lc.ln2Out, bp.fc1W, &tmp, gb.fc1W, gb.fc1b);
      layerNormBackward(tmp, bp.ln2w, lc.ln2, dLn, gb.ln2w, gb.ln2b);
      dx += dLn;
    }
    mhaBackward(lc.attn, bp.inW, bp.outW, dx, dA, gb.inW, gb.inB, gb.outW, gb.outB, &ws);
    layerNormBackward(dA, bp.ln1w, lc.ln1, dLn, gb.ln1w, gb.ln1b);
    dx += dLn;
  }
  const bool learned = p.cfg.learnedPositions();
  for (Eigen::Index r = 0; r < rows; ++r) {
    g.emb.row(b.tokens[static_cast<std::size_t>(r)]) += dx.row(r);
    if (learned) g.pos.row(r % T) += dx.row(r);
  }
}

}  // namespace mhascope::train
