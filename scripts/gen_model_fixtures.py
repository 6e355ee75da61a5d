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

The mixture-of-experts families run through the same decoder, with an MLP that routes each token to k
experts (moe_mlp: the routed sum out = sum over the k chosen of weight * expert(x)):
  mixtral      modeling_mixtral.py: Mistral's attention (d_k = d_model / h, no head_dim key); router
               block_sparse_moe.gate (E, d): softmax over all E experts, the top k (num_experts_per_tok),
               renormalised to sum 1; expert e: w2(silu(w1 x) * w3 x) in block_sparse_moe.experts.{e}.w1/w3
               (F, d) and w2 (d, F); untied.
  qwen3_moe    modeling_qwen3_moe.py: Qwen3's attention (q_norm / k_norm per head before RoPE); router
               mlp.gate (E, d), softmax over all, top k, renormalised only when norm_topk_prob (false by
               default in configuration_qwen3_moe.py, true in Qwen3-30B-A3B's config and the fixture's);
               experts mlp.experts.{e}.gate_proj/up_proj (moe_intermediate_size, d) and down_proj; layer i
               is a mixture unless i is in mlp_only_layers or (i + 1) % decoder_sparse_step ≠ 0 (then
               Qwen3's dense MLP of intermediate_size); the fixture keeps the defaults (1, []): every layer.
  gpt_oss      modeling_gpt_oss.py: biases on q, k, v and o (attention_bias); self_attn.sinks (h,): one
               logit per head appended to every row's scores (after the mask), softmax over T + 1 columns,
               the last dropped, so a row's weights sum to 1 - its sink share; layer_types (by default
               sliding from layer 0, every other layer) with sliding_window; scale head_dim^-1/2; YaRN as
               modeling_rope_utils.py's _compute_yarn_parameters computes it (yarn_parameters: inv_freq
               blends base^(-2i/d_k) / factor and base^(-2i/d_k) by a ramp over the dims whose wavelength
               turns between beta_slow and beta_fast times in original_max_position_embeddings, ends
               floored / ceiled unless truncate is false; cos and sin times attention_factor, by default
               0.1 ln(factor) + 1) in the rotate_half form; router mlp.router.weight (E, d) + bias: top k of
               the logits, softmax over those k; experts (GptOssExperts) x W + b with W (E, d, 2F) whose
               columns interleave gate (0::2) and up (1::2): gate clamped above at swiglu_limit, up to
               ±swiglu_limit, (up + 1) * gate * sigmoid(1.702 gate), then x W_down (E, F, d) + b; untied.
               The released files store the experts as integrations/mxfp4.py reads them: <name>_blocks
               (E, rows, cols/32, 16) U8, two e2m1 values a byte, the low nibble first, FP4_VALUES
               [0, .5, 1, 1.5, 2, 3, 4, 6, -0, -.5, …, -6] by nibble; <name>_scales (E, rows, cols/32) U8,
               each block of 32 times 2^(scale - 127); rows are the outputs (gate_up: 2F, down: d), so the
               unpacked (E, rows, cols) is transposed to the (E, cols, rows) above; biases, router, sinks,
               attention and embeddings BF16 (quantization_config's modules_to_not_convert).
  deepseek_v3  modeling_deepseek_v3.py: multi-head latent attention (latent_layer): q = q_b_proj(
               q_a_layernorm(q_a_proj(x))) (q_proj when q_lora_rank is null) viewed (h, d_n + d_r), split
               [nope | rope]; [c | k_r] = kv_a_proj_with_mqa(x) (kv_lora_rank + qk_rope_head_dim);
               c = kv_a_layernorm(c); [k_nope | v] = kv_b_proj(c) per head (d_n + d_v); the two norms with
               eps 1e-6 (DeepseekV3RMSNorm's default, whatever rms_norm_eps says); k_r one head shared by
               all; rope_interleave (configuration_deepseek_v3.py's default true, absent from the published
               config.json and from the fixture's) reorders each rotary part's pairs (0,1), (2,3), … to
               [even | odd] before rotate_half; scale (d_n + d_r)^-1/2, with rope_scaling YaRN times
               yarn_get_mscale(factor, mscale_all_dim)^2 (latent_scale), YaRN's frequencies and cos/sin gain
               (mscale / mscale_all_dim ratio) over the d_r rotary features; layers below first_k_dense_replace have the dense MLP (intermediate_size),
               the rest DeepseekV3MoE: sigmoid scores of mlp.gate.weight (E, d); the choice adds
               mlp.gate.e_score_correction_bias, keeps the topk_group of n_group groups whose two best
               sum highest (the others' scores set to 0), takes the top k; weights the chosen unbiased
               scores, over their sum (+1e-20) when norm_topk_prob, times routed_scaling_factor; plus the
               shared experts (mlp.shared_experts, moe_intermediate_size * n_shared_experts) on every token.
  deepseek_v2  modeling_deepseek_v2.py: the same latent attention (q_proj when q_lora_rank is null, as in
               DeepSeek-V2-Lite), but apply_rotary_emb turns each adjacent pair (2i, 2i + 1) of the rotary
               parts as a complex number times e^(i pos base^(-2i/d_r)), in place (no rope_interleave key);
               router DeepseekV2Moe: softmax over all experts (mlp.gate.weight, no correction bias); topk_method
               greedy (top k) or group_limited_greedy (the topk_group of n_group groups with the highest
               single score kept, the others' scores set to 0, then top k); weights the softmax scores times
               routed_scaling_factor, not renormalised (the reference refuses norm_topk_prob true); the same
               dense first layers and shared experts. Released experts are per-expert files
               mlp.experts.{e}.gate_proj/up_proj/down_proj, as the fixture's.

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
  mixtral           2 layers, 4 experts (F 48), top 2, d_k 8
  qwen3_moe         2 layers, head_dim 16, 4 experts (moe_intermediate_size 24), top 2, norm_topk_prob true
  gpt_oss           2 layers sliding (W 4) / full, head_dim 16, biases, sinks, YaRN factor 2 over 4096 positions
                    (truncate false; max_position_embeddings 8192), 4 experts (F 32), top 2, swiglu_limit 7,
                    experts MXFP4 (U8), the rest BF16
  gpt_oss_bf16      the same model, its experts dequantised to BF16 (gate_up_proj (E, d, 2F), down_proj
                    (E, F, d)), no quantization_config; the same reference numbers as gpt_oss
  deepseek_v3       3 layers, the first dense (first_k_dense_replace 1), 4 heads, q_lora_rank 16, kv_lora_rank
                    16, qk_nope 8, qk_rope 8, v_head_dim 12; 8 routed experts in 4 groups, topk_group 2, top 2,
                    one shared expert, routed_scaling_factor 2.5; rope_scaling null
  deepseek_v2       the same sizes with q_lora_rank null (q_proj), group_limited_greedy over 4 groups
                    (topk_group 2), top 2, two shared experts, routed_scaling_factor 16; rope_scaling null
  deepseek_v3_yarn  deepseek_v3's layout with YaRN rope_scaling (factor 4 over 16 positions, mscale 1.0,
                    mscale_all_dim 0.8: cos and sin times their mscale ratio, the scores times mscale(4, 0.8)^2)

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
  s{k}_router_experts.npy (L, T, k) int64  mixtral, qwen3_moe, gpt_oss, deepseek_v2/v3: the k experts each token
                                         went to, in descending weight; -1 on a dense layer
  s{k}_router_weights.npy (L, T, k)      the weight of each (what its expert's output is multiplied by); 0 on
                                         a dense layer
  s{k}_sink_share.npy    (L, h, T)       gpt_oss: each row's softmax mass on the sink column (the row's
                                         s{k}_attn sums to 1 minus it)
  s{k}_latent.npy        (L, T, kv_lora_rank)  deepseek_v2/v3: c after kv_a_layernorm (what is cached with k_r)
and, once a folder, gpt_oss's (and gpt_oss_bf16's) rope_inv_freq.npy (head_dim/2,) and
rope_attention_factor.npy (1,): YaRN's frequencies and the factor cos and sin are multiplied by.
OLMo 2 has no norm before attention: its s{k}_normed is the residual stream entering each layer.
Before each mixture-of-experts folder is written, check_moe stops the script unless: the router arrays have
their shapes, k distinct experts a token and not always the same ones, softmax-normalised weights summing to 1;
every layer's MLP equals naive_moe, an independent float64 NumPy reading token by token (the router as a sort,
the activations written out, gpt-oss's gate and up read as pairs, DeepSeek's shared experts added);
mixtral cut to expert 0 alone with top 1 equals llama_forward with that expert as its MLP, and qwen3_moe so cut
equals Qwen3's decoder, and norm_topk_prob changes its result; gpt_oss: FP4_VALUES is the e2m1 table from its
definition, a known byte and scale unpack to known values, the unpacked values are exact in BF16 (so both
gpt-oss folders hold the same numbers), sinks at -inf give the forward without sinks, each row plus its sink
share sums to 1 and the fixture's sinks move the weights, the sliding layer gives keys beyond W nothing and the
full one does, YaRN with factor 1 is plain RoPE with gain 1, and the fixture's keeps the frequency of each dim
turning at least beta_fast times over original_max_position_embeddings and divides by factor each one turning
at most beta_slow times (it has both kinds), and the SwiGLU's clamp is met; deepseek_v2/v3 (check_latent): the
absorbed form (W_UK folded into the query, scores against the latent, W_UV after the weighted sum of latents)
equals the expanded one in weights and output on every layer, rope_interleave true (and deepseek_v2's complex
pairs) equals rope_interleave false on q_b_proj's (q_proj's) and kv_a_proj_with_mqa's rotary rows reordered
[even | odd], and deepseek_v3's chosen experts and weights equal a float64 reading of the group-limited rule.
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

circuits/<folder>_l{L}_h{H}.* (gpt2, llama_gqa and deepseek_v3, two heads each; llama_wide, h·d_k = 2 d_model, one):
the circuits of one head as
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
  deepseek_v3 (latent attention): W_q = W_qa diag(g_qa) W_qb, head i's W_k^i = [W_kva,c diag(g_kv) W_uk^i | W_kva,rope]
  (the shared rotary key is every head's last d_r columns) and W_v^i = W_kva,c diag(g_kv) W_uv^i (d_v wide), the
  latent's and q's RMS divisions left out as the block norm's are; every head its own key (N = h).
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
    if t.dtype == torch.uint8:  # packed MXFP4 blocks and their scales keep their bytes whatever the file's dtype
        return t.contiguous().numpy().tobytes()
    store, raw = DTYPES[dtype]
    little = "<i4" if raw == torch.int32 else "<i2"
    return t.detach().to(store).contiguous().view(raw).numpy().astype(little).tobytes()


def save_safetensors(path, tensors, dtype):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        b = tensor_bytes(tensors[name], dtype)
        kind = "U8" if tensors[name].dtype == torch.uint8 else dtype
        header[name] = {"dtype": kind, "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(b)]}
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
    return {k: v if v.dtype == torch.uint8 else v.to(DTYPES[dtype][0]).to(torch.float32) for k, v in tensors.items()}


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


def attend(q, k, v, window=0, scale=None, softcap=None, capped=None, sinks=None, sink_share=None):
    """q k (h or N, T, d_k), v (N, T, d_v) -> weights (h, T, T), merged output (T, h d_v).
    scale: the factor the scores are multiplied by (None: divided by sqrt(d_k)); softcap c: the scores
    become c tanh(s / c) before the mask (Gemma 2); capped: a list that receives those (h, T, T) scores
    with -inf on the blocked keys; sinks (h,): gpt-oss's learned logit per head, one more column of every
    row's softmax, dropped afterwards (sink_share: a list that receives that column's (h, T) mass)."""
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
    if sinks is not None:  # modeling_gpt_oss.py: cat([scores, sink]), softmax, drop the last column
        both = torch.softmax(torch.cat((scores, sinks[:, None, None].expand(h, T, 1)), dim=-1), dim=-1)
        w = both[..., :-1]
        if sink_share is not None:
            sink_share.append(both[..., -1])
    else:
        w = torch.softmax(scores, dim=-1)
    return w, (w @ v).transpose(0, 1).reshape(T, -1)


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
                   "smollm3": True, "llama": False, "mistral": False, "mixtral": False, "qwen3_moe": False,
                   "gpt_oss": False, "deepseek_v2": False, "deepseek_v3": False}
DEEPSEEK = ("deepseek_v2", "deepseek_v3")
MOE = ("mixtral", "qwen3_moe", "gpt_oss") + DEEPSEEK


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
    if t == "gpt_oss":  # layer_types, by default sliding on even layers (configuration_gpt_oss.py)
        types = types or ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
        return [(cfg["sliding_window"] if ty == "sliding_attention" else 0, theta) for ty in types]
    # phi3 (its sliding_window, when set, on every layer), olmo2, mixtral, qwen3_moe (no window unless
    # use_sliding_window, not set in the fixture), deepseek_v2/v3 (no window), and the Llama decoder itself
    return [(cfg.get("sliding_window") or 0, theta)] * L


def rope(x, base, dk, T, inv_freq=None, gain=1.0):
    """Hugging Face's rotate_half RoPE at positions 0 … T-1 with inv_freq_i = base^(-2i/d_k), or the given
    inv_freq (YaRN's), cos and sin times gain (YaRN's attention factor)."""
    inv = inv_freq_of({"rope_theta": base}, dk) if inv_freq is None else inv_freq
    freqs = torch.arange(T).float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * (emb.cos() * gain) + rotate_half(x) * (emb.sin() * gain)


def family_forward(cfg, W, ids):
    """The decoder of qwen3, gemma2, gemma3_text, olmo2, phi3, smollm3, mixtral, qwen3_moe, gpt_oss,
    deepseek_v2 and deepseek_v3 (and llama/mistral, against which it is checked): (normed, attn, hidden, logits, extras),
    extras the per-layer arrays a family adds."""
    t = cfg["model_type"]
    W = dequantised_experts(W)  # gpt-oss's MXFP4 experts, as transformers' mxfp4.py unpacks them
    # gpt-oss's biases are its own; YaRN is gpt-oss's and DeepSeek's (latent_rope, latent_scale), no other family's here.
    assert (t == "gpt_oss" or not cfg.get("attention_bias")) and (t in ("gpt_oss",) + DEEPSEEK or not cfg.get("rope_scaling"))
    assert not cfg.get("mlp_bias") and (cfg.get("rope_scaling") or {}).get("rope_type", "yarn") == "yarn"
    assert cfg.get("partial_rotary_factor", 1.0) == 1.0 and not cfg.get("use_bidirectional_attention")
    d, h, N, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    eps, T, dk = cfg["rms_norm_eps"], len(ids), cfg.get("head_dim") or d // h
    gemma = t in GEMMA
    # Gemma's RMSNorm keeps a zero-centred gain: x / rms(x) * (1 + w), computed in float32.
    norm = lambda x, name: rms_norm(x, 1.0 + W[name] if gemma else W[name], eps)
    scale = cfg["query_pre_attn_scalar"] ** -0.5 if gemma else dk ** -0.5  # Gemma: not d_k's
    inv_freq, rope_gain = (yarn_parameters(cfg, dk) if (cfg.get("rope_scaling") or {}).get("rope_type") == "yarn"
                           else (None, 1.0))
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
        if t in DEEPSEEK:  # multi-head latent attention: its own projections, one shared rotary key
            w, y = latent_layer(cfg, W, P, a, base, extras)
            x = x + y @ W[P + "self_attn.o_proj.weight"].T
            m = norm(x, P + "post_attention_layernorm.weight")
            if cfg.get("_record_mlp_in"):
                extras.setdefault("mlp_in", []).append(m)
            f = moe_mlp(cfg, W, P, l, m, extras)
            x = x + f
            normed.append(a), attn.append(w), hidden.append(x)
            continue
        if t == "phi3":  # one fused projection, rows [q: h d_k | k: N d_k | v: N d_k]
            q, k, v = (a @ W[P + "self_attn.qkv_proj.weight"].T).split([h * dk, N * dk, N * dk], dim=-1)
        else:
            q, k, v = (a @ W[P + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        if cfg.get("attention_bias"):  # gpt-oss: biases on q, k, v and o
            q, k, v = (z + W[P + f"self_attn.{n}_proj.bias"] for z, n in zip((q, k, v), "qkv"))
        if t == "olmo2":  # RMSNorm over the whole projection (h d_k and N d_k wide): the statistics mix heads
            q, k = norm(q, P + "self_attn.q_norm.weight"), norm(k, P + "self_attn.k_norm.weight")
        q, k, v = (z.reshape(T, -1, dk).transpose(0, 1) for z in (q, k, v))
        if t in ("qwen3", "gemma3_text", "qwen3_moe"):  # RMSNorm over each head's d_k after the split
            q, k = norm(q, P + "self_attn.q_norm.weight"), norm(k, P + "self_attn.k_norm.weight")
        if t in ("qwen3", "gemma3_text", "olmo2", "qwen3_moe"):
            extras.setdefault("q_normed", []).append(q)
            extras.setdefault("k_normed", []).append(k)
        if base is not None:
            q, k = rope(q, base, dk, T, inv_freq, rope_gain), rope(k, base, dk, T, inv_freq, rope_gain)
        capped = extras.setdefault("scores_capped", []) if softcap is not None else None
        sinks = W[P + "self_attn.sinks"] if t == "gpt_oss" and not cfg.get("_without_sinks") else None
        share = extras.setdefault("sink_share", []) if sinks is not None else None
        w, y = attend(q, k, v, window, scale=scale, softcap=softcap, capped=capped, sinks=sinks, sink_share=share)
        o = y @ W[P + "self_attn.o_proj.weight"].T
        if cfg.get("attention_bias"):
            o = o + W[P + "self_attn.o_proj.bias"]
        if gemma or t == "olmo2":
            o = norm(o, P + "post_attention_layernorm.weight")
        x = x + o
        # The MLP's input: Gemma's pre_feedforward_layernorm, Llama's post_attention_layernorm, none in OLMo 2.
        m = x if t == "olmo2" else norm(x, P + ("pre_feedforward" if gemma else "post_attention") + "_layernorm.weight")
        if cfg.get("_record_mlp_in"):  # for the checks only: the MLP's input
            extras.setdefault("mlp_in", []).append(m)
        if t in MOE:
            f = moe_mlp(cfg, W, P, l, m, extras)
        elif t == "phi3":  # gate_up_proj rows [gate: F | up: F]
            gate, up = (m @ W[P + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
            f = (act(gate) * up) @ W[P + "mlp.down_proj.weight"].T
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
# Mixture-of-experts MLPs, gpt-oss's MXFP4 experts and YaRN, DeepSeek's latent attention
# ---------------------------------------------------------------------------------------------
# transformers' integrations/mxfp4.py FP4_VALUES: e2m1 (sign, 2 exponent bits, 1 mantissa bit) by nibble.
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
MXFP4_SCALE_BIAS = 127  # a scale byte s multiplies its block of 32 values by 2^(s - 127)


def mxfp4_dequantise(blocks, scales):
    """convert_moe_packed_tensors: blocks (…, R, G, 16) U8, two values a byte (the low nibble first),
    scales (…, R, G) U8 -> (…, R, G·32) float32, then the last two axes swapped as the loader does."""
    lut = torch.tensor(FP4_VALUES)
    lo, hi = lut[(blocks & 0x0F).long()], lut[(blocks >> 4).long()]
    vals = torch.stack((lo, hi), dim=-1).reshape(*blocks.shape[:-1], blocks.shape[-1] * 2)
    vals = vals * torch.pow(2.0, scales.to(torch.float32) - MXFP4_SCALE_BIAS)[..., None]
    return vals.reshape(*blocks.shape[:-2], -1).transpose(-1, -2).contiguous()


def dequantised_experts(W):
    """The weights with every <name>_blocks / <name>_scales pair replaced by <name> (gpt-oss's experts)."""
    if not any(k.endswith("_blocks") for k in W):
        return W
    out = {k: v for k, v in W.items() if not k.endswith(("_blocks", "_scales"))}
    for k in W:
        if k.endswith("_blocks"):
            out[k[:-len("_blocks")]] = mxfp4_dequantise(W[k], W[k[:-len("_blocks")] + "_scales"])
    return out


def yarn_parameters(cfg, dk):
    """modeling_rope_utils.py's _compute_yarn_parameters: (inv_freq (d_k/2,), attention_factor). The ramp
    between interpolation (inv / factor) and extrapolation runs over the dims whose wavelength lies between
    beta_fast and beta_slow turns in original_max_position_embeddings; truncate floors / ceils its ends."""
    rs, base = cfg["rope_scaling"], cfg["rope_theta"]
    factor, old = rs["factor"], rs.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    # Newer transformers take factor = max_position_embeddings / original; the fixture keeps both equal.
    assert "original_max_position_embeddings" not in rs or cfg["max_position_embeddings"] / old == factor
    mscale = lambda s, m=1.0: 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0
    gain = rs.get("attention_factor")
    if gain is None:
        gain = mscale(factor, rs["mscale"]) / mscale(factor, rs["mscale_all_dim"]) \
            if rs.get("mscale") and rs.get("mscale_all_dim") else mscale(factor)
    dim_of = lambda turns: dk * math.log(old / (turns * 2 * math.pi)) / (2 * math.log(base))
    low, high = dim_of(rs.get("beta_fast") or 32), dim_of(rs.get("beta_slow") or 1)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dk - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dk // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos = base ** (torch.arange(0, dk, 2).float() / dk)
    extrapolate = 1 - ramp
    return (1.0 / (factor * pos)) * (1 - extrapolate) + (1.0 / pos) * extrapolate, gain


def swiglu(W, P, m):
    return (torch.nn.functional.silu(m @ W[P + "gate_proj.weight"].T) * (m @ W[P + "up_proj.weight"].T)) \
        @ W[P + "down_proj.weight"].T


def moe_layer(cfg, l):
    """Whether layer l's MLP is the mixture (else the dense MLP of intermediate_size)."""
    t = cfg["model_type"]
    if t == "qwen3_moe":  # modeling_qwen3_moe.py's Qwen3MoeDecoderLayer
        return l not in cfg.get("mlp_only_layers", []) and cfg["num_experts"] > 0 and \
            (l + 1) % cfg.get("decoder_sparse_step", 1) == 0
    if t in DEEPSEEK:  # the first first_k_dense_replace layers are dense
        return l >= cfg["first_k_dense_replace"]
    return True


def route(cfg, W, P, m):
    """(experts (T, k) int64, weights (T, k) float32) of each family's router on the MLP input m (T, d)."""
    t, k = cfg["model_type"], cfg["num_experts_per_tok"]
    if t in ("mixtral", "qwen3_moe"):  # softmax over all experts, top k, renormalised (Qwen3-MoE: if norm_topk_prob)
        gate = "block_sparse_moe.gate.weight" if t == "mixtral" else "mlp.gate.weight"
        probs = torch.softmax(m @ W[P + gate].T, dim=-1)
        w, e = torch.topk(probs, k, dim=-1)
        if t == "mixtral" or cfg.get("norm_topk_prob"):
            w = w / w.sum(-1, keepdim=True)
        return e, w
    if t == "gpt_oss":  # top k of the logits (with the router's bias), then a softmax over those k
        top, e = torch.topk(m @ W[P + "mlp.router.weight"].T + W[P + "mlp.router.bias"], k, dim=-1)
        return e, torch.softmax(top, dim=-1)
    if t == "deepseek_v2":  # DeepseekV2Moe: softmax over all; greedy top k, or group_limited_greedy: the
        # topk_group groups with the highest best score kept, the others' scores set to 0, then top k; times
        # routed_scaling_factor, never renormalised (Lite's and V2's configs say norm_topk_prob false)
        assert not cfg.get("norm_topk_prob")
        E = cfg["n_routed_experts"]
        probs = torch.softmax(m @ W[P + "mlp.gate.weight"].T, dim=-1)
        if cfg["topk_method"] == "group_limited_greedy":
            G = cfg["n_group"]
            groups = probs.view(-1, G, E // G).max(dim=-1).values
            keep = torch.zeros_like(groups).scatter_(1, torch.topk(groups, cfg["topk_group"], dim=-1)[1], 1.0)
            probs = probs.masked_fill(keep[:, :, None].expand(-1, G, E // G).reshape(-1, E) == 0, 0.0)
        else:
            assert cfg["topk_method"] == "greedy"
        w, e = torch.topk(probs, k, dim=-1)
        return e, w * cfg["routed_scaling_factor"]
    # deepseek_v3's DeepseekV3TopkRouter: sigmoid scores; the choice adds e_score_correction_bias, keeps the
    # topk_group groups (of n_routed_experts / n_group) whose two best sum highest, zeroes the rest, takes k;
    # the weights are the unbiased scores of the chosen, renormalised if norm_topk_prob, times
    # routed_scaling_factor. Saved in descending weight (topk there is unsorted).
    E, G = cfg["n_routed_experts"], cfg["n_group"]
    scores = torch.sigmoid(m @ W[P + "mlp.gate.weight"].T)
    choice = scores + W[P + "mlp.gate.e_score_correction_bias"][None, :]
    groups = choice.view(-1, G, E // G).topk(2, dim=-1)[0].sum(-1)
    keep = torch.zeros_like(groups).scatter_(1, torch.topk(groups, cfg["topk_group"], dim=-1)[1], 1.0)
    keep = keep[:, :, None].expand(-1, G, E // G).reshape(-1, E)
    e = torch.topk(choice.masked_fill(keep == 0, 0.0), k, dim=-1)[1]
    w = scores.gather(1, e)
    if cfg.get("norm_topk_prob"):
        w = w / (w.sum(-1, keepdim=True) + 1e-20)
    w = w * cfg["routed_scaling_factor"]
    order = torch.argsort(w, dim=-1, descending=True)
    return e.gather(1, order), w.gather(1, order)


def expert(cfg, W, P, e, m):
    """Expert e's MLP on m (T, d)."""
    t = cfg["model_type"]
    if t == "mixtral":  # w2(silu(w1 x) * w3 x)
        E = f"{P}block_sparse_moe.experts.{e}."
        return (torch.nn.functional.silu(m @ W[E + "w1.weight"].T) * (m @ W[E + "w3.weight"].T)) @ W[E + "w2.weight"].T
    if t == "gpt_oss":  # GptOssExperts: x W (in, out) + b; gate and up interleaved (columns 0::2, 1::2)
        gu = m @ W[P + "mlp.experts.gate_up_proj"][e] + W[P + "mlp.experts.gate_up_proj_bias"][e]
        limit, alpha = cfg.get("swiglu_limit", 7.0), 1.702
        gate, up = gu[:, 0::2].clamp(max=limit), gu[:, 1::2].clamp(-limit, limit)
        glu = gate * torch.sigmoid(gate * alpha)
        return ((up + 1) * glu) @ W[P + "mlp.experts.down_proj"][e] + W[P + "mlp.experts.down_proj_bias"][e]
    return swiglu(W, f"{P}mlp.experts.{e}.", m)


def moe_mlp(cfg, W, P, l, m, extras):
    """The MLP of layer l: the routed sum of k experts (DeepSeek: plus its shared experts), or the dense
    MLP; the router's choice goes to extras (a dense layer's: experts -1, weights 0)."""
    k, T = cfg["num_experts_per_tok"], m.shape[0]
    if not moe_layer(cfg, l):
        extras.setdefault("router_experts", []).append(torch.full((T, k), -1, dtype=torch.int64))
        extras.setdefault("router_weights", []).append(torch.zeros(T, k))
        return swiglu(W, P + "mlp.", m)
    e, w = route(cfg, W, P, m)
    extras.setdefault("router_experts", []).append(e)
    extras.setdefault("router_weights", []).append(w)
    out = torch.zeros_like(m)
    for x in sorted(set(e.flatten().tolist())):  # every expert a token chose, on the tokens that chose it
        rows, slot = torch.where(e == x)
        out.index_add_(0, rows, expert(cfg, W, P, x, m[rows]) * w[rows, slot][:, None])
    if cfg["model_type"] in DEEPSEEK and cfg.get("n_shared_experts"):
        out = out + swiglu(W, P + "mlp.shared_experts.", m)
    return out


def deinterleave(x):
    """modeling_deepseek_v3.py's apply_rotary_pos_emb_interleave: pairs (0, 1), (2, 3), … become the
    rotate_half pairs (i, i + d/2): the even entries first, then the odd ones."""
    return x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2).transpose(-1, -2).reshape(x.shape)


def latent_rope(cfg, q_rot, k_rot, base):
    """The rotary parts turned as each DeepSeek file does: V3 with rope_interleave (its default) reorders the
    pairs (0,1), (2,3), … to [even | odd] and applies rotate_half; without it, rotate_half as stored; V2's
    apply_rotary_emb multiplies each adjacent pair, read as a complex number, by e^(i pos inv_freq), in place."""
    dr, T = q_rot.shape[-1], q_rot.shape[-2]
    if cfg["model_type"] == "deepseek_v2":
        assert cfg.get("rope_scaling") is None  # the fixtures' V2 has plain RoPE
        ang = torch.arange(T).float()[:, None] * inv_freq_of({"rope_theta": base}, dr)[None, :]
        turn = torch.polar(torch.ones_like(ang), ang)  # (T, d_r/2)
        pairs = lambda x: torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
        spin = lambda x: torch.view_as_real(pairs(x) * turn).flatten(-2)
        return spin(q_rot), spin(k_rot)
    if cfg.get("rope_interleave", True):  # configuration_deepseek_v3.py's default
        q_rot, k_rot = deinterleave(q_rot), deinterleave(k_rot)
    inv, gain = yarn_parameters(cfg, dr) if cfg.get("rope_scaling") else (None, 1.0)  # YaRN over the d_r features
    return rope(q_rot, base, dr, T, inv, gain), rope(k_rot, base, dr, T, inv, gain)


def latent_scale(cfg):
    """DeepseekV3Attention's softmax scale: (d_n + d_r)^-1/2, times yarn_get_mscale(factor, mscale_all_dim)^2 when
    rope_scaling sets mscale_all_dim (0.1 m ln(factor) + 1, or 1 for factor <= 1)."""
    scale = (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]) ** -0.5
    rs = cfg.get("rope_scaling") or {}
    if rs.get("mscale_all_dim"):
        m = 1.0 if rs["factor"] <= 1 else 0.1 * rs["mscale_all_dim"] * math.log(rs["factor"]) + 1.0
        scale *= m * m
    return scale


def latent_layer(cfg, W, P, a, base, extras):
    """DeepseekV3Attention (DeepseekV2Attention) on a (T, d): weights (h, T, T) and the heads' outputs side
    by side (T, h d_v). The latent's and q's own norms use eps 1e-6 (the RMSNorm's default, not rms_norm_eps)."""
    h, T = cfg["num_attention_heads"], a.shape[0]
    dn, dr, dv, r = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    A = P + "self_attn."
    if cfg.get("q_lora_rank"):
        q = rms_norm(a @ W[A + "q_a_proj.weight"].T, W[A + "q_a_layernorm.weight"], 1e-6) @ W[A + "q_b_proj.weight"].T
    else:
        q = a @ W[A + "q_proj.weight"].T
    q = q.view(T, h, dn + dr).transpose(0, 1)
    q_pass, q_rot = q[..., :dn], q[..., dn:]
    kv = a @ W[A + "kv_a_proj_with_mqa.weight"].T
    c, k_rot = rms_norm(kv[:, :r], W[A + "kv_a_layernorm.weight"], 1e-6), kv[:, r:][None]  # k_rot (1, T, d_r)
    extras.setdefault("latent", []).append(c)
    kvb = (c @ W[A + "kv_b_proj.weight"].T).view(T, h, dn + dv).transpose(0, 1)
    k_pass, v = kvb[..., :dn], kvb[..., dn:]
    q_rot, k_rot = latent_rope(cfg, q_rot, k_rot, base)
    query, key = torch.cat((q_pass, q_rot), dim=-1), torch.cat((k_pass, k_rot.expand(h, T, dr)), dim=-1)
    return attend(query, key, v, scale=latent_scale(cfg))


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
        if t in ("qwen3", "gemma3_text", "qwen3_moe"):
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


def mxfp4_quantise_random(g, E, rows, cols):
    """Random MXFP4 experts as gpt-oss's files hold them: blocks (E, rows, cols/32, 16) U8 of random nibbles
    (-0.0 left out so every byte is the one way of writing its values), scales (E, rows, cols/32) U8 near
    the bias, so the values reach a few units and the SwiGLU's clamp at swiglu_limit is met."""
    nib = torch.randint(0, 15, (E, rows, cols // 32, 32), generator=g)
    nib = torch.where(nib >= 8, nib + 1, nib)  # nibbles 0-7 and 9-15
    blocks = (nib[..., 0::2] | (nib[..., 1::2] << 4)).to(torch.uint8)
    scales = torch.randint(MXFP4_SCALE_BIAS - 4, MXFP4_SCALE_BIAS - 1, (E, rows, cols // 32), generator=g).to(torch.uint8)
    return blocks, scales


def moe_weights(cfg, seed):
    """family_weights' embeddings, norms and attention, with each family's MLP (and DeepSeek's latent
    attention) in its released tensor names, shapes and storage."""
    t = cfg["model_type"]
    W = {k: v for k, v in family_weights(cfg, seed).items()
         if ".mlp." not in k and not (t in DEEPSEEK and ".self_attn." in k)}
    g = torch.Generator().manual_seed(seed + 100)
    d, h = cfg["hidden_size"], cfg["num_attention_heads"]
    dk = cfg.get("head_dim") or d // h
    mlp = lambda P, F: {P + "gate_proj.weight": rnd(g, F, d), P + "up_proj.weight": rnd(g, F, d),
                        P + "down_proj.weight": rnd(g, d, F)}
    for l in range(cfg["num_hidden_layers"]):
        P = f"model.layers.{l}."
        if t == "mixtral":
            W[P + "block_sparse_moe.gate.weight"] = rnd(g, cfg["num_local_experts"], d, scale=0.5)
            for e in range(cfg["num_local_experts"]):
                F, E = cfg["intermediate_size"], f"{P}block_sparse_moe.experts.{e}."
                W[E + "w1.weight"], W[E + "w3.weight"], W[E + "w2.weight"] = rnd(g, F, d), rnd(g, F, d), rnd(g, d, F)
        if t == "qwen3_moe":
            if not moe_layer(cfg, l):
                W.update(mlp(P + "mlp.", cfg["intermediate_size"]))
                continue
            W[P + "mlp.gate.weight"] = rnd(g, cfg["num_experts"], d, scale=0.5)
            for e in range(cfg["num_experts"]):
                W.update(mlp(f"{P}mlp.experts.{e}.", cfg["moe_intermediate_size"]))
        if t == "gpt_oss":
            E, F = cfg["num_local_experts"], cfg["intermediate_size"]
            kv = cfg["num_key_value_heads"] * dk
            for n, rows in (("q", h * dk), ("k", kv), ("v", kv), ("o", d)):
                W[f"{P}self_attn.{n}_proj.bias"] = rnd(g, rows, scale=0.1)
            W[P + "self_attn.sinks"] = rnd(g, h, scale=1.0)
            W[P + "mlp.router.weight"], W[P + "mlp.router.bias"] = rnd(g, E, d, scale=0.5), rnd(g, E, scale=0.2)
            # The released files' layout: rows are the outputs (gate_up: 2F, gate and up interleaved; down: d).
            W[P + "mlp.experts.gate_up_proj_blocks"], W[P + "mlp.experts.gate_up_proj_scales"] = mxfp4_quantise_random(g, E, 2 * F, d)
            W[P + "mlp.experts.down_proj_blocks"], W[P + "mlp.experts.down_proj_scales"] = mxfp4_quantise_random(g, E, d, F)
            W[P + "mlp.experts.gate_up_proj_bias"], W[P + "mlp.experts.down_proj_bias"] = rnd(g, E, 2 * F, scale=0.3), rnd(g, E, d, scale=0.1)
        if t in DEEPSEEK:
            dn, dr, dv, r, rq = (cfg[k] for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank"))
            A = P + "self_attn."
            if rq:
                W[A + "q_a_proj.weight"], W[A + "q_a_layernorm.weight"] = rnd(g, rq, d, scale=0.35), 1 + rnd(g, rq, scale=0.1)
                W[A + "q_b_proj.weight"] = rnd(g, h * (dn + dr), rq, scale=0.35)
            else:
                W[A + "q_proj.weight"] = rnd(g, h * (dn + dr), d, scale=0.35)
            W[A + "kv_a_proj_with_mqa.weight"] = rnd(g, r + dr, d, scale=0.35)
            W[A + "kv_a_layernorm.weight"] = 1 + rnd(g, r, scale=0.1)
            W[A + "kv_b_proj.weight"] = rnd(g, h * (dn + dv), r, scale=0.35)
            W[A + "o_proj.weight"] = rnd(g, d, h * dv)
            if not moe_layer(cfg, l):
                W.update(mlp(P + "mlp.", cfg["intermediate_size"]))
                continue
            W[P + "mlp.gate.weight"] = rnd(g, cfg["n_routed_experts"], d, scale=0.5)
            if t == "deepseek_v3":
                W[P + "mlp.gate.e_score_correction_bias"] = rnd(g, cfg["n_routed_experts"], scale=0.1)
            for e in range(cfg["n_routed_experts"]):
                W.update(mlp(f"{P}mlp.experts.{e}.", cfg["moe_intermediate_size"]))
            W.update(mlp(P + "mlp.shared_experts.", cfg["moe_intermediate_size"] * cfg["n_shared_experts"]))
    return W


def moe_configs():
    """(folder, config, seed, stored dtype) of each mixture-of-experts family's fixture, each config with the
    keys of its published config.json (Mixtral-8x7B-v0.1, Qwen3-30B-A3B, gpt-oss-20b, DeepSeek-V3) at small
    sizes: d_model 32, 4 query heads."""
    common = {"attention_dropout": 0.0, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
              "max_position_embeddings": 64, "num_attention_heads": 4, "output_router_logits": False,
              "tie_word_embeddings": False, "torch_dtype": "float32", "use_cache": True, "vocab_size": 100}
    mixtral = dict(common, architectures=["MixtralForCausalLM"], model_type="mixtral", bos_token_id=1, eos_token_id=2,
                   intermediate_size=48, num_experts_per_tok=2, num_hidden_layers=2, num_key_value_heads=2,
                   num_local_experts=4, rms_norm_eps=1e-5, rope_theta=1000000.0, router_aux_loss_coef=0.02,
                   sliding_window=None)
    qwen3_moe = dict(common, architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", attention_bias=False,
                     bos_token_id=1, decoder_sparse_step=1, eos_token_id=2, head_dim=16, intermediate_size=48,
                     max_window_layers=2, mlp_only_layers=[], moe_intermediate_size=24, norm_topk_prob=True,
                     num_experts=4, num_experts_per_tok=2, num_hidden_layers=2, num_key_value_heads=2,
                     rms_norm_eps=1e-6, rope_scaling=None, rope_theta=1000000.0, router_aux_loss_coef=0.001,
                     sliding_window=None, use_sliding_window=False)
    # YaRN with factor 2 over gpt-oss-20b's original_max_position_embeddings 4096 (max_position_embeddings 8192:
    # the ratio newer transformers read is the factor too), truncate false as gpt-oss-20b's: with head_dim 16
    # and base 150000 dims 0-2 keep their frequency, 3-4 blend, 5-7 are divided by 2; window 4 on sliding layers.
    gpt_oss = dict(common, architectures=["GptOssForCausalLM"], model_type="gpt_oss", attention_bias=True,
                   eos_token_id=2, experts_per_token=2, head_dim=16, initial_context_length=4096, intermediate_size=32,
                   layer_types=["sliding_attention", "full_attention"], num_experts_per_tok=2, num_hidden_layers=2,
                   max_position_embeddings=8192, num_key_value_heads=2, num_local_experts=4, pad_token_id=0,
                   quantization_config={"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                   "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
                   rms_norm_eps=1e-5, rope_scaling={"beta_fast": 32.0, "beta_slow": 1.0, "factor": 2.0,
                                                    "original_max_position_embeddings": 4096, "rope_type": "yarn",
                                                    "truncate": False},
                   rope_theta=150000.0, router_aux_loss_coef=0.9, sliding_window=4, swiglu_limit=7.0)
    # rope_scaling null (DeepSeek-V3's own is YaRN with mscale_all_dim; refused by the fixture's reference);
    # rope_interleave absent as in the published config.json: configuration_deepseek_v3.py's default, true.
    deepseek_v3 = dict(common, architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3", attention_bias=False,
                       bos_token_id=0, eos_token_id=1, ep_size=1, first_k_dense_replace=1, intermediate_size=48,
                       kv_lora_rank=16, moe_intermediate_size=16, moe_layer_freq=1, n_group=4, n_routed_experts=8,
                       n_shared_experts=1, norm_topk_prob=True, num_experts_per_tok=2, num_hidden_layers=3,
                       num_key_value_heads=4, num_nextn_predict_layers=0, q_lora_rank=16, qk_nope_head_dim=8,
                       qk_rope_head_dim=8, rms_norm_eps=1e-6, rope_scaling=None, rope_theta=10000.0,
                       routed_scaling_factor=2.5, scoring_func="sigmoid", topk_group=2, topk_method="noaux_tc",
                       v_head_dim=12)
    # DeepSeek-V2-Lite's q_proj (q_lora_rank null) with DeepSeek-V2's group_limited_greedy routing: softmax
    # scores, no renormalisation, two shared experts; rope_scaling null as for V3.
    deepseek_v2 = dict(common, architectures=["DeepseekV2ForCausalLM"], model_type="deepseek_v2", attention_bias=False,
                       aux_loss_alpha=0.001, bos_token_id=0, eos_token_id=1, first_k_dense_replace=1, intermediate_size=48,
                       kv_lora_rank=16, moe_intermediate_size=16, moe_layer_freq=1, n_group=4, n_routed_experts=8,
                       n_shared_experts=2, norm_topk_prob=False, num_experts_per_tok=2, num_hidden_layers=3,
                       num_key_value_heads=4, pretraining_tp=1, q_lora_rank=None, qk_nope_head_dim=8, qk_rope_head_dim=8,
                       rms_norm_eps=1e-6, rope_scaling=None, rope_theta=10000.0, routed_scaling_factor=16.0,
                       scoring_func="softmax", seq_aux=True, topk_group=2, topk_method="group_limited_greedy",
                       v_head_dim=12)
    # DeepSeek-V3's own rope_scaling kind, YaRN with mscale and mscale_all_dim (the published 40 over 4096 with
    # both 1.0 leaves cos and sin as they are): factor 4 over 16 original positions, mscale 1.0 against
    # mscale_all_dim 0.8, so cos and sin gain mscale(4, 1) / mscale(4, 0.8) and the scores mscale(4, 0.8)^2.
    deepseek_v3_yarn = dict(deepseek_v3, rope_scaling={"beta_fast": 32, "beta_slow": 1, "factor": 4.0, "mscale": 1.0,
                                                       "mscale_all_dim": 0.8, "original_max_position_embeddings": 16,
                                                       "type": "yarn"})
    return [(name, dict(sorted(cfg.items())), seed, dtype) for name, cfg, seed, dtype in [
        ("mixtral", mixtral, 13, "F32"), ("qwen3_moe", qwen3_moe, 14, "F32"), ("gpt_oss", gpt_oss, 15, "BF16"),
        ("deepseek_v3", deepseek_v3, 16, "F32"), ("deepseek_v2", deepseek_v2, 17, "F32"),
        ("deepseek_v3_yarn", deepseek_v3_yarn, 18, "F32")]]


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
            a = torch.stack(per_layer).numpy()
            np.save(os.path.join(ref, f"s{s}_{what}.npy"), a.astype(np.int64 if a.dtype.kind == "i" else np.float32))
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


def naive_moe(cfg, W, P, l, m):
    """An independent float64 NumPy reading of layer l's MLP on its input m (T, d), token by token: the
    router's scores, the k chosen written out as a sort, each chosen expert's MLP with its activation
    written out (gpt-oss: the interleaved gate / up read as pairs), DeepSeek's shared experts added."""
    f = lambda n: W[n].detach().double().numpy()
    t, k = cfg["model_type"], cfg["num_experts_per_tok"]
    m = m.detach().double().numpy()
    silu = lambda z: z / (1 + np.exp(-z))
    glu = lambda x, n: (silu(x @ f(n + "gate_proj.weight").T) * (x @ f(n + "up_proj.weight").T)) @ f(n + "down_proj.weight").T
    if not moe_layer(cfg, l):
        return glu(m, P + "mlp.")
    out = np.zeros_like(m)
    for i, x in enumerate(m):
        if t in ("mixtral", "qwen3_moe"):
            z = x @ f(P + ("block_sparse_moe.gate.weight" if t == "mixtral" else "mlp.gate.weight")).T
            p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            pick = sorted(range(len(p)), key=lambda e: -p[e])[:k]
            w = p[pick] / (p[pick].sum() if t == "mixtral" or cfg.get("norm_topk_prob") else 1.0)
        elif t == "gpt_oss":
            z = x @ f(P + "mlp.router.weight").T + f(P + "mlp.router.bias")
            pick = sorted(range(len(z)), key=lambda e: -z[e])[:k]
            w = np.exp(z[pick] - z[pick].max()) / np.exp(z[pick] - z[pick].max()).sum()
        elif t == "deepseek_v2":
            E, G = cfg["n_routed_experts"], cfg["n_group"]
            z = x @ f(P + "mlp.gate.weight").T
            p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            allowed = range(E)
            if cfg["topk_method"] == "group_limited_greedy":
                best = sorted(range(G), key=lambda g: -p[g * (E // G):(g + 1) * (E // G)].max())[:cfg["topk_group"]]
                allowed = [e for e in range(E) if e // (E // G) in best]
            pick = sorted(allowed, key=lambda e: -p[e])[:k]
            w = p[pick] * cfg["routed_scaling_factor"]
        else:
            E, G = cfg["n_routed_experts"], cfg["n_group"]
            s = 1 / (1 + np.exp(-(x @ f(P + "mlp.gate.weight").T)))
            ch = s + f(P + "mlp.gate.e_score_correction_bias")
            best = sorted(range(G), key=lambda g: -np.sort(ch[g * (E // G):(g + 1) * (E // G)])[-2:].sum())[:cfg["topk_group"]]
            pick = sorted([e for e in range(E) if e // (E // G) in best], key=lambda e: -ch[e])[:k]
            w = s[pick] / (s[pick].sum() if cfg.get("norm_topk_prob") else 1.0) * cfg["routed_scaling_factor"]
        for e, we in zip(pick, w):
            if t == "mixtral":
                n = f"{P}block_sparse_moe.experts.{e}."
                y = (silu(x @ f(n + "w1.weight").T) * (x @ f(n + "w3.weight").T)) @ f(n + "w2.weight").T
            elif t == "gpt_oss":
                gu = x @ f(P + "mlp.experts.gate_up_proj")[e] + f(P + "mlp.experts.gate_up_proj_bias")[e]
                lim = cfg.get("swiglu_limit", 7.0)
                pairs = gu.reshape(-1, 2)  # (gate, up) side by side for each of the F units
                g_, u_ = np.minimum(pairs[:, 0], lim), np.clip(pairs[:, 1], -lim, lim)
                y = ((u_ + 1) * g_ / (1 + np.exp(-1.702 * g_))) @ f(P + "mlp.experts.down_proj")[e] + f(P + "mlp.experts.down_proj_bias")[e]
            else:
                y = glu(x[None], f"{P}mlp.experts.{e}.")[0]
            out[i] += we * y
    if t in DEEPSEEK:
        out += glu(m, P + "mlp.shared_experts.")
    return out


def check_moe(cfg, W):
    """The asserts each mixture-of-experts family's reference must pass before its folder is written."""
    t, ids = cfg["model_type"], IDS_CHECK
    normed, attn, hidden, logits, extras = family_forward(cfg, W, ids)
    L, k = cfg["num_hidden_layers"], cfg["num_experts_per_tok"]
    experts, weights = torch.stack(extras["router_experts"]), torch.stack(extras["router_weights"])
    assert experts.shape == (L, len(ids), k) and weights.shape == (L, len(ids), k)
    moe = [l for l in range(L) if moe_layer(cfg, l)]
    assert len(set(experts[moe].flatten().tolist())) > k, f"{t}: the router always picks the same experts"
    for l in range(L):  # k distinct experts a token
        assert all(len(set(row.tolist())) == k for row in experts[l]) or l not in moe
    if t in ("mixtral", "qwen3_moe", "gpt_oss"):  # softmax-normalised choices sum to 1
        close(weights[moe].sum(-1), torch.ones(len(moe), len(ids)), f"{t} router weights sum")
    D = dequantised_experts(W)
    for l, m in enumerate(family_forward(dict(cfg, _record_mlp_in=True), W, ids)[4]["mlp_in"]):
        close(moe_mlp(cfg, D, f"model.layers.{l}.", l, m, {}), naive_moe(cfg, D, f"model.layers.{l}.", l, m),
              f"{t} layer {l}'s MLP against the float64 reading")

    if t == "mixtral":  # expert 0 alone, top 1: the Llama decoder with w1, w3, w2 as gate, up, down
        names = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}
        keep = {n: v for n, v in W.items() if "block_sparse_moe" not in n}
        cut, dense = dict(keep), dict(keep)
        for l in range(L):
            P = f"model.layers.{l}."
            for mine, theirs in names.items():
                cut[f"{P}block_sparse_moe.experts.0.{mine}.weight"] = dense[f"{P}mlp.{theirs}.weight"] = \
                    W[f"{P}block_sparse_moe.experts.0.{mine}.weight"]
            cut[P + "block_sparse_moe.gate.weight"] = W[P + "block_sparse_moe.gate.weight"][:1]
        ours = family_forward(dict(cfg, num_local_experts=1, num_experts_per_tok=1), cut, ids)
        ref = llama_forward(dict(cfg, model_type="llama"), dense, ids)
        for i in range(4):
            close(ours[i], ref[i], "mixtral with one expert, top 1, against llama_forward with that expert's MLP")
    if t == "qwen3_moe":  # the same against Qwen3's decoder; and norm_topk_prob matters
        keep = {n: v for n, v in W.items() if ".mlp." not in n}
        cut, dense = dict(keep), dict(keep)
        for l in range(L):
            P = f"model.layers.{l}."
            for n in ("gate_proj", "up_proj", "down_proj"):
                cut[f"{P}mlp.experts.0.{n}.weight"] = dense[f"{P}mlp.{n}.weight"] = W[f"{P}mlp.experts.0.{n}.weight"]
            cut[P + "mlp.gate.weight"] = W[P + "mlp.gate.weight"][:1]
        ours = family_forward(dict(cfg, num_experts=1, num_experts_per_tok=1), cut, ids)
        ref = family_forward(dict(cfg, model_type="qwen3", intermediate_size=cfg["moe_intermediate_size"]), dense, ids)
        for i in range(4):
            close(ours[i], ref[i], "qwen3_moe with one expert, top 1, against qwen3's decoder with that expert's MLP")
        free = family_forward(dict(cfg, norm_topk_prob=False), W, ids)
        assert (free[2][0] - hidden[0]).abs().max() > 1e-3, "qwen3_moe: norm_topk_prob changes nothing"
    if t == "gpt_oss":
        # The e2m1 table from its definition: sign, exponent e (2 bits), mantissa m: e = 0 gives m / 2,
        # else 2^(e - 1) (1 + m / 2); a known byte and scale: 0x2F with scale 128 is [-6, 1] times 2.
        for n, v in enumerate(FP4_VALUES):
            e, m = (n >> 1) & 3, n & 1
            assert v == (-1) ** (n >> 3) * (m / 2 if e == 0 else 2.0 ** (e - 1) * (1 + m / 2)), n
        known = mxfp4_dequantise(torch.tensor([[[[0x2F] + [0] * 15]]], dtype=torch.uint8), torch.tensor([[[128]]], dtype=torch.uint8))
        assert known.shape == (1, 32, 1) and known[0, :2, 0].tolist() == [-12.0, 2.0] and not known[0, 2:].any()
        D = dequantised_experts(W)
        for n, v in D.items():  # the dequantised values are exact in BF16, so gpt_oss_bf16 holds the same numbers
            assert torch.equal(v, v.to(torch.bfloat16).to(torch.float32)), n
        assert D["model.layers.0.mlp.experts.gate_up_proj"].shape == (cfg["num_local_experts"], cfg["hidden_size"], 2 * cfg["intermediate_size"])
        free = family_forward(dict(cfg, _without_sinks=True), W, ids)
        gone = family_forward(cfg, {**W, **{n: torch.full_like(v, float("-inf")) for n, v in W.items() if n.endswith("sinks")}}, ids)
        for i in range(4):
            close(gone[i], free[i], "gpt_oss with sinks at -inf against no sinks")
        share = torch.stack(extras["sink_share"])
        close(torch.stack(attn).sum(-1) + share, torch.ones_like(share), "gpt_oss: the row and its sink share sum to 1")
        assert share.max() > 0.05 and (torch.stack(attn) - torch.stack(free[1])).abs().max() > 1e-2, "gpt_oss: sinks inert"
        far = torch.tril(torch.ones(len(ids), len(ids)), diagonal=-cfg["sliding_window"]).bool()
        assert attn[0][:, far].abs().max() == 0 and attn[1][:, far].abs().max() > 0, "gpt_oss: sliding / full layers"
        dk = cfg["head_dim"]
        one, gain = yarn_parameters(dict(cfg, rope_scaling=dict(cfg["rope_scaling"], factor=1.0), max_position_embeddings=4096), dk)
        close(one, inv_freq_of(cfg | {"rope_scaling": None}, dk), "yarn with factor 1 against plain RoPE")
        assert gain == 1.0
        inv, gain = yarn_parameters(cfg, dk)
        plain = inv_freq_of(cfg | {"rope_scaling": None}, dk)
        assert abs(gain - (0.1 * math.log(2.0) + 1)) < 1e-12
        # A dim turning more than beta_fast times over the original context keeps its frequency, one turning
        # fewer than beta_slow times is divided by factor; the fixture has both kinds.
        rs = cfg["rope_scaling"]
        turns = rs["original_max_position_embeddings"] * plain / (2 * math.pi)
        fast, slow = turns >= rs["beta_fast"], turns <= rs["beta_slow"]
        assert fast.any() and slow.any(), turns
        close(inv[fast], plain[fast], "yarn keeps the fast dims")
        close(inv[slow], plain[slow] / rs["factor"], "yarn divides the slow dims")
        unclamped = family_forward(dict(cfg, swiglu_limit=1e9), W, ids)
        assert (unclamped[2][0] - hidden[0]).abs().max() > 1e-3, "gpt_oss: the fixture never meets swiglu_limit"
    if t in DEEPSEEK:
        check_latent(cfg, W, ids, normed, attn, extras)


def check_latent(cfg, W, ids, normed, attn, extras):
    """DeepSeek's checks: the absorbed form (W_UK into the query, W_UV after the weighted sum of latents) gives
    the expanded weights and output; rope_interleave is a permutation of the rotary rows; the router's choice
    equals a float64 reading of the group-limited rule, token by token."""
    h, T = cfg["num_attention_heads"], len(ids)
    dn, dr, dv, r = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    for l in range(cfg["num_hidden_layers"]):
        A, a = f"model.layers.{l}.self_attn.", normed[l]
        w, y = latent_layer(cfg, W, f"model.layers.{l}.", a, cfg["rope_theta"], {})
        if cfg.get("q_lora_rank"):
            q = rms_norm(a @ W[A + "q_a_proj.weight"].T, W[A + "q_a_layernorm.weight"], 1e-6) @ W[A + "q_b_proj.weight"].T
        else:
            q = a @ W[A + "q_proj.weight"].T
        q = q.view(T, h, dn + dr).transpose(0, 1)
        kv = a @ W[A + "kv_a_proj_with_mqa.weight"].T
        c = extras["latent"][l]
        q_rot, k_rot = latent_rope(cfg, q[..., dn:], kv[:, r:], cfg["rope_theta"])
        wkvb = W[A + "kv_b_proj.weight"].view(h, dn + dv, r)
        s = (torch.einsum("htn,hnr->htr", q[..., :dn], wkvb[:, :dn]) @ c.T + q_rot @ k_rot.T) * latent_scale(cfg)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        a2 = torch.softmax(s, dim=-1)
        y2 = torch.einsum("htr,hvr->thv", a2 @ c, wkvb[:, dn:]).reshape(T, h * dv)
        close(a2, attn[l], "deepseek_v3 absorbed weights against expanded")
        close(y2, y, "deepseek_v3 absorbed output against expanded", atol=1e-4)
    # DeepSeek-V3 with rope_interleave false on the rotary rows de-interleaved (q_b_proj's last d_r rows of
    # each head, kv_a_proj_with_mqa's last d_r rows) is the same model; so is DeepSeek-V2's complex form.
    perm = torch.cat((torch.arange(0, dr, 2), torch.arange(1, dr, 2)))
    flat = dict(W)
    qn = "q_b_proj.weight" if cfg.get("q_lora_rank") else "q_proj.weight"
    for l in range(cfg["num_hidden_layers"]):
        A = f"model.layers.{l}.self_attn."
        qb = W[A + qn].view(h, dn + dr, -1)
        flat[A + qn] = torch.cat((qb[:, :dn], qb[:, dn:][:, perm]), dim=1).reshape(h * (dn + dr), -1)
        ka = W[A + "kv_a_proj_with_mqa.weight"]
        flat[A + "kv_a_proj_with_mqa.weight"] = torch.cat((ka[:r], ka[r:][perm]))
    ours = family_forward(cfg, W, ids)
    if cfg["model_type"] == "deepseek_v3":
        theirs = family_forward(dict(cfg, rope_interleave=False), flat, ids)
        for i in range(4):
            close(ours[i], theirs[i], "deepseek_v3 interleaved against rotate_half on permuted rows")
    else:
        theirs = [latent_layer(dict(cfg, model_type="deepseek_v3", rope_interleave=False), flat, f"model.layers.{l}.",
                               ours[0][l], cfg["rope_theta"], {})[0] for l in range(cfg["num_hidden_layers"])]
        close(ours[1], theirs, "deepseek_v2's complex pairs against rotate_half on permuted rows")
    E, G, k = cfg["n_routed_experts"], cfg["n_group"], cfg["num_experts_per_tok"]
    hidden = [z.double().numpy() for z in ours[2]]
    for l in range(cfg["first_k_dense_replace"], cfg["num_hidden_layers"]) if cfg["model_type"] == "deepseek_v3" else []:
        P = f"model.layers.{l}."
        # The MLP input, post_attention_layernorm(layer input + attention), in float64 from the reference's
        # pieces; then the rule applied token by token.
        inp = hidden[l - 1]
        attn_out = latent_layer(cfg, W, P, ours[0][l], cfg["rope_theta"], {})[1] @ W[P + "self_attn.o_proj.weight"].T
        mid = inp + attn_out.double().numpy()
        m = mid / np.sqrt((mid ** 2).mean(-1, keepdims=True) + cfg["rms_norm_eps"]) * W[P + "post_attention_layernorm.weight"].double().numpy()
        sc = 1 / (1 + np.exp(-(m @ W[P + "mlp.gate.weight"].double().numpy().T)))
        bias = W[P + "mlp.gate.e_score_correction_bias"].double().numpy()
        for i in range(T):
            ch = sc[i] + bias
            best = sorted(range(G), key=lambda gi: -np.sort(ch[gi * (E // G):(gi + 1) * (E // G)])[-2:].sum())[:cfg["topk_group"]]
            allowed = [e for e in range(E) if e // (E // G) in best]
            pick = sorted(allowed, key=lambda e: -ch[e])[:k]
            wts = sc[i][pick] / sc[i][pick].sum() * cfg["routed_scaling_factor"]
            got = extras["router_experts"][l][i].tolist()
            assert sorted(pick) == sorted(got), f"deepseek_v3 layer {l} token {i}: {pick} against {got}"
            close(sorted(wts, reverse=True), extras["router_weights"][l][i], "deepseek_v3 router weights in float64")


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
    elif cfg["model_type"] in DEEPSEEK:
        # latent_layer's products with its two RMS divisions left out (q_a_layernorm's and kv_a_layernorm's gains
        # kept): head i's key is [c W_uk^i | k_rope], its value c W_uv^i, c = x W_kva[:, :r] diag(g_kv); q is
        # x W_qa diag(g_qa) W_qb (or x W_q). Every head has a key of its own (N = h), d_n + d_r wide; values d_v.
        h, dn, dr, dv, r = (cfg[k] for k in ("num_attention_heads", "qk_nope_head_dim", "qk_rope_head_dim",
                                             "v_head_dim", "kv_lora_rank"))
        for l in range(cfg["num_hidden_layers"]):
            A = f"model.layers.{l}.self_attn."
            g = f(W[f"model.layers.{l}.input_layernorm.weight"])[:, None]
            if cfg.get("q_lora_rank"):
                wq = f(W[A + "q_a_proj.weight"]).T * f(W[A + "q_a_layernorm.weight"])[None, :] @ f(W[A + "q_b_proj.weight"]).T
            else:
                wq = f(W[A + "q_proj.weight"]).T
            kva = f(W[A + "kv_a_proj_with_mqa.weight"]).T  # (d, r + d_r)
            c = kva[:, :r] * f(W[A + "kv_a_layernorm.weight"])[None, :]  # (d, r)
            kvb = (c @ f(W[A + "kv_b_proj.weight"]).T).reshape(-1, h, dn + dv)  # (d, h, d_n + d_v)
            wk = np.concatenate([np.concatenate([kvb[:, i, :dn], kva[:, r:]], axis=1) for i in range(h)], axis=1)
            wv = np.concatenate([kvb[:, i, dn:] for i in range(h)], axis=1)
            layers.append((g * wq, g * wk, g * wv, f(W[A + "o_proj.weight"]).T))
        E = f(W["model.embed_tokens.weight"])
        U = f(W["model.norm.weight"])[:, None] * f(W["lm_head.weight"]).T
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
    n = wk.shape[1] // dk
    dv = wv.shape[1] // n  # d_k but on a latent layer
    kv = i // (h // n)  # query head i reads K/V head i // (h/N)
    qk = wq[:, i * dk:(i + 1) * dk] @ wk[:, kv * dk:(kv + 1) * dk].T
    ov = wv[:, kv * dv:(kv + 1) * dv] @ wo[i * dv:(i + 1) * dv, :]
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
    write_circuits("llama_wide", wide, stored(llama_weights(wide, seed=6), "F32"), llama_forward, [(1, 3)])

    check_shared_decoder([(llama, stored(Wl, "F32")), (mistral, stored(llama_weights(mistral, seed=4), "F32")),
                          (wide, stored(llama_weights(wide, seed=6), "F32"))])
    # The newer families, each config in its published form (keys as the family's own config.json has them).
    for name, cfg, seed, dtype in family_configs():
        Wf = family_weights(cfg, seed)
        check_family(cfg, stored(Wf, dtype))
        write_folder(name, cfg, Wf, dtype, family_forward)
    for name, cfg, seed, dtype in moe_configs():
        Wm = moe_weights(cfg, seed)
        check_moe(cfg, stored(Wm, dtype))
        write_folder(name, cfg, Wm, dtype, family_forward)
        if name == "deepseek_v3":  # the circuits of a latent layer's heads
            write_circuits(name, cfg, stored(Wm, dtype), lambda c, W, i: family_forward(c, W, i)[:4], [(1, 2), (2, 0)])
        if name == "gpt_oss":  # the same model with its experts dequantised to BF16, no quantization_config
            plain = {k: v for k, v in cfg.items() if k != "quantization_config"}
            write_folder("gpt_oss_bf16", plain, dequantised_experts(Wm), dtype, family_forward)
            for folder in ("gpt_oss", "gpt_oss_bf16"):  # YaRN's numbers, to check the rotation on its own
                inv, gain = yarn_parameters(cfg, cfg["head_dim"])
                np.save(os.path.join(ROOT, "reference", folder, "rope_inv_freq.npy"), inv.numpy().astype(np.float32))
                np.save(os.path.join(ROOT, "reference", folder, "rope_attention_factor.npy"), np.array([gain], np.float32))


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
