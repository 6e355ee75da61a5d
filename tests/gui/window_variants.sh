#!/usr/bin/env bash
# The attention variants' controls under Xvfb (window_variants.txt): K/V heads N, positions, RoPE
# base and pairing, window W and sinks S each change the pass on screen, bad values show the
# engine's error; the exported stages are pictures; the workspace it saved brings the variants back
# (window_variants_reopen.txt); the window's command line takes the commands' variant flags.
# Usage: window_variants.sh MHASCOPE_BINARY
set -u
case_name=window_variants
bin=$1
source "$(dirname "$0")/gui_common.sh"
xvfb "$bin" --fresh --preset default --script "$(script_from window_variants.txt)" > "$out/log.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "script failed (exit $rc)"; }
for png in kv_groups_b0 q_rotated_b0_h5 position_bias_b0_h5 window_mask_b0 variants_gqa_grid variants_rope \
           variants_alibi variants_window; do
  /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png.png"
done
log=$(xvfb "$bin" --workspace "$out/workspace.json" --script "$(script_from window_variants_reopen.txt)" 2>&1) \
  || fail "the saved workspace did not bring the variants back: $(tail -n 5 <<<"$log")"
# The same picture as `mhascope export` with the same flags (the window's command line takes them).
opts=(--heads 4 --kv-heads 2 --positions alibi --mask causal --window 2 --sinks 1)
"$bin" export "${opts[@]}" --stage weights --head 3 --out "$out/cli.png" || fail "CLI export with the variant flags"
xvfb "$bin" --fresh "${opts[@]}" --stage weights --head 3 --script "$(script_from window_variants_export.txt)" \
  || fail "the window refused the variant flags (exit $?)"
size=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$here'); from check_png import decode; w, h, _, _ = decode('$out/cli.png'); print(w, h)")
/usr/bin/python3 "$here/same_region.py" "$out/cli.png" "$out/weights_b0_h3.png" 0 0 $size \
  || fail "the window's picture differs from export's with the same variant flags"
err=$(xvfb "$bin" --fresh --heads 4 --kv-heads 3 2>&1) && fail "--kv-heads 3 with h = 4 accepted"
grep -qF "must divide heads (h = 4)" <<<"$err" || fail "no clear --kv-heads error: $err"
echo "ok"
