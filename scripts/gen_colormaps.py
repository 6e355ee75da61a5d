#!/usr/bin/python3
"""Generates core/color/colormap_tables.inc: the 256-entry RGB tables behind mhascope's colormaps.

Run once by hand (the output is committed, so building mhascope needs no Python):
    apt-get install -y python3-matplotlib     # only for the viridis/magma data
    /usr/bin/python3 scripts/gen_colormaps.py

Where each table comes from
- viridis, magma: the published 256-entry data of the perceptually uniform maps by Stefan van der
  Walt and Nathaniel J. Smith (BIDS colormap project, released under CC0). Read from matplotlib's
  copy (matplotlib._cm_listed) and rounded to 8 bits; nothing is re-derived here, except that
  where two neighbouring entries round to the same 8-bit colour (viridis 112/113, 129/130), one
  channel of the later entry is rounded the other way (< 1 step of change) so every colour maps
  back to exactly one entry.
- diverging (blue - near-white - red): our own construction. Two straight lines in CIELAB meet at
  the centre: each goes from a saturated end colour (L* = 40) to a near-white centre (L* = 96)
  at the same hue angle, so along each half the hue is constant and lightness rises linearly
  toward the centre. Both ends share L* and chroma, so the map is symmetric in lightness:
  entry i and entry 255-i are equally light, and a value and its negative look equally strong.
  The centre keeps a trace of chroma (C* = 4) on each side so entries 127 and 128 stay distinct
  colours — the table must be invertible (colour -> value) for the faithfulness tests.
- gray: entry i is (i, i, i).

Every table is checked before writing: 256 distinct entries (so a colour inverts to one index),
in gamut, and (diverging) lightness monotone from each end to the centre and symmetric.
"""

import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "core", "src", "colormap_tables.inc")

# --- CIELAB <-> sRGB (D65 white, IEC 61966-2-1 transfer curve) --------------------------------

WHITE = (0.95047, 1.0, 1.08883)


def srgb_to_linear(c):
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def linear_to_srgb(c):
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def lab_to_srgb(L, a, b):
    """CIELAB -> sRGB in [0, 1] (unclamped, so callers can check the gamut)."""
    fy = (L + 16) / 116
    fx = fy + a / 500
    fz = fy - b / 200
    eps, kappa = 216 / 24389, 24389 / 27

    def finv(f):
        return f ** 3 if f ** 3 > eps else (116 * f - 16) / kappa

    x, y, z = WHITE[0] * finv(fx), WHITE[1] * finv(fy), WHITE[2] * finv(fz)
    r = 3.2404542 * x - 1.5371385 * y - 0.4985314 * z
    g = -0.9692660 * x + 1.8760108 * y + 0.0415560 * z
    bl = 0.0556434 * x - 0.2040259 * y + 1.0572252 * z
    return tuple(linear_to_srgb(max(c, 0.0)) if c >= 0 else c for c in (r, g, bl))


def srgb8_to_lightness(rgb):
    """L* of an 8-bit sRGB colour (used for the monotonicity check)."""
    r, g, b = (srgb_to_linear(c / 255) for c in rgb)
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    eps, kappa = 216 / 24389, 24389 / 27
    fy = y ** (1 / 3) if y > eps else (kappa * y + 16) / 116
    return 116 * fy - 16


def to8(rgb01):
    return tuple(int(round(min(max(c, 0.0), 1.0) * 255)) for c in rgb01)


# --- the tables --------------------------------------------------------------------------------


def listed(name):
    from matplotlib import _cm_listed  # the original float data, not a resampled colormap

    data = getattr(_cm_listed, "_%s_data" % name)
    assert len(data) == 256, name
    table = []
    for c in data:
        rgb = list(to8(c))
        if tuple(rgb) in table:
            # Two neighbouring entries round to the same 8-bit colour (viridis 112/113 and
            # 129/130 do). Round the channel closest to its rounding boundary the other way:
            # the colour moves by less than one 8-bit step, and the table becomes invertible.
            scaled = [x * 255 for x in c]
            k = max(range(3), key=lambda j: abs(scaled[j] - round(scaled[j])))
            rgb[k] += 1 if scaled[k] > rgb[k] else -1
        table.append(tuple(rgb))
    return table


def diverging():
    L_END, L_CENTRE = 40.0, 96.0
    C_END, C_CENTRE = 56.0, 4.0
    HUE_BLUE, HUE_RED = 287.0, 32.0  # CIELAB hue angles in degrees
    table = []
    for i in range(256):
        t = i / 255.0                      # 0 = most negative, 1 = most positive
        s = abs(t - 0.5) * 2.0             # 0 at the centre, 1 at either end
        hue = HUE_BLUE if t < 0.5 else HUE_RED
        L = L_CENTRE + (L_END - L_CENTRE) * s
        C = C_CENTRE + (C_END - C_CENTRE) * s
        a, b = C * math.cos(math.radians(hue)), C * math.sin(math.radians(hue))
        rgb = lab_to_srgb(L, a, b)
        assert all(-1e-3 <= c <= 1 + 1e-3 for c in rgb), ("out of gamut", i, rgb)
        table.append(to8(rgb))
    lightness = [srgb8_to_lightness(c) for c in table]
    for i in range(127):  # rising toward the centre from both ends (0.3: 8-bit rounding slack)
        assert lightness[i + 1] >= lightness[i] - 0.3, ("blue half not monotone", i)
        assert lightness[254 - i] >= lightness[255 - i] - 0.3, ("red half not monotone", i)
    for i in range(128):
        assert abs(lightness[i] - lightness[255 - i]) < 1.5, ("not symmetric", i)
    return table


def gray():
    return [(i, i, i) for i in range(256)]


def check_distinct(name, table):
    assert len(table) == 256, name
    assert len(set(table)) == 256, "%s: two entries share one colour; inversion would be ambiguous" % name


def emit(f, cname, table):
    f.write("constexpr std::uint8_t %s[256][3] = {\n" % cname)
    for i in range(0, 256, 4):
        row = ", ".join("{%3d, %3d, %3d}" % c for c in table[i:i + 4])
        f.write("    %s,\n" % row)
    f.write("};\n\n")


def main():
    import matplotlib

    tables = [
        ("kViridisTable", "viridis", listed("viridis")),
        ("kMagmaTable", "magma", listed("magma")),
        ("kDivergingTable", "diverging", diverging()),
        ("kGrayTable", "gray", gray()),
    ]
    for _, name, table in tables:
        check_distinct(name, table)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("// GENERATED by scripts/gen_colormaps.py - do not edit by hand; re-run the script.\n")
        f.write("// 256-entry 8-bit sRGB tables, entry 0 = low end of the range, 255 = high end.\n")
        f.write("// viridis, magma: data by Stefan van der Walt and Nathaniel J. Smith (BIDS colormap\n")
        f.write("//   project), released under CC0; read from matplotlib %s (matplotlib._cm_listed),\n"
                % matplotlib.__version__)
        f.write("//   rounded to 8 bits (8-bit ties between neighbours broken by < 1 step, see script).\n")
        f.write("// diverging: our own two-segment CIELAB construction (see the script's docstring).\n")
        f.write("// gray: entry i = (i, i, i).\n")
        f.write("// Included by core/color/colormap.cpp inside namespace mhascope::{anonymous}.\n\n")
        for cname, _, table in tables:
            emit(f, cname, table)
    print("wrote", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
