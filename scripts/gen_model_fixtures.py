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

The newer decoder families share family_forward (itself checked equal to llama_forward on the Llama,
Mistral and wide-head configs), each step as the named transformers file computes it:

  qwen3        modeling_qwen3.py: q_norm and k_norm, RMSNorm of size [head_dim] (x rsqrt(mean(x^2) + eps) w
               in float32) on each head's q and k after the split, before RoPE; scale head_dim^-1/2; no
               biases (attention_bias false). configuration_qwen3.py: sliding_window counts only with
               use_sliding_window; layer_types, by default sliding from max_window_layers on; untied by default.
  gemma2       modeling_gemma2.py: RMSNorm x rsqrt(mean(x^2) + eps) (1 + w) in float32, w stored
               zero-centred; embeddings times sqrt(d_model) as a tensor of the embedding's dtype; four norms
               per block: x + post_attention_layernorm(attn(input_layernorm(x))), then
               x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))); scores times
               query_pre_attn_scalar^-1/2, then s = c tanh(s / c) (c = attn_logit_softcapping) before the
               mask; logits = c_f tanh(logits / c_f) (c_f = final_logit_softcapping); MLP
               down(gelu_pytorch_tanh(gate) up), torch's gelu(approximate="tanh"). configuration_gemma2.py:
               layer_types, by default every other layer sliding from layer 0 (window sliding_window); tied
               by default.
  gemma3_text  modeling_gemma3.py (Gemma3ForCausalLM): Gemma 2's norm, embedding scale, four norms, scale and
               MLP, plus q_norm and k_norm of size [head_dim] with (1 + w) on each head after the split, before
               RoPE; layer_types, else sliding_window_pattern n (layer i local unless (i + 1) % n = 0: five
               local, one global for n = 6); local layers rotate with base rope_local_base_freq, global ones
               with rope_theta; final_logit_softcapping as Gemma 2's when set (null by default);
               attn_logit_softcapping must be null: that file keeps it but never hands it to the attention.
  olmo2        modeling_olmo2.py: no norm before attention or the MLP; q_norm [h d_k] and k_norm [N d_k] over
               the whole projection, before the split (the statistics mix heads); post-norm blocks
               x + post_attention_layernorm(attn(x)), x + post_feedforward_layernorm(mlp(x)); untied.
  phi3         modeling_phi3.py: qkv_proj (h d_k + 2 N d_k, d_model) with rows [q | k | v]; gate_up_proj
               (2 F, d_model) with rows [gate | up], down(up silu(gate)); otherwise the Llama decoder, with
               the window sliding_window on every layer when set. The fixture's is 2047, as Phi-3-mini-4k's:
               longer than every sequence here, as not every transformers version masks eager attention with it.
  smollm3      modeling_smollm3.py: the Llama decoder, but layer i rotates q and k only where
               no_rope_layers[i] = 1 (configuration_smollm3.py's default: every no_rope_layer_interval-th
               layer has no positions); tied by default.

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
  latent            not a model folder: one layer of DeepSeek's latent attention (write_latent's docstring)
  qwen3             head_dim 16 (q_proj 64 x 32), 3 layers, the last sliding (W 4) by layer_types, tied
  gemma2            head_dim 16, 3 layers sliding / global / sliding (W 4) by the default rule,
                    query_pre_attn_scalar 8, attn_logit_softcapping 10, final_logit_softcapping 20
  gemma3            model_type gemma3_text, stored BF16, head_dim 16, 6 layers from sliding_window_pattern 6:
                    five local (W 4, base 10000) and one global (base 1e6), query_pre_attn_scalar 24
  olmo2             2 layers, d_k 8, q_norm [32] and k_norm [16], untied lm_head
  phi3              2 layers, fused qkv_proj (64 x 32) and gate_up_proj (96 x 32), untied lm_head
  smollm3           4 layers, no_rope_layers [1, 1, 1, 0]: the last layer has no positions, tied

and reference/<folder>/ with, for each token sequence k:
  s{k}_tokens.npy  (T,) int64        the token ids
  s{k}_normed.npy  (L, T, d_model)   each layer's attention input (after its first norm)
  s{k}_attn.npy    (L, h, T, T)      each layer's attention weights
  s{k}_hidden.npy  (L, T, d_model)   the residual stream after each layer (before the final norm)
  s{k}_logits.npy  (T, vocab)
