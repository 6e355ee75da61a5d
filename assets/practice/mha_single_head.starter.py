# mhascope exercise: mha_single_head
"""Multi-head self-attention built from a single-head SelfAttention.

Symbols: B batch items, T tokens, d_model = embedding_dim, h = num_heads, d_k = d_model / h.
nn.Linear(x) computes x W^T. The mask is bool, broadcastable to (B, h, T, T), True = blocked.
Save this file and mhascope checks it.
"""
import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    """Scaled dot-product attention with no weights of its own.

    q, k, v: (..., T, d_k) for one head, or all heads at once with the head axis among the leading ones.
    """

    def forward(self, q, k, v, mask=None):
        """-> (..., T, d_k)"""
        raise NotImplementedError


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embedding_dim, num_heads):
        super().__init__()
        # Raise ValueError when embedding_dim is not divisible by num_heads.
        # Keep these four names: mhascope loads its weights into them.
        self.W_q = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.W_k = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.W_v = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.W_o = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.attention = SelfAttention()
        # Store what forward needs (h, d_k, ...).

    def _split_heads(self, x):
        """(B, T, d_model) -> (B, h, T, d_k)"""
        raise NotImplementedError

    def _merge_heads(self, x):
        """(B, h, T, d_k) -> (B, T, d_model), the inverse of _split_heads"""
        raise NotImplementedError

    def forward(self, x, mask=None):
        """x (B, T, d_model), mask bool broadcastable to (B, h, T, T) or None -> (B, T, d_model)"""
        raise NotImplementedError
