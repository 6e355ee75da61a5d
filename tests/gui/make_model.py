#!/usr/bin/env python3
"""Writes a random GPT-2-layout model folder (config.json + model.safetensors, float32) with
numpy, for GUI tests that need a model bigger than the committed fixtures (a load long enough to
cancel). Random weights: no head learns a role. Same layout as scripts/gen_model_fixtures.py.
Usage: make_model.py FOLDER D_MODEL HEADS LAYERS POSITIONS"""
import json
import os
import struct
import sys

import numpy as np

folder, d, h, L, P = sys.argv[1], *map(int, sys.argv[2:6])
V = 100
os.makedirs(folder, exist_ok=True)
g = np.random.default_rng(1)


def rnd(*shape, scale=0.2):
    return (g.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)


W = {"wte.weight": rnd(V, d, scale=0.5), "wpe.weight": rnd(P, d, scale=0.3)}
for l in range(L):
    p = f"h.{l}."
    W[p + "ln_1.weight"] = 1 + rnd(d, scale=0.1)
    W[p + "ln_1.bias"] = rnd(d, scale=0.1)
    W[p + "attn.c_attn.weight"] = rnd(d, 3 * d, scale=0.3 / np.sqrt(d / 32))
    W[p + "attn.c_attn.bias"] = rnd(3 * d, scale=0.1)
    W[p + "attn.c_proj.weight"] = rnd(d, d, scale=0.2 / np.sqrt(d / 32))
    W[p + "attn.c_proj.bias"] = rnd(d, scale=0.1)
    W[p + "ln_2.weight"] = 1 + rnd(d, scale=0.1)
    W[p + "ln_2.bias"] = rnd(d, scale=0.1)
    W[p + "mlp.c_fc.weight"] = rnd(d, 4 * d, scale=0.2 / np.sqrt(d / 32))
    W[p + "mlp.c_fc.bias"] = rnd(4 * d, scale=0.1)
    W[p + "mlp.c_proj.weight"] = rnd(4 * d, d, scale=0.2 / np.sqrt(d / 32))
    W[p + "mlp.c_proj.bias"] = rnd(d, scale=0.1)
W["ln_f.weight"] = 1 + rnd(d, scale=0.1)
W["ln_f.bias"] = rnd(d, scale=0.1)

header, offset = {}, 0
for name, t in W.items():
    header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
    offset += t.nbytes
hj = json.dumps(header).encode()
hj += b" " * (-len(hj) % 8)
with open(os.path.join(folder, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(hj)))
    f.write(hj)
    for t in W.values():
        f.write(t.tobytes())
config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": d, "n_head": h, "n_layer": L,
          "n_positions": P, "n_ctx": P, "vocab_size": V, "layer_norm_epsilon": 1e-5,
          "activation_function": "gelu_new", "bos_token_id": 99, "eos_token_id": 99}
with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
