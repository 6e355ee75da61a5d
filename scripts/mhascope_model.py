#!/usr/bin/python3
"""The model `mhascope train` trains, as a short PyTorch module (torch 1.13, Debian's python3-torch).

    import mhascope_model
    model, meta = mhascope_model.load("m.safetensors")   # load_state_dict(strict=True)
    logits = model(tokens)                               # tokens: (B, T) int64 -> (B, T, V)
    mhascope_model.py m.safetensors                      # checks the checkpoint and prints its sizes

Pre-LayerNorm GPT-style: x = emb(tokens) + pos(t); per block x = x + MHA(LN1(x)) with a causal
mask (and, with mlp=1, x = x + mlp(LN2(x)), mlp = Linear(d, 4d), GELU (exact erf), Linear(4d, d));
logits = out(LNf(x)). The state_dict names are exactly the checkpoint's tensor names.

The attention variants (metadata positions=rope|alibi, kv_heads=N, rope_base) use the separate
projections q_proj (h*d_k, d), k_proj and v_proj (N*d_k, d), o_proj (d, d), written here from the
formulas (torch 1.13 has no RoPE, ALiBi or GQA helpers): RoPE as Hugging Face Llama's rotate_half on
positions 0 .. T-1, ALiBi with the paper's slopes (-m_i (t - j) added to the scaled scores), and
query head i reading K/V head i // (h/N) (repeat_interleave). RoPE and ALiBi models have no pos.

The reader is as strict as mhascope's own (core/io/safetensors.cpp, core/train/checkpoint.cpp):
a file it would refuse raises CheckpointError naming the file and the value, and nothing larger
than what the file holds is allocated, whatever its header or metadata declare. Metadata keys it
does not know are kept in `meta` and otherwise ignored; the evaluations `mhascope train` saves in
the metadata key 'history' are checked by `load` and read by `history(meta)`.
"""
import json
import math
import os
import re
import stat
import struct
import sys

import numpy as np
import torch
from torch import nn


class CheckpointError(Exception):
    """A file that is not a usable checkpoint; the message names the file and the value."""


