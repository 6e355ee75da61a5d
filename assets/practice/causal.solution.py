# mhascope exercise: causal
"""Causal self-attention, as in a decoder: a reference solution.

Symbols: B batch items, T tokens, d_model features, h heads, d_k = d_model / h.
nn.Linear(x) computes x W^T. Token t may look at tokens 0 .. t and never at a later one.
"""
import math

import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
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
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)  # (B, h, T, d_k)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_q(x)                                    # (B, T, d_model)
        k = self.W_k(x)                                    # (B, T, d_model)
        v = self.W_v(x)                                    # (B, T, d_model)
        q_heads = self.split_heads(q)                      # (B, h, T, d_k)
        k_heads = self.split_heads(k)                      # (B, h, T, d_k)
        v_heads = self.split_heads(v)                      # (B, h, T, d_k)
        scores = q_heads @ k_heads.transpose(-2, -1)       # (B, h, T, T)
        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T, T)
        # Above the diagonal = a key later than its query: blocked. The diagonal (a token itself) stays visible.
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # (T, T), True = blocked
        masked_scores = scaled_scores.masked_fill(mask, float("-inf"))    # (B, h, T, T)
        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T, T): row t spreads over keys 0 .. t
        head_outputs = weights @ v_heads                   # (B, h, T, d_k)
        concat = head_outputs.transpose(1, 2).reshape(B, T, self.d_model)  # (B, T, d_model)
        output = self.W_o(concat)                          # (B, T, d_model)
        return output
