// Quiz — questions with the live numbers, each explained after a try.
#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/engine.hpp"
#include "lessons/common.hpp"
#include "lessons/quiz.hpp"
#include "lessons/split.hpp"

namespace mhascope {

using namespace lesson_detail;  // NOLINT(google-build-using-namespace): the lessons' shared helpers

namespace {

// The live "which key" question: the top two weights must differ by this much (at two decimals, as
// the heatmap prints them, they then differ), and "spread evenly" is offered only when the top
// weight is this far above the even share 1 / (allowed keys).
constexpr float kQuizWeightGap = 0.02f;
constexpr float kQuizEvenMargin = 0.05f;
// The RoPE question measures the shift on at most this many queries and keys.
constexpr std::int64_t kQuizRopeTokens = 64;

// A choice's text and what it means: two choices that mean the same (the same set of columns, the
// same shape up to size-1 axes, the same number) are the same answer, whatever their wording.
struct Choice {
  std::string text;
  std::string meaning;  // empty: the text itself
  Choice(std::string t) : text(std::move(t)) {}  // NOLINT: a plain string is a choice
  Choice(const char* t) : text(t) {}             // NOLINT
  Choice(std::string t, std::string m) : text(std::move(t)), meaning(std::move(m)) {}
  const std::string& key() const { return meaning.empty() ? text : meaning; }
};

// Correct answer first, then up to three distractors that mean something else than the answer
// and than each other (in the order given, so list the best first and spares after), then the
// list rotated so the correct answer's position varies from question to question.
QuizQuestion makeQuestion(std::string question, const Choice& correct, const std::vector<Choice>& distractors,
                          std::string explanation, int number) {
  QuizQuestion q;
  q.question = std::move(question);
  q.explanation = std::move(explanation);
  std::vector<Choice> all{correct};
  for (const Choice& d : distractors) {
    if (all.size() == 4) break;
    const bool same = std::any_of(all.begin(), all.end(),
                                  [&](const Choice& c) { return c.key() == d.key() || c.text == d.text; });
    if (!same) all.push_back(d);
  }
  const int n = static_cast<int>(all.size());
  const int pos = (number * 3 + 1) % n;
  q.choices.resize(all.size());
  for (int i = 0; i < n; ++i) q.choices[idx((pos + i) % n)] = all[idx(i)].text;
  q.correct = pos;
  return q;
}

Choice numberChoice(std::int64_t v, const std::string& prefix = "") {
  const std::string digits = std::to_string(v);
  return {prefix + digits, std::string("n").append(digits)};  // not "n" + string&&: GCC 12's false -Wrestrict
}

// Numeric distractors: the candidates, then answer*2, answer+1, ... as spares (makeQuestion drops
// the answer itself and repeats); only positive values.
std::vector<Choice> numericDistractors(std::int64_t answer, std::vector<std::int64_t> candidates,
                                       const std::string& prefix = "") {
  for (std::int64_t extra : {answer * 2, answer + 1, answer * 4, answer + 2, answer + 3}) candidates.push_back(extra);
  std::vector<Choice> out;
  for (std::int64_t c : candidates)
    if (c > 0) out.push_back(numberChoice(c, prefix));
  return out;
}

// "(B, T_q, d_model) = (2, 7, 12)"; it means its values with the size-1 axes dropped, since
// (2, 1, 7, 12) and (2, 7, 12) hold the same numbers in the same order.
Choice shapeChoice(std::initializer_list<std::pair<const char*, std::int64_t>> dims) {
  std::string names = "(", values = "(", meaning = "s";
  bool first = true;
  for (const auto& [n, v] : dims) {
    // appended piece by piece: GCC 12 reports a false -Wrestrict for "literal" + std::string&&
    if (!first) {
      names += ", ";
      values += ", ";
    }
    names += n;
    values += std::to_string(v);
    if (v != 1) meaning.append(" ").append(std::to_string(v));
    first = false;
  }
  return {names + ") = " + values + ")", meaning};
}

// A set of columns of Q, e.g. "c 4 5 6 7".
std::string columnSet(std::int64_t from, std::int64_t step, std::int64_t count) {
  std::string m = "c";
  for (std::int64_t i = 0; i < count; ++i) m.append(" ").append(std::to_string(from + i * step));
  return m;
}

std::string ordinal(std::int64_t n) {
  const std::int64_t t = n % 100;
  const char* suffix = (t >= 11 && t <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

// The quiz's questions in six groups, each a member function reading the live sizes; add()
// numbers every question made (the number rotates where the correct answer sits) and keeps it
// only when a wrong answer is left (with every size 1 some shapes all read (1, 1, 1)).
class QuizBuilder {
 public:
  QuizBuilder(const Trace& trace, const MhaWeights& weights)
      : t(trace), w(weights), B(t.batch), Tq(t.tq), Tk(t.tk), d(t.dModel), h(t.heads), dk(t.dk),
        N(t.kvHeads > 0 ? t.kvHeads : t.heads), D(std::to_string(d)), H(std::to_string(h)), DK(std::to_string(dk)) {}
  std::vector<QuizQuestion> build() {
    sizeQuestions();
    whyQuestions();
    maskQuestions();
    headQuestions();
    costQuestions();
    todaysQuestions();
    return std::move(questions);
  }

 private:
  const Trace& t;
  const MhaWeights& w;
  const std::int64_t B, Tq, Tk, d, h, dk, N;  // N: K/V heads (h for multi-head attention)
  const std::string D, H, DK;
  // The heads side by side are h·d_k wide; d_model when d_k = d_model / h (the usual choice), else a
  // width of their own (a model's head_dim, or the d_k control).
  bool wide() const { return h * dk != d; }
  std::vector<QuizQuestion> questions;
  int n = 0;

  // Batch item 0's mask flag (no flags recorded: nothing blocked).
  bool blockedAt(std::int64_t q, std::int64_t k) const {
    return !t.blocked.empty() && t.isBlocked(0, static_cast<int>(q), static_cast<int>(k));
  }

  // The causal question's live numbers: from this trace's own mask when it is causal (key
  // padding included), else what a causal mask alone would allow here.
  std::string causalCountsText() const {
    auto seen = [&](std::int64_t q) {
      std::int64_t count = 0;
      for (std::int64_t k = 0; k < Tk; ++k) count += blockedAt(q, k) ? 0 : 1;
      return count;
    };
    auto keys = [](std::int64_t count) { return std::to_string(count) + (count == 1 ? " key" : " keys"); };
    const std::string last = std::to_string(Tq - 1);
    if (t.causal && !t.blocked.empty()) {
      return "In this trace's mask" + std::string(t.keyPadding || t.attnMask ? " (causal and the other masks)" : "") +
             " query 0 sees " + keys(seen(0)) + (Tq > 1 ? " and query " + last + " sees " + keys(seen(Tq - 1)) : "") +
             " (batch item 0).";
    }
    return "A causal mask alone would let query 0 see 1 key" +
           (Tq > 1 ? " and query " + last + " see " + keys(std::min(Tq, Tk)) : std::string()) + " here.";
  }

  void add(std::string question, const Choice& correct, const std::vector<Choice>& distractors,
           std::string explanation) {
    QuizQuestion q = makeQuestion(std::move(question), correct, distractors, std::move(explanation), n++);
    if (q.choices.size() >= 2) questions.push_back(std::move(q));
  }

  // d_k, the shapes into W_o and out of the softmax, the parameter count and what h does to it.
  void sizeQuestions() {
    add("With d_model = " + D + " and h = " + H +
                                  " heads, how many dimensions d_k does each head work in?",
                              numberChoice(dk), numericDistractors(dk, {d, h, d * h}),
                              wide() ? "d_k = " + DK + ", set for this layer rather than d_model / h: the " + H +
                                           " heads together are h*d_k = " + std::to_string(h * dk) + " wide, not d_model = " +
                                           D + ". d_k = d_model / h is the usual choice (the heads then share the d_model "
                                           "columns of Q, K and V), not a rule: only W_q and W_o have to agree on h*d_k."
                                     : "d_k = d_model / h = " + D + " / " + H + " = " + DK +
                                           ". The heads share the d_model columns of Q, K and V between them; they do not "
                                           "each get d_model of their own.");

    if (wide()) {
      add("What shape goes into the output projection W_o?", shapeChoice({{"B", B}, {"T_q", Tq}, {"h*d_k", h * dk}}),
          {shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"d_k", dk}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"d_k", dk}}),
           shapeChoice({{"B", B}, {"T_q", Tq}, {"d_model", d}}), shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"T_k", Tk}})},
          "The h head outputs (B, h, T_q, d_k) are transposed back and reshaped to (B, T_q, h*d_k): the heads sit "
          "side by side, " + std::to_string(h * dk) + " features here, which is not d_model = " + D + ". W_o (h*d_k, "
          "d_model) maps them back into d_model features, head i only through its own rows W_o^(i), so the layer's "
          "output keeps the (B, T_q, d_model) shape of its input.");
    } else add(
        "What shape goes into the output projection W_o?", shapeChoice({{"B", B}, {"T_q", Tq}, {"d_model", d}}),
        {shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"d_k", dk}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"d_k", dk}}),
         shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"T_k", Tk}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"T_k", Tk}}),
         shapeChoice({{"B", B}, {"d_model", d}, {"T_q", Tq}}), shapeChoice({{"B", B}, {"T_q", Tq}, {"3*d_model", 3 * d}})},
        "The h head outputs (B, h, T_q, d_k) are transposed back to (B, T_q, h, d_k) and reshaped to "
        "(B, T_q, h*d_k) = (B, T_q, d_model): the heads sit side by side. W_o (d_model, d_model) maps them into "
        "d_model features, head i only through its own rows W_o^(i), so the output is a sum of one term per head, "
        "O_i W_o^(i), plus b_o: heads never interact inside a layer, only across layers. "
        "The layer's output keeps that (B, T_q, d_model) shape, the shape of its input, which is why attention "
        "layers can be stacked.");

    add(
        "What shape does the softmax output A have inside the layer (the attention weights of every head)?",
        shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"T_k", Tk}}),
        {shapeChoice({{"B", B}, {"T_q", Tq}, {"T_k", Tk}}), shapeChoice({{"B", B}, {"h", h}, {"T_q", Tq}, {"d_k", dk}}),
         shapeChoice({{"B", B}, {"T_q", Tq}, {"d_model", d}}), shapeChoice({{"B", B}, {"h", h}, {"d_k", dk}, {"d_k", dk}}),
         shapeChoice({{"B", B}, {"T_q", Tq}, {"h", h}})},
        "One (T_q, T_k) table per batch item and per head: every head decides on its own how much each query "
        "looks at each key. Note that torch.nn.MultiheadAttention by default RETURNS these averaged over the "
        "heads, shape (B, T_q, T_k) = (" + std::to_string(B) + ", " + std::to_string(Tq) + ", " + std::to_string(Tk) +
        "); pass average_attn_weights=False to get the per-head tensor.");

    // The right count and every wrong one from the one function (attention/layer_counts.hpp), so no
    // wrong choice can be this configuration's count.
    const LayerCounts lc = layerCounts(layerSizesOf(t));
    const std::int64_t params = lc.params();
    {
      const std::int64_t mha = layerCounts({d, h, h, dk, lc.bias}).params();
      std::vector<std::int64_t> wrong{lc.bias ? lc.weights() : lc.withBias(), mha, params * h,
                                      lc.wq + lc.wk + lc.wv + (lc.bias ? lc.bq + lc.bk + lc.bv : 0)};
      const std::string bias = lc.bias ? "on" : "off";
      if (wide()) {
        add("How many learned numbers does this attention layer hold (biases " + bias + ", h = " + H + " heads of d_k = " +
                DK + ", N = " + std::to_string(N) + " K/V heads)?",
            numberChoice(params), numericDistractors(params, wrong),
            "W_q is (d_model, h*d_k) and W_o (h*d_k, d_model), W_k and W_v (d_model, N*d_k): " + parameterFormula(lc) +
                " = " + std::to_string(params) + " with d_model = " + D + ", h*d_k = " + std::to_string(h * dk) +
                ", N*d_k = " + std::to_string(N * dk) + ".");
      } else if (N == h) {
        add("How many learned numbers does this attention layer hold (biases " + bias + ")?", numberChoice(params),
            numericDistractors(params, wrong),
            "W_q, W_k, W_v and W_o are (d_model, d_model) each: 4 * " + D + "^2 = " + std::to_string(lc.weights()) +
                (lc.bias ? ", plus 4 bias vectors of d_model = " + std::to_string(lc.biases()) : std::string()) +
                ". With one K/V head per query head (N = h) the number of heads does not appear in it.");
      } else {
        add("How many learned numbers does this attention layer hold (biases " + bias + ", h = " + H +
                " query heads, N = " + std::to_string(N) + " K/V heads)?",
            numberChoice(params), numericDistractors(params, wrong),
            "W_q and W_o stay (d_model, d_model); W_k and W_v only have to make N * d_k = " + std::to_string(N * dk) +
                " features, so each is (d_model, N*d_k): 2 * " + D + "^2 + 2 * " + D + " * " + std::to_string(N * dk) +
                " = " + std::to_string(lc.weights()) +
                (lc.bias ? ", plus biases 2 * " + D + " + 2 * " + std::to_string(N * dk) + " = " +
                               std::to_string(lc.biases()) : std::string()) +
                ". Multi-head attention with the same sizes would hold " + std::to_string(mha) + ".");
      }
    }

    {
      // Another valid head count for the same d_model (N kept: a multiple of N), and the count there.
      const CostSizes sizes = costSizesOf(t);
      // With heads of a width of their own, another h keeps d_k and changes every matrix: the question's
      // premise (d_k = d_model / h) does not hold, so it is not asked.
      const std::int64_t h2 = wide() ? 0 : otherHeadCount(sizes);
      if (h2) {
        CostSizes other = sizes;
        other.heads = h2;
        const std::int64_t then = layerCounts(other.layer()).params();
        const bool kept = sizes.kvHeads > 0;  // N < h, kept as it is
        auto becomes = [&](std::int64_t v) {
          return Choice(v == params ? "It stays at " + grouped(params) : "It becomes " + grouped(v),
                        std::string("n").append(std::to_string(v)));
        };
        std::vector<Choice> wrong{becomes(params), becomes(params * h2 / h), becomes(params * h / h2)};
        if (params + 4 * d * d * (h2 - h) > 0) wrong.push_back(becomes(params + 4 * d * d * (h2 - h)));
        const std::string NK = std::to_string(N);
        add("Keep d_model = " + D + (kept ? " and N = " + NK + " K/V heads" : std::string(" (and N = h)")) +
                " and change h from " + H + " to " + std::to_string(h2) + " heads (d_k from " + DK + " to " +
                std::to_string(d / h2) + "). What happens to this layer's " + grouped(params) + " parameters?",
            becomes(then), wrong,
            kept ? "W_q and W_o stay (d_model, d_model): the query heads only cut their columns into blocks of d_k. "
                   "But W_k and W_v are (d_model, N*d_k) with d_k = d_model / h: with N = " + NK + " kept, d_k goes "
                   "from " + DK + " to " + std::to_string(d / h2) + ", so each goes from " + grouped(lc.wk) + " to " +
                   grouped(layerCounts(other.layer()).wk) + " (" + parameterFormula(lc) + " = " + grouped(then) +
                   " at h = " + std::to_string(h2) + "). The K/V projection FLOPs move the same way. What grows "
                   "with h is the number of scores: B * h * T_q * T_k, each of which is scaled, masked, "
                   "exponentiated and normalised, and kept in memory."
                 : "W_q is still one (d_model, d_model) matrix; the heads only cut its columns into blocks of d_k, "
                   "and with N = h so are W_k and W_v. The matmul FLOPs stay the same too. What grows with h is the "
                   "number of scores: B * h * T_q * T_k, each of which is scaled, masked, exponentiated and "
                   "normalised, and kept in memory.");
      }
    }
  }

  // Why heads, why the sqrt(d_k) scaling.
  void whyQuestions() {
    add(
        "Why split d_model into heads at all?",
        "So each head can form its own attention pattern over its own d_k features, several at once, for the "
        "cost of one",
        {"To cut the number of parameters by h", "Because the softmax only works on small vectors",
         "So that each token is only compared with h other tokens"},
        std::string("One softmax can only make one weighted average per query. Heads let the layer look for several "
                    "relations at once, each in its own d_k-wide subspace. ") + headSplitReasonText());

    {
      const std::string rule = scalingRuleText(t.scale, static_cast<int>(d), static_cast<int>(dk), t.scaleFactor);
      add(
          "The standard rule divides the scores by sqrt(d_k) = " + num(std::sqrt(static_cast<double>(dk))) + ". Why?",
          "The standard deviation of q . k grows like sqrt(d_k); unscaled, a large d_k pushes the softmax towards "
          "one-hot",
          {"To turn the scores into probabilities", "To make every row sum to 1", "To keep the values V from growing"},
          "With independent zero-mean, unit-variance entries, q . k has mean 0 and variance d_k. Dividing by "
          "sqrt(d_k) brings its spread back to about 1 whatever the head size, so the softmax stays soft and its "
          "gradients stay large enough to learn quickly (in a saturated softmax they can get so small that learning "
          "effectively stalls). "
          "The active rule here: scores are " + rule + ", i.e. multiplied by " + num(t.scaleFactor) + ".");
    }
  }

  // The causal mask and PyTorch's boolean mask polarity.
  void maskQuestions() {
    add(
        "What does the causal mask do?",
        "Blocks every key after the query (k > q): those scores become -inf, so their weight is exactly 0",
        {"Sets the values of later tokens to zero", "Removes the padding tokens from the input",
         "Multiplies the weights of later tokens by 0 after the softmax"},
        "A query may only use tokens up to its own position. The blocked scores get -inf before the softmax, "
        "so exp gives exactly 0 and the remaining weights still sum to 1. Counting from 0, query t sees keys "
        "0 .. t, that is t + 1 keys (fewer where key padding blocks some of them). " + causalCountsText());

    add(
        "In PyTorch's nn.MultiheadAttention, what does True in a boolean attn_mask or key_padding_mask mean?",
        "That query-key pair is blocked: its score becomes -inf",
        {"That pair is allowed (True = keep)", "The weight is set to 0 after the softmax",
         "The key's value vector is set to 0"},
        "In nn.MultiheadAttention True = blocked (a float mask is added to the scores instead). The convention "
        "depends on the API: F.scaled_dot_product_attention's bool attn_mask is the other way round (True = may "
        "attend), Hugging Face attention masks use 1 = keep and 0 = padding, and much other code writes "
        "scores.masked_fill(mask == 0, -1e9), where 1 means keep. With -1e9 or the dtype's minimum in place of "
        "-inf, a row with every key blocked gets uniform weights 1/T_k (here 1/" + std::to_string(Tk) +
        ") instead of weights 0 (mhascope) or NaN (nn.MultiheadAttention in PyTorch 1.13).");
  }

  // Which columns a head owns, the live argmax of a weights row, what a row sums to.
  void headQuestions() {
    {
      const std::int64_t i = std::min<std::int64_t>(1, h - 1);  // head index 1 when there is one
      const std::string I = std::to_string(i), first = std::to_string(i * dk), last = std::to_string((i + 1) * dk - 1);
      const std::int64_t q = h * dk;  // Q's columns: d_model unless the heads have a width of their own
      const std::string Q = std::to_string(q);
      add(
          (wide() ? "Q = X W_q has h*d_k = " + Q + " columns (not d_model = " + D + "), numbered 0 .. "
                  : "Q = X W_q has d_model = " + D + " columns, numbered 0 .. ") + std::to_string(q - 1) +
              ". Which of them does head " + I + " get (heads numbered 0 .. " + std::to_string(h - 1) + ")?",
          Choice("Columns " + first + " to " + last, columnSet(i * dk, 1, dk)),
          h > 1 ? std::vector<Choice>{
                      Choice("Every " + ordinal(h) + " column, starting at column " + I, columnSet(i, h, dk)),
                      Choice("Rows " + first + " to " + last + " of W_q (here (d_model in, " +
                                 std::string(wide() ? "h*d_k" : "d_model") + " out), Q = X @ W_q)",
                             "rows"),
                      Choice("Columns " + first + " to " + last + " of the input X: a head reads only its own input "
                             "features", "input"),
                      Choice("All " + Q + " columns: each head sees every column of Q", columnSet(0, 1, q)),
                      Choice("Column 0 only", columnSet(0, 1, 1))}
                // With one head, "all of X" and "all rows of W_q" would be true in their own way: not offered.
                : q >= 2 ? std::vector<Choice>{Choice("Column 0 only", columnSet(0, 1, 1)),
                                               Choice("Columns 0 to " + std::to_string(q / 2 - 1), columnSet(0, 1, q / 2)),
                                               Choice("None: head 0 reads only K and V", "none")}
                         : std::vector<Choice>{Choice("None: head 0 reads only K and V", "none")},
          "The view (B, T, h, d_k) cuts each token's row of Q into h consecutive blocks of d_k: head i owns columns "
          "i*d_k .. (i+1)*d_k - 1. Column j belongs to head floor(j / d_k), e.g. column " + last + " to head floor(" +
          last + " / " + DK + ") = " + I + ". The input X is not split: every head sees all of it through W_q. In "
          "PyTorch's storage (in_proj_weight, rows = outputs, Q = X @ W^T) the same block is rows " + first + " to " +
          last + " of the query part: rows there, columns of W_q here.");
    }

    if (Tk >= 2) {
      // A live question: which key does a query attend to most in head 0 (batch item 0)?
      const int qi = static_cast<int>(Tq / 2);
      const float* row = t.tensor(StageId::Weights).ptr() + static_cast<std::int64_t>(qi) * Tk;  // b = 0, head 0
      std::vector<int> order(static_cast<std::size_t>(Tk));
      for (int k = 0; k < Tk; ++k) order[idx(k)] = k;
      std::stable_sort(order.begin(), order.end(), [row](int a, int b) { return row[a] > row[b]; });
      const bool fully = t.isFullyMasked(0, qi);
      // A near-tie has no single answer a reader can see on the heatmap (0.4356 and 0.4352 both read
      // 0.44): asked only when the top two differ by kQuizWeightGap.
      const bool tie = !fully && row[order[1]] > row[order[0]] - kQuizWeightGap;
      int allowed = 0;
      for (int k = 0; k < Tk; ++k) allowed += blockedAt(qi, k) ? 0 : 1;
      // "Spread evenly" is offered only when the top weight is clearly above the even share.
      const bool evenIsClearlyFalse =
          !fully && allowed > 0 && row[order[0]] >= 1.0f / static_cast<float>(allowed) + kQuizEvenMargin;
      auto label = [&](int k) { return "'" + t.keyTokens[0][idx(k)] + "' (key " + std::to_string(k) + ")"; };
      if (!tie) {
        std::vector<Choice> others;
        for (std::size_t j = 1; j < order.size() && others.size() < 3; ++j) others.emplace_back(label(order[order.size() - j]));
        if (evenIsClearlyFalse) others.emplace_back("None: the weights are spread evenly over the keys");
        add(
            "In head 0, which key does the query '" + t.queryTokens[0][idx(qi)] + "' (query " + std::to_string(qi) +
                ") give the most weight?",
            fully ? Choice("None: every key is blocked") : Choice(label(order[0])), others,
            fully ? "Every key of this query is masked, so its weights row is all zeros."
                  : "Read it off the weights heatmap of head 0: row " + std::to_string(qi) + " peaks at " +
                        label(order[0]) + " with weight " + num(row[order[0]], 3) + ".");
      }
    }

    {
      // Row sums: every distractor is a number that is not 1 for this configuration.
      std::vector<Choice> sums;
      auto addSum = [&](const std::string& text, double value) {
        if (std::abs(value - 1.0) > 1e-12) sums.emplace_back(text, "v" + num(value, 12));
      };
      addSum(std::to_string(Tk) + " (T_k)", static_cast<double>(Tk));
      addSum("1 / T_k = " + num(1.0 / static_cast<double>(Tk), 3), 1.0 / static_cast<double>(Tk));
      addSum(DK + " (d_k)", static_cast<double>(dk));
      addSum(H + " (h, one per head)", static_cast<double>(h));
      addSum("1 / h = " + num(1.0 / static_cast<double>(h), 3), 1.0 / static_cast<double>(h));
      sums.emplace_back("No fixed value: the softmax leaves the sum free");
      add(
          "What does each row of a head's attention weights add up to?", "1 (0 if every key is masked)", sums,
          "The softmax turns one query's scores into a probability distribution over the keys; the head's output "
          "for that query is the matching weighted average of the values.");
    }
  }

  // Where tokens mix, the score table's size, the merge line, and where attention outgrows the projections.
  void costQuestions() {
    add(
        "Which step is the only one that mixes information ACROSS tokens?",
        "The weighted sum A V (with the weights from softmax(Q K^T))",
        {"The projections X W_q, X W_k, X W_v", "The output projection W_o", "Splitting into heads"},
        "Projections and W_o act on each token's row on its own (they mix features, not tokens). Only the "
        "attention weights combine the values of different tokens.");

    add(
        "How many numbers does ONE head's score table hold for one batch item here?", numberChoice(Tq * Tk),
        numericDistractors(Tq * Tk, {Tq * dk, Tq + Tk, dk * dk, B * h * Tq * Tk}),
        "T_q x T_k = " + std::to_string(Tq) + " x " + std::to_string(Tk) + ": one score per (query, key) pair. "
        "That T^2 is why long sequences cost FLOPs, always, and memory where the tables are stored, as here: B * h "
        "of them, " + std::to_string(B * h * Tq * Tk) + " numbers in all (fused kernels such as FlashAttention "
        "never store them and need only O(T) extra memory). Each table is (T_q, d_k) times (d_k, T_k), so its rank is at most d_k = " + DK + ".");

    if (h > 1 && Tq > 1) {
      // With h = 1 or T_q = 1 the wrong merges below happen to give the right tensor: not asked then.
      add(
          "After A @ V the heads are (B, h, T_q, d_k) = (" + std::to_string(B) + ", " + H + ", " + std::to_string(Tq) +
              ", " + DK + "). Which line makes the (B, T_q, d_model) input of W_o?",
          "O.transpose(1, 2).reshape(B, T_q, d_model): the transpose makes the memory out of order, so this copies",
          {"O.reshape(B, T_q, d_model): no transpose needed", "O.transpose(1, 2).view(B, T_q, d_model): a free view",
           "O.sum(dim=1): add the heads up"},
          "transpose(1, 2) only swaps strides, so the numbers are no longer laid out as (B, T_q, h, d_k). view "
          "refuses such a tensor; reshape (or .contiguous().view(...)) copies it into order. Without the transpose "
          "the reshape would put head 0's rows for several tokens into one token's row. The split at the start "
          "was free: view on the contiguous (B, T, d_model) projection, then transpose.");
    }

    {
      const CostSizes sizes = costSizesOf(t);
      const CostCrossover c = costCrossover(sizes);
      const auto cross = static_cast<std::int64_t>(std::llround(c.crossoverTokens));
      add(
          "With d_model = " + D + " and self-attention (T_q = T_k = T), from which T on do the attention matmuls "
              "(Q K^T and A V) cost more FLOPs than the layer's four projections?",
          numberChoice(cross, "T > "), numericDistractors(cross, {2 * d, d, dk, 4 * d, d * d}, "T > "),
          "The projections cost O(B*T*d_model^2), the attention matmuls O(B*T^2*d_model); they are equal at "
          "T = " + crossoverFormula(sizes) + " = " + std::to_string(cross) + ". With T_q = " + std::to_string(Tq) + " and T_k = " +
          std::to_string(Tk) + " here, " + costRatioPhrase(c) + ". That counts the attention layer alone: in a "
          "transformer block the 4x MLP adds 16*B*T*d_model^2 FLOPs, so attention dominates the block only once "
          "T > " + blockCrossoverFormula(sizes) + " = " + num(c.blockCrossoverTokens, 12) + ". Short sequences are dominated by the "
          "projections; the T^2 term wins only for long ones.");
    }
  }

  // Attention as today's models run it: the KV cache's bytes, which K/V head a query head reads
  // under grouped-query attention, and RoPE's relative positions, measured on this trace.
  void todaysQuestions() {
    {
      // The KV cache of this one layer, in 16-bit numbers: K and V, N heads of d_k each.
      const std::int64_t bytes = layerCounts(layerSizesOf(t)).kvCacheBytesPerToken(2);
      add("While generating, a model keeps every past token's K and V (the KV cache). With N = " + std::to_string(N) +
              " K/V head" + (N == 1 ? "" : "s") + " of d_k = " + DK +
              " in 16-bit numbers, how many bytes does THIS one layer's cache grow by per token?",
          numberChoice(bytes),
          numericDistractors(bytes, {N * dk * 2, N < h ? 2 * h * dk * 2 : bytes * Tk, 2 * N * dk * 4}),
          "2 (K and V) * N * d_k * 2 bytes = 2 * " + std::to_string(N) + " * " + DK + " * 2 = " +
              std::to_string(bytes) + ". A whole model multiplies it by its layers: Llama-3-8B (32 layers, N = 8, "
              "d_k = 128) needs 2 * 32 * 8 * 128 * 2 = 131072 bytes = 128 KiB per token. Only N counts, not h: that "
              "is why grouped-query (N < h) and multi-query (N = 1) attention exist. Queries are not cached: each "
              "new token's query is used once.");
    }

    if (h >= 2) {
      // Grouped-query attention with this trace's N, or (multi-head here) with N = h / 2 or 1.
      const std::int64_t kvHeads = N < h ? N : (h % 2 == 0 ? h / 2 : 1);
      const std::int64_t group = h / kvHeads;
      const std::int64_t i = h - 1 - (group > 1 ? group / 2 : 0);  // a query head inside a group, not its first
      const std::int64_t g = i / group;
      std::vector<Choice> others{Choice("K/V head " + std::to_string(i % kvHeads)), Choice("K/V head " + std::to_string(i)),
                                 Choice("All " + std::to_string(kvHeads) + " K/V heads, averaged")};
      if (g + 1 < kvHeads) others.emplace_back("K/V head " + std::to_string(g + 1));
      if (g > 0) others.emplace_back("K/V head " + std::to_string(g - 1));
      add(std::string(N < h ? "This layer uses" : "Suppose this layer used") + " grouped-query attention: h = " + H +
              " query heads share N = " + std::to_string(kvHeads) + " K/V heads. Which K/V head does query head " +
              std::to_string(i) + " read?",
          Choice("K/V head " + std::to_string(g)), others,
          "Query heads come in h / N = " + std::to_string(group) + " groups of consecutive heads: query head i reads "
              "K/V head floor(i / (h/N)) = floor(" + std::to_string(i) + " / " + std::to_string(group) + ") = " +
              std::to_string(g) + " (PyTorch: K.repeat_interleave(h // N, dim=1)). The query heads of a group "
              "still attend differently, because each has its own columns of W_q (i*d_k .. (i+1)*d_k - 1).");
    }

    if (dk % 2 == 0 && Tq >= 2 && Tk >= 2 && stageRecorded(t, StageId::QHeads) && stageRecorded(t, StageId::KHeads)) {
      // Measured here: head 0's first queries and K/V head 0's first keys (batch item 0; at most
      // kQuizRopeTokens of each, so a long trace's quiz stays instant), turned by RoPE at positions
      // 0, 1, ... and again at Δ, Δ+1, ...; the largest change of any score.
      const std::int64_t delta = 7, nq = std::min<std::int64_t>(Tq, kQuizRopeTokens),
                         nk = std::min<std::int64_t>(Tk, kQuizRopeTokens);
      const float* q0 = t.tensor(StageId::QHeads).ptr();
      const float* k0 = t.tensor(StageId::KHeads).ptr();
      auto scores = [&](std::int64_t first) {
        std::vector<float> q(q0, q0 + nq * dk), k(k0, k0 + nk * dk);
        rotatePositions(q.data(), nq, dk, first, t.ropeBase, t.ropeStyle);
        rotatePositions(k.data(), nk, dk, first, t.ropeBase, t.ropeStyle);
        std::vector<double> s(static_cast<std::size_t>(nq * nk));
        for (std::int64_t a = 0; a < nq; ++a)
          for (std::int64_t b = 0; b < nk; ++b) {
            double dot = 0;
            for (std::int64_t f = 0; f < dk; ++f) dot += double(q[idx(a * dk + f)]) * double(k[idx(b * dk + f)]);
            s[idx(a * nk + b)] = dot;
          }
        return s;
      };
      const std::vector<double> s0 = scores(0), s1 = scores(delta);
      double diff = 0, top = 0;
      for (std::size_t c = 0; c < s0.size(); ++c) {
        diff = std::max(diff, std::abs(s0[c] - s1[c]));
        top = std::max(top, std::abs(s0[c]));
      }
      add("RoPE turns q and k by angles set by their positions. Shift every position by " + std::to_string(delta) +
              " (the same sentence, later in a document): what happens to head 0's scores q_t . k_j?",
          "Nothing: position enters them only through t - j, the offset between the two tokens",
          {"Every score grows, because the angles grow with the position",
           "They are multiplied by cos(" + std::to_string(delta) + " * theta)",
           "Only the first " + std::to_string(delta) + " keys change"},
          "Turning q by angle t*theta and k by j*theta leaves q . k depending on the two vectors and, for position, "
              "on (t - j)*theta alone. Measured on "
              "this trace (head 0, batch item 0, base " + num(t.ropeBase) + "): the largest |change| over " +
              std::to_string(nq * nk) + " scores is " + num(diff, 2) + " against scores up to " + num(top, 3) +
              " -- float rounding. Sinusoidal codes are added to the inputs instead, so their scores mix absolute "
              "positions in and do change when everything shifts.");
    }
  }
};

}  // namespace

std::vector<QuizQuestion> makeQuiz(const Trace& t, const MhaWeights& w) {
  if (t.stages.size() != static_cast<std::size_t>(kStageCount)) return {};
  return QuizBuilder(t, w).build();
}

}  // namespace mhascope
