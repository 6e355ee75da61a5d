#!/usr/bin/python3
"""Writes the practice mode's library of wrong solutions, tests/fixtures/practice/wrong/<mistake>.py:
each is its exercise's reference solution (assets/practice/<id>.solution.py) with exactly one known
mistake put in, its first lines "# mhascope exercise: <id>", "# mistake: <id>", "# stage: <stage>" and
what is wrong, and the mistaken line ending with "# the mistake".

    gen_practice_wrong.py ROOT            write them
    gen_practice_wrong.py ROOT --check    exit 1 if a file differs from what would be written

Each mistake is a list of (text of the solution, its replacement); a solution changed so that a text
is no longer found is an error here, not a silently stale fixture.
"""
import os
import sys
import textwrap

M = "  # the mistake"
WRONG = []  # (mistake, exercise, stage, what is wrong, [(solution text, its replacement)])


def w(mistake, ex, stage, why, *subs):
    WRONG.append((mistake, ex, stage, why, subs))


w("scale_by_sqrt_d_model", "mha", "scaled_scores", "the scores are divided by sqrt(d_model) instead of the head's sqrt(d_k).",
  ("        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T_q, T_k)\n",
   "        scaled_scores = scores / math.sqrt(self.d_model)   # (B, h, T_q, T_k)" + M + "\n"))
w("no_scaling", "mha", "scaled_scores", "the scores are not scaled at all.",
  ("        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T_q, T_k)\n",
   "        scaled_scores = scores                             # (B, h, T_q, T_k)" + M + "\n"))
w("scale_by_d_k", "mha", "scaled_scores", "the scores are divided by d_k instead of sqrt(d_k).",
  ("        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T_q, T_k)\n",
   "        scaled_scores = scores / self.d_k                  # (B, h, T_q, T_k)" + M + "\n"))
w("split_without_transpose", "mha", "q_heads", "the split views (B, T, d_model) as (B, h, T, d_k) directly, with no transpose: each head receives a block of consecutive tokens' features.",
  ("        x = x.view(B, T, self.num_heads, self.d_k)         # (B, T, h, d_k): head i owns features i*d_k .. (i+1)*d_k - 1\n        return x.transpose(1, 2)                           # (B, h, T, d_k): each head a (T, d_k) matrix\n",
   "        return x.view(B, self.num_heads, T, self.d_k)      # (B, h, T, d_k)" + M + "\n"))
w("view_on_transposed", "mha", "concat", "the merge calls .view on the transposed head outputs, which are not contiguous: RuntimeError (call .contiguous() or .reshape).",
  ("        concat = head_outputs.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, d_model): heads side by side\n",
   "        concat = head_outputs.transpose(1, 2).view(B, T_q, self.d_model)  # (B, T_q, d_model)" + M + "\n"))
w("mask_after_softmax", "mha", "weights", "the softmax runs on the unmasked scores and the blocked weights are zeroed afterwards: the rows no longer sum to 1.",
  ("""        if mask is not None:
            # -inf, not a large negative number: a blocked key then gets weight exactly 0.
            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (B, h, T_q, T_k)
        else:
            masked_scores = scaled_scores
        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T_q, T_k): each query's row sums to 1
""", """        weights = torch.softmax(scaled_scores, dim=-1)     # (B, h, T_q, T_k)
        if mask is not None:
            weights = weights.masked_fill(mask, 0.0)       # (B, h, T_q, T_k)""" + M + "\n"))
w("softmax_over_queries", "mha", "weights", "the softmax runs over the query axis (dim=-2): the columns sum to 1, not the rows.",
  ("        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T_q, T_k): each query's row sums to 1\n",
   "        weights = torch.softmax(masked_scores, dim=-2)     # (B, h, T_q, T_k)" + M + "\n"))
w("mask_inverted", "mha", "masked_scores", "the mask is read as True = keep: the allowed keys are the ones filled with -inf.",
  ('            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (B, h, T_q, T_k)\n',
   '            masked_scores = scaled_scores.masked_fill(~mask, float("-inf"))  # (B, h, T_q, T_k)' + M + "\n"))
