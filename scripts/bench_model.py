#!/usr/bin/python3
"""mhascope's whole-model forward beside the PyTorch reference forward, on a GPT-2-small-shaped
checkpoint (12 layers, d_model 768, h 12, V 50257, n_positions 1024, F32 safetensors) with random
weights, every layer's attention weights kept by both sides.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 scripts/bench_model.py \\
        --mhascope build/app/mhascope --folder /tmp/gpt2-small-random --tokens 1024 --rounds 5

The checkpoint is written once into --folder (about 500 MB; nothing is written into the
repository) by scripts/gen_model_fixtures.py's own writer, and the PyTorch side is that script's
reference forward (`gpt2_forward`: it keeps each layer's normed input, attention weights and
residual stream, and computes the logits), run in this process on one thread (torch 1.13 and
OpenBLAS, OPENBLAS_NUM_THREADS=1 set before torch loads: the pthread OpenBLAS ignores
torch.set_num_threads). Rounds alternate: one `mhascope bench --model … --repeat 1 --json` (which
opens the folder, runs one untimed forward, then the timed one) and one timed PyTorch forward, so
both see the same machine state. It prints each round, the medians and PyTorch / ours (> 1:
mhascope is faster).

Memory (--memory SHAPE, SHAPE one of SHAPES below: llama-3.2-3b, llama-3-8b, qwen3-0.6b, gemma-2-2b,
gemma-3-1b, phi-3-mini, olmo-2-1b, smollm3-3b): writes a BF16 checkpoint of that
published shape (values repeat a small random block: memory does not depend on them) in shards of
about 5 GB with model.safetensors.index.json, plus a byte-level tokenizer.json, into --folder; runs
`info --model` and `predict --model … --text <T bytes>` under /usr/bin/time -v, sampling the
process's /proc/PID/status every 20 ms, and prints the peak resident memory (time's maximum RSS)
and, apart, the peak of its anonymous part (RssAnon: the process's own memory; the mapped weights
are page cache, RssFile, which the kernel can drop and read again) and the forward's memory
estimate. --delete removes the folder afterwards.

    /usr/bin/python3 scripts/bench_model.py --memory llama-3-8b --folder /tmp/llama-3-8b-shape --delete
"""
import os

# Before torch (and its BLAS) load: one thread for OpenBLAS's pthread build and for OpenMP.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_forward_torch  # noqa: E402,F401 (pins glibc's malloc thresholds before torch allocates)
import gen_model_fixtures as ref  # noqa: E402
import torch  # noqa: E402

# GPT-2 small as Hugging Face publishes it (huggingface.co/gpt2, config.json).
GPT2_SMALL = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1024,
    "n_ctx": 1024,
    "vocab_size": 50257,
    "layer_norm_epsilon": 1e-5,
    "activation_function": "gelu_new",
    "bos_token_id": 50256,
    "eos_token_id": 50256,
}


# Published config.json of each shape (the values that decide the sizes), from Hugging Face:
# huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json and
# huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json.
SHAPES = {
    "llama-3.2-3b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 3072,
        "intermediate_size": 8192, "num_attention_heads": 24, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": 128000, "eos_token_id": 128001, "attention_bias": False, "mlp_bias": False,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    "llama-3-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": 128000, "eos_token_id": 128001, "attention_bias": False,
    },
    # huggingface.co/Qwen/Qwen3-0.6B/blob/main/config.json: heads of 128 on d_model 1024 (h·d_k = 2048).
    "qwen3-0.6b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
        "intermediate_size": 3072, "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "hidden_act": "silu", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": 151643, "eos_token_id": 151645, "attention_bias": False, "use_sliding_window": False,
        "sliding_window": None, "max_window_layers": 28, "rope_scaling": None,
    },
    # huggingface.co/google/gemma-2-2b: 8 heads of 256 on d_model 2304, softcaps 50 and 30, alternating windows.
    "gemma-2-2b": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
        "intermediate_size": 9216, "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
        "head_dim": 256, "vocab_size": 256000, "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "sliding_window": 4096,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1,
        "attention_bias": False,
    },
    # huggingface.co/google/gemma-3-1b-pt: 4 heads of 256 and one K/V head on d_model 1152, five local layers per global.
    "gemma-3-1b": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 1152,
        "intermediate_size": 6912, "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
        "head_dim": 256, "vocab_size": 262144, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 256, "sliding_window": 512, "sliding_window_pattern": 6,
        "attn_logit_softcapping": None, "final_logit_softcapping": None, "rope_scaling": None,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1,
        "attention_bias": False,
    },
    # huggingface.co/microsoft/Phi-3-mini-4k-instruct: fused qkv_proj and gate_up_proj, 32 heads of 96.
    "phi-3-mini": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
        "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "vocab_size": 32064, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None, "sliding_window": 2047,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1,
        "eos_token_id": 32000, "attention_bias": False,
    },
    # huggingface.co/allenai/OLMo-2-0425-1B: q/k norm over the whole projection, post-norm blocks.
    "olmo-2-1b": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 2048,
        "intermediate_size": 8192, "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16,
        "vocab_size": 100352, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
        "rope_scaling": None, "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": None, "eos_token_id": 100257, "attention_bias": False,
    },
    # huggingface.co/HuggingFaceTB/SmolLM3-3B: every 4th layer without RoPE.
    "smollm3-3b": {
        "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_size": 2048,
        "intermediate_size": 11008, "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 4,
        "vocab_size": 128256, "max_position_embeddings": 65536, "rms_norm_eps": 1e-6, "rope_theta": 5000000.0,
        "rope_scaling": None, "no_rope_layer_interval": 4,
        "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)], "use_sliding_window": False,
        "sliding_window": None, "hidden_act": "silu", "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": 128000, "eos_token_id": 128012, "attention_bias": False,
    },
}


