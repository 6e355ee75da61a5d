#!/usr/bin/python3
"""Train the small model of tests/fixtures/models/trained/ and write its reference (committed).

Run with Debian's interpreter (python3-torch 1.13 + python3-numpy):
    /usr/bin/python3 scripts/gen_trained_fixture.py

Seeded and single-threaded, so a second run writes the same bytes. It writes nothing else: the
random fixtures are scripts/gen_model_fixtures.py's, whose safetensors writer, GPT-2 reference
forward and circuits formulas this script imports.

The model: GPT-2 layout (model_type "gpt2", F32, names without prefix), 2 layers x 2 heads,
d_model 64, n_positions 64, its own unembedding (tie_word_embeddings false, lm_head.weight (V,
d_model), no bias), attention only: the MLP's c_fc / c_proj weights and biases are in the file, as
every GPT-2 folder has them, but all zero (ln_2 at weight 1, bias 0), so
each block's MLP adds exactly 0 (gelu_new(0) = 0). Its tokenizer is GPT-2's byte level with NO
merges: vocab.json holds the 256 byte tokens (GPT-2's byte-to-unicode characters, ids 0-255 in
GPT-2's order, so 'a' is 64 ... 'z' 89) and <|endoftext|> = 256; merges.txt only its version line;
so every byte of a text is one token.

The task it is trained on (TRAIN below: AdamW, batches of `batch` sequences, `steps` steps): each
sequence a run of 5-12 distinct random lowercase letters repeated to fill seq + 1 letters (the
run's length drawn per sequence, so no fixed offset predicts the repeats); the loss is the
next-token cross-entropy at all seq positions. The positions a model can predict are those from
the run's second period on (the run is known only once it has been seen). The result is a layer-0
previous-token head and induction heads in layer 1 (the numbers are in reference.json).

reference/trained/ holds, for sequences k = 0 (TEXT, a text with repeats), 1 (the probe: PROBE_N
tokens drawn with replacement from the text's distinct token ids, then the same PROBE_N again) and
2 (the text's first token alone, T = 1), in gen_model_fixtures.py's layout:
  s{k}_tokens.npy  (T,) int64        the token ids
  s{k}_normed.npy  (L, T, d_model)   each layer's attention input (after ln_1)
  s{k}_attn.npy    (L, h, T, T)      each layer's attention weights
  s{k}_hidden.npy  (L, T, d_model)   the residual stream after each layer (before ln_f)
  s{k}_logits.npy  (T, vocab)
  s{k}_offsets.npy (L, h, T)         each head's offset profile: [d] = mean over queries t >= d of
                                     a[t][t - d] (d = 0 self, d = 1 the previous token)
all float32 but the tokens, computed by gen_model_fixtures.gpt2_forward on the weights as stored,
and reference.json:
  config, training: TRAIN (below) and the last step's loss
  sequences: {"text": {...}, "probe": {...}} each with
    file       "s0" / "s1": the .npy prefix above
    text       (text only) the text; probe: alphabet (the distinct ids drawn from), n, seed
    tokens     the ids
    top        argmax of the logits at each position (the first maximum)
    heads      [layer][head] {prevToken, prevTokenNew, prevTokenSeen, self, sink, entropy,
               induction, inductionQueries, copying, copyingQueries}: the role scores exactly as
               core/analysis/head_scores.hpp defines them (induction = prefix matching; with no
               counted query it is 0 and inductionQueries 0) and the Train mode's copying
               (core/train/probes.cpp inductionScores): over the queries t with an earlier copy
               (x_j = x_t, j + 1 < t), k* = the first argmax of a[t][:t+1], the head's own output
               o_t = (sum_k a[t][k] v_k) W_o^i (values with their bias, no output bias), centred
               (minus the mean of its entries), times ln_f's gain, times lm_head^T; copied when the
               top logit (first maximum) is x_{k*}; copying = copied / counted
    induction_heads  [[layer, head], ...] passing the rule: layer >= 1, induction >= 0.5 and
               copying >= 0.5
  circuits: from the weights, in gen_model_fixtures.py's circuits convention (gains folded into
    W_q, W_k, W_v and U = diag(ln_f gain) lm_head^T, E = wte, biases and centring left out):
    copying     [layer][head] sum Re lambda / sum |lambda| over E OV U's eigenvalues
    composition [[from layer, from head, to layer, to head, q, k, v], ...] for every earlier head
    virtual     [[a layer, a head, b layer, b head, copying], ...] for every (layer-0 head a,
                layer-1 head b): the virtual head OV^a OV^b, its copying score the same ratio over
                E OV^a OV^b U's eigenvalues
  ablation: on ABLATION_BATCH sequences of the training task (seed ABLATION_SEED), the mean loss
    and accuracy (argmax = target) over the predictable targets (the run's second period on), with
    nothing removed (base), each head removed alone (single: [[layer, head, loss, accuracy]]) and
    every pair (pairs: [[l1, h1, l2, h2, loss, accuracy]]); a head removed is its output zeroed
    before c_proj (c_proj's bias stays). previous_token_head: the layer-0 head whose removal costs
    the most loss; induction_head: the layer-1 head likewise; roles_agree: on the text, the
    previous-token head has layer 0's highest prevTokenNew (the previous-token weight at a token's
    first occurrence, where an induction circuit's previous-token head works), at least 0.5, and
    the induction head passes the rule.
"""
import json
import math
import os
import shutil
import sys
import time

