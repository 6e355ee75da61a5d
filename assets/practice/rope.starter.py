# mhascope exercise: rope
"""Rotary position embedding on q and k (causal self-attention with RoPE).

Symbols: B batch items, T tokens, d_model features, h = num_heads, d_k = d_model / h (even).
nn.Linear(x) computes x W^T. Pair feature i with feature i + d_k/2 of each head; at position t
(0 .. T-1) turn pair i by the angle t * inv_freq_i, inv_freq_i = 10000^(-2i/d_k), on q and k after
the split into heads and before the scores. Save this file and mhascope checks it.
"""
import math

import torch
import torch.nn as nn


class RotaryAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        # Raise ValueError when d_model is not divisible by num_heads.
        # Keep these four names: mhascope loads its weights into them.
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        # Store what forward needs (h, d_k, ...).

    def forward(self, x):
        """x (B, T, d_model) -> (B, T, d_model), causal, RoPE on q and k."""
        raise NotImplementedError
