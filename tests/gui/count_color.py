#!/usr/bin/env python3
"""Counts the pixels of one exact colour in a PNG (decoder from check_png.py).

Usage: count_color.py FILE.png R,G,B MIN [MAX]  — fails unless MIN <= count (<= MAX).
Used to check that blocked cells are drawn in the blocked colour in the window too.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_png import decode  # noqa: E402


def main():
    path, colour = sys.argv[1], bytes(int(v) for v in sys.argv[2].split(","))
    lo = int(sys.argv[3])
    hi = int(sys.argv[4]) if len(sys.argv) > 4 else None
    width, _, bpp, rows = decode(path)
    n = sum(1 for row in rows for x in range(0, width * bpp, bpp) if row[x:x + 3] == colour)
    print(f"{path}: {n} pixels of colour {tuple(colour)}")
    if n < lo or (hi is not None and n > hi):
        raise SystemExit(f"{path}: {n} pixels of {tuple(colour)}, expected {lo}..{hi if hi is not None else 'any'}")


if __name__ == "__main__":
    main()
