#!/usr/bin/env bash
# End-to-end checks of `mhascope info|run|export|bench`: outputs exist and agree with PyTorch's
# fixtures, and every bad input gives a clear error, a non-zero exit and no partial file.
set -uo pipefail
BIN="$1"; FIX="$2"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fails=0
ok()   { echo "ok   - $1"; }
bad()  { echo "FAIL - $1"; fails=$((fails + 1)); }
# expect_error NAME SUBSTRING CMD...: non-zero exit and SUBSTRING on stderr
expect_error() {
  local name="$1" want="$2"; shift 2
  local err; err="$("$@" 2>&1 >/dev/null)"; local rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$err"; then ok "$name"; else bad "$name (rc=$rc, stderr: $err)"; fi
}
expect_ok() {
  local name="$1"; shift
  local out; out="$("$@" 2>&1)"; local rc=$?
  if [ $rc -eq 0 ]; then ok "$name"; else bad "$name (rc=$rc: $out)"; fi
}

# --- info ------------------------------------------------------------------------------------
out="$("$BIN" info --preset paper)"
grep -q "weights  *(2, 8, 10, 10)  *(B, h, T_q, T_k)" <<<"$out" && ok "info shape trace" || bad "info shape trace: $out"
grep -q "total with bias (4\*d_model^2 + 4\*d_model) *1,050,624" <<<"$out" && ok "info parameter count" || bad "info params"
# The split is view then transpose: (B, T, h, d_k) between the projection and the heads.
grep -A1 "q_view  *(2, 10, 8, 64)  *(B, T_q, h, d_k)" <<<"$out" | grep -q "q_heads  *(2, 8, 10, 64)" \
  && grep -q "v_view  *(2, 10, 8, 64)" <<<"$out" && ok "info shows the view step" || bad "info view step: $out"
# The learned matrices export like any stage, named as in the window (W_o ↔ w_o).
expect_ok "export --weight w_o" "$BIN" export --preset cat --weight w_o --out "$T/w_o.svg"
grep -qF "<title>W_o (learned matrix)</title>" "$T/w_o.svg" && ok "weight export title" || bad "weight export title"
expect_error "unknown weight" "unknown weight 'w_x'" "$BIN" export --preset cat --weight w_x --out "$T/x.png"
# An exported stage's title names it as the window does, 0-based (export --head 1 = "head 1").
expect_ok "export head 1 svg" "$BIN" export --preset cat --stage weights --head 1 --out "$T/h1.svg"
grep -qF "<title>Softmax (weights) · head 1 · batch 0</title>" "$T/h1.svg" && ok "export title is 0-based" \
  || bad "export title: $(grep -o '<title>[^<]*' "$T/h1.svg")"
for p in default cat deep interview paper; do expect_ok "preset $p runs" "$BIN" info --preset "$p"; done
out="$("$BIN" info --preset interview)"
grep -q "query  *(10, 6, 12)" <<<"$out" && grep -q "q_heads  *(10, 3, 6, 4)" <<<"$out" && ok "interview shapes" || bad "interview shapes"

# --- run --dump agrees with PyTorch ----------------------------------------------------------
C="$FIX/torch/cross_padding"
expect_ok "run with torch weights + raw inputs" "$BIN" run --query "$C/query.npy" --key "$C/key.npy" \
  --value "$C/value.npy" --key-padding-mask "$C/key_padding_mask.npy" --heads 4 --weights "$C/weights.safetensors" \
  --dump "$T/dump"
[ -f "$T/dump/trace.json" ] && [ "$(ls "$T/dump"/*.npy | wc -l)" -eq 16 ] && ok "dump has 16 stages + trace.json" \
  || bad "dump contents: $(ls "$T/dump")"
# output.npy must equal PyTorch's within float rounding: compare the raw float32 payloads.
python_free_compare() {  # last N*4 bytes of both files as floats via od
  local a="$1" b="$2" n="$3"
  paste <(tail -c $((n * 4)) "$a" | od -An -v -f -w4) <(tail -c $((n * 4)) "$b" | od -An -v -f -w4) |
    awk '{d = $1 - $2; if (d < 0) d = -d; tol = 2e-5 + 2e-4 * ($2 < 0 ? -$2 : $2); if (d > tol) bad++} END {exit bad > 0}'
}
python_free_compare "$T/dump/output.npy" "$C/output.npy" $((2 * 5 * 16)) && ok "run output == PyTorch output" \
  || bad "run output differs from PyTorch"
grep -q '"stage": "masked_scores"' "$T/dump/trace.json" && grep -q '"axes"' "$T/dump/trace.json" && ok "trace.json lists stages" || bad "trace.json"

# --- weights round trip ----------------------------------------------------------------------
expect_ok "save weights" "$BIN" info --preset cat --save-weights "$T/w.safetensors"
"$BIN" run --preset cat --dump "$T/a" >/dev/null
"$BIN" run --preset cat --weights "$T/w.safetensors" --dump "$T/c" >/dev/null
cmp -s "$T/a/output.npy" "$T/c/output.npy" && ok "saved weights reload to the same output" || bad "weights round trip"
# The same run with another seed's weights must differ: proves --weights replaced the seeded ones.
"$BIN" info --preset cat --seed 7 --save-weights "$T/w7.safetensors" >/dev/null
"$BIN" run --preset cat --weights "$T/w7.safetensors" --dump "$T/d" >/dev/null
cmp -s "$T/a/output.npy" "$T/d/output.npy" && bad "--weights was ignored" || ok "--weights replaces the seeded weights"

