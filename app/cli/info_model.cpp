// `mhascope info --model DIR` (see info_model.hpp).
#include "options.hpp"
#include "info_model.hpp"

#include <cstdio>
#include <set>
#include <vector>

#include "attention/engine.hpp"
#include "attention/latent.hpp"
#include "attention/model.hpp"
#include "attention/random.hpp"
#include "model/forward.hpp"
#include "command_common.hpp"
#include "model/model_folder.hpp"
#include "util/format.hpp"

namespace mhascope::cli {

int cmdInfoModel(const std::string& dir, const CLI::App& info) {
  std::vector<std::string> clash;
  for (const CLI::Option* o : info.get_options()) {
    if (o->count() > 0 && o->get_name() != "--model" && o->get_name() != "--help") clash.push_back(o->get_name());
  }
  if (!clash.empty()) {
    std::string list;
    for (const auto& c : clash) list += (list.empty() ? "" : ", ") + c;
    return fail("--model takes the sizes and weights from the folder's config.json and safetensors; drop " + list);
  }
  if (auto st = printModelFolderSummary(dir); !st) return fail(st.error().message);
  return 0;
}

namespace {
// A latent model's cache (the latent and the rotary key, against every head's keys and values) and its absorbed form
// checked on layer 0's own projections over 8 seeded random rows: the largest difference from the expanded form.
Status printLatentCheck(const model::ModelFolder& folder) {
  const model::ModelSpec& s = folder.spec();
  const LatentSizes z = model::latentSizesOf(s);
  std::printf("  %-22s %s per token (L * (r + d_r) = %lld numbers of 4 bytes; %s in 16-bit; MHA's keys and values: %s)\n",
              "KV cache", formatBytes(4.0 * s.layers * static_cast<double>(z.cachedPerToken())).c_str(),
              static_cast<long long>(s.layers * z.cachedPerToken()),
              formatBytes(2.0 * s.layers * static_cast<double>(z.cachedPerToken())).c_str(),
              formatBytes(4.0 * s.layers * static_cast<double>(z.expandedPerToken())).c_str());
  auto lw = folder.attentionLayer(0);
  if (!lw) return lw.error();
  RowMatrix x(8, s.dModel);
  SplitMix64 rng(0x696E666Full);  // "info"
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = rng.uniform(-1.0f, 1.0f);
  auto r = latentAttention(x, *lw->latent, z);
  if (!r) return r.error();
  std::printf("  %-22s W_uk folded into the query, W_uv after the weighted sum of latents, on layer 0's weights over 8 "
              "random rows: weights differ from the expanded form's by at most %.3g, outputs by %.3g\n",
              "absorbed form", r->maxWeightDiff, r->maxOutputDiff);
  return Ok{};
}
}  // namespace

Status printModelFolderSummary(const std::string& dir) {
  auto folder = model::ModelFolder::open(dir);
  if (!folder) return folder.error();
  const model::ModelSpec& s = folder->spec();
  const model::Family& family = *s.family;
  std::set<std::string> files;
  for (const auto& [name, t] : folder->store().tensors()) files.insert(t.file);

  std::printf("Model folder %s\n", folder->dir().c_str());
  std::printf("  %-22s %s\n", "architecture", family.modelType);
  std::printf("  %-22s %s in %zu file%s, %s\n", "weights", folder->dtype().c_str(), files.size(),
              files.size() == 1 ? "" : "s", formatBytes(static_cast<double>(folder->store().fileBytes())).c_str());
  if (!folder->store().note().empty()) std::printf("  %-22s %s\n", "weights read from", folder->store().note().c_str());
  std::printf("  %-22s %d\n", "layers L", s.layers);
  std::printf("  %-22s %d\n", "d_model", s.dModel);
  if (s.latent.enabled()) {  // latent attention: q and k meet in d_n + d_r, the values are d_v wide
    std::printf("  %-22s %d (q and k d_n + d_r = %d + %d, v d_v = %d)\n", "heads h", s.heads, s.latent.nopeDim,
                s.latent.ropeDim, s.latent.valueDim);
  } else if (s.headDim > 0 && s.heads * s.headDim != s.dModel) {
    std::printf("  %-22s %d (d_k = %d from head_dim: h·d_k = %d, not d_model)\n", "heads h", s.heads, s.dk(),
                s.heads * s.dk());
  } else {
    std::printf("  %-22s %d (d_k = %d)\n", "heads h", s.heads, s.dk());
  }
  if (s.latent.enabled()) {
    std::printf("  %-22s none: every head's from one latent of r = %d (multi-head latent attention)\n", "K/V heads",
                s.latent.kvRank);
  } else if (s.kvHeads == s.heads) {
    std::printf("  %-22s %d (multi-head attention)\n", "K/V heads N", s.kvHeads);
  } else {
    std::printf("  %-22s %d (grouped-query: %d query heads per K/V head)\n", "K/V heads N", s.kvHeads, s.heads / s.kvHeads);
  }
  if (s.moe.experts > 0 && !s.moe.anyDense(s.layers)) {  // every MLP a mixture: its experts' width (below)
    std::printf("  %-22s %d per expert (%s)\n", "MLP width", s.moe.expertFf, model::mlpName(family.mlp));
  } else {
    std::printf("  %-22s %d (%s)\n", "MLP width", s.dFf, model::mlpName(family.mlp));
  }
  std::printf("  %-22s %d\n", "vocabulary V", s.vocab);
  if (!s.rope()) {
    std::printf("  %-22s learned, %d\n", "positions", s.maxPositions);
  } else {
    std::string scaling;
    if (s.ropeScaling.enabled) scaling = ", llama3 scaling x" + formatGeneral(s.ropeScaling.factor, 6);
    if (s.yarn.enabled) {
      scaling = ", YaRN x" + formatGeneral(s.yarn.factor, 6) + " over " + formatGeneral(s.yarn.originalMaxPositions, 9) +
                " positions (beta " + formatGeneral(s.yarn.betaFast, 6) + " / " + formatGeneral(s.yarn.betaSlow, 6) +
                ", cos and sin x" + formatGeneral(s.yarn.attentionFactor, 6) + ")";
    }
    const bool half = s.latent.enabled() ? !s.latent.interleaved : family.ropeStyle == RopeStyle::Half;
    std::printf("  %-22s RoPE theta %s, %s%s; %s %d\n", "positions", formatGeneral(s.ropeTheta, 9).c_str(),
                half ? "rotate-half" : "interleaved", scaling.c_str(),
                family.key(model::SpecField::MaxPositions), s.maxPositions);
  }
  bool perLayerWindow = false;  // some layers have their own window (layer_types): said under "layers differ"
  for (int l = 0; l < s.layers; ++l) perLayerWindow = perLayerWindow || s.layerKind(l).window != s.window;
  if (perLayerWindow) std::printf("  %-22s per layer (layers differ, below)\n", "sliding window");
  else if (s.window > 0) std::printf("  %-22s W = %d\n", "sliding window", s.window);
  else std::printf("  %-22s none\n", "sliding window");
  std::printf("  %-22s %s, eps %s\n", "norm", model::normName(family.norm), formatGeneral(s.normEps, 6).c_str());
  std::printf("  %-22s %s\n", "attention biases",
              s.outputBias ? "q, k, v, o" : s.qkvBias ? "q, k, v" : "none");
  std::printf("  %-22s %s\n", "unembedding", s.tiedEmbeddings ? "tied to the token embedding" : "lm_head");
  for (const model::FamilyNote& note : model::familyNotes(s)) {  // what the family adds to attention
    std::printf("  %-22s %s\n", note.label.c_str(), note.text.c_str());
  }
  std::printf("\n  %-22s %s\n", "parameters", withThousands(model::parameterCount(s)).c_str());
  if (s.latent.enabled()) return printLatentCheck(*folder);
  const LayerCounts layer = layerCounts({s.dModel, s.heads, s.kvHeads, s.dk()});  // one attention layer
  const std::int64_t perLayer = layer.kvCacheBytesPerToken();
  std::printf("  %-22s %s per token (2 * L * N * d_k = %lld floats of 4 bytes; %s in 16-bit)\n", "KV cache",
              formatBytes(static_cast<double>(perLayer * s.layers)).c_str(),
              static_cast<long long>(2LL * s.layers * s.kvHeads * s.dk()),
              formatBytes(static_cast<double>(layer.kvCacheBytesPerToken(2) * s.layers)).c_str());
  return Ok{};
}

}  // namespace mhascope::cli
