#!/usr/bin/env bash
# `mhascope attribute --why L.H` (the QK score decomposition) on the trained fixture folder (its byte-level tokenizer:
# one token a letter): the table against the PyTorch reference of scripts/gen_experiment_fixtures.py, its sum against
# the model's own score, the previous-token head it names on the key side of the induction head's cell, --versus,
# the heatmap of --export-dir against --json, and every refusal.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
M="$FIX/models/trained"
REF="$FIX/reference/score_decomposition.json"
PY=/usr/bin/python3
TEXT=qwertyuiqwertyui

# the induction head 1.1 at the second 't' (12) and the 'y' (5) after the first one
out="$("$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --query 12 --key 5 --json "$T/why.json" --export-dir "$T/out" 2>&1)"
if [ $? -eq 0 ] && grep -q "the terms below sum to" <<<"$out" && grep -q "largest cells" <<<"$out" \
  && grep -q "head 1.1 attends from «t» (12) to «y» (5)" <<<"$out" && grep -q "(K-composition" <<<"$out"; then
  ok "attribute --why: the table and the sentence"
else bad "attribute --why: $out"; fi
"$PY" - "$T/why.json" "$REF" "$T/out" <<'PYEOF' && ok "attribute --why: the reference's cells, their sum, the previous-token head, the heatmap" || bad "--why numbers"
import json, sys, numpy as np
g = json.load(open(sys.argv[1]))
c = next(c for c in json.load(open(sys.argv[2]))["cases"] if c["name"] == "trained_induction")
assert g["query_terms"] == c["query_terms"] and g["key_terms"] == c["key_terms"], (g["query_terms"], c["query_terms"])
t = np.array(g["table"])
assert np.allclose(t.flatten(), c["table"], atol=1e-4), np.abs(t.flatten() - c["table"]).max()
assert abs(g["sum"] - g["model_score"]) < 1e-5 * max(1, abs(g["model_score"])) and abs(g["model_score"] - c["model_score"]) < 1e-4, g
# the key side's largest head term is layer 0's previous-token head, and says so in words
heads = [(abs(v), n) for v, n in zip(g["key_totals"], g["key_terms"]) if n.startswith("head ")]
top = max(heads)[1]
assert "key side's largest head term: " + top + " (K-composition" in g["summary"], (top, g["summary"])
assert np.allclose(np.load(sys.argv[3] + "/score_terms.npy"), t, atol=1e-5)
assert open(sys.argv[3] + "/score_terms.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
PYEOF
"$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --query 12 --key 5 --versus 4 --json "$T/vs.json" >/dev/null 2>&1
"$PY" -c "
import json
g = json.load(open('$T/vs.json'))
assert g['versus'] == 4 and abs(g['model_value'] - (g['model_score'] - g['model_score_versus'])) < 1e-9, g
assert abs(g['sum'] - g['model_value']) < 1e-5 * max(1, abs(g['model_value'])), g
assert g['weight'] > g['weight_versus'], g
" && ok "attribute --why --versus: the difference of two keys' scores" || bad "--versus"

expect_error "--why not L.H" "--why '1': give a layer and a head as L.H" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1 --key 5
expect_error "a head outside the layer" "head 2 is outside 0 .. 1" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.2 --key 5
expect_error "a layer outside the model" "layer 2 is outside 0 .. 1" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 2.0 --key 5
expect_error "a key after the query" "key position 13 is after the query position 12" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --query 12 --key 13
expect_error "a key outside the text" "--key 16 is outside the text's positions 0 .. 15" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --key 16
expect_error "a key that is no number" "--key 'y': give a token position" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --key y
expect_error "--why without --key" "needs --key K" "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1
expect_error "--versus equal to --key" "the versus key 5 is the key itself" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --query 12 --key 5 --versus 5
expect_error "--why with --answer" "give one or the other" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --key 5 --answer q
expect_error "--key without --why" "give --why L.H with it" "$BIN" attribute --model "$M" --text "$TEXT" --key 5
expect_error "neither --why nor --answer" "give --answer and --wrong" "$BIN" attribute --model "$M" --text "$TEXT"
echo keep > "$T/mine.json"
expect_error "--json is not replaced without --force" "exists" \
  "$BIN" attribute --model "$M" --text "$TEXT" --why 1.1 --key 5 --json "$T/mine.json"
[ "$(cat "$T/mine.json")" = keep ] && ok "the user's file is as it was" || bad "mine.json changed"

[ "$fails" -eq 0 ] && echo "all ok" || { echo "$fails failed"; exit 1; }
