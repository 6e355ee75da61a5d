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

A capture is one unit: everything is checked and made in memory first, written into a fresh
hidden folder beside cap/, then renamed into place (atomically swapped with an earlier capture).
A refused capture, a failed write or Ctrl+C / SIGTERM leaves cap/ as it was and nothing behind.
cap/ must be new, empty or an earlier capture; a folder holding anything else is refused.
Every problem is one line on stderr, `capture_attention: error: …`, and exit code 1.
"""
import argparse
import ctypes
import errno
import hashlib
import inspect
import io
import json
import os
import runpy
import secrets
import shutil
import signal
import stat
import struct
import sys
import threading

import numpy as np
import torch
from torch import nn

FORMAT_VERSION = 1
SCRIPT = "capture_attention"
# Everything a capture folder holds; a folder with anything else is not replaced.
CAPTURE_FILES = frozenset({"capture.json", "weights.safetensors", "query.npy", "key.npy", "value.npy", "attn_mask.npy",
                           "key_padding_mask.npy", "torch_output.npy", "torch_weights.npy", "mhascope_layer.sh",
                           "mhascope_workspace.json"})


class CaptureError(Exception):
    pass


class CaptureInterrupted(CaptureError):
    """SIGINT/SIGTERM arrived while the capture was written; the folder was left as it was."""


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
    if mask.dtype == torch.uint8 and what == "attn_mask":  # PyTorch 1.13 still takes it, as bool (deprecated)
        return mask != 0
    if not mask.is_floating_point():
        raise CaptureError(f"{what} has dtype {mask.dtype}; PyTorch takes bool or float masks (use mask.bool())")
    neg_inf = torch.isneginf(mask)
    other = (~neg_inf) & (mask != 0)
    if other.any():
        v = mask[other].flatten()[0].item()
        if not np.isfinite(v):
            raise CaptureError(f"{what} holds {v}; mhascope's masks only block (-inf) or keep (0) a key")
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


def safetensors_bytes(tensors):
    """The --weights file: float32 tensors in name order, __metadata__ {"format": "pt"}."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name].detach().cpu().numpy().astype("<f4")).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def save_safetensors(path, tensors):
    with open(path, "wb") as f:
        f.write(safetensors_bytes(tensors))


class _Recorder:
    """Replaces the layer's forward for one run; records the `call`-th call (0-based)."""

    def __init__(self, mha, name, call):
        self.mha, self.name, self.call, self.calls, self.record = mha, name, call, 0, None
        self.original = mha.forward
        self.signature = inspect.signature(self.original)

    def __call__(self, *args, **kwargs):
        a = self.signature.bind(*args, **kwargs)
        a.apply_defaults()
        p = a.arguments
        kpm = p["key_padding_mask"]
        if torch.is_tensor(kpm) and kpm.dtype != torch.bool and not kpm.is_floating_point():
            # PyTorch's own refusal is a bare AssertionError deep in functional.py; say which mask.
            raise CaptureError(f"'{self.name}' was called with a key_padding_mask of dtype {kpm.dtype}; "
                               "nn.MultiheadAttention takes bool or float masks (use mask.bool())")
        out = self.original(*args, **kwargs)
        if self.calls == self.call:
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


def _describe(e):
    """An unexpected exception as one line: its type, its message and the innermost place it came from."""
    where = ""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" (at {os.path.basename(tb.tb_frame.f_code.co_filename)} line {tb.tb_lineno})"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else '(no message)'}{where}"


def _step(what, fn, *args, **kwargs):
    """fn(*args) with any exception that is not ours turned into one CaptureError naming `what`."""
    try:
        return fn(*args, **kwargs)
    except CaptureError:
        raise
    except Exception as e:  # noqa: BLE001 - a user's model or file can raise anything
        raise CaptureError(f"{what}: {_describe(e)}") from e


