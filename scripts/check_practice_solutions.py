#!/usr/bin/python3
"""Checks the practice exercises' reference solutions against PyTorch's own attention, independently
of mhascope's engine and of the app's harness.

    check_practice_solutions.py ROOT              every assets/practice/<id>.solution.py
    check_practice_solutions.py ROOT FILE ...     these files instead (each names its exercise on
                                                  its first line, "# mhascope exercise: <id>")
    --stages                                      also name the first stage (variable) where a file's
                                                  values leave those of its exercise's solution
    --list-cases                                  print the cases' sizes, one line each (the exercises'
                                                  test compares them with core/practice/exercises.cpp's)

The reference for every case is torch.nn.functional.multi_head_attention_forward with separate
projection weights set from W_q, W_k, W_v, W_o and no biases (grouped-query attention: the K/V
projections' heads copied to their query heads with repeat_interleave first; RoPE: the rotation of
Hugging Face transformers' models/llama/modeling_llama.py, rotate_half and apply_rotary_pos_emb, applied
to the projected q and k, which then enter the same attention through identity projections). A
decoding case runs the step method one token at a time and compares each step with the causal
forward's row. A case that must raise passes only on ValueError or AssertionError.

The cases' sizes are those of core/practice/exercises.cpp. Run with Debian's /usr/bin/python3
(torch 1.13 + numpy). Exit status 0 when every case of every file passes.
"""
import argparse
import importlib.util
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # importing the files checked leaves no __pycache__ beside them

TOLERANCE = 1e-4  # max |a - b| / (1 + max |b|)


def case(cid, B=1, T=6, Tk=None, d=24, h=4, N=0, mask=None, causal=False, rope=False, scale=1.0, raises=False,
         decode=False, seed=1):
    return dict(id=cid, B=B, Tq=T, Tk=Tk if Tk is not None else T, d=d, h=h, N=N or h, mask=mask,
                cross=Tk is not None, causal=causal, rope=rope, scale=scale, raises=raises, decode=decode,
                seed=seed)


def self_cases(seed0, with_cross):
    cases = [
        case("self", seed=seed0 + 1), case("batch", B=3, seed=seed0 + 2),
        case("causal", mask="causal", seed=seed0 + 3), case("padding", B=2, mask="padding", seed=seed0 + 4),
    ]
    if with_cross:
        cases.append(case("cross", T=4, Tk=7, seed=seed0 + 5))
    return cases + [
        case("one_head", h=1, seed=seed0 + 6), case("head_per_feature", d=8, h=8, seed=seed0 + 7),
        case("indivisible", d=10, h=4, raises=True, seed=seed0 + 8), case("large_scores", scale=30.0, seed=seed0 + 9),
    ]


# The cases of each exercise, with core/practice/exercises.cpp's sizes and seeds.
CASES = {
    "mha": self_cases(100, True),
    "mha_single_head": self_cases(200, False),
    "mha_numpy": self_cases(300, False),
    "causal": [
        case("self", causal=True, seed=401), case("batch", B=3, causal=True, seed=402),
        case("one_head", h=1, causal=True, seed=403), case("head_per_feature", d=8, h=8, causal=True, seed=404),
        case("one_token", T=1, causal=True, seed=405), case("large_scores", causal=True, scale=30.0, seed=406),
        case("indivisible", d=10, h=4, causal=True, raises=True, seed=407),
    ],
    "gqa_kv_cache": [
        case("gqa", h=4, N=2, causal=True, seed=501), case("mqa", h=4, N=1, causal=True, seed=502),
        case("mha", h=4, N=4, causal=True, seed=503), case("decode", h=4, N=2, causal=True, decode=True, seed=504),
        case("indivisible", h=4, N=3, causal=True, raises=True, seed=505),
    ],
    "rope": [
        case("self", causal=True, rope=True, seed=601), case("batch", B=3, causal=True, rope=True, seed=602),
        case("one_head", h=1, causal=True, rope=True, seed=603),
        case("large_scores", causal=True, rope=True, scale=30.0, seed=604),
        case("indivisible", d=10, h=4, causal=True, rope=True, raises=True, seed=605),
    ],
}
ENTRY = {"mha": "MultiHeadAttention", "mha_single_head": "MultiHeadSelfAttention", "mha_numpy": "multi_head_attention",
         "causal": "CausalSelfAttention", "gqa_kv_cache": "GroupedQueryAttention", "rope": "RotaryAttention"}


