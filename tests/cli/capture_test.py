#!/usr/bin/python3
"""scripts/capture_attention.py end to end: models built here (Debian's torch), one layer captured,
then mhascope run on the captured files through the written mhascope_layer.sh; the recorded
output and per-head weights must equal what the hook saw PyTorch compute.
    tests/cli/capture_test.py MHASCOPE_BINARY SOURCE_DIR
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
from torch import nn

MHASCOPE, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import capture_attention  # noqa: E402

TMP = tempfile.mkdtemp(prefix="mhascope_capture_")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def layer_sh(out_dir, *args):
    env = dict(os.environ, MHASCOPE=MHASCOPE)
    return subprocess.run([os.path.join(out_dir, "mhascope_layer.sh"), *args], env=env,
                          capture_output=True, text=True)


def compare(name, model, module, inputs, expect_masks=(), expect_cross=False):
    out_dir = os.path.join(TMP, name)
    info = capture_attention.capture(model, module, inputs, out_dir)
    files = info["files"]
    for m in expect_masks:
        check(m in files, f"{name}: {m} written")
    check(("key" in files) == expect_cross, f"{name}: key/value files only for cross-attention ({sorted(files)})")
    dump = os.path.join(out_dir, "dump")
    r = layer_sh(out_dir, "run", "--dump", dump)
    check(r.returncode == 0, f"{name}: mhascope_layer.sh run --dump (stderr: {r.stderr.strip()[:300]})")
    if r.returncode != 0:
        return
    ours, theirs = np.load(os.path.join(dump, "output.npy")), np.load(os.path.join(out_dir, "torch_output.npy"))
    check(ours.shape == theirs.shape, f"{name}: output shape {ours.shape} == hook's {theirs.shape}")
    if ours.shape == theirs.shape:
        d = float(np.abs(ours - theirs).max())
        check(d < 1e-5, f"{name}: max |mhascope output - PyTorch output| = {d:.2e} < 1e-5")
    # The workspace the capture wrote opens exactly that layer: the same info, the same output.
    ws = os.path.join(out_dir, "mhascope_workspace.json")
    r1 = layer_sh(out_dir, "info", "--memory-budget", "1024")  # info prints the budget: the same for both
    r2 = subprocess.run([MHASCOPE, "info", "--workspace", ws, "--memory-budget", "1024"], capture_output=True, text=True)
    check(r1.returncode == 0 and r2.returncode == 0 and r2.stdout == r1.stdout,
          f"{name}: mhascope info --workspace mhascope_workspace.json == mhascope_layer.sh info "
          f"(stderr: {r2.stderr.strip()[:300]})")
    r3 = subprocess.run([MHASCOPE, "run", "--workspace", ws, "--dump", dump + "_ws"], capture_output=True, text=True)
    check(r3.returncode == 0 and float(np.abs(np.load(os.path.join(dump + "_ws", "output.npy")) - ours).max()) <= 1e-6,
          f"{name}: run --workspace gives the same output (stderr: {r3.stderr.strip()[:300]})")
    w, tw = np.load(os.path.join(dump, "weights.npy")), np.load(os.path.join(out_dir, "torch_weights.npy"))
    check(w.shape == tw.shape, f"{name}: per-head weights shape {w.shape} == hook's {tw.shape}")
    if w.shape == tw.shape:
        d = float(np.abs(w - tw).max())
        check(d < 1e-6, f"{name}: max |weights difference| = {d:.2e} < 1e-6")
    png = os.path.join(out_dir, "w.png")
    r = layer_sh(out_dir, "export", "--stage", "weights", "--head", "all", "--out", png)
    check(r.returncode == 0 and os.path.getsize(png) > 1000, f"{name}: mhascope_layer.sh export --stage weights")


torch.manual_seed(0)

# 1. nn.TransformerEncoderLayer (batch_first) with an additive causal mask (-inf above the
#    diagonal) and key padding on the second item: the self-attention layer "self_attn".
enc = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
x = torch.randn(2, 5, 16)
pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
causal = nn.Transformer.generate_square_subsequent_mask(5)
compare("encoder_layer", enc, "self_attn", {"src": x, "src_mask": causal, "src_key_padding_mask": pad},
        expect_masks=("attn_mask", "key_padding_mask"))

# 2. nn.TransformerDecoderLayer's cross-attention "multihead_attn": T_q = 4 queries from the
#    decoder, T_k = 6 keys/values from the memory; the memory's padding mask.
dec = nn.TransformerDecoderLayer(d_model=12, nhead=3, dim_feedforward=24, batch_first=True)
tgt, mem = torch.randn(2, 4, 12), torch.randn(2, 6, 12)
mpad = torch.zeros(2, 6, dtype=torch.bool)
mpad[0, 5] = True
compare("decoder_cross", dec, "multihead_attn", {"tgt": tgt, "memory": mem, "memory_key_padding_mask": mpad},
        expect_masks=("key_padding_mask",), expect_cross=True)


# 3. A user's module with batch_first=False (inputs (T, B, E)), no bias, a bool causal mask,
#    nested under a made-up name.
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, bias=False)  # batch_first=False

    def forward(self, x):
        T = x.shape[0]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        return x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 8)
        self.block = Block()

    def forward(self, x):
        return self.block(self.inp(x))


compare("seq_first", Net(), "block.attn", torch.randn(5, 3, 3), expect_masks=("attn_mask",))

# 4. The second layer of an nn.TransformerEncoder stack: its input is the first layer's output.
stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True),
                              num_layers=2)
compare("stack_layer1", stack, "layers.1.self_attn", torch.randn(1, 6, 8))

# capture.json: the options that open the layer, and the mhascope_layer.sh that uses them.
info = json.load(open(os.path.join(TMP, "decoder_cross", "capture.json")))
check(info["module"] == "multihead_attn" and info["T_q"] == 4 and info["T_k"] == 6 and info["heads"] == 3,
      f"capture.json describes the layer: {info['module']} T_q={info['T_q']} T_k={info['T_k']} h={info['heads']}")
check(info["mhascope_args"][:2] == ["--query", "query.npy"] and "--heads" in info["mhascope_args"],
      f"capture.json mhascope_args: {' '.join(info['mhascope_args'])}")
r = layer_sh(os.path.join(TMP, "decoder_cross"), "info")
check(r.returncode == 0 and all(w in r.stdout.split() for w in ("B=2", "T_q=4", "T_k=6", "d_model=12", "h=3")),
      f"mhascope_layer.sh info: {r.stdout.splitlines()[0] if r.stdout else r.stderr.strip()}")

# The command line: a model file, and wrong module names explained.
model_py = os.path.join(TMP, "user_model.py")
with open(model_py, "w") as f:
    f.write("import torch\nfrom torch import nn\ntorch.manual_seed(1)\n"
            "model = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)\n"
            "inputs = torch.randn(1, 4, 8)\n")
script = os.path.join(SOURCE, "scripts", "capture_attention.py")
cli_out = os.path.join(TMP, "cli")
r = subprocess.run([script, "--model", model_py, "--module", "self_attn", "--out", cli_out], capture_output=True, text=True)
check(r.returncode == 0 and os.path.exists(os.path.join(cli_out, "weights.safetensors")),
      f"capture_attention.py --model FILE.py --module self_attn ({r.stdout.strip()} {r.stderr.strip()[:200]})")

# Standard output that cannot be written (a full disk) is the one-line error and exit code 1, as
# `mhascope info > /dev/full` is, never a traceback; the capture itself is written.
if os.path.exists("/dev/full"):
    full_out = os.path.join(TMP, "cli_full")
    for argv, what in ((["--model", model_py, "--module", "self_attn", "--out", full_out], "a capture"),
                       (["--help"], "--help")):
        with open("/dev/full", "w") as full:
            r = subprocess.run([script, *argv], stdout=full, stderr=subprocess.PIPE, text=True)
        check(r.returncode == 1 and r.stderr.splitlines() == ["capture_attention: error: cannot write to standard "
                                                              "output: No space left on device"]
              and (what != "a capture" or os.path.exists(os.path.join(full_out, "weights.safetensors"))),
              f"{what} > /dev/full: exit {r.returncode}, {r.stderr.strip()[:300]}")


def main_stderr(*argv):  # the script's main() in this process: importing torch again costs seconds
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = capture_attention.main(list(argv))
    return rc, err.getvalue().strip()


rc, err = main_stderr("--model", model_py, "--module", "linear1", "--out", cli_out)
check(rc == 1 and "is a Linear, not an nn.MultiheadAttention" in err and "self_attn" in err, f"a Linear named: {err}")
rc, err = main_stderr("--model", model_py, "--module", "attn", "--out", cli_out)
check(rc == 1 and "no module named 'attn'" in err and "self_attn" in err, f"an unknown name: {err}")

# A float mask that adds finite values (a bias, not a mask) cannot be represented: refused.
bias_mask = torch.zeros(5, 5)
bias_mask[0, 1] = -2.0
try:
    capture_attention.capture(enc, "self_attn", {"src": x, "src_mask": bias_mask}, os.path.join(TMP, "bias"))
    check(False, "an additive mask with finite values is refused")
except capture_attention.CaptureError as e:
    check("finite values" in str(e), f"an additive mask with finite values is refused: {e}")

# ---------------------------------------------------------------------------------------------
# The capture folder is one unit: checked first, written into a hidden folder beside it, then
# renamed or swapped into place; a refusal, a failed write or a signal leaves it as it was.
# ---------------------------------------------------------------------------------------------


def snapshot(folder):
    """{name: bytes} of a folder's files (names of sub-folders map to None)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        out[name] = open(path, "rb").read() if os.path.isfile(path) else None
    return out


