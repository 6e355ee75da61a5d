#!/usr/bin/env bash
# End-to-end checks of `mhascope train`: progress lines, CSV log, checkpoint, head-role table,
# --init, Ctrl-C saving a loadable checkpoint, NaN keeping the last good one, bad settings.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
SMALL=(--task induction --layers 2 --heads 2 --d-model 16 --vocab 16 --seq 12 --period-min 3 --period-max 5 --batch 4)

out="$("$BIN" train "${SMALL[@]}" --steps 20 --eval-every 10 --save "$T/m.safetensors" --log "$T/m.csv" 2>&1)"; rc=$?
[ $rc -eq 0 ] && ok "train runs" || bad "train rc=$rc: $out"
grep -q "^step 10/20  train loss" <<<"$out" && ok "plain progress lines when not a terminal" || bad "progress: $out"
grep -q "layer 1 head 1 " <<<"$out" && grep -q "Head roles at step 20" <<<"$out" && ok "head-role table" || bad "roles: $out"
[ "$(wc -l <"$T/m.csv")" -eq 4 ] && head -1 "$T/m.csv" | grep -q "^step,train_loss,probe_loss,probe_accuracy,steps_per_second,layer0_head0_prev_token," \
  && ok "CSV log: header + 3 evaluations" || bad "csv: $(cat "$T/m.csv")"
head -1 "$T/m.csv" | grep -q ",layer1_head1_entropy,layer1_head1_copying,layer1_head1_prev_token_new,layer1_head1_prev_token_seen$" \
  && ok "CSV log: copying and the previous-token score split by first occurrence / repeat" || bad "csv header: $(head -1 "$T/m.csv")"
grep -q "the total weight on keys that follow an earlier" <<<"$out" && grep -qE "has not formed yet|counts as formed" <<<"$out" \
  && ok "roles legend (prefix matching) and the run's lesson" || bad "legend/lesson: $out"
out="$("$BIN" train --task sort --layers 2 --heads 2 --d-model 16 --vocab 16 --seq 12 --batch 4 --steps 2 2>&1)"
grep -q "the smallest input not yet written" <<<"$out" && grep -q "On repeated random tokens" <<<"$out" \
  && ok "sort: what to look for; induction measured on repeated random tokens" || bad "sort lesson: $out"
out="$("$BIN" train --task reverse --layers 2 --heads 2 --d-model 16 --vocab 16 --seq 12 --batch 4 --steps 2 2>&1)"
grep -q "rows after SEP and the columns before it" <<<"$out" && ok "reverse: the lower-left block" || bad "reverse lesson: $out"
# On a terminal (a pty from util-linux's `script`): a progress bar redrawn with \r, no per-evaluation lines.
if command -v script >/dev/null; then
  out="$(script -qec "'$BIN' train ${SMALL[*]} --steps 30 --eval-every 10" /dev/null 2>&1)"
  grep -q "\[##########\.*\] step 10/30" <<<"$out" && ! grep -q "^step 10/30" <<<"$out" \
    && grep -q "Head roles at step 30" <<<"$out" && ok "progress bar on a terminal" || bad "terminal progress: $out"
fi
# --steps is the step the run ends at, as in the Train mode: m.safetensors is at step 20.
out="$("$BIN" train "${SMALL[@]}" --steps 25 --eval-every 5 --init "$T/m.safetensors" 2>&1)"
grep -q "^step 25/25" <<<"$out" && ok "--init continues from the checkpoint's step up to --steps" || bad "--init: $out"
expect_error "--steps not past --init's step" "--steps 5 is not past --init's step 20: --steps is the step the run ends at" \
  "$BIN" train "${SMALL[@]}" --steps 5 --init "$T/m.safetensors"
# Evaluations at the multiples of --eval-every counted from step 0, whatever step the run started at.
out="$("$BIN" train "${SMALL[@]}" --steps 31 --eval-every 4 --init "$T/m.safetensors" 2>&1)"
[ "$(grep -oE "^step [0-9]+" <<<"$out" | tr '\n' ' ')" = "step 20 step 24 step 28 step 31 " ] \
  && ok "--init: evaluations at multiples of --eval-every from step 0, and at the last" || bad "--init evaluations: $out"

# Same checkpoint from PyTorch's side: the fixtures' state_dict names load (strict) in our loader.
out="$("$BIN" train --task induction --layers 1 --heads 2 --d-model 8 --vocab 11 --seq 8 --period-min 2 --period-max 4 \
  --steps 2 --init "$FIX/train/l1.safetensors" 2>&1)"
