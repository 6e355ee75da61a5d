# mhascope exercise: mha_numpy
"""Multi-head attention in NumPy.

Symbols: B batch items, T tokens, d_model features, h = num_heads, d_k = d_model / h.
The weights are matrices used as y = X @ W, each (d_model, d_model).
The mask is bool, broadcastable to (B, h, T, T), True = blocked. Save this file and mhascope checks it.
"""
import numpy as np


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """X (B, T, d_model); W_q, W_k, W_v, W_o (d_model, d_model); num_heads h;
    mask bool broadcastable to (B, h, T, T) or None -> (B, T, d_model).
    Raise ValueError when d_model is not divisible by num_heads."""
    raise NotImplementedError