def leftovers(parent):
    return [n for n in os.listdir(parent) if ".tmp-" in n]


def refused(fn, *needles):
    """(True, message) when fn() raises CaptureError whose message holds every needle."""
    try:
        fn()
    except capture_attention.CaptureError as e:
        return all(n in str(e) for n in needles), str(e)
    return False, "not refused"


def one_line_error(r, *needles):
    lines = r.stderr.strip().splitlines()
    return (r.returncode == 1 and len(lines) == 1 and lines[0].startswith("capture_attention: error: ")
            and "Traceback" not in r.stderr and all(n in lines[0] for n in needles))


# A cross-attention capture, then a self-attention one into the same folder: the folder holds the
# second capture alone (no key.npy/value.npy of the first left to mix with it).
swap = os.path.join(TMP, "swap")
capture_attention.capture(dec, "multihead_attn", {"tgt": tgt, "memory": mem}, swap)
check("key.npy" in os.listdir(swap), "swap: the cross-attention capture has key.npy")
capture_attention.capture(enc, "self_attn", x, swap)
info = json.load(open(os.path.join(swap, "capture.json")))
check(info["self_attention"] and "key.npy" not in os.listdir(swap) and "value.npy" not in os.listdir(swap),
      f"a capture replaces an earlier one whole: {sorted(os.listdir(swap))}")
