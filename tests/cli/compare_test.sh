#!/usr/bin/env bash
# End-to-end checks of `mhascope compare`: the largest |B − A| printed in words and checked against
# both sides' stages dumped by `run` (numpy); identical sides; the picture A | B | B − A; the exact
# reason when no difference is possible (another h on a stage with heads, another T through a
# preset, a stage one side does not record); causal against not; two checkpoints of one training
# run (two steps of its timeline); and the bad inputs.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
A=(--text "the cat sat on the mat" --d-model 8 --heads 2 --seed 1)

out="$("$BIN" compare "${A[@]}" --b-seed 2 --stage weights --out "$T/seed.png" 2>&1)"; rc=$?
[ $rc -eq 0 ] && ok "compare runs" || bad "compare rc=$rc: $out"
grep -q "^A: B=1  T_q=6  d_model=8  h=2 .*seed=1$" <<<"$out" && ok "A's configuration line" || bad "A line: $out"
grep -q "^B: B=1  T_q=6  d_model=8  h=2 .*seed=2$" <<<"$out" && ok "B's configuration line" || bad "B line: $out"
words="$(grep -E "^max \|B − A\| = [0-9.e-]+ at head [01], query [0-5] '[a-z]+', key [0-5] '[a-z]+' \(A [0-9.e-]+, B [0-9.e-]+\)$" <<<"$out")"
[ -n "$words" ] && ok "the largest |B − A| in words" || bad "words: $out"
grep -q "^saved $T/seed.png" <<<"$out" && [ -s "$T/seed.png" ] && ok "picture written" || bad "no picture: $out"
# --out follows export --out: an existing picture is replaced (the command line names its output).
echo old >"$T/again.png"
out="$("$BIN" compare "${A[@]}" --b-seed 2 --stage weights --out "$T/again.png" 2>&1)"; rc=$?
[ $rc -eq 0 ] && [ "$(head -c 4 "$T/again.png" | tail -c 3)" = "PNG" ] && ok "compare --out replaces a picture, as export --out does" || bad "compare over an existing file rc=$rc: $out"
# The words against the numbers: both sides dumped, the maximum over every head found by numpy.
"$BIN" run "${A[@]}" --dump "$T/a" >/dev/null 2>&1 && "$BIN" run "${A[@]:0:6}" --seed 2 --dump "$T/b" >/dev/null 2>&1 \
  || bad "cannot dump the two sides"
if /usr/bin/python3 - "$T/a/weights.npy" "$T/b/weights.npy" "$words" "$T/seed.png" <<'PYEOF'
import re, struct, sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = np.abs(b - a)[0]                      # (h, T, T)
h, q, k = np.unravel_index(np.argmax(d), d.shape)
m = re.match(r"max \|B − A\| = (\S+) at head (\d), query (\d) '\w+', key (\d) '\w+' \(A (\S+), B (\S+)\)", sys.argv[3])
assert m, sys.argv[3]
assert abs(float(m.group(1)) - d.max()) <= 0.006 * d.max(), (m.group(1), d.max())
assert (int(m.group(2)), int(m.group(3)), int(m.group(4))) == (h, q, k), (m.groups(), h, q, k)
assert abs(float(m.group(5)) - a[0, h, q, k]) < 0.006 and abs(float(m.group(6)) - b[0, h, q, k]) < 0.006
w, hgt = struct.unpack(">II", open(sys.argv[4], "rb").read()[16:24])
assert w > 2 * hgt, (w, hgt)              # three maps side by side
PYEOF
then ok "the printed maximum is numpy's, at its head and cell; the picture is three maps wide"; else bad "numbers differ from the dumps"; fi

out="$("$BIN" compare "${A[@]}" --b-seed 1 --stage scores 2>&1)"
grep -qx "max |B − A| = 0: B equals A to the bit in every compared cell" <<<"$out" && ok "identical sides said so" || bad "identical: $out"

out="$("$BIN" compare "${A[@]}" --b-heads 4 --stage weights --out "$T/h.png" 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -qx "no difference map: different h: A has h = 2 heads (d_k = 4), B has h = 4 (d_k = 2), so head i of one does not do the work of head i of the other" <<<"$out" \
  && [ -s "$T/h.png" ] && ok "h = 2 vs 4: why no difference, both still drawn" || bad "h: rc=$rc $out"
out="$("$BIN" compare "${A[@]}" --b-heads 4 --stage output 2>&1)"
grep -qE "^max \|B − A\| = [0-9.e-]+ at query [0-5] '[a-z]+', feature [0-7] " <<<"$out" \
  && ok "h = 2 vs 4 on the output (no head axis): compared" || bad "output: $out"