def capture(model, module, inputs, out_dir, call=0, eval_mode=True):
    """Runs model(inputs), records the `call`-th call of `module` and writes out_dir. Returns capture.json's dict.
    Everything is checked before out_dir is touched: see the module's documentation."""
    target = out_target(out_dir)
    if not isinstance(call, int) or isinstance(call, bool) or call < 0:
        raise CaptureError(f"--call must be a call number counted from 0, got {call!r}")
    if not isinstance(model, nn.Module):
        raise CaptureError(f"the model is a {type(model).__name__}, not a torch.nn.Module")
    mha = find_attention(model, module)
    if eval_mode:
        model.eval()
    rec = _Recorder(mha, module, call)
    mha.forward = rec
    try:
        with torch.enable_grad():
            _step("running the model on its input", _run, model, inputs)
    finally:
        del mha.forward  # the class's forward again
    if rec.record is None:
        raise CaptureError(f"'{module}' was called {rec.calls} time(s) during the run, so call {call} (counted from 0) "
                           "was never made" + (" — a fused inference path may have skipped it (parameters with "
                                                "requires_grad=False?)" if rec.calls == 0 else ""))
    files, info = _step("preparing the capture", _prepare, mha, module, rec, out_dir, target)
    _write_capture(out_dir, target, files)
    return info


# ---------------------------------------------------------------------------------------------
# The capture's files, made in memory: nothing is written until all of them exist
# ---------------------------------------------------------------------------------------------

def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _prepare(mha, module, rec, out_dir, target):
    """({file name: bytes}, capture.json's dict): the whole capture, every check already made."""
    r, h = rec.record, mha.num_heads
    q, k, v = (batch_first(r[n], mha).float() for n in ("query", "key", "value"))
    out = batch_first(r["output"], mha).float()
    w = r["weights"] if r["weights"].dim() == 4 else r["weights"].unsqueeze(0)  # (B, h, T_q, T_k)
    B, Tq, Tk = q.shape[0], q.shape[1], k.shape[1]
    blobs = {"query.npy": _npy(q.numpy())}
    files = {"query": "query.npy"}
    # key = value = query: mhascope's self-attention (no --key/--value), as in an encoder layer.
    self_attention = torch.equal(r["key"], r["query"]) and torch.equal(r["value"], r["query"])
    args = ["--query", "query.npy"]
    if not self_attention:
        blobs.update({"key.npy": _npy(k.numpy()), "value.npy": _npy(v.numpy())})
        files.update(key="key.npy", value="value.npy")
        args += ["--key", "key.npy", "--value", "value.npy"]
    state = {"in_proj_weight": mha.in_proj_weight, "out_proj.weight": mha.out_proj.weight}
    if mha.in_proj_bias is not None:
        state.update({"in_proj_bias": mha.in_proj_bias, "out_proj.bias": mha.out_proj.bias})
    bad = [f"{n} has {int((~torch.isfinite(t)).sum())} NaN/Inf values" for n, t in state.items()
           if not bool(torch.isfinite(t).all())]
    if bad:  # mhascope would refuse the weights file: refuse it here, before anything is written
        raise CaptureError(f"'{module}': {'; '.join(bad)}; mhascope refuses non-finite weights")
    blobs["weights.safetensors"] = safetensors_bytes(state)
    files["weights"] = "weights.safetensors"
    args += ["--weights", "weights.safetensors", "--heads", str(h)]
    if r["attn_mask"] is not None:
        blobs["attn_mask.npy"] = _npy(attn_mask_2d(r["attn_mask"], mha, B, Tq, Tk).numpy())
        files["attn_mask"] = "attn_mask.npy"
        args += ["--attn-mask", "attn_mask.npy"]
    if r["key_padding_mask"] is not None:
        kpm = blocked(r["key_padding_mask"], "key_padding_mask")
        kpm = kpm.unsqueeze(0) if kpm.dim() == 1 else kpm
        blobs["key_padding_mask.npy"] = _npy(kpm.numpy())
        files["key_padding_mask"] = "key_padding_mask.npy"
        args += ["--key-padding-mask", "key_padding_mask.npy"]
    blobs["torch_output.npy"] = _npy(out.numpy())
    blobs["torch_weights.npy"] = _npy(w.float().numpy())
    info = {"format": "mhascope-capture", "version": FORMAT_VERSION, "module": module,
            "torch": torch.__version__, "batch_first": mha.batch_first, "self_attention": bool(self_attention),
            "B": B, "T_q": Tq, "T_k": Tk, "d_model": mha.embed_dim, "heads": h, "bias": mha.in_proj_bias is not None,
            "files": files, "reference": {"output": "torch_output.npy", "weights": "torch_weights.npy"},
            "mhascope_args": args}
    if torch.isnan(out).any():
        info["note"] = ("PyTorch returned NaN for query rows whose every key is blocked; mhascope gives those rows "
                        "weights 0 (output = b_o)")
    blobs["capture.json"] = (json.dumps(info, indent=2) + "\n").encode()
    blobs["mhascope_layer.sh"] = _launcher(module, args).encode()
    blobs["mhascope_workspace.json"] = _workspace(out_dir, target, module, files, blobs, h, mha.embed_dim)
    return blobs, info