# [inputs] ----------------------------------------------------------------------------------------

def make_inputs(c):
    """Inputs and weights of a case: x (B, T, d_model) and W as y = x W, (d_in, d_out)."""
    g = torch.Generator().manual_seed(c["seed"])
    d, h, N = c["d"], c["h"], c["N"]
    d_k = d // h if d % h == 0 else max(1, d // h)
    bound = math.sqrt(3.0 / d)

    def weight(cols):
        return (torch.rand(d, cols, generator=g) * 2 - 1) * bound  # (d_model, cols)

    out = {"query": torch.randn(c["B"], c["Tq"], d, generator=g) * c["scale"]}
    if c["cross"]:
        out["key"] = torch.randn(c["B"], c["Tk"], d, generator=g) * c["scale"]
    else:
        out["key"] = out["query"]
    out["value"] = out["key"]
    kv = d if N == h else N * d_k  # the K/V projections' outputs, N·d_k
    out["W_q"], out["W_k"], out["W_v"], out["W_o"] = weight(d), weight(kv), weight(kv), weight(d)
    Tq, Tk = c["Tq"], c["Tk"]
    if c["mask"] == "causal":
        out["mask"] = torch.ones(Tq, Tk, dtype=torch.bool).triu(1)  # (T_q, T_k), True = key after query
    elif c["mask"] == "padding":
        pad = torch.zeros(c["B"], Tk, dtype=torch.bool)  # (B, T_k): item b hides its last b % (T_k - 1) + 1 keys
        for b in range(c["B"]):
            pad[b, Tk - (b % (Tk - 1) + 1):] = True
        out["padding"] = pad
        out["mask"] = pad[:, None, None, :]  # (B, 1, 1, T_k)
    return out


# [reference] -------------------------------------------------------------------------------------

def torch_attention(q_in, k_in, v_in, Wq, Wk, Wv, Wo, h, attn_mask=None, key_padding_mask=None):
    """PyTorch's multi-head attention, batch first, no biases; W as y = x W."""
    d = q_in.shape[-1]
    out, _ = F.multi_head_attention_forward(
        q_in.transpose(0, 1), k_in.transpose(0, 1), v_in.transpose(0, 1), d, h,
        None, None, None, None, False, 0.0, Wo.t(), None, training=False,
        key_padding_mask=key_padding_mask, need_weights=False, attn_mask=attn_mask,
        use_separate_proj_weight=True, q_proj_weight=Wq.t(), k_proj_weight=Wk.t(), v_proj_weight=Wv.t())
    return out.transpose(0, 1)  # (B, T_q, d_model)


def llama_rotate_half(x):
    # rotate_half of transformers' modeling_llama.py: (x1, x2) halves -> (-x2, x1).
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def llama_apply_rotary_pos_emb(q, k, cos, sin):
    # apply_rotary_pos_emb of modeling_llama.py: q * cos + rotate_half(q) * sin, the same for k.
    return q * cos + llama_rotate_half(q) * sin, k * cos + llama_rotate_half(k) * sin


def llama_cos_sin(T, d_k, base=10000.0):
    # LlamaRotaryEmbedding: inv_freq = 1 / base^(arange(0, d_k, 2) / d_k), emb = cat(freqs, freqs).
    inv_freq = 1.0 / (base ** (torch.arange(0, d_k, 2).float() / d_k))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, d_k)
    return emb.cos(), emb.sin()


