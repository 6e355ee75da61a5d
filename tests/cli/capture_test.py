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

print(f"{len(failures)} failure(s); files in {TMP}" if failures else "all passed")
if not failures:
    subprocess.run(["rm", "-rf", TMP])
sys.exit(1 if failures else 0)
