// GQA / MQA — N K/V heads shared by h query heads: who reads what, parameters, KV-cache bytes, and
// the engine rerun with N K/V heads.
#include <algorithm>
#include <cmath>

#include "attention/model.hpp"
#include "lessons/common.hpp"
#include "lessons/gqa.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

std::vector<PublishedAttention> publishedAttentionConfigs() {
  // The fields of each model's config.json on the Hugging Face Hub (num_hidden_layers, hidden_size,
  // num_attention_heads, num_key_value_heads; GPT-2: n_layer, n_embd, n_head; Falcon-7B: n_layer,
  // hidden_size, n_head and multi_query: true, one K/V head), and head_dim where it is not
  // hidden_size / heads (Qwen3, Gemma 2).
  return {
      {"GPT-2 small", 12, 768, 12, 12},         // openai-community/gpt2
      {"Llama-2-7B", 32, 4096, 32, 32},         // meta-llama/Llama-2-7b-hf
      {"Llama-2-70B", 80, 8192, 64, 8},         // meta-llama/Llama-2-70b-hf
      {"Llama-3-8B", 32, 4096, 32, 8},          // meta-llama/Meta-Llama-3-8B
      {"Mistral-7B", 32, 4096, 32, 8},          // mistralai/Mistral-7B-v0.1
      {"Qwen2.5-7B", 28, 3584, 28, 4},          // Qwen/Qwen2.5-7B
      {"Falcon-7B (MQA)", 32, 4544, 71, 1},     // tiiuae/falcon-7b
      {"SmolLM-135M", 30, 576, 9, 3},           // HuggingFaceTB/SmolLM-135M
      {"Qwen3-0.6B", 28, 1024, 16, 8, 128},     // Qwen/Qwen3-0.6B: h·d_k = 2048, twice d_model
      {"Gemma-2-2B", 26, 2304, 8, 4, 256},      // google/gemma-2-2b: h·d_k = 2048, less than d_model
  };
}

std::optional<PublishedAttention> publishedAttention(std::string_view name) {
  for (const PublishedAttention& m : publishedAttentionConfigs())
    if (name == m.name) return m;
  return std::nullopt;
}

PublishedRow publishedRow(const PublishedAttention& m) {
  PublishedRow r;
  r.model = m;
  r.dk = m.headDim > 0 ? m.headDim : m.dModel / m.heads;
  r.groupSize = m.heads / m.kvHeads;
  r.params = layerCounts({m.dModel, m.heads, m.kvHeads, r.dk, false});
  r.kvBytesPerToken = m.layers * r.params.kvCacheBytesPerToken(2);
  r.mhaKvBytesPerToken = m.layers * layerCounts({m.dModel, m.heads, m.heads, r.dk, false}).kvCacheBytesPerToken(2);
  return r;
}

MhaWeights weightsWithKvHeads(const MhaWeights& w, int heads, int modelKvHeads, int kvHeads) {
  if (kvHeads == modelKvHeads) return w;  // the mean of identical copies: the model's own numbers
  const int dk = static_cast<int>(w.qWidth()) / heads;
  MhaWeights out = w;
  out.wk.resize(w.dModel, kvHeads * dk);
  out.wv.resize(w.dModel, kvHeads * dk);
  out.bk.resize(kvHeads * dk);
  out.bv.resize(kvHeads * dk);
  const int group = heads / kvHeads;  // query heads per new K/V head
  const float share = 1.0f / static_cast<float>(group);
  auto average = [&](const RowMatrix& from, RowMatrix& to, const RowVector& bFrom, RowVector& bTo) {
    to.setZero();
    bTo.setZero();
    for (int i = 0; i < heads; ++i) {
      const int src = i / (heads / modelKvHeads);  // the model's K/V head query head i reads
      const int dst = i / group;                   // the new K/V head of its group
      to.middleCols(dst * dk, dk) += share * from.middleCols(src * dk, dk);
      bTo.segment(dst * dk, dk) += share * bFrom.segment(src * dk, dk);
    }
  };
  average(w.wk, out.wk, w.bk, out.bk);
  average(w.wv, out.wv, w.bv, out.bv);
  return out;
}

