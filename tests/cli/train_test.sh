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
# On a terminal (a pty from util-linux's `script`): a progress bar redrawn with \r, no per-evaluation lines.
if command -v script >/dev/null; then
  out="$(script -qec "'$BIN' train ${SMALL[*]} --steps 30 --eval-every 10" /dev/null 2>&1)"
  grep -q "\[##########\.*\] step 10/30" <<<"$out" && ! grep -q "^step 10/30" <<<"$out" \
    && grep -q "Head roles at step 30" <<<"$out" && ok "progress bar on a terminal" || bad "terminal progress: $out"
fi
out="$("$BIN" train "${SMALL[@]}" --steps 5 --eval-every 5 --init "$T/m.safetensors" 2>&1)"
grep -q "^step 25/25" <<<"$out" && ok "--init continues from the checkpoint's step" || bad "--init: $out"

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
out="$("$BIN" train "${SMALL[@]}" --steps 1 --init "$T/int.safetensors" 2>&1)" && ok "the Ctrl-C checkpoint loads" \
  || bad "Ctrl-C checkpoint: $out"

# NaN: clear message, last good checkpoint kept and loadable.
expect_error "NaN loss names the learning rate" "may be too high" \
  "$BIN" train "${SMALL[@]}" --steps 50 --lr 1e30 --save "$T/nan.safetensors"
out="$("$BIN" train "${SMALL[@]}" --steps 1 --lr 1e-3 --init "$T/nan.safetensors" 2>&1)"; rc=$?
[ $rc -eq 0 ] && ! grep -qi nan <<<"$out" && ok "the last good checkpoint loads and has a finite loss" \
  || bad "NaN checkpoint: rc=$rc $out"

# Bad inputs.
expect_error "T < 2 k_max" "must be at least 2 * k_max = 32" "$BIN" train --seq 20
expect_error "heads must divide d_model" "must be divisible by heads" "$BIN" train --d-model 10 --heads 4
expect_error "unknown task" "unknown task 'copy'" "$BIN" train --task copy
expect_error "text needs a file" "needs --text FILE" "$BIN" train --task text
expect_error "missing --init file" "nope.safetensors" "$BIN" train --init "$T/nope.safetensors"
expect_error "--init with other sizes" "the --init checkpoint has vocab 16" \
  "$BIN" train --task induction --layers 2 --heads 2 --d-model 32 --vocab 16 --seq 12 --period-min 3 --period-max 5 \
  --init "$T/m.safetensors"
printf 'not a checkpoint' >"$T/junk.safetensors"
expect_error "junk checkpoint" "junk.safetensors" "$BIN" train --init "$T/junk.safetensors"
printf 'abcabcabd abcabc' >"$T/t.txt"
out="$("$BIN" train --task text --text "$T/t.txt" --seq 8 --d-model 8 --steps 3 2>&1)"
grep -q "vocab 5, T 8" <<<"$out" && ok "text task: vocabulary from the file" || bad "text: $out"

# A trained layer in info / run / export.
out="$("$BIN" info --checkpoint "$T/m.safetensors" --layer 1 2>&1)"
grep -q "trained layer 1 of 2 (induction, step 20" <<<"$out" && grep -q "weights  *(1, 2, 12, 12)" <<<"$out" \
  && ok "info --checkpoint --layer" || bad "info --checkpoint: $out"
"$BIN" run --checkpoint "$T/m.safetensors" --layer 0 --batch 2 --dump "$T/dump" >/dev/null 2>&1 \
  && [ -f "$T/dump/weights.npy" ] && grep -q '"a' "$T/dump/trace.json" && ok "run --checkpoint dumps, tokens are symbols" \
  || bad "run --checkpoint: $(ls "$T/dump" 2>&1)"
"$BIN" export --checkpoint "$T/m.safetensors" --layer 1 --stage weights --head 1 --out "$T/l1.png" >/dev/null 2>&1 \
  && [ -s "$T/l1.png" ] && ok "export --checkpoint --layer" || bad "export --checkpoint"
"$BIN" bench --checkpoint "$T/m.safetensors" --layer 1 --repeat 2 2>&1 | grep -q "trained layer 1 of 2" \
  && ok "bench --checkpoint --layer" || bad "bench --checkpoint"
expect_error "--layer out of range" "has 2 layers (0 .. 1)" "$BIN" info --checkpoint "$T/m.safetensors" --layer 2
expect_error "--layer without --checkpoint" "--layer needs --checkpoint" "$BIN" info --layer 1
expect_error "--checkpoint with model options" "drop --d-model, --heads" \
  "$BIN" info --checkpoint "$T/m.safetensors" --d-model 8 --heads 2

# bench --train, cut down: 1 seed, 5 timed steps, the circuit check stops after its first evaluation.
out="$("$BIN" bench --train --seeds 1 --budget 0 --train-steps 5 2>&1)"; rc=$?
[ $rc -eq 0 ] && grep -q "mhascope: first-batch loss 4.352557" <<<"$out" && grep -q "seed 1: NOT formed at step 25" <<<"$out" \
  && grep -q "1-layer control" <<<"$out" && ok "bench --train runs" || bad "bench --train: rc=$rc $out"
# Where Debian's torch is installed: PyTorch loads our checkpoint (strict) and, on the same batch, gets our loss.
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  grep -q "PyTorch:  torch .*first-batch loss 4.352557" <<<"$out" && ok "PyTorch loads our checkpoint: same first-batch loss" \
    || bad "PyTorch side of bench --train: $out"
fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