w("mask_ignored", "mha", "masked_scores", "the mask argument is accepted but never used: the softmax runs on the scaled scores as they are.",
  ("""        if mask is not None:
            # -inf, not a large negative number: a blocked key then gets weight exactly 0.
            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (B, h, T_q, T_k)
        else:
            masked_scores = scaled_scores
        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T_q, T_k): each query's row sums to 1
""", "        weights = torch.softmax(scaled_scores, dim=-1)     # (B, h, T_q, T_k)" + M + "\n"))
w("masked_with_zero", "mha", "masked_scores", "the blocked scores are set to 0 instead of -inf before the softmax: blocked keys keep a weight of exp(0).",
  ('            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (B, h, T_q, T_k)\n',
   '            masked_scores = scaled_scores.masked_fill(mask, 0.0)  # (B, h, T_q, T_k)' + M + "\n"))
w("no_max_subtraction", "mha", "weights", "a hand-written softmax exp(s) / sum exp(s) without subtracting the row's max: exp overflows float32 past 88, and the large_scores case gives inf / inf = NaN.",
  ("        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T_q, T_k): each query's row sums to 1\n",
   "        weights = torch.exp(masked_scores) / torch.exp(masked_scores).sum(dim=-1, keepdim=True)  # (B, h, T_q, T_k)" + M + "\n"))
w("sum_heads", "mha", "concat", "the heads are summed over the head axis instead of concatenated; to give W_o the d_model features it expects, the (B, T_q, d_k) sum is repeated h times along the features.",
  ("        concat = head_outputs.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, d_model): heads side by side\n",
   "        concat = head_outputs.sum(dim=1).repeat(1, 1, self.num_heads)  # (B, T_q, d_model)" + M + "\n"))
w("merge_without_transpose", "mha", "concat", "the merge reshapes (B, h, T_q, d_k) straight to (B, T_q, d_model) without moving the head axis back next to d_k.",
  ("        concat = head_outputs.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, d_model): heads side by side\n",
   "        concat = head_outputs.reshape(B, T_q, self.d_model)  # (B, T_q, d_model)" + M + "\n"))
w("no_output_projection", "mha", "output", "the concatenated heads are returned without the output projection W_o.",
  ("        output = self.W_o(concat)                          # (B, T_q, d_model)\n",
   "        output = concat                                    # (B, T_q, d_model)" + M + "\n"))
w("projection_transposed", "mha_numpy", "q_proj", "the query projection multiplies by W_q transposed (the nn.Linear habit x W^T), although here y = X @ W.",
  ("    q = X @ W_q                                            # (B, T, d_model)\n",
   "    q = X @ W_q.T                                          # (B, T, d_model)" + M + "\n"))
w("causal_hides_diagonal", "causal", "masked_scores", "the causal mask is triu(diagonal=0): each token is hidden from itself too (and the first token sees nothing).",
  ("        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # (T, T), True = blocked\n",
   "        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)  # (T, T), True = blocked" + M + "\n"))
w("causal_wrong_direction", "causal", "masked_scores", "the causal mask is tril(diagonal=-1): it blocks the past keys and lets every token see the future.",
  ("        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # (T, T), True = blocked\n",
   "        mask = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)  # (T, T), True = blocked" + M + "\n"))
w("kv_heads_tiled", "gqa_kv_cache", "k_heads", "the K/V heads are tiled with repeat (head i reads K/V head i % N) instead of repeat_interleave (head i // (h/N)).",
  ("""        k_heads = k_heads.repeat_interleave(self.group, dim=1)  # (B, h, T_k, d_k)
        v_heads = v_heads.repeat_interleave(self.group, dim=1)  # (B, h, T_k, d_k)
""", "        k_heads, v_heads = k_heads.repeat(1, self.group, 1, 1), v_heads.repeat(1, self.group, 1, 1)  # (B, h, T_k, d_k)" + M + "\n"))
w("cache_not_kept", "gqa_kv_cache", "output", "the decoding step never adds its keys and values to the cache: each step attends to its own token only.",
  ("""        if cache is not None:
            k_past, v_past = cache
            k_new = torch.cat([k_past, k_new], dim=2)      # (B, N, t + 1, d_k)
            v_new = torch.cat([v_past, v_new], dim=2)      # (B, N, t + 1, d_k)
""", ""),
  ("        out_t = self.attend(q_heads, k_new, v_new, None)   # (B, 1, d_model)\n",
   "        out_t = self.attend(q_heads, k_new, v_new, None)   # (B, 1, d_model)" + M + "\n"))
