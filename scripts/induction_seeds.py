#!/usr/bin/python3
"""Does the induction circuit form, seed by seed, for each way of giving the model positions?

    scripts/induction_seeds.py MHASCOPE_BINARY [--positions rope learned] [--seeds 5] [--steps 1500]
                               [--out DIR] [--svg FIGURE.svg]

Runs `mhascope train --task induction --positions P --seed S --steps N --eval-every 25 --log ...`
one run at a time (the reference setting: 2 layers attention-only, d_model 64, h = 2, vocab 64,
T 32, batch 16, AdamW lr 1e-3 wd 1e-4) and prints a Markdown table: the step at which the run
says the circuit formed (mhascope's own rule, core/train/circuit.cpp: probe loss < 0.5, an induction
head in a layer l >= 1 with prefix matching and copying >= 0.5, a previous-token head at first
occurrences >= 0.5 below it; checked at every evaluation), the scores there and the final probe
loss. With --svg, a figure of every seed's best prefix-matching score (layers 1 and up) against the
step, one panel per positions choice, the 0.5 threshold dashed. Standard library only.
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile


def run(binary, positions, seed, steps, out, extra=()):
    """One run; `extra`: more `mhascope train` options (their values also name the log)."""
    log = os.path.join(out, "_".join([positions, *extra, str(seed)]).replace("-", "") + ".csv")
    cmd = [binary, "train", "--task", "induction", "--positions", positions, "--seed", str(seed), "--steps",
           str(steps), "--eval-every", "25", "--log", log, "--force", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"induction_seeds: error: {' '.join(cmd)} failed: {r.stderr.strip()}")
    m = re.search(r"The circuit counts as formed at step (\d+)", r.stdout)
    with open(log, newline="") as f:
        rows = [{k: float(v) if v else None for k, v in row.items()} for row in csv.DictReader(f)]
    return (int(m.group(1)) if m else None), rows


def best(row, layer_test, score):
    keys = [k for k in row if re.fullmatch(rf"layer(\d+)_head\d+_{score}", k) and layer_test(int(k[5:k.index("_")]))]
    return max(keys, key=lambda k: row[k])


def svg(panels, steps, path):
    """panels: [(title, [(seed, [(step, score)])])] → a small SVG, one panel each."""
    w, h, pad, gap = 360, 220, 40, 30
    colors = ["#4c9be8", "#e8624c", "#3fb950", "#a371f7", "#d29922", "#8b949e"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{len(panels) * (w + gap) + pad}" height="{h + 2 * pad + 24}" '
           'font-family="DejaVu Sans, sans-serif" font-size="12">', '<rect width="100%" height="100%" fill="white"/>']
    for p, (title, curves) in enumerate(panels):
        x0, y0 = pad + p * (w + gap), pad
        X = lambda s: x0 + w * s / steps  # noqa: E731
        Y = lambda v: y0 + h * (1 - v)  # noqa: E731
        out.append(f'<text x="{x0}" y="{y0 - 12}" font-weight="bold">{title}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#888"/>')
        out.append(f'<line x1="{x0}" y1="{Y(0.5)}" x2="{x0 + w}" y2="{Y(0.5)}" stroke="#888" stroke-dasharray="4 3"/>')
        for v in (0, 0.5, 1):
            out.append(f'<text x="{x0 - 6}" y="{Y(v) + 4}" text-anchor="end">{v:g}</text>')
        for s in range(0, steps + 1, 500):
            out.append(f'<text x="{X(s)}" y="{y0 + h + 16}" text-anchor="middle">{s}</text>')
        for i, (seed, pts) in enumerate(curves):
            line = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in pts)
            c = colors[i % len(colors)]
            out.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="1.5"/>')
            # The legend in a row under the axis: no curve runs there.
            out.append(f'<text x="{x0 + 60 * i}" y="{y0 + h + 52}" fill="{c}">seed {seed}</text>')
        out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 32}" text-anchor="middle">step (prefix matching: best '
                   'head of layer 1)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--positions", nargs="+", default=["rope", "learned"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--out", default=None, help="folder for the CSV logs (default: a temporary one)")
    ap.add_argument("--svg", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="induction_seeds_")
    os.makedirs(out, exist_ok=True)
    print("| positions | seed | formed at step | previous-token (first occurrences) | prefix matching | copying "
          f"| probe loss at step {a.steps} |")
    print("|---|---|---|---|---|---|---|")
    panels = []
    for positions in a.positions:
        curves, formed_count = [], 0
        for seed in range(1, a.seeds + 1):
            formed, rows = run(a.binary, positions, seed, a.steps, out)
            curves.append((seed, [(r["step"], r[best(r, lambda l: l >= 1, "induction")]) for r in rows]))
            last = rows[-1]
            if formed is None:
                ind = best(last, lambda l: l >= 1, "induction")
                print(f"| {positions} | {seed} | not formed | {last[best(last, lambda l: l == 0, 'prev_token_new')]:.2f} "
                      f"| {last[ind]:.2f} | {last[ind.replace('induction', 'copying')]:.2f} | {last['probe_loss']:.3f} |")
                continue
            formed_count += 1
            r = next(r for r in rows if r["step"] == formed)
            ind = best(r, lambda l: l >= 1, "induction")
            print(f"| {positions} | {seed} | {formed} | {r[best(r, lambda l: l == 0, 'prev_token_new')]:.2f} "
                  f"| {r[ind]:.2f} | {r[ind.replace('induction', 'copying')]:.2f} | {last['probe_loss']:.3f} |")
            sys.stdout.flush()
        panels.append((f"--positions {positions}: formed for {formed_count} of {a.seeds} seeds", curves))
    if a.svg:
        svg(panels, a.steps, a.svg)
        print(f"\nfigure: {a.svg}")


if __name__ == "__main__":
    main()
