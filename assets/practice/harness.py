"""The practice harness: runs a learner's implementation of attention on the app's test cases and
records every tensor their code makes, so the app can say which stage went wrong and where.

mhascope starts it as `/usr/bin/python3 -I harness.py request.json` in a temporary folder that holds
the request and the cases' arrays, with no standard input and under time and memory limits; the
learner's code is imported here, never by the app itself. Only the standard library, numpy and torch.

request.json (written by the app):
  {"version": 1, "file": "/abs/learner.py", "framework": "torch" | "numpy", "entry": "MultiHeadAttention",
   "initArgs": ["d_model", "num_heads"], "callArgs": ["query", "key", "value"], "maskArg": "mask",
   "stepMethod": "", "limits": {"outputBytes": N, "maxCaptures": N, "captureBytes": N, "memoryBytes": N},
   "cases": [{"id": "self", "arrays": {"query": "in0_query.npy", "W_q": "in0_W_q.npy", "mask": …},
              "mustRaise": false, "decode": false, "dModel": 16, "heads": 4, "kvHeads": 0}]}
  Arrays are float32 in the engine's convention: inputs (B, T, d_model), weights W (d_in, d_out) with
  y = x W, a mask as 0/1 (1 = blocked), given to the learner as torch.bool / numpy bool.

progress.json (rewritten as the run goes): {"phase": "import" | "case", "index": i, "case": id};
  faults.txt: Python's own traceback dump when the process dies of a signal or is asked for one
  (SIGUSR1, sent by the app before it kills a run that ran out of time).

manifest.json (written after every case, atomically; "complete" true once the run ended by itself):
  {"version": 1, "complete": bool, "seconds": s,
   "error": null | ERROR,                 what stopped the whole run: syntax, import, memory, crash
   "printed": "…", "printedDropped": n,   the learner's prints (at most outputBytes), characters dropped
   "cases": [{"id": "self", "status": "ok" | "error", "error": null | ERROR,
              "output": "c0_out.npy" | null,  (B, T_q, d_model) float32 as returned (NaN and inf kept)
              "raised": null | {"type", "message", "line"},   a must-raise case that raised
              "captures": [{"source": "local" | "call", "name": "scores", "function": "forward",
                            "line": 31, "order": 0, "shape": [1, 4, 6, 6], "contiguous": true,
                            "file": "c0_k0.npy"}],
              "truncated": bool, "loads": [{"parameter": "W_q.weight", "weight": "W_q", "transposed": true}],
              "seconds": s}]}
  ERROR = {"kind": "syntax" | "import" | "load" | "exception" | "no_raise" | "return" | "timeout" |
           "memory" | "crash", "type": "RuntimeError", "message": "…", "file": "…", "line": n,
           "traceback": "…" (the learner's frames, innermost last)}

How the app's weights reach the learner's module (torch): each parameter is matched by its name
(q / query / wq / q_proj …, k …, v …, o / out / proj / out_proj …; fused: qkv / in_proj / c_attn
take [W_q | W_k | W_v], kv takes [W_k | W_v]) and its shape. An nn.Linear's weight (and
nn.MultiheadAttention's in_proj_weight) takes Wᵀ, as nn.Linear stores it; a raw parameter of shape
(d_in, d_out), used as x @ W, takes W; a name with a head index (heads.2.query.weight) takes that
head's columns; a bias is set to zero (recorded as "zero"). A parameter no weight fits, or a weight
no parameter took, is a load error listing every parameter and every weight offered.

How tensors are found, with no annotation in the learner's code:
  local  sys.settrace on the frames of the learner's file: at each line and return event, every
         tensor- or array-valued local that is new or changed since the frame's previous event is
         recorded with the line that made it (the previous event's line); a function's returned
         tensor is recorded as "return".
  call   (torch) a TorchFunctionMode records the result of every torch function and Tensor method
         called from a line of the learner's file ("matmul", "Tensor.view", "linear").
  Inputs, weights and parameters themselves, tensors over 4 M elements and anything past the case's
  maxCaptures / captureBytes are not recorded (the case says "truncated").

[SECTION] Small helpers: clean text, the learner's frames, errors
[SECTION] Captures: the learner's locals (settrace) and torch calls (TorchFunctionMode)
[SECTION] Loading the app's weights into the learner's module by name and shape
[SECTION] One case: inputs, construction, weights, the call, the return, the captures
[SECTION] The run: import the learner's file, then each case
"""