out="$("$BIN" compare "${A[@]}" --b-preset cat --stage weights 2>&1)"
grep -qx "no difference map: different T: A has T = 6 tokens, B has T = 4, so a cell of one has no partner in the other (both are shown side by side)" <<<"$out" \
  && ok "another T: why no difference" || bad "T: $out"
out="$("$BIN" compare "${A[@]}" --b-positions rope --stage q_rotated 2>&1)"
grep -qx "no difference map: A records no 'q_rotated' stage (its configuration does not use it); B does" <<<"$out" \
  && ok "RoPE's stage on one side only" || bad "rope stage: $out"
out="$("$BIN" compare "${A[@]}" --b-positions rope --stage weights 2>&1)"
grep -q "^B: .*positions=rope\|^B: .*rope" <<<"$out" && grep -qE "^max \|B − A\| = " <<<"$out" \
  && ok "sinusoidal vs RoPE compared" || bad "rope: $out"
out="$("$BIN" compare "${A[@]}" --b-mask causal --stage masked_scores --out "$T/causal.svg" 2>&1)"; rc=$?
[ $rc -eq 0 ] && [ -s "$T/causal.svg" ] && grep -qx "max |B − A| = 0: B equals A to the bit in every compared cell" <<<"$out" \
  && ok "causal vs not: the cells blocked on one side left out, the scores kept are equal" || bad "causal: rc=$rc $out"
out="$("$BIN" compare "${A[@]}" --b-mask causal --stage weights 2>&1)"
grep -qE "^max \|B − A\| = 0\.[0-9]+ at head" <<<"$out" && ok "causal vs not: the weights differ" || bad "causal weights: $out"

# Two steps of one training run: a checkpoint, then the same run continued from it.
"$BIN" train --d-model 16 --steps 20 --eval-every 10 --save "$T/s20.safetensors" >/dev/null 2>&1 \
  && "$BIN" train --d-model 16 --steps 40 --eval-every 10 --init "$T/s20.safetensors" --save "$T/s40.safetensors" >/dev/null 2>&1 \
  || bad "cannot train the two checkpoints"
out="$("$BIN" compare --checkpoint "$T/s20.safetensors" --layer 1 --b-checkpoint "$T/s40.safetensors" --stage weights \
        --head 1 --out "$T/steps.png" 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -qE "^max \|B − A\| = [0-9.e-]+ at head [01], query [0-9]+ '[^']*', key [0-9]+ " <<<"$out" \
  && grep -q "^head 1 in the picture: " <<<"$out" && [ -s "$T/steps.png" ] \
  && ok "two checkpoints of one run (layer 1 of both)" || bad "checkpoints: rc=$rc $out"

expect_error "no side B" "compare needs a side B" "$BIN" compare "${A[@]}"
expect_error "--b-layer alone" "--b-layer 1 needs --b-checkpoint" "$BIN" compare "${A[@]}" --b-seed 2 --b-layer 1
expect_error "unknown stage" "unknown stage 'nope'" "$BIN" compare "${A[@]}" --b-seed 2 --stage nope
expect_error "head out of range on B" "--head 3 is out of range for side B: its 'weights' has 2 heads" \
  "$BIN" compare "${A[@]:0:4}" --heads 4 --b-heads 2 --head 3 --out "$T/x.png"
out="$("$BIN" compare "${A[@]:0:4}" --heads 4 --b-heads 2 --head 3 2>&1)"; rc=$?
[ $rc -ne 0 ] && grep -q "out of range for side B" <<<"$out" && ! grep -q "^A: " <<<"$out" \
  && ok "--head out of range without --out: refused before the comparison is printed" || bad "--head 3 without --out: rc=$rc $out"
for seed in -1 18446744073709551616 0x10 1e3; do
  expect_error "--b-seed $seed" "--b-seed" "$BIN" compare "${A[@]}" --b-seed "$seed"
done
expect_ok "--b-seed 2^64-1" "$BIN" compare "${A[@]}" --b-seed 18446744073709551615
expect_error "bad picture extension" ".txt" "$BIN" compare "${A[@]}" --b-seed 2 --out "$T/x.txt"
expect_error "missing B checkpoint" "side B: " "$BIN" compare "${A[@]}" --b-checkpoint "$T/none.safetensors"
expect_error "B invalid" "side B: " "$BIN" compare "${A[@]}" --b-heads 3
[ ! -e "$T/x.png" ] && ok "nothing written on an error" || bad "a picture was left behind"

echo "$fails failure(s)"
[ $fails -eq 0 ]
