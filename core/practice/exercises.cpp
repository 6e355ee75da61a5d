// The six practice exercises: their statements, hints, complexity and interview points, and the
// test cases each learner's file is run on. The starter files and the reference solutions are
// assets/practice/<id>.starter.py and <id>.solution.py; scripts/check_practice_solutions.py checks
// those solutions against PyTorch's own attention on these same cases.
#include "practice/exercises.hpp"

#include <string>
#include <utility>

namespace mhascope::practice {

namespace {

// A case's title: what it tests, then its sizes in the lesson's symbols.
std::string sizesOf(const PracticeCase& c) {
  std::string s = "B = " + std::to_string(c.batch);
  if (c.cross || c.tq != c.tk) {
    s += ", T_q = " + std::to_string(c.tq) + ", T_k = " + std::to_string(c.tk);
  } else {
    s += ", T = " + std::to_string(c.tq);
  }
  s += ", d_model = " + std::to_string(c.dModel) + ", h = " + std::to_string(c.heads);
  if (c.kvHeads > 0) s += ", N = " + std::to_string(c.kvHeads);
  return s;
}

// Every case starts as the shown self-attention (B 1, T 6, d_model 24, h 4) and changes what it tests.
struct CaseSpec {
  const char* id;
  const char* what;
  std::uint64_t seed;
};

PracticeCase makeCase(const CaseSpec& spec, PracticeCase c = {}) {
  c.id = spec.id;
  c.seed = spec.seed;
  c.title = std::string(spec.what) + " (" + sizesOf(c) + ")";
  return c;
}

// Variations of the base case, as designated initializers cannot skip fields in order.
PracticeCase batch(int b, PracticeCase c = {}) { c.batch = b; return c; }
PracticeCase sized(int dModel, int heads, PracticeCase c = {}) { c.dModel = dModel; c.heads = heads; return c; }
PracticeCase tokens(int tq, int tk, PracticeCase c = {}) { c.tq = tq; c.tk = tk; return c; }
PracticeCase masked(CaseMask m, PracticeCase c = {}) { c.mask = m; return c; }
PracticeCase causal(PracticeCase c = {}) { c.causal = true; return c; }
PracticeCase rotary(PracticeCase c = {}) { c.rope = true; return c; }
PracticeCase scaledInputs(float s, PracticeCase c = {}) { c.inputScale = s; return c; }
PracticeCase raising(PracticeCase c) { c.mustRaise = true; return c; }
PracticeCase grouped(int kvHeads, PracticeCase c = {}) { c.kvHeads = kvHeads; return c; }
PracticeCase decoding(PracticeCase c) { c.decode = true; return c; }
PracticeCase crossed(PracticeCase c) { c.cross = true; return c; }

// The scaled scores of inputs × 30 reach several hundred: far past 88, where float's exp overflows.
constexpr float kLargeInputScale = 30.0f;

// The self-attention cases a mask-taking exercise shares (mha adds cross-attention).
std::vector<PracticeCase> maskedSelfCases(std::uint64_t seed0, bool withCross) {
  std::vector<PracticeCase> cases = {
      makeCase({"self", "self-attention", seed0 + 1}),
      makeCase({"batch", "a batch of three", seed0 + 2}, batch(3)),
      makeCase({"causal", "a causal mask passed in", seed0 + 3}, masked(CaseMask::Causal)),
      makeCase({"padding", "key padding, a different length per item", seed0 + 4},
               masked(CaseMask::KeyPadding, batch(2))),
  };
  if (withCross) {
    cases.push_back(makeCase({"cross", "cross-attention, T_q ≠ T_k", seed0 + 5}, crossed(tokens(4, 7))));
  }
  cases.push_back(makeCase({"one_head", "one head, d_k = d_model", seed0 + 6}, sized(24, 1)));
  cases.push_back(makeCase({"head_per_feature", "one feature per head, h = d_model", seed0 + 7}, sized(8, 8)));
  cases.push_back(makeCase({"indivisible", "h does not divide d_model: must raise", seed0 + 8}, raising(sized(10, 4))));
  cases.push_back(makeCase({"large_scores", "large scores (inputs × 30): the softmax's stability", seed0 + 9},
                           scaledInputs(kLargeInputScale)));
  return cases;
}

// [mha] -----------------------------------------------------------------------------------------

Exercise mhaExercise() {
  Exercise e;
  e.id = "mha";
  e.title = "Multi-head attention from scratch";
  e.summary = "MultiHeadAttention(d_model, num_heads): project, split, attend, merge, project; with a mask";
  e.framework = Framework::Torch;
  e.statement =
      "Write the module that every transformer layer uses: MultiHeadAttention(d_model, num_heads) with four "
      "projections W_q, W_k, W_v, W_o, each nn.Linear(d_model, d_model, bias=False). Keep those four names: "
      "mhascope loads its weights into them. nn.Linear(x) computes x Wᵀ: it stores the matrix transposed.\n\n"
      "forward(query, key, value, mask=None) takes query (B, T_q, d_model) and key, value (B, T_k, d_model) "
      "and returns (B, T_q, d_model). Project the three inputs; split each projection into h heads of "
      "d_k = d_model / h features, shape (B, h, T, d_k); in every head compute the scores Q Kᵀ (B, h, T_q, T_k), "
      "divide them by √d_k, hide the blocked keys, take the softmax over the keys, and weight the values "
      "(B, h, T_q, d_k); then put the heads side by side again (B, T_q, d_model) and apply W_o.\n\n"
      "The mask, when given, is a bool tensor that broadcasts to (B, h, T_q, T_k): True = blocked (PyTorch's "
      "polarity). The tests pass a causal mask of shape (T_q, T_k) and a key-padding mask of shape "
      "(B, 1, 1, T_k). A blocked key must get weight exactly 0.\n\n"
      "The constructor (or the call) must raise ValueError, or fail an assert, when num_heads does not divide "
      "d_model. The tests also try a batch, cross-attention (T_q ≠ T_k), h = 1, h = d_model and inputs large "
      "enough that a softmax written without care overflows.";
  e.signature =
      "class MultiHeadAttention(nn.Module):\n"
      "    def __init__(self, d_model, num_heads): ...\n"
      "    def forward(self, query, key, value, mask=None): ...  # -> (B, T_q, d_model)";
  e.starterAsset = "mha.starter.py";
  e.solutionAsset = "mha.solution.py";
  e.entry = "MultiHeadAttention";
  e.initArgs = {"d_model", "num_heads"};
  e.callArgs = {"query", "key", "value"};
  e.maskArg = "mask";
  e.hints = {
      "Write the shape of every tensor in a comment as you go: almost every bug here is a shape that is right "
      "in size but wrong in meaning.",
      "Splitting into heads is two steps: view (B, T, d_model) as (B, T, h, d_k), then transpose to "
      "(B, h, T, d_k). Viewing straight as (B, h, T, d_k) runs, but mixes tokens into heads.",
      "The scores are q_heads @ k_heads.transpose(-2, -1), shape (B, h, T_q, T_k). Divide by √d_k, the number "
      "of terms in each head's dot product, not by √d_model.",
      "Mask before the softmax: scores.masked_fill(mask, float('-inf')), then torch.softmax(..., dim=-1) so "
      "that each query's row over the keys sums to 1.",
      "To merge, undo the split in reverse: transpose(1, 2) back to (B, T_q, h, d_k), then .reshape (not .view: "
      "the transposed tensor is not contiguous) to (B, T_q, d_model), and apply W_o.",
  };
  e.complexity =
      "Time: the four projections cost O(B·(T_q + T_k)·d_model²); the scores and the weighted sum cost "
      "O(B·h·T_q·T_k·d_k) = O(B·T_q·T_k·d_model). In self-attention that is O(B·T·d_model² + B·h·T²·d_k): the "
      "projections dominate while T < d_model, the attention beyond.\n\n"
      "Memory: O(B·h·T_q·T_k) for the score and weight tables, beside O(B·T·d_model) for the activations and "
      "4·d_model² weights. The T² tables are what limits long sequences.";
  e.interviewPoints = {
      "Why divide by √d_k? With unit-variance entries a dot product of d_k terms has variance d_k; without the "
      "scale the softmax saturates into near one-hot rows whose gradients vanish. It is the head's d_k, not "
      "d_model, because each head's dot product has d_k terms.",
      "Why the transpose in the split? view(B, T, h, d_k) keeps each token's features together and hands head i "
      "the features i·d_k … (i+1)·d_k − 1; the transpose then makes each head a (T, d_k) matrix. view(B, h, T, d_k) "
      "alone would give a head consecutive tokens' features.",
      "Masking with −inf versus a large negative number: −inf gives a blocked key weight exactly 0; −1e9 works "
      "in float32 but does not fit in half precision (largest magnitude 65504), and neither handles a row where every key is blocked "
      "(−inf gives NaN, a large negative gives a uniform row): such rows need their own rule.",
      "Multi-head versus one big head: the same parameters and the same O(T²·d_model) cost, but h separate "
      "softmaxes let the heads attend to different positions at once (one to the previous token, another to "
      "a matching word).",
      "The softmax must be over the keys (dim=-1): each query distributes one unit of attention over the keys. "
      "A stable softmax subtracts the row's max first; torch.softmax does it for you.",
      "What changes for cross-attention: only where K and V come from (the encoder's tokens), so T_k may differ "
      "from T_q and the score tables are (T_q, T_k).",
  };
  e.cases = maskedSelfCases(100, true);
  return e;
}

// [mha_single_head] -----------------------------------------------------------------------------

Exercise mhaSingleHeadExercise() {
  Exercise e;
  e.id = "mha_single_head";
  e.title = "Multi-head self-attention from a single-head SelfAttention";
  e.summary = "SelfAttention (scaled dot-product, no weights) + MultiHeadSelfAttention with _split_heads, _merge_heads";
  e.framework = Framework::Torch;
  e.statement =
      "The interview version: first write SelfAttention, a module with no weights of its own that computes "
      "scaled dot-product attention, forward(q, k, v, mask=None) with q, k, v of shape (..., T, d_k), for one "
      "head or for all heads at once when the head axis is among the leading ones. It returns (..., T, d_k).\n\n"
      "Then build MultiHeadSelfAttention(embedding_dim, num_heads) on it: W_q, W_k, W_v, W_o, each "
      "nn.Linear(embedding_dim, embedding_dim, bias=False) (keep the names: mhascope loads its weights into "
      "them; nn.Linear(x) computes x Wᵀ), and two helpers: _split_heads(x) turns (B, T, d_model) into "
      "(B, h, T, d_k) and _merge_heads(x) is its exact inverse. forward(x, mask=None) takes x (B, T, d_model), "
      "the one input that queries, keys and values all come from, and returns (B, T, d_model).\n\n"
      "Here d_model = embedding_dim and d_k = d_model / h. The mask, when given, is bool and broadcasts to "
      "(B, h, T, T): True = blocked; the tests pass a causal (T, T) mask and a key-padding (B, 1, 1, T) mask. "
      "Raise ValueError (or fail an assert) when num_heads does not divide embedding_dim.";
  e.signature =
      "class SelfAttention(nn.Module):\n"
      "    def forward(self, q, k, v, mask=None): ...  # (..., T, d_k) -> (..., T, d_k)\n"
      "class MultiHeadSelfAttention(nn.Module):\n"
      "    def __init__(self, embedding_dim, num_heads): ...\n"
      "    def _split_heads(self, x): ...  # (B, T, d_model) -> (B, h, T, d_k)\n"
      "    def _merge_heads(self, x): ...  # (B, h, T, d_k) -> (B, T, d_model)\n"
      "    def forward(self, x, mask=None): ...  # -> (B, T, d_model)";
  e.starterAsset = "mha_single_head.starter.py";
  e.solutionAsset = "mha_single_head.solution.py";
  e.entry = "MultiHeadSelfAttention";
  e.initArgs = {"d_model", "num_heads"};
  e.callArgs = {"x"};
  e.maskArg = "mask";
  e.hints = {
      "SelfAttention never needs to know how many heads there are: write it on the last two axes only "
      "(k.transpose(-2, -1), softmax over dim=-1) and it works for (T, d_k) and for (B, h, T, d_k) alike.",
      "Take d_k inside SelfAttention from the input, q.shape[-1], so the scale is always the head's own.",
      "_split_heads: x.view(B, T, h, d_k).transpose(1, 2). _merge_heads undoes it in reverse order: "
      "transpose(1, 2), then reshape to (B, T, d_model).",
      "Call SelfAttention once with all heads batched: (B, h, T, d_k) tensors and a mask that broadcasts over h; "
      "a Python loop over heads gives the same numbers, only slower.",
  };
  e.complexity =
      "Time O(B·T·d_model² + B·h·T²·d_k): three input projections and one output projection, then per head the "
      "(T, T) scores and the weighted sum. Memory O(B·h·T²) for the score and weight tables, O(B·T·d_model) for "
      "the activations. Looping over heads instead of batching them costs the same arithmetic and needs only "
      "one head's (B, T, T) table at a time.";
  e.interviewPoints = {
      "Why a weightless SelfAttention? Scaled dot-product attention has no parameters: all the learning is in the "
      "projections. Keeping it separate lets the same function serve one head, all heads batched, or a "
      "fused kernel.",
      "_merge_heads must be the exact inverse of _split_heads: transpose back before the reshape. Reshaping "
      "(B, h, T, d_k) straight to (B, T, d_model) interleaves tokens and heads without any error.",
      ".view versus .reshape: after a transpose the tensor is not contiguous, so .view raises; .reshape copies when "
      "it must, or call .contiguous() first.",
      "Batching the heads: the leading axes of @ are batch axes, so one matmul computes every head; a loop over h "
      "gives identical numbers and is what you write when the heads differ in size.",
      "Self- versus cross-attention: the same SelfAttention serves both; only where q, k and v come from changes.",
  };
  e.cases = maskedSelfCases(200, false);
  return e;
}

// [mha_numpy] -----------------------------------------------------------------------------------

Exercise mhaNumpyExercise() {
  Exercise e;
  e.id = "mha_numpy";
  e.title = "Multi-head attention in NumPy";
  e.summary = "multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None) with plain arrays";
  e.framework = Framework::Numpy;
  e.statement =
      "The same layer with no framework: write the function multi_head_attention(X, W_q, W_k, W_v, W_o, "
      "num_heads, mask=None) in NumPy. X is (B, T, d_model), each weight is a (d_model, d_model) array used as "
      "y = X @ W (not transposed: here there is no nn.Linear), num_heads is h and d_k = d_model / h. It returns "
      "(B, T, d_model).\n\n"
      "Project, split into heads (B, h, T, d_k), compute the scores divided by √d_k, hide the blocked keys, take "
      "a numerically stable softmax over the keys (NumPy has none built in: write it), weight the values, merge "
      "the heads and apply W_o. Loop over the heads or vectorise them, as you like.\n\n"
      "The mask, when given, is a bool array that broadcasts to (B, h, T, T): True = blocked; the tests pass a "
      "causal (T, T) mask and a key-padding (B, 1, 1, T) mask. Raise ValueError (or fail an assert) when "
      "num_heads does not divide d_model. One test makes the scores large: a softmax that does not subtract the "
      "row's max overflows there.";
  e.signature =
      "def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None): ...  # -> (B, T, d_model)";
  e.starterAsset = "mha_numpy.starter.py";
  e.solutionAsset = "mha_numpy.solution.py";
  e.entry = "multi_head_attention";
  e.callArgs = {"x", "W_q", "W_k", "W_v", "W_o", "num_heads"};
  e.maskArg = "mask";
  e.hints = {
      "Here y = X @ W: a (B, T, d_model) array times a (d_model, d_model) one; @ broadcasts over the batch axis.",
      "Split with reshape(B, T, h, d_k) then transpose(0, 2, 1, 3) to (B, h, T, d_k); NumPy's transpose takes the "
      "full order of the axes.",
      "The keys' transpose swaps only the last two axes: k_heads.transpose(0, 1, 3, 2) (or np.swapaxes(k, -1, -2)).",
      "A stable softmax: subtract np.max(x, axis=-1, keepdims=True) before np.exp; it changes nothing "
      "mathematically and keeps exp below overflow.",
      "np.where(mask, -np.inf, scores) hides the blocked keys; exp(-inf) is exactly 0.",
  };
  e.complexity =
      "Time O(B·T·d_model² + B·h·T²·d_k), the same as any implementation: four (B·T, d_model) × (d_model, d_model) "
      "products, then per head the scores and the weighted sum. Memory O(B·h·T²) for the score and weight arrays "
      "when the heads are vectorised, O(B·T²) at a time when they are looped; the stable softmax makes a few "
      "temporaries of the same size.";
  e.interviewPoints = {
      "The layout of the weights: a framework's Linear stores W as (d_out, d_in) and computes x Wᵀ; with plain "
      "matrices y = X @ W is (d_in, d_out). Loading one into the other without the transpose is a classic silent "
      "bug when d_in = d_out.",
      "Why subtract the max? softmax(s) = softmax(s − c) for any c; with c = max(s) every exponent is ≤ 0, so exp "
      "never overflows and at least one term is 1, so the sum never underflows to 0.",
      "Why √d_k: the variance of a d_k-term dot product grows with d_k; dividing keeps the scores' spread "
      "independent of the head size.",
      "Looping versus vectorising heads: the same FLOPs; vectorising hands one big batched matmul to BLAS, "
      "looping keeps memory at one head's table. Both must give the same numbers.",
      "Axis discipline: the softmax is over the last axis (the keys); summing over the wrong axis normalises "
      "columns, and the result still has the right shape.",
  };
  e.cases = maskedSelfCases(300, false);
  return e;
}

// [causal] --------------------------------------------------------------------------------------

Exercise causalExercise() {
  Exercise e;
  e.id = "causal";
  e.title = "Causal self-attention, as in a decoder";
  e.summary = "CausalSelfAttention(d_model, num_heads): build the causal mask yourself";
  e.framework = Framework::Torch;
  e.statement =
      "A decoder predicts each token from the ones before it, so token t may attend to tokens 0 … t and never "
      "to a later one. Write CausalSelfAttention(d_model, num_heads) with W_q, W_k, W_v, W_o, each "
      "nn.Linear(d_model, d_model, bias=False) (keep the names: mhascope loads its weights into them; "
      "nn.Linear(x) computes x Wᵀ).\n\n"
      "forward(x) takes x (B, T, d_model) and returns (B, T, d_model). There is no mask argument: build the "
      "causal mask yourself, for the T of the input, so that key k is blocked for query q exactly when k > q. "
      "A token always sees itself. Everything else is multi-head attention as usual: h heads of "
      "d_k = d_model / h features, scores divided by √d_k, blocked keys at −inf before the softmax over the keys.\n\n"
      "Raise ValueError (or fail an assert) when num_heads does not divide d_model. The tests include a single "
      "token (T = 1, which must see itself) and large scores.";
  e.signature =
      "class CausalSelfAttention(nn.Module):\n"
      "    def __init__(self, d_model, num_heads): ...\n"
      "    def forward(self, x): ...  # -> (B, T, d_model)";
  e.starterAsset = "causal.starter.py";
  e.solutionAsset = "causal.solution.py";
  e.entry = "CausalSelfAttention";
  e.initArgs = {"d_model", "num_heads"};
  e.callArgs = {"x"};
  e.hints = {
      "Draw the (T, T) table with queries as rows and keys as columns: the blocked cells are the ones above the "
      "diagonal, where the key comes later than the query.",
      "torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1) is True exactly above the diagonal; "
      "diagonal=0 would also hide each token from itself.",
      "Build the mask from x's own T inside forward, so one module works for any length; a (T, T) mask "
      "broadcasts over B and h.",
      "Fill the blocked scores with float('-inf') before the softmax; the first row then has one visible key and "
      "a weight of exactly 1 on it.",
  };
  e.complexity =
      "Time O(B·T·d_model² + B·h·T²·d_k), the same as unmasked self-attention: a dense implementation computes "
      "all T² scores and throws away the T(T−1)/2 blocked ones (fused kernels skip them, about half the "
      "attention's work). Memory O(B·h·T²) for the tables plus the (T, T) mask.";
  e.interviewPoints = {
      "Why causal? In training every position predicts its next token in parallel; the mask keeps position t "
      "from reading the token it is asked to predict. Without it the training loss is near zero and generation "
      "fails.",
      "triu(diagonal=1), not diagonal=0: a token must see itself. With diagonal=0 the first row is fully blocked "
      "and its softmax is 0/0 = NaN.",
      "Masking with −inf versus adding a large negative number: −inf gives blocked keys exactly 0 weight; a finite "
      "−1e9 does not fit in half precision. A causal row is never fully blocked, so −inf is safe here.",
      "The mask is a function of positions only, so it can be built once for the longest T and sliced, or "
      "replaced by a fused kernel's is_causal flag.",
      "At inference a decoder generates one token at a time: the newest query sees every cached key, so the "
      "mask is needed only for the prompt (see the KV-cache exercise).",
  };
  const PracticeCase base = causal();
  e.cases = {
      makeCase({"self", "causal self-attention", 401}, base),
      makeCase({"batch", "a batch of three", 402}, batch(3, base)),
      makeCase({"one_head", "one head, d_k = d_model", 403}, sized(24, 1, base)),
      makeCase({"head_per_feature", "one feature per head, h = d_model", 404}, sized(8, 8, base)),
      makeCase({"one_token", "a single token: it must see itself", 405}, tokens(1, 1, base)),
      makeCase({"large_scores", "large scores (inputs × 30): the softmax's stability", 406},
               scaledInputs(kLargeInputScale, base)),
      makeCase({"indivisible", "h does not divide d_model: must raise", 407}, raising(sized(10, 4, base))),
  };
  return e;
}

// [gqa_kv_cache] --------------------------------------------------------------------------------

Exercise gqaExercise() {
  Exercise e;
  e.id = "gqa_kv_cache";
  e.title = "Grouped-query attention and one KV-cache decoding step";
  e.summary = "GroupedQueryAttention(d_model, num_heads, num_kv_heads): N shared K/V heads, and step() with a cache";
  e.framework = Framework::Torch;
  e.statement =
      "Grouped-query attention keeps h query heads but only N key/value heads, N dividing h: the g = h / N query "
      "heads of a group share one K/V head. Query head i reads K/V head i // g (heads 0 … g−1 read K/V head 0). "
      "N = h is multi-head attention, N = 1 multi-query attention.\n\n"
      "Write GroupedQueryAttention(d_model, num_heads, num_kv_heads) with W_q and W_o as nn.Linear(d_model, "
      "d_model, bias=False) and W_k, W_v as nn.Linear(d_model, N·d_k, bias=False), d_k = d_model / h (keep the "
      "names: mhascope loads its weights into them; nn.Linear(x) computes x Wᵀ). forward(x), x (B, T, d_model), "
      "is causal self-attention (key k blocked for query q when k > q) and returns (B, T, d_model).\n\n"
      "Then the decoding step that makes generation fast: step(x_t, cache) takes the next token x_t (B, 1, d_model) "
      "and the cache you returned last time (None at the first token), and returns (out_t, cache) with out_t "
      "(B, 1, d_model) equal to forward's row for that position. The cache holds the earlier tokens' keys and "
      "values, N heads of them, so each step projects only its own token. The test feeds a sequence through step "
      "one token at a time and compares every row with the causal forward.\n\n"
      "Raise ValueError (or fail an assert) when num_heads does not divide d_model or num_kv_heads does not divide "
      "num_heads.";
  e.signature =
      "class GroupedQueryAttention(nn.Module):\n"
      "    def __init__(self, d_model, num_heads, num_kv_heads): ...\n"
      "    def forward(self, x): ...  # causal, -> (B, T, d_model)\n"
      "    def step(self, x_t, cache=None): ...  # x_t (B, 1, d_model) -> (out_t (B, 1, d_model), cache)";
  e.starterAsset = "gqa_kv_cache.starter.py";
  e.solutionAsset = "gqa_kv_cache.solution.py";
  e.entry = "GroupedQueryAttention";
  e.initArgs = {"d_model", "num_heads", "num_kv_heads"};
  e.callArgs = {"x"};
  e.stepMethod = "step";
  e.hints = {
      "Split the queries into h heads and the keys and values into N heads: (B, h, T, d_k) and (B, N, T, d_k).",
      "Give each query head its K/V head with k.repeat_interleave(h // N, dim=1): heads 0 … g−1 get K/V head 0. "
      "k.repeat(1, h // N, 1, 1) runs too, but pairs query head i with K/V head i % N.",
      "Write the attention once (from the heads to W_o) and call it from both forward and step.",
      "In step, project only x_t, append its keys and values to the cache along the token axis (torch.cat(..., "
      "dim=2)), and attend with the one new query over every cached key; it needs no mask, since every cached "
      "token is in its past.",
      "Cache the N K/V heads before repeat_interleave: that is where the memory saving is.",
  };
  e.complexity =
      "Forward: time O(B·T·d_model·(d_model + N·d_k)) for the projections plus O(B·h·T²·d_k) for the attention; "
      "memory O(B·h·T²).\n\n"
      "Decoding: a step with t cached tokens costs O(B·(d_model² + h·t·d_k)) instead of recomputing the whole "
      "prefix. The cache stores 2·N·d_k numbers per token per layer (keys and values), 2·B·N·d_k·T·layers in all, "
      "against 2·d_model = 2·h·d_k for multi-head attention: h/N times less.";
  e.interviewPoints = {
      "What GQA saves: the KV cache, which dominates memory (and memory bandwidth) in long-context decoding, "
      "shrinks by h/N; the query heads, and most of the quality, stay.",
      "What the KV cache trades: memory for time. Each step reuses the keys and values of every earlier token "
      "instead of recomputing them, so a step costs O(t) attention instead of O(t²), at 2·N·d_k numbers per "
      "token per layer of storage.",
      "repeat_interleave versus repeat: interleaving gives query head i the K/V head i // (h/N), the grouping the "
      "weights were trained with; tiling gives i % N. Both run, and only the first matches a trained model.",
      "Why the step needs no mask: the newest token may see every cached token; the causal mask only matters when "
      "several queries are processed at once (the prompt).",
      "MQA (N = 1) is the extreme: the smallest cache, at some quality cost; GQA with N = 8 is the usual middle "
      "ground in current models.",
      "Checking a cache: the decoded rows must equal the causal forward's rows, position by position; RoPE or "
      "other positional schemes must use the token's absolute position in the step.",
  };
  PracticeCase base = causal();
  e.cases = {
      makeCase({"gqa", "grouped-query attention", 501}, grouped(2, base)),
      makeCase({"mqa", "multi-query attention, N = 1", 502}, grouped(1, base)),
      makeCase({"mha", "N = h: multi-head attention", 503}, grouped(4, base)),
      makeCase({"decode", "one token at a time through step(), equal to the causal forward", 504},
               decoding(grouped(2, base))),
      makeCase({"indivisible", "N does not divide h: must raise", 505}, raising(grouped(3, base))),
  };
  return e;
}

// [rope] ----------------------------------------------------------------------------------------

Exercise ropeExercise() {
  Exercise e;
  e.id = "rope";
  e.title = "Rotary position embedding on q and k";
  e.summary = "RotaryAttention(d_model, num_heads): causal self-attention with RoPE (rotate-half) on q and k";
  e.framework = Framework::Torch;
  e.statement =
      "Rotary position embedding (RoPE) gives attention the tokens' positions by turning each head's queries and "
      "keys: at position t, pair i of a head's d_k features is rotated by the angle t·θ_i, θ_i = 10000^(−2i/d_k), "
      "i = 0 … d_k/2 − 1. Because q_t and k_j are turned by t·θ and j·θ, their dot product depends on t − j only.\n\n"
      "Use the rotate-half pairing of Hugging Face's Llama: feature i is paired with feature i + d_k/2, and a pair "
      "(a, b) becomes (a·cos − b·sin, b·cos + a·sin). Positions are 0 … T − 1.\n\n"
      "Write RotaryAttention(d_model, num_heads), causal self-attention (key k blocked for query q when k > q) with "
      "W_q, W_k, W_v, W_o, each nn.Linear(d_model, d_model, bias=False) (keep the names: mhascope loads its weights "
      "into them; nn.Linear(x) computes x Wᵀ). forward(x), x (B, T, d_model), returns (B, T, d_model). Rotate q and "
      "k after the split into heads (B, h, T, d_k) and before the scores; the values are not rotated. d_k = "
      "d_model / h must be even. Raise ValueError (or fail an assert) when num_heads does not divide d_model.";
  e.signature =
      "class RotaryAttention(nn.Module):\n"
      "    def __init__(self, d_model, num_heads): ...\n"
      "    def forward(self, x): ...  # causal, RoPE on q and k, -> (B, T, d_model)";
  e.starterAsset = "rope.starter.py";
  e.solutionAsset = "rope.solution.py";
  e.entry = "RotaryAttention";
  e.initArgs = {"d_model", "num_heads"};
  e.callArgs = {"x"};
  e.hints = {
      "Compute the angles once: a (T, d_k/2) table of t·θ_i from torch.arange(T) and θ_i = 10000^(−2i/d_k).",
      "Split each head's features into halves a = x[..., :d_k/2] and b = x[..., d_k/2:]: a[i] and b[i] are pair i.",
      "Rotated: torch.cat([a·cos − b·sin, b·cos + a·sin], dim=-1); the (T, d_k/2) cos and sin broadcast over B "
      "and h.",
      "Rotate both q and k (never v), after the split into heads and before the scores; then causal attention "
      "as usual.",
  };
  e.complexity =
      "Time O(B·T·d_model² + B·h·T²·d_k): the rotation adds only O(B·h·T·d_k) to causal self-attention, and the "
      "cos/sin tables O(T·d_k). Memory O(B·h·T²) for the tables, as without RoPE; no learned parameters are added.";
  e.interviewPoints = {
      "Why RoPE gives relative positions: rotations compose, so (R_t q)·(R_j k) = q·(R_{j−t} k): the score depends "
      "on the offset t − j, not on the absolute positions, while nothing is added to the token's features.",
      "Why rotate q and k but not v: the position should change which tokens are attended to (the scores), not "
      "what is read from them.",
      "Rotate-half versus interleaved pairs: Llama's code pairs i with i + d_k/2, the original formulation pairs "
      "2i with 2i + 1. They are the same rotation on permuted features; loading weights trained with one into "
      "the other breaks the model.",
      "The frequencies: θ_i falls geometrically from 1 to about 1/10000, so fast pairs resolve nearby offsets and "
      "slow ones far ones; long-context methods (NTK scaling, YaRN, Llama 3.1's rule) change these frequencies.",
      "With a KV cache, the rotated keys are cached and each new token is rotated with its absolute position.",
  };
  PracticeCase base = rotary(causal());
  e.cases = {
      makeCase({"self", "causal self-attention with RoPE", 601}, base),
      makeCase({"batch", "a batch of three", 602}, batch(3, base)),
      makeCase({"one_head", "one head, d_k = d_model", 603}, sized(24, 1, base)),
      makeCase({"large_scores", "large scores (inputs × 30): the softmax's stability", 604},
               scaledInputs(kLargeInputScale, base)),
      makeCase({"indivisible", "h does not divide d_model: must raise", 605}, raising(sized(10, 4, base))),
  };
  return e;
}

std::vector<Exercise> makeExercises() {
  return {mhaExercise(), mhaSingleHeadExercise(), mhaNumpyExercise(), causalExercise(), gqaExercise(),
          ropeExercise()};
}

}  // namespace

const std::vector<Exercise>& allExercises() {
  static const std::vector<Exercise> exercises = makeExercises();  // built once, never changed
  return exercises;
}

const Exercise* findExercise(std::string_view id) {
  for (const Exercise& e : allExercises()) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

std::string exerciseIdsList() {
  std::string s;
  for (const Exercise& e : allExercises()) {
    if (!s.empty()) s += ", ";
    s += e.id;
  }
  return s;
}

}  // namespace mhascope::practice