grep -q "^step 2/2" <<<"$out" && ok "--init from a checkpoint written by PyTorch" || bad "--init torch: $out"

# Ctrl-C: a consistent checkpoint is saved and loads again.
"$BIN" train "${SMALL[@]}" --steps 100000000 --eval-every 1000000 --save "$T/int.safetensors" >"$T/int.out" 2>&1 &
pid=$!
sleep 1.5; kill -INT $pid; wait $pid; rc=$?
[ $rc -eq 130 ] && grep -q "interrupted at step" "$T/int.out" && [ -f "$T/int.safetensors" ] \
  && ok "Ctrl-C saves (exit 130)" || bad "Ctrl-C: rc=$rc $(cat "$T/int.out")"
at=$(grep -oE "interrupted at step [0-9]+" "$T/int.out" | grep -oE "[0-9]+$")
out="$("$BIN" train "${SMALL[@]}" --steps $((at + 1)) --init "$T/int.safetensors" 2>&1)" && ok "the Ctrl-C checkpoint loads" \
  || bad "Ctrl-C checkpoint: $out"

# NaN: clear message, last good checkpoint kept and loadable.
expect_error "NaN loss names the learning rate" "may be too high" \
  "$BIN" train "${SMALL[@]}" --steps 50 --lr 1e30 --weight-decay 0 --save "$T/nan.safetensors"
at=$("$BIN" train "${SMALL[@]}" --steps 1 --init "$T/nan.safetensors" 2>&1 | grep -oE "init's step [0-9]+" | grep -oE "[0-9]+$")
out="$("$BIN" train "${SMALL[@]}" --steps $((${at:-0} + 1)) --lr 1e-3 --init "$T/nan.safetensors" 2>&1)"; rc=$?
[ $rc -eq 0 ] && ! grep -qi nan <<<"$out" && ok "the last good checkpoint loads and has a finite loss" \
  || bad "NaN checkpoint: rc=$rc $out"

# Bad inputs.
for opt in --save --log --init --text; do
  expect_error "train $opt '' is refused" "the path is empty" "$BIN" train "${SMALL[@]}" --steps 1 $opt ''
done
# A bad --save destination fails before the step-0 evaluation: T = 1024 would take many seconds there.
BIG=(--seq 1024 --heads 8 --d-model 64 --batch 1 --steps 1)
s0=$SECONDS
expect_error "--save in a missing folder, at once" "folder '$T/nodir' does not exist" \
  "$BIN" train "${BIG[@]}" --save "$T/nodir/x.safetensors"
mkdir -p "$T/afolder.safetensors"
expect_error "--save naming a folder, at once" "it is a folder" "$BIN" train "${BIG[@]}" --save "$T/afolder.safetensors" --force
[ $((SECONDS - s0)) -le 3 ] && ok "bad --save paths refused before any evaluation" || bad "bad --save took $((SECONDS - s0)) s"
# The periodic save is bounded: with --eval-every 1, after the step-0 write the next one waits 5 s
# (a write at every evaluation would make the run quadratic); Ctrl-C still writes the last step.
TINY=(--task induction --layers 1 --heads 1 --d-model 8 --vocab 8 --seq 8 --period-min 2 --period-max 4 --batch 1)
"$BIN" train "${TINY[@]}" --steps 100000000 --eval-every 1 --save "$T/every.safetensors" >/dev/null 2>&1 &
pid=$!
sleep 1.5; mid="$("$BIN" info --checkpoint "$T/every.safetensors" 2>&1)"; kill -INT $pid; wait $pid; rc=$?
end="$("$BIN" info --checkpoint "$T/every.safetensors" 2>&1)"
grep -q "induction, step 0[,)]" <<<"$mid" && [ $rc -eq 130 ] && ! grep -q "induction, step 0[,)]" <<<"$end" \
  && ok "--eval-every 1 --save: no write within 5 s of the last, Ctrl-C writes" || bad "bounded save: rc=$rc mid: $mid end: $end"
# The summary line counts the evaluations too, and says "1 step".
out="$("$BIN" train "${SMALL[@]}" --steps 1 2>&1)"
grep -qE "^1 step in [0-9.]+ s of training \([0-9.]+ steps/s\) \+ [0-9.]+ s of evaluations on the probe batch; [0-9.]+ s in all" <<<"$out" \
  && ok "summary: training and evaluation time apart" || bad "summary: $out"
