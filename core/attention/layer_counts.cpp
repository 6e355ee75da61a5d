// One attention layer's counts from its sizes (layer_counts.hpp).
#include "attention/layer_counts.hpp"

#include "attention/trace.hpp"
#include "util/format.hpp"

namespace mhascope {

LayerSizes layerSizesOf(const Trace& t) { return {t.dModel, t.heads, t.kvHeads, t.dk, t.hasBias}; }

LayerCounts layerCounts(const LayerSizes& s) {
  LayerCounts c;
  c.dModel = s.dModel;
  c.heads = s.heads;
  c.kvHeads = s.kvHeads > 0 ? s.kvHeads : s.heads;
  c.dk = s.dk > 0 ? s.dk : (s.heads > 0 ? s.dModel / s.heads : 0);
  c.bias = s.bias;
  const std::int64_t q = c.heads * c.dk, kv = c.kvHeads * c.dk;  // h·d_k and N·d_k output features
  c.wq = c.dModel * q;
  c.wk = c.wv = c.dModel * kv;
  c.wo = q * c.dModel;
  c.bq = q;
  c.bk = c.bv = kv;
  c.bo = c.dModel;
  return c;
}

FlopCount LayerCounts::flops(std::int64_t batch, std::int64_t tq, std::int64_t tk) const {
  const double b = static_cast<double>(batch), nq = static_cast<double>(tq), nk = static_cast<double>(tk);
  FlopCount f;
  // A matrix of n entries costs 2·n FLOPs per token it maps.
  f.projections = 2.0 * b * (nq * static_cast<double>(wq + wo) + nk * static_cast<double>(wk + wv));
  const double hdk = static_cast<double>(heads * dk);
  f.attention = 2.0 * b * (nq * nk * hdk /*Q K^T over all heads*/ + nq * nk * hdk /*A V*/);
  return f;
}

std::int64_t LayerCounts::scoreCount(std::int64_t batch, std::int64_t tq, std::int64_t tk) const {
  return batch * heads * tq * tk;
}

double LayerCounts::scoreBytes(std::int64_t batch, std::int64_t tq, std::int64_t tk) const {
  return 4.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(tq) *
         static_cast<double>(tk);
}

std::int64_t LayerCounts::kvCacheBytesPerToken(int bytesPerNumber) const { return 2 * kvHeads * dk * bytesPerNumber; }

std::string parameterFormula(const LayerCounts& c) {
  if (c.heads * c.dk != c.dModel) {  // the general form: h·d_k output features of W_q
    return c.bias ? "2·d_model·h·d_k + 2·d_model·N·d_k + h·d_k + 2·N·d_k + d_model"
                  : "2·d_model·h·d_k + 2·d_model·N·d_k";
  }
  if (c.kvHeads == c.heads) return c.bias ? "4·d_model² + 4·d_model" : "4·d_model²";
  return c.bias ? "2·d_model² + 2·d_model·N·d_k + 2·d_model + 2·N·d_k" : "2·d_model² + 2·d_model·N·d_k";
}

std::string parameterText(const LayerCounts& c) {
  // One attention layer's: a model folder or checkpoint holds more (its MLPs, embeddings and other layers).
  return "one attention layer's parameters " + withThousands(c.params()) + " (" + parameterFormula(c) + ")";
}

}  // namespace mhascope
