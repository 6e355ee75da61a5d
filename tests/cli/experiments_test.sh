#!/usr/bin/env bash
# `mhascope patch` and `mhascope attribute` on the trained fixture folder (its byte-level tokenizer: one token a
# letter): the numbers against the PyTorch reference of scripts/gen_experiment_fixtures.py, the induction head they
# point at, the heatmaps of --export-dir against --json, and every refusal.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
M="$FIX/models/trained"
REF="$FIX/reference/experiments.json"
PY=/usr/bin/python3
CLEAN=qwertyuiqwertyui; CORRUPT=abcdfgihqwertyui

out="$("$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site head --json "$T/head.json" \
  --export-dir "$T/out" 2>"$T/err")"
if [ $? -eq 0 ] && grep -q "denoising: the corrupted run with the clean run's numbers at each head output" <<<"$out" \
  && grep -q "restored fraction" <<<"$out" && grep -q "patching: 4 of 4 sites" "$T/err"; then
  ok "patch --site head: the table and the progress"
else bad "patch head: $out $(cat "$T/err")"; fi
"$PY" - "$T/head.json" "$REF" "$T/out" <<'PYEOF' && ok "patch: --json equals the reference, the induction head restores, the heatmap" || bad "patch numbers"
import json, sys, numpy as np
got = json.load(open(sys.argv[1]))
case = next(c for c in json.load(open(sys.argv[2]))["cases"] if c["name"] == "trained_induction")
want = next(s for s in case["sweeps"] if s["site"] == "head" and s["direction"] == "denoise")["values"]
assert got["T"] == 16 and got["answer"] == case["right"] and got["wrong"] == case["wrong"], got
assert np.allclose(got["patched_metric"], want, atol=1e-4), (got["patched_metric"], want)
r = np.array(got["restored"])
assert r[1, 1] > 0.8 and r[1, 1] > r[1, 0] + 0.5, r
npy = np.load(sys.argv[3] + "/patch_head_denoise.npy")
assert np.allclose(npy, r, atol=1e-6), npy
assert open(sys.argv[3] + "/patch_head_denoise.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
PYEOF

out="$("$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --metric prob --site k --direction noise \
  --json "$T/k.json" 2>/dev/null)"
"$PY" -c "
import json, sys
g = json.load(open('$T/k.json'))
assert g['metric'] == 'prob' and g['direction'] == 'noise' and g['rows'] == 2 and g['cols'] == 2, g
# noising the induction head's keys with the corrupted run's takes the answer away: far below 1
assert g['restored'][1][1] < 0.5 < g['restored'][0][0], g['restored']
" && ok "patch --metric prob --site k --direction noise" || bad "patch prob noise: $out"

expect_error "different token counts" "the clean text has 16 tokens and the corrupted text 15" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "${CORRUPT:1}" --answer q --wrong h
expect_error "an answer of two tokens" "--answer 'qw' is 2 tokens for this tokenizer" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer qw --wrong h
expect_error "logit-diff without --wrong" "--metric logit-diff needs --wrong" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q
expect_error "an id outside the vocabulary" "token id 999 is outside the vocabulary of 257" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer '#999' --wrong h
expect_error "an unknown site" "--site" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site neuron
echo keep > "$T/mine.json"
expect_error "--json is not replaced without --force" "exists" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --json "$T/mine.json"
[ "$(cat "$T/mine.json")" = keep ] && ok "the user's file is as it was" || bad "mine.json changed"
mkdir -p "$T/notes" && echo mine > "$T/notes/notes.txt"
expect_error "--export-dir holding the user's files" "notes" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --export-dir "$T/notes"
[ "$(cat "$T/notes/notes.txt")" = mine ] && ok "the user's folder is as it was" || bad "notes changed"
expect_error "a memory budget too small" "more than the memory budget" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --memory-budget 1

# --site path: one edge and a sweep against path_patching.json, every bad value named.
PREF="$FIX/reference/path_patching.json"
out="$("$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 0.1 \
  --into k --json "$T/path.json" --export-dir "$T/path" 2>"$T/err")"
if [ $? -eq 0 ] && grep -q "head 0.1 → every later head's k" <<<"$out" && grep -q "path patching: 2 of 2 edges" "$T/err"; then
  ok "patch --site path --sender: the table and the progress"