expect_error "--clip nan names the value" "clip must be a finite number >= 0 (0 = off), got nan" "$BIN" train --clip nan
expect_error "--clip -1 names the value" "got -1" "$BIN" train --clip -1
expect_error "bench --train --seeds 0" "--seeds must be at least 1, got 0" "$BIN" bench --train --seeds 0
expect_error "bench --train --budget nan" "--budget must be a finite number of seconds >= 0, got nan" "$BIN" bench --train --budget nan
expect_error "bench --train --budget -1" "--budget must be a finite number of seconds >= 0, got -1" "$BIN" bench --train --budget -1
printf 'ab\xffcd' >"$T/bad.txt"
expect_error "invalid UTF-8 in --text: file and offset" "bad.txt' is not valid UTF-8: byte 0xFF at offset 2" \
  "$BIN" train --task text --text "$T/bad.txt" --seq 2 --d-model 8 --steps 1
expect_error "T < 2 k_max" "must be at least 2 * k_max = 32" "$BIN" train --seq 20
expect_error "heads must divide d_model" "must be divisible by heads" "$BIN" train --d-model 10 --heads 4
expect_error "unknown task" "unknown task 'copy'" "$BIN" train --task copy
expect_error "text needs a file" "needs --text FILE" "$BIN" train --task text
expect_error "missing --init file" "nope.safetensors" "$BIN" train --init "$T/nope.safetensors"
expect_error "--init with other sizes" "m.safetensors' has vocab 16, T 12" \
  "$BIN" train --task induction --layers 2 --heads 2 --d-model 32 --vocab 16 --seq 12 --period-min 3 --period-max 5 \
  --init "$T/m.safetensors"
printf 'not a checkpoint' >"$T/junk.safetensors"
expect_error "junk checkpoint" "junk.safetensors" "$BIN" train --init "$T/junk.safetensors"
printf 'abcabcabd abcabc' >"$T/t.txt"
out="$("$BIN" train --task text --text "$T/t.txt" --seq 8 --d-model 8 --steps 3 2>&1)"
grep -q "vocab 5, T 8" <<<"$out" && ok "text task: vocabulary from the file" || bad "text: $out"

# A trained layer in info / run / export.
out="$("$BIN" info --checkpoint "$T/m.safetensors" --layer 1 2>&1)"
grep -q "trained layer 1 (L = 2; induction, step 20" <<<"$out" && grep -q "weights  *(1, 2, 12, 12)" <<<"$out" \
  && ok "info --checkpoint --layer" || bad "info --checkpoint: $out"
"$BIN" run --checkpoint "$T/m.safetensors" --layer 0 --batch 2 --dump "$T/dump" >/dev/null 2>&1 \
  && [ -f "$T/dump/weights.npy" ] && grep -q '"a' "$T/dump/trace.json" && ok "run --checkpoint dumps, tokens are symbols" \
  || bad "run --checkpoint: $(ls "$T/dump" 2>&1)"
"$BIN" export --checkpoint "$T/m.safetensors" --layer 1 --stage weights --head 1 --out "$T/l1.png" >/dev/null 2>&1 \
  && [ -s "$T/l1.png" ] && ok "export --checkpoint --layer" || bad "export --checkpoint"
"$BIN" bench --checkpoint "$T/m.safetensors" --layer 1 --repeat 2 2>&1 | grep -q "trained layer 1 (L = 2;" \
  && ok "bench --checkpoint --layer" || bad "bench --checkpoint"
expect_error "--layer out of range" "has 2 layers (0 .. 1)" "$BIN" info --checkpoint "$T/m.safetensors" --layer 2
expect_error "--layer without --checkpoint" "--layer needs --checkpoint" "$BIN" info --layer 1
expect_error "--checkpoint with model options" "drop --d-model, --heads" \
  "$BIN" info --checkpoint "$T/m.safetensors" --d-model 8 --heads 2

# Attention variants: RoPE with N = 2 K/V heads, ALiBi. The checkpoint records the variant and its
# layer runs the same variant in the pipeline.
V4=(--task induction --layers 2 --heads 4 --d-model 16 --vocab 16 --seq 12 --period-min 3 --period-max 5 --batch 4)
out="$("$BIN" train "${V4[@]}" --positions rope --kv-heads 2 --steps 10 --eval-every 5 --save "$T/rope.safetensors" 2>&1)"
grep -q "h = 4 heads, RoPE (base 10000), N = 2 K/V heads" <<<"$out" && grep -q "Head roles at step 10" <<<"$out" \
  && ok "train --positions rope --kv-heads 2" || bad "train rope: $out"