import faulthandler
import importlib.util
import json
import os
import re
import signal
import sys
import time
import traceback

_START = time.monotonic()
_FAULTS = open("faults.txt", "w")  # noqa: SIM115 (kept open: faulthandler writes into it from a signal)
# Every thread: a signal may land on one of torch's own threads, and the learner's line is the main one's.
faulthandler.enable(file=_FAULTS, all_threads=True)
faulthandler.register(signal.SIGUSR1, file=_FAULTS, all_threads=True, chain=False)

import numpy as np  # noqa: E402

MAX_ELEMENTS = 4 * 1024 * 1024
MAX_TEXT = 4000

# [SECTION] Small helpers: clean text, the learner's frames, errors


def clean(text, limit=MAX_TEXT):
    """Text that is valid UTF-8 and not longer than limit characters (learner's messages may be neither)."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + " …"
    return text.encode("utf-8", "replace").decode("utf-8")


class Learner:
    """Which code is the learner's: a file name compares by its real path, cached per name."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        self._cache = {}

    def owns(self, filename):
        hit = self._cache.get(filename)
        if hit is None:
            hit = self._cache[filename] = os.path.realpath(filename) == self.path
        return hit


LEARNER = None
MEMORY_BYTES = 0


def error(kind, message, type_="", file="", line=0, tb=""):
    return {"kind": kind, "type": type_, "message": clean(message), "file": file, "line": int(line or 0),
            "traceback": clean(tb, 8 * MAX_TEXT)}


def is_memory_error(exc):
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "DefaultCPUAllocator" in text)


