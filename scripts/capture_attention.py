#!/usr/bin/python3
"""Records one nn.MultiheadAttention layer of your PyTorch model for mhascope (Debian's python3-torch).

    capture_attention.py --model my_model.py --module encoder.layers.0.self_attn --out cap/
    capture_attention.py --model model.pt --input x.pt --module decoder.layers.1.multihead_attn --out cap/
    cap/mhascope_layer.sh info                      # the same layer in mhascope
    cap/mhascope_layer.sh export --stage weights --head all --out weights.png
    cap/mhascope_layer.sh                           # the window, showing that layer

--model FILE.py defines `model` (or `make_model()`) and `inputs` (or `make_inputs()`): a tensor,
a tuple (model(*inputs)) or a dict (model(**inputs)). --model FILE.pt is a whole module saved
with torch.save(model); --input FILE.pt/.npy its input. From Python:
    import capture_attention; capture_attention.capture(model, "layers.0.self_attn", x, out_dir="cap")

The model runs once in eval mode (dropout off) with autograd on, so PyTorch's fused inference
paths, which skip the module, are not taken. The layer's call is intercepted, and cap/ gets:
  weights.safetensors        in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias (mhascope --weights)
  query.npy [key.npy value.npy]  (B, T, d_model) float32, batch-first whatever batch_first was
  attn_mask.npy              (T_q, T_k) bool, True = blocked (from a bool or an additive -inf mask)
  key_padding_mask.npy       (B, T_k) bool, True = ignored
  torch_output.npy           (B, T_q, d_model) what the layer returned in the model's run
  torch_weights.npy          (B, h, T_q, T_k) its per-head attention weights (average_attn_weights=False)
  capture.json               what was captured, and "mhascope_args": the options that open it
  mhascope_layer.sh          runs mhascope with those options: `mhascope_layer.sh CMD [more options]`;
                             with no CMD it opens the window on the same layer
  mhascope_workspace.json    a mhascope workspace of the layer: `mhascope --workspace cap/mhascope_workspace.json`
                             (the window) or `mhascope info --workspace …`; files named with their SHA-256
"""
import argparse
import hashlib
import inspect
import json
import os
import runpy
import struct
import sys

import numpy as np
import torch
from torch import nn

FORMAT_VERSION = 1


class CaptureError(Exception):
    pass


def find_attention(model, name):
    modules = dict(model.named_modules())
    mha_names = [n for n, m in modules.items() if isinstance(m, nn.MultiheadAttention)]
    listing = ", ".join(mha_names) if mha_names else "none"
    if name not in modules:
        raise CaptureError(f"the model has no module named '{name}'; its nn.MultiheadAttention modules: {listing}")
    mha = modules[name]
    if not isinstance(mha, nn.MultiheadAttention):
        raise CaptureError(f"'{name}' is a {type(mha).__name__}, not an nn.MultiheadAttention; "
                           f"the model's nn.MultiheadAttention modules: {listing}")
    unsupported = []
    if not mha._qkv_same_embed_dim:
        unsupported.append(f"kdim/vdim ({mha.kdim}, {mha.vdim}) differ from embed_dim {mha.embed_dim}")
    if mha.bias_k is not None:
        unsupported.append("add_bias_kv=True")
    if mha.add_zero_attn:
        unsupported.append("add_zero_attn=True")
    if unsupported:
        raise CaptureError(f"'{name}' uses {' and '.join(unsupported)}, which mhascope's layer does not have")
    return mha


def batch_first(x, mha):
    """(T, B, E) or unbatched (T, E) → (B, T, E), as mhascope reads it."""
    if x.dim() == 2:
        return x.unsqueeze(0)
    return x if mha.batch_first else x.transpose(0, 1)


def blocked(mask, what):
    """A PyTorch mask → bool, True = blocked. Bool: True blocks. Float: added to the scores, so -inf
    blocks and 0 keeps; other values (e.g. ALiBi biases) change scores, which mhascope cannot."""
    if mask.dtype == torch.bool:
        return mask.clone()
    if not mask.is_floating_point():
        raise CaptureError(f"{what} has dtype {mask.dtype}; PyTorch takes bool or float masks")
    neg_inf = torch.isneginf(mask)
    other = (~neg_inf) & (mask != 0)
    if other.any():
        v = mask[other].flatten()[0].item()
        raise CaptureError(f"{what} adds finite values to the scores (e.g. {v}); mhascope's masks only block "
                           "(-inf) or keep (0) a key")
    return neg_inf