WORKSPACE_FLAGS = {"query": "query", "key": "key", "value": "value", "weights": "weights",
                   "attn_mask": "attn-mask", "key_padding_mask": "key-padding-mask"}


def _workspace(out_dir, target, module, files, blobs, heads, d_model):
    """mhascope_workspace.json (core/io/workspace.hpp's format, version 1): the layer's files with
    their SHA-256 and the sizes, at the paths they will have once the capture is in place; no view,
    so mhascope opens it at its defaults."""
    recorded = {}
    for kind, name in files.items():
        data = blobs[name]
        recorded[WORKSPACE_FLAGS[kind]] = {"path": os.path.join(os.path.abspath(out_dir), name),
                                           "absolute": os.path.join(target, name), "relative": name,
                                           "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    workspace = {"mhascope_workspace": 1, "preset": "capture",
                 "config": {"version": 1, "name": "capture", "description": f"captured from {module}",
                            "text": "(from query.npy)", "d_model": d_model, "heads": heads},
                 "files": recorded}
    return (json.dumps(workspace, indent=2) + "\n").encode()


def _launcher(module, args):
    quoted = " ".join(f'"$here/{a}"' if a.endswith((".npy", ".safetensors")) else a for a in args)
    return f"""#!/bin/sh
# Opens the captured layer '{module}' in mhascope (written by capture_attention.py):
#   mhascope_layer.sh info | run --dump DIR | export --stage weights --head all --out w.png | bench
#   mhascope_layer.sh [--stage weights --head 0]   (no command: the window, showing the same layer)
# $MHASCOPE names the binary (default: mhascope on the PATH). The folder may be moved as a whole.
here="$(cd "$(dirname "$0")" && pwd)"
cmd=""
case "${{1:-}}" in info|run|export|bench) cmd="$1"; shift ;; esac
exec "${{MHASCOPE:-mhascope}}" $cmd {quoted} "$@"
"""


# ---------------------------------------------------------------------------------------------
# Into place: a fresh hidden folder beside the target, renamed (or swapped) in one step
# ---------------------------------------------------------------------------------------------

def _check_replaceable(out_dir, path):
    """A folder a capture may replace: empty, or an earlier capture (capture.json of one, and only
    the files a capture writes). Anything else might be the user's."""
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise CaptureError(f"--out '{out_dir}': cannot read the folder: {e.strerror}") from None
    for name in names:
        if name not in CAPTURE_FILES or not stat.S_ISREG(os.lstat(os.path.join(path, name)).st_mode):
            raise CaptureError(f"--out '{out_dir}' already holds '{name}', which is not part of a capture; a capture "
                               "replaces the whole folder, so choose a new or empty folder")
    if names:
        try:
            with open(os.path.join(path, "capture.json"), "rb") as f:
                ours = json.load(f).get("format") == "mhascope-capture"
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise CaptureError(f"--out '{out_dir}' holds {', '.join(names)} but no capture.json of an earlier "
                               "capture; a capture replaces the whole folder, so choose a new or empty folder")


