# mhascope exercise: rope
"""Rotary position embedding on q and k: a reference solution (causal self-attention with RoPE).

Symbols: B batch items, T tokens, d_model features, h heads, d_k = d_model / h (even).
nn.Linear(x) computes x W^T. Feature i of a head is paired with feature i + d_k/2 (the "rotate half"
pairing); pair i turns by the angle t * inv_freq_i at position t, inv_freq_i = 10000^(-2i/d_k).
"""
import math

import torch
import torch.nn as nn


def rope_angles(T, d_k, base=10000.0):
    i = torch.arange(d_k // 2, dtype=torch.float32)       # (d_k/2,) pair index
    inv_freq = base ** (-2.0 * i / d_k)                    # (d_k/2,): fast pairs first, slow ones last
    positions = torch.arange(T, dtype=torch.float32)       # (T,) positions 0 .. T-1
    return positions[:, None] * inv_freq[None, :]          # (T, d_k/2) angle of each pair at each position


def rotate(x, angles):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]                    # (B, h, T, d_k/2) each: the two members of each pair
    cos, sin = angles.cos(), angles.sin()                  # (T, d_k/2), broadcast over B and h
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)  # (B, h, T, d_k): each pair turned


class RotaryAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        if (d_model // num_heads) % 2 != 0:
            raise ValueError(f"RoPE pairs features: d_k ({d_model // num_heads}) must be even")
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
        angles = rope_angles(T, self.d_k)                  # (T, d_k/2)
        # Turning both q and k makes q_t . k_j depend on t - j only: the scores see relative positions.
        q_rotated = rotate(q_heads, angles)                # (B, h, T, d_k)
        k_rotated = rotate(k_heads, angles)                # (B, h, T, d_k); v is not rotated
        scores = q_rotated @ k_rotated.transpose(-2, -1)   # (B, h, T, T)
        scaled_scores = scores / math.sqrt(self.d_k)       # (B, h, T, T)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # (T, T), True = blocked
        masked_scores = scaled_scores.masked_fill(mask, float("-inf"))    # (B, h, T, T)
        weights = torch.softmax(masked_scores, dim=-1)     # (B, h, T, T)
        head_outputs = weights @ v_heads                   # (B, h, T, d_k)
        concat = head_outputs.transpose(1, 2).reshape(B, T, self.d_model)  # (B, T, d_model)
        output = self.W_o(concat)                          # (B, T, d_model)
        return output
