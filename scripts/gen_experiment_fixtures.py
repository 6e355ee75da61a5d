#!/usr/bin/python3
"""Reference numbers of mhascope's experiments (core/experiments), written to tests/fixtures/reference/.

Run with Debian's interpreter (python3-torch 1.13 + python3-numpy):
    /usr/bin/python3 scripts/gen_experiment_fixtures.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 scripts/gen_experiment_fixtures.py --bench \
        --mhascope build/app/mhascope --folder /tmp/gpt2-small-random --tokens 20 --rounds 5

Independent of mhascope's code: the fixture folders' safetensors are read here, and the forwards are written
from the published formulas (GPT-2: modeling_gpt2.py, LayerNorm with the biased variance, Conv1D y = x W + b,
gelu_new; Llama: modeling_llama.py, RMSNorm in float32, RoPE in rotate_half form, grouped K/V heads by
repeat_interleave, SwiGLU), in float32 as the fixtures' models are stored, each with a hook at the sites
mhascope names (resid_pre, q, k, v after the split and RoPE, pattern, head outputs before W_o, attn_out,
mlp_out). For each case (a folder, a clean and a corrupted token sequence of one length, a right and a wrong
answer token) it writes:
  clean, corrupted        the metric of each run at the final position: logit[right] - logit[wrong] ("logit-diff")
                          or softmax(logits)[right] ("prob")
  sweeps                  [{site, direction, metric, rows, cols, values}]: the patched run's metric per site,
                          row-major, in mhascope's grid layout (resid/attn/mlp: layer x position; head, q,
                          pattern: layer x head; k, v: layer x K/V head; head-position: (layer*h + head) x
                          position). Denoise: the corrupted run with the clean run's numbers at the site; noise:
                          the clean run with the corrupted run's.
  dla                     direct logit attribution on the clean run at the final position: each component's
                          output through the final norm with its scale frozen at the clean run's (LayerNorm:
                          centred, divided by sqrt(var + eps) of the final row, times the gain; RMSNorm: divided
                          by its rms, times the gain), dotted with lm_head[right] - lm_head[wrong]: head (L, h),
                          output_bias (L), mlp (L), token_embedding, position_embedding, final_norm_bias,
                          and logit_diff, the model's own.
--only scores writes only tests/fixtures/reference/score_decomposition.json (a plain run writes every file): the QK
score decomposition of one head's pre-softmax score s(q, k) = q . k / sqrt(d_k) on the clean run, written from
the same published formulas with every non-linear number frozen at the run's own value for that row: the stream
before the layer at each position as the sum of its writers (token embedding, GPT-2's position embedding, each
earlier head's A V times its d_k rows of W_o, each earlier c_proj bias, each earlier MLP's output); the input
norm applied to each writer with its scale frozen (LayerNorm: the writer centred by its own mean, times 1/sqrt(var
+ eps) of the whole row, times the gain, the norm's bias a term of its own; RMSNorm: times 1/rms of the row, times
the gain); head i's columns of W_q (the key's K/V head's of W_k, repeat_interleave's grouping), the projection's
bias a term of its own; Qwen3's q/k norm (modeling_qwen3.py: RMSNorm of each head's q and k before RoPE) with its
1/rms frozen at the row's own projection; Llama's RoPE (rotate_half at the term's position) on each term. table[a][b] = q_a . k_b /
sqrt(d_k) (with "versus" k': q_a . (k_b(k) - k_b(k')) / sqrt(d_k)), and model_score (model_value: minus the
versus score) from the forward's own q and k.
path_patching.json (--only path writes it alone, from experiments.json's cases): path patching's edges and
                          sweeps (path_patch: the definition of core/experiments/path_patching.hpp), the metric of
                          each edge's patched run (logit-diff).
--bench: times `mhascope patch --site head` (the whole command) against the same per-head denoising sweep in
PyTorch (head_sweep_partial: the same partial forwards from each head's layer on) on a GPT-2-small-shaped folder
of random weights (scripts/bench_model.py writes it, with a byte-level tokenizer.json) over --tokens bytes, rounds
alternating, and prints each round and the medians.
"""
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

