#!/usr/bin/env bash
# `export --out F.html`: one offline page. The command writes it for a stage (every head) and a
# learned matrix, refuses what it must, carries its workspace (a second export and `info` open it);
# then Debian's headless Chromium, with every network route closed, opens the page from the file:
# the cells' colours in its screenshot equal the PNG export's cells, and a pointed-at cell reads the
# value `run --dump` wrote (html_browser_check.py).
set -uo pipefail
BIN="$1"; FIX="$2"; HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/common.sh"

expect_ok "export a page of every head" "$BIN" export --preset cat --stage weights --out "$T/w.html"
grep -q "default-src 'none'" "$T/w.html" && ok "the page forbids every request" || bad "no policy in the page"
grep -q 'id="mhascope-workspace"' "$T/w.html" && ok "the page carries its workspace" || bad "no workspace in the page"
n="$(grep -o '"name":"head [0-9]*"' "$T/w.html" | wc -l)"
[ "$n" -eq 2 ] && ok "every head of the stage (2)" || bad "heads in the page: $n"
expect_ok "one head's page" "$BIN" export --preset cat --stage scores --head 1 --out "$T/s1.html"
grep -q '"name":"head 1"' "$T/s1.html" && ! grep -q '"name":"head 0"' "$T/s1.html" && ok "--head picks one" || bad "--head 1 page"
expect_ok "a learned matrix's page" "$BIN" export --preset cat --weight w_q --out "$T/wq.html"
# The page opens again as a workspace: its picture and its configuration.
expect_ok "the page as --workspace" "$BIN" export --workspace "$T/w.html" --out "$T/again.png"
out="$("$BIN" info --workspace "$T/w.html" 2>&1)"
grep -q "T_q" <<<"$out" && ok "info --workspace PAGE" || bad "info on the page: $out"
printf '<!doctype html><p>hi</p>\n' > "$T/plain.html"
expect_error "a page without a workspace" "without a mhascope workspace" "$BIN" info --workspace "$T/plain.html"
expect_error "an unknown extension" ".html for a page" "$BIN" export --preset cat --out "$T/w.txt"
cp "$T/w.html" "$T/keep.html"
expect_error "the page cannot be an input" "is the same file as --workspace" "$BIN" export --workspace "$T/keep.html" --out "$T/keep.html"
cmp -s "$T/w.html" "$T/keep.html" && ok "the input page is unchanged" || bad "the input page changed"

# A model folder's every head (--view model): its refusals (the page itself: gui_model_export).
expect_error "--view model needs a folder" "--view model needs --model DIR" "$BIN" export --preset cat --view model --out "$T/m.html"
expect_error "--view model writes a page" "--out must end in .html" "$BIN" export --model "$FIX/models/trained" --text "ab" --view model --out "$T/m.png"
expect_error "an unknown view" "unknown --view 'grid'" "$BIN" export --model "$FIX/models/trained" --text "ab" --view grid --out "$T/m.html"
expect_error "--view model never writes into the folder" "inside the model folder" "$BIN" export --model "$FIX/models/trained" --text "ab" --view model --out "$FIX/models/trained/m.html"

# In a real browser.
"$BIN" export --preset cat --stage weights --head 1 --out "$T/h1.png" >/dev/null
"$BIN" run --preset cat --dump "$T/dump" >/dev/null
if /usr/bin/python3 "$HERE/html_browser_check.py" "$T/w.html" "$T/h1.png" "$T/dump/weights.npy" "$T/browser"; then
  ok "Chromium: the page's cells are the picture's, a cell reads its value"
else
  bad "Chromium check (above)"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
