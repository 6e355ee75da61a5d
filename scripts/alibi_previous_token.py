#!/usr/bin/python3
"""How much of its weight can a layer-0 head put on the previous token under ALiBi, and what does
the induction task reach without that?

    scripts/alibi_previous_token.py MHASCOPE_BINARY [--seeds 3] [--steps 1500] [--layers 2 1] [--out DIR]

First the bound, from the formulas alone: with ALiBi and no position table, layer 0's score of query
t for key j is a content term c(x_t, x_j) plus the bias -m (t - j). At a token's first occurrence
every earlier key holds a distinct random token, so no content term can prefer key t - 1 to an
earlier one; the one key content can single out is the query's own. A head that pushes its own key
away and treats the others alike gives key t - 1 the weight (1 - e^-m) / (1 - e^(-m t)); the script
prints its mean over the first-occurrence queries t = 1 .. k - 1 of the induction task (period k
uniform on [period-min, period-max], the task's default 6 .. 16), for each slope of h heads (the
ALiBi paper's m_i = 2^(-8 i / h)).

Then the measurement: `mhascope train --task induction --positions alibi --layers L --seed S
--steps N --eval-every 25 --log ...` one run at a time (the reference setting otherwise: d_model 64,
h = 2, vocab 64, T 32, batch 16), and a Markdown table per run: the largest previous-token score at
first occurrences of any layer-0 head over every evaluation (and its step), the probe loss at the
last step, and the best prefix matching and copying there (any layer). Standard library only;
the runs go through induction_seeds.run.
"""
import argparse
import math
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import induction_seeds  # noqa: E402  (one way to run `mhascope train` and read its log)


def bound(m, kmin, kmax):
    num, n = 0.0, 0
    for k in range(kmin, kmax + 1):
        for t in range(1, k):
            num += (1 - math.exp(-m)) / (1 - math.exp(-m * t))
            n += 1
    return num / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--layers", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--period-min", type=int, default=6)
    ap.add_argument("--period-max", type=int, default=16)
    ap.add_argument("--out", default=None, help="folder for the CSV logs (default: a temporary one)")
    a = ap.parse_args()
    slopes = [2 ** (-8 * i / a.heads) for i in range(1, a.heads + 1)]
    print(f"bound (h = {a.heads}, periods {a.period_min} .. {a.period_max}): " +
          ", ".join(f"m = {m:g}: {bound(m, a.period_min, a.period_max):.3f}" for m in slopes))
    out = a.out or tempfile.mkdtemp(prefix="alibi_previous_token_")
    os.makedirs(out, exist_ok=True)
    print(f"\n| layers | seed | max previous-token, layer 0, first occurrences (step) | probe loss at step {a.steps} "
          "| prefix matching | copying |")
    print("|---|---|---|---|---|---|")
    for layers in a.layers:
        for seed in range(1, a.seeds + 1):
            _, rows = induction_seeds.run(a.binary, "alibi", seed, a.steps, out,
                                          ("--layers", str(layers), "--heads", str(a.heads)))
            prev = [k for k in rows[0] if re.fullmatch(r"layer0_head\d+_prev_token_new", k)]
            best_row = max(rows, key=lambda row: max(row[k] for k in prev))
            top = max(best_row[k] for k in prev)
            last = rows[-1]
            ind = max((k for k in last if re.fullmatch(r"layer\d+_head\d+_induction", k)), key=lambda k: last[k])
            print(f"| {layers} | {seed} | {top:.3f} ({int(best_row['step'])}) | {last['probe_loss']:.3f} | {last[ind]:.2f} "
                  f"| {last[ind.replace('induction', 'copying')]:.2f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