# Before torch (and its BLAS) load: one thread for OpenBLAS's pthread build and for OpenMP (the pthread OpenBLAS
# ignores torch.set_num_threads), for the timing and for bytes that repeat.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "tests", "fixtures", "models")
OUT = os.path.join(ROOT, "tests", "fixtures", "reference", "experiments.json")
SCORES_OUT = os.path.join(ROOT, "tests", "fixtures", "reference", "score_decomposition.json")
PATH_OUT = os.path.join(ROOT, "tests", "fixtures", "reference", "path_patching.json")


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    base, out = 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {info['dtype']}; this reference reads F32 folders")
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(raw[base + a : base + b], dtype="<f4").copy()).reshape(info["shape"])
    return out


class Model:
    """One folder's weights and config, and its forward with a hook at every site."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        self.W = read_safetensors(os.path.join(folder, "model.safetensors"))
        c = self.cfg
        self.gpt2 = c["model_type"] == "gpt2"
        if self.gpt2:
            self.d, self.h, self.L, self.eps = c["n_embd"], c["n_head"], c["n_layer"], c["layer_norm_epsilon"]
            self.N = self.h
            self.U = self.W["wte.weight"] if c.get("tie_word_embeddings", True) else self.W["lm_head.weight"]
        else:
            self.d, self.h, self.L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
            self.N, self.eps = c.get("num_key_value_heads", self.h), c["rms_norm_eps"]
            self.U = self.W["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else self.W["lm_head.weight"]
        self.dk = c.get("head_dim") or self.d // self.h  # Qwen3 sets its heads' width

    def norm(self, x, w, b=None, scale=None):
        """The family's norm; scale given: that per-row factor instead of the row's own (the frozen scale)."""
        if self.gpt2:
            mu = x.mean(-1, keepdim=True)
            s = 1 / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + self.eps) if scale is None else scale
            return (x - mu) * s * w + (b if b is not None else 0)
        s = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) if scale is None else scale
        return w * (x * s)

    def qk_norm(self, t, w):
        return w * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps))

    def final_scale(self, x):
        if self.gpt2:
            mu = x.mean(-1, keepdim=True)
            return 1 / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + self.eps)
        return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def embed(self, ids):
        if self.gpt2:
            tok, pos = self.W["wte.weight"][ids], self.W["wpe.weight"][: len(ids)]
            return tok + pos, tok, pos
        tok = self.W["model.embed_tokens.weight"][ids]
        return tok, tok, torch.zeros_like(tok)

    def forward(self, ids, hook=lambda site, layer, t: t, start=None, logits=True):
        """Final stream (T, d) and logits (T, V); hook(site, layer, tensor) returns the tensor to go on with.
        start = (layer, stream before it): the forward from there (what a partial forward computes)."""
        W, T, h, N, dk, d = self.W, len(ids), self.h, self.N, self.dk, self.d
        first, x = (0, self.embed(ids)[0]) if start is None else start
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        if not self.gpt2:
            inv = 1.0 / (self.cfg["rope_theta"] ** (torch.arange(0, dk, 2, dtype=torch.int64).float() / dk))
            ang = torch.arange(T).float()[:, None] * inv[None, :]
            emb = torch.cat((ang, ang), dim=-1)
            cos, sin = emb.cos(), emb.sin()
            rot = lambda t: torch.cat((-t[..., dk // 2 :], t[..., : dk // 2]), dim=-1)
        for l in range(first, self.L):
            x = hook("resid", l, x)
            if self.gpt2:
                P = f"h.{l}."
                a = self.norm(x, W[P + "ln_1.weight"], W[P + "ln_1.bias"])
                qkv = a @ W[P + "attn.c_attn.weight"] + W[P + "attn.c_attn.bias"]
                q, k, v = (t.reshape(T, h, dk).transpose(0, 1) for t in qkv.split(d, dim=1))
            else:
                P = f"model.layers.{l}."
                a = self.norm(x, W[P + "input_layernorm.weight"])
                q = (a @ W[P + "self_attn.q_proj.weight"].T).reshape(T, h, dk).transpose(0, 1)
                k = (a @ W[P + "self_attn.k_proj.weight"].T).reshape(T, N, dk).transpose(0, 1)
                v = (a @ W[P + "self_attn.v_proj.weight"].T).reshape(T, N, dk).transpose(0, 1)
                if P + "self_attn.q_norm.weight" in W:  # Qwen3's q/k norm: RMSNorm of each head's q and k, before RoPE
                    q, k = self.qk_norm(q, W[P + "self_attn.q_norm.weight"]), self.qk_norm(k, W[P + "self_attn.k_norm.weight"])
                q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            q, k, v = hook("q", l, q), hook("k", l, k), hook("v", l, v)
            kk, vv = k.repeat_interleave(h // N, dim=0), v.repeat_interleave(h // N, dim=0)
            s = (q @ kk.transpose(1, 2)) / math.sqrt(dk)
            p = hook("pattern", l, torch.softmax(s.masked_fill(causal, float("-inf")), dim=-1))
            z = hook("head", l, (p @ vv).transpose(0, 1).reshape(T, h * dk))
            if self.gpt2:
                o = z @ W[P + "attn.c_proj.weight"] + W[P + "attn.c_proj.bias"]
            else:
                o = z @ W[P + "self_attn.o_proj.weight"].T
            x = x + hook("attn", l, o)
            if self.gpt2:
                m = self.norm(x, W[P + "ln_2.weight"], W[P + "ln_2.bias"])
                f = m @ W[P + "mlp.c_fc.weight"] + W[P + "mlp.c_fc.bias"]
                f = 0.5 * f * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (f + 0.044715 * torch.pow(f, 3.0))))
                y = f @ W[P + "mlp.c_proj.weight"] + W[P + "mlp.c_proj.bias"]
            else:
                m = self.norm(x, W[P + "post_attention_layernorm.weight"])
                y = (torch.nn.functional.silu(m @ W[P + "mlp.gate_proj.weight"].T) * (m @ W[P + "mlp.up_proj.weight"].T)) @ W[P + "mlp.down_proj.weight"].T
            x = x + hook("mlp", l, y)
        if not logits:
            return x, None
        fw, fb = (self.W["ln_f.weight"], self.W["ln_f.bias"]) if self.gpt2 else (self.W["model.norm.weight"], None)
        return x, self.norm(x, fw, fb) @ self.U.T

    def logit_diff_of_last(self, x, right, wrong):
        """logit[right] - logit[wrong] of the final stream's last row: two rows of the unembedding, not all V."""
        fw, fb = (self.W["ln_f.weight"], self.W["ln_f.bias"]) if self.gpt2 else (self.W["model.norm.weight"], None)
        n = self.norm(x[-1:], fw, fb)[0]
        return float(n @ self.U[right] - n @ self.U[wrong])


