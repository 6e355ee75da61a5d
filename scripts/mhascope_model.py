#!/usr/bin/python3
"""The model `mhascope train` trains, as a short PyTorch module (torch 1.13, Debian's python3-torch).

    import mhascope_model
    model, meta = mhascope_model.load("m.safetensors")   # load_state_dict(strict=True)
    logits = model(tokens)                               # tokens: (B, T) int64 -> (B, T, V)

Pre-LayerNorm GPT-style: x = emb(tokens) + pos(t); per block x = x + MHA(LN1(x)) with a causal
mask (and, with mlp=1, x = x + mlp(LN2(x)), mlp = Linear(d, 4d), GELU (exact erf), Linear(4d, d));
logits = out(LNf(x)). The state_dict names are exactly the checkpoint's tensor names.
"""
import json
import struct

import numpy as np
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d_model, heads, mlp):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.has_mlp = mlp
        if mlp:
            self.ln2 = nn.LayerNorm(d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask):
        a = self.ln1(x)
        x = x + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        if self.has_mlp:
            x = x + self.mlp(self.ln2(x))
        return x


class MhascopeGPT(nn.Module):
    def __init__(self, vocab, seq, d_model, heads, layers, mlp=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        self.blocks = nn.ModuleList([Block(d_model, heads, mlp) for _ in range(layers)])
        self.lnf = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.emb(tokens) + self.pos(torch.arange(T))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = blocked
        for block in self.blocks:
            x = block(x, mask)
        return self.out(self.lnf(x))


def read_safetensors(path):
    """(tensors as float64 torch tensors, metadata dict) of an F32/F64 .safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        dtype = {"F32": "<f4", "F64": "<f8"}[info["dtype"]]
        a, b = info["data_offsets"]
        arr = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dtype).reshape(info["shape"])
        tensors[name] = torch.from_numpy(arr.astype(np.float64))
    return tensors, meta


def load(path, dtype=torch.float64):
    tensors, meta = read_safetensors(path)
    model = MhascopeGPT(int(meta["vocab"]), int(meta["seq"]), int(meta["d_model"]), int(meta["heads"]),
                        int(meta["layers"]), meta["mlp"] == "1").to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    return model, meta
