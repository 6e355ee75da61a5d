#!/usr/bin/python3
"""Writes tests/fixtures/color/see_as.json: known colours as people with each simulated colour-vision
deficiency (and a grey printer) see them, the reference core/color/see_as.cpp is tested against.

    /usr/bin/python3 scripts/gen_see_as_fixtures.py

Computed here with numpy from the published definitions, independently of the C++ code:
- protanopia, deuteranopia, tritanopia: the severity-1.0 simulation matrices of G. M. Machado,
  M. M. Oliveira and L. A. F. Fernandes, "A Physiologically-based Model for Simulation of Color
  Vision Deficiency", IEEE Transactions on Visualization and Computer Graphics 15(6), 2009, applied
  to linear RGB;
- greyscale: relative luminance Y = 0.2126 R + 0.7152 G + 0.0722 B of linear RGB (ITU-R BT.709
  primaries, as sRGB's) on all three channels;
- 8-bit sRGB decoded and encoded by the IEC 61966-2-1 curve, results clamped to [0, 1] in linear
  RGB and rounded to the nearest 8-bit code.
"""

import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "color", "see_as.json")

MACHADO_SEVERITY_1 = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}
LUMA = [0.2126, 0.7152, 0.0722]

# Primaries, secondaries, greys, and colours the window and pictures use: viridis' ends, the NaN
# magenta, the blocked grey and its cross, the fully masked row's red, a head colour.
COLOURS = [
    (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (255, 0, 255),
    (0, 0, 0), (255, 255, 255), (128, 128, 128), (64, 64, 64), (205, 205, 205),
    (68, 1, 84), (253, 231, 37), (33, 145, 140), (255, 80, 60), (59, 76, 192), (180, 4, 38),
    (12, 200, 97), (250, 128, 10), (1, 2, 3),
]


def decode(c):
    c = np.asarray(c, dtype=np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def encode(lin):
    lin = np.clip(lin, 0.0, 1.0)
    s = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * np.power(lin, 1 / 2.4) - 0.055)
    return [int(v) for v in np.floor(s * 255.0 + 0.5)]


def simulate(kind, rgb):
    lin = decode(rgb)
    if kind == "greyscale":
        y = float(np.dot(LUMA, lin))
        return encode(np.array([y, y, y]))
    return encode(np.array(MACHADO_SEVERITY_1[kind]) @ lin)


def main():
    for name, m in MACHADO_SEVERITY_1.items():  # a grey stays grey: every row sums to 1
        assert np.allclose(np.sum(m, axis=1), 1.0, atol=2e-6), name
    cases = []
    for rgb in COLOURS:
        case = {"rgb": list(rgb)}
        for kind in ("protanopia", "deuteranopia", "tritanopia", "greyscale"):
            case[kind] = simulate(kind, rgb)
        cases.append(case)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write('{"generator": "scripts/gen_see_as_fixtures.py", "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print("wrote", OUT, len(cases), "colours")


if __name__ == "__main__":
    main()
