#!/usr/bin/python3
"""Generate the PyTorch reference fixtures in tests/fixtures/torch/ (committed).

Run with Debian's interpreter, which has python3-torch 1.13 and python3-numpy:
    /usr/bin/python3 scripts/gen_torch_fixtures.py

For every case it writes, in tests/fixtures/torch/<case>/:
  query.npy key.npy value.npy       the inputs (B, T, d_model) float32
  key_padding_mask.npy attn_mask.npy when the case uses them (uint8; 1 = ignore / blocked)
  weights.safetensors               the nn.MultiheadAttention state_dict (PyTorch names), or for the
                                    variants the separate q_proj/k_proj/v_proj/o_proj names
  <stage>.npy                       every stage mhascope records, computed with torch ops
  meta.json                         sizes, options, and the rows PyTorch leaves NaN

The end-to-end results (per-head weights and the output) come from torch.nn.MultiheadAttention
itself (batch_first=True, need_weights=True, average_attn_weights=False); the intermediate
stages are recomputed step by step with torch ops and asserted to reproduce the module's
weights and output, so every fixture is tied to PyTorch's own implementation.

A fully masked query row is NaN in PyTorch 1.13; mhascope defines it as weights 0 and head
output 0 (so the output row is b_o). Such rows are recorded in meta.json and written with
mhascope's convention after asserting that PyTorch gives NaN there.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from capture_attention import save_safetensors  # the one writer of the --weights format

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "torch")


def make_case(name, B, Tq, Tk, d, h, cross, bias, causal=False, pad=None, attn=None, scale="sqrt-dk", seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Tq, d, generator=g)
    if cross:
        k = torch.randn(B, Tk, d, generator=g)
        v = torch.randn(B, Tk, d, generator=g)
    else:
        k = q
        v = q
        Tk = Tq
    mha = torch.nn.MultiheadAttention(d, h, bias=bias, batch_first=True)
    with torch.no_grad():  # random, non-symmetric weights and biases (PyTorch starts biases at 0)
        for p in mha.parameters():
            p.copy_(torch.empty_like(p).uniform_(-0.5, 0.5, generator=g))
    mha.eval()

    blocked = torch.zeros(B, Tq, Tk, dtype=torch.bool)
    if causal:
        blocked |= torch.triu(torch.ones(Tq, Tk, dtype=torch.bool), diagonal=1)
    kpm = torch.tensor(pad, dtype=torch.bool) if pad is not None else None
    am = torch.tensor(attn, dtype=torch.bool) if attn is not None else None
    if kpm is not None:
        blocked |= kpm[:, None, :]
    if am is not None:
        blocked |= am[None, :, :]
    full_attn_mask = None
    if causal or am is not None:
        full_attn_mask = torch.zeros(Tq, Tk, dtype=torch.bool)
        if causal:
            full_attn_mask |= torch.triu(torch.ones(Tq, Tk, dtype=torch.bool), diagonal=1)
        if am is not None:
            full_attn_mask |= am

    # --- the stages, step by step -------------------------------------------------------------
    W = mha.in_proj_weight.detach()
    b3 = mha.in_proj_bias.detach() if bias else torch.zeros(3 * d)
    Wq, Wk, Wv = W[:d], W[d:2 * d], W[2 * d:]
    bq, bk, bv = b3[:d], b3[d:2 * d], b3[2 * d:]
    Wo = mha.out_proj.weight.detach()
    bo = mha.out_proj.bias.detach() if bias else torch.zeros(d)
    dk = d // h
    qp, kp, vp = F.linear(q, Wq, bq), F.linear(k, Wk, bk), F.linear(v, Wv, bv)
    split = lambda x, T: x.view(B, T, h, dk).transpose(1, 2).contiguous()
    qh, kh, vh = split(qp, Tq), split(kp, Tk), split(vp, Tk)
    scores = qh @ kh.transpose(-2, -1)
    factor = {"sqrt-dk": 1 / math.sqrt(dk), "sqrt-dmodel": 1 / math.sqrt(d), "none": 1.0}[scale]
    scaled = scores * factor
    masked = scaled.masked_fill(blocked[:, None, :, :], float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    nan_rows = torch.isnan(weights).any(dim=-1)  # (B, h, T_q): every key blocked
    weights = torch.nan_to_num(weights, nan=0.0)
    head_out = weights @ vh
    concat = head_out.transpose(1, 2).reshape(B, Tq, d)
    out = F.linear(concat, Wo, bo)

    # --- the module itself must agree --------------------------------------------------------
    if scale == "sqrt-dk":
        with torch.no_grad():
            mod_out, mod_w = mha(q, k, v, key_padding_mask=kpm, attn_mask=full_attn_mask, need_weights=True,
                                 average_attn_weights=False)
        rows_nan = torch.isnan(mod_w).any(dim=-1)
        assert torch.equal(rows_nan, nan_rows), "NaN rows differ between module and step-by-step"
        ok = ~nan_rows
        assert torch.allclose(mod_w[ok], weights[ok], atol=1e-6), name
        out_ok = ~nan_rows.any(dim=1)  # (B, T_q)
        assert torch.allclose(mod_out[out_ok], out[out_ok], atol=1e-5), name
        if nan_rows.any():
            assert torch.isnan(mod_out[~out_ok]).all(), "PyTorch should give NaN for fully masked rows"

    d_out = os.path.join(OUT, name)
    os.makedirs(d_out, exist_ok=True)
    stages = {"query": q, "key": k, "value": v, "q_proj": qp, "k_proj": kp, "v_proj": vp, "q_heads": qh,
              "k_heads": kh, "v_heads": vh, "scores": scores, "scaled_scores": scaled, "masked_scores": masked,
              "weights": weights, "head_outputs": head_out, "concat": concat, "output": out}
    for sname, t in stages.items():
        np.save(os.path.join(d_out, sname + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))
    if kpm is not None:
        np.save(os.path.join(d_out, "key_padding_mask.npy"), kpm.numpy().astype(np.uint8))
    if am is not None:
        np.save(os.path.join(d_out, "attn_mask.npy"), am.numpy().astype(np.uint8))
    save_safetensors(os.path.join(d_out, "weights.safetensors"), mha.state_dict())
    meta = {"B": B, "T_q": Tq, "T_k": Tk, "d_model": d, "heads": h, "bias": bias, "causal": causal,
            "cross": cross, "scale": scale, "key_padding_mask": kpm is not None, "attn_mask": am is not None,
            "torch_nan_rows": [[b, q_] for b in range(B) for q_ in range(Tq) if bool(nan_rows[b, :, q_].any())],
            "torch_version": torch.__version__}
    with open(os.path.join(d_out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: B={B} T_q={Tq} T_k={Tk} d_model={d} h={h} nan_rows={len(meta['torch_nan_rows'])}")


# --- attention as today's models run it ------------------------------------------------------
# PyTorch 1.13 has none of these as library calls (no enable_gqa, no RoPE or ALiBi helpers, no
# scaled_dot_product_attention), so each is written here from its published formula, in the
# convention named beside it, and tied back to torch.nn.MultiheadAttention wherever the module can
# express the same computation.


def rope_rotate_half(x, base):
    """RoPE as Hugging Face Llama applies it (LlamaRotaryEmbedding + apply_rotary_pos_emb):
    inv_freq = 1 / base**(arange(0, d_k, 2) / d_k) in float32, angles = outer(t, inv_freq) for
    positions t = 0..T-1, cos/sin repeated over both halves, x * cos + rotate_half(x) * sin with
    rotate_half(x) = cat(-x[..., d_k/2:], x[..., :d_k/2]): feature i pairs with i + d_k/2."""
    T, dk = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dk, 2).float() / dk))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)  # (T, d_k/2)
    emb = torch.cat([freqs, freqs], dim=-1)
    x1, x2 = x[..., :dk // 2], x[..., dk // 2:]
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()


def rope_interleaved(x, base):
    """RoPE as the original Llama code (Meta's precompute_freqs_cis + apply_rotary_emb): features
    (2i, 2i + 1) are one complex number, multiplied by e^(i t inv_freq_i)."""
    T, dk = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dk, 2)[: dk // 2].float() / dk))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # (T, d_k/2) complex64
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], dk // 2, 2).contiguous())
    return torch.view_as_real(xc * freqs_cis).flatten(-2)


def alibi_slopes(n):
    """The ALiBi paper's slopes (Press et al., its reference get_slopes): for n a power of two the
    geometric sequence starting at 2^(-8/n) with that ratio, i.e. m_i = 2^(-8i/n), i = 1..n;
    otherwise those of the closest power of two below n, then every other slope of twice that."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def make_variant_case(name, B, T, d, h, N, bias, causal=False, pad=None, positions="none", rope_style="half",
                      rope_base=10000.0, window=0, sinks=0, sink_logits=None, prefix="", seed=0):
    """Self-attention with N K/V heads (query head i reads K/V head i // (h/N), written with
    repeat_interleave as torch 1.13 has no enable_gqa), RoPE or ALiBi, a sliding window with sinks
    and key padding; sink_logits (h,): gpt-oss's learned sink, as modeling_gpt_oss.py's
    eager_attention_forward computes it (one more column of every row's scores after the mask, softmax over
    T + 1 columns, the last dropped; its mass is sink_share (B, h, T, 1)). Weights are saved with the separate projection names Llama uses
    (q_proj/k_proj/v_proj/o_proj, optionally under `prefix`), or in_proj names when prefix is None."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d, generator=g)
    dk = d // h
    u = lambda *shape: torch.empty(*shape).uniform_(-0.5, 0.5, generator=g)
    Wq, Wk, Wv, Wo = u(d, d), u(N * dk, d), u(N * dk, d), u(d, d)  # PyTorch's (out, in)
    z = lambda n: torch.zeros(n)
    bq, bk, bv, bo = (u(d), u(N * dk), u(N * dk), u(d)) if bias else (z(d), z(N * dk), z(N * dk), z(d))

    # blocked (B, T, T): causal, the window (t - W < j <= t; |t - j| < W without causal) except the
    # sinks j < S, and key padding (True = ignore, nn.MultiheadAttention's polarity).
    t_ = torch.arange(T)[:, None]
    j_ = torch.arange(T)[None, :]
    rule = torch.zeros(T, T, dtype=torch.bool)
    if causal:
        rule |= j_ > t_
    window_hides = torch.zeros(T, T, dtype=torch.bool)
    if window:
        far = (j_ <= t_ - window) if causal else ((t_ - j_).abs() >= window)
        window_hides = far & (j_ >= sinks)
        rule |= window_hides
    kpm = torch.tensor(pad, dtype=torch.bool) if pad is not None else None
    blocked = rule[None].expand(B, T, T).clone()
    if kpm is not None:
        blocked |= kpm[:, None, :]

    qp, kp, vp = F.linear(x, Wq, bq), F.linear(x, Wk, bk), F.linear(x, Wv, bv)
    qh = qp.view(B, T, h, dk).transpose(1, 2).contiguous()
    kh = kp.view(B, T, N, dk).transpose(1, 2).contiguous()
    vh = vp.view(B, T, N, dk).transpose(1, 2).contiguous()
    stages = {"query": x, "key": x, "value": x, "q_proj": qp, "k_proj": kp, "v_proj": vp, "q_heads": qh,
              "k_heads": kh, "v_heads": vh}
    qr, kr = qh, kh
    if positions == "rope":
        rot = rope_rotate_half if rope_style == "half" else rope_interleaved
        qr, kr = rot(qh, rope_base), rot(kh, rope_base)
        # The two pairings are one rotation on permuted features: interleave, rotate, de-interleave.
        perm = torch.stack([torch.arange(dk // 2), torch.arange(dk // 2) + dk // 2], dim=-1).flatten()
        other = rope_interleaved if rope_style == "half" else rope_rotate_half
        if rope_style == "half":
            back = other(qh[..., perm], rope_base)[..., torch.argsort(perm)]
        else:
            back = other(qh[..., torch.argsort(perm)], rope_base)[..., perm]
        assert torch.allclose(back, qr, atol=1e-5), name + ": the two RoPE pairings disagree"
        stages["q_rotated"], stages["k_rotated"] = qr, kr
    if N != h:
        groups = torch.zeros(1, h, N)
        groups[0, torch.arange(h), torch.arange(h) // (h // N)] = 1.0
        stages["kv_groups"] = groups
    kx = kr.repeat_interleave(h // N, dim=1)  # (B, h, T, d_k): query head i reads K/V head i // (h/N)
    vx = vh.repeat_interleave(h // N, dim=1)
    scores = qr @ kx.transpose(-2, -1)
    scaled = scores * (1 / math.sqrt(dk))
    stages["scores"], stages["scaled_scores"] = scores, scaled
    biased = scaled
    alibi = None
    if positions == "alibi":
        m = torch.tensor(alibi_slopes(h))[:, None, None]  # (h, 1, 1)
        dist = (t_ - j_).float() if causal else (t_ - j_).abs().float()
        alibi = (-m * dist)[None]  # (1, h, T, T): -m_i (t - j), -m_i |t - j| without causal
        stages["position_bias"] = alibi
        biased = scaled + alibi
    if window:
        stages["window_mask"] = window_hides[None].float()
    masked = biased.masked_fill(blocked[:, None], float("-inf"))
    if sink_logits is None:
        weights = torch.nan_to_num(torch.softmax(masked, dim=-1), nan=0.0)  # a fully masked row: 0
    else:  # a fully masked row gives the sink everything: weights 0, share 1
        column = torch.tensor(sink_logits).reshape(1, h, 1, 1).expand(B, h, T, 1)
        both = torch.softmax(torch.cat((masked, column), dim=-1), dim=-1)
        weights, stages["sink_share"] = both[..., :-1], both[..., -1:]
        assert torch.allclose(weights.sum(-1, keepdim=True) + stages["sink_share"], torch.ones(B, h, T, 1)), name
    head_out = weights @ vx
    concat = head_out.transpose(1, 2).reshape(B, T, d)
    out = F.linear(concat, Wo, bo)
    stages.update({"masked_scores": masked, "weights": weights, "head_outputs": head_out, "concat": concat,
                   "output": out})

    # Without RoPE the module computes the same thing: K/V weights repeated per group (GQA is MHA
    # with each K/V head's rows copied h/N times), ALiBi and the window as a float attn_mask
    # (B*h, T, T) added to the scaled scores.
    if positions != "rope" and sink_logits is None:
        mha = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True)
        rep = lambda w: w.view(N, dk, -1).repeat_interleave(h // N, dim=0).reshape(h * dk, -1)
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.cat([Wq, rep(Wk), rep(Wv)]))
            mha.in_proj_bias.copy_(torch.cat([bq, rep(bk[:, None])[:, 0], rep(bv[:, None])[:, 0]]))
            mha.out_proj.weight.copy_(Wo)
            mha.out_proj.bias.copy_(bo)
        float_mask = torch.zeros(B, h, T, T)
        if alibi is not None:
            float_mask = float_mask + alibi
        float_mask = float_mask.masked_fill(rule[None, None], float("-inf")).reshape(B * h, T, T)
        with torch.no_grad():
            mod_out, mod_w = mha(x, x, x, key_padding_mask=kpm, attn_mask=float_mask, need_weights=True,
                                 average_attn_weights=False)
        ok = ~torch.isnan(mod_w).any(dim=-1)
        assert torch.allclose(mod_w[ok], weights[ok], atol=1e-6), name
        out_ok = ok.all(dim=1)
        assert torch.allclose(mod_out[out_ok], out[out_ok], atol=1e-5), name

    d_out = os.path.join(OUT, name)
    os.makedirs(d_out, exist_ok=True)
    for sname, t in stages.items():
        np.save(os.path.join(d_out, sname + ".npy"), np.ascontiguousarray(t.detach().numpy().astype("<f4")))
    if kpm is not None:
        np.save(os.path.join(d_out, "key_padding_mask.npy"), kpm.numpy().astype(np.uint8))
    if prefix is None:
        assert N == h, "in_proj names hold N = h only"
        sd = {"in_proj_weight": torch.cat([Wq, Wk, Wv]), "out_proj.weight": Wo}
        if bias:
            sd.update({"in_proj_bias": torch.cat([bq, bk, bv]), "out_proj.bias": bo})
    else:
        sd = {}
        for pname, w_, b_ in (("q_proj", Wq, bq), ("k_proj", Wk, bk), ("v_proj", Wv, bv), ("o_proj", Wo, bo)):
            sd[prefix + pname + ".weight"] = w_
            if bias:
                sd[prefix + pname + ".bias"] = b_
    save_safetensors(os.path.join(d_out, "weights.safetensors"), sd)
    nan_rows = [[b, q_] for b in range(B) for q_ in range(T) if bool(blocked[b, q_].all())]
    meta = {"B": B, "T_q": T, "T_k": T, "d_model": d, "heads": h, "bias": bias, "causal": causal, "cross": False,
            "scale": "sqrt-dk", "key_padding_mask": kpm is not None, "attn_mask": False, "torch_nan_rows": nan_rows,
            "kv_heads": N, "positions": positions, "rope_style": rope_style, "rope_base": rope_base,
            "window": window, "sinks": sinks, "torch_version": torch.__version__}
    if sink_logits is not None:
        meta["sink_logits"] = list(sink_logits)
    with open(os.path.join(d_out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: B={B} T={T} d_model={d} h={h} N={N} positions={positions} window={window} sinks={sinks}")


def main():
    torch.manual_seed(0)
    make_case("self_small", 1, 4, 4, 8, 2, cross=False, bias=True, seed=1)
    make_case("batch_causal_padding", 3, 6, 6, 12, 3, cross=False, bias=True, causal=True,
              pad=[[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0]], seed=2)
    make_case("cross_padding", 2, 5, 7, 16, 4, cross=True, bias=True,
              pad=[[0, 0, 0, 0, 0, 1, 1], [0, 0, 1, 0, 0, 0, 0]], seed=3)
    attn = [[0, 1, 0, 0, 1], [0, 0, 0, 1, 0], [1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [1, 1, 1, 1, 0]]
    make_case("nobias_attn_mask", 2, 5, 5, 6, 3, cross=False, bias=False, attn=attn, seed=4)
    make_case("dk1_h_equals_dmodel", 1, 3, 3, 4, 4, cross=False, bias=True, seed=5)
    make_case("longer_causal", 2, 33, 33, 64, 8, cross=False, bias=True, causal=True, seed=6)
    make_case("cross_causal_padding", 2, 6, 4, 8, 2, cross=True, bias=True, causal=True,
              pad=[[0, 0, 0, 1], [0, 1, 0, 0]], seed=7)
    make_case("fully_masked_row", 1, 4, 4, 8, 2, cross=False, bias=True, causal=True, pad=[[1, 0, 0, 0]], seed=8)
    make_case("scale_none", 1, 5, 5, 8, 2, cross=False, bias=True, scale="none", seed=9)
    make_case("scale_sqrt_dmodel", 2, 4, 4, 12, 3, cross=False, bias=False, scale="sqrt-dmodel", seed=10)
    make_variant_case("gqa_rope_window_sinks_padding", 2, 9, 16, 4, 2, bias=True, causal=True,
                      pad=[[0, 0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 1, 1]], positions="rope", window=3,
                      sinks=1, prefix="self_attn.", seed=11)
    make_variant_case("mqa_causal", 1, 6, 12, 3, 1, bias=False, causal=True, seed=12)
    make_variant_case("gqa_rope_interleaved_base500", 1, 7, 16, 4, 2, bias=True, causal=True, positions="rope",
                      rope_style="interleaved", rope_base=500.0, seed=13)
    make_variant_case("alibi_causal_h6_padding", 2, 6, 12, 6, 6, bias=True, causal=True,
                      pad=[[0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0]], positions="alibi", seed=14)
    make_variant_case("alibi_bidirectional_gqa_window", 1, 5, 8, 4, 2, bias=True, causal=False, positions="alibi",
                      window=2, seed=15)
    make_variant_case("rope_in_proj_no_mask", 1, 5, 8, 2, 2, bias=True, positions="rope", prefix=None, seed=16)
    # Key 0 padded in the first item: its row 0 sees nothing but the sink.
    make_variant_case("gqa_learned_sink_window_padding", 2, 7, 16, 4, 2, bias=True, causal=True,
                      pad=[[1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 1]], positions="rope", window=3,
                      sink_logits=[0.5, -1.0, 2.0, 0.0], prefix="self_attn.", seed=17)


if __name__ == "__main__":
    sys.exit(main())
