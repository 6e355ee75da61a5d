# mhascope exercise: mha
"""Multi-head attention from scratch: a reference solution, one step per line.

Symbols: B batch items, T_q query tokens, T_k key tokens, d_model features, h heads,
d_k = d_model / h features per head. nn.Linear(x) computes x W^T (it stores W transposed).
The mask is bool and broadcasts to (B, h, T_q, T_k); True = blocked.
"""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        # Each head takes an equal slice of the features: refuse sizes that leave a remainder.
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def split_heads(self, x):
        B, T, _ = x.shape                                  # x: (B, T, d_model)
        x = x.view(B, T, self.num_heads, self.d_k)         # (B, T, h, d_k): head i owns features i*d_k .. (i+1)*d_k - 1
        return x.transpose(1, 2)                           # (B, h, T, d_k): each head a (T, d_k) matrix

    def forward(self, query, key, value, mask=None):
        B, T_q, _ = query.shape
        q = self.W_q(query)                                # (B, T_q, d_model)
        k = self.W_k(key)                                  # (B, T_k, d_model)
        v = self.W_v(value)                                # (B, T_k, d_model)
        q_heads = self.split_heads(q)                      # (B, h, T_q, d_k)
        k_heads = self.split_heads(k)                      # (B, h, T_k, d_k)
        v_heads = self.split_heads(v)                      # (B, h, T_k, d_k)
        scores = q_heads @ k_heads.transpose(-2, -1)       # (B, h, T_q, T_k): every query against every key
        # A dot product of d_k terms grows like sqrt(d_k): dividing keeps the softmax out of saturation.
        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T_q, T_k)
        if mask is not None:
            # -inf, not a large negative number: a blocked key then gets weight exactly 0.
            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (B, h, T_q, T_k)
        else:
            masked_scores = scaled_scores
        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T_q, T_k): each query's row sums to 1
        head_outputs = weights @ v_heads                   # (B, h, T_q, d_k)
        concat = head_outputs.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, d_model): heads side by side
        output = self.W_o(concat)                          # (B, T_q, d_model)
        return output