def metric_of(logits, right, wrong, kind):
    z = logits[-1].double()
    return float(z[right] - z[wrong]) if kind == "logit-diff" else float(torch.softmax(z, 0)[right])


SITE_OF = {"resid": "resid", "attn": "attn", "mlp": "mlp", "head": "head", "head-position": "head",
           "q": "q", "k": "k", "v": "v", "pattern": "pattern"}


def grid(model, site, T):
    L, h, N = model.L, model.h, model.N
    return {"resid": (L, T), "attn": (L, T), "mlp": (L, T), "head": (L, h), "head-position": (L * h, T),
            "q": (L, h), "k": (L, N), "v": (L, N), "pattern": (L, h)}[site]


def patch_block(model, site, t, donor, row, col):
    """t with the grid cell (row, col)'s part replaced by donor's."""
    t = t.clone()
    dk, h = model.dk, model.h
    if site in ("resid", "attn", "mlp"):
        t[col] = donor[col]
    elif site == "head":
        t[:, col * dk : (col + 1) * dk] = donor[:, col * dk : (col + 1) * dk]
    elif site == "head-position":
        i = row % h
        t[col, i * dk : (i + 1) * dk] = donor[col, i * dk : (i + 1) * dk]
    else:  # q, k, v, pattern: (heads, T, ...) head col
        t[col] = donor[col]
    return t


def sweep(model, clean, corrupted, right, wrong, site, direction, kind):
    donor_ids, receiver_ids = (clean, corrupted) if direction == "denoise" else (corrupted, clean)
    kept = {}

    def keep(s, l, t):
        kept[(s, l)] = t.clone()
        return t

    model.forward(donor_ids, keep)
    rows, cols = grid(model, site, len(clean))
    per_layer = model.h if site == "head-position" else 1
    values = []
    for r in range(rows):
        layer = r // per_layer
        for c in range(cols):
            donor = kept[(SITE_OF[site], layer)]

            def hook(s, l, t, r=r, c=c, layer=layer, donor=donor):
                return patch_block(model, site, t, donor, r, c) if (s == SITE_OF[site] and l == layer) else t

            _, logits = model.forward(receiver_ids, hook)
            values.append(metric_of(logits, right, wrong, kind))
    return {"site": site, "direction": direction, "metric": kind, "rows": rows, "cols": cols, "values": values}


