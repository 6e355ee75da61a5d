#!/usr/bin/env bash
# End-to-end checks of `mhascope info|run|export|bench`: outputs exist and agree with PyTorch's
# fixtures, and every bad input gives a clear error, a non-zero exit and no partial file.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"

# --- info ------------------------------------------------------------------------------------
out="$("$BIN" info --preset paper)"
grep -q "weights  *(2, 8, 10, 10)  *(B, h, T_q, T_k)" <<<"$out" && ok "info shape trace" || bad "info shape trace: $out"
grep -q "total with bias  *1,050,624  *4·d_model² + 4·d_model$" <<<"$out" && ok "info parameter count" || bad "info params"
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
# Into a file, not a pipe: `grep -q` leaves at the first match, and a help longer than one stdio
# buffer would then fail its second write (exit 1 under pipefail).
"$BIN" export --help > "$T/export_help.txt"; grep -q -- "--stage" "$T/export_help.txt" && ok "export --help" || bad "export --help"
expect_error "bench repeat" "--repeat must be at least 1" "$BIN" bench --preset cat --repeat 0
out="$("$BIN" bench --preset cat --repeat 3)"; grep -q "^ratio-to-gemm: [0-9.]*$" <<<"$out" && ok "bench last line" || bad "bench: $out"
grep -qE "^gemm: (Eigen|OpenBLAS)" <<<"$out" && ok "bench names its GEMM" || bad "bench gemm line: $out"
grep -qE "^kernels: (general \(GEMM \+ row kernels\)|AVX2 \+ FMA head kernels|AVX-512 head kernels)$" <<<"$out" && ok "bench names its kernels" || bad "bench kernels line: $out"
out="$("$BIN" bench --preset cat --repeat 2 --gemm eigen --threads 2)"
grep -q "^gemm: Eigen .*(set by the program)" <<<"$out" && grep -q "2 threads are [0-9.]*x faster" <<<"$out" \
  && ok "bench --gemm eigen --threads 2" || bad "bench --gemm/--threads: $out"
expect_error "bench --gemm bogus" "--gemm must be eigen or openblas" "$BIN" bench --preset cat --gemm bogus
expect_error "bench --threads 0" "--threads must be 1 to 64" "$BIN" bench --preset cat --threads 0
# The block rows and why, on any CPU: a model this small never measures (its tables are far below
# what the measurement needs), so it runs the default 128 rows and says why in the parenthesis.
line="$(grep "^attention blocks:" <<<"$out")"
[[ "$line" =~ ^attention\ blocks:\ 128\ query\ rows\ \([^\)]+\)$ ]] && ! grep -q "measured at start-up" <<<"$line" \
  && ok "bench names the attention's block rows: $line" || bad "bench attention blocks line: $out"
out="$("$BIN" bench --preset cat --repeat 2 --query-block 64)"
grep -q "^attention blocks: 64 query rows (set by the program)" <<<"$out" && ok "bench --query-block 64" \
  || bad "bench --query-block: $out"
expect_error "bench --query-block 96" "--query-block must be 64 or 128, got 96" "$BIN" bench --preset cat --query-block 96

# A fully masked row: head output 0, final output row b_o, and PyTorch's NaN named.
out="$("$BIN" info --preset cat --pad-last 4 2>&1)"
grep -q "head outputs are 0, so their final output rows are just b_o (PyTorch 1.13's nn.MultiheadAttention gives NaN there; F.scaled_dot_product_attention gives 0 from PyTorch 2.5 on, as mhascope does)" <<<"$out" \
  && ok "fully masked rows explained" || bad "fully masked note: $out"
