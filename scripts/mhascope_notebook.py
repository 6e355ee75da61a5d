#!/usr/bin/python3
"""An exported mhascope page inline in a notebook cell (Jupyter, VS Code, anything that shows an
object's _repr_html_).

    import mhascope_notebook
    mhascope_notebook.page("--preset", "cat", "--stage", "weights")          # shows every head
    p = mhascope_notebook.page("--model", "gpt2", "--layer", "5", "--text", "When Mary and John ...")
    p.html                                                                # the page itself
    p.save("view.html")                                                   # refuses an existing file

`page(*args)` runs `mhascope export ARGS --out PAGE.html` (the same page the window's Export… → HTML
and the command line write: offline, interactive, carrying its workspace) in a scratch folder and
returns it. In a cell the page sits in an iframe of its own (srcdoc), so its script and ids cannot
meet the notebook's or another page's, and its policy still forbids every request. The mhascope
binary is `mhascope` on PATH unless `binary=` or the environment's MHASCOPE names another.
"""
import html
import os
import shutil
import subprocess
import tempfile


class ExportError(Exception):
    """mhascope refused the export; the message is its error line."""


class Page:
    def __init__(self, text, height=900):
        self.html = text
        self.height = height

    def _repr_html_(self):
        return ('<iframe style="width:100%%;height:%dpx;border:0" sandbox="allow-scripts" srcdoc="%s"></iframe>'
                % (self.height, html.escape(self.html, quote=True)))

    def save(self, path):
        """Writes the page to a new file (an existing one is never replaced)."""
        with open(path, "x", encoding="utf-8") as f:
            f.write(self.html)


def page(*args, binary=None, height=900, timeout=600):
    exe = binary or os.environ.get("MHASCOPE") or shutil.which("mhascope")
    if not exe:
        raise ExportError("no mhascope binary: put it on PATH, set MHASCOPE, or pass binary=")
    if any(a == "--out" or str(a).startswith("--out=") for a in args):
        raise ExportError("page() chooses the file itself: leave --out out")
    with tempfile.TemporaryDirectory(prefix="mhascope_page_") as d:
        out = os.path.join(d, "view.html")
        r = subprocess.run([exe, "export", *map(str, args), "--out", out], capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise ExportError((r.stderr or r.stdout).strip())
        with open(out, encoding="utf-8") as f:
            return Page(f.read(), height)