check(not leftovers(TMP), f"no temporary folder left after a swap: {leftovers(TMP)}")
r = layer_sh(swap, "run", "--dump", os.path.join(TMP, "swap_dump"))
check(r.returncode == 0 and "T_q=5" in r.stdout.split() and "h=4" in r.stdout.split(),
      f"the swapped capture opens in mhascope: {r.stdout.strip()}{r.stderr.strip()}")

# A capture refused after the model ran (an additive bias mask) leaves the earlier capture as it was.
before = snapshot(swap)
ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", {"src": x, "src_mask": bias_mask}, swap),
                   "finite values")
check(ok_ and snapshot(swap) == before and not leftovers(TMP),
      f"a refused capture leaves the earlier one untouched: {msg}")

# Non-finite weights in the layer: mhascope would refuse its weights file, so nothing is written.
nan_net = nn.Module()
nan_net.add_module("attn", nn.MultiheadAttention(8, 2, batch_first=True))
nan_net.forward = lambda q: nan_net.attn(q, q, q)
with torch.no_grad():
    nan_net.attn.in_proj_weight[1, 2] = float("nan")
ok_, msg = refused(lambda: capture_attention.capture(nan_net, "attn", torch.randn(1, 3, 8), swap),
                   "in_proj_weight has 1 NaN/Inf")
check(ok_ and snapshot(swap) == before, f"NaN weights refused before writing: {msg}")

# A failing write (a full disk) on the fourth file: the earlier capture stays, nothing left behind.
real_write, calls = capture_attention._write_file, []