# --- export ----------------------------------------------------------------------------------
for ext in png svg pdf; do
  expect_ok "export $ext" "$BIN" export --preset cat --stage weights --head all --out "$T/w.$ext"
  [ -s "$T/w.$ext" ] || bad "export $ext file missing"
done
head -c 8 "$T/w.png" | od -An -c | grep -q "P   N   G" && ok "png magic" || bad "png magic"
head -c 4 "$T/w.pdf" | grep -q "%PDF" && ok "pdf magic" || bad "pdf magic"
expect_ok "export a projection" "$BIN" export --preset paper --stage q_proj --batch-index 1 --out "$T/q.png"

# --- bad inputs: clear errors, nothing written -----------------------------------------------
expect_error "d_model not divisible" "d_model (10) must be divisible by heads (4)" "$BIN" info --d-model 10 --heads 4
expect_error "heads zero" "heads (h) must be at least 1, got 0" "$BIN" info --heads 0
expect_error "d_model zero" "d_model must be at least 1, got 0" "$BIN" info --d-model 0
expect_error "empty text" "enter at least one token" "$BIN" info --text "   "
expect_error "memory budget" "memory budget" "$BIN" info --tokens 20000 --d-model 64 --heads 16
expect_error "unknown stage" "unknown stage 'nope'" "$BIN" export --preset cat --stage nope --out "$T/x.png"
expect_error "head out of range" "head 7 is out of range" "$BIN" export --preset cat --stage weights --head 7 --out "$T/x.png"
expect_error "batch out of range" "batch index 3 is out of range" "$BIN" export --preset cat --stage weights --batch-index 3 --out "$T/x.png"
expect_error "unknown extension" ".bmp" "$BIN" export --preset cat --out "$T/x.bmp"
expect_error "missing folder" "$T/nope/x.png" "$BIN" export --preset cat --out "$T/nope/x.png"
expect_error "path is a folder" "$T" "$BIN" export --preset cat --out "$T"
expect_error "/dev/full" "/dev/full" "$BIN" export --preset cat --out /dev/full
expect_error "/proc" "/proc/nope.png" "$BIN" export --preset cat --out /proc/nope.png
[ ! -e "$T/x.png" ] && [ ! -e "$T/x.bmp" ] && ok "no partial files" || bad "a failed export left a file"
echo keep > "$T/keep.png"
"$BIN" export --preset cat --stage nope --out "$T/keep.png" 2>/dev/null
[ "$(cat "$T/keep.png")" = keep ] && ok "failed export leaves the old file intact" || bad "old file changed"
expect_error "unknown preset" "unknown preset 'nope'" "$BIN" info --preset nope
printf '{"version": 1, "text": "a b", "d_model": 4, "heads": 2, "heads": 4}' > "$T/dup.json"
expect_error "duplicate preset key" "duplicate key 'heads'" "$BIN" info --preset "$T/dup.json"
printf '{"version": 1, "text": "a b", "d_model": 4, "heads' > "$T/trunc.json"
expect_error "truncated preset" "not valid JSON" "$BIN" info --preset "$T/trunc.json"
printf '{"version": 9, "text": "a b", "d_model": 4, "heads": 2}' > "$T/future.json"
expect_error "future preset version" "/version is 9" "$BIN" info --preset "$T/future.json"
printf '{"version": 1, "text": "a b", "d_model": -4, "heads": 2}' > "$T/neg.json"
expect_error "negative d_model in preset" "/d_model must not be negative" "$BIN" info --preset "$T/neg.json"
printf '{"version": 1, "text": "a b", "d_model": null, "heads": 2}' > "$T/null.json"
expect_error "NaN saved as null" "/d_model must be an integer, got null" "$BIN" info --preset "$T/null.json"
expect_error "mask wrong shape" "must be (B, T_k) = (1, 4)" "$BIN" info --preset cat --key-padding-mask "$C/key_padding_mask.npy"
expect_error "attn mask wrong shape" "must be (T_q, T_k) = (4, 4)" "$BIN" info --preset cat --attn-mask "$C/key_padding_mask.npy"
expect_error "weights do not fit" "the weights do not fit this model" "$BIN" info --preset paper --weights "$C/weights.safetensors"
expect_error "missing npy" "cannot open" "$BIN" info --query "$T/none.npy"
printf 'not a npy file' > "$T/bad.npy"
expect_error "bad npy magic" "$T/bad.npy" "$BIN" info --query "$T/bad.npy"
expect_error "key without value" "give both --key and --value" "$BIN" info --query "$C/query.npy" --key "$C/key.npy"
expect_error "--d-model contradicts --query" "contradicts --query" "$BIN" info --query "$C/query.npy" --d-model 8
"$BIN" export --help | grep -q -- "--stage" && ok "export --help" || bad "export --help"
expect_error "bench repeat" "--repeat must be at least 1" "$BIN" bench --preset cat --repeat 0
out="$("$BIN" bench --preset cat --repeat 3)"; grep -q "^ratio-to-gemm: [0-9.]*$" <<<"$out" && ok "bench last line" || bad "bench: $out"

echo "$fails failure(s)"
[ $fails -eq 0 ]
