#!/usr/bin/python3
"""Generate the model-folder fixtures in tests/fixtures/models/ (committed).

Run with Debian's interpreter (python3-torch 1.13 + python3-numpy; no `transformers` needed):
    /usr/bin/python3 scripts/gen_model_fixtures.py

It builds small random checkpoints in the exact Hugging Face layouts and runs a PyTorch reference
forward of each architecture, written here from the published formulas:

  gpt2      learned positions, LayerNorm (biased variance, eps = layer_norm_epsilon), Conv1D layers
            (weight (in, out): y = x W + b; c_attn (d, 3d) holds Q | K | V side by side), causal
            softmax(Q K^T / sqrt(d_k)), gelu_new (GPT-2's tanh GELU:
            0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), final ln_f, logits = ln_f(x) wte^T.
  llama     RMSNorm as Hugging Face computes it in float32: x * rsqrt(mean(x^2) + eps) * w;
  mistral   nn.Linear layers (weight (out, in): y = x W^T); RoPE in Hugging Face's rotate_half form:
  qwen2     inv_freq_i = theta^(-2i/d_k), angle = position * inv_freq_i, emb = cat(angle, angle),
            q' = q cos(emb) + rotate_half(q) sin(emb), rotate_half(x) = cat(-x2, x1);
            grouped K/V heads (query head i reads K/V head i // (h/N), repeat_interleave);
            causal mask, Mistral's sliding window W (query i sees key j when i - W < j <= i);
            SwiGLU MLP down(silu(gate(x)) * up(x)); Qwen2's biases on q/k/v (not o);
            Llama 3's rope_scaling (rope_type "llama3": low frequencies divided by `factor`,
            a smooth blend between the two wavelength bounds); logits through lm_head or the
            tied embedding.

Folders written (each a model folder: config.json + weights):
  gpt2              F32, names without prefix, with the h.{i}.attn.bias mask buffers real GPT-2
                    files carry (the loader ignores them)
  gpt2_f16          the same weights stored F16, names with the "transformer." prefix
  llama_gqa         F32, h = 4 query heads over N = 2 K/V heads, untied lm_head
  llama_gqa_bf16    the same weights stored BF16
  llama_sharded     the same weights in two shards + model.safetensors.index.json
  qwen2             q/k/v biases, tied embeddings
  mistral           sliding_window 4
  llama3_scaled     rope_theta 500000 with Llama 3's rope_scaling
  llama_wide        head_dim 16 on d_model 32 with 4 heads: h d_k = 64 differs from d_model

and reference/<folder>/ with, for each token sequence k:
  s{k}_tokens.npy  (T,) int64        the token ids
  s{k}_normed.npy  (L, T, d_model)   each layer's attention input (after its first norm)
  s{k}_attn.npy    (L, h, T, T)      each layer's attention weights
  s{k}_hidden.npy  (L, T, d_model)   the residual stream after each layer (before the final norm)
  s{k}_logits.npy  (T, vocab)
The F16/BF16 references are computed on the weights as stored (rounded, then read back as
float32, as Hugging Face does with torch_dtype=float32), so they need float32 tolerances only.

circuits/<folder>_l{L}_h{H}.* (gpt2 and llama_gqa, two heads each): the circuits of one head as
core/model/circuits_source (over core/analysis) computes them, here from the plain formulas in float64 NumPy — every
matrix formed explicitly (QK, OV d_model x d_model, E OV U V x V with a full eigen solve, every
composition product d_model x d_model) — on CIRCUIT_TOKENS. The convention matched:
  the textbook layout y = x W (GPT-2's Conv1D as stored, Llama's nn.Linear weights transposed);
  head i's W_q^i = columns i d_k … of W_q, W_o^i = rows i d_k … of W_o; with N K/V heads query head i
  reads K/V head i // (h/N); norm1's gain g folded into W_q, W_k, W_v (diag(g) W), the final norm's
  gain g_f into U = diag(g_f) · unembeddingᵀ (d_model, V); biases and the norms' centring left out;
  QK^i = W_q^i W_k^iᵀ, OV^i = W_v^i W_o^i (RoPE not applied: the content part of the score);
  composition Q = ||OV^a QK^b|| / (||OV^a|| ||QK^b||), K = ||QK^b OV^aᵀ|| / (…), V = ||OV^a OV^b|| / (…);
  copying = Σ Re λ / Σ |λ| over E OV U's eigenvalues (V of them, V - d_k of them zero up to rounding);
  token space over the text's distinct ids (first occurrence first): E_s QK E_sᵀ, E_s OV U_s;
  position space (GPT-2: learned positions) over the text's positions 0 … T−1: P_s QK P_sᵀ;
  rollout = Π rownorm(½ (mean over heads of A_l + I)) of the reference forward's attention.
  <name>.json: tokens, token_ids, layer, head, copying (L x h), reads / read_by ([from layer, from
  head, to layer, to head, q, k, v]), eigenvalues (the d_k of largest modulus, [re, im]);
  reads_virtual / read_by_virtual: each pair's virtual head OV^a OV^b, its copying score over the whole
  V x V spectrum of E OV^a OV^b U; virtual_pair [from layer, from head, to layer, to head] (the first read,
  else the first reader) with its virtual_copying and virtual_diagonal (the share of the text's tokens
  whose own cell of E_s OV^a OV^b U_s is strictly above the rest of its row);
  <name>_{qk,ov,qk_tokens,ov_tokens,rollout,last_mean}.npy float32 (+ qk_positions for GPT-2),
  <name>_virtual_ov_tokens.npy float32 (E_s OV^a OV^b U_s of virtual_pair).
`--circuits-only` writes these files alone (the weights are rebuilt from the same seeds).
"""
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "models")
SEQUENCES = [12, 7, 1]  # token counts; T = 1 is a legal edge case

