#!/usr/bin/env bash
# End-to-end checks of `mhascope circuits`: the table, copying scores and words; --json's schema and
# numbers (against scripts/gen_circuit_fixtures.py's reference); --export-dir's files; a one-layer
# model; and the bad inputs (missing / corrupt checkpoint, existing outputs, a folder of the user's).
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
CK="$FIX/circuits/induction_small.safetensors"

out="$("$BIN" circuits --checkpoint "$CK" 2>&1)"; rc=$?
[ $rc -eq 0 ] && ok "circuits runs" || bad "circuits rc=$rc: $out"
grep -qE "^  layer 0 head 1 +layer 1 head 0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$" <<<"$out" \
  && ok "composition table: every pair with Q, K, V and the baseline" || bad "table: $out"
[ "$(grep -cE "^  layer [01] head [01] +layer 1 head [01] " <<<"$out")" -eq 4 ] && ok "four pairs for 2 x 2 heads" || bad "pairs: $out"
grep -qE "^  layer 1 head 1 +[-0-9.]+ +[0-9.]+ %$" <<<"$out" && ok "copying score and diagonal per head" || bad "copying: $out"
grep -qE "^  layer 1 head [01] reads layer 0 head [01] through its (queries|keys|values): [QKV]-composition [0-9.]+, baseline [0-9.]+$" <<<"$out" \
  && ok "strongest reads in words" || bad "words: $out"
grep -qE "^  Rollout \(Abnar & Zuidema 2020\): position 15 after all 2 layers draws most on token [0-9]+ 'a[0-9]+' 0\.[0-9]{3}" <<<"$out" \
  && ok "rollout of the probe sequence in words" || bad "rollout words: $out"

"$BIN" circuits --checkpoint "$CK" --json "$T/c.json" >/dev/null 2>&1 && ok "--json writes" || bad "--json failed"
if /usr/bin/python3 - "$T/c.json" "$FIX/circuits/induction_small_circuits.safetensors" "$(dirname "$0")/../../scripts" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[3])
import mhascope_model
j = json.load(open(sys.argv[1]))
ref, _ = mhascope_model.read_safetensors(sys.argv[2])
assert sorted(j) == ["baseline", "copying", "diagonal", "pair", "pairs", "rollout", "virtual_heads"], sorted(j)
# The diagonal check from PyTorch's E OV U: the share of rows whose own cell is above every other.
for l in range(2):
    for h in range(2):
        m = ref[f"ov_tokens.{l}.{h}"]
        others = m.clone(); others.fill_diagonal_(float("-inf"))
        want = (m.diagonal() > others.max(1).values).double().mean().item()
        assert abs(j["diagonal"][l][h] - want) < 1e-9, (l, h, j["diagonal"][l][h], want)
assert [sorted(p) for p in j["pairs"]] == [["from", "k", "q", "to", "v", "virtual_copying"]] * 4, j["pairs"]
assert j["pair"] is None and len(j["virtual_heads"]) == 3
assert [p["v"] for p in j["virtual_heads"]] == sorted((p["v"] for p in j["pairs"]), reverse=True)[:3]
assert [p["from"] + p["to"] for p in j["pairs"]] == [[0, 0, 1, 0], [0, 0, 1, 1], [0, 1, 1, 0], [0, 1, 1, 1]]
for p, r in zip(j["pairs"], ref["composition"].tolist()):
    assert max(abs(p["q"] - r[0]), abs(p["k"] - r[1]), abs(p["v"] - r[2])) < 1e-5, (p, r)
assert max(abs(a - b) for a, b in zip(sum(j["copying"], []), ref["copying"].flatten().tolist())) < 1e-5
assert abs(j["baseline"] - float(ref["baseline"][0])) < 0.03
EOF
then ok "--json: the schema, and the numbers equal PyTorch's"; else bad "--json content: $(cat "$T/c.json")"; fi
# The rollout of the task's probe sequence equals the PyTorch script's rollout of the same tokens.
if /usr/bin/python3 - "$T/c.json" "$CK" "$(dirname "$0")/../../scripts" <<'EOF'
import json, sys
import torch
sys.path.insert(0, sys.argv[3])
import mhascope_model
from gen_circuit_fixtures import attention_weights, residual
j = json.load(open(sys.argv[1]))["rollout"]
model, meta = mhascope_model.load(sys.argv[2], torch.float64)
tokens = torch.tensor([[int(t[1:]) for t in j["tokens"]]])  # the induction task's symbols: a<id>
assert tokens.shape[1] == int(meta["seq"]), tokens.shape
with torch.no_grad():
    rolled = torch.eye(tokens.shape[1], dtype=torch.float64)
    for w in attention_weights(model, tokens):
        rolled = residual(w.mean(0)) @ rolled
