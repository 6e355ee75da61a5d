#!/usr/bin/env bash
# The pipeline's Circuits tab on a model folder's layer under Xvfb (script model_circuits.txt): the
# fixture GPT-2-layout folder (tests/fixtures/models/gpt2, copied with a byte-level tokenizer by
# tests/model_tokenizer.py), a head clicked in the Model tab, every control of the tab clicked, the
# pictures exported; llama: the Llama-layout fixture (GQA, RoPE, a BOS) says RoPE's convention and
# labels its axes with the text's tokens, BOS included; explore: seeded random input over every tab
# with the model open; cancel: Cancel on a model big enough to take a while.
# Usage: model_circuits.sh CASE MHASCOPE_BINARY FIXTURES
set -u
case_name=${1//_/-}
bin=$2
fix=$3
source "$(dirname "$0")/gui_common.sh"
PY=/usr/bin/python3


case "$1" in
  model_circuits)
    copy_model gpt2 gpt
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcdefabcdef" --script "$(script_from model_circuits.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in circuits_model circuits_model_tokens circuits_model_hover circuits_model_layer0 circuits_model_followed circuits_model_scrolled; do
      "$PY" "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    for f in gpt_ov_tokens_l1_h2 reads_v_l1_h2 gpt_copying gpt_rollout; do
      "$PY" "$here/check_png.py" "$out/$f.png" || fail "blank export $f.png"
    done
    # The words are about the chosen head and the text's tokens.
    grep -q "^circuits_head_text: layer 1 head 2: E QK Eᵀ over the text's 6 distinct tokens" <<<"$log" \
      || fail "the token-space words do not count the text's 6 distinct tokens: $log"
    grep -q "^subtitle: .*layer 0" <<<"$log" || fail "the pipeline is not on layer 0 after the click: $log"
    ;;
  model_circuits_llama)
    copy_model llama_gqa llama bos
    printf '%s\n' 'wait 2' 'click tab_circuits' 'wait 2' 'wait_until_shown 600 circuits_status ready' \
      'expect_shown circuits_step llama · layer 0, head 0' 'expect_shown circuits_conventions RoPE: QK is the content part' \
      'click circuits_m_qk_tokens' 'wait 2' 'print circuits_head_text' "screenshot $out/circuits_llama.png" 'quit' > "$out/llama.txt"
    log=$(xvfb "$bin" --fresh --model "$out/llama" --text "one two one two" --script "$out/llama.txt") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    "$PY" "$here/check_png.py" "$out/circuits_llama.png" 1600x1000 || fail "blank circuits_llama.png"
    # The BOS the template puts first is one of the axes' tokens.
    grep -q "^circuits_head_text: layer 0 head 0: E QK Eᵀ over the text's 7 distinct tokens" <<<"$log" \
      || fail "the token-space axes are not the text's 7 distinct tokens (BOS, o, n, e, ␣, t, w): $log"
    ;;
  model_circuits_cancel)
    # A random model (d_model 512, 8 layers, 1024 positions) and a 900-byte text: long enough to cancel.
    "$PY" "$here/make_model.py" "$out/big" 512 8 8 1024 || fail "cannot make the big model"
    "$PY" "$here/../model_tokenizer.py" "$out/big" || fail "cannot write the tokenizer"
    text=$(for i in $(seq 60); do printf 'the cat sat on. '; done)
    log=$(xvfb "$bin" --fresh --model "$out/big" --text "$text" --script "$(script_from model_circuits_cancel.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    "$PY" "$here/check_png.py" "$out/circuits_cancelled.png" 1600x1000 || fail "blank circuits_cancelled.png"
    ;;
  model_circuits_pair)
    # The pair picked with the combos: the label is the core's words for the CLI's --pair of the same
    # folder, text and pair (the same numbers, through the window's worker).
    copy_model gpt2 gpt
    want=$("$bin" circuits --model "$out/gpt" --text "abcdefabcdef" --layer 0 --head 0 --pair 0.1,1.2 \
      | sed -n 's/^The pair asked for: //p')
    [ -n "$want" ] || fail "the command printed no pair"
    sed "s|@PAIR@|$want|" "$(script_from model_circuits_pair.txt)" > "$out/pair.txt"
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcdefabcdef" --script "$out/pair.txt") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in circuits_pair_before circuits_pair_scrolled circuits_pair; do
      "$PY" "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    grep -q "^circuits_pair_text: layer 0 head 1 → layer 1 head 2 through the values: copying" <<<"$log" \
      || fail "the picked pair's words: $log"
    ;;
  model_circuits_explore)
    # Seeded random clicks, drags, wheel, keys and typing over every tab with the model open, the
    # Circuits tab's worker running: no assert, no crash, no GL error.
    copy_model gpt2 gpt
    printf '%s\n' 'wait 2' 'wait_until_shown 300 model_status ready' 'click tab_circuits' 'wait 2' \
      'wait_until_shown 600 circuits_status ready' 'random 7 150' 'wait 5' 'expect_no_gl_errors' 'quit' > "$out/explore.txt"
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcdefabcdef" --script "$out/explore.txt" 2>&1)
    rc=$?
    [ "$rc" -eq 0 ] || { echo "$log" | tail -25; fail "exploration failed (exit $rc)"; }
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $1"