Result<GqaLesson> gqaLesson(const Model& model, int kvHeads, int layers, int bytesPerValue) {
  const int h = model.options.heads, d = model.weights.dModel;
  if (h < 1 || d % h != 0) return makeError("d_model (" + std::to_string(d) + ") must be divisible by h (" + std::to_string(h) + ")");
  if (kvHeads < 1 || kvHeads > h || h % kvHeads != 0) {
    return makeError("N (" + std::to_string(kvHeads) + " K/V heads) must divide h (" + std::to_string(h) + ")");
  }
  if (layers < 1) return makeError("layers (" + std::to_string(layers) + ") must be at least 1");
  if (bytesPerValue != 2 && bytesPerValue != 4) {
    return makeError("bytes per cached number must be 2 (16-bit) or 4 (32-bit), got " + std::to_string(bytesPerValue));
  }
  GqaLesson r;
  r.dModel = d;
  r.heads = h;
  r.dk = static_cast<int>(headDimOf(model.options, d));
  r.kvHeads = kvHeads;
  r.modelKvHeads = kvHeadsOf(model.options);
  r.divisors = lessons::Gqa::Choices::validKvHeads(h);
  r.layers = layers;
  r.bytesPerValue = bytesPerValue;
  r.params = layerCounts({d, h, kvHeads, r.dk, model.weights.hasBias});
  r.mhaParams = layerCounts({d, h, h, r.dk, model.weights.hasBias});
  r.kvBytesPerToken = layers * r.params.kvCacheBytesPerToken(bytesPerValue);
  r.mhaKvBytesPerToken = layers * r.mhaParams.kvCacheBytesPerToken(bytesPerValue);
  for (const PublishedAttention& m : publishedAttentionConfigs()) r.published.push_back(publishedRow(m));

  AttentionOptions mhaOpt = model.options, groupedOpt = model.options;
  mhaOpt.kvHeads = h;
  groupedOpt.kvHeads = kvHeads;
  const MhaWeights mhaW = weightsWithKvHeads(model.weights, h, r.modelKvHeads, h);
  const MhaWeights groupedW = weightsWithKvHeads(model.weights, h, r.modelKvHeads, kvHeads);
  if (auto s = forward(model.inputs, mhaW, mhaOpt, r.mha); !s) return s.error();
  if (auto s = forward(model.inputs, groupedW, groupedOpt, r.grouped); !s) return s.error();

  // Who reads what, as the engine recorded it (kv_groups is recorded only when N < h).
  r.kvHeadOf.resize(static_cast<std::size_t>(h));
  for (int i = 0; i < h; ++i) r.kvHeadOf[idx(i)] = i;
  if (stageRecorded(r.grouped, StageId::KvGroups)) {
    const Tensor& g = r.grouped.tensor(StageId::KvGroups);  // (1, h, N)
    for (int i = 0; i < h; ++i)
      for (int n = 0; n < kvHeads; ++n)
        if (g.data[idx(i * kvHeads + n)] != 0.0f) r.kvHeadOf[idx(i)] = n;
  }

  const Tensor& w0 = r.mha.tensor(StageId::Weights);
  const Tensor& w1 = r.grouped.tensor(StageId::Weights);
  r.maxWeightChange = maxAbsDiff(w0.ptr(), w1.ptr(), w1.data.size());
  const Tensor& o0 = r.mha.tensor(StageId::Output);
  const Tensor& o1 = r.grouped.tensor(StageId::Output);
  r.maxOutputChange = maxAbsDiff(o0.ptr(), o1.ptr(), o1.data.size());
  const std::size_t table = idx(r.grouped.tq) * idx(r.grouped.tk);
  r.mateDifference.assign(idx(h), -1.0);
  for (int i = 0; i + 1 < h; ++i) {
    if (r.kvHeadOf[idx(i)] != r.kvHeadOf[idx(i + 1)]) continue;
    double m = 0;
    for (int b = 0; b < r.grouped.batch; ++b) {
      const float* a = w1.ptr() + (idx(b) * idx(h) + idx(i)) * table;
      m = std::max(m, maxAbsDiff(a, a + table, table));
    }
    r.mateDifference[idx(i)] = m;
  }
  return r;
}

const char* gqaLessonIntro() {
  return "Grouped-query attention keeps h query heads but only N key/value heads (N divides h): query head i "
         "reads K/V head i // (h/N). N = h is multi-head attention, N = 1 multi-query attention. W_k and W_v "
         "shrink from d_model x d_model to d_model x N*d_k, but the real saving is at generation: every "
         "generated token keeps its keys and values of every layer in the KV cache, 2 * layers * N * d_k "
         "numbers per token, so the cache (and the memory read per generated token) shrinks by h/N. The gain is "
         "bandwidth: decoding reads the whole cache at every step, so a smaller cache means faster steps and "
         "more sequences at once, not fewer FLOPs in attention. Multi-query attention (Shazeer 2019) shares one "
         "K/V head and loses some quality; GQA (Ainslie et al. 2023) sits between and comes close to multi-head "
         "quality, and it turns a multi-head checkpoint into a grouped one by mean-pooling each group's K/V heads "
         "and uptraining for about 5 % of the pre-training compute. Llama 3, Mistral, Qwen 2.5 and SmolLM use "
         "GQA.";
}

namespace {

std::string headList(const std::vector<int>& heads) {
  std::string s;
  for (std::size_t i = 0; i < heads.size(); ++i) s += (i ? ", " : "") + std::to_string(heads[i]);
  return s;
}

}  // namespace

