#!/usr/bin/env python3
"""Checks that a PNG written by `mhascope --screenshot` shows a picture, not a blank window.

Standard library only (zlib): decodes 8-bit RGB/RGBA PNGs, then requires many distinct colours,
enough pixels away from the background colour, and the expected size when given.
Usage: check_png.py FILE.png [WIDTHxHEIGHT]
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG (bad signature)")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {ctype})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


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
