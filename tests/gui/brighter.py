#!/usr/bin/env python3
"""Checks that the second PNG is brighter on average than the first (decoder from check_png.py).

Usage: brighter.py DARK.png BRIGHT.png MIN_GAIN — fails unless mean(BRIGHT) >= mean(DARK) + MIN_GAIN
(luminance 0..255). Used to check that the log colour scale lights up the ~1/T weights of a long
causal sequence, which the linear scale leaves uniformly dark.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_png import decode  # noqa: E402


def mean_luma(path):
    width, height, bpp, rows = decode(path)
    total = 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            total += 0.299 * row[x] + 0.587 * row[x + 1] + 0.114 * row[x + 2]
    return total / (width * height)


def main():
    dark, bright, gain = sys.argv[1], sys.argv[2], float(sys.argv[3])
    a, b = mean_luma(dark), mean_luma(bright)
    print(f"mean luminance: {dark} {a:.2f}, {bright} {b:.2f}")
    if b < a + gain:
        raise SystemExit(f"{bright} is not brighter than {dark} by {gain}: {a:.2f} vs {b:.2f}")


if __name__ == "__main__":
    main()