# ---------------------------------------------------------------------------------------------
# safetensors writer: 8-byte little-endian header length, JSON header, raw little-endian data.
# ---------------------------------------------------------------------------------------------
DTYPES = {"F32": (torch.float32, torch.int32), "F16": (torch.float16, torch.int16), "BF16": (torch.bfloat16, torch.int16)}


def tensor_bytes(t, dtype):
    store, raw = DTYPES[dtype]
    little = "<i4" if raw == torch.int32 else "<i2"
    return t.detach().to(store).contiguous().view(raw).numpy().astype(little).tobytes()


def save_safetensors(path, tensors, dtype):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        b = tensor_bytes(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def gpt2_byte_chars():
    """GPT-2's bytes_to_unicode in its id order: (the 256 bytes, each byte's character). GPT-2's
    vocabulary gives byte bs[i] the id i; a byte-level tokenizer's vocab keys are the characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


def stored(tensors, dtype):
    """The numbers a reader gets back after the file's rounding, as float32."""
    return {k: v.to(DTYPES[dtype][0]).to(torch.float32) for k, v in tensors.items()}


# ---------------------------------------------------------------------------------------------
# Reference forwards
# ---------------------------------------------------------------------------------------------
def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    x32 = x.to(torch.float32)
    return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def attend(q, k, v, window=0):
    """q (h, T, d_k), k v (N, T, d_k) -> weights (h, T, T), merged output (T, h d_k)."""
    h, T, dk = q.shape
    rep = h // k.shape[0]
    k = k.repeat_interleave(rep, dim=0)
    v = v.repeat_interleave(rep, dim=0)
    scores = q @ k.transpose(1, 2) / math.sqrt(dk)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    blocked = j > i
    if window:
        blocked = blocked | (j <= i - window)
    scores = scores.masked_fill(blocked, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w, (w @ v).transpose(0, 1).reshape(T, h * dk)


def gpt2_forward(cfg, W, ids, prefix=""):
    p = lambda n: W[prefix + n]
    d, h, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    T, dk = len(ids), d // h
    x = p("wte.weight")[ids] + p("wpe.weight")[:T]
    normed, attn, hidden = [], [], []
    for l in range(cfg["n_layer"]):
        a = layer_norm(x, p(f"h.{l}.ln_1.weight"), p(f"h.{l}.ln_1.bias"), eps)
        qkv = a @ p(f"h.{l}.attn.c_attn.weight") + p(f"h.{l}.attn.c_attn.bias")
        q, k, v = (t.reshape(T, h, dk).transpose(0, 1) for t in qkv.split(d, dim=1))
        w, y = attend(q, k, v)
        x = x + y @ p(f"h.{l}.attn.c_proj.weight") + p(f"h.{l}.attn.c_proj.bias")
        m = layer_norm(x, p(f"h.{l}.ln_2.weight"), p(f"h.{l}.ln_2.bias"), eps)
        f = gelu_new(m @ p(f"h.{l}.mlp.c_fc.weight") + p(f"h.{l}.mlp.c_fc.bias"))
        x = x + f @ p(f"h.{l}.mlp.c_proj.weight") + p(f"h.{l}.mlp.c_proj.bias")
        normed.append(a), attn.append(w), hidden.append(x)
    logits = layer_norm(x, p("ln_f.weight"), p("ln_f.bias"), eps) @ gpt2_unembedding(cfg, W, prefix).T
    return normed, attn, hidden, logits


def gpt2_unembedding(cfg, W, prefix=""):
    """(V, d_model): wte (tied, GPT-2's default) or lm_head.weight (stored without the prefix)."""
    return W[prefix + "wte.weight"] if cfg.get("tie_word_embeddings", True) else W["lm_head.weight"]


def inv_freq_of(cfg, dk):
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dk, 2, dtype=torch.int64).float() / dk))
    rs = cfg.get("rope_scaling")
    if rs:  # Llama 3's rule
        factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def llama_forward(cfg, W, ids):
    d, h, N = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    eps, T, dk = cfg["rms_norm_eps"], len(ids), cfg.get("head_dim") or d // h
    window = cfg.get("sliding_window") or 0
    bias = cfg["model_type"] == "qwen2"
    freqs = torch.arange(T).float()[:, None] * inv_freq_of(cfg, dk)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    x = W["model.embed_tokens.weight"][ids]
    normed, attn, hidden = [], [], []
    for l in range(cfg["num_hidden_layers"]):
        P = f"model.layers.{l}."

        def lin(n, a):  # nn.Linear; Qwen2 has biases on q, k and v only
            y = a @ W[P + n + ".weight"].T
            return y + W[P + n + ".bias"] if bias else y
        a = rms_norm(x, W[P + "input_layernorm.weight"], eps)
        q = lin("self_attn.q_proj", a).reshape(T, h, dk).transpose(0, 1)
        k = lin("self_attn.k_proj", a).reshape(T, N, dk).transpose(0, 1)
        v = lin("self_attn.v_proj", a).reshape(T, N, dk).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        w, y = attend(q, k, v, window)
        x = x + y @ W[P + "self_attn.o_proj.weight"].T
        m = rms_norm(x, W[P + "post_attention_layernorm.weight"], eps)
        gate = m @ W[P + "mlp.gate_proj.weight"].T
        up = m @ W[P + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ W[P + "mlp.down_proj.weight"].T
        normed.append(a), attn.append(w), hidden.append(x)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    logits = rms_norm(x, W["model.norm.weight"], eps) @ head.T
    return normed, attn, hidden, logits


# ---------------------------------------------------------------------------------------------
# Random checkpoints
# ---------------------------------------------------------------------------------------------
def rnd(g, *shape, scale=0.2):
    return torch.randn(*shape, generator=g) * scale


def gpt2_weights(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    d, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    W = {"wte.weight": rnd(g, V, d, scale=0.5), "wpe.weight": rnd(g, P, d, scale=0.3)}
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        W[p + "ln_1.weight"] = 1 + rnd(g, d, scale=0.1)
        W[p + "ln_1.bias"] = rnd(g, d, scale=0.1)
        W[p + "attn.c_attn.weight"] = rnd(g, d, 3 * d, scale=0.3)
        W[p + "attn.c_attn.bias"] = rnd(g, 3 * d, scale=0.1)
        W[p + "attn.c_proj.weight"] = rnd(g, d, d)
        W[p + "attn.c_proj.bias"] = rnd(g, d, scale=0.1)
        W[p + "ln_2.weight"] = 1 + rnd(g, d, scale=0.1)
        W[p + "ln_2.bias"] = rnd(g, d, scale=0.1)
        W[p + "mlp.c_fc.weight"] = rnd(g, d, 4 * d)
        W[p + "mlp.c_fc.bias"] = rnd(g, 4 * d, scale=0.1)
        W[p + "mlp.c_proj.weight"] = rnd(g, 4 * d, d)
        W[p + "mlp.c_proj.bias"] = rnd(g, d, scale=0.1)
    W["ln_f.weight"] = 1 + rnd(g, d, scale=0.1)
    W["ln_f.bias"] = rnd(g, d, scale=0.1)
    return W


def llama_weights(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    d, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    h, N = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dk = cfg.get("head_dim") or d // h
    kv, hq = N * dk, h * dk
    W = {"model.embed_tokens.weight": rnd(g, V, d, scale=1.0)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        W[p + "input_layernorm.weight"] = 1 + rnd(g, d, scale=0.1)
        W[p + "self_attn.q_proj.weight"] = rnd(g, hq, d, scale=0.35)
        W[p + "self_attn.k_proj.weight"] = rnd(g, kv, d, scale=0.35)
        W[p + "self_attn.v_proj.weight"] = rnd(g, kv, d)
        W[p + "self_attn.o_proj.weight"] = rnd(g, d, hq)
        if cfg["model_type"] == "qwen2":
            W[p + "self_attn.q_proj.bias"] = rnd(g, hq, scale=0.3)
            W[p + "self_attn.k_proj.bias"] = rnd(g, kv, scale=0.3)
            W[p + "self_attn.v_proj.bias"] = rnd(g, kv, scale=0.3)
        W[p + "post_attention_layernorm.weight"] = 1 + rnd(g, d, scale=0.1)
        W[p + "mlp.gate_proj.weight"] = rnd(g, F, d)
        W[p + "mlp.up_proj.weight"] = rnd(g, F, d)
        W[p + "mlp.down_proj.weight"] = rnd(g, d, F)
    W["model.norm.weight"] = 1 + rnd(g, d, scale=0.1)
    if not cfg.get("tie_word_embeddings"):
        W["lm_head.weight"] = rnd(g, V, d, scale=0.3)
    return W


def llama_config(model_type, **kw):
    cfg = {
        "architectures": [{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}[model_type]],
        "model_type": model_type,
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "intermediate_size": 48,
        "vocab_size": 100,
        "max_position_embeddings": 64,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    cfg.update(kw)
    return cfg


def write_folder(name, cfg, W, dtype, forward, prefix="", shards=None, extra=None):
    folder = os.path.join(ROOT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(cfg, torch_dtype={"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]), f, indent=2)
    named = {prefix + k: v for k, v in W.items()}
    named.update(extra or {})
    if shards:
        index, total = {"metadata": {}, "weight_map": {}}, 0
        for s, keys in enumerate(shards):
            fname = f"model-{s + 1:05d}-of-{len(shards):05d}.safetensors"
            part = {k: named[k] for k in keys}
            save_safetensors(os.path.join(folder, fname), part, dtype)
            for k in keys:
                index["weight_map"][k] = fname
                total += part[k].numel() * (4 if dtype == "F32" else 2)
        index["metadata"]["total_size"] = total
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
    else:
        save_safetensors(os.path.join(folder, "model.safetensors"), named, dtype)
    # The reference runs on what a reader gets back from the file.
    Wr = stored(W, dtype)
    ref = os.path.join(ROOT, "reference", name)
    shutil.rmtree(ref, ignore_errors=True)
    os.makedirs(ref)
    g = torch.Generator().manual_seed(1234)
    V = cfg.get("vocab_size")
    for s, T in enumerate(SEQUENCES):
        ids = torch.randint(0, V, (T,), generator=g)
        with torch.no_grad():
            normed, attn, hidden, logits = forward(cfg, Wr, ids)
        np.save(os.path.join(ref, f"s{s}_tokens.npy"), ids.numpy().astype(np.int64))
        np.save(os.path.join(ref, f"s{s}_normed.npy"), torch.stack(normed).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_attn.npy"), torch.stack(attn).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_hidden.npy"), torch.stack(hidden).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_logits.npy"), logits.numpy().astype(np.float32))


# ---------------------------------------------------------------------------------------------
# Circuits of one head, from the plain formulas (float64, every matrix explicit)
# ---------------------------------------------------------------------------------------------
CIRCUIT_TOKENS = [5, 17, 42, 17, 63, 8, 42, 91, 5, 30, 17, 77]  # repeats: the token axes keep 8 distinct ids


def attention_factors(cfg, W):
    """Per layer: W_q, W_k, W_v, W_o in y = x W (float64), norm1's gain folded into the first three."""
    f = lambda t: t.detach().to(torch.float64).numpy()
    layers = []
    if cfg["model_type"] == "gpt2":
        d = cfg["n_embd"]
        for l in range(cfg["n_layer"]):
            g = f(W[f"h.{l}.ln_1.weight"])[:, None]
            qkv = f(W[f"h.{l}.attn.c_attn.weight"])
            layers.append((g * qkv[:, :d], g * qkv[:, d:2 * d], g * qkv[:, 2 * d:], f(W[f"h.{l}.attn.c_proj.weight"])))
        E = f(W["wte.weight"])
        U = f(W["ln_f.weight"])[:, None] * f(gpt2_unembedding(cfg, W)).T
    else:
        for l in range(cfg["num_hidden_layers"]):
            P = f"model.layers.{l}."
            g = f(W[P + "input_layernorm.weight"])[:, None]
            layers.append((g * f(W[P + "self_attn.q_proj.weight"]).T, g * f(W[P + "self_attn.k_proj.weight"]).T,
                           g * f(W[P + "self_attn.v_proj.weight"]).T, f(W[P + "self_attn.o_proj.weight"]).T))
        E = f(W["model.embed_tokens.weight"])
        head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
        U = f(W["model.norm.weight"])[:, None] * f(head).T
    return layers, E, U


def head_matrices(layers, l, i, h):
    wq, wk, wv, wo = layers[l]
    dk = wq.shape[1] // h
    kv = i // (h // (wk.shape[1] // dk))  # query head i reads K/V head i // (h/N)
    qk = wq[:, i * dk:(i + 1) * dk] @ wk[:, kv * dk:(kv + 1) * dk].T
    ov = wv[:, kv * dk:(kv + 1) * dk] @ wo[i * dk:(i + 1) * dk, :]
    return qk, ov


def composition(ov_a, qk_b, ov_b):
    n = np.linalg.norm
    return (n(ov_a @ qk_b) / (n(ov_a) * n(qk_b)), n(qk_b @ ov_a.T) / (n(ov_a) * n(qk_b)), n(ov_a @ ov_b) / (n(ov_a) * n(ov_b)))


def copying_spectrum(E, M, U):
    """(copying score, eigenvalues) of a d_model x d_model OV-like M: the whole (V, V) spectrum of
    E M U and sum Re lambda / sum |lambda| over it (its V - rank(M) zero eigenvalues add nothing)."""
    lam = np.linalg.eigvals(E @ M @ U)
    return float(lam.real.sum() / np.abs(lam).sum()), lam


def copying_score(E, M, U):
    return copying_spectrum(E, M, U)[0]


def write_circuits(name, cfg, W, forward, cases):
    """W: the weights as a reader gets them back from the file."""
    out = os.path.join(ROOT, "circuits")
    os.makedirs(out, exist_ok=True)
    gpt2 = cfg["model_type"] == "gpt2"
    L = cfg["n_layer"] if gpt2 else cfg["num_hidden_layers"]
    h = cfg["n_head"] if gpt2 else cfg["num_attention_heads"]
    layers, E, U = attention_factors(cfg, W)
    dk = layers[0][0].shape[1] // h
    mats = {(l, i): head_matrices(layers, l, i, h) for l in range(L) for i in range(h)}
    copying = []
    eig = {}
    for l in range(L):
        row = []
        for i in range(h):
            score, eig[(l, i)] = copying_spectrum(E, mats[(l, i)][1], U)
            row.append(score)
        copying.append(row)
    ids = torch.tensor(CIRCUIT_TOKENS)
    with torch.no_grad():
        _, attn, _, _ = forward(cfg, W, ids)
    rolled = np.eye(len(CIRCUIT_TOKENS))
    for a in attn:
        mean = a.detach().to(torch.float64).numpy().mean(0)
        step = 0.5 * (mean + np.eye(len(mean)))
        rolled = (step / step.sum(1, keepdims=True)) @ rolled
    distinct = list(dict.fromkeys(CIRCUIT_TOKENS))
    for l, i in cases:
        qk, ov = mats[(l, i)]
        reads = [[la, ha, l, i, *composition(mats[(la, ha)][1], qk, ov)] for la in range(l) for ha in range(h)]
        read_by = [[l, i, lb, hb, *composition(ov, *mats[(lb, hb)])] for lb in range(l + 1, L) for hb in range(h)]
        # Virtual heads: the copying score of E OV^a OV^b U over its whole (V, V) spectrum, for every pair
        # through the head; the first pair (the first read, else the first reader) in full over the text's tokens.
        def virtual(la, ha, lb, hb):
            lam_v = np.linalg.eigvals(E @ mats[(la, ha)][1] @ mats[(lb, hb)][1] @ U)
            return float(lam_v.real.sum() / np.abs(lam_v).sum())
        reads_virtual = [virtual(*r[:4]) for r in reads]
        read_by_virtual = [virtual(*r[:4]) for r in read_by]
        pair = (reads + read_by)[0][:4]
        virtual_tokens = E[distinct] @ mats[tuple(pair[:2])][1] @ mats[tuple(pair[2:])][1] @ U[:, distinct]
        own = [virtual_tokens[r, r] > np.delete(virtual_tokens[r], r).max() for r in range(len(distinct))]
        lam = sorted(eig[(l, i)], key=lambda z: (-abs(z), z.imag))[:dk]
        Es = E[distinct]
        mats_out = [("qk", qk), ("ov", ov), ("qk_tokens", Es @ qk @ Es.T), ("ov_tokens", Es @ ov @ U[:, distinct])]
        if gpt2:  # learned positions: P QK P^T over the text's positions, P = wpe's first rows (no norm centring)
            P = W["wpe.weight"].detach().to(torch.float64).numpy()[:len(CIRCUIT_TOKENS)]
            mats_out.append(("qk_positions", P @ qk @ P.T))
        base = os.path.join(out, f"{name}_l{l}_h{i}")
        with open(base + ".json", "w") as fjs:
            json.dump({"tokens": CIRCUIT_TOKENS, "token_ids": distinct, "layer": l, "head": i, "copying": copying,
                       "reads": reads, "read_by": read_by, "eigenvalues": [[z.real, z.imag] for z in lam],
                       "reads_virtual": reads_virtual, "read_by_virtual": read_by_virtual, "virtual_pair": pair,
                       "virtual_copying": virtual(*pair), "virtual_diagonal": float(np.mean(own))}, fjs)
        np.save(f"{base}_virtual_ov_tokens.npy", virtual_tokens.astype(np.float32))
        for what, m in mats_out + [("rollout", rolled), ("last_mean", attn[-1].detach().to(torch.float64).numpy().mean(0))]:
            np.save(f"{base}_{what}.npy", m.astype(np.float32))


def main():
    torch.set_grad_enabled(False)
    circuits_only = "--circuits-only" in sys.argv[1:]
    if circuits_only:  # the folders' own writer is skipped; their weights come from the same seeds
        global write_folder
        write_folder = lambda *a, **k: None
    gpt2 = {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "n_embd": 32,
        "n_head": 4,
        "n_layer": 2,
        "n_positions": 32,
        "n_ctx": 32,
        "vocab_size": 100,
        "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new",
        "bos_token_id": 99,
        "eos_token_id": 99,
    }
    Wg = gpt2_weights(gpt2, seed=1)
    # Real GPT-2 files carry the causal mask buffer of every layer; a reader must skip it.
    P = gpt2["n_positions"]
    mask = {f"h.{l}.attn.bias": torch.tril(torch.ones(P, P)).reshape(1, 1, P, P) for l in range(gpt2["n_layer"])}
    write_folder("gpt2", gpt2, Wg, "F32", gpt2_forward, extra=mask)
    # The F16 copy uses the "transformer." prefix some GPT-2 family files have.
    write_folder("gpt2_f16", gpt2, Wg, "F16", gpt2_forward, prefix="transformer.")
    write_circuits("gpt2", gpt2, stored(Wg, "F32"), gpt2_forward, [(1, 2), (0, 1)])

    llama = llama_config("llama")
    Wl = llama_weights(llama, seed=2)
    write_folder("llama_gqa", llama, Wl, "F32", llama_forward)
    write_circuits("llama_gqa", llama, stored(Wl, "F32"), llama_forward, [(1, 3), (0, 1)])
    write_folder("llama_gqa_bf16", llama, Wl, "BF16", llama_forward)
    first = [k for k in Wl if k.startswith("model.embed_tokens") or k.startswith("model.layers.0.")]
    write_folder("llama_sharded", llama, Wl, "F32", llama_forward, shards=[first, [k for k in Wl if k not in first]])

    qwen = llama_config("qwen2", tie_word_embeddings=True, rope_theta=1000000.0, rms_norm_eps=1e-6,
                        use_sliding_window=False, sliding_window=32, max_window_layers=2)
    write_folder("qwen2", qwen, llama_weights(qwen, seed=3), "F32", lambda c, W, i: llama_forward(dict(c, sliding_window=0), W, i))

    mistral = llama_config("mistral", sliding_window=4, head_dim=8)
    write_folder("mistral", mistral, llama_weights(mistral, seed=4), "F32", llama_forward)

    scaled = llama_config("llama", hidden_size=64, num_attention_heads=4, num_key_value_heads=1, rope_theta=500000.0,
                          tie_word_embeddings=True,
                          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 256})
    write_folder("llama3_scaled", scaled, llama_weights(scaled, seed=5), "F32", llama_forward)

    # Heads wider than d_model / h, as Qwen3 and Gemma have them: 4 heads of 16 on d_model 32
    # (q_proj 64 x 32, o_proj 32 x 64).
    wide = llama_config("llama", head_dim=16)
    write_folder("llama_wide", wide, llama_weights(wide, seed=6), "F32", llama_forward)


if __name__ == "__main__":
    main()
