# mhascope exercise: causal
"""Causal self-attention, as in a decoder.

Symbols: B batch items, T tokens, d_model features, h = num_heads, d_k = d_model / h.
nn.Linear(x) computes x W^T. Token t may attend to tokens 0 .. t only: build that mask yourself.
Save this file and mhascope checks it.
"""
import math

import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
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
        """x (B, T, d_model) -> (B, T, d_model)"""
        raise NotImplementedError
