#!/usr/bin/python3
"""Generate the circuit references in tests/fixtures/circuits/ (committed) with Debian's torch 1.13:
    /usr/bin/python3 scripts/gen_circuit_fixtures.py

For each checkpoint — tests/fixtures/train/l1.safetensors and l2.safetensors (PyTorch's init,
perturbed; V 11, d_model 8, h 2, T 8) and tests/fixtures/circuits/induction_small.safetensors
(`mhascope train --layers 2 --heads 2 --d-model 16 --vocab 16 --seq 16 --period-min 3
--period-max 8 --steps 600 --seed 3`, committed) — it writes <case>_circuits.safetensors holding,
computed in float64 from the float32 parameters, straight from the definitions (row vectors,
PyTorch storage y = x W^T, LayerNorm and biases left out):
  qk.L.H, ov.L.H              W_q^T W_k, W_v^T W_o^T of head H of layer L   (d_model, d_model)
  qk_tokens.L.H, ov_tokens.L.H E QK E^T, E OV U                               (V, V)
  qk_positions.L.H             P QK P^T, P the learned position table pos.weight  (T, T)
  copying                      (L, h) sum(eig) / sum|eig| of E OV U, from torch.linalg.eigvals on
                               the whole V x V matrix (mhascope solves an equivalent d_k x d_k one)
  composition                  (pairs, 3) Q, K, V for every earlier/later head pair, in the order
                               from-layer, from-head, to-layer, to-head
  baseline                     (1) mean Q/K/V score of 4000 random pairs of Gaussian heads of the
                               same shapes (torch's generator, not mhascope's: compare loosely)
  tokens                       (1, T) a fixed sequence
  rollout.L                    (T, T) attention rollout up to layer L of nn.MultiheadAttention's
                               per-head weights on `tokens` (need_weights, average_attn_weights=False)
  path.A.B                     (T, T) head B of layer 1 through head A of layer 0 (2+ layers)
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mhascope_model  # noqa: E402
from gen_train_fixtures import save_safetensors  # noqa: E402

ROOT = os.path.join(HERE, "..", "tests", "fixtures")
OUT = os.path.join(ROOT, "circuits")
CASES = (("l1", os.path.join(ROOT, "train", "l1.safetensors")),
         ("l2", os.path.join(ROOT, "train", "l2.safetensors")),
         ("induction_small", os.path.join(OUT, "induction_small.safetensors")))
BASELINE_SAMPLES = 4000


def head_blocks(sd, layer, head, d, h):
    dk = d // h
    w = sd[f"blocks.{layer}.attn.in_proj_weight"]
    wq, wk, wv = (w[b * d + head * dk: b * d + (head + 1) * dk] for b in range(3))  # (d_k, d)
    wo = sd[f"blocks.{layer}.attn.out_proj.weight"][:, head * dk:(head + 1) * dk]  # (d, d_k)
    return wq, wk, wv, wo


def scores(ov_a, qk_b, ov_b):
    n = torch.linalg.matrix_norm
    return (n(ov_a @ qk_b) / (n(ov_a) * n(qk_b)),
            n(qk_b @ ov_a.T) / (n(ov_a) * n(qk_b)),
            n(ov_a @ ov_b) / (n(ov_a) * n(ov_b)))


def baseline(d, dk):
    g = torch.Generator().manual_seed(1)
    total = 0.0
    for _ in range(BASELINE_SAMPLES):
        r = [torch.randn(s, generator=g, dtype=torch.float64) for s in ((dk, d), (d, dk), (dk, d), (dk, d), (dk, d), (d, dk))]
        ov_a, qk_b, ov_b = r[0].T @ r[1].T, r[2].T @ r[3], r[4].T @ r[5].T
        total += sum(float(s) for s in scores(ov_a, qk_b, ov_b))
    return total / (3 * BASELINE_SAMPLES)


def attention_weights(model, tokens):
    """Per layer (h, T, T): each block's nn.MultiheadAttention weights on its LN1 input."""
    T = tokens.shape[1]
    x = model.emb(tokens) + model.pos(torch.arange(T))
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    out = []
    for block in model.blocks:
        a = block.ln1(x)
        y, w = block.attn(a, a, a, attn_mask=mask, need_weights=True, average_attn_weights=False)
        out.append(w[0])
        x = x + y
        if block.has_mlp:
            x = x + block.mlp(block.ln2(x))
    return out


def residual(a):
    m = 0.5 * (a + torch.eye(a.shape[-1], dtype=a.dtype))
    return m / m.sum(-1, keepdim=True)


def make_case(name, path):
    model, meta = mhascope_model.load(path, torch.float64)
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    V, d, h, L = (int(meta[k]) for k in ("vocab", "d_model", "heads", "layers"))
    E, U = sd["emb.weight"], sd["out.weight"].T  # (V, d), (d, V)
    P = sd["pos.weight"]  # (T, d): these checkpoints learn their positions
    out, qk, ov = {}, {}, {}
    copying = torch.zeros(L, h, dtype=torch.float64)
    for layer in range(L):
        for head in range(h):
            wq, wk, wv, wo = head_blocks(sd, layer, head, d, h)
            qk[layer, head], ov[layer, head] = wq.T @ wk, wv.T @ wo.T
            out[f"qk.{layer}.{head}"], out[f"ov.{layer}.{head}"] = qk[layer, head], ov[layer, head]
            out[f"qk_tokens.{layer}.{head}"] = E @ qk[layer, head] @ E.T
            out[f"ov_tokens.{layer}.{head}"] = E @ ov[layer, head] @ U
            out[f"qk_positions.{layer}.{head}"] = P @ qk[layer, head] @ P.T
            eig = torch.linalg.eigvals(out[f"ov_tokens.{layer}.{head}"])
            copying[layer, head] = eig.real.sum() / eig.abs().sum()
    out["copying"] = copying
    rows = []
    for la in range(L):
        for ha in range(h):
            for lb in range(la + 1, L):
                for hb in range(h):
                    rows.append(torch.stack(scores(ov[la, ha], qk[lb, hb], ov[lb, hb])))
    if rows:
        out["composition"] = torch.stack(rows)
    out["baseline"] = torch.tensor([baseline(d, d // h)], dtype=torch.float64)

    T = int(meta["seq"])
    g = torch.Generator().manual_seed(7)
    tokens = torch.randint(0, V, (1, T), generator=g)
    out["tokens"] = tokens.double()
    with torch.no_grad():
        weights = attention_weights(model, tokens)
    rolled = torch.eye(T, dtype=torch.float64)
    for layer, w in enumerate(weights):
        rolled = residual(w.mean(0)) @ rolled
        out[f"rollout.{layer}"] = rolled
    if L >= 2:
        for ha in range(h):
            for hb in range(h):
                out[f"path.{ha}.{hb}"] = residual(weights[1][hb]) @ residual(weights[0][ha])
    save_safetensors(os.path.join(OUT, name + "_circuits.safetensors"), out, {"format": "mhascope-circuits-ref"})
    print(name, "copying", [round(float(c), 4) for c in copying.flatten()], "baseline %.4f" % float(out["baseline"]))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    for name, path in CASES:
        make_case(name, path)


if __name__ == "__main__":
    main()
