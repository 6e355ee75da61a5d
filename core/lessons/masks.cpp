// Masks — mask on / off (causal or key padding) side by side.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lessons/common.hpp"
#include "lessons/masks.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

Result<MaskComparison> maskComparison(const Model& model, MaskLesson kind, int paddedKeys) {
  AttentionOptions off = model.options;
  off.causal = false;
  off.keyPaddingMask.reset();
  off.attnMask.reset();
  AttentionOptions on = off;
  MaskComparison r;
  r.kind = kind;
  const auto B = model.inputs.query.dim(0), Tk = model.inputs.key.dim(1);
  if (kind == MaskLesson::Causal) {
    on.causal = true;
  } else {
    if (Tk < 1) return makeError("enter at least one key token");
    const std::int64_t n = paddedKeys > 0 ? paddedKeys : std::max<std::int64_t>(1, Tk / 3);
    if (n > Tk) {
      return makeError("cannot pad the last " + std::to_string(n) + " keys: there are only T_k = " +
                       std::to_string(Tk));
    }
    r.paddedKeys = static_cast<int>(n);
    Tensor pad({B, Tk}, {"B", "T_k"});
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t k = Tk - n; k < Tk; ++k) pad.data[idx(b * Tk + k)] = 1.0f;
    on.keyPaddingMask = std::move(pad);
  }
  if (auto s = forward(model.inputs, model.weights, off, r.unmasked); !s) return s.error();
  if (auto s = forward(model.inputs, model.weights, on, r.masked); !s) return s.error();
  const Tensor& w0 = r.unmasked.tensor(StageId::Weights);
  const Tensor& w1 = r.masked.tensor(StageId::Weights);
  r.weightDiff = Tensor(w1.shape, w1.axes);
  for (std::size_t i = 0; i < w1.data.size(); ++i) {
    r.weightDiff.data[i] = w1.data[i] - w0.data[i];
    r.maxAbsWeightDiff = std::max(r.maxAbsWeightDiff, std::abs(static_cast<double>(r.weightDiff.data[i])));
  }
  const Tensor& o0 = r.unmasked.tensor(StageId::Output);
  const Tensor& o1 = r.masked.tensor(StageId::Output);
  double sum = 0;
  for (std::size_t i = 0; i < o1.data.size(); ++i) {
    const double dlt = std::abs(static_cast<double>(o1.data[i]) - static_cast<double>(o0.data[i]));
    sum += dlt;
    r.maxAbsOutputDiff = std::max(r.maxAbsOutputDiff, dlt);
  }
  r.meanAbsOutputDiff = o1.data.empty() ? 0.0 : sum / static_cast<double>(o1.data.size());
  const std::size_t perItem = static_cast<std::size_t>(r.masked.tq) * static_cast<std::size_t>(r.masked.tk);
  for (std::size_t i = 0; i < perItem; ++i) r.blockedCells += r.masked.blocked[i];
  for (auto f : r.masked.fullyMasked) r.fullyMaskedRows += f;
  return r;
}

const char* maskLessonIntro() {
  return "A mask sets blocked scores to -inf before the softmax, so those keys get weight exactly 0 and the "
         "remaining keys share the whole weight. Causal: a query may not look at later tokens. Key padding: "
         "nobody may look at filler tokens that only even out a batch; it blocks keys, not queries. The bool "
         "convention depends on the API: in nn.MultiheadAttention (attn_mask, key_padding_mask) True means "
         "blocked; in F.scaled_dot_product_attention True means may attend; Hugging Face attention masks use "
         "1 = keep, 0 = padding. Code that writes masked_fill(mask == 0, -1e9) also means 1 = keep, and uses -1e9 "
         "or the dtype's minimum instead of -inf.";
}

const char* fullyMaskedRowElsewhereText() {
  return "PyTorch 1.13's nn.MultiheadAttention gives NaN there; F.scaled_dot_product_attention gives 0 from "
         "PyTorch 2.5 on, as mhascope does";
}

std::string maskComparisonText(const MaskComparison& r) {
  const Trace& t = r.masked;
  if (t.tq < 1 || t.tk < 1 || t.blocked.empty()) return "";
  auto seen = [&](int q) {  // keys query q may use in batch item 0
    int n = 0;
    for (int k = 0; k < t.tk; ++k) n += t.isBlocked(0, q, k) ? 0 : 1;
    return n;
  };
  auto keys = [](int n) { return std::to_string(n) + (n == 1 ? " key" : " keys"); };
  if (r.kind == MaskLesson::Causal) {
    const int last = t.tq - 1, first = seen(0), lastSeen = seen(last);
    std::string s = "Causal: query 0 sees " + keys(first) +
                    (first == 1 ? std::string(t.selfAttention ? " (itself)" : " (key 0)") +
                                      ", so its whole weight goes there and becomes 1"
                                : std::string());
    if (last > 0) {
      s += "; query " + std::to_string(last) + " sees " + keys(lastSeen);
      s += lastSeen == t.tk ? ", every one of T_k: nothing is blocked for it, so its row does not change."
                            : " (T_k = " + std::to_string(t.tk) + "): " + keys(t.tk - lastSeen) +
                                  (t.tk - lastSeen == 1 ? " stays" : " stay") +
                                  " blocked even for it (T_q < T_k), so its row changes too.";
    } else {
      s += ".";
    }
    return s;
  }
  std::string s = "Key padding: the last " + keys(r.paddedKeys) + " (columns " + std::to_string(t.tk - r.paddedKeys) +
                  " .. " + std::to_string(t.tk - 1) + ") are blocked for every query. It blocks keys, not queries";
  if (t.selfAttention && r.paddedKeys < t.tk) {
    s += ": the padded tokens' own query rows (rows " + std::to_string(t.tk - r.paddedKeys) + " .. " +
         std::to_string(t.tk - 1) +
         ") still attend to the real keys and produce outputs, meaningless ones that the code downstream ignores.";
  } else if (r.paddedKeys >= t.tk) {
    s += ": here every key is padding, so every query row has nothing to attend to and is flagged (weights 0).";
  } else {
    s += ": every query row still attends to the unpadded keys.";
  }
  return s;
}

}  // namespace mhascope