else bad "patch path: $out $(cat "$T/err")"; fi
"$PY" - "$T/path.json" "$PREF" "$T/path" <<'PYEOF' && ok "patch --site path: --json equals the reference, the K edge is large, the heatmap" || bad "path numbers"
import json, sys, numpy as np
got = json.load(open(sys.argv[1]))
case = next(c for c in json.load(open(sys.argv[2]))["cases"] if c["name"] == "trained_induction")
want = next(s for s in case["sweeps"] if s["sweep"] == "receivers" and s["into"] == "k")["values"]
assert got["site"] == "path" and got["sweep"] == "receivers" and got["sender"] == [0, 1] and got["edges"] == 2, got
assert got["patched_metric"][:2] == [None, None] and got["restored"][0] == [None, None], got
assert np.allclose(got["patched_metric"][2:], want[2:], atol=1e-4), (got["patched_metric"], want)
assert got["restored"][1][1] > 0.85 > 0.1 > abs(got["restored"][1][0]), got["restored"]
npy = np.load(sys.argv[3] + "/patch_path_receivers_k_denoise.npy")
assert np.isnan(npy[0]).all() and np.allclose(npy[1], got["restored"][1], atol=1e-6), npy
PYEOF
out="$("$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 0.1 \
  --receiver 1.1 --into q 2>/dev/null)"
grep -q "0.1 → 1.1 (q): restored 0.0000" <<<"$out" && ok "patch --site path: the edge via Q restores nothing" || bad "path q: $out"
expect_error "path: sender not before receiver" "the sender 1.0 must be in an earlier layer than the receiver 1.1" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 1.0 --receiver 1.1 --into k
expect_error "path: a head out of range" "the receiver 1.2: head 2 is outside the layer's 2 heads (0 .. 1)" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 0.1 --receiver 1.2 --into k
expect_error "path: --into not q, k or v" "--into: x not in {q,k,v}" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 0.1 --receiver 1.1 --into x
expect_error "path: a head that is no L.H" "--sender '1' is not a head: give LAYER.HEAD" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 1 --into k
expect_error "path: no --into" "--site path needs --into q, k or v" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site path --sender 0.1
expect_error "--sender with another site" "--sender '0.1' is for --site path" \
  "$BIN" patch --model "$M" --clean "$CLEAN" --corrupt "$CORRUPT" --answer q --wrong h --site head --sender 0.1

out="$("$BIN" attribute --model "$M" --text "$CLEAN" --answer q --wrong h --json "$T/dla.json" --export-dir "$T/out" 2>&1)"
grep -q "the terms below sum to" <<<"$out" && grep -q "scale frozen at the run's" <<<"$out" \
  && ok "attribute: the table" || bad "attribute: $out"
"$PY" - "$T/dla.json" "$REF" "$T/out" <<'PYEOF' && ok "attribute: the reference's terms, their sum, the induction head, the heatmaps" || bad "attribute numbers"
import json, sys, numpy as np
a = json.load(open(sys.argv[1]))
d = next(c for c in json.load(open(sys.argv[2]))["cases"] if c["name"] == "trained_induction")["dla"]
assert abs(a["sum"] - a["logit_diff"]) < 1e-4 and abs(a["logit_diff"] - d["logit_diff"]) < 1e-4, a
assert np.allclose(a["head"], d["head"], atol=1e-4), (a["head"], d["head"])
h = np.abs(np.array(a["head"]))
assert np.unravel_index(h.argmax(), h.shape) == (1, 1), h
assert np.allclose(np.load(sys.argv[3] + "/attribution_heads.npy"), a["head"], atol=1e-5)
assert np.load(sys.argv[3] + "/attribution_layers.npy").shape == (2, 4)
# the folder replaced whole: the earlier patch heatmap is gone
import os; assert sorted(os.listdir(sys.argv[3])) == ["attribution_heads.npy", "attribution_heads.png", "attribution_layers.npy", "attribution_layers.png"], os.listdir(sys.argv[3])
PYEOF
expect_error "attribute: the same token twice" "are the same token" "$BIN" attribute --model "$M" --text "$CLEAN" --answer q --wrong q

exit $((fails > 0))
