#!/usr/bin/python3
"""scripts/mhascope_notebook.py: the page a notebook cell shows is the exported page, in an
iframe whose srcdoc escapes it; a refused export raises with mhascope's message; save() never
replaces a file."""
import html
import os
import re
import sys
import tempfile

binary, root = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "scripts"))
import mhascope_notebook  # noqa: E402

fails = 0


def check(name, cond):
    global fails
    print(("ok   - " if cond else "FAIL - ") + name)
    fails += 0 if cond else 1


p = mhascope_notebook.page("--preset", "cat", "--stage", "weights", binary=binary)
check("the page is an exported page", p.html.startswith("<!DOCTYPE html>") and 'id="mhascope-data"' in p.html)
check("every head of the stage", len(re.findall(r'"name":"head \d+"', p.html)) == 2)
cell = p._repr_html_()
m = re.match(r'<iframe [^>]*srcdoc="([^"]*)"></iframe>$', cell)
check("the cell is one iframe", m is not None)
check("its srcdoc is the page, escaped", m is not None and html.unescape(m.group(1)) == p.html)
try:
    mhascope_notebook.page("--preset", "cat", "--stage", "nope", binary=binary)
    check("a refused export raises", False)
except mhascope_notebook.ExportError as e:
    check("a refused export raises with mhascope's message", "unknown stage 'nope'" in str(e))
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "v.html")
    p.save(path)
    try:
        p.save(path)
        check("save() refuses an existing file", False)
    except FileExistsError:
        check("save() refuses an existing file", open(path, encoding="utf-8").read() == p.html)
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
