#!/usr/bin/python3
"""How the forward's time and memory grow with T and d_model, mhascope beside PyTorch.

    scripts/plot_cost.py [--mhascope build/app/mhascope] [--out assets/docs/img/cost_growth.svg] [--quick]

For each size it runs, one after the other on this machine:
  * time:   `mhascope bench --tokens T --d-model D --heads H` (median forward with every stage
            recorded, one thread) and scripts/bench_forward_torch.py (nn.MultiheadAttention,
            need_weights with per-head weights, one thread, OpenBLAS with its own CPU detection);
  * memory: the peak resident set of `mhascope info` at that size (/usr/bin/time -f %M) minus that
            of a tiny `info` (the program itself), and the peak resident memory PyTorch's forward
            added; beside them the bytes of the recorded tensors (the 16 stages).
Sweeps: T = 128 … 4096 at d_model 512, h 8; d_model = 128 … 1024 at T 512, h = d_model / 64.
Writes an SVG drawn by this script (Debian's python3 here has no matplotlib) and prints a table.

    scripts/plot_cost.py --table [--rounds 5] [--threads 2]

instead times the issue's three sizes (T=128/d512/h8, T=512/d768/h12, T=1024/d1024/h16), ours and
PyTorch alternately, and prints per round and as medians: ratio-to-gemm (our forward's GFLOP/s over
the engine's GEMM's) and PyTorch's time over ours (with --threads N also the N-thread speed-up).
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
ENV.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def run(cmd):
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True)


def ours_ms(exe, t, d, h, repeat):
    out = run([exe, "bench", "--tokens", str(t), "--d-model", str(d), "--heads", str(h), "--repeat", str(repeat),
               "--memory-budget", "16384"]).stdout
    return float(re.search(r"forward with full recording: median ([0-9.]+) ms", out).group(1))


def ours_rss_mib(exe, t, d, h):
    r = run(["/usr/bin/time", "-f", "%M", exe, "info", "--tokens", str(t), "--d-model", str(d), "--heads", str(h),
             "--memory-budget", "16384"])
    return int(r.stderr.strip().splitlines()[-1]) / 1024.0


def torch_run(t, d, h, repeat):
    out = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "bench_forward_torch.py"), "--tokens", str(t),
               "--d-model", str(d), "--heads", str(h), "--repeat", str(repeat)]).stdout
    m = re.search(r"median ([0-9.]+) ms .* peak RSS added ([0-9.]+) MiB", out)
    return float(m.group(1)), float(m.group(2))


def recorded_mib(t, d, h):
    # 16 stages: 6 (T, d) on the query side, 6 on the key/value side, and of the 4 (h, T, T) score
    # tables 2 stored (scores, weights): scaled and masked are derived from the scores when read.
    return 4.0 * (12 * t * d + 2 * h * t * t) / 2**20


def measure(exe, sizes, repeat):
    base = ours_rss_mib(exe, 4, 8, 2)
    rows = []
    for t, d, h in sizes:
        rep = repeat if t <= 1024 else 3
        ours = ours_ms(exe, t, d, h, rep)
        torch_ms, torch_mib = torch_run(t, d, h, rep)
        ours_mib = ours_rss_mib(exe, t, d, h) - base
        rows.append(dict(t=t, d=d, h=h, ours=ours, torch=torch_ms, ours_mib=ours_mib, torch_mib=torch_mib,
                         rec_mib=recorded_mib(t, d, h)))
        r = rows[-1]
        print("T=%5d d_model=%5d h=%3d  ours %9.2f ms  torch %9.2f ms  (torch/ours %.2fx)   memory: ours %8.1f MiB "
              "(recorded %8.1f, ratio %.2f), torch %8.1f MiB" % (t, d, h, r["ours"], r["torch"], r["torch"] / r["ours"],
                                                                r["ours_mib"], r["rec_mib"], r["ours_mib"] / r["rec_mib"],
                                                                r["torch_mib"]), flush=True)
    return rows


# ---- a small hand-made SVG line chart (log-log axes) -------------------------------------------
import math  # noqa: E402

COLORS = {"ours": "#1f77b4", "torch": "#d62728", "rec": "#7f7f7f"}


def panel(x0, y0, w, h, title, xlabel, ylabel, xs, series):
    """series: list of (label, colour, ys, dashed)."""
    allys = [y for _, _, ys, _ in series for y in ys if y > 0]
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.floor(math.log10(min(allys))), math.ceil(math.log10(max(allys)))
    px = lambda x: x0 + 50 + (math.log10(x) - lx0) / (lx1 - lx0 or 1) * (w - 70)  # noqa: E731
    py = lambda y: y0 + h - 40 - (math.log10(y) - ly0) / (ly1 - ly0 or 1) * (h - 70)  # noqa: E731
    s = ['<text x="%g" y="%g" font-size="13" font-weight="bold">%s</text>' % (x0 + 50, y0 + 16, title)]
    s.append('<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#999"/>'
             % (x0 + 50, y0 + 30, w - 70, h - 70))
    for e in range(int(ly0), int(ly1) + 1):
        y = py(10 ** e)
        s.append('<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/>' % (x0 + 50, y, x0 + w - 20, y))
        s.append('<text x="%g" y="%g" font-size="10" text-anchor="end">%g</text>' % (x0 + 46, y + 3, 10 ** e))
    for x in xs:
        s.append('<text x="%g" y="%g" font-size="10" text-anchor="middle">%d</text>' % (px(x), y0 + h - 26, x))
    s.append('<text x="%g" y="%g" font-size="11" text-anchor="middle">%s</text>' % (x0 + w / 2 + 15, y0 + h - 8, xlabel))
    s.append('<text x="%g" y="%g" font-size="11" text-anchor="middle" transform="rotate(-90 %g %g)">%s</text>'
             % (x0 + 12, y0 + h / 2, x0 + 12, y0 + h / 2, ylabel))
    for i, (label, colour, ys, dashed) in enumerate(series):
        pts = " ".join("%g,%g" % (px(x), py(y)) for x, y in zip(xs, ys) if y > 0)
        s.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                 % (pts, colour, ' stroke-dasharray="5,4"' if dashed else ""))
        for x, y in zip(xs, ys):
            if y > 0:
                s.append('<circle cx="%g" cy="%g" r="3" fill="%s"/>' % (px(x), py(y), colour))
        s.append('<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>'
                 % (x0 + 60, y0 + 42 + 14 * i, x0 + 80, y0 + 42 + 14 * i, colour,
                    ' stroke-dasharray="5,4"' if dashed else ""))
        s.append('<text x="%g" y="%g" font-size="10">%s</text>' % (x0 + 84, y0 + 46 + 14 * i, label))
    return s


def svg(by_t, by_d):
    W, H = 900, 620
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans, sans-serif">'
         % (W, H), '<rect width="100%" height="100%" fill="white"/>']
    ts = [r["t"] for r in by_t]
    s += panel(0, 0, 450, 310, "Forward time vs T (d_model 512, h 8)", "T (tokens)", "ms", ts,
               [("mhascope, every stage recorded", COLORS["ours"], [r["ours"] for r in by_t], False),
                ("PyTorch 1.13 + OpenBLAS, need_weights", COLORS["torch"], [r["torch"] for r in by_t], False)])
    s += panel(450, 0, 450, 310, "Memory vs T (d_model 512, h 8)", "T (tokens)", "MiB", ts,
               [("mhascope peak RSS (info)", COLORS["ours"], [r["ours_mib"] for r in by_t], False),
                ("the trace as stored (16 stages)", COLORS["rec"], [r["rec_mib"] for r in by_t], True),
                ("PyTorch forward, peak RSS added", COLORS["torch"], [r["torch_mib"] for r in by_t], False)])
    ds = [r["d"] for r in by_d]
    s += panel(0, 310, 450, 310, "Forward time vs d_model (T 512, h = d_model/64)", "d_model", "ms", ds,
               [("mhascope", COLORS["ours"], [r["ours"] for r in by_d], False),
                ("PyTorch", COLORS["torch"], [r["torch"] for r in by_d], False)])
    s += panel(450, 310, 450, 310, "Memory vs d_model (T 512, h = d_model/64)", "d_model", "MiB", ds,
               [("mhascope peak RSS (info)", COLORS["ours"], [r["ours_mib"] for r in by_d], False),
                ("the trace as stored (16 stages)", COLORS["rec"], [r["rec_mib"] for r in by_d], True),
                ("PyTorch forward, peak RSS added", COLORS["torch"], [r["torch_mib"] for r in by_d], False)])
    s.append("</svg>")
    return "\n".join(s) + "\n"


def bench_line(exe, t, d, h, repeat, threads):
    out = run([exe, "bench", "--tokens", str(t), "--d-model", str(d), "--heads", str(h), "--repeat", str(repeat),
               "--threads", str(threads)]).stdout
    ms = float(re.search(r"forward with full recording: median ([0-9.]+) ms", out).group(1))
    ratio = float(re.search(r"ratio-to-gemm: ([0-9.]+)", out).group(1))
    speedup = re.search(r"threads are ([0-9.]+)x faster", out)
    gemm = re.search(r"^gemm: (.*)$", out, re.M).group(1)
    return ms, ratio, float(speedup.group(1)) if speedup else None, gemm


def table(exe, rounds, threads, repeat):
    import statistics
    for t, d, h in [(128, 512, 8), (512, 768, 12), (1024, 1024, 16)]:
        ratios, vs_torch, speedups, ours_all, torch_all = [], [], [], [], []
        for r in range(rounds):
            ms, ratio, speedup, gemm = bench_line(exe, t, d, h, repeat, threads)
            torch_ms, _ = torch_run(t, d, h, repeat)
            ratios.append(ratio)
            vs_torch.append(torch_ms / ms)
            ours_all.append(ms)
            torch_all.append(torch_ms)
            if speedup:
                speedups.append(speedup)
            print("T=%d d_model=%d h=%d round %d: ours %.2f ms, ratio-to-gemm %.3f, torch %.2f ms, torch/ours %.2f%s"
                  % (t, d, h, r + 1, ms, ratio, torch_ms, torch_ms / ms,
                     ", %d-thread speed-up %.2f" % (threads, speedup) if speedup else ""), flush=True)
        print("T=%d d_model=%d h=%d MEDIANS: ours %.2f ms, torch %.2f ms, ratio-to-gemm %.3f, torch/ours %.2f%s  [%s]"
              % (t, d, h, statistics.median(ours_all), statistics.median(torch_all), statistics.median(ratios),
                 statistics.median(vs_torch),
                 ", speed-up %.2f" % statistics.median(speedups) if speedups else "", gemm), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mhascope", default=os.path.join(ROOT, "build", "app", "mhascope"))
    ap.add_argument("--out", default=os.path.join(ROOT, "assets", "docs", "img", "cost_growth.svg"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="T up to 1024 only")
    ap.add_argument("--table", action="store_true", help="the three reference sizes, medians of ratios")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    if a.table:
        return table(a.mhascope, a.rounds, a.threads, a.repeat)
    tokens = [128, 256, 512, 1024] + ([] if a.quick else [2048, 4096])
    print("sweep over T", flush=True)
    by_t = measure(a.mhascope, [(t, 512, 8) for t in tokens], a.repeat)
    print("sweep over d_model", flush=True)
    by_d = measure(a.mhascope, [(512, d, d // 64) for d in (128, 256, 512, 768, 1024)], a.repeat)
    with open(a.out, "w") as f:
        f.write(svg(by_t, by_d))
    print("wrote", a.out)


if __name__ == "__main__":
    sys.exit(main())