def alibi_slopes(heads):
    """The ALiBi paper's slopes m_1 .. m_h: 2^(-8i/h) for h a power of two; otherwise those of the
    closest power of two n below h, then every other slope of 2n."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    closest = 1
    while closest * 2 <= heads:
        closest *= 2
    m = power_of_two(closest)
    if closest < heads:
        m += alibi_slopes(2 * closest)[0::2][:heads - closest]
    return m


def rotate_half(x):
    """Hugging Face Llama's rotate_half: (a, b) -> (-b, a) on the halves of the last axis."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class GroupedAttention(nn.Module):
    """Causal self-attention with separate projections, N K/V heads and RoPE or ALiBi."""

    def __init__(self, d_model, heads, kv_heads, positions, rope_base):
        super().__init__()
        self.h, self.n, self.dk = heads, kv_heads, d_model // heads
        self.positions, self.rope_base = positions, rope_base
        self.q_proj = nn.Linear(d_model, heads * self.dk)
        self.k_proj = nn.Linear(d_model, kv_heads * self.dk)
        self.v_proj = nn.Linear(d_model, kv_heads * self.dk)
        self.o_proj = nn.Linear(heads * self.dk, d_model)

    def forward(self, x, mask):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.dk).transpose(1, 2)   # (B, h, T, d_k)
        k = self.k_proj(x).view(B, T, self.n, self.dk).transpose(1, 2)   # (B, N, T, d_k)
        v = self.v_proj(x).view(B, T, self.n, self.dk).transpose(1, 2)
        if self.positions == "rope":
            inv_freq = self.rope_base ** (-torch.arange(0, self.dk, 2, dtype=torch.float64) / self.dk)
            angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
            emb = torch.cat((angles, angles), dim=-1)                       # (T, d_k)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.h // self.n, dim=1)                    # query head i reads K/V head i // (h/N)
        v = v.repeat_interleave(self.h // self.n, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dk)              # (B, h, T, T)
        if self.positions == "alibi":
            t = torch.arange(T)
            distance = (t[:, None] - t[None, :]).to(x.dtype)                # t - j
            slopes = torch.tensor(alibi_slopes(self.h), dtype=x.dtype)
            scores = scores - slopes[:, None, None] * distance
        scores = scores.masked_fill(mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v                              # (B, h, T, d_k)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.h * self.dk))


class Block(nn.Module):
    def __init__(self, d_model, heads, mlp, kv_heads=None, positions="learned", rope_base=10000.0):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        kv_heads = heads if kv_heads is None else kv_heads
        self.separate = positions != "learned" or kv_heads != heads
        if self.separate:
            self.attn = GroupedAttention(d_model, heads, kv_heads, positions, rope_base)
        else:
            self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.has_mlp = mlp
        if mlp:
            self.ln2 = nn.LayerNorm(d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask):
        a = self.ln1(x)
        if self.separate:
            x = x + self.attn(a, mask)
        else:
            x = x + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        if self.has_mlp:
            x = x + self.mlp(self.ln2(x))
        return x


class MhascopeGPT(nn.Module):
    def __init__(self, vocab, seq, d_model, heads, layers, mlp=False, kv_heads=None, positions="learned",
                 rope_base=10000.0):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.learned_positions = positions == "learned"
        if self.learned_positions:  # RoPE and ALiBi act inside attention: no table
            self.pos = nn.Embedding(seq, d_model)
        self.blocks = nn.ModuleList([Block(d_model, heads, mlp, kv_heads, positions, rope_base)
                                     for _ in range(layers)])
        self.lnf = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.emb(tokens)
        if self.learned_positions:
            x = x + self.pos(torch.arange(T))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = blocked
        for block in self.blocks:
            x = block(x, mask)
        return self.out(self.lnf(x))


def state_shapes(vocab, seq, d_model, layers, mlp, heads=1, kv_heads=None, positions="learned"):
    """{state_dict name: shape} of MhascopeGPT with these sizes, computed without building it, so a
    checkpoint can be checked against its own metadata before anything that large is allocated."""
    d, m = d_model, 4 * d_model
    kv_heads = heads if kv_heads is None else kv_heads
    separate = positions != "learned" or kv_heads != heads
    kvw = kv_heads * (d // heads)
    shapes = {"emb.weight": (vocab, d)}
    if positions == "learned":
        shapes["pos.weight"] = (seq, d)
    for i in range(layers):
        p = f"blocks.{i}."
        shapes.update({p + "ln1.weight": (d,), p + "ln1.bias": (d,)})
        if separate:
            for name, rows in (("q_proj", d), ("k_proj", kvw), ("v_proj", kvw), ("o_proj", d)):
                shapes.update({p + f"attn.{name}.weight": (rows, d), p + f"attn.{name}.bias": (rows,)})
        else:
            shapes.update({p + "attn.in_proj_weight": (3 * d, d), p + "attn.in_proj_bias": (3 * d,),
                           p + "attn.out_proj.weight": (d, d), p + "attn.out_proj.bias": (d,)})
        if mlp:
            shapes.update({p + "ln2.weight": (d,), p + "ln2.bias": (d,), p + "mlp.0.weight": (m, d),
                           p + "mlp.0.bias": (m,), p + "mlp.2.weight": (d, m), p + "mlp.2.bias": (d,)})
    shapes.update({"lnf.weight": (d,), "lnf.bias": (d,), "out.weight": (vocab, d), "out.bias": (vocab,)})
    return shapes


# ---------------------------------------------------------------------------------------------
# .safetensors: the reference format's validate() rules, as core/io/safetensors.cpp applies them
# ---------------------------------------------------------------------------------------------

MAX_HEADER_BYTES = 100_000_000  # the reference's MAX_HEADER_SIZE
# Every dtype the format knows (bits per element), so a known-but-unreadable one is "unsupported",
# not "unknown". mhascope reads the first four.
DTYPE_BITS = {"F32": 32, "F64": 64, "F16": 16, "BF16": 16, "BOOL": 8, "U8": 8, "I8": 8, "I16": 16, "U16": 16,
              "I32": 32, "U32": 32, "I64": 64, "U64": 64, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
              "F6_E2M3": 6, "F6_E3M2": 6, "F4": 4, "C64": 64}
READABLE = ("F32", "F64", "F16", "BF16")
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _regular_file_size(path):
    try:
        st = os.stat(path)
    except OSError as e:
        raise CheckpointError(f"cannot open '{path}': {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise CheckpointError(f"cannot read '{path}': it is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):  # FIFOs and devices would block or never end
        raise CheckpointError(f"cannot read '{path}': it is not a regular file")
    return st.st_size


def _refuse_duplicates(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise CheckpointError(f"the header has the key '{k}' twice (a JSON reader would silently keep only "
                                  "the last one)")
        seen.add(k)
    return dict(pairs)


def _refuse_constant(name):
    raise CheckpointError(f"the header is not valid JSON: it holds {name}")


def _is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check_entry(name, e, data_len):
    """dtype, shape and data_offsets of one tensor → (dtype, shape, begin, end); every rule the
    reference checks per tensor, in its order."""
    t = f"tensor '{name}'"
    if not isinstance(e, dict):
        raise CheckpointError(f"{t} must be an object with dtype, shape and data_offsets, got {json.dumps(e)}")
    for key in ("dtype", "shape", "data_offsets"):
        if key not in e:
            raise CheckpointError(f'{t} has no "{key}"')
    dtype, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
    if not isinstance(dtype, str):
        raise CheckpointError(f'{t} dtype must be a string like "F32", got {json.dumps(dtype)}')
    for field, v in (("shape", shape), ("data_offsets", offsets)):
        if not isinstance(v, list) or not all(_is_uint(x) and x < 2**64 for x in v):
            raise CheckpointError(f"{t} {field} must be an array of non-negative integers below 2^64, "
                                  f"got {json.dumps(v)}")
    if len(offsets) != 2:
        raise CheckpointError(f"{t} data_offsets must be [begin, end], got {len(offsets)} values {offsets}")
    if dtype not in DTYPE_BITS:
        raise CheckpointError(f"{t} has unknown dtype '{dtype}' (known: {', '.join(DTYPE_BITS)})")
    begin, end = offsets
    if end < begin:
        raise CheckpointError(f"{t} has data_offsets {offsets} with end < begin")
    if end > data_len:
        raise CheckpointError(f"{t} has data_offsets {offsets} out of range: the data after the header is only "
                              f"{data_len} bytes")
    numel = math.prod(shape)  # Python integers: no overflow, and the byte check below bounds it
    bits = numel * DTYPE_BITS[dtype]
    if bits % 8:
        raise CheckpointError(f"{t} shape {shape} of {dtype} is not a whole number of bytes ({bits} bits)")
    if end - begin != bits // 8:
        raise CheckpointError(f"{t} has {end - begin} bytes (data_offsets {offsets}) but shape {shape} of {dtype} "
                              f"needs {bits // 8} bytes")
    return dtype, shape, begin, end


def _check_tiling(entries, data_len):
    """Sorted by offset, the tensors must cover the data exactly: from 0, no gap, no overlap, no
    trailing bytes."""
    covered, previous = 0, None
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3], kv[0])):
        if begin > covered:
            if previous is None:
                raise CheckpointError(f"the first tensor by offset, '{name}', starts at byte {begin} instead of 0 "
                                      f"(a gap of {begin} bytes)")
            raise CheckpointError(f"gap of {begin - covered} bytes between tensor '{previous}' and '{name}'")
        if begin < covered:
            raise CheckpointError(f"tensor '{name}' (data_offsets [{begin}, {end}]) overlaps tensor '{previous}'")
        covered, previous = end, name
    if covered != data_len:
        raise CheckpointError(f"trailing bytes: the tensors cover {covered} bytes but the data after the header is "
                              f"{data_len} bytes ({data_len - covered} bytes extra)")


def _read_header(f, size):
    """(entries {name: (dtype, shape, begin, end)}, metadata, data start) from an open file of
    `size` bytes; reads the 8-byte length and the header only."""
    if size < 8:
        raise CheckpointError(f"file is only {size} bytes, too short for the 8-byte header length of a "
                              ".safetensors file")
    (n,) = struct.unpack("<Q", f.read(8))
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(f"header length {n} is larger than the limit of {MAX_HEADER_BYTES} bytes")
    if n > size - 8:
        raise CheckpointError(f"header length {n} is larger than the file ({size - 8} bytes after the 8-byte "
                              "length); the file is truncated or not a .safetensors file")
    raw = f.read(n)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(f"the header is not valid UTF-8 (byte 0x{raw[e.start]:02x} at header offset "
                              f"{e.start})") from None
    try:
        header = json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"the header is not valid JSON: {e}") from None
    except RecursionError:
        raise CheckpointError("the header nests too deeply") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"the header is not a JSON object (it is {type(header).__name__})")
    meta = header.pop("__metadata__", None)
    meta = {} if meta is None else meta  # the reference reads null as "no metadata"
    if not isinstance(meta, dict):
        raise CheckpointError(f"__metadata__ must be an object of string values, got {json.dumps(meta)[:80]}")
    for k, v in meta.items():
        if not isinstance(v, str):
            raise CheckpointError(f"__metadata__ value for '{k}' must be a string, got {json.dumps(v)[:80]}")
    data_len = size - 8 - n
    entries = {name: _check_entry(name, e, data_len) for name, e in header.items()}
    _check_tiling(entries, data_len)
    return entries, meta, 8 + n


