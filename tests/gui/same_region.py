#!/usr/bin/env python3
"""Fails unless two PNGs have the same pixels inside a box (decoder from check_png.py).

Usage: same_region.py A.png B.png X0 Y0 X1 Y1
Used to check that the window's "Open in pipeline" exports the same heatmap cells as
`mhascope export --checkpoint ... --layer L` (the subtitles differ, the cells must not).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_png import decode  # noqa: E402


def main():
    a, b = sys.argv[1], sys.argv[2]
    x0, y0, x1, y1 = (int(v) for v in sys.argv[3:7])
    wa, _, ba, ra = decode(a)
    wb, _, bb, rb = decode(b)
    diff = 0
    for y in range(y0, y1):
        for x in range(x0, x1):
            if ra[y][x * ba:x * ba + 3] != rb[y][x * bb:x * bb + 3]:
                diff += 1
    print(f"{a} vs {b}: {diff} of {(x1 - x0) * (y1 - y0)} pixels differ in ({x0},{y0})-({x1},{y1})")
    if diff:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
