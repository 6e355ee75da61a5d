#!/usr/bin/python3
"""Generate the PyTorch reference fixtures in tests/fixtures/torch/ (committed).

Run with Debian's interpreter, which has python3-torch 1.13 and python3-numpy:
    /usr/bin/python3 scripts/gen_torch_fixtures.py

For every case it writes, in tests/fixtures/torch/<case>/:
  query.npy key.npy value.npy       the inputs (B, T, d_model) float32
  key_padding_mask.npy attn_mask.npy when the case uses them (uint8; 1 = ignore / blocked)
  weights.safetensors               the nn.MultiheadAttention state_dict (PyTorch names)
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


if __name__ == "__main__":
    sys.exit(main())