int groupMate(const GqaLesson& r, int head) {
  if (head < 0 || head >= r.heads) return -1;
  if (head + 1 < r.heads && r.kvHeadOf[idx(head + 1)] == r.kvHeadOf[idx(head)]) return head + 1;
  if (head > 0 && r.kvHeadOf[idx(head - 1)] == r.kvHeadOf[idx(head)]) return head - 1;
  return -1;
}

double mateDifference(const GqaLesson& r, int head) {
  const int mate = groupMate(r, head);
  return mate < 0 ? -1.0 : r.mateDifference[idx(std::min(head, mate))];
}

std::string gqaSharingText(const GqaLesson& r) {
  const int N = r.kvHeads, h = r.heads;
  std::string s = "N = " + std::to_string(N) + (N == 1 ? " K/V head" : " K/V heads") + " for h = " + std::to_string(h) +
                  (h == 1 ? " query head" : " query heads");
  if (N == h) {
    s += " (multi-head attention): every query head has its own K/V head.";
  } else {
    s += std::string(N == 1 ? " (multi-query attention)" : "") + ", " + std::to_string(h / N) +
         " query heads per K/V head:";
    for (int g = 0; g < N; ++g) {
      std::vector<int> readers;
      for (int i = 0; i < h; ++i)
        if (r.kvHeadOf[idx(i)] == g) readers.push_back(i);
      s += std::string(g ? ";" : "") + " K/V head " + std::to_string(g) + " is read by query heads " + headList(readers);
    }
    s += ".";
  }
  s += " W_k and W_v are d_model x N*d_k = " + std::to_string(r.dModel) + " x " + std::to_string(N * r.dk) + " = " +
       grouped(r.params.wk) + " weights each (" + grouped(r.mhaParams.wk) + " with N = h); W_q and W_o stay " +
       grouped(r.params.wq) + ". In all " + grouped(r.params.weights()) + " weights" +
       (N < h ? " instead of " + grouped(r.mhaParams.weights()) : std::string()) + ". KV cache per token: 2 * " + std::to_string(r.layers) + " layers * " +
       std::to_string(N) + " * " + std::to_string(r.dk) + " * " + std::to_string(r.bytesPerValue) + " bytes = " +
       grouped(r.kvBytesPerToken) + " bytes (" + formatBytes(static_cast<double>(r.kvBytesPerToken)) + ")";
  if (N < h) {
    s += " instead of " + grouped(r.mhaKvBytesPerToken) + " with N = h: " + std::to_string(h / N) + " times less.";
  } else {
    s += ".";
  }
  return s;
}

std::string gqaMatesText(const GqaLesson& r, int head) {
  const int mate = groupMate(r, head);
  if (mate < 0 && r.heads == 1) {
    return "With h = 1 there is one query head and one K/V head: sharing needs more query heads (h > 1).";
  }
  if (mate < 0) {
    return "Query head " + std::to_string(head) + " is alone with its K/V head: pick N < h to see two query heads "
           "share one.";
  }
  const double diff = mateDifference(r, head);
  const std::string pair = "Query heads " + std::to_string(std::min(head, mate)) + " and " +
                           std::to_string(std::max(head, mate)) + " read the same K/V head " +
                           std::to_string(r.kvHeadOf[idx(head)]) + ", the very same keys and values";
  if (diff > 0) {
    return pair + ", yet their weights differ by up to " + num(diff, 3) +
           ": each has its own W_q, so each asks its own question of the shared keys. That holds with the random "
           "weights here and in trained models alike; only the keys and values are shared.";
  }
  return pair + ", and here their weights are the same: their queries q = x W_q happen to give the same scores.";
}

std::string gqaReferenceName(const GqaLesson& r) {
  if (r.modelKvHeads == r.heads) return "N = h";
  return "this configuration (N = " + std::to_string(r.modelKvHeads) + ")";
}

std::string gqaReferenceTitle(const GqaLesson& r, int head) {
  const std::string name = "head " + std::to_string(head) + ", " + gqaReferenceName(r);
  if (r.modelKvHeads == r.heads) return name + ": its own K/V head";
  return name + ": K/V head " + std::to_string(head / std::max(1, r.heads / std::max(1, r.modelKvHeads)));
}

std::string gqaReferenceText(const GqaLesson& r) {
  const int m = r.modelKvHeads, N = r.kvHeads;
  if (m == r.heads) return {};
  std::string s = "This configuration already has N = " + std::to_string(m) + " K/V heads: the first map is its own "
                  "(its K/V heads read as the configuration reads them), not multi-head attention. ";
  if (N % m == 0) {
    s += "N = " + std::to_string(N) + (N == m ? " is that N" : " is a multiple of it") +
         ", so each new group holds copies of one K/V head and their mean is that head: nothing changes.";
  } else {
    s += "N = " + std::to_string(N) + " puts query heads that read different K/V heads into one group, whose K/V "
         "head is then their mean.";
  }
  return s;
}

}  // namespace mhascope
