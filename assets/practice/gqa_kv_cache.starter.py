# mhascope exercise: gqa_kv_cache
"""Grouped-query attention and one KV-cache decoding step.

Symbols: B batch items, T tokens, d_model features, h = num_heads query heads,
N = num_kv_heads K/V heads, d_k = d_model / h. Query head i reads K/V head i // (h / N).
nn.Linear(x) computes x W^T. The attention is causal. Save this file and mhascope checks it.
"""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        # Raise ValueError when d_model % num_heads != 0 or num_heads % num_kv_heads != 0.
        # Keep these four names: mhascope loads its weights into them.
        d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, num_kv_heads * d_k, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * d_k, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        # Store what forward needs (h, d_k, ...).

    def forward(self, x):
        """x (B, T, d_model) -> (B, T, d_model), causal."""
        raise NotImplementedError

    def step(self, x_t, cache=None):
        """x_t (B, 1, d_model), the next token; cache: whatever you return, None at the first token.
        -> (out_t (B, 1, d_model), cache), out_t equal to forward's row for this position."""
        raise NotImplementedError