and where a family adds a step, its per-layer result:
  s{k}_q_normed.npy      (L, h, T, d_k)  qwen3, gemma3, olmo2: q after its norm, before RoPE (OLMo 2:
                                         the normed projection split into heads)
  s{k}_k_normed.npy      (L, N, T, d_k)  the same for k
  s{k}_scores_capped.npy (L, h, T, T)    gemma2: c tanh(q k^T query_pre_attn_scalar^-1/2 / c), with -inf
                                         on the blocked keys (what the softmax receives)
OLMo 2 has no norm before attention: its s{k}_normed is the residual stream entering each layer.
Before each newer family's folder is written, check_family stops the script unless the reference equals
naive_forward, an independent float64 NumPy reading of the same formulas (token by token, RoPE as
rotations of the pairs (i, i + d_k/2), GELU and SiLU written out), in attention, hidden states and
logits; each layer's window and RoPE base are the ones written out for its fixture; and one property
per family holds: qwen3 and gemma3, scaling one head's query rows changes nothing (eps 0: a per-head
norm); olmo2, scaling all of q_proj changes nothing but scaling one head's rows moves another head's
weights (a whole-projection norm); gemma2, caps of 1e9 give the uncapped forward and the fixture's caps
do change weights and logits; gemma3, the local layers give keys beyond the window no weight and the
global layer does, and the local base matters; phi3, it equals llama_forward on its fused rows split
into q/k/v and gate/up; smollm3, with RoPE on every layer it equals llama_forward, and only the layer
without positions changes.
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


def attend(q, k, v, window=0, scale=None, softcap=None, capped=None):
    """q (h, T, d_k), k v (N, T, d_k) -> weights (h, T, T), merged output (T, h d_k).
    scale: the factor the scores are multiplied by (None: divided by sqrt(d_k)); softcap c: the scores
    become c tanh(s / c) before the mask (Gemma 2); capped: a list that receives those (h, T, T) scores
    with -inf on the blocked keys."""
    h, T, dk = q.shape
    rep = h // k.shape[0]
    k = k.repeat_interleave(rep, dim=0)
    v = v.repeat_interleave(rep, dim=0)
    scores = q @ k.transpose(1, 2)
    scores = scores / math.sqrt(dk) if scale is None else scores * scale
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    blocked = j > i
    if window:
        blocked = blocked | (j <= i - window)
    scores = scores.masked_fill(blocked, float("-inf"))
    if capped is not None:
        capped.append(scores)
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
# The newer decoder families: one forward, read through what each family's config says
# ---------------------------------------------------------------------------------------------
GEMMA = ("gemma2", "gemma3_text")
TIED_BY_DEFAULT = {"qwen3": False, "gemma2": True, "gemma3_text": True, "olmo2": False, "phi3": False,
                   "smollm3": True, "llama": False, "mistral": False}


def family_layers(cfg):
    """Per layer (W, base): the sliding window W (0: the whole causal past) and the RoPE base (None: no
    positions), derived from the config as each family's configuration_*.py derives its defaults."""
    t, L = cfg["model_type"], cfg["num_hidden_layers"]
    types = cfg.get("layer_types")
    theta = cfg.get("rope_theta", 10000.0)
    if t == "qwen3":  # the window counts only with use_sliding_window; sliding from max_window_layers on
        W = cfg.get("sliding_window") if cfg.get("use_sliding_window") else None
        types = types or ["sliding_attention" if W is not None and i >= cfg.get("max_window_layers", 28)
                          else "full_attention" for i in range(L)]
        return [(W if ty == "sliding_attention" and W else 0, theta) for ty in types]
    if t == "gemma2":  # every other layer, the first one sliding
        types = types or ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
        return [(cfg["sliding_window"] if ty == "sliding_attention" else 0, theta) for ty in types]
    if t == "gemma3_text":  # pattern - 1 local layers, then one global; local layers turn at their own base
        n = cfg.get("sliding_window_pattern") or cfg.get("_sliding_window_pattern") or 6
        types = types or ["sliding_attention" if (i + 1) % n else "full_attention" for i in range(L)]
        local = cfg.get("rope_local_base_freq", 10000.0)
        return [(cfg["sliding_window"], local) if ty == "sliding_attention" else (0, theta) for ty in types]
    if t == "smollm3":  # no_rope_layers[i] = 1: layer i uses RoPE; by default every 4th layer has none
        uses = cfg.get("no_rope_layers") or [int((i + 1) % cfg.get("no_rope_layer_interval", 4) != 0) for i in range(L)]
        W = cfg.get("sliding_window") if cfg.get("use_sliding_window") else None
        types = types or ["sliding_attention" if W is not None and not uses[i] else "full_attention" for i in range(L)]
        return [(W if ty == "sliding_attention" and W else 0, theta if uses[i] else None) for i, ty in enumerate(types)]
    # phi3 (its sliding_window, when set, on every layer), olmo2, and the Llama decoder itself
    return [(cfg.get("sliding_window") or 0, theta)] * L


