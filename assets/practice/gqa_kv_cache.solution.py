# mhascope exercise: gqa_kv_cache
"""Grouped-query attention and one KV-cache decoding step: a reference solution.

Symbols: B batch items, T tokens, d_model features, h query heads, N = num_kv_heads K/V heads,
d_k = d_model / h, g = h / N query heads per K/V head. Query head i reads K/V head i // g.
nn.Linear(x) computes x W^T. The attention is causal: token t sees tokens 0 .. t.
"""
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        if num_heads % num_kv_heads != 0:
            raise ValueError(f"num_heads ({num_heads}) must be divisible by num_kv_heads ({num_kv_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.d_k = d_model // num_heads
        self.group = num_heads // num_kv_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        # Only N heads of keys and values: the K/V projections (and the cache) are h / N times smaller.
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=False)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def split_heads(self, x, heads):
        B, T, _ = x.shape                                  # x: (B, T, heads * d_k)
        return x.view(B, T, heads, self.d_k).transpose(1, 2)  # (B, heads, T, d_k)

    def attend(self, q_heads, k_heads, v_heads, mask):
        # Copy each K/V head to the g query heads of its group: heads 0 .. g-1 read K/V head 0, and so on.
        k_heads = k_heads.repeat_interleave(self.group, dim=1)  # (B, h, T_k, d_k)
        v_heads = v_heads.repeat_interleave(self.group, dim=1)  # (B, h, T_k, d_k)
        scores = q_heads @ k_heads.transpose(-2, -1)       # (B, h, T_q, T_k)
        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T_q, T_k)
        if mask is not None:
            masked_scores = scaled_scores.masked_fill(mask, float("-inf"))  # (B, h, T_q, T_k)
        else:
            masked_scores = scaled_scores
        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T_q, T_k)
        head_outputs = weights @ v_heads                   # (B, h, T_q, d_k)
        B, _, T_q, _ = head_outputs.shape
        concat = head_outputs.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, d_model)
        return self.W_o(concat)                            # (B, T_q, d_model)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_q(x)                                    # (B, T, d_model)
        k = self.W_k(x)                                    # (B, T, N * d_k)
        v = self.W_v(x)                                    # (B, T, N * d_k)
        q_heads = self.split_heads(q, self.num_heads)      # (B, h, T, d_k)
        k_heads = self.split_heads(k, self.num_kv_heads)   # (B, N, T, d_k)
        v_heads = self.split_heads(v, self.num_kv_heads)   # (B, N, T, d_k)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # (T, T), True = a later key
        return self.attend(q_heads, k_heads, v_heads, mask)          # (B, T, d_model)

    def step(self, x_t, cache=None):
        """One decoding step: x_t (B, 1, d_model) is the next token; cache holds the earlier tokens'
        keys and values, (k, v) each (B, N, t, d_k), or None at the first token."""
        q = self.W_q(x_t)                                  # (B, 1, d_model)
        k = self.W_k(x_t)                                  # (B, 1, N * d_k)
        v = self.W_v(x_t)                                  # (B, 1, N * d_k)
        q_heads = self.split_heads(q, self.num_heads)      # (B, h, 1, d_k)
        k_new = self.split_heads(k, self.num_kv_heads)     # (B, N, 1, d_k): this token's keys
        v_new = self.split_heads(v, self.num_kv_heads)     # (B, N, 1, d_k)
        if cache is not None:
            k_past, v_past = cache
            k_new = torch.cat([k_past, k_new], dim=2)      # (B, N, t + 1, d_k)
            v_new = torch.cat([v_past, v_new], dim=2)      # (B, N, t + 1, d_k)
        # The newest token may see every cached one: no mask is needed for a single query row.
        out_t = self.attend(q_heads, k_new, v_new, None)   # (B, 1, d_model)
        return out_t, (k_new, v_new)
