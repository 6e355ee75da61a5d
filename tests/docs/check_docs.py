#!/usr/bin/python3
"""The README is a front door and docs/ holds the rest: README.md stays within 300 lines; every
relative link and #anchor in README.md and docs/*.md reaches a file and a heading that exist
(pictures included); neither holds dated entries, commit hashes or tracker numbers (history lives
in commit messages); and every comment in the sources that sends the reader to docs/<page>.md
names a page that exists and, when it quotes a section ("Title" or **Title**), a title the page has.

    /usr/bin/python3 tests/docs/check_docs.py [repository root]
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
README_MAX_LINES = 300
problems = []


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def prose(text):
    """The text outside fenced code blocks."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


def slugs(text):
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces → '-'."""
    out = set()
    for line in prose(text).splitlines():
        m = re.match(r"^#+\s+(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


pages = ["README.md"] + sorted("docs/" + n for n in os.listdir(os.path.join(ROOT, "docs")) if n.endswith(".md"))

lines = read("README.md").count("\n")
if lines > README_MAX_LINES:
    problems.append(f"README.md has {lines} lines; at most {README_MAX_LINES} (the rest belongs in docs/)")

for page in pages:
    text = read(page)
    body = prose(text)
    for m in re.finditer(r"\]\(([^)\s]+)\)", body):
        link = m.group(1)
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(os.path.join(ROOT, target)):
            problems.append(f"{page}: link '{link}': no file {target}")
        elif anchor and target.endswith(".md") and anchor not in slugs(read(target)):
            problems.append(f"{page}: link '{link}': {target} has no heading with the anchor #{anchor}")
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in ((r"\b20\d\d-\d\d-\d\d\b", "a date"),
                              (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", "a commit hash"),
                              (r"\bissues? #?\d+", "a tracker number")):
            m = re.search(pattern, line, re.IGNORECASE if what == "a tracker number" else 0)
            if m:
                problems.append(f"{page}:{n}: {what} ('{m.group(0)}'): docs say what is, history lives in commit messages")

# Comments that point into docs/.
ref = re.compile(r"docs/([\w.-]+\.md)(?:,?\s*(?:\"([^\"]+)\"|\*\*([^*]+)\*\*))?")
for top in ("core", "app", "scripts", "tests", "fuzz", "third_party", "CMakeLists.txt", "assets/docs"):
    base = os.path.join(ROOT, top)
    files = [base] if os.path.isfile(base) else [os.path.join(d, f) for d, _, fs in os.walk(base) for f in fs]
    for path in files:
        if "/fixtures/" in path or path.endswith(("check_docs.py", ".png", ".svg", ".npy", ".safetensors")):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        for m in ref.finditer(text):
            page = "docs/" + m.group(1)
            where = os.path.relpath(path, ROOT)
            if not os.path.exists(os.path.join(ROOT, page)):
                problems.append(f"{where}: points at {page}, which does not exist")
                continue
            title = m.group(2) or m.group(3)
            if title and title not in read(page):
                problems.append(f"{where}: points at {page}, \"{title}\", which that page does not have")

for p in problems:
    print("docs: " + p)
if problems:
    sys.exit(1)
print(f"docs: README.md {lines} lines; {len(pages)} pages, their links and the sources' pointers into docs/ checked")