def full_disk(path, data):
    calls.append(path)
    if len(calls) == 4:
        raise OSError(28, "No space left on device", path)
    real_write(path, data)


capture_attention._write_file = full_disk
try:
    ok_, msg = refused(lambda: capture_attention.capture(dec, "multihead_attn", {"tgt": tgt, "memory": mem}, swap),
                       "No space left on device", "left as it was")
finally:
    capture_attention._write_file = real_write
check(ok_ and snapshot(swap) == before and not leftovers(TMP), f"a failed write leaves the earlier capture: {msg}")

# Where the system cannot swap two folders in one step, the earlier capture is moved aside first.
real_exchange = capture_attention._exchange
capture_attention._exchange = lambda a, b: False
try:
    capture_attention.capture(dec, "multihead_attn", {"tgt": tgt, "memory": mem}, swap)
finally:
    capture_attention._exchange = real_exchange
check("key.npy" in os.listdir(swap) and not leftovers(TMP), f"replaced without an exchange: {sorted(os.listdir(swap))}")
before = snapshot(swap)

# Folders that are not an earlier capture are refused before the model runs, and left alone.
mine = os.path.join(TMP, "mine")
os.makedirs(mine)
open(os.path.join(mine, "notes.txt"), "w").write("mine")
ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, mine), "already holds 'notes.txt'")
check(ok_ and snapshot(mine) == {"notes.txt": b"mine"}, f"a folder holding a user's file is refused: {msg}")
os.remove(os.path.join(mine, "notes.txt"))
open(os.path.join(mine, "query.npy"), "wb").write(b"user data")
ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, mine), "no capture.json")
check(ok_ and snapshot(mine) == {"query.npy": b"user data"}, f"capture-like names without capture.json: {msg}")
os.makedirs(os.path.join(swap, "dump"))
ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, swap), "already holds 'dump'")
check(ok_, f"a capture with a folder added by the user is refused: {msg}")
os.rmdir(os.path.join(swap, "dump"))
plain = os.path.join(TMP, "plain_file")
open(plain, "w").write("x")
ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, plain), "exists and is not a folder")
check(ok_ and open(plain).read() == "x", f"--out naming a file: {msg}")
cwd = os.getcwd()
os.chdir(mine)
try:
    ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, "."), "the current folder")
    check(ok_, f"--out . refused: {msg}")
    ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, ".."), "the current folder")
    check(ok_, f"--out .. refused: {msg}")
finally:
    os.chdir(cwd)
ok_, msg = refused(lambda: capture_attention.capture(enc, "self_attn", x, "/"), "root folder")
check(ok_, f"--out / refused: {msg}")

# SIGTERM / SIGINT while the files are written (sent when the third file is opened): the earlier
# capture stays whole, no temporary folder is left, and the process stops by that signal.
SIGNAL_CHILD = r'''
import builtins, os, runpy, sys
sig, script = int(sys.argv[1]), sys.argv[2]
real_open, opened = builtins.open, []
def open_and_signal(path, mode="r", *a, **k):
    if ".tmp-" in str(path) and "x" in mode:
        opened.append(path)
        if len(opened) == 3:
            os.kill(os.getpid(), sig)
    return real_open(path, mode, *a, **k)
builtins.open = open_and_signal
sys.argv = [script] + sys.argv[3:]
runpy.run_path(script, run_name="__main__")
'''
cross_py = os.path.join(TMP, "cross_model.py")
with open(cross_py, "w") as f:
    f.write("import torch\nfrom torch import nn\ntorch.manual_seed(2)\n"
            "model = nn.TransformerDecoderLayer(d_model=12, nhead=3, dim_feedforward=24, batch_first=True)\n"
            "inputs = {'tgt': torch.randn(2, 4, 12), 'memory': torch.randn(2, 6, 12)}\n")
for sig, name in ((15, "SIGTERM"), (2, "SIGINT")):
    r = subprocess.run([sys.executable, "-c", SIGNAL_CHILD, str(sig), script, "--model", cross_py,
                        "--module", "multihead_attn", "--out", swap], capture_output=True, text=True)
    check(r.returncode == -sig and snapshot(swap) == before and not leftovers(TMP) and "Traceback" not in r.stderr,
          f"{name} while writing: exit by the signal (rc {r.returncode}), the earlier capture intact, no temporary "
          f"folder (stderr: {r.stderr.strip()[:300]})")