def exception_error(exc, kind="exception", what=""):
    """The exception with the innermost frame in the learner's file and the learner's frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if LEARNER.owns(f.filename)]
    tb = "\n".join(f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {(f.line or "").strip()}'
                   for f in frames)
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if what:
        message = f"{what}: {message}"
    if is_memory_error(exc):
        kind = "memory"
        message = f"the memory limit ({MEMORY_BYTES >> 20} MiB) ran out: {message}"
    last = frames[-1] if frames else None
    if last is not None:
        message = f"{os.path.basename(LEARNER.path)}, line {last.lineno}, in {last.name}: {message}"
    return error(kind, message, type(exc).__name__, LEARNER.path if last else "", last.lineno if last else 0, tb)


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, allow_nan=False, ensure_ascii=False)
    os.replace(tmp, path)


class BoundedText:
    """sys.stdout / sys.stderr of the learner: keeps the first `limit` characters, counts the rest."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.dropped = 0

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        room = self.limit - self.size
        if room >= len(s):
            self.parts.append(s)
            self.size += len(s)
        else:
            if room > 0:
                self.parts.append(s[:room])
                self.size += room
            self.dropped += len(s) - max(room, 0)
        return len(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def fileno(self):
        raise OSError("the learner's output is captured, it has no file descriptor")

    def text(self):
        data = "".join(self.parts).encode("utf-8", "replace")
        if len(data) > self.limit:  # the limit is in bytes; characters were counted while writing
            cut = data[: self.limit]
            self.dropped += len(data) - len(cut)
            data = cut
        return data.decode("utf-8", "ignore")


# [SECTION] Captures: the learner's locals (settrace) and torch calls (TorchFunctionMode)


class Recorder:
    """The tensors one case's code made, bounded by count and bytes, with their source, name and line."""

    def __init__(self, limits, skip_ids, torch_module):
        self.max_captures = int(limits["maxCaptures"])
        self.max_bytes = int(limits["captureBytes"])
        self.skip = skip_ids
        self.torch = torch_module
        self.items = []
        self.bytes = 0
        self.truncated = False
        self.returned = ("", 0)  # the learner's last return (function, line): the entry point's own, once it is done
        self.busy = False  # our own torch calls while snapshotting are not the learner's

    def add(self, source, name, function, line, value):
        if self.truncated or id(value) in self.skip:
            return
        torch = self.torch
        self.busy = True
        try:
            if torch is not None and isinstance(value, torch.Tensor):
                if value.numel() > MAX_ELEMENTS or value.is_complex() or value.layout != torch.strided:
                    return
                contiguous = bool(value.is_contiguous())
                shape = list(value.shape)
                nbytes = 4 * value.numel()
                if not self._room(nbytes):
                    return
                array = np.array(value.detach().cpu().to(torch.float32).numpy(), dtype=np.float32, order="C")
            elif isinstance(value, np.ndarray):
                if value.size > MAX_ELEMENTS or value.dtype.kind not in "biuf":
                    return
                contiguous = bool(value.flags.c_contiguous)
                shape = list(value.shape)
                if not self._room(4 * value.size):
                    return
                with np.errstate(all="ignore"):
                    array = np.array(value, dtype=np.float32, order="C")
            else:
                return
        except Exception:  # a tensor that cannot be read as floats (meta, quantized …) is not recorded
            return
        finally:
            self.busy = False
        self.bytes += array.nbytes
        self.items.append({"source": source, "name": name, "function": function, "line": int(line or 0),
                           "order": len(self.items), "shape": shape, "contiguous": contiguous, "array": array})

    def _room(self, nbytes):
        if len(self.items) >= self.max_captures or self.bytes + nbytes > self.max_bytes:
            self.truncated = True
            return False
        return True


class LocalTracer:
    """sys.settrace on the learner's frames: a tensor local that is new or changed, with the line that made it."""

    def __init__(self, recorder, torch_module):
        self.rec = recorder
        self.tensor_type = torch_module.Tensor if torch_module is not None else None

    def global_trace(self, frame, event, arg):
        if event != "call" or not LEARNER.owns(frame.f_code.co_filename):
            return None
        return _FrameState(self, frame.f_code.co_name).trace


class _FrameState:
    __slots__ = ("tracer", "function", "previous_line", "seen")

    def __init__(self, tracer, function):
        self.tracer = tracer
        self.function = function
        self.previous_line = 0  # 0: the frame's first event, its arguments are the caller's tensors
        self.seen = {}

    def trace(self, frame, event, arg):
        if event != "line" and event != "return":
            return self.trace
        rec = self.tracer.rec
        if rec.busy or rec.truncated:
            return self.trace
        self.scan(frame.f_locals, self.previous_line)
        if event == "return":
            rec.returned = (self.function, frame.f_lineno)
        if event == "return" and self.previous_line:
            if self._is_array(arg) and not any(v is arg for v, _ in self.seen.values()):
                rec.add("local", "return", self.function, frame.f_lineno, arg)
        self.previous_line = frame.f_lineno
        return self.trace

    def _is_array(self, value):
        t = self.tracer.tensor_type
        return isinstance(value, np.ndarray) or (t is not None and isinstance(value, t))

    def scan(self, local_vars, line):
        tensor_type = self.tracer.tensor_type
        seen = self.seen
        for name, value in local_vars.items():
            if tensor_type is not None and isinstance(value, tensor_type):
                key = value._version
            elif isinstance(value, np.ndarray):
                # an in-place write keeps the object and its buffer: a checksum of small arrays sees it
                key = (value.__array_interface__["data"][0], value.shape,
                       hash(value.tobytes()) if value.size <= 65536 else 0)
            else:
                continue
            previous = seen.get(name)
            if previous is not None and previous[0] is value and previous[1] == key:
                continue
            seen[name] = (value, key)
            if line:
                self.tracer.rec.add("local", name, self.function, line, value)


def call_name(func):
    name = getattr(func, "__name__", None) or type(func).__name__
    if name == "__get__":  # a Tensor property such as .T or .mT
        owner = getattr(func, "__self__", None)
        return "Tensor." + str(getattr(owner, "__name__", "attribute"))
    qualname = getattr(func, "__qualname__", "") or ""
    if qualname.startswith("_TensorBase.") or qualname.startswith("Tensor."):
        return "Tensor." + name
    return name


def make_call_mode(torch, recorder):
    from torch.overrides import TorchFunctionMode

    class CallRecorder(TorchFunctionMode):
        """Every torch function / Tensor method result made on a line of the learner's file."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if recorder.busy or recorder.truncated:
                return out
            frame = sys._getframe(1)
            while frame is not None and not LEARNER.owns(frame.f_code.co_filename):
                frame = frame.f_back
            if frame is None:
                return out
            if isinstance(out, torch.Tensor):
                recorder.add("call", call_name(func), frame.f_code.co_name, frame.f_lineno, out)
            elif isinstance(out, (tuple, list)) and len(out) <= 64:
                name = call_name(func)
                for i, item in enumerate(out):
                    if isinstance(item, torch.Tensor):
                        recorder.add("call", f"{name}[{i}]", frame.f_code.co_name, frame.f_lineno, item)
            return out

    return CallRecorder()


# [SECTION] Loading the app's weights into the learner's module by name and shape

ROLE_WORDS = {
    "q": {"q", "wq", "query", "queries"},
    "k": {"k", "wk", "key", "keys"},
    "v": {"v", "wv", "value", "values"},
    "o": {"o", "wo", "out", "output", "proj", "oproj", "dense"},
}


def parameter_role(name):
    """("fused" | "kv" | "q" | "k" | "v" | "o", head index or None, is_bias) from a parameter's name."""
    segments = name.lower().split(".")
    is_bias = segments[-1] == "bias" or segments[-1].endswith("_bias")
    head = None
    words_by_segment = []
    for seg in segments:
        if seg.isdigit():
            head = int(seg)
            continue
        words = [w for w in re.split(r"[_\W]+", seg) if w and w not in ("weight", "bias", "w", "b", "linear", "layer")]
        words_by_segment.append((seg, words))
    for seg, words in reversed(words_by_segment):
        joined = "".join(words)
        if "qkv" in joined or "inproj" in joined or "cattn" in joined or joined in ("in", "qkvproj"):
            return "fused", head, is_bias
        if "kv" in words or joined.startswith("kv") or joined in ("wkv", "tokv"):
            return "kv", head, is_bias
        for role in ("q", "k", "v"):
            if any(w in ROLE_WORDS[role] for w in words) or joined in ROLE_WORDS[role]:
                return role, head, is_bias
        if any(w in ROLE_WORDS["o"] for w in words) or joined in ROLE_WORDS["o"]:
            return "o", head, is_bias
    return None, head, is_bias


def load_weights(torch, module, weights, case):
    """Puts W_q … W_o (d_in, d_out), y = x W, into the module's parameters; returns (loads, error)."""
    linear_weights = set()
    transposed_raw = set()
    for mod_name, mod in module.named_modules():
        prefix = mod_name + "." if mod_name else ""
        if isinstance(mod, torch.nn.Linear):
            linear_weights.add(prefix + "weight")
        if isinstance(mod, torch.nn.MultiheadAttention):  # its in_proj_weight is used as F.linear's (out, in)
            transposed_raw.add(prefix + "in_proj_weight")
    heads = case["heads"]
    kv_heads = case["kvHeads"] or heads
    taken = {name: 0 for name in weights}
    needed = {name: 1 for name in weights}
    loads, problems, hints = [], [], []
    params = list(module.named_parameters())

    for name, p in params:
        role, head, is_bias = parameter_role(name)
        if is_bias:
            with torch.no_grad():
                p.zero_()
            loads.append({"parameter": name, "weight": "zero", "transposed": False})
            continue
        stored_transposed = name in linear_weights or name in transposed_raw
        candidates = []  # (weight name(s), matrix (d_in, d_out))
        if role == "fused" and all(w in weights for w in ("W_q", "W_k", "W_v")):
            candidates.append(("W_q|W_k|W_v", np.concatenate([weights["W_q"], weights["W_k"], weights["W_v"]], axis=1)))
        elif role == "kv" and all(w in weights for w in ("W_k", "W_v")):
            candidates.append(("W_k|W_v", np.concatenate([weights["W_k"], weights["W_v"]], axis=1)))
        elif role in ("q", "k", "v", "o"):
            wname = "W_" + role
            if wname in weights:
                w = weights[wname]
                count = heads if role in ("q", "o") else kv_heads
                if head is not None and role != "o" and 0 <= head < count and w.shape[1] % count == 0:
                    d_k = w.shape[1] // count
                    needed[wname] = count
                    candidates.append((wname, w[:, head * d_k:(head + 1) * d_k]))
                else:
                    candidates.append((wname, w))
        loaded = False
        for wname, w in candidates:
            shape = tuple(p.shape)
            if stored_transposed and shape == w.T.shape:
                value, transposed = w.T, True
            elif not stored_transposed and shape == w.shape:
                value, transposed = w, False
            elif shape == w.T.shape:  # a raw parameter used as F.linear's (out, in)
                value, transposed = w.T, True
            else:
                continue
            with torch.no_grad():
                p.copy_(torch.from_numpy(np.ascontiguousarray(value)))
            for part in wname.split("|"):
                taken[part] += 1
            loads.append({"parameter": name, "weight": wname, "transposed": transposed})
            loaded = True
            break
        if not loaded:
            problems.append(name)
            for wname, w in candidates:
                if stored_transposed and tuple(p.shape) == w.shape and w.shape[0] != w.shape[1]:
                    hints.append(f"{name} {tuple(p.shape)} would take {wname} {w.shape} untransposed: "
                                 "nn.Linear(in_features, out_features) stores (out_features, in_features), "
                                 "check the order of its arguments")

    missing = [w for w in weights if taken[w] < needed[w]]
    extra = [w for w in weights if taken[w] > needed[w]]
    if not problems and not missing and not extra:
        return loads, None
    lines = []
    if problems:
        lines.append("no weight fits the parameter(s) " + ", ".join(problems))
    if missing:
        lines.append("no parameter took " + ", ".join(missing))
    if extra:
        lines.append("more than one parameter took " + ", ".join(extra))
    lines.extend(hints)
    lines.append("the module's parameters: " + (", ".join(f"{n} {tuple(p.shape)}" for n, p in params) or "none"))
    lines.append("the weights offered (y = x W, W is (d_in, d_out)): " +
                 ", ".join(f"{n} {tuple(w.shape)}" for n, w in weights.items()) +
                 "; an nn.Linear(d_in, d_out, bias=False) stores W transposed, (d_out, d_in), and takes it so")
    return loads, error("load", f"{os.path.basename(LEARNER.path)}: the weights do not fit the module's parameters: " +
                        "; ".join(lines))


# [SECTION] One case: inputs, construction, weights, the call, the return, the captures


def load_arrays(case):
    return {name: np.load(path, allow_pickle=False) for name, path in case["arrays"].items()}


def describe(value):
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__} of shape {tuple(shape)}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {len(value)} ({', '.join(describe(v) for v in value[:4])})"
    return type(value).__name__