# --- hostile input: every case a clear error or warning, bounded, nothing lost ---
# make_npy FILE SHAPE DATA: a float32 .npy written by hand (DATA as printf escapes), no Python.
make_npy() {
  local f="$1" shape="$2" data="$3"
  local dict="{'descr': '<f4', 'fortran_order': False, 'shape': $shape, }"
  local len=$(( ${#dict} + 1 )); local pad=$(( (64 - (10 + len) % 64) % 64 )); local hl=$((len + pad))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((hl & 255)))\\x$(printf %02x $((hl >> 8)))"
    printf '%s' "$dict"; printf "%${pad}s" ''; printf '\n'; printf "$data"; } > "$f"
}
H="$T/hostile"; mkdir -p "$H"
# Unbounded reads: devices, FIFOs and folders are refused before opening, quickly.
mkfifo "$H/fifo"
expect_error "--weights /dev/zero" "'/dev/zero': it is a device" timeout 10 "$BIN" info --weights /dev/zero
expect_error "--query /dev/urandom" "'/dev/urandom': it is a device" timeout 10 "$BIN" info --query /dev/urandom
expect_error "--attn-mask /dev/zero" "it is a device" timeout 10 "$BIN" info --attn-mask /dev/zero
expect_error "--value FIFO" "it is a FIFO" timeout 10 "$BIN" info --query "$C/query.npy" --key "$C/key.npy" --value "$H/fifo"
expect_error "--key-padding-mask folder" "it is a folder" timeout 10 "$BIN" info --key-padding-mask "$H"
# A 3 GB .npy (sparse: no disk used) whose header says 8 floats: refused from its size, unread.
make_npy "$H/huge.npy" "(1, 2, 4)" "$(printf '\\x00\\x00\\x80\\x3f%.0s' 1 2 3 4 5 6 7 8)"
truncate -s 3G "$H/huge.npy"
expect_error "3 GB npy with a wrong size" "data is longer than the header declares" \
  /usr/bin/time -f "%M" -o "$H/huge.rss" timeout 10 "$BIN" info --query "$H/huge.npy"
[ "$(cat "$H/huge.rss" | tail -1)" -lt 100000 ] && ok "3 GB npy refused with RSS < 100 MB" || bad "3 GB npy RSS $(cat "$H/huge.rss")"
"$BIN" info --preset cat --save-weights "$H/big.safetensors" >/dev/null; truncate -s 3G "$H/big.safetensors"
expect_error "3 GB safetensors with a wrong size" "trailing bytes" \
  /usr/bin/time -f "%M" -o "$H/huge.rss" timeout 10 "$BIN" info --preset cat --weights "$H/big.safetensors" --memory-budget 8000
[ "$(tail -1 "$H/huge.rss")" -lt 100000 ] && ok "3 GB safetensors refused with RSS < 100 MB" || bad "3 GB safetensors RSS $(cat "$H/huge.rss")"
# A right-sized npy larger than the memory budget is refused from its header too.
make_npy "$H/wide.npy" "(1, 1024, 1024)" ""; truncate -s $((128 + 4 * 1024 * 1024)) "$H/wide.npy"
expect_error "npy over the budget, unread" "needs 4194304 bytes as float32, more than the memory budget" "$BIN" info --query "$H/wide.npy" --memory-budget 2
# One memory estimate, checked before allocating: quick, small RSS, the estimate in the message.
for args in "--batch 1048576 --tokens 1000" "--d-model 20000 --heads 1" "--d-model 65536"; do
  expect_error "budget: $args" "more than the memory budget of 512.0 MiB" \
    /usr/bin/time -f "%M %e" -o "$H/budget.rss" timeout 10 "$BIN" info $args --memory-budget 512
  read -r rss secs < <(tail -1 "$H/budget.rss")
  [ "$rss" -lt 100000 ] && ok "budget: $args RSS ${rss} KB, ${secs} s" || bad "budget: $args RSS $rss KB"
done
expect_error "budget counts the exported picture" "file buffers" "$BIN" export --tokens 1024 --d-model 64 --heads 16 --head all --out "$H/all.png" --memory-budget 512
expect_error "bad_alloc past the budget is a message" "out of memory: the system refused an allocation" \
  bash -c "ulimit -v 300000; exec \"$BIN\" info --d-model 8192 --heads 8 --memory-budget 100000"
expect_error "budget names the weights" "weights 6.0 GiB" "$BIN" info --d-model 20000 --heads 1 --memory-budget 512
# Without --memory-budget the budget follows the machine: half of MemAvailable, 512 MiB … 32 GiB.
want_budget=$(awk '/^MemAvailable:/ { b = $2 * 1024 / 2; if (b < 512 * 2^20) b = 512 * 2^20; if (b > 32 * 2^30) b = 32 * 2^30;
                                      printf "%.1f", b / 2^30 }' /proc/meminfo)
got_budget=$("$BIN" info --preset cat | sed -n 's/.*(budget \([0-9.]*\) GiB).*/\1/p')
awk -v w="$want_budget" -v g="$got_budget" 'BEGIN { exit !(g != "" && (g - w) ^ 2 < 0.1 * 0.1 * 4) }' \
  && ok "default budget follows MemAvailable: $got_budget GiB (half of MemAvailable: $want_budget GiB)" \
  || bad "default budget: got '$got_budget' GiB, half of MemAvailable is $want_budget GiB"
expect_error "budget with raw inputs counts the weights" "weights 16.0 MiB" "$BIN" info --query "$H/wide.npy" --memory-budget 20
# Silent NaN: finite inputs x1e20 overflow; every command warns, trace.json records it.
make_npy "$H/big.npy" "(1, 2, 4)" "$(printf '\\xec\\x78\\xad\\x60%.0s' 1 2 3 4 5 6 7 8)"
for cmd in info "run --dump $H/nan" "export --stage weights --out $H/nan.png"; do
  err="$("$BIN" $cmd --query "$H/big.npy" --heads 2 2>&1 >/dev/null)"
  grep -q "warning: stage 'weights' has 8 of 8 cells not finite (8 NaN" <<<"$err" && ok "overflow warned: ${cmd%% *}" \
    || bad "overflow not warned by ${cmd%% *}: $err"
done
grep -q '"stage": "weights"' <(sed -n '/"non_finite"/,/"stages"/p' "$H/nan/trace.json") && ok "trace.json records non_finite" \
  || bad "trace.json non_finite"
grep -q '"fully_masked_rows": \[\]' "$H/nan/trace.json" && ok "overflow is not called masking" || bad "overflowed rows flagged as masked"
err="$("$BIN" info --preset cat --pad-last 4 2>&1 >/dev/null)"
grep -q "warning: 4 query row(s) have every key blocked" <<<"$err" && ok "fully masked rows warned" || bad "fully masked: $err"
# ... and says what the row's output is (the head output is 0, the final row is b_o).
grep -q "head outputs are 0, so their final output rows are just b_o (PyTorch 1.13's nn.MultiheadAttention gives NaN there; F.scaled_dot_product_attention gives 0 from PyTorch 2.5 on, as mhascope does)" <<<"$err" \
  && ok "fully masked warning names b_o" || bad "fully masked warning does not say the final row is b_o: $err"
# Integers: decimal only, range-checked, for every integer option.
expect_error "--head 2^32+2" "--head must be a decimal integer from 0 to 2147483647" "$BIN" export --preset cat --head 4294967298 --out "$H/x.png"
expect_error "--seed -1" "must be a decimal integer from 0 to 18446744073709551615, got '-1'" "$BIN" info --seed -1
expect_error "--seed 2^64" "got '18446744073709551616' (too large)" "$BIN" info --seed 18446744073709551616
expect_error "--seed 0x10" "got '0x10'" "$BIN" info --seed 0x10
"$BIN" info --d-model 032 --heads 4 | grep -q "d_model=32 " && ok "--d-model 032 is decimal 32" || bad "--d-model 032"
"$BIN" info --tokens 08 | grep -q "T_q=8 " && ok "--tokens 08 is 8" || bad "--tokens 08"
expect_error "--batch-index 1e3" "got '1e3'" "$BIN" export --preset cat --batch-index 1e3 --out "$H/x.png"
expect_error "--memory-budget 0" "from 1 to 1073741824" "$BIN" info --memory-budget 0
expect_error "--repeat 2.5" "got '2.5'" "$BIN" bench --preset cat --repeat 2.5
expect_error "GUI --head 99" "--head 99 is out of range: preset 'cat' has h = 2 heads, indices 0 .. 1" "$BIN" --preset cat --head 99
expect_error "GUI --frames 010x" "got '010x'" "$BIN" --frames 010x
# The window's own option errors read like the commands': "mhascope: error: …", exit 1.
expect_error "window --size too large" "--size 100000x100000: width and height must each be 1 to 16384 pixels" "$BIN" --size 100000x100000
for args in "--size 12" "--size 0x5" "--screenshot x.jpg" "--save-weights w.safetensors"; do
  err="$("$BIN" $args 2>&1 >/dev/null)"; rc=$?
  [ $rc -eq 1 ] && grep -q "^mhascope: error: " <<<"$err" && ok "window option error: $args" || bad "window option $args: rc=$rc $err"
done
# A dump is one unit.
"$BIN" run --preset cat --seed 1 --dump "$H/d" >/dev/null && "$BIN" run --preset cat --seed 2 --dump "$H/d" >/dev/null
grep -q '"seed": 2' "$H/d/trace.json" && [ "$(ls "$H/d" | wc -l)" -eq 17 ] && ok "a dump replaces an earlier dump" || bad "re-dump"
cp "$H/d/trace.json" "$H/old.json"; cp "$H/d/scores.npy" "$H/old_scores.npy"; cp "$H/d/query.npy" "$H/old_query.npy"
# `ulimit -f` sends SIGXFSZ, which would kill the process mid-file: mhascope ignores it, so the
# write fails with EFBIG (reported) and the usual clean-up runs.
expect_error "file size limit keeps the old dump" "File too large" bash -c "ulimit -f 20; exec \"$BIN\" run --preset cat --seed 3 --tokens 60 --d-model 64 --dump \"$H/d\""
cmp -s "$H/d/trace.json" "$H/old.json" && cmp -s "$H/d/scores.npy" "$H/old_scores.npy" && cmp -s "$H/d/query.npy" "$H/old_query.npy" && ok "old dump intact after a failed dump" || bad "old dump changed"
[ -z "$(ls -A "$H" | grep '\.tmp')" ] && ok "no temporary folder left" || bad "temporary left: $(ls -A "$H")"
# Big enough (T = 1500: 140 MB of .npy files) that the dump is still being written when the
# signal comes (at T = 700 a fast run had finished it first).
"$BIN" run --tokens 1500 --heads 4 --d-model 32 --dump "$H/sig" >/dev/null 2>&1 & pid=$!
for i in $(seq 1 1000); do ls -A "$H" | grep -q '^\.sig\.tmp' && break; sleep 0.005; done
kill -INT $pid; wait $pid; rc=$?
[ $rc -ne 0 ] && [ ! -e "$H/sig" ] && [ -z "$(ls -A "$H" | grep '\.tmp')" ] && ok "SIGINT during a dump leaves nothing (rc=$rc)" \
  || bad "SIGINT dump: rc=$rc, $(ls -A "$H")"
# Two dumps into one folder at once leave one run's files, never a mix: each compares bit for bit
# with the same run made alone (the GEMM is never chosen by timing, so a loaded machine computes the
# same bits; trace.json's "gemm" names it).
G=("$BIN" run --preset cat --tokens 200 --memory-budget 1024)  # trace.json records the budget
for s in 1 2; do "${G[@]}" --seed $s --dump "$H/r$s" >/dev/null; done
one_run() {  # DIR: 16 stage files + trace.json, every file equal to the run that its trace.json names
  local s; s=$(grep -o '"seed": [0-9]*' "$1/trace.json" | grep -o '[0-9]*$')
  [ -n "$s" ] && [ "$(ls "$1" | wc -l)" -eq 17 ] && cmp -s "$1/trace.json" "$H/r$s/trace.json" || return 1
  for f in "$H/r$s"/*.npy; do cmp -s "$f" "$1/$(basename "$f")" || return 1; done
}
mkdir -p "$H/mix"; cp "$H/r1/trace.json" "$H/mix/"; cp "$H/r2"/*.npy "$H/mix/"
one_run "$H/r2" && ! one_run "$H/mix" && ok "the one-run check tells a mixed dump" || bad "one_run cannot tell a mix"
mixed=""
for round in $(seq 10); do
  "${G[@]}" --seed 1 --dump "$H/cc" >/dev/null & p1=$!
  "${G[@]}" --seed 2 --dump "$H/cc" >/dev/null & p2=$!
  wait $p1; r1=$?; wait $p2; r2=$?
  [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && one_run "$H/cc" || mixed="$mixed round $round (rc $r1 $r2: $(ls "$H/cc" | wc -l) files)"
done
[ -z "$mixed" ] && ok "concurrent dumps do not mix (10 rounds)" || bad "concurrent dumps mixed:$mixed"
[ -z "$(ls -A "$H" | grep '\.tmp')" ] && ok "no temporary folder after concurrent dumps" || bad "temporary left: $(ls -A "$H")"
grep -qE '"gemm": "(Eigen|OpenBLAS) [^"]*\([^"]+\)"' "$H/cc/trace.json" \
  && ok "trace.json names the GEMM that computed it" || bad "trace.json gemm: $(grep '"gemm"' "$H/cc/trace.json" "$H/d/trace.json")"
# Saves stopped by a signal or the file size limit leave no temporary file (and no target).
expect_error "export over the file size limit" "File too large" bash -c "ulimit -f 1; exec \"$BIN\" export --preset cat --head all --out \"$H/fsz.pdf\""
[ ! -e "$H/fsz.pdf" ] && [ -z "$(ls -A "$H" | grep '^\.fsz')" ] && ok "no file after the size limit" || bad "size limit left: $(ls -A "$H" | grep fsz)"
# stop_mid_save NAME SIGNAL FILE CMD...: SIGNAL while FILE's temporary file is being written (a 64 MiB
# weights file: its write and flush take a while); the process dies of it, leaving neither.
stop_mid_save() {
  local name="$1" sig="$2" file="$3"; shift 3
  local dir base seen=0; dir="$(dirname "$file")"; base="$(basename "$file")"
  env --default-signal=INT "$@" >/dev/null 2>&1 & local pid=$!  # a script's background job ignores SIGINT
  for i in $(seq 1 2000); do ls -A "$dir" | grep -qF ".$base.tmp" && { seen=1; break; }; sleep 0.005; done
  kill -"$sig" $pid; wait $pid; local rc=$?
  if [ $seen -eq 1 ] && [ $rc -gt 128 ] && [ ! -e "$file" ] && [ -z "$(ls -A "$dir" | grep -F ".$base.tmp")" ]; then
    ok "$name: rc=$rc, no file, no temporary file"
  else bad "$name: seen=$seen rc=$rc, $(ls -A "$dir" | grep -F "$base")"; fi
}
stop_mid_save "SIGTERM during info --save-weights" TERM "$H/sig1.safetensors" \
  "$BIN" info --d-model 2048 --heads 8 --save-weights "$H/sig1.safetensors"
stop_mid_save "SIGINT during export" INT "$H/sig2.safetensors" \
  "$BIN" export --preset cat --d-model 2048 --heads 8 --out "$H/sig2.png" --save-weights "$H/sig2.safetensors"
# A name that fits the file system fits its temporary name too (NAME_MAX is 255 bytes).
la="$(printf 'a%.0s' $(seq 240))"; lb="$(printf 'b%.0s' $(seq 255))"
expect_ok "export to a 244-character name" "$BIN" export --preset cat --out "$H/$la.png"
expect_ok "dump into a 255-character folder name" "$BIN" run --preset cat --dump "$H/$lb"
[ -s "$H/$la.png" ] && [ -f "$H/$lb/trace.json" ] && [ -z "$(ls -A "$H" | grep '\.tmp')" ] && ok "long names written, no temporary left" \
  || bad "long names: $(ls -A "$H" | cut -c1-30)"
expect_error "a name over 255 bytes: the system's reason" "File name too long" "$BIN" export --preset cat --out "$H/${lb}x.png"
expect_error "dump refuses the current folder" "is the current folder" bash -c "cd \"$H/d\" && exec \"$(realpath "$BIN")\" run --preset cat --dump ."
"$BIN" run --preset cat --dump "$H/slash/" >/dev/null && [ -f "$H/slash/trace.json" ] && ok "--dump DIR/ works" || bad "--dump DIR/"
mkdir -p "$H/mine"; echo mine > "$H/mine/notes.txt"
expect_error "dump refuses a folder with other files" "already holds 'notes.txt'" "$BIN" run --preset cat --dump "$H/mine"
# Never clobber inputs.
mkdir -p "$H/dd"; cp "$C/query.npy" "$H/dd/query.npy"
expect_error "dump over its own input" "is inside --dump" "$BIN" run --query "$H/dd/query.npy" --heads 4 --dump "$H/dd"
cmp -s "$H/dd/query.npy" "$C/query.npy" && ok "the input stayed" || bad "the input was replaced"
"$BIN" info --preset cat --save-weights "$H/w.safetensors" >/dev/null
cp "$H/w.safetensors" "$H/w0.safetensors"
expect_error "save-weights onto --weights" "is the same file as --weights" "$BIN" info --preset cat --seed 5 --weights "$H/w.safetensors" --save-weights "$H/./w.safetensors"
ln "$H/w.safetensors" "$H/link.safetensors"
expect_error "save-weights onto a hard link of --weights" "same file" "$BIN" info --preset cat --weights "$H/link.safetensors" --save-weights "$H/w.safetensors"
cmp -s "$H/w.safetensors" "$H/w0.safetensors" && ok "weights file untouched" || bad "weights file overwritten"
expect_error "save-weights only on success" "unknown stage" "$BIN" export --preset cat --stage nope --save-weights "$H/never.safetensors" --out "$H/x.png"
expect_error "save-weights only on success (head)" "out of range" "$BIN" export --preset cat --head 9 --save-weights "$H/never.safetensors" --out "$H/x.png"
[ ! -e "$H/never.safetensors" ] && ok "no --save-weights file after a failure" || bad "--save-weights written on failure"
mkdir -p "$H/pp"; printf '{"version": 1, "text": "a b", "d_model": 4, "heads": 2}' > "$H/pp/p.json"
expect_error "dump over the --preset file's folder" "'p.json'" "$BIN" run --preset "$H/pp/p.json" --dump "$H/pp"
[ -s "$H/pp/p.json" ] && ok "the preset stayed" || bad "the preset was replaced"
# Options that would be ignored are errors that say why; trace.json records only used values.
expect_error "--batch with --query" "--batch cannot be used with --query" "$BIN" info --query "$C/query.npy" --heads 4 --batch 3
expect_error "--tokens with --query" "--tokens cannot be used with --query" "$BIN" info --query "$C/query.npy" --heads 4 --tokens 3
expect_error "--text with --query" "--text cannot be used with --query" "$BIN" info --query "$C/query.npy" --heads 4 --text "a b"
# A preset's text-bound settings are refused with raw inputs, never silently dropped: its
# score_override and its pad_last_keys (the last-n key padding, like --pad-last).
expect_error "preset score_override with --query" "sets scores by hand (score_override)" "$BIN" info --preset specialists --query "$C/query.npy" --heads 4
printf '{"version": 1, "text": "a b c d e", "d_model": 16, "heads": 4, "pad_last_keys": 2}' > "$H/padp.json"
expect_error "preset pad_last_keys with --query" "pads the last 2 keys (pad_last_keys)" "$BIN" info --preset "$H/padp.json" --query "$C/query.npy"
expect_ok "the same preset pads its text" "$BIN" run --preset "$H/padp.json" --dump "$H/padtext"
grep -q '"pad_last_keys": 2' "$H/padtext/trace.json" && grep -qF 'mask=none+pad2' "$H/padtext/trace.json" \
  && ok "text run records its padding" || bad "text run padding: $(grep -m1 describe "$H/padtext/trace.json")"
# One configuration line for the window's and the CLI's pictures (configSummary): trace.json's
# describe is the exported subtitle.
"$BIN" run --preset cat --mask causal --dump "$H/sum" >/dev/null
grep -qF '"describe": "B=1  T_q=4  d_model=8  h=2  d_k=4  mask=causal  scale=sqrt-dk  bias  seed=1"' "$H/sum/trace.json" \
  && ok "describe is the shared summary" || bad "describe: $(grep -m1 describe "$H/sum/trace.json")"
expect_error "--seed with --query and --weights" "--seed is not used" "$BIN" info --query "$C/query.npy" --heads 4 --weights "$C/weights.safetensors" --seed 3
expect_error "--bias with --weights" "--bias cannot be used with --weights" "$BIN" info --preset cat --weights "$H/w.safetensors" --bias
expect_error "export --head on a stage without heads" "does not apply to stage 'q_proj'" "$BIN" export --preset cat --stage q_proj --head 99 --out "$H/x.png"
expect_error "export --head all on a stage without heads" "does not apply to stage 'output'" "$BIN" export --preset cat --stage output --head all --out "$H/x.png"
expect_ok "export q_proj without --head" "$BIN" export --preset cat --stage q_proj --out "$H/q.png"
"$BIN" run --query "$C/query.npy" --heads 4 --weights "$C/weights.safetensors" --dump "$H/raw" >/dev/null
if grep -qE '"(text|tokens|batch|seed|positions|description)"' "$H/raw/trace.json"; then bad "trace.json records unused values"
else grep -q '"query": ' "$H/raw/trace.json" && ok "trace.json records only used values and the input files" || bad "input files"; fi
# Text: line breaks and empty items refused; a typed <pad> is not padding.
expect_error "newline in --text" "--text contains a line break" "$BIN" info --text "a b
c"
expect_error "empty batch item" "--text has an empty batch item (item 1" "$BIN" info --text "a b||c"
expect_error "trailing |" "empty batch item (item 1" "$BIN" info --text "a b |"
expect_error "typed <pad>" "reserves for the padding" "$BIN" info --text "a <pad> b"
# Output streams and names.
expect_error "info > /dev/full" "cannot write to standard output" bash -c "exec \"$BIN\" info --preset cat > /dev/full"
expect_error "run > /dev/full" "cannot write to standard output" bash -c "exec \"$BIN\" run --preset cat --dump \"$H/full\" > /dev/full"
expect_error "--save-weights w.png" "must end in .safetensors" "$BIN" info --preset cat --save-weights "$H/w.png"
expect_error "--screenshot g.jpg" "must end in .png" "$BIN" --screenshot "$H/g.jpg"
expect_error "export unknown extension" ".bmp" "$BIN" export --preset cat --out "$H/x.bmp"
[ ! -e "$H/w.png" ] && [ ! -e "$H/g.jpg" ] && ok "nothing written under a wrong extension" || bad "wrong-extension file written"
# Parse errors: one form, "mhascope: error: …; the options: … --help", one line, exit 1.
for args in "info --heads abc" "info --bogus" "run --preset cat" "export --preset cat --stage" "info --mask sideways" \
            "bench --repeat"; do
  err="$("$BIN" $args 2>&1 >/dev/null)"; rc=$?
  [ $rc -eq 1 ] && grep -q "^mhascope: error: .*; the options: mhascope ${args%% *} --help$" <<<"$err" \
    && [ "$(wc -l <<<"$err")" -eq 1 ] && ok "parse error: $args" || bad "parse error: $args: rc=$rc $err"
done
err="$("$BIN" --frames 010x 2>&1 >/dev/null)"; rc=$?
[ $rc -eq 1 ] && grep -q "^mhascope: error: --frames: .*got '010x'; the options: mhascope --help$" <<<"$err" \
  && ok "the window's parse errors: the same form" || bad "window parse error: rc=$rc $err"
# An empty path is refused, never read as "not given".
for opt in --checkpoint --query --key --value --weights --workspace --save-weights --save-workspace --key-padding-mask --attn-mask; do
  expect_error "$opt ''" "$opt: the path is empty" "$BIN" info --preset cat $opt ''
done
expect_error "--out ''" "--out: the path is empty" "$BIN" export --preset cat --out ''
expect_error "--dump ''" "--dump: the path is empty" "$BIN" run --preset cat --dump ''
# Help to a failing stdout is an error too.
for c in info run export bench train; do
  expect_error "$c --help > /dev/full" "cannot write to standard output" bash -c "exec \"$BIN\" $c --help > /dev/full"
done
expect_error "the window's --help > /dev/full" "cannot write to standard output" bash -c "exec \"$BIN\" --help > /dev/full"
"$BIN" train --help > "$T/train_help.txt"; grep -q -- "--task" "$T/train_help.txt" && ok "train --help" || bad "train --help"
# The window's --help names every subcommand of the one table, and each is a real subcommand with
# a --help of its own (the dispatch runs the same table).
"$BIN" --help > "$T/window_help.txt"
names=$(sed -n 's/^  mhascope \([a-z]*\) .*/\1/p' "$T/window_help.txt")
[ "$(echo $names)" = "info run export bench train circuits decode compare predict patch attribute tokens practice" ] \
  && ok "--help names every subcommand" || bad "--help names: $(echo $names)"
for c in $names; do
  "$BIN" "$c" --help > "$T/help_$c.txt" 2>&1 && grep -q "^Usage: mhascope $c" "$T/help_$c.txt" \
    && ok "$c --help" || bad "$c --help: $(head -c 300 "$T/help_$c.txt")"
done
# A trained layer's --text too short for its task: said in the user's words.
printf 'the cat sat on the mat\n' > "$H/t.txt"
"$BIN" train --task text --text "$H/t.txt" --layers 1 --heads 2 --d-model 8 --seq 8 --batch 2 --steps 1 --eval-every 1 \
  --save "$H/text.safetensors" >/dev/null 2>&1
expect_error "--checkpoint --text one character" "--text 'a' has 1 character; this checkpoint's text task needs at least 2" \
  "$BIN" info --checkpoint "$H/text.safetensors" --text a
# safetensors with a wrong name: the real reason.
sed 's/out_proj.weight/out_proj.wEight/' "$H/w.safetensors" > "$H/wrong.safetensors"
err="$("$BIN" info --preset cat --weights "$H/wrong.safetensors" 2>&1 >/dev/null)"
grep -q "unexpected tensor 'out_proj.wEight'" <<<"$err" && grep -q "missing tensor 'out_proj.weight'" <<<"$err" \
  && ! grep -q "separate q/k/v" <<<"$err" && ok "wrong tensor name: real reason" || bad "wrong name: $err"

echo "$fails failure(s)"
[ $fails -eq 0 ]