def _decode(name, dtype, shape, raw):
    """The tensor's bytes → float64 array, with the NaN/Inf guard: never silently zeroed."""
    if dtype == "BF16":  # bfloat16 is the top half of a float32
        a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.frombuffer(raw, dtype={"F32": "<f4", "F64": "<f8", "F16": "<f2"}[dtype])
    a = a.astype(np.float64)
    bad = ~np.isfinite(a)
    problems = []
    if bad.any():
        nan = int(np.isnan(a).sum())
        problems.append(f"tensor '{name}' has {nan} NaN and {int(bad.sum()) - nan} Inf values (of {a.size}, the "
                        f"first at flat index {int(np.flatnonzero(bad)[0])})")
    if dtype == "F64":  # mhascope computes in float32: a finite value beyond it is as unusable
        over = np.isfinite(a) & (np.abs(a) > FLOAT32_MAX)
        if over.any():
            first = int(np.flatnonzero(over)[0])
            problems.append(f"tensor '{name}' has {int(over.sum())} F64 values outside the float32 range "
                            f"(±{FLOAT32_MAX:.6g}), the first {a[first]:.6g} at flat index {first}")
    return a.reshape(shape), problems


def read_safetensors(path):
    """(tensors as float64 torch tensors, metadata dict) of an F32/F64/F16/BF16 .safetensors file.
    The header is checked against the file's size before any tensor data is read."""
    size = _regular_file_size(path)  # its messages name the file already
    try:
        with open(path, "rb") as f:
            entries, meta, start = _read_header(f, size)
            for name in sorted(entries):
                if entries[name][0] not in READABLE:
                    raise CheckpointError(f"unsupported dtype {entries[name][0]} for tensor '{name}'; mhascope reads "
                                          f"{', '.join(READABLE)} (convert with tensor.float())")
            f.seek(start)
            data = f.read()  # exactly the size the header accounts for: the tiling check above
            if len(data) != size - start:
                raise CheckpointError(f"the file changed while it was read ({size} bytes, then {start + len(data)})")
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None
    except OSError as e:
        raise CheckpointError(f"cannot read '{path}': {e.strerror or e}") from None
    except MemoryError:
        raise CheckpointError(f"{path}: not enough memory to read the {size}-byte file") from None
    tensors, problems = {}, []
    for name in sorted(entries):
        dtype, shape, begin, end = entries[name]
        a, bad = _decode(name, dtype, shape, data[begin:end])
        problems += bad
        tensors[name] = torch.from_numpy(a)
    if problems:
        raise CheckpointError(f"{path}: values mhascope cannot use, never silently zeroed; " + "; ".join(problems))
    return tensors, meta