ours = torch.tensor(j["matrix"], dtype=torch.float64)
assert (ours - rolled).abs().max() < 1e-5, (ours - rolled).abs().max()
EOF
then ok "--json rollout: the probe sequence's rollout equals PyTorch's"; else bad "--json rollout"; fi
expect_error "an existing --json is kept without --force" "already exists; add --force" "$BIN" circuits --checkpoint "$CK" --json "$T/c.json"
expect_ok "--force replaces --json" "$BIN" circuits --checkpoint "$CK" --json "$T/c.json" --force
expect_error "--json is the checkpoint" "is the same file as --checkpoint" "$BIN" circuits --checkpoint "$CK" --json "$CK" --force
expect_error "--json in a missing folder" "$T/nope/c.json" "$BIN" circuits --checkpoint "$CK" --json "$T/nope/c.json"

# Virtual heads: each pair's copying score equals the eigenvalue ratio of the whole V x V E OV^a OV^b U in
# PyTorch, from the checkpoint's own weights and the reference's OV matrices.
if /usr/bin/python3 - "$T/c.json" "$FIX/circuits/induction_small_circuits.safetensors" "$CK" "$(dirname "$0")/../../scripts" <<'EOF'
import json, sys
import torch
sys.path.insert(0, sys.argv[4])
import mhascope_model
j = json.load(open(sys.argv[1]))
ref, _ = mhascope_model.read_safetensors(sys.argv[2])
sd, _ = mhascope_model.read_safetensors(sys.argv[3])
E, U = sd["emb.weight"].double(), sd["out.weight"].double().T
for p in j["pairs"]:
    (la, ha), (lb, hb) = p["from"], p["to"]
    lam = torch.linalg.eigvals(E @ ref[f"ov.{la}.{ha}"].double() @ ref[f"ov.{lb}.{hb}"].double() @ U)
    want = (lam.real.sum() / lam.abs().sum()).item()
    assert abs(p["virtual_copying"] - want) < 1e-5, (p, want)
EOF
then ok "--json: every pair's virtual-head copying equals PyTorch's V x V spectrum"; else bad "virtual heads"; fi
out="$("$BIN" circuits --checkpoint "$CK" --pair 0.1,1.0 --json "$T/pair.json" 2>&1)"
grep -q "^Virtual heads of the pairs V-composition ranks first:" <<<"$out" \
  && grep -qE "^  layer 0 head [01] → layer 1 head [01] through the values: V [0-9.]+, copying [-+][0-9.]+ \(each alone: [-+][0-9.]+, [-+][0-9.]+\)\.$" <<<"$out" \
  && ok "the report lists the virtual heads of the top V pairs" || bad "virtual heads report: $out"
grep -qE "^The pair asked for: layer 0 head 1 → layer 1 head 0 through the values: .* of the 16 tokens raise their own logit most\.$" <<<"$out" \
  && ok "--pair 0.1,1.0: its virtual head and diagonal" || bad "--pair report: $out"
/usr/bin/python3 -c "
import json; j = json.load(open('$T/pair.json')); p = j['pair']
assert p['from'] == [0, 1] and p['to'] == [1, 0], p
q = [x for x in j['pairs'] if x['from'] == [0, 1] and x['to'] == [1, 0]][0]
assert p['virtual_copying'] == q['virtual_copying'] and 0 <= p['virtual_diagonal'] <= 1, (p, q)
" && ok "--pair in --json" || bad "--pair json: $(cat "$T/pair.json")"
expect_error "--pair in the same layer" "must be in an earlier layer than its second" "$BIN" circuits --checkpoint "$CK" --pair 1.0,1.1
expect_error "--pair with a head out of range" "--pair '0.5,1.0': head 5 is outside the model's 2 heads per layer (0 .. 1)" \
  "$BIN" circuits --checkpoint "$CK" --pair 0.5,1.0