def out_target(out_dir):
    """The folder a capture replaces, as an absolute path with symlinks resolved (its parent holds
    the temporary folder); never the root or the current folder, never a file, never a folder
    holding anything but an earlier capture."""
    if not isinstance(out_dir, (str, os.PathLike)) or not str(out_dir):
        raise CaptureError("--out needs a folder name")
    out_dir = os.fspath(out_dir)
    target = os.path.realpath(out_dir)
    if target == os.path.dirname(target):
        raise CaptureError(f"--out '{out_dir}': cannot replace the root folder; name a folder for the capture")
    cwd = os.path.realpath(os.getcwd())
    if cwd == target or cwd.startswith(target + os.sep):
        raise CaptureError(f"--out '{out_dir}' is the current folder or holds it; a capture replaces its folder as a "
                           "whole, so name a subfolder (e.g. --out cap)")
    if os.path.lexists(target) and not os.path.isdir(target):
        raise CaptureError(f"--out '{out_dir}' exists and is not a folder")
    if os.path.isdir(target):
        _check_replaceable(out_dir, target)
    return target


class _StopSignals:
    """SIGINT/SIGTERM while the capture is written: the handler only records the signal; the writer
    sees it between files, removes its temporary folder, and then the signal is delivered again
    to the handler that was there before (so the process still stops, or KeyboardInterrupt is
    raised), unless the capture was already in place."""

    def __init__(self):
        self.signal, self.committed, self.saved = None, False, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():  # Python sets handlers there only
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._record)
        return self

    def _record(self, sig, _frame):
        self.signal = self.signal or sig

    def check(self):
        if self.signal:
            raise CaptureInterrupted(f"interrupted by {signal.Signals(self.signal).name}")

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        if self.signal and not self.committed:
            signal.raise_signal(self.signal)
        return False


def _write_file(path, data):
    with open(path, "xb") as f:  # "x": a fresh folder holds no file of that name
        f.write(data)


RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _exchange(a, b):
    """Swaps two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system or the
    file system cannot."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except AttributeError:
        return False
    fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err))


def _move_into_place(out_dir, tmp, target):
    """Renames tmp to target: a plain rename when nothing (or an empty folder) is there, else an
    exchange with the earlier capture. Returns the path now holding the earlier capture, or None."""
    try:
        os.rename(tmp, target)
        return None
    except OSError as e:
        if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise CaptureError(f"cannot move the capture into '{out_dir}': {e.strerror}") from None
    _check_replaceable(out_dir, target)  # again: it may have changed while the capture was made
    try:
        if _exchange(tmp, target):
            return tmp
        # No exchange here: move the earlier capture aside, then the new one in (a moment with
        # no folder at the target, never a mixed one), and back if the second step fails.
        aside = f"{tmp}-old"
        os.rename(target, aside)
        try:
            os.rename(tmp, target)
        except OSError:
            os.rename(aside, target)
            raise
        return aside
    except OSError as e:
        raise CaptureError(f"cannot replace the capture in '{out_dir}': {e.strerror}") from None


def _write_capture(out_dir, target, blobs):
    parent, base = os.path.split(target)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise CaptureError(f"--out '{out_dir}': cannot create folder '{parent}': {e.strerror}") from None
    with _StopSignals() as stop:
        tmp = os.path.join(parent, f".{base}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            os.mkdir(tmp)
        except OSError as e:
            raise CaptureError(f"--out '{out_dir}': cannot create folder '{tmp}': {e.strerror}") from None
        earlier = None
        try:
            for name, data in blobs.items():
                stop.check()
                _write_file(os.path.join(tmp, name), data)
            os.chmod(os.path.join(tmp, "mhascope_layer.sh"), 0o755)
            stop.check()
            earlier = _move_into_place(out_dir, tmp, target)
            stop.committed = True
        except CaptureInterrupted as e:
            raise CaptureInterrupted(f"{e}; '{out_dir}' was left as it was") from None
        except OSError as e:
            raise CaptureError(f"--out '{out_dir}': cannot write '{e.filename or tmp}': {e.strerror}; the folder was "
                               "left as it was") from None
        finally:
            if not stop.committed:
                shutil.rmtree(tmp, ignore_errors=True)
            elif earlier:
                shutil.rmtree(earlier, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------

def _regular_file(path, option):
    try:
        st = os.stat(path)
    except OSError as e:
        raise CaptureError(f"{option} '{path}': {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise CaptureError(f"{option} '{path}' is {kind}")


def _load(model_path, input_path):
    _regular_file(model_path, "--model")
    if input_path:
        _regular_file(input_path, "--input")
    if model_path.endswith(".py"):
        ns = _step(f"running --model '{model_path}'", runpy.run_path, model_path)
        model = _step(f"make_model() of '{model_path}'", ns["make_model"]) if "make_model" in ns else ns.get("model")
        inputs = (_step(f"make_inputs() of '{model_path}'", ns["make_inputs"]) if "make_inputs" in ns
                  else ns.get("inputs"))
        if model is None or (inputs is None and input_path is None):
            raise CaptureError(f"{model_path} must define `model` (or make_model()) and `inputs` (or make_inputs())")
    else:
        model = _step(f"cannot load --model '{model_path}' with torch.load", torch.load, model_path)
        inputs = None
    if not isinstance(model, nn.Module):
        raise CaptureError(f"--model '{model_path}' gives a {type(model).__name__}, not a torch.nn.Module "
                           "(save the whole model with torch.save(model, path))")
    if input_path:
        if input_path.endswith(".npy"):
            inputs = torch.from_numpy(_step(f"cannot read --input '{input_path}'", np.load, input_path,
                                            allow_pickle=False))
        else:
            inputs = _step(f"cannot load --input '{input_path}' with torch.load", torch.load, input_path)
    if inputs is None:
        raise CaptureError("no input: give --input FILE.pt/.npy (or define `inputs` in the --model .py file)")
    return model, inputs


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 1, like every other error (argparse: usage, 2)
        raise CaptureError(message)

    def _print_message(self, message, file=None):  # --help: standard output, checked as every output is
        if message:
            if file is None or file is sys.stdout:
                _write_stdout(message)
            else:
                file.write(message)


def main(argv=None):
    ap = _Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="FILE.py defining model/inputs, or FILE.pt saved with torch.save")
    ap.add_argument("--input", help="the model's input: .pt (tensor, tuple or dict) or .npy")
    ap.add_argument("--module", required=True, help="the nn.MultiheadAttention's name in model.named_modules()")
    ap.add_argument("--out", required=True, help="folder to write: new, empty or an earlier capture (replaced whole)")
    ap.add_argument("--call", type=int, default=0, help="which call of the module to record, counted from 0")
    ap.add_argument("--train-mode", action="store_true", help="keep the model's mode (default: eval, dropout off)")
    try:
        a = ap.parse_args(argv)
        out_target(a.out)  # before the model is loaded and run: a wrong --out costs nothing
        if a.call < 0:
            raise CaptureError(f"--call must be a call number counted from 0, got {a.call}")
        model, inputs = _load(a.model, a.input)
        info = capture(model, a.module, inputs, a.out, call=a.call, eval_mode=not a.train_mode)
    except CaptureError as e:
        print(f"{SCRIPT}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted; nothing was written", file=sys.stderr)
        raise
    except Exception as e:  # noqa: BLE001 - whatever went wrong, one line, never a traceback
        print(f"{SCRIPT}: error: {_describe(e)}", file=sys.stderr)
        return 1
    try:
        _write_stdout(f"captured '{a.module}': B={info['B']} T_q={info['T_q']} T_k={info['T_k']} "
                      f"d_model={info['d_model']} h={info['heads']} → {a.out}/ (open with {a.out}/mhascope_layer.sh "
                      "info)\n")
    except CaptureError as e:  # the capture is written; only the line saying so could not be
        print(f"{SCRIPT}: error: {e}", file=sys.stderr)
        return 1
    return 0


def _write_stdout(text):
    """text on standard output, written out now: a full disk or a closed pipe raises CaptureError,
    the one-line error (and exit code 1) every other failure is, never a traceback."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as e:
        try:  # what is still buffered would fail again when Python exits: send it nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
        raise CaptureError(f"cannot write to standard output: {getattr(e, 'strerror', None) or e}") from None


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # stop as Ctrl+C asked: by the signal, without a traceback
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