out="$("$BIN" info --checkpoint "$T/rope.safetensors" --layer 1 2>&1)"
grep -q "kv_heads=2  rope(half)" <<<"$out" && grep -q "k_rotated  *(1, 2, 12, 4)" <<<"$out" \
  && ok "info --checkpoint: the layer runs with RoPE and 2 K/V heads" || bad "info rope checkpoint: $out"
out="$("$BIN" train "${V4[@]}" --positions alibi --steps 4 --eval-every 2 --save "$T/alibi.safetensors" 2>&1)" \
  && "$BIN" info --checkpoint "$T/alibi.safetensors" --layer 0 2>&1 | grep -q "position_bias  *(1, 4, 12, 12)" \
  && ok "train --positions alibi; its layer runs with ALiBi" || bad "train alibi: $out"
out="$("$BIN" train "${V4[@]}" --positions rope --kv-heads 2 --steps 12 --eval-every 2 --init "$T/rope.safetensors" 2>&1)"
grep -q "^step 12/12" <<<"$out" && ok "--init continues a RoPE run" || bad "--init rope: $out"
expect_error "--checkpoint with variant options" "drop --kv-heads, --positions, --rope-base" \
  "$BIN" info --checkpoint "$T/rope.safetensors" --layer 0 --kv-heads 1 --positions alibi --rope-base 500
expect_error "--positions unknown" "--positions 'sinusoidal' is not one of learned, rope, alibi" \
  "$BIN" train --positions sinusoidal
expect_error "--rope-base without rope" "--rope-base is for --positions rope; the positions here are alibi" \
  "$BIN" train --positions alibi --rope-base 500
expect_error "--rope-base not a number" "--rope-base must be a number > 0" "$BIN" train --positions rope --rope-base -3
expect_error "--kv-heads 0" "--kv-heads must be at least 1 (N K/V heads, N divides h), got 0" "$BIN" train --kv-heads 0
expect_error "--kv-heads not dividing h" "kv-heads N (3) must divide heads (h = 4)" "$BIN" train "${V4[@]}" --kv-heads 3
expect_error "RoPE with odd d_k" "RoPE turns pairs of features: d_k = d_model / h = 3 must be even" \
  "$BIN" train --heads 4 --d-model 12 --positions rope
expect_error "--init with another variant" "positions rope (base 10000), kv-heads 2; the settings ask for" \
  "$BIN" train "${V4[@]}" --steps 1 --init "$T/rope.safetensors"
expect_error "--save onto another variant's checkpoint" "holds a checkpoint of another run (kv_heads 2 there, (none) here, positions rope there, (none) here" \
  "$BIN" train "${V4[@]}" --steps 1 --save "$T/rope.safetensors"

# bench --train, cut down: 1 seed, 5 timed steps, the circuit check stops after its first evaluation.
out="$("$BIN" bench --train --seeds 1 --budget 0 --train-steps 5 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q "mhascope: first-batch loss 4.347605" <<<"$out" && grep -q "seed 1: NOT formed at step 25" <<<"$out" \
  && grep -q "1-layer control" <<<"$out" && ok "bench --train runs" || bad "bench --train: rc=$rc $out"
# Where Debian's torch is installed: PyTorch loads our checkpoint (strict) and, on the same batch, gets our loss.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  grep -q "PyTorch:  torch .*first-batch loss 4.347605" <<<"$out" && ok "PyTorch loads our checkpoint: same first-batch loss" \
    || bad "PyTorch side of bench --train: $out"
fi

# Outputs: never an input, never each other, the right extension, no link replaced; an existing
# checkpoint is replaced only by the same run at a later step, an existing log never (--force does).
printf 'abcabcabd abcabc abcabd' >"$T/corpus.txt"
expect_error "--save onto the training text" "its name must end in .safetensors" \
  "$BIN" train --task text --text "$T/corpus.txt" --seq 8 --d-model 8 --steps 1 --save "$T/corpus.txt"