# One thread for NumPy's BLAS and LAPACK too (the eigenvalue solves): the same summation order on
# every run, so the bytes repeat. Set before NumPy is loaded.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_model_fixtures as gmf  # noqa: E402

NAME = "trained"
CONFIG = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "n_embd": 64,
    "n_head": 2,
    "n_layer": 2,
    "n_positions": 64,
    "n_ctx": 64,
    "vocab_size": 257,
    "tie_word_embeddings": False,
    "layer_norm_epsilon": 1e-5,
    "activation_function": "gelu_new",
    "bos_token_id": 256,
    "eos_token_id": 256,
}
# AdamW; wte and wpe start normal with std embed_init (PyTorch's nn.Embedding default), lm_head with
# std head_init
TRAIN = {"seed": 6, "steps": 2500, "batch": 16, "seq": 32, "lr": 1e-3, "weight_decay": 1e-4, "embed_init": 1.0,
         "head_init": 0.1}
FIRST_LETTER = 64  # 'a' in GPT-2's byte order ('!' is 0)
TEXT = "qwertyuiopqwertyuio"
PROBE_N, PROBE_SEED = 16, 7
ABLATION_BATCH, ABLATION_SEED = 512, 99
ROLE_THRESHOLD, COPYING_THRESHOLD = 0.5, 0.5  # core/train/probes.hpp


# ---------------------------------------------------------------------------------------------
# Tokenizer: GPT-2's byte level, no merges
# ---------------------------------------------------------------------------------------------
def encode(text):
    bs, _ = gmf.gpt2_byte_chars()
    id_of = {b: i for i, b in enumerate(bs)}
    return [id_of[b] for b in text.encode("utf-8")]


def write_tokenizer(folder):
    _, chars = gmf.gpt2_byte_chars()
    vocab = {c: i for i, c in enumerate(chars)}
    vocab["<|endoftext|>"] = 256
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")


# ---------------------------------------------------------------------------------------------
# The task and training
# ---------------------------------------------------------------------------------------------
def task_batch(g, B, T):
    """(tokens (B, T), first predictable target position (B,)): a run of 5-12 distinct letters
    repeated to fill T; targets from the run's second period on are predictable."""
    run = torch.randint(5, 13, (B,), generator=g)
    letters = torch.rand(B, 26, generator=g).argsort(-1) + FIRST_LETTER
    return letters.gather(1, torch.arange(T)[None, :] % run[:, None]), run


def init_weights(g):
    d, V, P, L = CONFIG["n_embd"], CONFIG["vocab_size"], CONFIG["n_positions"], CONFIG["n_layer"]
    r = lambda *shape, scale: torch.randn(*shape, generator=g) * scale
    W = {"wte.weight": r(V, d, scale=TRAIN["embed_init"]), "wpe.weight": r(P, d, scale=TRAIN["embed_init"])}
    for l in range(L):
        p = f"h.{l}."
        W[p + "ln_1.weight"], W[p + "ln_1.bias"] = torch.ones(d), torch.zeros(d)
        W[p + "attn.c_attn.weight"], W[p + "attn.c_attn.bias"] = r(d, 3 * d, scale=d ** -0.5), torch.zeros(3 * d)
        W[p + "attn.c_proj.weight"], W[p + "attn.c_proj.bias"] = r(d, d, scale=d ** -0.5), torch.zeros(d)
    W["ln_f.weight"], W["ln_f.bias"] = torch.ones(d), torch.zeros(d)
    if not CONFIG.get("tie_word_embeddings", True):
        W["lm_head.weight"] = r(V, d, scale=TRAIN["head_init"])
    return W


