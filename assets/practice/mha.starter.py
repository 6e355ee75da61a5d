# mhascope exercise: mha
"""Multi-head attention from scratch.

Symbols: B batch items, T_q query tokens, T_k key tokens, d_model features, h = num_heads,
d_k = d_model / h. nn.Linear(x) computes x W^T. The mask is bool, broadcastable to
(B, h, T_q, T_k), True = blocked. Save this file and mhascope checks it.
"""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        # Raise ValueError when d_model is not divisible by num_heads.
        # Keep these four names: mhascope loads its weights into them.
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        # Store what forward needs (h, d_k, ...).

    def forward(self, query, key, value, mask=None):
        """query (B, T_q, d_model), key and value (B, T_k, d_model),
        mask bool broadcastable to (B, h, T_q, T_k) or None -> (B, T_q, d_model)."""
        raise NotImplementedError
