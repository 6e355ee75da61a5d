#!/usr/bin/env python3
"""Opens an exported page in Debian's headless Chromium with every network route closed and checks
what a user sees: the large view's cells have the colours of the PNG export of the same head, and
the cell the address points at (#head=H&cell=R,C) reads the value `run --dump` wrote.

usage: html_browser_check.py PAGE.html HEAD1.png WEIGHTS.npy SCRATCH_DIR
(the page holds every head of the weights; the PNG is head 1's picture; WEIGHTS.npy is (B, h, T, T))
"""
import html
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from PIL import Image

HEAD = 1


def chromium(scratch, *args):
    exe = shutil.which("chromium")
    if not exe:
        sys.exit("chromium is not installed (scripts/setup.sh installs it)")
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--force-device-scale-factor=1",
           "--force-color-profile=srgb", "--hide-scrollbars", "--window-size=1400,1600", "--no-first-run",
           "--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-component-update",
           "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
           "--user-data-dir=" + os.path.join(scratch, "profile"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def png_cells(path, rows, cols):
    """The picture's cell grid, found from the hairline frame drawn just outside the cells
    (grey 140, one pixel wide): returns x0, y0, cell width, cell height and the image."""
    im = np.asarray(Image.open(path).convert("RGB")).astype(int)
    grey = np.all(im == 140, axis=2)
    best = (0, 0, 0)
    for y in range(grey.shape[0]):
        row = grey[y]
        x = 0
        while x < row.size:
            if row[x]:
                s = x
                while x < row.size and row[x]:
                    x += 1
                if x - s > best[0]:
                    best = (x - s, y, s)
            x += 1
    run, y, x = best
    down = 0
    while y + down < grey.shape[0] and grey[y + down, x]:
        down += 1
    cw, ch = (run - 2) / cols, (down - 2) / rows
    if cw != int(cw) or ch != int(ch):
        sys.exit(f"the picture's frame ({run} x {down} px) does not hold {cols} x {rows} whole cells")
    return x + 1, y + 1, int(cw), int(ch), im


def main():
    page, png, npy, scratch = sys.argv[1:5]
    os.makedirs(scratch, exist_ok=True)
    w = np.load(npy)[0, HEAD]
    T = w.shape[0]
    r, c = T - 1, 1
    url = "file://" + os.path.abspath(page)

    # The pointed-at cell, from the page's own script (the DOM after it ran).
    dom = chromium(scratch, "--dump-dom", f"{url}#head={HEAD}&cell={r},{c}")
    if dom.returncode != 0 or 'data-ready="1"' not in dom.stdout:
        sys.exit(f"the page's script did not finish (rc={dom.returncode}): {dom.stderr[-600:]}")
    m = re.search(r'<p id="readout">(.*?)</p>', dom.stdout)
    readout = html.unescape(m.group(1)) if m else ""
    got = re.search(r":\s*(-?[0-9.]+)$", readout)
    if not got or abs(float(got.group(1)) - float(w[r, c])) > 0.006 or f"head {HEAD}" not in readout:
        sys.exit(f"cell ({r}, {c}) of head {HEAD} reads '{readout}', the dump has {w[r, c]:.4f}")
    print(f"readout: {readout}")
    cells = re.search(r'data-cells="([^"]+)"', dom.stdout).group(1).split(",")
    left, top, scale, cell, label_w = (float(v) for v in cells)

    # The large view's cells against the picture's.
    shot = os.path.join(scratch, "page.png")
    s = chromium(scratch, f"--screenshot={shot}", f"{url}#head={HEAD}")
    if s.returncode != 0 or not os.path.exists(shot):
        sys.exit(f"no screenshot (rc={s.returncode}): {s.stderr[-600:]}")
    page_im = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    x0, y0, cw, ch, pic = png_cells(png, T, T)
    wrong = 0
    for i in range(T):
        for j in range(T):
            if j > i:  # blocked by the causal mask: a cross in both, checked by the core tests
                continue
            want = pic[y0 + i * ch + 2, x0 + j * cw + 2]
            px = int(round(left + (label_w + 1 + j * cell + 2) * scale))
            py = int(round(top + (1 + i * cell + 2) * scale))
            have = page_im[py, px]
            if np.abs(want - have).max() > 1:
                wrong += 1
                if wrong <= 5:
                    print(f"cell ({i}, {j}): page {tuple(have)} at ({px}, {py}), picture {tuple(want)}")
    if wrong:
        sys.exit(f"{wrong} of the page's cells differ from the picture's")
    print(f"{T * (T + 1) // 2} cells equal the picture's")


if __name__ == "__main__":
    main()