def attn_mask_2d(mask, mha, b, tq, tk):
    m = blocked(mask, "attn_mask")
    if m.dim() == 3:  # (B·h, T_q, T_k): one mask per batch item and head
        if not bool((m == m[0:1]).all()):
            raise CaptureError(f"attn_mask has shape {tuple(m.shape)} with different masks per batch item or head; "
                               "mhascope takes one (T_q, T_k) mask for all")
        m = m[0]
    if tuple(m.shape) != (tq, tk):
        raise CaptureError(f"attn_mask has shape {tuple(m.shape)}, expected (T_q, T_k) = ({tq}, {tk})")
    return m


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name].detach().cpu().numpy().astype("<f4")).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


class _Recorder:
    """Replaces the layer's forward for one run; records the `call`-th call (0-based)."""

    def __init__(self, mha, call):
        self.mha, self.call, self.calls, self.record = mha, call, 0, None
        self.original = mha.forward
        self.signature = inspect.signature(self.original)

    def __call__(self, *args, **kwargs):
        out = self.original(*args, **kwargs)
        if self.calls == self.call:
            a = self.signature.bind(*args, **kwargs)
            a.apply_defaults()
            p = a.arguments
            with torch.no_grad():  # the same call again, for the per-head weights
                _, w = self.original(p["query"], p["key"], p["value"], key_padding_mask=p["key_padding_mask"],
                                     need_weights=True, attn_mask=p["attn_mask"], average_attn_weights=False)
            self.record = {k: (v.detach().clone() if torch.is_tensor(v) else v) for k, v in p.items()}
            self.record["output"] = out[0].detach().clone()
            self.record["weights"] = w.detach().clone()
        self.calls += 1
        return out