def dla(model, ids, right, wrong):
    outs = {}

    def keep(s, l, t):
        outs[(s, l)] = t.clone()
        return t

    x, logits = model.forward(ids, keep)
    scale = model.final_scale(x)[-1:]
    fw, fb = (model.W["ln_f.weight"], model.W["ln_f.bias"]) if model.gpt2 else (model.W["model.norm.weight"], None)
    u = (model.U[right] - model.U[wrong]).double()
    proj = lambda v: float(model.norm(v[None, :].double(), fw.double(), None, scale.double())[0] @ u)
    _, tok, pos = model.embed(ids)
    dk, h = model.dk, model.h
    heads, bias, mlp = [], [], []
    for l in range(model.L):
        z = outs[("head", l)][-1]
        if model.gpt2:
            Wo, bo = model.W[f"h.{l}.attn.c_proj.weight"], model.W[f"h.{l}.attn.c_proj.bias"]
        else:
            Wo, bo = model.W[f"model.layers.{l}.self_attn.o_proj.weight"].T, None
        heads.append([proj(z[i * dk : (i + 1) * dk] @ Wo[i * dk : (i + 1) * dk]) for i in range(h)])
        bias.append(proj(bo) if bo is not None else 0.0)
        mlp.append(proj(outs[("mlp", l)][-1]))
    return {"head": heads, "output_bias": bias, "mlp": mlp, "token_embedding": proj(tok[-1]),
            "position_embedding": proj(pos[-1]) if model.gpt2 else 0.0,
            "final_norm_bias": float(fb.double() @ u) if fb is not None else 0.0,
            "logit_diff": metric_of(logits, right, wrong, "logit-diff")}


def answers(model, clean, corrupted):
    """right: the clean run's top next token; wrong: the corrupted run's top one other than right."""
    _, zc = model.forward(clean)
    _, zx = model.forward(corrupted)
    right = int(torch.argmax(zc[-1]))
    order = torch.argsort(zx[-1], descending=True).tolist()
    wrong = next(i for i in order if i != right)
    return right, wrong


def case(name, folder, clean, corrupted, right=None, wrong=None, full=True):
    model = Model(os.path.join(MODELS, folder))
    clean, corrupted = torch.tensor(clean), torch.tensor(corrupted)
    if right is None:
        right, wrong = answers(model, clean, corrupted)
    out = {"name": name, "folder": folder, "clean_tokens": clean.tolist(), "corrupted_tokens": corrupted.tolist(),
           "right": right, "wrong": wrong}
    for kind in ("logit-diff", "prob"):
        out[kind] = {"clean": metric_of(model.forward(clean)[1], right, wrong, kind),
                     "corrupted": metric_of(model.forward(corrupted)[1], right, wrong, kind)}
    sites = ["resid", "attn", "mlp", "head", "head-position", "q", "k", "v", "pattern"]
    runs = [(s, "denoise", "logit-diff") for s in sites]
    if full:
        runs += [(s, "noise", "logit-diff") for s in ("resid", "head", "v")] + [("head", "denoise", "prob")]
    out["sweeps"] = [sweep(model, clean, corrupted, right, wrong, s, d, k) for s, d, k in runs]
    out["dla"] = dla(model, clean, right, wrong)
    return out


class Stop(Exception):
    """Raised by a hook to end a forward once it has what it wanted."""


