#!/usr/bin/python3
"""Generates core/color/colormap_tables.inc: the 256-entry RGB tables behind mhascope's colormaps.

Run once by hand (the output is committed, so building mhascope needs no Python):
    apt-get install -y python3-matplotlib     # only for the viridis/magma/cividis data
    /usr/bin/python3 scripts/gen_colormaps.py

Where each table comes from
- viridis, magma: the published 256-entry data of the perceptually uniform maps by Stefan van der
  Walt and Nathaniel J. Smith (BIDS colormap project, released under CC0). Read from matplotlib's
  copy (matplotlib._cm_listed) and rounded to 8 bits; nothing is re-derived here, except that
  where two neighbouring entries round to the same 8-bit colour (viridis 112/113, 129/130), one
  channel of the later entry is rounded the other way (< 1 step of change) so every colour maps
  back to exactly one entry.
- cividis: the published 256-entry data of the colormap by Jamie R. Nuñez, Christopher R. Anderton
  and Ryan S. Renslow, "Optimizing colormaps with consideration for color vision deficiency to
  enable accurate interpretation of scientific data", PLoS ONE 13(7): e0199239 (2018): a
  sequential map (dark blue -> yellow) made so that people with and without red-green deficiency
  see the same lightness steps. Read from matplotlib's copy like viridis, rounded to 8 bits.
- coolwarm: computed here from the definition in Kenneth Moreland, "Diverging Color Maps for
  Scientific Visualization", Advances in Visual Computing (ISVC 2009), LNCS 5876, pp. 92-103:
  the paper's end colours (sRGB 59,76,192 blue and 180,4,38 red) are taken to its Msh space
  (polar CIELAB: M = |Lab|, s = acos(L*/M), h = atan2(b*, a*)), a white point M = max(M1, M2, 88)
  is put between them, M, s and h are interpolated linearly on each half, and the unsaturated
  end of each half takes the hue the paper's "adjust hue" rule gives. Blue and red are the pair
  the paper picks because they stay apart for protanopes and deuteranopes.
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
OUT = os.path.join(ROOT, "core", "color", "colormap_tables.inc")

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


def srgb8_to_lab(rgb):
    """CIELAB (D65) of an 8-bit sRGB colour."""
    r, g, b = (srgb_to_linear(c / 255) for c in rgb)
    x = 0.4124564 * r + 0.3575761 * g + 0.1804375 * b
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = 0.0193339 * r + 0.1191920 * g + 0.9503041 * b
    eps, kappa = 216 / 24389, 24389 / 27

    def f(t):
        return t ** (1 / 3) if t > eps else (kappa * t + 16) / 116

    fx, fy, fz = f(x / WHITE[0]), f(y / WHITE[1]), f(z / WHITE[2])
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


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


def lab_to_msh(L, a, b):
    M = math.sqrt(L * L + a * a + b * b)
    return M, math.acos(L / M), math.atan2(b, a)


def msh_to_lab(M, s, h):
    return M * math.cos(s), M * math.sin(s) * math.cos(h), M * math.sin(s) * math.sin(h)


def adjust_hue(msh_saturated, m_unsat):
    """Moreland's hue for the unsaturated end of a segment: spin away from the saturated end's hue
    so the segment does not pass through a perceptually flat hue band."""
    M, s, h = msh_saturated
    if M >= m_unsat - 0.1:
        return h
    spin = s * math.sqrt(m_unsat ** 2 - M ** 2) / (M * math.sin(s))
    return h + spin if h > -math.pi / 3 else h - spin


def moreland_interpolate(msh1, msh2, t):
    M1, s1, h1 = msh1
    M2, s2, h2 = msh2
    # Two saturated, distinct ends: pass through white (s = 0) at the centre.
    if s1 > 0.05 and s2 > 0.05 and abs(h1 - h2) > math.pi / 3:
        m_mid = max(M1, M2, 88.0)
        if t < 0.5:
            M2, s2, h2, t = m_mid, 0.0, 0.0, 2 * t
        else:
            M1, s1, h1, t = m_mid, 0.0, 0.0, 2 * t - 1
    if s1 < 0.05 and s2 > 0.05:
        h1 = adjust_hue((M2, s2, h2), M1)
    elif s2 < 0.05 and s1 > 0.05:
        h2 = adjust_hue((M1, s1, h1), M2)
    return (1 - t) * M1 + t * M2, (1 - t) * s1 + t * s2, (1 - t) * h1 + t * h2


def coolwarm():
    blue = lab_to_msh(*srgb8_to_lab((59, 76, 192)))
    red = lab_to_msh(*srgb8_to_lab((180, 4, 38)))
    table = []
    for i in range(256):
        rgb = lab_to_srgb(*msh_to_lab(*moreland_interpolate(blue, red, i / 255.0)))
        assert all(-2e-3 <= c <= 1 + 2e-3 for c in rgb), ("out of gamut", i, rgb)
        table.append(to8(rgb))
    assert table[0] == (59, 76, 192) and table[255] == (180, 4, 38), (table[0], table[255])
    # The white point M = 88 is sRGB (221, 221, 221); entries 127 and 128 sit just either side.
    centre = to8(lab_to_srgb(88.0, 0.0, 0.0))
    assert centre == (221, 221, 221), centre
    lightness = [srgb8_to_lightness(c) for c in table]
    for i in range(127):
        assert lightness[i + 1] >= lightness[i] - 0.3, ("blue half not monotone", i)
        assert lightness[254 - i] >= lightness[255 - i] - 0.3, ("red half not monotone", i)
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
        ("kCividisTable", "cividis", listed("cividis")),
        ("kMagmaTable", "magma", listed("magma")),
        ("kDivergingTable", "diverging", diverging()),
        ("kCoolwarmTable", "coolwarm", coolwarm()),
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
        f.write("// cividis: data by Jamie R. Nunez, Christopher R. Anderton and Ryan S. Renslow (PLoS ONE\n")
        f.write("//   13(7): e0199239, 2018), read from the same matplotlib, rounded the same way.\n")
        f.write("// diverging: our own two-segment CIELAB construction (see the script's docstring).\n")
        f.write("// coolwarm: computed by the script from K. Moreland, \"Diverging Color Maps for Scientific\n")
        f.write("//   Visualization\" (ISVC 2009): Msh interpolation between sRGB (59,76,192) and (180,4,38).\n")
        f.write("// gray: entry i = (i, i, i).\n")
        f.write("// Included by core/color/colormap.cpp inside namespace mhascope::{anonymous}.\n\n")
        for cname, _, table in tables:
            emit(f, cname, table)
    print("wrote", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
