#!/usr/bin/env python3
"""Draws mhascope's icon: a causal attention-weights matrix (4 queries x 4 keys, viridis, the
blocked upper triangle dark) on a rounded dark square. Writes the SVG and the PNG sizes of the
hicolor theme from the same shapes, so they cannot drift apart. Python's standard library only.

    python3 scripts/gen_icon.py            # rewrites assets/icons/
"""
import os
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "assets", "icons")
SIZES = (16, 32, 48, 64, 128, 256)

# Design space 256 x 256. Background: rounded square.
BG, BG_RADIUS = (0x1d, 0x24, 0x33), 44
BLOCKED = (0x33, 0x3b, 0x4f)
# Row t holds the softmax weights of query t over keys 0..t (causal): each row sums to 1.
WEIGHTS = ((1.0,), (0.3, 0.7), (0.15, 0.25, 0.6), (0.1, 0.5, 0.15, 0.25))
GRID_X, GRID_Y, CELL, GAP = 36, 36, 44, 4
VIRIDIS = ((0.0, (0x44, 0x01, 0x54)), (0.25, (0x3b, 0x52, 0x8b)), (0.5, (0x21, 0x91, 0x8c)),
           (0.75, (0x5e, 0xc9, 0x62)), (1.0, (0xfd, 0xe7, 0x25)))


def viridis(v):
    for (a, ca), (b, cb) in zip(VIRIDIS, VIRIDIS[1:]):
        if v <= b:
            f = (v - a) / (b - a)
            return tuple(round(x + (y - x) * f) for x, y in zip(ca, cb))
    return VIRIDIS[-1][1]


def cells():
    """(x, y, w, h, rgb) of every matrix cell in design units."""
    out = []
    for t in range(4):
        for k in range(4):
            x, y = GRID_X + k * (CELL + GAP), GRID_Y + t * (CELL + GAP)
            colour = viridis(WEIGHTS[t][k]) if k <= t else BLOCKED
            out.append((x, y, CELL, CELL, colour))
    return out


def svg():
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256">',
             '  <title>mhascope</title>',
             f'  <rect x="0" y="0" width="256" height="256" rx="{BG_RADIUS}" ry="{BG_RADIUS}" fill="#%02x%02x%02x"/>' % BG]
    for x, y, w, h, c in cells():
        parts.append(f'  <rect x="{x}" y="{y}" width="{w}" height="{h}" rx="4" ry="4" fill="#%02x%02x%02x"/>' % c)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def inside_rounded(px, py, x, y, w, h, r):
    if px < x or py < y or px >= x + w or py >= y + h:
        return False
    cx = min(max(px, x + r), x + w - r)
    cy = min(max(py, y + r), y + h - r)
    return (px - cx) ** 2 + (py - cy) ** 2 <= r * r


def render(size, samples=4):
    """RGBA rows; each pixel averages samples x samples points of the design (antialiasing)."""
    scale = 256.0 / size
    shapes = [(0, 0, 256, 256, BG_RADIUS, BG)] + [(x, y, w, h, 4, c) for x, y, w, h, c in cells()]
    rows = []
    for j in range(size):
        row = bytearray()
        for i in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]  # premultiplied
            for sj in range(samples):
                for si in range(samples):
                    px = (i + (si + 0.5) / samples) * scale
                    py = (j + (sj + 0.5) / samples) * scale
                    for x, y, w, h, r, c in reversed(shapes):  # topmost first
                        if inside_rounded(px, py, x, y, w, h, r):
                            acc[0] += c[0]; acc[1] += c[1]; acc[2] += c[2]; acc[3] += 255
                            break
            n = samples * samples
            a = acc[3] / n
            if a > 0:
                row += bytes((round(acc[0] / n * 255 / a), round(acc[1] / n * 255 / a),
                              round(acc[2] / n * 255 / a), round(a)))
            else:
                row += bytes(4)
        rows.append(bytes(row))
    return rows


def png(size, rows):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "mhascope.svg"), "w") as f:
        f.write(svg())
    for s in SIZES:
        d = os.path.join(OUT, "hicolor", f"{s}x{s}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "mhascope.png"), "wb") as f:
            f.write(png(s, render(s)))
    print(f"wrote {OUT}/mhascope.svg and PNGs {', '.join(map(str, SIZES))}")


if __name__ == "__main__":
    main()