def weights():
    """Random weights of the shape, with GPT-2's initial scale (std 0.02 for the matrices, as its
    initializer_range): realistic magnitudes keep the softmax away from saturation and the
    products away from denormals, which would time something no real model does."""
    W = ref.gpt2_weights(GPT2_SMALL, seed=1)
    for name, t in W.items():
        if t.dim() == 2:
            t.mul_(0.02 / float(t.std()))
    return W


def ensure_folder(folder):
    """Writes config.json + model.safetensors once; an existing folder with the same config is reused."""
    cfg_path = os.path.join(folder, "config.json")
    if os.path.exists(cfg_path) and os.path.exists(os.path.join(folder, "model.safetensors")):
        with open(cfg_path) as f:
            have = json.load(f)
        if all(have.get(k) == v for k, v in GPT2_SMALL.items()):
            return
        sys.exit(f"{folder} holds another model's config.json; name an empty or new --folder")
    if os.path.exists(folder) and os.listdir(folder):
        sys.exit(f"{folder} is not empty and holds no GPT-2-small checkpoint of this script; name a new --folder")
    os.makedirs(folder, exist_ok=True)
    W = weights()
    ref.save_safetensors(os.path.join(folder, "model.safetensors"), W, "F32")
    with open(cfg_path, "w") as f:
        json.dump(dict(GPT2_SMALL, torch_dtype="float32"), f, indent=2)


def read_weights(folder):
    """The checkpoint as float32 tensors, read back from the file as any reader would."""
    import numpy as np
    import struct
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=a).reshape(info["shape"]).copy())
    return out


def seeded_ids(T, V, seed):
    """The same ids as `mhascope bench --model … --tokens T --seed S` (splitmix64, id = z mod V)."""
    mask = (1 << 64) - 1
    x, ids = seed, []
    for _ in range(T):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        ids.append(z % V)
    return ids


def torch_forward_seconds(W, ids):
    t0 = time.perf_counter()
    normed, attn, hidden, logits = ref.gpt2_forward(GPT2_SMALL, W, ids)
    seconds = time.perf_counter() - t0
    del normed, attn, hidden, logits
    return seconds


