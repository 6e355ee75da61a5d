# mhascope exercise: mha_numpy
"""Multi-head attention in NumPy: a reference solution, the heads vectorised.

Symbols: B batch items, T tokens, d_model features, h = num_heads, d_k = d_model / h.
Here the weights are plain matrices used as y = X @ W, each (d_model, d_model).
The mask is bool and broadcasts to (B, h, T, T); True = blocked.
"""
import numpy as np


def softmax(x, axis=-1):
    # Subtracting the row's max changes nothing mathematically and keeps exp from overflowing.
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    B, T, d_model = X.shape
    if d_model % num_heads != 0:
        raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
    d_k = d_model // num_heads
    q = X @ W_q                                            # (B, T, d_model)
    k = X @ W_k                                            # (B, T, d_model)
    v = X @ W_v                                            # (B, T, d_model)
    q_heads = q.reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3)  # (B, h, T, d_k)
    k_heads = k.reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3)  # (B, h, T, d_k)
    v_heads = v.reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3)  # (B, h, T, d_k)
    scores = q_heads @ k_heads.transpose(0, 1, 3, 2)       # (B, h, T, T)
    scaled_scores = scores / np.sqrt(d_k)                  # (B, h, T, T)
    if mask is not None:
        masked_scores = np.where(mask, -np.inf, scaled_scores)  # (B, h, T, T): blocked keys get weight 0
    else:
        masked_scores = scaled_scores
    weights = softmax(masked_scores, axis=-1)              # (B, h, T, T): each row sums to 1
    head_outputs = weights @ v_heads                       # (B, h, T, d_k)
    concat = head_outputs.transpose(0, 2, 1, 3).reshape(B, T, d_model)  # (B, T, d_model)
    output = concat @ W_o                                  # (B, T, d_model)
    return output