# Every bad input is one line `capture_attention: error: …` and exit code 1, never a traceback.
r = subprocess.run([script, "--module", "self_attn", "--out", cli_out], capture_output=True, text=True)
check(one_line_error(r, "--model"), f"no --model: {r.stderr.strip()}")
r = subprocess.run([script, "--model", model_py, "--module", "self_attn", "--out", "/dev/null"],
                   capture_output=True, text=True)
check(one_line_error(r, "/dev/null", "not a folder"), f"--out /dev/null: {r.stderr.strip()}")
uint8_py = os.path.join(TMP, "uint8_model.py")
with open(uint8_py, "w") as f:
    f.write("import torch\nfrom torch import nn\n"
            "model = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)\n"
            "inputs = {'src': torch.randn(1, 3, 8),\n"
            "          'src_key_padding_mask': torch.tensor([[0, 0, 1]], dtype=torch.uint8)}\n")
uint8_out = os.path.join(TMP, "uint8")
r = subprocess.run([script, "--model", uint8_py, "--module", "self_attn", "--out", uint8_out],
                   capture_output=True, text=True)
check(one_line_error(r, "key_padding_mask") and not os.path.exists(uint8_out),
      f"a uint8 key_padding_mask (refused by nn.TransformerEncoderLayer): {r.stderr.strip()}")
bare = nn.Sequential()
bare.add_module("attn", nn.MultiheadAttention(8, 2, batch_first=True))
bare.forward = lambda q: bare.attn(q, q, q, key_padding_mask=torch.tensor([[0, 0, 1]], dtype=torch.uint8))
ok_, msg = refused(lambda: capture_attention.capture(bare, "attn", torch.randn(1, 3, 8), uint8_out),
                   "'attn' was called with a key_padding_mask of dtype torch.uint8")
check(ok_ and not os.path.exists(uint8_out), f"a uint8 key_padding_mask given to the layer itself: {msg}")
for argv, needles in ((["--model", os.path.join(TMP, "missing.py")], ("missing.py", "No such file")),
                      (["--model", TMP], ("is a folder",)),
                      (["--model", plain], ("cannot load --model", "plain_file")),
                      (["--model", model_py, "--input", os.path.join(TMP, "none.npy")], ("none.npy",)),
                      (["--model", model_py, "--call", "-1"], ("--call", "-1")),
                      (["--model", model_py, "--call", "two"], ("--call", "two"))):
    rc, err = main_stderr(*argv, "--module", "self_attn", "--out", os.path.join(TMP, "never"))
    check(rc == 1 and len(err.splitlines()) == 1 and all(n in err for n in needles)
          and not os.path.exists(os.path.join(TMP, "never")), f"{' '.join(argv[-2:])}: {err}")
boom_py = os.path.join(TMP, "boom.py")
open(boom_py, "w").write("import torch\nmodel = torch.nn.Linear(2, 2)\nraise ValueError('no weights here')\n")
rc, err = main_stderr("--model", boom_py, "--module", "self_attn", "--out", os.path.join(TMP, "never"))
check(rc == 1 and "ValueError: no weights here" in err and "boom.py line 3" in err,
      f"an exception in the model file is one line naming it: {err}")

# A uint8 attn_mask, which PyTorch 1.13 still takes (as bool), is captured as that bool mask.
u8 = torch.triu(torch.ones(5, 5, dtype=torch.uint8), diagonal=1)
with warnings.catch_warnings():  # PyTorch's deprecation warning for exactly this mask
    warnings.simplefilter("ignore", UserWarning)
    info = capture_attention.capture(enc, "self_attn", {"src": x, "src_mask": u8}, os.path.join(TMP, "u8_attn"))
saved = np.load(os.path.join(TMP, "u8_attn", "attn_mask.npy"))
check(saved.dtype == np.bool_ and np.array_equal(saved, u8.numpy() != 0), "a uint8 attn_mask is captured as bool")


print(f"{len(failures)} failure(s); files in {TMP}" if failures else "all passed")
if not failures:
    subprocess.run(["rm", "-rf", TMP])
sys.exit(1 if failures else 0)