def ours(args):
    cmd = [args.mhascope, "bench", "--model", args.folder, "--tokens", str(args.tokens), "--repeat", "1",
           "--threads", "1", "--json", "--memory-budget", str(args.memory_budget)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("mhascope bench failed: " + out.stderr.strip())
    return json.loads(out.stdout)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Memory: a checkpoint of a real Llama shape, and the peaks of info and predict on it
# ---------------------------------------------------------------------------------------------
def llama_tensor_shapes(cfg):
    """(name, shape) in Hugging Face's Llama layout, in the order the real shards hold them."""
    d, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    h, N = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // h)
    out = [("model.embed_tokens.weight", (V, d))]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (d,)), (p + "self_attn.q_proj.weight", (h * hd, d)),
                (p + "self_attn.k_proj.weight", (N * hd, d)), (p + "self_attn.v_proj.weight", (N * hd, d)),
                (p + "self_attn.o_proj.weight", (d, h * hd)), (p + "post_attention_layernorm.weight", (d,)),
                (p + "mlp.gate_proj.weight", (F, d)), (p + "mlp.up_proj.weight", (F, d)),
                (p + "mlp.down_proj.weight", (d, F))]
    out.append(("model.norm.weight", (d,)))
    if not cfg["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, d)))
    return out


def tensor_shapes(cfg):
    """(name, shape) of every tensor of the shape's family: Llama's own list, or for the newer families
    the fixtures script's family_weights made on PyTorch's meta device (shapes, no numbers)."""
    if cfg["model_type"] == "llama":
        return llama_tensor_shapes(cfg)
    real = ref.rnd
    ref.rnd = lambda g, *shape, scale=0.2: torch.empty(*shape, device="meta")
    try:
        return [(name, tuple(t.shape)) for name, t in ref.family_weights(cfg, seed=1).items()]
    finally:
        ref.rnd = real


def write_llama_bf16(folder, cfg, shard_bytes=5 << 30):
    """Sharded BF16 safetensors + index + config.json; every tensor's bytes repeat one random block
    of std 0.02 (norm weights 1.0), so the forward stays finite."""
    import numpy as np
    import struct
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(1)
    block = (rng.standard_normal(1 << 20).astype(np.float32) * 0.02).view(np.uint32)
    block = ((block + 0x8000) >> 16).astype("<u2").tobytes()  # round to BF16 (no NaN in the block)
    one = struct.pack("<H", 0x3F80) * 65536  # BF16 1.0
    shards, cur, size = [], [], 0
    for name, shape in tensor_shapes(cfg):
        n = 2 * int(np.prod(shape))
        if cur and size + n > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape, n))
        size += n
    shards.append(cur)
    index = {"metadata": {"total_size": 0}, "weight_map": {}}
    for k, part in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, shape, n in part:
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
            index["weight_map"][name] = fname
            off += n
        index["metadata"]["total_size"] += off
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for name, shape, n in part:
                src = one if name.endswith("norm.weight") else block
                while n > 0:
                    f.write(src[:n])
                    n -= min(n, len(src))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_byte_tokenizer(folder)


def write_byte_tokenizer(folder):
    """A byte-level BPE tokenizer.json with one token per byte (ids 0-255, no merges): the text's
    length in bytes is its length in tokens."""
    b2u = dict(zip(*ref.gpt2_byte_chars()))
    vocab = {b2u[b]: b for b in range(256)}
    tok = {"version": "1.0", "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "vocab": vocab, "merges": []}}
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)