expect_error "--pair with a layer out of range" "layer 3 is outside the model's 2 layers (0 .. 1)" "$BIN" circuits --checkpoint "$CK" --pair 0.0,3.0
expect_error "--pair that is not two heads" "--pair '0,1' is not two heads LAYER.HEAD,LAYER.HEAD" "$BIN" circuits --checkpoint "$CK" --pair 0,1
expect_error "--pair that is not numbers" "--pair 'a.b,c.d' is not two heads" "$BIN" circuits --checkpoint "$CK" --pair a.b,c.d

out="$("$BIN" circuits --checkpoint "$CK" --export-dir "$T/ex" 2>&1)"
n_npy=$(ls "$T/ex"/*.npy 2>/dev/null | wc -l); n_png=$(ls "$T/ex"/*.png 2>/dev/null | wc -l)
[ "$n_npy" -eq 24 ] && [ "$n_png" -eq 24 ] && [ -s "$T/ex/virtual_heads.npy" ] && [ -s "$T/ex/qk_positions_l0_h1.png" ] && [ -s "$T/ex/composition_k_l0_l1.png" ] && [ -s "$T/ex/ov_tokens_l1_h0.png" ] && [ -s "$T/ex/composition.npy" ] \
  && [ -s "$T/ex/rollout.png" ] && [ -s "$T/ex/rollout.npy" ] \
  && ok "--export-dir: 5 matrices (learned positions: P QK P^T too) x 4 heads as .npy + PNG, composition (.npy, Q/K/V pictures), virtual heads, copying and rollout" || bad "export: $n_npy npy, $n_png png: $out"
if /usr/bin/python3 - "$T/ex" "$FIX/circuits/induction_small_circuits.safetensors" "$(dirname "$0")/../../scripts" <<'EOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
import mhascope_model
ref, _ = mhascope_model.read_safetensors(sys.argv[2])
for name, key in (("qk_l1_h0", "qk.1.0"), ("ov_l0_h1", "ov.0.1"), ("ov_tokens_l1_h1", "ov_tokens.1.1"),
                  ("qk_positions_l0_h1", "qk_positions.0.1")):
    a = np.load(f"{sys.argv[1]}/{name}.npy")
    assert np.allclose(a, ref[key].numpy(), atol=1e-4, rtol=1e-5), name
r = np.load(f"{sys.argv[1]}/rollout.npy")
assert r.shape == (16, 16) and np.allclose(r.sum(1), 1, atol=1e-5) and np.allclose(np.triu(r, 1), 0), r
EOF
then ok "--export-dir: the .npy matrices equal PyTorch's"; else bad "export .npy content"; fi
expect_ok "an earlier export is replaced" "$BIN" circuits --checkpoint "$CK" --export-dir "$T/ex"
echo mine > "$T/ex/notes.txt"
expect_error "a folder holding a user's file is refused" "holds 'notes.txt', which is not part of a circuits export" \
  "$BIN" circuits --checkpoint "$CK" --export-dir "$T/ex"
[ "$(cat "$T/ex/notes.txt")" = mine ] && ok "the user's file is untouched" || bad "notes.txt changed"
rm "$T/ex/notes.txt"
# The export is one unit: a file size limit part way (the PNGs are the largest files), or a --json
# that cannot be written after it, leaves the earlier export exactly as it was and no temporary folder.
( cd "$T/ex" && md5sum * ) > "$T/ex.md5"
expect_error "a file size limit part way keeps the earlier export" "File too large" \
  bash -c "ulimit -f 8; exec \"$BIN\" circuits --checkpoint \"$CK\" --export-dir \"$T/ex\""
( cd "$T/ex" && md5sum -c --quiet "$T/ex.md5" ) && [ "$(ls "$T/ex" | wc -l)" -eq "$(wc -l < "$T/ex.md5")" ] \
  && [ -z "$(ls -A "$T" | grep '\.tmp')" ] && ok "the earlier export is intact, no temporary folder" || bad "export after EFBIG: $(ls -A "$T")"
expect_error "a --json that cannot be written fails the export too" "the export was not written either" \
  "$BIN" circuits --checkpoint "$CK" --export-dir "$T/ex" --json /proc/mhascope-no-json.json
( cd "$T/ex" && md5sum -c --quiet "$T/ex.md5" ) && [ -z "$(ls -A "$T" | grep '\.tmp')" ] \
  && ok "a failed --json leaves the earlier export" || bad "export after a failed --json"
: > "$T/afile"
expect_error "--export-dir is a file" "exists and is not a folder" "$BIN" circuits --checkpoint "$CK" --export-dir "$T/afile"

# A one-layer model: no pairs, said on stderr; the copying scores are still printed.
out="$("$BIN" circuits --checkpoint "$FIX/train/l1.safetensors" --json "$T/l1.json" 2>"$T/l1.err")"; rc=$?
[ $rc -eq 0 ] && grep -q "composition needs two or more" "$T/l1.err" && grep -qE "^  layer 0 head 1 +[-0-9.]+ +[0-9.]+ %$" <<<"$out" \
  && grep -q '"pairs": \[\]' "$T/l1.json" && grep -q "after all 1 layer draws" <<<"$out" \
  && ok "one layer: said so, copying and rollout still printed, pairs empty" \
  || bad "one layer rc=$rc: $out $(cat "$T/l1.err")"

# A text-task checkpoint stores no text: the rollout says why it is missing (null in --json) until --text gives one.
printf 'the cat sat on the mat and the dog ran far away\n' > "$T/t.txt"
"$BIN" train --task text --text "$T/t.txt" --steps 2 --seq 16 --save "$T/text.safetensors" >/dev/null 2>&1
out="$("$BIN" circuits --checkpoint "$T/text.safetensors" --json "$T/text.json" 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q "^Attention rollout: not computed: .*give the input with --text" <<<"$out" && grep -q '"rollout": null' "$T/text.json" \
  && ok "text task without --text: no rollout, said so, null in --json" || bad "text task rc=$rc: $out"
out="$("$BIN" circuits --checkpoint "$T/text.safetensors" --text "the cat sat" 2>&1)"
grep -q "^Attention rollout on --text (T = 11: " <<<"$out" && grep -q "position 10 after all 2 layers" <<<"$out" \
  && ok "text task with --text: its rollout" || bad "text task --text: $out"

# K/V heads shared by groups of query heads: refused in one line, nothing written.
"$BIN" train --kv-heads 1 --steps 0 --save "$T/gqa.safetensors" >/dev/null 2>&1
expect_error "shared K/V heads are refused" "layer 0 has 128 (K/V heads shared by groups of query heads are not supported" \
  "$BIN" circuits --checkpoint "$T/gqa.safetensors" --json "$T/gqa.json"
[ ! -e "$T/gqa.json" ] && ok "no --json for a refused checkpoint" || bad "gqa.json was written"

expect_error "missing checkpoint" "$T/none.safetensors" "$BIN" circuits --checkpoint "$T/none.safetensors"
head -c 100 "$CK" > "$T/cut.safetensors"
expect_error "corrupt checkpoint" "cut.safetensors" "$BIN" circuits --checkpoint "$T/cut.safetensors"
[ ! -e "$T/never.json" ] && expect_error "nothing written when the checkpoint is bad" "cut.safetensors" \
  "$BIN" circuits --checkpoint "$T/cut.safetensors" --json "$T/never.json"
[ ! -e "$T/never.json" ] && ok "no --json file left behind" || bad "never.json was written"
expect_error "--checkpoint is required" "--checkpoint" "$BIN" circuits
expect_error "--checkpoint ''" "--checkpoint: the path is empty" "$BIN" circuits --checkpoint ''
expect_error "--export-dir ''" "--export-dir: the path is empty" "$BIN" circuits --checkpoint "$CK" --export-dir ''
expect_error "circuits --help > /dev/full" "cannot write to standard output" bash -c "exec \"$BIN\" circuits --help > /dev/full"
"$BIN" circuits --help | grep -q -- "--export-dir" && ok "circuits --help" || bad "circuits --help"

[ $fails -eq 0 ] && echo "all circuits CLI checks passed" || echo "$fails circuits CLI check(s) failed"
exit $((fails > 0))