def _run(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def capture(model, module, inputs, out_dir, call=0, eval_mode=True):
    """Runs model(inputs), records the `call`-th call of `module` and writes out_dir. Returns capture.json's dict."""
    mha = find_attention(model, module)
    if eval_mode:
        model.eval()
    rec = _Recorder(mha, call)
    mha.forward = rec
    try:
        with torch.enable_grad():
            _run(model, inputs)
    finally:
        del mha.forward  # the class's forward again
    if rec.record is None:
        raise CaptureError(f"'{module}' was called {rec.calls} time(s) during the run, so call {call} (counted from 0) "
                           "was never made" + (" — a fused inference path may have skipped it (parameters with "
                                                "requires_grad=False?)" if rec.calls == 0 else ""))
    return _write(mha, module, rec, out_dir)


def _write(mha, module, rec, out_dir):
    r, h = rec.record, mha.num_heads
    q, k, v = (batch_first(r[n], mha).float() for n in ("query", "key", "value"))
    out = batch_first(r["output"], mha).float()
    w = r["weights"] if r["weights"].dim() == 4 else r["weights"].unsqueeze(0)  # (B, h, T_q, T_k)
    B, Tq, Tk = q.shape[0], q.shape[1], k.shape[1]
    os.makedirs(out_dir, exist_ok=True)
    files = {"query": "query.npy"}
    np.save(os.path.join(out_dir, "query.npy"), q.numpy())
    # key = value = query: mhascope's self-attention (no --key/--value), as in an encoder layer.
    self_attention = torch.equal(r["key"], r["query"]) and torch.equal(r["value"], r["query"])
    args = ["--query", "query.npy"]
    if not self_attention:
        np.save(os.path.join(out_dir, "key.npy"), k.numpy())
        np.save(os.path.join(out_dir, "value.npy"), v.numpy())
        files.update(key="key.npy", value="value.npy")
        args += ["--key", "key.npy", "--value", "value.npy"]
    state = {"in_proj_weight": mha.in_proj_weight, "out_proj.weight": mha.out_proj.weight}
    if mha.in_proj_bias is not None:
        state.update({"in_proj_bias": mha.in_proj_bias, "out_proj.bias": mha.out_proj.bias})
    save_safetensors(os.path.join(out_dir, "weights.safetensors"), state)
    files["weights"] = "weights.safetensors"
    args += ["--weights", "weights.safetensors", "--heads", str(h)]
    if r["attn_mask"] is not None:
        np.save(os.path.join(out_dir, "attn_mask.npy"), attn_mask_2d(r["attn_mask"], mha, B, Tq, Tk).numpy())
        files["attn_mask"] = "attn_mask.npy"
        args += ["--attn-mask", "attn_mask.npy"]
    if r["key_padding_mask"] is not None:
        kpm = blocked(r["key_padding_mask"], "key_padding_mask")
        kpm = kpm.unsqueeze(0) if kpm.dim() == 1 else kpm
        np.save(os.path.join(out_dir, "key_padding_mask.npy"), kpm.numpy())
        files["key_padding_mask"] = "key_padding_mask.npy"
        args += ["--key-padding-mask", "key_padding_mask.npy"]
    np.save(os.path.join(out_dir, "torch_output.npy"), out.numpy())
    np.save(os.path.join(out_dir, "torch_weights.npy"), w.float().numpy())
    info = {"format": "mhascope-capture", "version": FORMAT_VERSION, "module": module,
            "torch": torch.__version__, "batch_first": mha.batch_first, "self_attention": bool(self_attention),
            "B": B, "T_q": Tq, "T_k": Tk, "d_model": mha.embed_dim, "heads": h, "bias": mha.in_proj_bias is not None,
            "files": files, "reference": {"output": "torch_output.npy", "weights": "torch_weights.npy"},
            "mhascope_args": args}
    if torch.isnan(out).any():
        info["note"] = ("PyTorch returned NaN for query rows whose every key is blocked; mhascope gives those rows "
                        "weights 0 (output = b_o)")
    with open(os.path.join(out_dir, "capture.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    _write_launcher(out_dir, module, args)
    _write_workspace(out_dir, module, files, h, mha.embed_dim)
    return info


WORKSPACE_FLAGS = {"query": "query", "key": "key", "value": "value", "weights": "weights",
                   "attn_mask": "attn-mask", "key_padding_mask": "key-padding-mask"}


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(1 << 20), b""):
            h.update(piece)
    return h.hexdigest()


def _write_workspace(out_dir, module, files, heads, d_model):
    """mhascope_workspace.json (core/io/workspace.hpp's format, version 1): the layer's files with
    their SHA-256 and the sizes; no view, so mhascope opens it at its defaults."""
    recorded = {}
    for kind, name in files.items():
        path = os.path.abspath(os.path.join(out_dir, name))
        recorded[WORKSPACE_FLAGS[kind]] = {"path": path, "absolute": os.path.realpath(path), "relative": name,
                                           "size": os.path.getsize(path), "sha256": _sha256(path)}
    workspace = {"mhascope_workspace": 1, "preset": "capture",
                 "config": {"version": 1, "name": "capture", "description": f"captured from {module}",
                            "text": "(from query.npy)", "d_model": d_model, "heads": heads},
                 "files": recorded}
    tmp = os.path.join(out_dir, ".mhascope_workspace.json.tmp")
    with open(tmp, "w") as f:
        json.dump(workspace, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "mhascope_workspace.json"))


def _write_launcher(out_dir, module, args):
    quoted = " ".join(f'"$here/{a}"' if a.endswith((".npy", ".safetensors")) else a for a in args)
    path = os.path.join(out_dir, "mhascope_layer.sh")
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
# Opens the captured layer '{module}' in mhascope (written by capture_attention.py):
#   mhascope_layer.sh info | run --dump DIR | export --stage weights --head all --out w.png | bench
#   mhascope_layer.sh [--stage weights --head 0]   (no command: the window, showing the same layer)
# $MHASCOPE names the binary (default: mhascope on the PATH). The folder may be moved as a whole.
here="$(cd "$(dirname "$0")" && pwd)"
cmd=""
case "${{1:-}}" in info|run|export|bench) cmd="$1"; shift ;; esac
exec "${{MHASCOPE:-mhascope}}" $cmd {quoted} "$@"
""")
    os.chmod(path, 0o755)


def _load(model_path, input_path):
    if model_path.endswith(".py"):
        ns = runpy.run_path(model_path)
        model = ns["make_model"]() if "make_model" in ns else ns.get("model")
        inputs = ns["make_inputs"]() if "make_inputs" in ns else ns.get("inputs")
        if model is None or (inputs is None and input_path is None):
            raise CaptureError(f"{model_path} must define `model` (or make_model()) and `inputs` (or make_inputs())")
    else:
        model = torch.load(model_path)
        inputs = None
    if input_path:
        inputs = torch.from_numpy(np.load(input_path)) if input_path.endswith(".npy") else torch.load(input_path)
    if inputs is None:
        raise CaptureError("no input: give --input FILE.pt/.npy (or define `inputs` in the --model .py file)")
    return model, inputs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="FILE.py defining model/inputs, or FILE.pt saved with torch.save")
    ap.add_argument("--input", help="the model's input: .pt (tensor, tuple or dict) or .npy")
    ap.add_argument("--module", required=True, help="the nn.MultiheadAttention's name in model.named_modules()")
    ap.add_argument("--out", required=True, help="folder to write")
    ap.add_argument("--call", type=int, default=0, help="which call of the module to record, counted from 0")
    ap.add_argument("--train-mode", action="store_true", help="keep the model's mode (default: eval, dropout off)")
    a = ap.parse_args(argv)
    try:
        model, inputs = _load(a.model, a.input)
        info = capture(model, a.module, inputs, a.out, call=a.call, eval_mode=not a.train_mode)
    except CaptureError as e:
        print(f"capture_attention: error: {e}", file=sys.stderr)
        return 1
    print(f"captured '{a.module}': B={info['B']} T_q={info['T_q']} T_k={info['T_k']} d_model={info['d_model']} "
          f"h={info['heads']} → {a.out}/ (open with {a.out}/mhascope_layer.sh info)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