cp "$T/corpus.txt" "$T/corpus.csv"
expect_error "--log onto the training text" "is the same file as --text" \
  "$BIN" train --task text --text "$T/corpus.csv" --seq 8 --d-model 8 --steps 1 --log "$T/corpus.csv"
expect_error "--log onto the --init checkpoint" "its name must end in .csv" \
  "$BIN" train "${SMALL[@]}" --steps 1 --init "$T/m.safetensors" --log "$T/m.safetensors"
expect_error "--save and --log the same" "its name must end in .csv" \
  "$BIN" train "${SMALL[@]}" --steps 1 --save "$T/x.safetensors" --log "$T/x.safetensors"
expect_error "--save onto a picture" "must end in .safetensors" "$BIN" train "${SMALL[@]}" --steps 1 --save "$T/l1.png"
ln -s "$T/m.safetensors" "$T/link.safetensors"
expect_error "--save onto a symlink" "is a symbolic link" "$BIN" train "${SMALL[@]}" --steps 1 --save "$T/link.safetensors"
[ -L "$T/link.safetensors" ] && ok "the symlink stays a symlink" || bad "symlink replaced"
cp "$T/m.safetensors" "$T/m.keep"
expect_error "a re-run does not replace the trained model with step 0" "holds step 20 of this run" \
  "$BIN" train "${SMALL[@]}" --steps 5 --save "$T/m.safetensors"
expect_error "another run's checkpoint is kept" "holds a checkpoint of another run (mlp 0 there, 1 here" \
  "$BIN" train "${SMALL[@]}" --mlp --steps 5 --save "$T/m.safetensors"
cmp -s "$T/m.safetensors" "$T/m.keep" && ok "the refused runs left the checkpoint as it was" || bad "checkpoint changed"
expect_error "an existing log is kept" "already exists" "$BIN" train "${SMALL[@]}" --steps 1 --log "$T/m.csv"
cp "$T/m.safetensors" "$T/f.safetensors"
expect_ok "--force replaces them" "$BIN" train "${SMALL[@]}" --steps 2 --save "$T/f.safetensors" --log "$T/m.csv" --force
"$BIN" train --help 2>&1 | grep -q "existing --save file is replaced only when it is a checkpoint" \
  && ok "train --help states the output rule" || bad "help lacks the rule"

# What train writes, every command reads.
expect_ok "the largest seed" "$BIN" train "${SMALL[@]}" --steps 1 --seed 18446744073709551615 --save "$T/seed.safetensors"
expect_ok "... its checkpoint opens" "$BIN" info --checkpoint "$T/seed.safetensors"
expect_ok "sort without periods" "$BIN" train --task sort --seq 9 --vocab 6 --d-model 8 --steps 1 --save "$T/sort.safetensors"
expect_ok "... its checkpoint opens" "$BIN" info --checkpoint "$T/sort.safetensors"
expect_error "--period-min with reverse" "--period-min is for the induction task; the reverse task has no period" \
  "$BIN" train --task reverse --period-min 0 --steps 1
expect_error "--text with induction" "--text is for the text task" "$BIN" train --text "$T/corpus.txt" --steps 1
expect_error "--vocab with text" "--vocab is not used by the text task" \
  "$BIN" train --task text --text "$T/corpus.txt" --vocab 10 --steps 1
expect_error "bench --train --checkpoint" "--checkpoint would be ignored" \
  "$BIN" bench --train --checkpoint "$T/m.safetensors"
expect_error "bench --train --torch" "--torch would be ignored" "$BIN" bench --train --torch
expect_error "bench --train --preset" "--preset would be ignored" "$BIN" bench --train --preset cat

# Memory: estimated before allocating, with the parts; the probe evaluation that did not fit.
out="$("$BIN" train --seq 768 --heads 8 --d-model 64 --batch 1 --steps 1 --memory-budget 512 2>&1)"; rc=$?
[ $rc -eq 1 ] && grep -q "probe evaluation (16 sequences)" <<<"$out" && grep -q "memory budget of 512.0 MiB" <<<"$out" \
  && ok "a probe evaluation over the budget is refused up front (no crash)" || bad "probe budget: rc=$rc $out"
start=$(date +%s%N)
expect_error "vocab 65536 x d_model 4096" "more than the memory budget of 1.0 GiB" \
  "$BIN" train --vocab 65536 --d-model 4096 --heads 8 --memory-budget 1024
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 3000 ] && ok "... refused at once" || bad "slow refusal"
out="$("$BIN" info --checkpoint "$T/m.safetensors" --batch 3000 --memory-budget 1 2>&1)"
grep -q "more than the memory budget of 1.0 MiB" <<<"$out" && ! grep -q "512.0 MiB" <<<"$out" \
  && ok "--checkpoint honours --memory-budget" || bad "--checkpoint budget: $out"
