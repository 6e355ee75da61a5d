// The family table's helpers (see family.hpp): shapes from the config, stored names, trait names.
#include "model/families/family.hpp"

#include <cmath>

#include "util/format.hpp"

namespace mhascope::model {

bool perLayer(TensorRole r) {
  switch (r) {
    case TensorRole::TokenEmbedding:
    case TensorRole::PositionEmbedding:
    case TensorRole::FinalNorm:
    case TensorRole::FinalNormBias:
    case TensorRole::Unembedding: return false;
    default: return true;
  }
}

bool perExpert(TensorRole r) {
  switch (r) {
    case TensorRole::ExpertIn:
    case TensorRole::ExpertUp:
    case TensorRole::ExpertGateUpFused:
    case TensorRole::ExpertGateUpBias:
    case TensorRole::ExpertOut:
    case TensorRole::ExpertOutBias: return true;
    default: return false;
  }
}

namespace {
// A mixture layer's own tensors besides its experts': the router's and the shared experts'.
bool mixtureRole(TensorRole r) {
  return r == TensorRole::Router || r == TensorRole::RouterBias || r == TensorRole::RouterChoiceBias ||
         r == TensorRole::SharedIn || r == TensorRole::SharedUp || r == TensorRole::SharedOut;
}
bool denseMlpRole(TensorRole r) {
  return r == TensorRole::MlpIn || r == TensorRole::MlpInBias || r == TensorRole::MlpUp ||
         r == TensorRole::MlpGateUpFused || r == TensorRole::MlpOut || r == TensorRole::MlpOutBias;
}
}  // namespace

bool mlpRole(TensorRole r) {
  return denseMlpRole(r) || perExpert(r) || mixtureRole(r) || r == TensorRole::Norm2 ||
         r == TensorRole::Norm2Bias || r == TensorRole::MlpOutNorm;
}

const char* normName(NormKind k) { return k == NormKind::LayerNorm ? "LayerNorm" : "RMSNorm"; }
const char* mlpName(MlpKind k) {
  switch (k) {
    case MlpKind::GeluTanh: return "gelu_new";
    case MlpKind::SwiGlu: return "SwiGLU";
    case MlpKind::GeGluTanh: return "gelu_pytorch_tanh GeGLU";
    case MlpKind::ClampedSwiGlu: return "clamped SwiGLU";
  }
  return "?";
}

const char* Family::key(SpecField f) const {
  for (const ConfigKey& k : keys) {
    if (k.field == f) return k.key;
  }
  return nullptr;
}

const TensorName* Family::tensor(TensorRole r) const {
  for (const TensorName& t : tensors) {
    if (t.role == r) return &t;
  }
  return nullptr;
}

bool needed(const TensorName& t, const ModelSpec& spec) {
  switch (t.need) {
    case Need::Always: return true;
    case Need::QkvBias: return spec.qkvBias;
    case Need::OutputBias: return spec.outputBias;
    case Need::Untied: return !spec.tiedEmbeddings;
    case Need::QLora: return spec.latent.qRank > 0;
    case Need::NoQLora: return spec.latent.qRank == 0;
    case Need::Shared: return spec.moe.sharedFf > 0;
  }
  return true;
}

bool neededAt(const TensorName& t, const ModelSpec& spec, int layer) {
  if (!needed(t, spec)) return false;
  if (denseMlpRole(t.role)) return !spec.moe.mixtureAt(layer);
  if (perExpert(t.role) || mixtureRole(t.role)) return spec.moe.mixtureAt(layer);
  return true;
}

std::int64_t dimSize(Dim d, const ModelSpec& s) {
  const std::int64_t dk = s.dk(), kv = static_cast<std::int64_t>(s.kvHeads) * dk;
  switch (d) {
    case Dim::None: return 0;
    case Dim::Model: return s.dModel;
    case Dim::Heads: return static_cast<std::int64_t>(s.heads) * dk;
    case Dim::HeadCount: return s.heads;
    case Dim::HeadDim: return dk;
    case Dim::Kv: return kv;
    case Dim::Qkv: return static_cast<std::int64_t>(s.heads) * dk + 2 * kv;
    case Dim::Ff: return s.dFf;
    case Dim::FfPair: return 2 * static_cast<std::int64_t>(s.dFf);
    case Dim::Vocab: return s.vocab;
    case Dim::Positions: return s.maxPositions;
    case Dim::Experts: return s.moe.experts;
    case Dim::ExpertFf: return s.moe.expertFf;
    case Dim::ExpertFfPair: return 2 * static_cast<std::int64_t>(s.moe.expertFf);
    case Dim::SharedFf: return s.moe.sharedFf;
    case Dim::QRank: return s.latent.qRank;
    case Dim::LatentQ: return static_cast<std::int64_t>(s.heads) * (s.latent.nopeDim + s.latent.ropeDim);
    case Dim::LatentKvA: return static_cast<std::int64_t>(s.latent.kvRank) + s.latent.ropeDim;
    case Dim::KvRank: return s.latent.kvRank;
    case Dim::LatentKvB: return static_cast<std::int64_t>(s.heads) * (s.latent.nopeDim + s.latent.valueDim);
    case Dim::LatentV: return static_cast<std::int64_t>(s.heads) * s.latent.valueDim;
  }
  return 0;
}

Shape storedShape(const TensorName& t, const ModelSpec& spec) {
  Shape shape;
  if (perExpert(t.role) && t.experts == ExpertStore::Stacked) shape.push_back(spec.moe.experts);
  shape.push_back(dimSize(t.rows, spec));
  if (t.cols != Dim::None) shape.push_back(dimSize(t.cols, spec));
  return shape;
}

int storedCopies(const TensorName& t, const ModelSpec& spec) {
  return perExpert(t.role) && t.experts == ExpertStore::Named ? spec.moe.experts : 1;
}

std::string tensorName(const TensorName& t, const std::string& prefix, int layer, int expert) {
  std::string name = t.name;
  if (const auto at = name.find("{i}"); at != std::string::npos) name.replace(at, 3, std::to_string(layer));
  if (const auto at = name.find("{e}"); at != std::string::npos) name.replace(at, 3, std::to_string(expert));
  // lm_head sits outside the base model in every Hugging Face family (GPT2LMHeadModel's
  // "transformer." and LlamaForCausalLM's "model." are the base model's names).
  return t.role == TensorRole::Unembedding ? name : prefix + name;
}

std::string layerKindsText(const ModelSpec& s) {
  if (s.layerKinds.empty()) return "";
  bool windows = false, positions = false, bases = false;  // what differs between layers
  const LayerKind first = s.layerKind(0);
  for (int l = 0; l < s.layers; ++l) {
    const LayerKind k = s.layerKind(l);
    windows = windows || k.window != first.window;
    positions = positions || k.rope != first.rope;
    bases = bases || k.ropeTheta != first.ropeTheta;
  }
  if (!windows && !positions && !bases) return "";
  auto describe = [&](const LayerKind& k) {
    std::string out;
    auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
    if (windows) add(k.window > 0 ? "W = " + std::to_string(k.window) : "full");
    if (positions) add(k.rope ? "RoPE" : "no positions");
    if (bases && k.rope) add("theta " + formatGeneral(k.ropeTheta > 0 ? k.ropeTheta : s.ropeTheta, 9));
    return out;
  };
  std::string out;
  for (int l = 0; l < s.layers;) {
    int end = l;
    while (end + 1 < s.layers && describe(s.layerKind(end + 1)) == describe(s.layerKind(l))) ++end;
    out += (out.empty() ? "" : "; ") + (end == l ? "layer " + std::to_string(l)
                                                : "layers " + std::to_string(l) + "-" + std::to_string(end)) +
           " " + describe(s.layerKind(l));
    l = end + 1;
  }
  return out;
}

std::vector<FamilyNote> familyNotes(const ModelSpec& s) {
  std::vector<FamilyNote> notes;
  const Family& f = *s.family;
  const std::string dk = std::to_string(s.dk());
  switch (f.qkNorm) {
    case QkNormKind::None: break;
    case QkNormKind::PerHead:
      notes.push_back({"q/k norm", "RMSNorm of each head's q and k (d_k = " + dk + " gains each), after the split, "
                                   "before RoPE"});
      break;
    case QkNormKind::WholeProjection:
      notes.push_back({"q/k norm", "RMSNorm of the whole q and k projections (h·d_k = " +
                                       std::to_string(static_cast<std::int64_t>(s.heads) * s.dk()) + " and N·d_k = " +
                                       std::to_string(static_cast<std::int64_t>(s.kvHeads) * s.dk()) +
                                       " gains), before the split: the statistics mix heads"});
      break;
  }
  if (s.latent.enabled()) {
    const LatentSpec& a = s.latent;
    const std::int64_t h = s.heads, perHead = static_cast<std::int64_t>(a.nopeDim) + a.ropeDim + a.valueDim,
                       cached = static_cast<std::int64_t>(a.kvRank) + a.ropeDim;
    notes.push_back({"latent attention",
                     std::string(a.qRank > 0 ? "q = q_b_proj(RMSNorm(q_a_proj x)), r_q = " + std::to_string(a.qRank)
                                             : "q = q_proj x") +
                         "; every head's k_nope (d_n = " + std::to_string(a.nopeDim) + ") and v (d_v = " +
                         std::to_string(a.valueDim) + ") from one normed latent c of r = " + std::to_string(a.kvRank) +
                         ", and one rotary key k_r of d_r = " + std::to_string(a.ropeDim) + " shared by all heads (" +
                         (a.interleaved ? "adjacent pairs" : "rotate-half pairs") + "); scores x " +
                         formatGeneral(a.scale, 6) + (s.yarn.enabled ? " ((d_n + d_r)^-1/2 times YaRN's mscale^2)" : " ((d_n + d_r)^-1/2)")});
    // What a decoder keeps per token and layer: the latent and the rotary key, against every head's keys and values
    // (MHA), 8 K/V heads (GQA of the same widths) and one (MQA).
    std::string text = std::to_string(cached) + " numbers per token and layer (r + d_r), against " +
                       withThousands(h * perHead) + " for MHA with these heads (h (d_n + d_r + d_v))";
    if (h > 8) text += ", " + withThousands(8 * perHead) + " for GQA with 8 K/V heads";
    text += ", " + withThousands(perHead) + " for MQA";
    notes.push_back({"cache per token", text});
  }
  if (s.storedExtraLayers > 0) {
    notes.push_back({"prediction layers", std::to_string(s.storedExtraLayers) + " more layer" +
                                              (s.storedExtraLayers == 1 ? "" : "s") + " stored after layer " +
                                              std::to_string(s.layers - 1) +
                                              " (num_nextn_predict_layers), left unread: they predict a further token "
                                              "in training and speculative decoding, not the next one"});
  }
  if (s.queryPreAttnScalar > 0) {
    notes.push_back({"score scale", "query_pre_attn_scalar^-1/2 = 1/sqrt(" + formatGeneral(s.queryPreAttnScalar, 9) +
                                        ") instead of 1/sqrt(d_k = " + dk + ")"});
  }
  if (s.attnSoftcap > 0) {
    notes.push_back({"score softcap", "c tanh(s / c), c = " + formatGeneral(s.attnSoftcap, 9) +
                                          ", after the scale and before the mask"});
  }
  if (s.finalSoftcap > 0) notes.push_back({"logit softcap", "c tanh(logits / c), c = " + formatGeneral(s.finalSoftcap, 9)});
  if (f.blockNorms == BlockNorms::Post) notes.push_back({"block norms", "post-norm: x + norm(sublayer(x))"});
  if (f.blockNorms == BlockNorms::Sandwich) {
    notes.push_back({"block norms", "four per block: x + norm_out(sublayer(norm_in(x)))"});
  }
  if (f.normGainOffset != 0.0f) notes.push_back({"norm gains", "(1 + w): the files store w zero-centred"});
  if (f.scaleEmbeddings) notes.push_back({"embeddings", "times sqrt(d_model) = " + formatGeneral(std::sqrt(s.dModel), 6)});
  if (const std::string layers = layerKindsText(s); !layers.empty()) notes.push_back({"layers differ", layers});
  if (f.tensor(TensorRole::Sinks)) {
    notes.push_back({"attention sinks", "a learned logit per head (" + std::to_string(s.heads) +
                                            ") joins each row's softmax as one more column and is dropped: the shown "
                                            "weights sum to 1 minus the sink's share"});
  }
  if (s.moe.experts > 0) {
    const MixtureSpec& m = s.moe;
    std::string text = "mixture of experts: " + std::to_string(m.experts) + " experts, " + std::to_string(m.perToken) +
                       " per token, " + routerRuleText(m.rule, m.perToken) + "; each expert " + mlpName(f.mlp) +
                       " of F = " + std::to_string(m.expertFf);
    if (f.mlp == MlpKind::ClampedSwiGlu) {
      const std::string c = formatGeneral(s.swigluLimit, 6);
      text += " ((u + 1) g sigmoid(1.702 g), the gate at most " + c + ", the up within +-" + c + ")";
    }
    bool stacked = false;
    for (const TensorName& t : f.tensors) stacked = stacked || (perExpert(t.role) && t.experts == ExpertStore::Stacked);
    if (stacked) text += "; all experts in one tensor a layer, only the chosen ones read";
    if (m.anyDense(s.layers)) {
      std::string dense;
      for (int l = 0; l < s.layers; ++l) {
        if (!m.mixtureAt(l)) dense += (dense.empty() ? "" : ", ") + std::to_string(l);
      }
      text += "; dense MLP (F = " + std::to_string(s.dFf) + ") on layer" + (dense.find(',') != std::string::npos ? "s " : " ") + dense;
    }
    notes.push_back({"experts", text});
  }
  return notes;
}

}  // namespace mhascope::model