w("rope_interleaved", "rope", "q_rotated", "RoPE pairs features (2i, 2i + 1), the interleaved convention, instead of (i, i + d_k/2), the rotate-half one asked for.",
  ("    a, b = x[..., :half], x[..., half:]                    # (B, h, T, d_k/2) each: the two members of each pair\n",
   "    a, b = x[..., 0::2], x[..., 1::2]                      # (B, h, T, d_k/2) each: features 2i and 2i + 1" + M + "\n"),
  ("    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)  # (B, h, T, d_k): each pair turned\n",
   "    return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)  # (B, h, T, d_k): pairs back in place\n"))
w("rope_on_queries_only", "rope", "k_rotated", "RoPE turns the queries but not the keys: the scores no longer depend on relative positions only.",
  ("        k_rotated = rotate(k_heads, angles)                # (B, h, T, d_k); v is not rotated\n", ""),
  ("        scores = q_rotated @ k_rotated.transpose(-2, -1)   # (B, h, T, T)\n",
   "        scores = q_rotated @ k_heads.transpose(-2, -1)     # (B, h, T, T)" + M + "\n"))
w("no_divisibility_check", "mha", "q_proj", "nothing checks that num_heads divides d_model. This file splits the heads with x.split(d_k, dim=-1), the same as view + transpose whenever h divides d_model; with d_model 10 and h 4, d_k = 10 // 4 = 2 and the split silently makes 5 heads of 2 features, so the call runs instead of raising.",
  ("""        # Each head takes an equal slice of the features: refuse sizes that leave a remainder.
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
""", ""),
  ("        self.d_k = d_model // num_heads\n", "        self.d_k = d_model // num_heads" + M + "\n"),
  ("""        B, T, _ = x.shape                                  # x: (B, T, d_model)
        x = x.view(B, T, self.num_heads, self.d_k)         # (B, T, h, d_k): head i owns features i*d_k .. (i+1)*d_k - 1
        return x.transpose(1, 2)                           # (B, h, T, d_k): each head a (T, d_k) matrix
""", """        # x: (B, T, d_model); one slice of d_k consecutive features per head, stacked on a new head axis
        return torch.stack(x.split(self.d_k, dim=-1), dim=1)  # (B, h, T, d_k)
"""))


def wrong_files(root):
    """{file name: text} of every wrong solution."""
    files = {}
    for mistake, ex, stage, why, subs in WRONG:
        with open(os.path.join(root, "assets", "practice", ex + ".solution.py"), encoding="utf-8") as f:
            text = f.read().replace(": a reference solution", "", 1)
        marker = f"# mhascope exercise: {ex}\n"
        if not text.startswith(marker):
            raise SystemExit(f"{ex}.solution.py does not start with {marker!r}")
        for old, new in subs:
            if text.count(old) != 1:
                raise SystemExit(f"{mistake}: {ex}.solution.py holds {text.count(old)} copies of {old!r}, not one")
            text = text.replace(old, new)
        assert text.count("# the mistake") == 1, mistake
        head = marker + f"# mistake: {mistake}\n# stage: {stage}\n"
        head += "".join("# " + line + "\n" for line in textwrap.wrap("A wrong solution with exactly one mistake: " + why, 100))
        head += f"# Written by scripts/gen_practice_wrong.py from assets/practice/{ex}.solution.py.\n"
        files[mistake + ".py"] = head + text[len(marker):]
    return files


def main():
    root, check = sys.argv[1], "--check" in sys.argv[2:]
    out = os.path.join(root, "tests", "fixtures", "practice", "wrong")
    stale = []
    for name, text in wrong_files(root).items():
        path = os.path.join(out, name)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() == text:
                        continue
            except FileNotFoundError:
                pass
            stale.append(name)
        else:
            os.makedirs(out, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("stale (run scripts/gen_practice_wrong.py ROOT): " + ", ".join(stale))
        return 1
    print(f"{len(WRONG)} wrong solutions " + ("up to date" if check else "written"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
