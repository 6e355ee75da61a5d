#!/usr/bin/python3
"""PyTorch's side of the forward benchmark: torch.nn.MultiheadAttention (batch_first) on random
(B, T, d_model) inputs, self-attention, need_weights=True with per-head weights
(average_attn_weights=False) — the nearest PyTorch call to mhascope's recorded forward — on one
thread. Prints the median time of --repeat runs and the peak resident memory the forward added.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        /usr/bin/python3 scripts/bench_forward_torch.py --tokens 512 --d-model 768 --heads 12

Output (one line, parsed by scripts/plot_cost.py):
    torch forward: median 20.512 ms over 9 runs; peak RSS added 123.4 MiB; blas openblas
"""
import argparse
import resource
import statistics
import time

import torch


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=9)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(a.d_model, a.heads, batch_first=True).eval()
    x = torch.randn(a.batch, a.tokens, a.d_model)
    base = rss_mib()
    times = []
    with torch.no_grad():
        mha(x, x, x, need_weights=True, average_attn_weights=False)  # warm-up
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            out, w = mha(x, x, x, need_weights=True, average_attn_weights=False)
            times.append(time.perf_counter() - t0)
            del out, w
    with open("/proc/self/maps") as f:  # which BLAS the process really loaded (libblas.so.3 is an alternative)
        maps = f.read()
    blas = "openblas" if "openblas" in maps else "other"
    print("torch forward: median %.3f ms over %d runs; peak RSS added %.1f MiB; blas %s"
          % (statistics.median(times) * 1e3, a.repeat, rss_mib() - base, blas))


if __name__ == "__main__":
    main()
