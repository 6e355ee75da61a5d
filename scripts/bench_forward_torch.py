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
import ctypes
import resource
import statistics
import time


def pin_malloc_thresholds():
    """Fixed glibc thresholds before torch allocates anything. Left to glibc's dynamic rule, the
    mmap threshold a process ends up with depends on its allocation history, which Python's hash
    seed changes from run to run: in some processes every forward got fresh mmapped buffers and
    page-faulted them in (T = 128: ~7.5 ms a forward instead of ~2.1 ms, by PYTHONHASHSEED). Pinned,
    PyTorch is measured at its best every time (mhascope does the like for itself: the window sets
    both thresholds at start-up, and the GEMM's first use settles them first, settleAllocator)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 64 << 20)
    except OSError:
        pass


pin_malloc_thresholds()
import torch  # noqa: E402 (after the allocator settings, which must come first)


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
    ap.add_argument("--warmup", type=int, default=8,
                    help="untimed forwards first (at most 5 s of them, at least one)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(a.d_model, a.heads, batch_first=True).eval()
    x = torch.randn(a.batch, a.tokens, a.d_model)
    base = rss_mib()
    times = []
    with torch.no_grad():
        # Warm-up: PyTorch's first forwards are slower until its buffers settle (T = 512: ~95, 60,
        # 59, 59 ms, then 23 ms from the fifth on; T = 128: 4.3-12 ms for seven, then 2.0 ms), so a
        # median over a few runs right after one warm-up measured that, not PyTorch.
        started = time.perf_counter()
        for i in range(max(1, a.warmup)):
            mha(x, x, x, need_weights=True, average_attn_weights=False)
            if time.perf_counter() - started > 5.0:
                break
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