# ---------------------------------------------------------------------------------------------
# The checkpoint's metadata: core/train/checkpoint.cpp's rules
# ---------------------------------------------------------------------------------------------

# (key, lowest, highest). The seed spans the whole uint64, as `mhascope train --seed` takes it; the
# period is read for the induction task only (the other tasks have no period: what is stored there
# is not used).
INTEGER_KEYS = (("vocab", 2, 1 << 16), ("seq", 2, 4096), ("d_model", 1, 4096), ("heads", 1, 4096),
                ("layers", 1, 4), ("mlp", 0, 1), ("step", 0, 1 << 40))
PERIOD_KEYS = (("period_min", 1, 4096), ("period_max", 1, 4096))
TASKS = ("induction", "reverse", "sort", "text")
# What the C++ reader's from_chars takes: no '+', spaces or '_', leading zeros read as decimal
# ("064" is 64); an unsigned value takes no '-' at all.
_DECIMAL = re.compile(r"-?[0-9]+")
POSITIONS = ("learned", "rope", "alibi")
# A decimal number as strtod reads it (no hex, inf or nan: those are refused as not finite anyway).
_FLOAT = re.compile(r"\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_UNSIGNED = re.compile(r"[0-9]+")


def _task_problems(task, cfg):
    """The rules the task's settings must meet before mhascope can rebuild its probe batch."""
    vocab, seq = cfg["vocab"], cfg["seq"]
    out = []
    if task == "induction":
        k_min, k_max = cfg["period_min"], cfg["period_max"]
        if k_min < 1 or k_max < k_min:
            out.append(f"the period range must satisfy 1 <= k_min <= k_max, got {k_min} .. {k_max}")
        if seq < 2 * k_max:
            out.append(f"T ({seq}) must be at least 2 * k_max = {2 * k_max} so every sequence repeats its period "
                       "at least once")
        if vocab < max(2, k_max):
            out.append(f"vocab ({vocab}) must be at least max(2, k_max = {k_max}): a period holds distinct tokens")
    elif task in ("reverse", "sort"):
        if vocab < 3:
            out.append(f"vocab ({vocab}) must be at least 3: two symbols and the separator SEP")
        if seq < 3:
            out.append(f"T ({seq}) must be at least 3 for a_1 SEP a_1")
    if not out:
        return []
    return [f"its task settings cannot work: the {task} task settings cannot work: " + "; ".join(out)]


def _check_metadata(meta):
    """(the integer settings, the problems found); every problem, not just the first."""
    problems, cfg = [], {}

    def text(key):
        if key not in meta:
            problems.append(f"metadata '{key}' is missing")
        return meta.get(key, "")

    def integer(key, lo, hi, pattern=_DECIMAL):
        v = text(key)
        if key in meta:
            if pattern.fullmatch(v) and lo <= int(v) <= hi:
                cfg[key] = int(v)
            else:
                problems.append(f"metadata '{key}' is '{v}', expected an integer in {lo} .. {hi}")

    fmt, version = text("format"), text("version")
    if "format" in meta and fmt != "mhascope-gpt":
        problems.append(f"metadata 'format' is '{fmt}', expected 'mhascope-gpt'")
    if "version" in meta and version != "1":
        problems.append(f"metadata 'version' is '{version}', expected '1'")
    for key, lo, hi in INTEGER_KEYS:
        integer(key, lo, hi)
    integer("seed", 0, 2**64 - 1, _UNSIGNED)
    task = text("task")
    if "task" in meta and task not in TASKS:
        problems.append(f"metadata 'task' is '{task}', expected induction, reverse, sort or text")
    if task == "induction":
        for key, lo, hi in PERIOD_KEYS:
            integer(key, lo, hi)
    if task == "text" and "alphabet" in meta:
        try:
            alphabet = json.loads(meta["alphabet"], object_pairs_hook=_refuse_duplicates,
                                  parse_constant=_refuse_constant)
            ok = isinstance(alphabet, list) and all(isinstance(c, str) for c in alphabet)
        except (ValueError, CheckpointError, RecursionError):
            ok = False
        if not ok:
            problems.append("metadata 'alphabet' is not a JSON array of strings")
        elif "vocab" in cfg and len(alphabet) != cfg["vocab"]:
            problems.append(f"metadata 'alphabet' has {len(alphabet)} characters but vocab is {cfg['vocab']}")
    elif task == "text":
        text("alphabet")
    if cfg.get("d_model") and cfg.get("heads") and cfg["d_model"] % cfg["heads"]:
        problems.append(f"metadata d_model ({cfg['d_model']}) is not divisible by heads ({cfg['heads']})")
    # The attention variant: absent in checkpoints of plain models (learned positions, N = h).
    cfg["positions"] = "learned"
    if "positions" in meta:
        if meta["positions"] in POSITIONS:
            cfg["positions"] = meta["positions"]
        else:
            problems.append(f"metadata 'positions' is '{meta['positions']}', expected learned, rope or alibi")
    if "kv_heads" in meta:
        integer("kv_heads", 1, 4096)
    if "rope_base" in meta:
        v = meta["rope_base"]
        try:
            base = float(v) if _FLOAT.fullmatch(v) else math.nan
        except ValueError:
            base = math.nan
        if cfg["positions"] != "rope":
            problems.append(f"metadata 'rope_base' is set but positions are {cfg['positions']}")
        elif not (math.isfinite(base) and 0 < base <= FLOAT32_MAX):
            problems.append(f"metadata 'rope_base' is '{v}', expected a finite number > 0")
        else:
            cfg["rope_base"] = float(np.float32(base))
    elif cfg["positions"] == "rope":
        problems.append("metadata 'rope_base' is missing (positions are rope)")
    heads, kv = cfg.get("heads"), cfg.get("kv_heads")
    if heads and kv and (kv > heads or heads % kv):
        problems.append(f"metadata kv_heads ({kv}) does not divide heads ({heads})")
    if (not problems and ("positions" in meta or "kv_heads" in meta) and cfg["positions"] == "learned"
            and cfg.get("kv_heads", heads) == heads):
        problems.append("metadata 'positions' / 'kv_heads' describe a plain model (learned positions, N = h): such "
                        "a checkpoint has neither key and uses the in_proj names")
    if not problems and cfg["positions"] == "rope" and (cfg["d_model"] // cfg["heads"]) % 2:
        problems.append(f"positions are rope but d_k = d_model / heads = {cfg['d_model'] // cfg['heads']} is odd")
    if not problems and task != "text":
        # The stored task must be one the commands can rebuild: said here, with the file's name.
        problems += _task_problems(task, cfg)
    return cfg, problems


def load(path, dtype=torch.float64):
    """(MhascopeGPT with the checkpoint's weights, its metadata). Raises CheckpointError listing every
    problem. The model is built only once the file's tensors match the sizes its metadata declares,
    so a small file cannot make it allocate more than the file holds."""
    tensors, meta = read_safetensors(path)
    cfg, problems = _check_metadata(meta)
    sizes_ok = not problems
    if sizes_ok:
        want = state_shapes(cfg["vocab"], cfg["seq"], cfg["d_model"], cfg["layers"], cfg["mlp"] == 1, cfg["heads"],
                            cfg.get("kv_heads"), cfg["positions"])
        for name, shape in want.items():
            if name not in tensors:
                problems.append(f"missing tensor '{name}' {list(shape)}")
            elif tuple(tensors[name].shape) != shape:
                problems.append(f"'{name}' has shape {list(tensors[name].shape)}, expected {list(shape)}")
        problems += [f"unexpected tensor '{n}' {list(t.shape)}" for n, t in sorted(tensors.items()) if n not in want]
    if sizes_ok and not problems and "history" in meta:  # older checkpoints have no history block
        try:
            _parse_history(meta["history"], cfg["layers"], cfg["heads"], cfg["step"])
        except CheckpointError as e:
            problems.append(str(e))
    if problems:
        note = ("" if sizes_ok else
                " (tensor names and shapes were not checked: the sizes in the metadata are needed first)")
        raise CheckpointError(f"{path} is not a usable mhascope checkpoint: " + "; ".join(problems) + note)
    model = MhascopeGPT(cfg["vocab"], cfg["seq"], cfg["d_model"], cfg["heads"], cfg["layers"], cfg["mlp"] == 1,
                        cfg.get("kv_heads"), cfg["positions"], cfg.get("rope_base", 10000.0)).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    return model, meta


HEAD_SCORES = ("prev_token", "induction", "self", "first_token", "entropy", "copying", "prev_token_new",
               "prev_token_seen")
# core/train/checkpoint.hpp: the history block's limits.
MAX_SAVED_EVALUATIONS = 4096
MAX_HISTORY_BYTES = 32 << 20
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|"|[\[\]{}]')


def max_saved_evaluations(layers, heads):
    """About a million numbers at most, and never more than MAX_SAVED_EVALUATIONS."""
    return min(max(1_000_000 // (4 + len(HEAD_SCORES) * max(1, layers) * max(1, heads)), 2), MAX_SAVED_EVALUATIONS)


def _json_int(s):
    """An integer as nlohmann's parser keeps it: int64 or uint64, else a double (inf refused)."""
    v = int(s)
    return v if -2**63 <= v < 2**64 else _json_float(s)


def _json_float(s):
    v = float(s)
    if not math.isfinite(v):
        raise ValueError(f"number overflow parsing '{s[:40]}'")
    return v


def _parse_json(text):
    return json.loads(text, parse_constant=_refuse_constant, parse_int=_json_int, parse_float=_json_float,
                      object_pairs_hook=_refuse_duplicates)


def _skeleton(text):
    """(deepest nesting, containers opened at depth 3, the text with each depth-3 container emptied).
    The skeleton is the block with its rows' numbers left out, so how many rows it holds is known
    before the rows are parsed into objects."""
    depth = deepest = rows = 0
    pieces, kept = [], 0
    for m in _JSON_TOKEN.finditer(text):
        t = m.group()
        if t[0] == '"':
            if len(t) == 1:  # an unterminated string: the rest of the text is inside it
                break
            continue
        if t in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if depth == 3:
                rows += 1
                pieces.append(text[kept:m.end()])
        else:
            if depth == 3:
                kept = m.start()
            depth -= 1
    pieces.append(text[kept:])
    return deepest, rows, "".join(pieces)


def _parse_history(text, layers, heads, last_step):
    """core/train/checkpoint.cpp's parseHistoryMetadata: the same rules in the same order."""
    def bad(why):
        return CheckpointError("metadata 'history' " + why)

    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_HISTORY_BYTES:
        raise bad(f"is {size} bytes, more than the limit of {MAX_HISTORY_BYTES}")
    deepest, containers, skeleton = _skeleton(text)
    if deepest > 3:
        raise bad("nests deeper than the block's 3 levels")
    cap = max_saved_evaluations(layers, heads)
    # More rows than the cap: the checks up to the count run on the skeleton, so a block of many
    # rows is refused without building them.
    try:
        h = _parse_json(skeleton if containers > cap else text)
    except (ValueError, CheckpointError, RecursionError):
        raise bad("is not valid JSON") from None
    if not isinstance(h, dict):
        raise bad("is not a JSON object")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    version = h.get("version")
    if is_int(version) and version == 1:
        return []  # the earlier induction score: not comparable, not shown
    if not is_int(version) or version != 2:
        raise bad("has no version or an unknown one (this reader reads version 2)")
    jl, jh, rows = h.get("layers"), h.get("heads"), h.get("evaluations")
    if not (is_int(jl) and is_int(jh) and jl == layers and jh == heads):
        raise bad(f"is for other sizes than the model's ({layers} layers, {heads} heads)")
    if not isinstance(rows, list):
        raise bad("has no 'evaluations' array")
    if len(rows) > cap:
        raise bad(f"holds {len(rows)} evaluations, more than the {cap} a checkpoint of these sizes keeps")
    if containers > cap:  # not reached: the skeleton holds every row; parse the rows' values now
        return _parse_history(text, layers, heads, last_step)
    n = len(HEAD_SCORES)
    columns = 4 + n * layers * heads

    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    out = []
    for k, r in enumerate(rows):
        where = f"evaluation {k}"
        if not isinstance(r, list) or len(r) != columns:
            raise bad(f"{where} is not an array of {columns} numbers")
        if not is_int(r[0]):
            raise bad(f"{where}: the step is not an integer")
        step = r[0] - 2**64 if r[0] >= 2**63 else r[0]  # read as int64, as the C++ reader does
        if step < 0 or step > last_step or (out and step <= out[-1]["step"]):
            raise bad(f"{where} has step {step}: steps must increase and not pass the checkpoint's step {last_step}")
        if not number(r[1]) or not number(r[2]):
            raise bad(f"{where}: the probe loss and accuracy must be numbers")
        if r[3] is not None and not number(r[3]):
            raise bad(f"{where}: the train loss must be a number or null")
        if not all(number(v) for v in r[4:]):
            raise bad(f"{where}: a head score is not a finite number")
        scores = [dict(zip(HEAD_SCORES, r[4 + n * i:4 + n * (i + 1)])) for i in range(layers * heads)]
        out.append({"step": step, "probe_loss": r[1], "probe_accuracy": r[2], "train_loss": r[3],
                    "heads": [scores[li * heads:(li + 1) * heads] for li in range(layers)]})
    return out


def history(meta):
    """The evaluations `mhascope train` saved in the checkpoint's metadata 'history' (version 2), as
    [{"step", "probe_loss", "probe_accuracy", "train_loss" (None before the first step),
    "heads": [layer][head] {prev_token, induction, self, first_token, entropy, copying,
    prev_token_new, prev_token_seen}}], or [] for a checkpoint written before the block existed or
    with a version-1 block (its induction score was defined otherwise). The block is checked
    against the metadata's sizes and step, as `load` checks it."""
    if "history" not in meta:
        return []
    cfg, problems = _check_metadata(meta)
    if problems:
        raise CheckpointError("; ".join(problems))
    return _parse_history(meta["history"], cfg["layers"], cfg["heads"], cfg["step"])


def main(argv=None):
    """mhascope_model.py CHECKPOINT: checks it as `load` does and prints its sizes, or one error line."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if len(argv) != 1 or argv[0].startswith("-"):
            raise CheckpointError("usage: mhascope_model.py CHECKPOINT.safetensors (checks it and prints its sizes)")
        model, meta = load(argv[0])
        keys = ("vocab", "seq", "d_model", "heads", "layers", "mlp", "task", "step", "seed")
        keys += tuple(k for k in ("positions", "kv_heads", "rope_base") if k in meta)
        n = sum(p.numel() for p in model.parameters())
        evals = history(meta)  # load checked it already
        cfg, _ = _check_metadata(meta)  # the values as read: "064" is 64
        line = (f"{argv[0]}: " + " ".join(f"{k}={cfg.get(k, meta[k])}" for k in keys) + f"; {n} parameters"
                + (f"; {len(evals)} saved evaluations, the last at step {evals[-1]['step']}" if evals else ""))
        try:  # written out now: a full disk or a closed pipe is this one-line error, not one at exit
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except (OSError, ValueError) as e:
            try:  # what is still buffered would fail again when Python exits: send it nowhere
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            raise CheckpointError(f"cannot write to standard output: {getattr(e, 'strerror', None) or e}") from None
        return 0
    except CheckpointError as e:
        print(f"mhascope_model: error: {e}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - whatever went wrong, one line, never a traceback
        print(f"mhascope_model: error: {type(e).__name__}: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