def path_patch(model, clean, corrupted, right, wrong, sender, receiver, into, direction):
    """The metric of one path-patching edge (path_patching.hpp's definition): every head frozen at the receiving
    run except the sender, only the direct path: the receiver's input `into` (q, k or v: the receiver's head of that
    table, a K/V head for k and v) computed from the receiving run's stream before its layer plus
    (z_donor(sender) - z_receiving(sender)) @ W_o[sender rows]; the rest of the receiving run recomputed from it."""
    donor_ids, receiver_ids = (clean, corrupted) if direction == "denoise" else (corrupted, clean)
    (ls, hs), (lr, hr), dk = sender, receiver, model.dk
    kept = {}

    def keep(tag):
        def hook(s, l, t):
            kept[(tag, s, l)] = t.clone()
            return t
        return hook

    model.forward(donor_ids, keep("donor"), logits=False)
    model.forward(receiver_ids, keep("receiver"), logits=False)
    if model.gpt2:
        Wo = model.W[f"h.{ls}.attn.c_proj.weight"]  # Conv1D: (h*dk, d), y = z W
    else:
        Wo = model.W[f"model.layers.{ls}.self_attn.o_proj.weight"].T
    cols = slice(hs * dk, (hs + 1) * dk)
    change = kept[("donor", "head", ls)][:, cols] - kept[("receiver", "head", ls)][:, cols]
    x = kept[("receiver", "resid", lr)] + change @ Wo[cols]
    taken = {}

    def take(s, l, t):
        if s == into and l == lr:
            taken["t"] = t[hr].clone()
            raise Stop()
        return t

    try:
        model.forward(receiver_ids, take, start=(lr, x), logits=False)
    except Stop:
        pass

    def put(s, l, t):
        if s == into and l == lr:
            t = t.clone()
            t[hr] = taken["t"]
        return t

    xf, _ = model.forward(receiver_ids, put, start=(lr, kept[("receiver", "resid", lr)]), logits=False)
    return model.logit_diff_of_last(xf, right, wrong)


def path_case(name, folder, clean, corrupted, right, wrong, edges, sweeps):
    """Single edges [(sender, receiver, into, direction)] and sweeps [(kind, fixed head, into)] (denoising): the
    senders sweep holds every head of the earlier layers, the receivers sweep every head (K/V head for k, v) of the
    later ones, row-major over (layer, head), None where no edge."""
    model = Model(os.path.join(MODELS, folder))
    clean, corrupted = torch.tensor(clean), torch.tensor(corrupted)
    out = {"name": name, "folder": folder, "clean_tokens": clean.tolist(), "corrupted_tokens": corrupted.tolist(),
           "right": right, "wrong": wrong,
           "clean": metric_of(model.forward(clean)[1], right, wrong, "logit-diff"),
           "corrupted": metric_of(model.forward(corrupted)[1], right, wrong, "logit-diff"), "edges": [], "sweeps": []}
    for sender, receiver, into, direction in edges:
        out["edges"].append({"sender": list(sender), "receiver": list(receiver), "into": into, "direction": direction,
                             "value": path_patch(model, clean, corrupted, right, wrong, sender, receiver, into, direction)})
    for kind, fixed, into in sweeps:
        cols = model.N if (kind == "receivers" and into != "q") else model.h
        values = []
        for l in range(model.L):
            for i in range(cols):
                s, r = ((l, i), tuple(fixed)) if kind == "senders" else (tuple(fixed), (l, i))
                values.append(path_patch(model, clean, corrupted, right, wrong, s, r, into, "denoise")
                              if s[0] < r[0] else None)
        out["sweeps"].append({"sweep": kind, "fixed": list(fixed), "into": into, "rows": model.L, "cols": cols,
                              "values": values})
    return out


def path_fixtures(cases):
    """Path patching on the experiments' own cases (their tokens and answers): GPT-2 and Llama (GQA: k and v
    receivers are K/V heads) edges and sweeps, and the trained model's previous-token head -> induction head."""
    by = {c["name"]: c for c in cases}
    out = []
    c = by["gpt2"]
    out.append(path_case("gpt2", "gpt2", c["clean_tokens"], c["corrupted_tokens"], c["right"], c["wrong"],
                         [((0, 1), (1, 2), "q", "denoise"), ((0, 3), (1, 0), "k", "noise"), ((0, 2), (1, 3), "v", "denoise")],
                         [("senders", (1, 2), "k"), ("receivers", (0, 1), "v")]))
    c = by["llama_gqa"]
    out.append(path_case("llama_gqa", "llama_gqa", c["clean_tokens"], c["corrupted_tokens"], c["right"], c["wrong"],
                         [((0, 1), (1, 3), "q", "denoise"), ((0, 2), (1, 1), "k", "denoise"), ((0, 0), (1, 0), "v", "noise")],
                         [("senders", (1, 2), "q"), ("receivers", (0, 3), "k")]))
    c = by["trained_induction"]
    out.append(path_case("trained_induction", "trained", c["clean_tokens"], c["corrupted_tokens"], c["right"], c["wrong"],
                         [], [("receivers", (0, 1), "q"), ("receivers", (0, 1), "k"), ("receivers", (0, 1), "v")]))
    return out