def peak_memory(cmd):
    """Runs cmd under /usr/bin/time -v; returns (exit code, output, time's max RSS in KiB, the peak
    RssAnon and RssFile seen in /proc/PID/status, KiB)."""
    import tempfile
    # Into files, not pipes: a command that prints more than a pipe holds would wait for a reader that only
    # reads after it exits.
    out_f, err_f = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    p = subprocess.Popen(["/usr/bin/time", "-v"] + cmd, stdout=out_f, stderr=err_f, text=True)
    anon = filed = 0
    child = None
    while p.poll() is None:
        try:
            if child is None:
                with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                    kids = f.read().split()
                child = kids[0] if kids else None
            if child is not None:
                with open(f"/proc/{child}/status") as f:
                    for line in f:
                        if line.startswith("RssAnon:"):
                            anon = max(anon, int(line.split()[1]))
                        elif line.startswith("RssFile:"):
                            filed = max(filed, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    p.wait()
    out_f.seek(0)
    err_f.seek(0)
    out, err = out_f.read(), err_f.read()
    maxrss = 0
    for line in err.splitlines():
        if "Maximum resident set size" in line:
            maxrss = int(line.split(":")[1])
    return p.returncode, out + err, maxrss, anon, filed


def forward_estimate(mhascope, folder, T):
    """The forward's memory estimate (every layer's attention kept), from the refusal of a 1 MiB
    budget: nothing is run."""
    out = subprocess.run([mhascope, "bench", "--model", folder, "--tokens", str(T), "--memory-budget", "1"],
                         capture_output=True, text=True)
    at = out.stderr.find("needs about ")
    if at >= 0:
        return out.stderr[at + 12:].split(",")[0]
    return "under 1 MiB" if out.returncode == 0 else "not printed: " + out.stderr.strip()


def memory(a):
    cfg = SHAPES[a.memory]
    folder = a.folder
    if not os.path.exists(os.path.join(folder, "config.json")):
        if os.path.exists(folder) and os.listdir(folder):
            sys.exit(f"{folder} is not empty; name a new --folder")
        t0 = time.time()
        write_llama_bf16(folder, cfg)
        print(f"wrote {folder} in {time.time() - t0:.0f} s", flush=True)
    files = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".safetensors"))
    print(f"shape: {a.memory} (BF16, {files / 2**30:.2f} GiB of safetensors); cpu: {cpu_name()}; "
          f"RAM {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB")
    text = ("The quick brown fox jumps over the lazy dog. " * 64)[: a.text_bytes]
    runs = [("info", [a.mhascope, "info", "--model", folder]),
            (f"predict T={a.text_bytes}", [a.mhascope, "predict", "--model", folder, "--text", text, "--top", "1",
                                           "--memory-budget", str(a.memory_budget)]),
            (f"bench T={a.text_bytes} (every layer's attention kept)",
             [a.mhascope, "bench", "--model", folder, "--text", text, "--repeat", "1",
              "--memory-budget", str(a.memory_budget)])]
    if not a.with_bench:
        runs = runs[:2]
    for label, cmd in runs:
        t0 = time.time()
        rc, out, maxrss, anon, filed = peak_memory(cmd)
        est = [line for line in out.splitlines() if "estimate" in line or "error" in line]
        print(f"{label}: exit {rc}, {time.time() - t0:.1f} s; peak RSS {maxrss / 2**20:.2f} GiB "
              f"(/usr/bin/time -v); peak anonymous {anon / 2**20:.2f} GiB, peak file-backed {filed / 2**20:.2f} GiB "
              f"(/proc/PID/status)" + ("; " + " | ".join(est) if est else ""), flush=True)
    print(f"estimate: {forward_estimate(a.mhascope, folder, a.text_bytes)}")
    if a.delete:
        import shutil
        shutil.rmtree(folder)
        print(f"deleted {folder}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mhascope", default=os.path.join(os.path.dirname(__file__), "..", "build", "app", "mhascope"))
    ap.add_argument("--folder", default="/tmp/gpt2-small-random", help="where the checkpoint is written (reused)")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (at least 5 for a median)")
    ap.add_argument("--memory-budget", type=int, default=8192, help="MiB, passed to mhascope bench")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--memory", choices=sorted(SHAPES), help="measure the memory of this shape instead")
    ap.add_argument("--text-bytes", type=int, default=256, help="--memory: the text's length (one token a byte)")
    ap.add_argument("--delete", action="store_true", help="--memory: delete --folder afterwards")
    ap.add_argument("--with-bench", action="store_true",
                    help="--memory: also `bench --model` (two forwards keeping every layer's attention)")
    a = ap.parse_args()
    if a.memory:
        if a.folder == ap.get_default("folder"):
            a.folder = f"/tmp/{a.memory}-shape"
        return memory(a)
    if a.tokens < 1 or a.tokens > GPT2_SMALL["n_positions"]:
        sys.exit(f"--tokens must be 1 to {GPT2_SMALL['n_positions']} (GPT-2's n_positions), got {a.tokens}")
    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    ensure_folder(a.folder)
    W = read_weights(a.folder)
    ids = torch.tensor(seeded_ids(a.tokens, GPT2_SMALL["vocab_size"], a.seed))
    torch_forward_seconds(W, ids)  # warm-up: PyTorch's first forward allocates its buffers
    with open("/proc/self/maps") as f:
        blas = "OpenBLAS" if "openblas" in f.read() else "another BLAS"
    print(f"cpu: {cpu_name()}, {os.cpu_count()} logical CPUs; torch {torch.__version__} on {blas}, one thread")
    print(f"model: GPT-2-small shape, random F32 weights in {a.folder}; T = {a.tokens}")
    ts, us = [], []
    for r in range(a.rounds):
        j = ours(a)
        us.append(j["forward_ms"]["median"] / 1e3)
        ts.append(torch_forward_seconds(W, ids))
        p = j["parts_median_ms"]
        print(f"round {r + 1}: mhascope {us[-1] * 1e3:.1f} ms (attention {p['attention']:.1f}, MLP {p['mlp']:.1f}, "
              f"logits {p['logits']:.1f}), PyTorch {ts[-1] * 1e3:.1f} ms, PyTorch / ours {ts[-1] / us[-1]:.2f}",
              flush=True)
    ratios = [t / u for t, u in zip(ts, us)]
    print(f"medians of {a.rounds} rounds: mhascope {statistics.median(us) * 1e3:.1f} ms, "
          f"PyTorch {statistics.median(ts) * 1e3:.1f} ms, PyTorch / ours {statistics.median(ratios):.2f} "
          f"(> 1: mhascope is faster)")


if __name__ == "__main__":
    main()