def zero_mlps():
    """The tensors every GPT-2 folder has that this attention-only model does not train: ln_2 at
    its identity and the MLP all zero."""
    d = CONFIG["n_embd"]
    W = {}
    for l in range(CONFIG["n_layer"]):
        p = f"h.{l}."
        W[p + "ln_2.weight"], W[p + "ln_2.bias"] = torch.ones(d), torch.zeros(d)
        W[p + "mlp.c_fc.weight"], W[p + "mlp.c_fc.bias"] = torch.zeros(d, 4 * d), torch.zeros(4 * d)
        W[p + "mlp.c_proj.weight"], W[p + "mlp.c_proj.bias"] = torch.zeros(4 * d, d), torch.zeros(d)
    return W


def batched_forward(W, ids, removed=()):
    """The attention-only model on (B, T) ids -> logits (B, T, V); `removed` holds (layer, head)
    pairs whose output is zeroed before c_proj. Used to train and to ablate; the reference's
    attention and logits come from gen_model_fixtures.gpt2_forward instead."""
    d, h, eps = CONFIG["n_embd"], CONFIG["n_head"], CONFIG["layer_norm_epsilon"]
    B, T = ids.shape
    dk = d // h
    x = W["wte.weight"][ids] + W["wpe.weight"][:T]
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(CONFIG["n_layer"]):
        p = f"h.{l}."
        a = gmf.layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = a @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = (t.reshape(B, T, h, dk).transpose(1, 2) for t in qkv.split(d, dim=-1))
        w = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(dk)).masked_fill(blocked, float("-inf")), dim=-1)
        y = w @ v  # (B, h, T, d_k)
        keep = torch.tensor([0.0 if (l, i) in removed else 1.0 for i in range(h)])
        y = (y * keep[None, :, None, None]).transpose(1, 2).reshape(B, T, d)
        x = x + y @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
    return gmf.layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], eps) @ gmf.gpt2_unembedding(CONFIG, W).T