def check_return(value, expected_shape, array_types, what="the call", returned=("", 0)):
    function, line = returned
    where = f"{os.path.basename(LEARNER.path)}, line {line}, in {function}: " if line else ""
    if not isinstance(value, array_types):
        message = f"{where}{what} returned a {describe(value)}; expected one tensor of shape {expected_shape}"
    elif tuple(value.shape) != expected_shape:
        message = f"{where}{what} returned shape {tuple(value.shape)}; expected {expected_shape} (B, T_q, d_model)"
    else:
        return None
    return error("return", message, "", LEARNER.path if line else "", line)


def run_case(case, request, learner_module, torch):
    framework = request["framework"]
    arrays = load_arrays(case)
    result = {"id": case["id"], "status": "ok", "error": None, "output": None, "raised": None, "captures": [],
              "truncated": False, "loads": [], "seconds": 0.0}
    heads, kv_heads, d_model = case["heads"], case["kvHeads"] or case["heads"], case["dModel"]
    weights = {n: a.astype(np.float32) for n, a in arrays.items() if n.startswith("W_")}
    if framework == "torch":
        torch.manual_seed(0)
        values = {n: (torch.from_numpy(a != 0) if n == "mask" else torch.from_numpy(a.astype(np.float32)))
                  for n, a in arrays.items() if not n.startswith("W_")}
        array_types = (torch.Tensor,)
    else:
        values = {n: (a != 0 if n == "mask" else a.astype(np.float32)) for n, a in arrays.items()}
        array_types = (np.ndarray,)
    numbers = {"d_model": d_model, "num_heads": heads, "num_kv_heads": kv_heads}
    first_input = next((values[n] for n in request["callArgs"] if n in values and not n.startswith("W_")), None)
    expected = (tuple(first_input.shape[:2]) + (d_model,)) if first_input is not None else None
    if "query" in values:
        expected = tuple(values["query"].shape[:2]) + (d_model,)

    skip_ids = {id(v) for v in values.values()} | {id(v) for v in weights.values()}
    recorder = Recorder(request["limits"], skip_ids, torch if framework == "torch" else None)
    entry = getattr(learner_module, request["entry"])
    raised = None
    output = None

    def call_args():
        out = []
        for name in request["callArgs"]:
            if name in numbers:
                out.append(numbers[name])
            elif name in values:
                out.append(values[name])
            else:
                raise KeyError(f"the case has no '{name}'")
        return out

    kwargs = {request["maskArg"]: values["mask"]} if request["maskArg"] and "mask" in values else {}
    try:
        if framework == "torch":
            try:
                module = entry(*[numbers[a] for a in request["initArgs"]])
            except (Exception, SystemExit, KeyboardInterrupt) as exc:  # any the learner's constructor raises
                if case["mustRaise"]:
                    raised = exc
                    raise _Raised() from None
                result["error"] = exception_error(exc, what=f"{request['entry']}(...) raised")
                return result, recorder
            module.eval()  # dropout off: the check compares exact values
            for p in module.parameters():
                skip_ids.add(id(p))
            loads, load_error = load_weights(torch, module, weights, case)
            result["loads"] = loads
            if load_error:
                result["error"] = load_error
                return result, recorder
            if case["decode"]:
                output = decode(torch, module, request, first_input, expected)
                if isinstance(output, dict):
                    result["error"] = output
                    return result, recorder
            else:
                args = call_args()
                tracer = LocalTracer(recorder, torch)
                with torch.no_grad(), make_call_mode(torch, recorder):
                    sys.settrace(tracer.global_trace)
                    try:
                        output = module(*args, **kwargs)
                    finally:
                        sys.settrace(None)
        else:
            args = call_args()
            for a in args:
                skip_ids.add(id(a))
            tracer = LocalTracer(recorder, None)
            sys.settrace(tracer.global_trace)
            try:
                output = entry(*args, **kwargs)
            finally:
                sys.settrace(None)
    except _Raised:
        pass
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # whatever the learner's call raises is reported
        if case["mustRaise"] and not is_memory_error(exc):
            raised = exc
        else:
            result["error"] = exception_error(exc)
            return result, recorder

    if case["mustRaise"]:
        if raised is None:
            result["error"] = error("no_raise", f"{os.path.basename(LEARNER.path)}: d_model = {d_model} is not divisible by num_heads = {heads}, "
                                    "yet neither the constructor nor the call raised an exception")
        else:
            info = exception_error(raised)
            result["raised"] = {"type": info["type"], "message": info["message"], "line": info["line"]}
        return result, recorder

    problem = check_return(output, expected, array_types, returned=recorder.returned)
    if problem:
        result["error"] = problem
        return result, recorder
    result["output"] = output
    return result, recorder


