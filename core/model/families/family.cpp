// The family table's helpers (see family.hpp): shapes from the config, stored names, trait names.
#include "model/families/family.hpp"

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

const char* normName(NormKind k) { return k == NormKind::LayerNorm ? "LayerNorm" : "RMSNorm"; }
const char* mlpName(MlpKind k) { return k == MlpKind::GeluTanh ? "gelu_new" : "SwiGLU"; }

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
  }
  return true;
}

std::int64_t dimSize(Dim d, const ModelSpec& s) {
  const std::int64_t dk = s.dk(), kv = static_cast<std::int64_t>(s.kvHeads) * dk;
  switch (d) {
    case Dim::None: return 0;
    case Dim::Model: return s.dModel;
    case Dim::Heads: return static_cast<std::int64_t>(s.heads) * dk;
    case Dim::Kv: return kv;
    case Dim::Qkv: return static_cast<std::int64_t>(s.heads) * dk + 2 * kv;
    case Dim::Ff: return s.dFf;
    case Dim::Vocab: return s.vocab;
    case Dim::Positions: return s.maxPositions;
  }
  return 0;
}

Shape storedShape(const TensorName& t, const ModelSpec& spec) {
  if (t.cols == Dim::None) return {dimSize(t.rows, spec)};
  return {dimSize(t.rows, spec), dimSize(t.cols, spec)};
}

std::string tensorName(const TensorName& t, const std::string& prefix, int layer) {
  std::string name = t.name;
  if (const auto at = name.find("{i}"); at != std::string::npos) name.replace(at, 3, std::to_string(layer));
  // lm_head sits outside the base model in every Hugging Face family (GPT2LMHeadModel's
  // "transformer." and LlamaForCausalLM's "model." are the base model's names).
  return t.role == TensorRole::Unembedding ? name : prefix + name;
}

}  // namespace mhascope::model
