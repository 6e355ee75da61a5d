# mhascope exercise: mha_single_head
"""Multi-head self-attention built from a single-head SelfAttention: a reference solution.

Symbols: B batch items, T tokens, d_model = embedding_dim features, h heads, d_k = d_model / h.
nn.Linear(x) computes x W^T. The mask is bool and broadcasts to (B, h, T, T); True = blocked.
"""
import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    """Scaled dot-product attention with no weights of its own.

    q, k, v: (..., T, d_k) — one head, or all heads at once with the head axis among the leading ones.
    """

    def forward(self, q, k, v, mask=None):
        d_k = q.shape[-1]
        scores = q @ k.transpose(-2, -1)                   # (..., T, T)
        scaled_scores = scores / math.sqrt(d_k)            # (..., T, T): the head's own d_k, not d_model
        if mask is not None:
            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (..., T, T)
        else:
            masked_scores = scaled_scores
        weights = torch.softmax(masked_scores, dim=-1)     # (..., T, T): over the keys
        head_outputs = weights @ v                         # (..., T, d_k)
        return head_outputs


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embedding_dim, num_heads):
        super().__init__()
        if embedding_dim % num_heads != 0:
            raise ValueError(f"embedding_dim ({embedding_dim}) must be divisible by num_heads ({num_heads})")
        self.embedding_dim = embedding_dim
        self.num_heads = num_heads
        self.d_k = embedding_dim // num_heads
        self.W_q = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.W_k = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.W_v = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.W_o = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.attention = SelfAttention()

    def _split_heads(self, x):
        B, T, _ = x.shape                                  # x: (B, T, d_model)
        x = x.view(B, T, self.num_heads, self.d_k)         # (B, T, h, d_k)
        return x.transpose(1, 2)                           # (B, h, T, d_k)

    def _merge_heads(self, x):
        B, _, T, _ = x.shape                               # x: (B, h, T, d_k)
        x = x.transpose(1, 2)                              # (B, T, h, d_k): no longer contiguous
        return x.reshape(B, T, self.embedding_dim)         # (B, T, d_model): reshape copies where view cannot

    def forward(self, x, mask=None):
        q = self.W_q(x)                                    # (B, T, d_model)
        k = self.W_k(x)                                    # (B, T, d_model)
        v = self.W_v(x)                                    # (B, T, d_model)
        q_heads = self._split_heads(q)                     # (B, h, T, d_k)
        k_heads = self._split_heads(k)                     # (B, h, T, d_k)
        v_heads = self._split_heads(v)                     # (B, h, T, d_k)
        head_outputs = self.attention(q_heads, k_heads, v_heads, mask)  # (B, h, T, d_k): all heads in one call
        concat = self._merge_heads(head_outputs)           # (B, T, d_model)
        output = self.W_o(concat)                          # (B, T, d_model)
        return output