def train():
    torch.manual_seed(TRAIN["seed"])
    g = torch.Generator().manual_seed(TRAIN["seed"])
    W = init_weights(g)
    for t in W.values():
        t.requires_grad_(True)
    opt = torch.optim.AdamW(list(W.values()), lr=TRAIN["lr"], weight_decay=TRAIN["weight_decay"])
    V = CONFIG["vocab_size"]
    began = time.time()
    loss = None
    with torch.enable_grad():
        for _ in range(TRAIN["steps"]):
            ids, _ = task_batch(g, TRAIN["batch"], TRAIN["seq"] + 1)
            logits = batched_forward(W, ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    W = {k: v.detach().clone() for k, v in W.items()}
    W.update(zero_mlps())
    return W, time.time() - began, float(loss)


# ---------------------------------------------------------------------------------------------
# Reference scores
# ---------------------------------------------------------------------------------------------
def earlier_copies(ids, t):
    """The j with x_j = x_t and j + 1 < t (head_scores.hpp's TokenRepeats)."""
    return [j for j in range(t - 1) if ids[j] == ids[t]]


def role_scores(a, ids):
    """head_scores.hpp's HeadScores of one head's a (T, T) float64."""
    T = len(ids)
    s = dict(prevToken=0.0, prevTokenNew=0.0, prevTokenSeen=0.0, self=0.0, sink=0.0, entropy=0.0, induction=0.0,
             inductionQueries=0)
    new = seen = 0
    for t in range(T):
        row = a[t, :t + 1]
        s["self"] += row[t]
        s["entropy"] -= float(sum(w * math.log(w) for w in row if w > 0))
        if t >= 1:
            s["prevToken"] += row[t - 1]
            s["sink"] += row[0]
            was_seen = ids[t] in ids[:t]
            s["prevTokenSeen" if was_seen else "prevTokenNew"] += row[t - 1]
            seen, new = seen + was_seen, new + (not was_seen)
        copies = earlier_copies(ids, t)
        if copies:
            s["induction"] += sum(row[j + 1] for j in copies)
            s["inductionQueries"] += 1
    s["self"] /= max(T, 1)
    s["entropy"] /= max(T, 1)
    if T > 1:
        s["prevToken"] /= T - 1
        s["sink"] /= T - 1
    s["prevTokenNew"] /= max(new, 1)
    s["prevTokenSeen"] /= max(seen, 1)
    s["induction"] /= max(s["inductionQueries"], 1)
    return {k: (v if k == "inductionQueries" else float(v)) for k, v in s.items()}


def copying(W, normed, a, ids, l, i):
    """(copied / counted, counted) of head i of layer l: the Train mode's copying (see the header)."""
    f = lambda t: t.detach().to(torch.float64).numpy()
    d, h = CONFIG["n_embd"], CONFIG["n_head"]
    dk = d // h
    p = f"h.{l}."
    wv = f(W[p + "attn.c_attn.weight"])[:, 2 * d + i * dk:2 * d + (i + 1) * dk]
    bv = f(W[p + "attn.c_attn.bias"])[2 * d + i * dk:2 * d + (i + 1) * dk]
    wo = f(W[p + "attn.c_proj.weight"])[i * dk:(i + 1) * dk, :]
    values = normed.astype(np.float64) @ wv + bv  # (T, d_k)
    gain, unembed = f(W["ln_f.weight"]), f(gmf.gpt2_unembedding(CONFIG, W)).T
    copied = counted = 0
    for t in range(len(ids)):
        if not earlier_copies(ids, t):
            continue
        counted += 1
        attended = int(np.argmax(a[t, :t + 1]))
        direct = (a[t, :t + 1] @ values[:t + 1]) @ wo
        logits = ((direct - direct.mean()) * gain) @ unembed
        copied += int(np.argmax(logits)) == ids[attended]
    return (copied / counted if counted else 0.0), counted


def offset_profile(a):
    """(T,) [d] = mean over t >= d of a[t][t - d]."""
    T = a.shape[0]
    return np.array([np.mean([a[t, t - dd] for t in range(dd, T)]) for dd in range(T)])


def is_induction(layer, s):
    return layer >= 1 and s["induction"] >= ROLE_THRESHOLD and s["copying"] >= COPYING_THRESHOLD


def write_sequence(W, ref, k, ids):
    L, h = CONFIG["n_layer"], CONFIG["n_head"]
    normed, attn, hidden, logits = gmf.gpt2_forward(CONFIG, W, torch.tensor(ids))
    normed, attn = torch.stack(normed).numpy().astype(np.float32), torch.stack(attn).numpy().astype(np.float32)
    np.save(os.path.join(ref, f"s{k}_tokens.npy"), np.array(ids, dtype=np.int64))
    np.save(os.path.join(ref, f"s{k}_normed.npy"), normed)
    np.save(os.path.join(ref, f"s{k}_attn.npy"), attn)
    np.save(os.path.join(ref, f"s{k}_hidden.npy"), torch.stack(hidden).numpy().astype(np.float32))
    np.save(os.path.join(ref, f"s{k}_logits.npy"), logits.numpy().astype(np.float32))
    T = len(ids)
    a64 = attn.astype(np.float64)  # the float32 weights the engine compares against
    offsets = np.zeros((L, h, T))
    heads = []
    for l in range(L):
        row = []
        for i in range(h):
            s = role_scores(a64[l, i], ids)
            s["copying"], s["copyingQueries"] = copying(W, normed[l], a64[l, i], ids, l, i)
            offsets[l, i] = offset_profile(a64[l, i])
            row.append(s)
        heads.append(row)
    np.save(os.path.join(ref, f"s{k}_offsets.npy"), offsets.astype(np.float32))
    return {"file": f"s{k}", "tokens": ids, "top": [int(v) for v in logits.argmax(-1)], "heads": heads,
            "induction_heads": [[l, i] for l in range(L) for i in range(h) if is_induction(l, heads[l][i])]}


def circuits(W):
    L, h = CONFIG["n_layer"], CONFIG["n_head"]
    layers, E, U = gmf.attention_factors(CONFIG, W)
    mats = {(l, i): gmf.head_matrices(layers, l, i, h) for l in range(L) for i in range(h)}
    heads = [(l, i) for l in range(L) for i in range(h)]
    return {
        "copying": [[gmf.copying_score(E, mats[(l, i)][1], U) for i in range(h)] for l in range(L)],
        "composition": [[la, ha, lb, hb, *gmf.composition(mats[(la, ha)][1], *mats[(lb, hb)])]
                        for lb, hb in heads for la, ha in heads if la < lb],
        "virtual": [[0, a, 1, b, gmf.copying_score(E, mats[(0, a)][1] @ mats[(1, b)][1], U)]
                    for a in range(h) for b in range(h)],
    }


def ablation(W):
    L, h = CONFIG["n_layer"], CONFIG["n_head"]
    g = torch.Generator().manual_seed(ABLATION_SEED)
    ids, first = task_batch(g, ABLATION_BATCH, TRAIN["seq"] + 1)
    targets = ids[:, 1:]
    predictable = torch.arange(1, TRAIN["seq"] + 1)[None, :] >= first[:, None]

    def run(removed):
        logits = batched_forward(W, ids[:, :-1], removed)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
        right = (logits.argmax(-1) == targets).to(torch.float64)
        return float(loss[predictable].to(torch.float64).mean()), float(right[predictable].mean())

    heads = [(l, i) for l in range(L) for i in range(h)]
    base = run(())
    single = [[l, i, *run({(l, i)})] for l, i in heads]
    pairs = [[*a, *b, *run({a, b})] for n, a in enumerate(heads) for b in heads[n + 1:]]
    cost = {(l, i): loss - base[0] for l, i, loss, _ in single}
    prev = max(range(h), key=lambda i: cost[(0, i)])
    ind = max(range(h), key=lambda i: cost[(1, i)])
    return {"batch": ABLATION_BATCH, "seed": ABLATION_SEED, "seq": TRAIN["seq"],
            "base": {"loss": base[0], "accuracy": base[1]}, "single": single, "pairs": pairs,
            "previous_token_head": [0, prev], "induction_head": [1, ind]}


def main():
    torch.set_num_threads(1)  # one summation order, so the bytes repeat
    torch.use_deterministic_algorithms(True)
    torch.set_grad_enabled(False)
    W, seconds, loss = train()
    folder = os.path.join(gmf.ROOT, NAME)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(CONFIG, torch_dtype="float32"), f, indent=2)
    gmf.save_safetensors(os.path.join(folder, "model.safetensors"), W, "F32")
    write_tokenizer(folder)
    W = gmf.stored(W, "F32")
    ref = os.path.join(gmf.ROOT, "reference", NAME)
    shutil.rmtree(ref, ignore_errors=True)
    os.makedirs(ref)

    text_ids = encode(TEXT)
    # The forward that trained and ablates (attention only) is the folder's model: the reference's
    # MLPs, all zero, add nothing.
    full = gmf.gpt2_forward(CONFIG, W, torch.tensor(text_ids))[3]
    assert torch.allclose(batched_forward(W, torch.tensor([text_ids]))[0], full, atol=1e-5, rtol=0), \
        "the attention-only forward is not the folder's model"
    alphabet = sorted(set(text_ids))
    g = torch.Generator().manual_seed(PROBE_SEED)
    drawn = [alphabet[int(j)] for j in torch.randint(0, len(alphabet), (PROBE_N,), generator=g)]
    text = dict(text=TEXT, **write_sequence(W, ref, 0, text_ids))
    probe = dict(alphabet=alphabet, n=PROBE_N, seed=PROBE_SEED, **write_sequence(W, ref, 1, drawn + drawn))
    write_sequence(W, ref, 2, text_ids[:1])
    ab = ablation(W)
    prev, ind = ab["previous_token_head"], ab["induction_head"]
    scores = text["heads"]
    prev_new = [hs["prevTokenNew"] for hs in scores[0]]
    ab["roles_agree"] = (max(range(CONFIG["n_head"]), key=lambda i: prev_new[i]) == prev[1]
                         and prev_new[prev[1]] >= ROLE_THRESHOLD and is_induction(1, scores[1][ind[1]]))
    out = {"config": CONFIG, "training": dict(TRAIN, loss=loss),
           "sequences": {"text": text, "probe": probe}, "circuits": circuits(W), "ablation": ab}
    with open(os.path.join(ref, "reference.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"trained in {seconds:.1f} s, final loss {loss:.4f}")
    for name, s in (("text", text), ("probe", probe)):
        for l, row in enumerate(s["heads"]):
            for i, hs in enumerate(row):
                print(f"{name} L{l}H{i}: prev {hs['prevToken']:.3f} induction {hs['induction']:.3f} "
                      f"copying {hs['copying']:.3f} self {hs['self']:.3f}")
        print(f"{name} induction heads {s['induction_heads']}")
    print("circuits", json.dumps(out["circuits"]))
    print("ablation", json.dumps(ab))


if __name__ == "__main__":
    main()