def trained_prompt():
    """A run of 8 distinct letters seen twice (clean: "qwertyuiqwertyui") and the same second period after 8
    other letters whose 'i' is followed by 'h' (corrupted: "abcdfgihqwertyui"): at the last 'i' induction
    completes 'q' in the clean run and 'h' in the corrupted one."""
    first = 64  # 'a' in GPT-2's byte order
    run = [first + c for c in (16, 22, 4, 17, 19, 24, 20, 8)]  # q w e r t y u i
    other = [first + c for c in (0, 1, 2, 3, 5, 6, 8, 7)]      # a b c d f g i h
    return run + run, other + run


def score_terms(model, ids, layer, head, query, key, versus=None):
    """The QK score decomposition (see the module's docstring), in float64 from the float32 forward's tables."""
    kept = {}

    def keep(s, l, t):
        kept[(s, l)] = t.clone()
        return t

    model.forward(torch.tensor(ids), keep)
    W, d, h, N, dk = model.W, model.d, model.h, model.N, model.dk
    _, tok, pos = model.embed(torch.tensor(ids))
    names = ["token embedding"] + (["position embedding"] if model.gpt2 else [])
    for l in range(layer):
        names += [f"head {l}.{i}" for i in range(h)] + ([f"output bias {l}"] if model.gpt2 else []) + [f"MLP {l}"]

    def writers(p):
        rows = [tok[p]] + ([pos[p]] if model.gpt2 else [])
        for l in range(layer):
            z = kept[("head", l)][p]
            if model.gpt2:
                Wo, bo = W[f"h.{l}.attn.c_proj.weight"], W[f"h.{l}.attn.c_proj.bias"]
            else:
                Wo, bo = W[f"model.layers.{l}.self_attn.o_proj.weight"].T, None
            rows += [z[i * dk : (i + 1) * dk].double() @ Wo[i * dk : (i + 1) * dk].double() for i in range(h)]
            rows += ([bo.double()] if bo is not None else []) + [kept[("mlp", l)][p].double()]
        return torch.stack([r.double() for r in rows])

    g = head // (h // N)
    if model.gpt2:
        P = f"h.{layer}."
        nw, nb = W[P + "ln_1.weight"].double(), W[P + "ln_1.bias"].double()
        Wqkv, bqkv = W[P + "attn.c_attn.weight"].double(), W[P + "attn.c_attn.bias"].double()
        Wq, bq = Wqkv[:, head * dk : (head + 1) * dk], bqkv[head * dk : (head + 1) * dk]
        Wk, bk = Wqkv[:, d + g * dk : d + (g + 1) * dk], bqkv[d + g * dk : d + (g + 1) * dk]
        qg = kg = None
    else:
        P = f"model.layers.{layer}."
        nw, nb = W[P + "input_layernorm.weight"].double(), None
        Wq = W[P + "self_attn.q_proj.weight"].double().T[:, head * dk : (head + 1) * dk]
        Wk = W[P + "self_attn.k_proj.weight"].double().T[:, g * dk : (g + 1) * dk]
        bq = bk = None
        qg, kg = W.get(P + "self_attn.q_norm.weight"), W.get(P + "self_attn.k_norm.weight")
        inv = 1.0 / (model.cfg["rope_theta"] ** (torch.arange(0, dk, 2, dtype=torch.int64).double() / dk))
    names += (["norm bias"] if nb is not None else [])

    def side(p, Wp, bp, gain=None):
        x = kept[("resid", layer)][p : p + 1].double()
        scale = model.final_scale(x)  # the row's own 1/sigma or 1/rms, frozen
        n = model.norm(writers(p), nw, None, scale)
        u = [n @ Wp] + ([nb[None, :] @ Wp] if nb is not None else []) + ([bp[None, :]] if bp is not None else [])
        u = torch.cat(u)
        if gain is not None:  # the q/k norm's 1/rms frozen at this row's own projection (the head's d_k features)
            f = model.norm(x, nw, nb) @ Wp + (bp if bp is not None else 0)
            u = u * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + model.eps) * gain.double()
        if not model.gpt2:
            ang = p * inv
            cos, sin = torch.cat((ang, ang)).cos(), torch.cat((ang, ang)).sin()
            u = u * cos + torch.cat((-u[:, dk // 2 :], u[:, : dk // 2]), dim=-1) * sin
        return u

    Q = side(query, Wq, bq, qg)
    K = side(key, Wk, bk, kg)
    if versus is not None:
        K = K - side(versus, Wk, bk, kg)
    table = (Q @ K.T) / math.sqrt(dk)
    q_own, k_own = kept[("q", layer)][head, query].double(), kept[("k", layer)][g, key].double()
    own = float(q_own @ k_own) / math.sqrt(dk)
    value = own - (float(q_own @ kept[("k", layer)][g, versus].double()) / math.sqrt(dk) if versus is not None else 0.0)
    qn = names + (["b_q"] if bq is not None else [])
    kn = names + (["b_k"] if bk is not None else [])
    return {"tokens": list(ids), "layer": layer, "head": head, "query": query, "key": key,
            "versus": -1 if versus is None else versus, "query_terms": qn, "key_terms": kn,
            "table": table.flatten().tolist(), "model_score": own, "model_value": value}


def score_cases():
    """The decomposition on the GPT-2 and Llama (GQA, RoPE) fixtures' last layer and on the trained folder's induction
    head (1.1) at a repeated letter ("t", position 12) and the letter after its first occurrence ("y", 5)."""
    g = torch.Generator().manual_seed(4747)
    out = []
    ids = torch.randint(0, 100, (9,), generator=g).tolist()
    out.append(dict(name="gpt2", folder="gpt2", **score_terms(Model(os.path.join(MODELS, "gpt2")), ids, 1, 2, 7, 3)))
    out.append(dict(name="gpt2_versus", folder="gpt2",
                    **score_terms(Model(os.path.join(MODELS, "gpt2")), ids, 1, 2, 7, 3, versus=5)))
    ids = torch.randint(0, 100, (8,), generator=g).tolist()
    out.append(dict(name="llama_gqa", folder="llama_gqa",
                    **score_terms(Model(os.path.join(MODELS, "llama_gqa")), ids, 1, 3, 6, 2)))
    out.append(dict(name="llama_gqa_versus", folder="llama_gqa",
                    **score_terms(Model(os.path.join(MODELS, "llama_gqa")), ids, 1, 3, 6, 2, versus=6)))
    ids = torch.randint(0, 100, (8,), generator=g).tolist()
    out.append(dict(name="qwen3", folder="qwen3", **score_terms(Model(os.path.join(MODELS, "qwen3")), ids, 1, 3, 6, 2)))
    clean, _ = trained_prompt()
    out.append(dict(name="trained_induction", folder="trained",
                    **score_terms(Model(os.path.join(MODELS, "trained")), clean, 1, 1, 12, 5)))
    return out


def head_sweep_partial(model, clean, corrupted, right, wrong):
    """The per-head denoising sweep by mhascope's method: the clean run's head outputs and the corrupted run's stream
    before each layer kept once, then per head one forward from its layer on, and the logit difference from two
    unembedding rows."""
    kept, streams = {}, {}

    def keep(s, l, t):
        if s == "head":
            kept[l] = t.clone()
        return t

    def keep_stream(s, l, t):
        if s == "resid":
            streams[l] = t.clone()
        return t

    model.forward(clean, keep, logits=False)
    model.forward(corrupted, keep_stream, logits=False)
    dk, values = model.dk, []
    for l in range(model.L):
        for i in range(model.h):
            def hook(s, layer, t, l=l, i=i):
                if s != "head" or layer != l:
                    return t
                t = t.clone()
                t[:, i * dk : (i + 1) * dk] = kept[l][:, i * dk : (i + 1) * dk]
                return t
            x, _ = model.forward(corrupted, hook, start=(l, streams[l]), logits=False)
            values.append(model.logit_diff_of_last(x, right, wrong))
    return values


def bench(args):
    """mhascope patch --site head against head_sweep_partial on a GPT-2-small-shaped folder (bench_model.py's random
    weights, with its byte-level tokenizer.json so a text of T bytes is T tokens), rounds alternating."""
    import bench_model  # noqa: E402 (the folder's writer; it pins glibc's malloc thresholds too)
    bench_model.ensure_folder(args.folder)
    if not os.path.exists(os.path.join(args.folder, "tokenizer.json")):
        bench_model.write_byte_tokenizer(args.folder)
    T = args.tokens
    clean = "".join(chr(ord("a") + (7 * t) % 26) for t in range(T))
    corrupted = clean[: T // 2] + ("z" if clean[T // 2] != "z" else "y") + clean[T // 2 + 1 :]
    model = Model(args.folder)
    b2i = {b: i for i, b in enumerate(bench_model.ref.gpt2_byte_chars()[0])}
    to_ids = lambda text: torch.tensor([b2i[b] for b in text.encode()])
    right, wrong = 1, 2
    cmd = [args.mhascope, "patch", "--model", args.folder, "--clean", clean, "--corrupt", corrupted, "--answer",
           f"#{right}", "--wrong", f"#{wrong}", "--site", "head", "--threads", str(args.threads)]
    ours, theirs = [], []
    with torch.no_grad():
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True)
            ours.append(time.perf_counter() - t0)
            if out.returncode != 0:
                sys.exit("mhascope patch failed: " + out.stderr.strip())
            t0 = time.perf_counter()
            head_sweep_partial(model, to_ids(clean), to_ids(corrupted), right, wrong)
            theirs.append(time.perf_counter() - t0)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"CPU: {bench_model.cpu_name()}")
    print(f"per-head denoising sweep of GPT-2 small's shape ({model.L} x {model.h} = {model.L * model.h} heads), "
          f"T = {T}, mhascope --threads {args.threads}, PyTorch one thread, {args.rounds} rounds")
    print("  mhascope patch (the whole command: open, tokenize, sweep):", " ".join(f"{t:.3f}" for t in ours),
          f"median {mo:.3f} s")
    print("  PyTorch, the same sweep (weights already in memory):       ", " ".join(f"{t:.3f}" for t in theirs),
          f"median {mt:.3f} s")
    print(f"  PyTorch / ours = {mt / mo:.2f}")


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", action="store_true", help="time the per-head sweep instead of writing the fixtures")
    ap.add_argument("--mhascope", default=os.path.join(ROOT, "build", "app", "mhascope"))
    ap.add_argument("--folder", default="/tmp/gpt2-small-random", help="--bench: the GPT-2-small-shaped folder (reused)")
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="--bench: mhascope's --threads (sites at once; PyTorch: one)")
    ap.add_argument("--only", choices=["all", "path", "scores"], default="all",
                    help="path: write path_patching.json alone (from experiments.json's cases, which it reads); "
                         "scores: score_decomposition.json alone")
    args = ap.parse_args()
    if args.bench:
        bench(args)
        return
    torch.set_num_threads(1)
    if args.only == "path":
        with open(OUT) as f:
            cases = json.load(f)["cases"]
        with torch.no_grad():
            write_path(path_fixtures(cases))
        return
    g = torch.Generator().manual_seed(47)
    with torch.no_grad():
        scores = score_cases()
    with open(SCORES_OUT, "w") as f:
        json.dump({"cases": scores}, f, indent=1)
        f.write("\n")
    print(f"wrote {SCORES_OUT}")
    if args.only == "scores":
        return
    cases = []
    with torch.no_grad():
        ids = torch.randint(0, 100, (8,), generator=g).tolist()
        bad = list(ids)
        bad[2], bad[5] = (bad[2] + 17) % 100, (bad[5] + 31) % 100
        cases.append(case("gpt2", "gpt2", ids, bad))
        ids = torch.randint(0, 100, (7,), generator=g).tolist()
        bad = list(ids)
        bad[1], bad[4] = (bad[1] + 13) % 100, (bad[4] + 29) % 100
        cases.append(case("llama_gqa", "llama_gqa", ids, bad))
        clean, corrupted = trained_prompt()
        cases.append(case("trained_induction", "trained", clean, corrupted, full=False))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")
    with torch.no_grad():
        write_path(path_fixtures(cases))


def write_path(cases):
    with open(PATH_OUT, "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {PATH_OUT}")


if __name__ == "__main__":
    main()
