#!/usr/bin/python3
"""scripts/mhascope_model.py reads checkpoints as strictly as mhascope does: files crafted here,
each broken in one way, are refused with one message naming the file and the value (never a
traceback, never an allocation larger than the file); what `mhascope train` writes loads.
    tests/cli/mhascope_model_test.py MHASCOPE_BINARY SOURCE_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

MHASCOPE, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SCRIPTS = os.path.join(SOURCE, "scripts")
sys.path.insert(0, SCRIPTS)
import mhascope_model  # noqa: E402

TMP = tempfile.mkdtemp(prefix="mhascope_model_")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


SIZES = {"vocab": 5, "seq": 4, "d_model": 4, "heads": 2, "layers": 1, "mlp": 0}
META = {"format": "mhascope-gpt", "version": "1", "task": "induction", "step": "0", "seed": "7", "period_min": "2",
        "period_max": "2", **{k: str(v) for k, v in SIZES.items()}}
torch.manual_seed(0)
REF = mhascope_model.MhascopeGPT(5, 4, 4, 2, 1, False)
STATE = {k: v.detach().numpy().astype(np.float32) for k, v in REF.state_dict().items()}


def encode(state, meta=META, dtype="F32"):
    """A .safetensors file as mhascope writes one: tensors in name order, contiguous."""
    header, blobs, offset = {}, [], 0
    for name in sorted(state):
        a = np.asarray(state[name])
        if dtype == "BF16":
            data = (a.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        else:
            data = a.astype({"F32": "<f4", "F16": "<f2", "F64": "<f8"}[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def raw(header_text, data=b"", length=None):
    h = header_text.encode() if isinstance(header_text, str) else header_text
    return struct.pack("<Q", len(h) if length is None else length) + h + data


def put(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def refused(path, *needles):
    try:
        mhascope_model.load(path)
    except mhascope_model.CheckpointError as e:
        msg = str(e)
        return msg.startswith(path) and "\n" not in msg and all(n in msg for n in needles), msg
    except Exception as e:  # noqa: BLE001 - anything else is the failure this test is about
        return False, f"{type(e).__name__}: {e}"
    return False, "loaded"


def expect_refused(name, data, *needles):
    ok, msg = refused(put(name + ".safetensors", data), *needles)
    check(ok, f"{name}: {msg}")


# A small file whose metadata declares a huge model is refused before anything that large is
# allocated (in a fresh process, so its peak memory is this load's alone).
huge = dict(META, vocab="65536", seq="4096", d_model="1024", heads="2")
huge_path = put("huge.safetensors", encode({"lnf.weight": np.zeros(4, np.float32)}, huge))
child = ("import resource, sys; sys.path.insert(0, sys.argv[1]); import mhascope_model\n"
         "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
         "try:\n    mhascope_model.load(sys.argv[2]); print('loaded')\n"
         "except mhascope_model.CheckpointError as e:\n    print(str(e))\n"
         "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n")
r = subprocess.run([sys.executable, "-c", child, SCRIPTS, huge_path], capture_output=True, text=True)
out = r.stdout.strip().splitlines()
grown = int(out[-1]) if out and out[-1].isdigit() else -1
check(os.path.getsize(huge_path) < 600 and 0 <= grown < 64 and "missing tensor 'emb.weight' [65536, 1024]" in r.stdout,
      f"a {os.path.getsize(huge_path)}-byte file declaring vocab 65536, d_model 1024: refused, "
      f"peak memory +{grown} MiB "
      f"({(out[0] if out else r.stderr.strip())[:200]})")

# Well-formed files load, in every dtype mhascope reads; the logits are the reference model's.
tokens = torch.tensor([[1, 2, 3, 4]])
with torch.no_grad():
    want = REF.double()(tokens)
for dtype, tol in (("F32", 1e-6), ("F64", 1e-6), ("F16", 5e-2), ("BF16", 2e-1)):
    try:
        model, meta = mhascope_model.load(put(f"ok_{dtype}.safetensors", encode(STATE, dtype=dtype)))
        with torch.no_grad():
            d = float((model(tokens) - want).abs().max())
        check(d < tol and meta["seed"] == "7", f"{dtype} checkpoint loads, logits within {d:.1e} of the reference")
    except Exception as e:  # noqa: BLE001
        check(False, f"{dtype} checkpoint loads: {type(e).__name__}: {e}")

# What `mhascope train` writes: the full uint64 seed range and the 'history' block of evaluations
# (1 layer, 2 heads: step, probe loss, probe accuracy, train loss, then 8 scores per head); keys
# this reader does not know are kept in meta and otherwise ignored.
row = [10, 2.5, 0.25, None] + [0.1 * i for i in range(16)]
block = {"version": 2, "layers": 1, "heads": 2, "evaluations_in_run": 1, "columns": "…", "evaluations": [row]}
newer = dict(META, step="10", seed=str(2**64 - 1), history=json.dumps(block), some_future_key="x")
try:
    _, meta = mhascope_model.load(put("newer.safetensors", encode(STATE, newer)))
    h = mhascope_model.history(meta)
    check(meta["seed"] == str(2**64 - 1) and meta["some_future_key"] == "x" and len(h) == 1 and h[0]["step"] == 10
          and h[0]["train_loss"] is None and abs(h[0]["heads"][0][1]["induction"] - 0.9) < 1e-12
          and abs(h[0]["heads"][0][1]["prev_token_seen"] - 1.5) < 1e-12
          and mhascope_model.history(dict(META, history=json.dumps(dict(block, version=1)))) == [],
          f"seed 2^64-1, a history block and an unknown key are accepted: {h}")
except mhascope_model.CheckpointError as e:
    check(False, f"seed 2^64-1, a history block and an unknown key are accepted: {e}")

# The history block is checked as mhascope checks it: steps from 0, increasing, integers, never
# past the checkpoint's step; at most as many rows as mhascope keeps, counted before the rows are
# parsed into objects (a fresh process, so its peak memory is this load's alone).
def with_rows(rows, **meta):
    return encode(STATE, dict(META, step="10", history=json.dumps(dict(block, evaluations=rows)), **meta))


expect_refused("history_negative_step", with_rows([[-5] + row[1:]]), "evaluation 0 has step -5",
               "steps must increase and not pass the checkpoint's step 10")
expect_refused("history_out_of_order", with_rows([[5] + row[1:], [3] + row[1:]]), "evaluation 1 has step 3")
expect_refused("history_beyond_step", with_rows([[11] + row[1:]]), "evaluation 0 has step 11")
expect_refused("history_step_not_integer", with_rows([[1e300] + row[1:]]), "evaluation 0: the step is not an integer")
expect_refused("history_null_score", with_rows([row[:-1] + [None]]), "a head score is not a finite number")
many_path = put("history_many.safetensors", with_rows([[0, 0, 0, None] + [0] * 16] * 200_000))
r = subprocess.run([sys.executable, "-c", child, SCRIPTS, many_path], capture_output=True, text=True)
out = r.stdout.strip().splitlines()
grown = int(out[-1]) if out and out[-1].isdigit() else -1
check(0 <= grown < 150 and "holds 200000 evaluations, more than the 4096" in r.stdout,
      f"a history of 200000 evaluations: refused, peak memory +{grown} MiB ({(out[0] if out else r.stderr)[:200]})")
# The task's settings are checked as mhascope checks them: the period must repeat within T.
expect_refused("period_beyond_seq", encode(STATE, dict(META, period_max="1000")),
               "T (4) must be at least 2 * k_max = 2000")
# Integers read as mhascope reads them: "064" is 64 (printed so), an unsigned seed takes no '-'.
expect_refused("seed_minus_zero", encode(STATE, dict(META, seed="-0")), "'seed' is '-0'")
r = subprocess.run([os.path.join(SCRIPTS, "mhascope_model.py"), put("vocab_leading_zero.safetensors",
                    encode(STATE, dict(META, vocab="005")))], capture_output=True, text=True)
check(r.returncode == 0 and " vocab=5 " in r.stdout, f"vocab '005' is read and printed as 5: {r.stdout.strip()[:200]}")

# The header and layout rules of the .safetensors format.
good = encode(STATE)
n = struct.unpack("<Q", good[:8])[0]
header_text, data = good[8:8 + n].decode(), good[8 + n:]
expect_refused("short", b"\x01\x02", "only 2 bytes")
expect_refused("header_beyond_file", raw(header_text, data, length=len(header_text) + len(data) + 1),
               "larger than the file")
expect_refused("header_limit", raw("{}", length=200_000_000), "header length 200000000", "limit")
expect_refused("not_utf8", raw(b'{"a\xff":1}'), "not valid UTF-8", "0xff")
expect_refused("not_json", raw('{"a": '), "not valid JSON")
expect_refused("nan_literal", raw('{"__metadata__": {"a": NaN}}'), "NaN")
expect_refused("not_object", raw("[1, 2]"), "not a JSON object")
expect_refused("duplicate_tensor", raw('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                                       '"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', b"\0" * 4),
               "'x' twice")
expect_refused("duplicate_metadata", raw('{"__metadata__": {"vocab": "5", "vocab": "6"}}'), "'vocab' twice")
expect_refused("metadata_not_string", raw('{"__metadata__": {"vocab": 5}}'), "'vocab' must be a string")
expect_refused("trailing", good + b"\0" * 8, "trailing bytes", "8 bytes extra")
one = '{"x": {"dtype": "%s", "shape": %s, "data_offsets": %s}}'
expect_refused("unknown_dtype", raw(one % ("F17", "[1]", "[0, 4]"), b"\0" * 4), "unknown dtype 'F17'")
expect_refused("unsupported_dtype", raw(one % ("I32", "[1]", "[0, 4]"), b"\0" * 4), "unsupported dtype I32", "'x'")
expect_refused("size_mismatch", raw(one % ("F32", "[2]", "[0, 4]"), b"\0" * 4), "needs 8 bytes")
expect_refused("out_of_range", raw(one % ("F32", "[2]", "[0, 8]"), b"\0" * 4), "out of range")
expect_refused("end_before_begin", raw(one % ("F32", "[0]", "[4, 0]"), b"\0" * 4), "end < begin")
expect_refused("shape_overflow", raw(one % ("F32", "[4294967296, 4294967296]", "[0, 4]"), b"\0" * 4), "needs")
expect_refused("negative_shape", raw(one % ("F32", "[-1]", "[0, 4]"), b"\0" * 4), "non-negative")
two = ('{"x": {"dtype": "F32", "shape": [1], "data_offsets": %s}, '
       '"y": {"dtype": "F32", "shape": [1], "data_offsets": %s}}')
expect_refused("gap", raw(two % ("[0, 4]", "[8, 12]"), b"\0" * 12), "gap of 4 bytes")
expect_refused("overlap", raw(two % ("[0, 4]", "[0, 4]"), b"\0" * 4), "overlaps")
expect_refused("late_start", raw(two % ("[4, 8]", "[8, 12]"), b"\0" * 12), "starts at byte 4")

# NaN and Inf are named with the tensor and the count, never loaded.
bad = dict(STATE)
bad["lnf.weight"] = np.array([np.nan, 1.0, np.inf, np.nan], np.float32)
expect_refused("nan_weights", encode(bad), "tensor 'lnf.weight' has 2 NaN and 1 Inf values (of 4, the first at flat "
               "index 0)")
big = dict(STATE)
big["lnf.bias"] = np.array([0.0, 1e300, 0.0, 0.0])
expect_refused("f64_beyond_float32", encode(big, dtype="F64"), "'lnf.bias' has 1 F64 values outside the float32 range")

# The checkpoint's metadata and tensors, every problem in one message.
expect_refused("metadata_values", encode(STATE, dict(META, vocab="+5", d_model="6", heads="4", version="2")),
               "'vocab' is '+5'", "'version' is '2'", "d_model (6) is not divisible by heads (4)")
expect_refused("metadata_missing", encode(STATE, None), "metadata 'vocab' is missing", "'format' is missing")
extra = dict(STATE, **{"extra.weight": np.zeros(2, np.float32)})
del extra["out.bias"]
extra["emb.weight"] = np.zeros((4, 4), np.float32)
expect_refused("tensors", encode(extra), "missing tensor 'out.bias' [5]", "unexpected tensor 'extra.weight' [2]",
               "'emb.weight' has shape [4, 4], expected [5, 4]")

# The script: one line `mhascope_model: error: …` and exit code 1, or the checkpoint's sizes.
script = os.path.join(SCRIPTS, "mhascope_model.py")
for arg, needle in ((os.path.join(TMP, "missing.safetensors"), "No such file"), (TMP, "is a folder"),
                    ("/dev/zero", "not a regular file"), (os.path.join(TMP, "nan_weights.safetensors"), "2 NaN")):
    r = subprocess.run([script, arg], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and lines[0].startswith("mhascope_model: error: ") and arg in lines[0]
          and needle in lines[0], f"mhascope_model.py {os.path.basename(arg)}: {r.stderr.strip()[:300]}")

# Standard output that cannot be written is the same one-line error and exit code 1.
if os.path.exists("/dev/full"):
    with open("/dev/full", "w") as full:
        r = subprocess.run([script, os.path.join(TMP, "ok_F32.safetensors")], stdout=full, stderr=subprocess.PIPE,
                           text=True)
    check(r.returncode == 1 and r.stderr.splitlines() == ["mhascope_model: error: cannot write to standard output: "
                                                          "No space left on device"],
          f"mhascope_model.py > /dev/full: exit {r.returncode}, {r.stderr.strip()[:200]}")

# What `mhascope train` writes, this reader accepts (the largest seed too), and both compute the
# same next-token predictions from it.
ckpt = os.path.join(TMP, "trained.safetensors")
r = subprocess.run([MHASCOPE, "train", "--task", "induction", "--layers", "1", "--heads", "2", "--d-model", "8",
                    "--vocab", "11", "--seq", "8", "--period-min", "2", "--period-max", "4", "--steps", "20",
                    "--eval-every", "10", "--seed", str(2**64 - 1), "--save", ckpt], capture_output=True, text=True)
check(r.returncode == 0, f"mhascope train --save (stderr: {r.stderr.strip()[:300]})")
if r.returncode == 0:
    r = subprocess.run([script, ckpt], capture_output=True, text=True)
    check(r.returncode == 0 and f"seed={2**64 - 1}" in r.stdout and "step=20" in r.stdout
          and "the last at step 20" in r.stdout,
          f"mhascope_model.py reads what mhascope train wrote: {(r.stdout + r.stderr).strip()[:300]}")

# The attention variants: what `mhascope train --positions rope --kv-heads 1` writes uses the separate
# projections and loads strictly with its variant; ALiBi's too. (tests/train/torch_reference_test.cpp
# compares the logits and gradients of both implementations on fixtures of these variants.)
for positions, extra, needle in (("rope", ["--kv-heads", "1", "--rope-base", "500"], "positions=rope kv_heads=1 rope_base=500.0"),
                                 ("alibi", [], "positions=alibi kv_heads=2")):
    vck = os.path.join(TMP, f"{positions}.safetensors")
    r = subprocess.run([MHASCOPE, "train", "--task", "induction", "--layers", "1", "--heads", "2", "--d-model", "8",
                        "--vocab", "11", "--seq", "8", "--period-min", "2", "--period-max", "4", "--steps", "3",
                        "--eval-every", "3", "--positions", positions, *extra, "--save", vck],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"mhascope train --positions {positions} --save (stderr: {r.stderr.strip()[:300]})")
    if r.returncode == 0:
        r = subprocess.run([script, vck], capture_output=True, text=True)
        check(r.returncode == 0 and needle in r.stdout, f"mhascope_model.py reads a {positions} checkpoint: "
              f"{(r.stdout + r.stderr).strip()[:300]}")
        model, meta = mhascope_model.load(vck)
        names = set(model.state_dict())
        check("blocks.0.attn.q_proj.weight" in names and "pos.weight" not in names
              and tuple(model.state_dict()["blocks.0.attn.k_proj.weight"].shape) == ((4 if extra else 8), 8),
              f"{positions}: separate projections, no position table")
        tensors, meta = mhascope_model.read_safetensors(vck)
        state = {k: v.numpy().astype(np.float32) for k, v in tensors.items()}
        expect_refused(f"{positions}_bad_variant", encode(state, dict(meta, positions="spiral", kv_heads="3")),
                       "metadata 'positions' is 'spiral', expected learned, rope or alibi")
        if positions == "rope":
            no_base = {k: v for k, v in meta.items() if k != "rope_base"}
            expect_refused("rope_without_base", encode(state, no_base), "metadata 'rope_base' is missing")
            expect_refused("rope_as_plain", encode(state, dict(meta, positions="learned", kv_heads="2")),
                           "'rope_base' is set but positions are learned")

print(f"{len(failures)} failure(s); files in {TMP}" if failures else "all passed")
if not failures:
    subprocess.run(["rm", "-rf", TMP])
sys.exit(1 if failures else 0)