def rope(x, base, dk, T):
    """Hugging Face's rotate_half RoPE at positions 0 … T-1 with inv_freq_i = base^(-2i/d_k)."""
    freqs = torch.arange(T).float()[:, None] * inv_freq_of({"rope_theta": base}, dk)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def family_forward(cfg, W, ids):
    """The decoder of qwen3, gemma2, gemma3_text, olmo2, phi3 and smollm3 (and llama/mistral, against which
    it is checked): (normed, attn, hidden, logits, extras), extras the per-layer arrays a family adds."""
    t = cfg["model_type"]
    assert not cfg.get("attention_bias") and not cfg.get("mlp_bias") and not cfg.get("rope_scaling")
    assert cfg.get("partial_rotary_factor", 1.0) == 1.0 and not cfg.get("use_bidirectional_attention")
    d, h, N, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    eps, T, dk = cfg["rms_norm_eps"], len(ids), cfg.get("head_dim") or d // h
    gemma = t in GEMMA
    # Gemma's RMSNorm keeps a zero-centred gain: x / rms(x) * (1 + w), computed in float32.
    norm = lambda x, name: rms_norm(x, 1.0 + W[name] if gemma else W[name], eps)
    scale = cfg["query_pre_attn_scalar"] ** -0.5 if gemma else dk ** -0.5  # Gemma: not d_k's
    # modeling_gemma3.py keeps attn_logit_softcapping but never hands it to the attention: refused, not guessed.
    assert t != "gemma3_text" or cfg.get("attn_logit_softcapping") is None
    softcap = cfg.get("attn_logit_softcapping") if t == "gemma2" else None
    act = (lambda z: torch.nn.functional.gelu(z, approximate="tanh")) if gemma else torch.nn.functional.silu
    x = W["model.embed_tokens.weight"][ids]
    if gemma:  # sqrt(d_model) as a tensor of the embedding's dtype, as Gemma multiplies it
        x = x * torch.tensor(d ** 0.5, dtype=x.dtype)
    normed, attn, hidden, extras = [], [], [], {}
    for l, (window, base) in enumerate(family_layers(cfg)):
        P = f"model.layers.{l}."
        a = x if t == "olmo2" else norm(x, P + "input_layernorm.weight")  # OLMo 2 has no norm before attention
        if t == "phi3":  # one fused projection, rows [q: h d_k | k: N d_k | v: N d_k]
            q, k, v = (a @ W[P + "self_attn.qkv_proj.weight"].T).split([h * dk, N * dk, N * dk], dim=-1)
        else:
            q, k, v = (a @ W[P + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        if t == "olmo2":  # RMSNorm over the whole projection (h d_k and N d_k wide): the statistics mix heads
            q, k = norm(q, P + "self_attn.q_norm.weight"), norm(k, P + "self_attn.k_norm.weight")
        q, k, v = (z.reshape(T, -1, dk).transpose(0, 1) for z in (q, k, v))
        if t in ("qwen3", "gemma3_text"):  # RMSNorm over each head's d_k after the split
            q, k = norm(q, P + "self_attn.q_norm.weight"), norm(k, P + "self_attn.k_norm.weight")
        if t in ("qwen3", "gemma3_text", "olmo2"):
            extras.setdefault("q_normed", []).append(q)
            extras.setdefault("k_normed", []).append(k)
        if base is not None:
            q, k = rope(q, base, dk, T), rope(k, base, dk, T)
        capped = extras.setdefault("scores_capped", []) if softcap is not None else None
        w, y = attend(q, k, v, window, scale=scale, softcap=softcap, capped=capped)
        o = y @ W[P + "self_attn.o_proj.weight"].T
        if gemma or t == "olmo2":
            o = norm(o, P + "post_attention_layernorm.weight")
        x = x + o
        # The MLP's input: Gemma's pre_feedforward_layernorm, Llama's post_attention_layernorm, none in OLMo 2.
        m = x if t == "olmo2" else norm(x, P + ("pre_feedforward" if gemma else "post_attention") + "_layernorm.weight")
        if t == "phi3":  # gate_up_proj rows [gate: F | up: F]
            gate, up = (m @ W[P + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
        else:
            gate, up = m @ W[P + "mlp.gate_proj.weight"].T, m @ W[P + "mlp.up_proj.weight"].T
        f = (act(gate) * up) @ W[P + "mlp.down_proj.weight"].T
        if gemma or t == "olmo2":
            f = norm(f, P + "post_feedforward_layernorm.weight")
        x = x + f
        normed.append(a), attn.append(w), hidden.append(x)
    tied = cfg.get("tie_word_embeddings", TIED_BY_DEFAULT[t])
    logits = norm(x, "model.norm.weight") @ (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]).T
    cap = cfg.get("final_logit_softcapping") if gemma else None
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return normed, attn, hidden, logits, extras


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


def family_weights(cfg, seed):
    """Random weights in the family's own tensor names and shapes (model.layers.{i}. …)."""
    g = torch.Generator().manual_seed(seed)
    t = cfg["model_type"]
    d, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    h, N = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dk = cfg.get("head_dim") or d // h
    gemma = t in GEMMA
    gain = lambda n: rnd(g, n, scale=0.1) + (0.0 if gemma else 1.0)  # Gemma stores w of its (1 + w)
    W = {"model.embed_tokens.weight": rnd(g, V, d, scale=1.0)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        norms = ["post_attention_layernorm", "post_feedforward_layernorm"] if t == "olmo2" else \
            ["input_layernorm", "post_attention_layernorm"] + (["pre_feedforward_layernorm", "post_feedforward_layernorm"] * gemma)
        for n in norms:
            W[p + n + ".weight"] = gain(d)
        q, k, v = rnd(g, h * dk, d, scale=0.35), rnd(g, N * dk, d, scale=0.35), rnd(g, N * dk, d)
        if t == "phi3":
            W[p + "self_attn.qkv_proj.weight"] = torch.cat((q, k, v))
        else:
            W[p + "self_attn.q_proj.weight"], W[p + "self_attn.k_proj.weight"], W[p + "self_attn.v_proj.weight"] = q, k, v
        W[p + "self_attn.o_proj.weight"] = rnd(g, d, h * dk)
        if t in ("qwen3", "gemma3_text"):
            W[p + "self_attn.q_norm.weight"], W[p + "self_attn.k_norm.weight"] = gain(dk), gain(dk)
        if t == "olmo2":
            W[p + "self_attn.q_norm.weight"], W[p + "self_attn.k_norm.weight"] = gain(h * dk), gain(N * dk)
        gate, up = rnd(g, F, d), rnd(g, F, d)
        if t == "phi3":
            W[p + "mlp.gate_up_proj.weight"] = torch.cat((gate, up))
        else:
            W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = gate, up
        W[p + "mlp.down_proj.weight"] = rnd(g, d, F)
    W["model.norm.weight"] = gain(d)
    if not cfg.get("tie_word_embeddings", TIED_BY_DEFAULT[t]):
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
            normed, attn, hidden, logits, *more = forward(cfg, Wr, ids)
        for what, per_layer in (more[0] if more else {}).items():  # a family's own per-layer arrays
            np.save(os.path.join(ref, f"s{s}_{what}.npy"), torch.stack(per_layer).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_tokens.npy"), ids.numpy().astype(np.int64))
        np.save(os.path.join(ref, f"s{s}_normed.npy"), torch.stack(normed).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_attn.npy"), torch.stack(attn).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_hidden.npy"), torch.stack(hidden).numpy().astype(np.float32))
        np.save(os.path.join(ref, f"s{s}_logits.npy"), logits.numpy().astype(np.float32))


def family_configs():
    """(folder, config, seed, stored dtype) of each newer family's fixture: d_model 32, 4 query heads over 2 K/V
    heads, with head_dim 16 (h d_k = 64 ≠ d_model) where the family's published configs have such heads."""
    base = {"attention_bias": False, "attention_dropout": 0.0, "hidden_size": 32, "initializer_range": 0.02,
            "intermediate_size": 48, "max_position_embeddings": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "torch_dtype": "float32", "use_cache": True, "vocab_size": 100}
    qwen3 = dict(base, architectures=["Qwen3ForCausalLM"], model_type="qwen3", bos_token_id=1, eos_token_id=2,
                 head_dim=16, hidden_act="silu", num_hidden_layers=3, rms_norm_eps=1e-6, rope_scaling=None,
                 rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=True, sliding_window=4,
                 max_window_layers=2, layer_types=["full_attention", "full_attention", "sliding_attention"])
    # Gemma 2 27B's relation query_pre_attn_scalar = d_model / h (≠ head_dim); caps that bend the larger of
    # these scores (|s| up to ~2.3 c) and logits (up to ~2 c) without flattening the rest.
    gemma2 = dict(base, architectures=["Gemma2ForCausalLM"], model_type="gemma2", attn_logit_softcapping=10.0,
                  bos_token_id=2, cache_implementation="hybrid", eos_token_id=1, final_logit_softcapping=20.0,
                  head_dim=16, hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                  num_hidden_layers=3, pad_token_id=0, query_pre_attn_scalar=8, rms_norm_eps=1e-6,
                  rope_theta=10000.0, sliding_window=4)
    gemma3 = dict(base, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", attn_logit_softcapping=None,
                  bos_token_id=2, cache_implementation="hybrid", eos_token_id=1, final_logit_softcapping=None,
                  head_dim=16, hidden_activation="gelu_pytorch_tanh", num_hidden_layers=6, pad_token_id=0,
                  query_pre_attn_scalar=24, rms_norm_eps=1e-6, rope_local_base_freq=10000.0, rope_scaling=None,
                  rope_theta=1000000.0, sliding_window=4, sliding_window_pattern=6)
    olmo2 = dict(base, architectures=["Olmo2ForCausalLM"], model_type="olmo2", eos_token_id=2, hidden_act="silu",
                 num_hidden_layers=2, pad_token_id=1, rms_norm_eps=1e-6, rope_scaling=None, rope_theta=500000.0,
                 tie_word_embeddings=False)
    phi3 = dict(base, architectures=["Phi3ForCausalLM"], model_type="phi3", bos_token_id=1, embd_pdrop=0.0,
                eos_token_id=2, hidden_act="silu", num_hidden_layers=2, original_max_position_embeddings=64,
                pad_token_id=0, resid_pdrop=0.0, rms_norm_eps=1e-5, rope_scaling=None, rope_theta=10000.0,
                sliding_window=2047, tie_word_embeddings=False)
    smollm3 = dict(base, architectures=["SmolLM3ForCausalLM"], model_type="smollm3", bos_token_id=None,
                   eos_token_id=2, hidden_act="silu", layer_types=["full_attention"] * 4, max_window_layers=4,
                   mlp_bias=False, no_rope_layer_interval=4, no_rope_layers=[1, 1, 1, 0], num_hidden_layers=4,
                   pad_token_id=0, pretraining_tp=2, rms_norm_eps=1e-6, rope_scaling=None, rope_theta=5000000.0,
                   sliding_window=None, tie_word_embeddings=True, use_cache=False, use_sliding_window=False)
    # Sorted keys, as Hugging Face writes a config.json.
    return [(name, dict(sorted(cfg.items())), seed, dtype) for name, cfg, seed, dtype in [
        ("qwen3", qwen3, 7, "F32"), ("gemma2", gemma2, 8, "F32"), ("gemma3", gemma3, 9, "BF16"),
        ("olmo2", olmo2, 10, "F32"), ("phi3", phi3, 11, "F32"), ("smollm3", smollm3, 12, "F32")]]


def naive_forward(cfg, W, ids):
    """An independent reading of the same formulas in float64 NumPy, token by token where attention is:
    RoPE as a rotation of each pair (i, i + d_k/2), GELU's tanh form and SiLU written out, an explicit
    softmax over each row's visible keys. Returns (attn, hidden, logits)."""
    f = lambda n: W[n].detach().double().numpy()
    t = cfg["model_type"]
    d, h, N = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dk, eps, T, gemma = cfg.get("head_dim") or d // h, cfg["rms_norm_eps"], len(ids), t in GEMMA
    rms = lambda z, n: z / np.sqrt((z * z).mean(-1, keepdims=True) + eps) * ((1 + f(n)) if gemma else f(n))
    act = ((lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))) if gemma
           else (lambda z: z / (1 + np.exp(-z))))
    x = f("model.embed_tokens.weight")[ids.numpy()] * (math.sqrt(d) if gemma else 1.0)
    attn, hidden = [], []
    for l, (window, base) in enumerate(family_layers(cfg)):
        P = f"model.layers.{l}."
        a = x if t == "olmo2" else rms(x, P + "input_layernorm.weight")
        if t == "phi3":
            wqkv = f(P + "self_attn.qkv_proj.weight")
            wq, wk, wv = wqkv[:h * dk], wqkv[h * dk:(h + N) * dk], wqkv[(h + N) * dk:]
        else:
            wq, wk, wv = (f(P + f"self_attn.{n}_proj.weight") for n in "qkv")
        Q, K, V = a @ wq.T, a @ wk.T, a @ wv.T
        if t == "olmo2":
            Q, K = rms(Q, P + "self_attn.q_norm.weight"), rms(K, P + "self_attn.k_norm.weight")
        Q, K, V = Q.reshape(T, h, dk), K.reshape(T, N, dk), V.reshape(T, N, dk)
        if t in ("qwen3", "gemma3_text"):
            Q, K = rms(Q, P + "self_attn.q_norm.weight"), rms(K, P + "self_attn.k_norm.weight")
        if base is not None:
            for M in (Q, K):
                for pos in range(T):
                    for i in range(dk // 2):
                        c, s = math.cos(pos * base ** (-2 * i / dk)), math.sin(pos * base ** (-2 * i / dk))
                        x1, x2 = M[pos, :, i].copy(), M[pos, :, i + dk // 2].copy()
                        M[pos, :, i], M[pos, :, i + dk // 2] = x1 * c - x2 * s, x2 * c + x1 * s
        scale = cfg["query_pre_attn_scalar"] ** -0.5 if gemma else dk ** -0.5
        cap = cfg.get("attn_logit_softcapping") if t == "gemma2" else None
        A, O = np.zeros((h, T, T)), np.zeros((T, h, dk))
        for head in range(h):
            g = head // (h // N)
            for i in range(T):
                js = [j for j in range(i + 1) if not window or j > i - window]
                s = np.array([Q[i, head] @ K[j, g] * scale for j in js])
                s = cap * np.tanh(s / cap) if cap else s
                e = np.exp(s - s.max())
                A[head, i, js] = e / e.sum()
                O[i, head] = sum(A[head, i, j] * V[j, g] for j in js)
        o = O.reshape(T, h * dk) @ f(P + "self_attn.o_proj.weight").T
        x = x + (rms(o, P + "post_attention_layernorm.weight") if gemma or t == "olmo2" else o)
        m = x if t == "olmo2" else rms(x, P + ("pre_feedforward" if gemma else "post_attention") + "_layernorm.weight")
        if t == "phi3":
            wgu = f(P + "mlp.gate_up_proj.weight")
            wg, wu = wgu[:len(wgu) // 2], wgu[len(wgu) // 2:]
        else:
            wg, wu = f(P + "mlp.gate_proj.weight"), f(P + "mlp.up_proj.weight")
        y = (act(m @ wg.T) * (m @ wu.T)) @ f(P + "mlp.down_proj.weight").T
        x = x + (rms(y, P + "post_feedforward_layernorm.weight") if gemma or t == "olmo2" else y)
        attn.append(A), hidden.append(x)
    tied = cfg.get("tie_word_embeddings", TIED_BY_DEFAULT[t])
    logits = rms(x, "model.norm.weight") @ f("model.embed_tokens.weight" if tied else "lm_head.weight").T
    cap = cfg.get("final_logit_softcapping") if gemma else None
    return attn, hidden, cap * np.tanh(logits / cap) if cap else logits


def close(a, b, what, atol=2e-5, rtol=2e-4):
    """Stop the script when two results differ by more than |Δ| ≤ atol + rtol |b|."""
    as64 = lambda z: np.stack([as64(e) for e in z]) if isinstance(z, list) else np.asarray(z, dtype=np.float64)
    a, b = as64(a), as64(b)
    bad = np.abs(a - b) > atol + rtol * np.abs(b)
    assert a.shape == b.shape and not bad.any(), f"{what}: max |Δ| {np.abs(a - b).max():.3g}"


def check_shared_decoder(cases):
    """family_forward on plain Llama / Mistral configs is llama_forward: the shared steps (embedding, norms,
    RoPE, GQA, window, SwiGLU, logits) are the ones the four first families were checked with."""
    for cfg, W in cases:
        ours, ref = family_forward(cfg, W, IDS_CHECK), llama_forward(cfg, W, IDS_CHECK)
        for i, what in enumerate(("normed", "attn", "hidden", "logits")):
            close(ours[i], ref[i], f"{cfg['model_type']} {what} against llama_forward")


IDS_CHECK = torch.tensor([5, 17, 42, 17, 63, 8, 42, 91, 5, 30, 17, 77])


def check_family(cfg, W):
    """The asserts each newer family's reference must pass before its folder is written."""
    t, ids = cfg["model_type"], IDS_CHECK
    # Each fixture's (window, RoPE base) per layer, written out: the pattern its config must derive.
    assert family_layers(cfg) == {
        "qwen3": [(0, 1e6), (0, 1e6), (4, 1e6)], "gemma2": [(4, 1e4), (0, 1e4), (4, 1e4)],
        "gemma3_text": [(4, 1e4)] * 5 + [(0, 1e6)], "olmo2": [(0, 5e5)] * 2, "phi3": [(2047, 1e4)] * 2,
        "smollm3": [(0, 5e6)] * 3 + [(0, None)]}[t], f"{t}: {family_layers(cfg)}"
    normed, attn, hidden, logits, extras = family_forward(cfg, W, ids)
    n_attn, n_hidden, n_logits = naive_forward(cfg, W, ids)
    close(attn, n_attn, f"{t} attention against the float64 reading")
    close(hidden, n_hidden, f"{t} hidden states against the float64 reading")
    close(logits, n_logits, f"{t} logits against the float64 reading")
    h, dk = cfg["num_attention_heads"], cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    rows = lambda n, k: {**W, n: torch.cat((W[n][:k] * 7.0, W[n][k:]))}  # one head's query rows times 7
    scaled = lambda n: {**W, n: W[n] * 7.0}
    exact = dict(cfg, rms_norm_eps=0.0)
    first = "model.layers.0.self_attn.q_proj.weight"
    if t in ("qwen3", "gemma3_text"):  # a per-head norm forgets each head's own length
        close(family_forward(exact, rows(first, dk), ids)[1], family_forward(exact, W, ids)[1], f"{t} per-head q norm")
    if t == "olmo2":  # a whole-projection norm forgets the length of all heads together, not of one
        close(family_forward(exact, scaled(first), ids)[1], family_forward(exact, W, ids)[1], "olmo2 whole q norm")
        moved = family_forward(exact, rows(first, dk), ids)[1][0][1] - family_forward(exact, W, ids)[1][0][1]
        assert moved.abs().max() > 1e-3, "olmo2: scaling head 0's query changes head 1's weights"
    if t == "gemma2":  # huge caps are no caps; the fixture's caps do bend its scores and logits
        free = family_forward(dict(cfg, attn_logit_softcapping=None, final_logit_softcapping=None), W, ids)
        huge = family_forward(dict(cfg, attn_logit_softcapping=1e9, final_logit_softcapping=1e9), W, ids)
        for i in range(1, 4):
            close(huge[i], free[i], "gemma2 huge caps against none")
        assert (attn[0] - free[1][0]).abs().max() > 1e-2 and (logits - free[3]).abs().max() > 0.1, "gemma2 caps inert"
    if t == "gemma3_text":  # five local layers see 4 keys, the sixth all; the local base is its own
        for l, a in enumerate(attn):
            far = torch.tril(torch.ones(len(ids), len(ids)), diagonal=-cfg["sliding_window"]).bool()
            assert (a[:, far].abs().max() == 0) == (l < 5), f"gemma3 layer {l}'s window"
        same = family_forward(dict(cfg, rope_local_base_freq=cfg["rope_theta"]), W, ids)[1][0]
        assert (same - attn[0]).abs().max() > 1e-3, "gemma3: the local layers' RoPE base changes nothing"
    if t == "phi3":  # the fused rows split into q/k/v and gate/up are the Llama decoder's weights
        split = {k: v for k, v in W.items() if "qkv_proj" not in k and "gate_up_proj" not in k}
        d, N, F = cfg["hidden_size"], cfg["num_key_value_heads"], cfg["intermediate_size"]
        for l in range(cfg["num_hidden_layers"]):
            P = f"model.layers.{l}."
            qkv = W[P + "self_attn.qkv_proj.weight"]
            split[P + "self_attn.q_proj.weight"], split[P + "self_attn.k_proj.weight"], split[P + "self_attn.v_proj.weight"] = \
                qkv.split([h * dk, N * dk, N * dk])
            split[P + "mlp.gate_proj.weight"], split[P + "mlp.up_proj.weight"] = W[P + "mlp.gate_up_proj.weight"].split([F, F])
        ref = llama_forward(dict(cfg, model_type="llama"), split, ids)
        for i in range(4):
            close([normed, attn, hidden, logits][i], ref[i], "phi3 against llama_forward on the split weights")
    if t == "smollm3":  # with RoPE on every layer it is the Llama decoder; the NoPE layer differs
        ref = llama_forward(dict(cfg, model_type="llama"), W, ids)
        allrope = family_forward(dict(cfg, no_rope_layers=[1] * cfg["num_hidden_layers"]), W, ids)
        for i in range(4):
            close(allrope[i], ref[i], "smollm3 with RoPE everywhere against llama_forward")
        assert (attn[3] - allrope[1][3]).abs().max() > 1e-3 and (attn[2] - allrope[1][2]).abs().max() == 0


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

    check_shared_decoder([(llama, stored(Wl, "F32")), (mistral, stored(llama_weights(mistral, seed=4), "F32")),
                          (wide, stored(llama_weights(wide, seed=6), "F32"))])
    # The newer families, each config in its published form (keys as the family's own config.json has them).
    for name, cfg, seed, dtype in family_configs():
        Wf = family_weights(cfg, seed)
        check_family(cfg, stored(Wf, dtype))
        write_folder(name, cfg, Wf, dtype, family_forward)


def write_latent():
    """DeepSeek's multi-head latent attention, one layer, as transformers' modeling_deepseek_v3.py's
    DeepseekV3Attention computes it with q_lora_rank null (q_proj), rope_interleave false (rotate_half)
    and no rope_scaling: q = q_proj(x) viewed (T, h, d_n + d_r) and split [nope | rope];
    [c | k_r] = kv_a_proj_with_mqa(x); [k_nope | v] = kv_b_proj(kv_a_layernorm(c)) per head;
    q_rope and k_r (one head, expanded to all) turned by RoPE; scores (d_n + d_r)^-1/2 (q·k), causal
    softmax, o_proj of the heads side by side. Written to models/latent/: x (T, d_model), the weights
    as stored (nn.Linear (out, in)), and the reference weights (h, T, T), output (T, d_model), the
    normed latent (T, r) and the turned k_r (T, d_r)."""
    g = torch.Generator().manual_seed(11)
    d, h, r, dr, dn, dv, T, eps = 32, 4, 16, 8, 8, 12, 10, 1e-6
    x = rnd(g, T, d, scale=1.0)
    W = {"q_proj": rnd(g, h * (dn + dr), d, scale=0.3), "kv_a_proj_with_mqa": rnd(g, r + dr, d, scale=0.3),
         "kv_a_layernorm": 1 + rnd(g, r, scale=0.1), "kv_b_proj": rnd(g, h * (dn + dv), r, scale=0.3),
         "o_proj": rnd(g, d, h * dv, scale=0.3)}
    q = (x @ W["q_proj"].T).view(T, h, dn + dr).transpose(0, 1)  # (h, T, d_n + d_r)
    q_pass, q_rot = q[..., :dn], q[..., dn:]
    kv = x @ W["kv_a_proj_with_mqa"].T
    c, k_rot = kv[:, :r], kv[:, r:]
    c = rms_norm(c, W["kv_a_layernorm"], eps)
    kvb = (c @ W["kv_b_proj"].T).view(T, h, dn + dv).transpose(0, 1)  # (h, T, d_n + d_v)
    k_pass, v = kvb[..., :dn], kvb[..., dn:]
    q_rot, k_rot = rope(q_rot, 10000.0, dr, T), rope(k_rot, 10000.0, dr, T)
    query = torch.cat((q_pass, q_rot), dim=-1)
    key = torch.cat((k_pass, k_rot.expand(h, T, dr)), dim=-1)
    scores = query @ key.transpose(-1, -2) * (dn + dr) ** -0.5
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    a = torch.softmax(scores, dim=-1)
    y = (a @ v).transpose(0, 1).reshape(T, h * dv) @ W["o_proj"].T
    # The absorbed form (W_uk into the query, W_uv after the weighted sum of latents) gives the same.
    wkvb = W["kv_b_proj"].view(h, dn + dv, r)
    s2 = (torch.einsum("htn,hnr->htr", q_pass, wkvb[:, :dn]) @ c.T + q_rot @ k_rot.T) * (dn + dr) ** -0.5
    a2 = torch.softmax(s2.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf")), dim=-1)
    y2 = torch.einsum("htr,hvr->thv", a2 @ c, wkvb[:, dn:]).reshape(T, h * dv) @ W["o_proj"].T
    assert torch.allclose(a, a2, atol=1e-5) and torch.allclose(y, y2, atol=1e-4), "absorbed differs from expanded"
    folder = os.path.join(ROOT, "latent")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    arrays = dict(W, x=x, weights=a, output=y, latent=c, k_rope=k_rot)
    for name, t in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), t.numpy().astype(np.float32))
    with open(os.path.join(folder, "sizes.json"), "w") as f:
        json.dump({"d_model": d, "heads": h, "kv_lora_rank": r, "qk_rope_head_dim": dr, "qk_nope_head_dim": dn,
                   "v_head_dim": dv, "tokens": T, "eps": eps, "rope_theta": 10000.0}, f, indent=2)


if __name__ == "__main__":
    main()
    write_latent()