def reference(c, inp):
    d, h, N = c["d"], c["h"], c["N"]
    d_k = d // h
    Wq, Wk, Wv, Wo = inp["W_q"], inp["W_k"], inp["W_v"], inp["W_o"]
    if N != h:
        # Query head i reads K/V head i // (h / N): copy each K/V head's d_k columns to its group.
        Wk = Wk.view(d, N, d_k).repeat_interleave(h // N, dim=1).reshape(d, d)
        Wv = Wv.view(d, N, d_k).repeat_interleave(h // N, dim=1).reshape(d, d)
    attn_mask = None
    if c["causal"] or c["mask"] == "causal":
        attn_mask = torch.ones(c["Tq"], c["Tk"], dtype=torch.bool).triu(1)
    pad = inp.get("padding")
    q_in, k_in = inp["query"], inp["key"]
    if c["rope"]:
        B, T = c["B"], c["Tq"]
        q = (q_in @ Wq).view(B, T, h, d_k).transpose(1, 2)
        k = (k_in @ Wk).view(B, T, h, d_k).transpose(1, 2)
        cos, sin = llama_cos_sin(T, d_k)
        q, k = llama_apply_rotary_pos_emb(q, k, cos, sin)
        q_in = q.transpose(1, 2).reshape(B, T, d)
        k_in = k.transpose(1, 2).reshape(B, T, d)
        eye = torch.eye(d)
        return torch_attention(q_in, k_in, inp["value"], eye, eye, Wv, Wo, h, attn_mask, pad)
    return torch_attention(q_in, k_in, inp["value"], Wq, Wk, Wv, Wo, h, attn_mask, pad)


# [the file under test] ---------------------------------------------------------------------------

def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def declared_exercise(path):
    with open(path, encoding="utf-8") as f:
        first = f.readline().strip()
    prefix = "# mhascope exercise:"
    return first[len(prefix):].strip() if first.startswith(prefix) else None


def build(ex, module, c, inp):
    """The learner's module with the case's weights loaded (nn.Linear stores W transposed)."""
    cls = getattr(module, ENTRY[ex])
    args = (c["d"], c["h"], c["N"]) if ex == "gqa_kv_cache" else (c["d"], c["h"])
    m = cls(*args)
    with torch.no_grad():
        for name in ("W_q", "W_k", "W_v", "W_o"):
            layer = getattr(m, name)
            if tuple(layer.weight.shape) != tuple(inp[name].t().shape):
                raise LoadError(f"{name}.weight is {tuple(layer.weight.shape)}, the case's {name}ᵀ "
                                f"{tuple(inp[name].t().shape)}")
            layer.weight.copy_(inp[name].t())
    return m


class LoadError(Exception):
    pass


def call(ex, module, c, inp):
    if ex == "mha_numpy":
        kwargs = {"mask": inp["mask"].numpy()} if "mask" in inp else {}
        out = module.multi_head_attention(inp["query"].numpy(), inp["W_q"].numpy(), inp["W_k"].numpy(),
                                          inp["W_v"].numpy(), inp["W_o"].numpy(), c["h"], **kwargs)
        return torch.from_numpy(np.asarray(out, dtype=np.float32))
    m = build(ex, module, c, inp)
    with torch.no_grad():
        if ex == "mha":
            kwargs = {"mask": inp["mask"]} if "mask" in inp else {}
            return m(inp["query"], inp["key"], inp["value"], **kwargs)
        if ex == "mha_single_head":
            kwargs = {"mask": inp["mask"]} if "mask" in inp else {}
            return m(inp["query"], **kwargs)
        if c["decode"]:
            rows, cache = [], None
            for t in range(c["Tq"]):
                out_t, cache = m.step(inp["query"][:, t:t + 1], cache)
                rows.append(out_t)
            return torch.cat(rows, dim=1)
        return m(inp["query"])


def run_case(ex, module, c):
    """(passed, max |difference|, why)."""
    inp = make_inputs(c)
    try:
        out = call(ex, module, c, inp)
    except (ValueError, AssertionError) as e:
        if c["raises"]:
            return True, 0.0, f"raised {type(e).__name__}"
        return False, math.inf, f"raised {type(e).__name__}: {e}"
    except Exception as e:  # the file's own failure: reported, never fatal to the check
        return False, math.inf, f"raised {type(e).__name__}: {e}"
    if c["raises"]:
        return False, math.inf, "did not raise ValueError or AssertionError"
    expected = reference(c, inp)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(expected.shape):
        shape = tuple(out.shape) if hasattr(out, "shape") else type(out).__name__
        return False, math.inf, f"returned {shape} where {tuple(expected.shape)} is expected"
    out = out.float()
    if not torch.isfinite(out).all():
        return False, math.inf, f"{int((~torch.isfinite(out)).sum())} non-finite values"
    diff = float((out - expected).abs().max())
    scale = 1.0 + float(expected.abs().max())
    if diff / scale > TOLERANCE:
        return False, diff, f"differs by {diff:.3g} (max |Δ|)"
    return True, diff, ""


# [stages] ----------------------------------------------------------------------------------------

STAGE_NAMES = ["q", "k", "v", "q_heads", "k_heads", "v_heads", "q_rotated", "k_rotated", "scores",
               "scaled_scores", "masked_scores", "weights", "head_outputs", "concat", "output"]


def traced_locals(path, fn):
    """The stage-named tensor locals of every call into `path`'s functions, in the order they returned."""
    seen = []
    real = os.path.realpath(path)

    def tracer(frame, event, arg):
        if os.path.realpath(frame.f_code.co_filename) != real:
            return None

        def local(frame, event, arg):
            if event == "return":
                for name in STAGE_NAMES:
                    value = frame.f_locals.get(name)
                    if isinstance(value, (torch.Tensor, np.ndarray)):
                        seen.append((frame.f_code.co_name + "." + name, torch.as_tensor(np.asarray(value))))
            return local
        return local

    sys.settrace(tracer)
    try:
        fn()
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return seen


def first_stage_difference(ex, path, solution, c):
    inp = make_inputs(c)
    ref = traced_locals(solution, lambda: call(ex, load_module(solution, "ref_" + ex), c, inp))
    got = traced_locals(path, lambda: call(ex, load_module(path, "under_test"), c, inp))
    # The n-th value a name took in the file under test against its n-th value in the solution, in
    # the order the solution made them: the first that differs is where the file goes wrong.
    got_by_name, counts = {}, {}
    for name, value in got:
        got_by_name.setdefault(name, []).append(value)
    for name, value in ref:
        n = counts.get(name, 0)
        counts[name] = n + 1
        others = got_by_name.get(name, [])
        where = name + (f" (call {n + 1})" if n else "")
        if n >= len(others):
            return where + " missing"
        other = others[n]
        if other.shape != value.shape:
            return where + f" shape {tuple(other.shape)} vs {tuple(value.shape)}"
        if not torch.allclose(other.float(), value.float(), atol=1e-4, rtol=1e-4, equal_nan=True):
            return where
    return "none"


# [main] ------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--stages", action="store_true")
    parser.add_argument("--list-cases", action="store_true")
    args = parser.parse_args()
    if args.list_cases:
        for ex, cases in CASES.items():
            for c in cases:
                print(f"{ex}/{c['id']} B={c['B']} Tq={c['Tq']} Tk={c['Tk']} d={c['d']} h={c['h']} N={c['N']} "
                      f"mask={c['mask'] or 'none'} cross={int(c['cross'])} causal={int(c['causal'])} "
                      f"rope={int(c['rope'])} scale={c['scale']:g} raises={int(c['raises'])} "
                      f"decode={int(c['decode'])} seed={c['seed']}")
        return 0
    torch.set_num_threads(1)
    files = args.files or [os.path.join(args.root, "assets", "practice", ex + ".solution.py") for ex in CASES]
    failures, checked = 0, 0
    for path in files:
        ex = declared_exercise(path)
        if ex not in CASES:
            print(f"{path}: its first line names no exercise ({', '.join(CASES)})")
            failures += 1
            continue
        solution = os.path.join(args.root, "assets", "practice", ex + ".solution.py")
        try:
            module = load_module(path, "under_test")
        except Exception as e:
            print(f"{path}: import failed: {type(e).__name__}: {e}")
            failures += 1
            continue
        worst, failed = 0.0, []
        for c in CASES[ex]:
            ok, diff, why = run_case(ex, module, c)
            checked += 1
            if ok:
                worst = max(worst, diff)
            else:
                failed.append(c["id"])
                stage = f"; first differing stage {first_stage_difference(ex, path, solution, c)}" if args.stages else ""
                print(f"{os.path.basename(path)} [{ex}] case {c['id']}: FAIL, {why}{stage}")
        failures += len(failed)
        print(f"{os.path.basename(path)} [{ex}]: {len(CASES[ex]) - len(failed)} of {len(CASES[ex])} cases pass, "
              f"max |Δ| vs torch {worst:.2e}")
    print(f"{checked} cases checked, {failures} failed")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