expect_ok "... and a larger one runs it" "$BIN" info --checkpoint "$T/m.safetensors" --batch 3000 --memory-budget 4000

# Messages that name the value.
expect_error "--lr 1e-50" "--lr must be a number > 0 that a float holds (1.2e-38 … 3.4e38), got '1e-50'" \
  "$BIN" train --lr 1e-50
expect_error "--lr 1e400" "got '1e400'" "$BIN" train --lr 1e400
expect_error "--weight-decay 1e30" "learning rate × weight decay (0.001 × 1e+30" "$BIN" train --weight-decay 1e30
head -c $((17 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$T/big.txt"
expect_error "a text over the cap" "is 17.0 MiB (17825792 bytes); the text task reads at most 16.0 MiB" \
  "$BIN" train --task text --text "$T/big.txt"
if command -v python3 >/dev/null; then
  python3 -c "import sys; sys.stdout.write(''.join(chr(c) for c in range(0x20, 0x30000) if not 0xD800 <= c < 0xE000)[:68648])" >"$T/wide.txt"
  expect_error "68648 distinct characters" "the text has 68648 distinct characters" \
    "$BIN" train --task text --text "$T/wide.txt"
fi
printf 'abcabcabcabcabcabc' >"$T/a.txt"; printf 'abdabdabdabdabdabd' >"$T/b.txt"
"$BIN" train --task text --text "$T/a.txt" --seq 8 --d-model 8 --steps 1 --save "$T/a.safetensors" >/dev/null 2>&1
expect_error "--init on another alphabet of the same size" "only in the checkpoint: 'c'; only in the text: 'd'" \
  "$BIN" train --task text --text "$T/b.txt" --seq 8 --d-model 8 --steps 1 --init "$T/a.safetensors"

# Leftovers: SIGTERM saves and leaves no temporary file; the log is whole; a file-size limit is an
# error, not a kill; an interrupted bench --train removes its temporary checkpoint.
mkdir "$T/term"
"$BIN" train "${SMALL[@]}" --steps 100000000 --eval-every 50 --save "$T/term/t.safetensors" --log "$T/term/t.csv" \
  >"$T/term.out" 2>&1 &
pid=$!
sleep 1.5; kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 143 ] && grep -q "interrupted at step .* (SIGTERM); saving" "$T/term.out" \
  && [ -z "$(ls -A "$T/term" | grep '^\.')" ] && ok "SIGTERM saves, exit 143, no temporary file" \
  || bad "SIGTERM: rc=$rc $(cat "$T/term.out") $(ls -A "$T/term")"
at=$(grep -oE "interrupted at step [0-9]+" "$T/term.out" | grep -oE "[0-9]+$")
expect_ok "... its checkpoint loads" "$BIN" train "${SMALL[@]}" --steps $((at + 1)) --init "$T/term/t.safetensors"
cols="$(awk -F, '{print NF}' "$T/term/t.csv" | sort -u)"
[ "$cols" = "37" ] && [ "$(tail -c 1 "$T/term/t.csv" | od -An -c | tr -d ' ')" = '\n' ] \
  && ok "the log is whole rows only" || bad "log: cols=$cols"
out="$(bash -c "ulimit -f 8; '$BIN' train ${SMALL[*]} --steps 3 --save '$T/term/big.safetensors'" 2>&1)"; rc=$?
[ $rc -eq 1 ] && grep -q "File too large" <<<"$out" && [ -z "$(ls -A "$T/term" | grep '^\.')" ] \
  && ok "a file-size limit is an error and leaves no temporary file" || bad "SIGXFSZ: rc=$rc $out $(ls -A "$T/term")"
# --timeline: the run as one page; a slider frame shows its step in Chromium; refusals.
expect_ok "train --timeline" "$BIN" train "${SMALL[@]}" --steps 40 --eval-every 10 --timeline "$T/tl.html"
[ "$(grep -o '"step":[0-9]*}' "$T/tl.html" | tr -d '\n')" = '"step":0}"step":10}"step":20}"step":30}"step":40}' ] \
  && ok "one frame per evaluation (0 … 40)" || bad "frames in the timeline: $(grep -o '"step":[0-9]*}' "$T/tl.html" | tr '\n' ' ')"
dom="$(chromium --headless --no-sandbox --disable-gpu --proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' \
  --user-data-dir="$T/profile" --dump-dom "file://$T/tl.html#frame=3&head=2" 2>/dev/null)"
grep -q 'id="step-label">step 30 (4 of 5)' <<<"$dom" && grep -q '<h2 id="main-title"[^>]*>layer 1 head 0<' <<<"$dom" \
  && ok "Chromium: frame 3 shows step 30, head 2 is layer 1 head 0" || bad "the timeline's frame in Chromium: $(grep -o 'step-label">[^<]*' <<<"$dom")"
expect_error "--timeline is a page" "ends in .html" "$BIN" train "${SMALL[@]}" --steps 2 --timeline "$T/tl.png"
expect_error "--timeline is a new file" "or add --force" "$BIN" train "${SMALL[@]}" --steps 2 --timeline "$T/tl.html"
expect_ok "... --force replaces it" "$BIN" train "${SMALL[@]}" --steps 2 --timeline "$T/tl.html" --force
"$BIN" train "${SMALL[@]}" --steps 2 --save "$T/tl.safetensors" >/dev/null && ln "$T/tl.safetensors" "$T/tl_link.html"
expect_error "--timeline is not --init (a hard link)" "same file as --init" "$BIN" train "${SMALL[@]}" --steps 4 --init "$T/tl.safetensors" --timeline "$T/tl_link.html" --force
# --animation: every head beside the curves, --animation-frames kept pictures evenly spaced (0, 20, 40).
expect_ok "train --animation" "$BIN" train "${SMALL[@]}" --steps 40 --eval-every 10 --animation "$T/a.gif" --animation-frames 3 --animation-delay 50
frames="$(/usr/bin/python3 -c "
import sys; from PIL import Image, ImageChops
im = Image.open(sys.argv[1]); n = im.n_frames
first = im.convert('RGB'); im.seek(n - 1); last = im.convert('RGB')
print(n, 'differ' if ImageChops.difference(first, last).getbbox() else 'same', im.info.get('duration'))" "$T/a.gif")"
[ "$frames" = "3 differ 500" ] && ok "3 frames of 0.5 s, the last unlike the first" || bad "the animation's frames: $frames"
expect_ok "train --animation-width" "$BIN" train "${SMALL[@]}" --steps 20 --eval-every 10 --animation "$T/w.gif" --animation-width 400
size="$(/usr/bin/python3 -c "
import sys; from PIL import Image
a, b = Image.open(sys.argv[1]), Image.open(sys.argv[2])
print(a.size[0], abs(a.size[1] - round(b.size[1] * 400 / b.size[0])) <= 1)" "$T/w.gif" "$T/a.gif")"
[ "$size" = "400 True" ] && ok "--animation-width 400: 400 pixels wide, the height in proportion" || bad "--animation-width: $size"
expect_error "--animation-width is bounded" "--animation-width" "$BIN" train "${SMALL[@]}" --steps 2 --animation "$T/d.gif" --animation-width 50
expect_error "--animation-delay is bounded" "--animation-delay" "$BIN" train "${SMALL[@]}" --steps 2 --animation "$T/c.gif" --animation-delay 1
expect_error "--animation is a .gif" "ends in .gif" "$BIN" train "${SMALL[@]}" --steps 2 --animation "$T/a.png"
expect_error "--animation is a new file" "or add --force" "$BIN" train "${SMALL[@]}" --steps 2 --animation "$T/a.gif"
expect_error "--animation is not --timeline" "is the same file as --animation" "$BIN" train "${SMALL[@]}" --steps 2 --timeline "$T/b.html" --animation "$T/b.html"
mkdir "$T/bench"
TMPDIR="$T/bench" "$BIN" bench --train --seeds 1 --budget 1 --train-steps 1000000 >/dev/null 2>&1 &
pid=$!
sleep 1.5; kill -INT $pid; wait $pid; rc=$?
[ $rc -eq 130 ] && [ -z "$(ls -A "$T/bench")" ] && ok "an interrupted bench --train leaves no temporary checkpoint" \
  || bad "bench --train interrupt: rc=$rc $(ls -A "$T/bench")"

echo "$fails failure(s)"
[ $fails -eq 0 ]