class _Raised(Exception):
    """A must-raise case's constructor raised: nothing more to run."""


def decode(torch, module, request, x, expected):
    """Calls the step method one token at a time, the cache starting as None; the steps' rows, in order."""
    step = getattr(module, request["stepMethod"], None)
    if step is None:
        return error("import", f"the module has no method '{request['stepMethod']}' (step(x_t, cache) -> (out_t, cache))")
    cache, rows = None, []
    with torch.no_grad():
        for t in range(x.shape[1]):
            got = step(x[:, t:t + 1], cache)
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                return error("return", f"{request['stepMethod']}(x[:, {t}:{t + 1}], cache) returned a {describe(got)}; "
                             "expected a pair (out_t, cache)")
            out_t, cache = got
            problem = check_return(out_t, (expected[0], 1, expected[2]), (torch.Tensor,),
                                   f"{request['stepMethod']} at step t = {t}")
            if problem:
                return problem
            rows.append(out_t)
    return torch.cat(rows, dim=1)


def save_case(index, result, recorder, output, torch):
    if output is not None:
        if torch is not None and isinstance(output, torch.Tensor):
            array = np.array(output.detach().cpu().to(torch.float32).numpy(), dtype=np.float32, order="C")
        else:
            with np.errstate(all="ignore"):
                array = np.array(output, dtype=np.float32, order="C")
        result["output"] = f"c{index}_out.npy"
        np.save(result["output"], array)
    for item in recorder.items:
        name = f"c{index}_k{item['order']}.npy"
        np.save(name, item.pop("array"))
        item["file"] = name
        result["captures"].append(item)
    result["truncated"] = recorder.truncated


