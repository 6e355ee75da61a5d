#!/usr/bin/env python3
"""Checks that a PNG written by `mhascope --screenshot` shows a picture, not a blank window.

Decodes 8-bit RGB/RGBA PNGs with Pillow (Debian's python3-pil; a pure-Python decoder took 2.5 s of
CPU per window-sized picture, dozens of times per suite), then requires many distinct colours,
enough pixels away from the background colour, and the expected size when given.
Usage: check_png.py FILE.png [WIDTHxHEIGHT]
"""
import sys

from PIL import Image


def decode(path):
    """(width, height, bytes per pixel, rows): each row the bytes of one line of 8-bit RGB or RGBA."""
    try:
        image = Image.open(path)
        image.load()
    except (OSError, SyntaxError) as e:
        raise SystemExit(f"{path}: cannot read as a PNG: {e}")
    if image.format != "PNG":
        raise SystemExit(f"{path}: not a PNG ({image.format})")
    if image.mode not in ("RGB", "RGBA"):
        raise SystemExit(f"{path}: unsupported PNG (mode {image.mode}; 8-bit RGB or RGBA expected)")
    width, height = image.size
    bpp = 3 if image.mode == "RGB" else 4
    raw, stride = image.tobytes(), width * bpp
    return width, height, bpp, [raw[y * stride:(y + 1) * stride] for y in range(height)]


def main():
    path = sys.argv[1]
    width, height, bpp, rows = decode(path)
    if len(sys.argv) > 2:
        want = tuple(int(v) for v in sys.argv[2].split("x"))
        if (width, height) != want:
            raise SystemExit(f"{path}: size {width}x{height}, expected {want[0]}x{want[1]}")
    colours, counts = set(), {}
    for row in rows[::4]:
        for x in range(0, width * bpp, 4 * bpp):
            px = row[x:x + 3]
            colours.add(px)
            counts[px] = counts.get(px, 0) + 1
    background, bg_count = max(counts.items(), key=lambda kv: kv[1])
    total = sum(counts.values())
    non_bg = 1.0 - bg_count / total
    print(f"{path}: {width}x{height}, {len(colours)} sampled colours, {non_bg:.0%} of pixels differ from the "
          f"background {tuple(background)}")
    if len(colours) < 64:
        raise SystemExit(f"{path}: looks blank: only {len(colours)} distinct colours")
    if non_bg < 0.05:
        raise SystemExit(f"{path}: looks blank: {non_bg:.1%} of pixels differ from the background")


if __name__ == "__main__":
    main()
