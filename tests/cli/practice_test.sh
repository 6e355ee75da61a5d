#!/usr/bin/env bash
# End-to-end checks of `mhascope practice`: list, show (hints, the solution), start (never replacing
# a file), check (a wrong solution diagnosed at its stage and line, exit 2; the reference solution,
# exit 0; --json; a syntax error and a loop reported with the file and line, bounded), complete (the
# progress file), and the bad inputs. The progress lives in a scratch $XDG_CONFIG_HOME.
set -uo pipefail
BIN="$1"; FIX="$2"; ROOT="$(cd "$FIX/../.." && pwd)"
source "$(dirname "$0")/common.sh"
export XDG_CONFIG_HOME="$T/config"

out="$("$BIN" practice list 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q '^mha  *\[    \] PyTorch' <<<"$out" && grep -q '^rope ' <<<"$out" && ok "list" || bad "list rc=$rc: $out"

out="$("$BIN" practice show mha --hints 1 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q '^Hint 1 of ' <<<"$out" && ! grep -q '^Hint 2 of ' <<<"$out" && grep -q 'Interview points' <<<"$out" \
  && ok "show reveals one hint" || bad "show rc=$rc: $out"
out="$("$BIN" practice show mha --solution 2>&1)"
grep -q 'class MultiHeadAttention' <<<"$out" && ok "show --solution prints the reference" || bad "solution: $out"

expect_ok "start writes the starter" "$BIN" practice start mha --out "$T/mine.py"
head -1 "$T/mine.py" | grep -q '^# mhascope exercise: mha$' && ok "the starter names its exercise" || bad "starter: $(head -2 "$T/mine.py")"
echo "my work" >"$T/keep.py"
expect_error "start never replaces a file" "already exists" "$BIN" practice start mha --out "$T/keep.py"
[ "$(cat "$T/keep.py")" = "my work" ] && ok "the file is untouched" || bad "keep.py changed"

# The starter itself: NotImplementedError at its line, exit 2.
out="$("$BIN" practice check "$T/mine.py" 2>&1)"; rc=$?
[ $rc -eq 2 ] && grep -q 'NotImplementedError' <<<"$out" && ok "the starter is checked: not implemented yet" || bad "starter check rc=$rc: $out"

cp "$FIX/practice/wrong/scale_by_sqrt_d_model.py" "$T/wrong.py"
line="$(grep -n '# the mistake' "$T/wrong.py" | cut -d: -f1)"
out="$("$BIN" practice check "$T/wrong.py" --json "$T/report.json" 2>&1)"; rc=$?
[ $rc -eq 2 ] && ok "a wrong solution exits 2" || bad "wrong rc=$rc: $out"
grep -q "DIFFERS  scaled_scores .*(line $line)" <<<"$out" && ok "the first difference at scaled_scores, line $line" || bad "stage: $out"
grep -q '^diagnosis: Scaled by √d_model' <<<"$out" && grep -q 'divide by √d_k = 2.45' <<<"$out" && ok "the diagnosis with the numbers" || bad "diagnosis: $out"
/usr/bin/python3 - "$T/report.json" "$line" <<'PYEOF' && ok "--json: the report's fields" || bad "json: $(cat "$T/report.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["exercise"] == "mha" and r["all_passed"] is False, r
assert r["diagnosis"]["mistake"] == "scale_by_sqrt_d_model" and r["diagnosis"]["line"] == int(sys.argv[2]), r["diagnosis"]
st = {s["stage"]: s["status"] for s in r["stages"]}
assert st["scores"] == "match" and st["scaled_scores"] == "differs" and st["output"] == "after", st
assert [c["id"] for c in r["cases"]][0] == "self" and not r["cases"][0]["passed"], r["cases"]
PYEOF
expect_error "--json never replaces a file without --force" "exists" "$BIN" practice check "$T/wrong.py" --json "$T/report.json"
expect_error "--json never names the checked file" "FILE" "$BIN" practice check "$T/wrong.py" --json "$T/wrong.py" --force

out="$("$BIN" practice check "$ROOT/assets/practice/mha.solution.py" 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q 'all pass' <<<"$out" && ok "the reference solution passes, exit 0" || bad "solution rc=$rc: $out"

printf '# mhascope exercise: mha\nimport torch\n\ndef broken(:\n    pass\n' >"$T/syntax.py"
out="$("$BIN" practice check "$T/syntax.py" 2>&1)"; rc=$?
[ $rc -eq 2 ] && grep -q 'syntax' <<<"$out" && grep -q 'line 4' <<<"$out" && ok "a syntax error, with its line" || bad "syntax rc=$rc: $out"

printf '# mhascope exercise: mha\nimport torch.nn as nn\nclass MultiHeadAttention(nn.Module):\n    def __init__(self, d_model, num_heads):\n        super().__init__()\n        while True:\n            pass\n' >"$T/loop.py"
start=$(date +%s)
out="$("$BIN" practice check "$T/loop.py" --timeout 3 2>&1)"; rc=$?
took=$(( $(date +%s) - start ))
[ $rc -eq 2 ] && grep -qi 'time' <<<"$out" && [ $took -lt 15 ] && ok "an endless loop stopped at the time limit (${took} s)" || bad "loop rc=$rc took=$took: $out"

printf 'import torch\n' >"$T/nomarker.py"
expect_error "a file that names no exercise" "names no exercise" "$BIN" practice check "$T/nomarker.py"
expect_error "an unknown exercise" "no exercise 'nope'" "$BIN" practice check "$T/nomarker.py" --exercise nope
expect_error "a missing file" "missing.py" "$BIN" practice check "$T/missing.py"
expect_error "show of an unknown exercise" "exercises: mha" "$BIN" practice show nope

expect_ok "complete marks an exercise" "$BIN" practice complete mha
grep -q '"mha"' "$XDG_CONFIG_HOME/mhascope/practice.json" && ok "the progress file holds it" || bad "progress: $(cat "$XDG_CONFIG_HOME/mhascope/practice.json")"
"$BIN" practice list 2>&1 | grep -q '^mha  *\[done\]' && ok "list shows it done" || bad "list after complete"
expect_ok "complete --undo" "$BIN" practice complete mha --undo
"$BIN" practice list 2>&1 | grep -q '^mha  *\[    \]' && ok "list shows it not done" || bad "list after undo"
echo '{"version": 7}' >"$XDG_CONFIG_HOME/mhascope/practice.json"
expect_error "a progress file of another version" "version 7" "$BIN" practice complete mha

[ $fails -eq 0 ] && echo "all practice checks passed" || { echo "$fails failed"; exit 1; }
