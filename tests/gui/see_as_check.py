#!/usr/bin/env python3
"""Checks a "see as" screenshot against the normal one: every pixel of SIM.png is the simulation of
the same pixel of NORMAL.png (within TOL per channel), except for at most MAX_OTHER pixels (the
combo's own label, which names the preview), and at least MIN_CHANGED pixels changed.

Usage: see_as_check.py NORMAL.png SIM.png KIND TOL MAX_OTHER MIN_CHANGED
       see_as_check.py NORMAL.png BACK.png normal 0 MAX_OTHER 0   (the window went back)

The simulation is scripts/gen_see_as_fixtures.py's (numpy, from the published matrices), so the
window's shader is checked against the same independent reference as core/color/see_as.cpp.
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
from check_png import decode  # noqa: E402
from gen_see_as_fixtures import LUMA, MACHADO_SEVERITY_1  # noqa: E402


def pixels(path):
    width, height, bpp, rows = decode(path)
    a = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(height, width, bpp)
    return a[:, :, :3].astype(np.int32)


def simulate(kind, rgb):
    if kind == "normal":
        return rgb
    c = rgb / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array([LUMA] * 3) if kind == "greyscale" else np.array(MACHADO_SEVERITY_1[kind])
    out = np.clip(lin @ m.T, 0.0, 1.0)
    s = np.where(out <= 0.0031308, 12.92 * out, 1.055 * np.power(out, 1 / 2.4) - 0.055)
    return np.floor(s * 255.0 + 0.5).astype(np.int32)


def main():
    normal_path, sim_path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    tol, max_other, min_changed = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    normal, sim = pixels(normal_path), pixels(sim_path)
    if normal.shape != sim.shape:
        raise SystemExit(f"sizes differ: {normal.shape} vs {sim.shape}")
    want = simulate(kind, normal)
    off = np.abs(sim - want).max(axis=2) > tol
    changed = int((np.abs(sim - normal).max(axis=2) > 0).sum())
    print(f"{sim_path}: {int(off.sum())} pixels off the {kind} simulation of {normal_path} (tolerance {tol}), "
          f"{changed} changed")
    if off.sum() > max_other:
        ys, xs = np.nonzero(off)
        raise SystemExit(f"{int(off.sum())} pixels are not the {kind} simulation (first at x={xs[0]} y={ys[0]}: "
                         f"{sim[ys[0], xs[0]].tolist()} vs {want[ys[0], xs[0]].tolist()})")
    if changed < min_changed:
        raise SystemExit(f"only {changed} pixels changed, expected at least {min_changed}")


if __name__ == "__main__":
    main()