# [SECTION] The run: import the learner's file, then each case


def import_learner(path, entry, framework):
    """(module, None) or (None, error) for a syntax error, an exception at import, a missing entry point."""
    try:
        source = open(path, "rb").read()
        code = compile(source, path, "exec")
    except SyntaxError as exc:
        offset = f", column {exc.offset}" if exc.offset else ""
        text = (exc.text or "").rstrip("\n")
        message = (f"{os.path.basename(exc.filename or path)}, line {exc.lineno}{offset}: {type(exc).__name__}: {exc.msg}" +
                   (f"\n    {text.strip()}" if text else ""))
        return None, error("syntax", message, type(exc).__name__, exc.filename or path, exc.lineno or 0)
    except OSError as exc:
        return None, error("import", f"cannot read the file: {exc}", type(exc).__name__, path)
    spec = importlib.util.spec_from_file_location("learner_solution", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["learner_solution"] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 (the file the user chose to run)
    except SyntaxError as exc:  # an import of another file of theirs
        return None, error("syntax", f"{os.path.basename(exc.filename or path)}, line {exc.lineno}: "
                           f"{type(exc).__name__}: {exc.msg}", type(exc).__name__,
                           exc.filename or path, exc.lineno or 0)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        return None, exception_error(exc, "import", "while importing the file")
    found = getattr(module, entry, None)
    kind_word = "class" if framework == "torch" else "function"
    if found is None or not callable(found):
        defined = sorted(n for n, v in vars(module).items()
                         if not n.startswith("__") and callable(v) and getattr(v, "__module__", "") == "learner_solution")
        what = "is not callable" if found is not None else "is not defined"
        return None, error("import", f"{os.path.basename(path)}: the {kind_word} '{entry}' {what}; the file defines: " +
                           (", ".join(defined) or "no classes or functions"), "", path)
    return module, None


def main():
    global LEARNER, MEMORY_BYTES
    request = json.load(open(sys.argv[1], encoding="utf-8"))
    LEARNER = Learner(request["file"])
    MEMORY_BYTES = int(request["limits"].get("memoryBytes", 0))
    framework = request["framework"]
    printed = BoundedText(int(request["limits"]["outputBytes"]))
    manifest = {"version": 1, "complete": False, "seconds": 0.0, "error": None, "printed": "", "printedDropped": 0,
                "cases": []}

    def flush(complete=False):
        manifest["complete"] = complete
        manifest["printed"] = clean(printed.text(), 1 << 30)
        manifest["printedDropped"] = printed.dropped
        manifest["seconds"] = time.monotonic() - _START
        write_json("manifest.json", manifest)

    write_json("progress.json", {"phase": "import", "index": -1, "case": ""})
    torch = None
    if framework == "torch":
        import torch  # noqa: F811 (imported only when the exercise is PyTorch's)
        torch.set_num_threads(1)
    sys.path.append(os.path.dirname(LEARNER.path))
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = printed
    try:
        module, problem = import_learner(request["file"], request["entry"], framework)
        if problem:
            manifest["error"] = problem
            return flush(True)
        for index, case in enumerate(request["cases"]):
            write_json("progress.json", {"phase": "case", "index": index, "case": case["id"]})
            started = time.monotonic()
            result, recorder = run_case(case, request, module, torch)
            sys.stdout = sys.stderr = printed  # the learner's code may have replaced them
            output = result.pop("output")
            save_case(index, result, recorder, output, torch)
            result["seconds"] = time.monotonic() - started
            manifest["cases"].append(result)
            flush()
        return flush(True)
    except MemoryError as exc:
        manifest["error"] = exception_error(exc, "memory")
        return flush(True)
    finally:
        sys.stdout, sys.stderr = real_out, real_err


if __name__ == "__main__":
    main()
