#!/usr/bin/python3
"""Generate the training fixtures in tests/fixtures/train/ (committed) with Debian's torch 1.13:
    /usr/bin/python3 scripts/gen_train_fixtures.py

For every case (1 and 2 layers, with and without MLP, causal attention; and the attention variants:
RoPE, ALiBi, grouped K/V heads, whose checkpoints use the q_proj/k_proj/v_proj/o_proj names):
  <case>.safetensors      a checkpoint (PyTorch state_dict names + mhascope metadata) — PyTorch's
                          default init, then LayerNorm affine and attention biases perturbed so
                          their gradients are not trivial; float32
  <case>_ref.safetensors  tokens (B, T) and targets (B, T) (-1 = not predictable) as floats;
                          logits of scripts/mhascope_model.py loaded from <case>.safetensors with
                          load_state_dict(strict=True); loss (mean cross-entropy over the
                          predictable positions, ignore_index=-1); grad.<name> from autograd;
                          all computed in float64 from the float32 parameters.
                          adamw1.<name> / adamw2.<name>: the parameters after one / two
                          torch.optim.AdamW steps (lr 1e-2, weight decay 0.1, float32) with the
                          gradients grad.<name> (rounded to float32), then -0.5 * grad + 1e-3.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mhascope_model  # noqa: E402

OUT = os.path.join(HERE, "..", "tests", "fixtures", "train")
VOCAB, SEQ, D_MODEL, HEADS, BATCH = 11, 8, 8, 2, 3
LR, WD = 1e-2, 0.1


def save_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name].detach().numpy().astype("<f4"))
        data = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_case(name, layers, mlp, seed, heads=HEADS, kv_heads=None, positions="learned", rope_base=10000.0):
    torch.manual_seed(seed)
    model = mhascope_model.MhascopeGPT(VOCAB, SEQ, D_MODEL, heads, layers, mlp, kv_heads, positions, rope_base)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() == 1:  # LayerNorm affine, biases: away from 1 / 0
                p.add_(0.3 * torch.randn_like(p))
    meta = {"format": "mhascope-gpt", "version": "1", "vocab": str(VOCAB), "seq": str(SEQ),
            "d_model": str(D_MODEL), "heads": str(heads), "layers": str(layers), "mlp": "1" if mlp else "0",
            "task": "induction", "step": "0", "seed": str(seed), "period_min": "2", "period_max": "4"}
    if positions != "learned" or (kv_heads or heads) != heads:
        meta.update({"positions": positions, "kv_heads": str(kv_heads or heads)})
        if positions == "rope":
            meta["rope_base"] = "%.9g" % rope_base
    ckpt = os.path.join(OUT, name + ".safetensors")
    save_safetensors(ckpt, dict(model.state_dict()), meta)

    # The reference model: loaded back from the file, as a user would, in float64.
    ref, _ = mhascope_model.load(ckpt, torch.float64)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
    targets = torch.randint(0, VOCAB, (BATCH, SEQ))
    targets[:, :2] = -1  # the first positions are not predictable
    targets[1, 5] = -1
    logits = ref(tokens)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-1)
    loss.backward()
    out = {"tokens": tokens.double(), "targets": targets.double(), "logits": logits.detach(),
           "loss": loss.detach().reshape(1)}
    grads = {}
    for pname, p in ref.named_parameters():
        out["grad." + pname] = p.grad.detach()
        grads[pname] = p.grad.detach().float()

    # AdamW in float32 from the checkpoint's float32 parameters.
    params32, _ = mhascope_model.read_safetensors(ckpt)
    params32 = {k: v.float().clone().requires_grad_(True) for k, v in params32.items()}
    names = [n for n, _ in ref.named_parameters()]
    opt = torch.optim.AdamW([params32[n] for n in names], lr=LR, weight_decay=WD)
    for step, scale in ((1, None), (2, -0.5)):
        for n in names:
            params32[n].grad = grads[n].clone() if scale is None else grads[n] * scale + 1e-3
        opt.step()
        for n in names:
            out["adamw%d.%s" % (step, n)] = params32[n].detach().clone()
    save_safetensors(os.path.join(OUT, name + "_ref.safetensors"), out, {"format": "mhascope-train-ref"})
    print(name, "loss %.6f" % loss.item(), "params", sum(p.numel() for p in ref.parameters()))


CASES = {"l1": (1, False, 1), "l2": (2, False, 2), "l1_mlp": (1, True, 3), "l2_mlp": (2, True, 4),
         # name: layers, mlp, seed, heads, N, positions, rope base
         "rope": (2, False, 5, 2, 2, "rope", 100.0), "alibi_mqa": (1, True, 6, 4, 1, "alibi"),
         "rope_gqa_mlp": (2, True, 7, 4, 2, "rope", 10000.0)}


def main(names):
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    for name in names or CASES:  # one or more case names: only those
        make_case(name, *CASES[name])


if __name__ == "__main__":
    main(sys.argv[1:])
