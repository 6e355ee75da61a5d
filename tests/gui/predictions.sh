#!/usr/bin/env bash
# The Predictions tab under Xvfb on fixture model folders (tests/fixtures/models: random tiny
# models, copied here with a byte-level tokenizer.json by tests/model_tokenizer.py): the logit lens and
# the next-token list drawn, every control clicked (predictions.txt), the pictures not blank.
# Usage: predictions.sh CASE MHASCOPE_BINARY FIXTURES
set -u
case_name=$1
bin=$2
fix=$3
source "$(dirname "$0")/gui_common.sh"


case "$case_name" in
  predictions)
    copy_model gpt2 gpt
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "The cat sat. The cat sat." --view predictions \
            --script "$(script_from predictions.txt)") || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in predictions predictions_hover predictions_final predictions_compact; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    ;;
  predictions_llama)
    # A Llama-layout folder with a BOS, 63 tokens of text: the lens scrolls sideways.
    copy_model llama_gqa llama bos
    log=$(xvfb "$bin" --fresh --model "$out/llama" --view predictions \
            --text "one two three four five six seven eight nine ten eleven twelve" \
            --script "$(script_from predictions.txt)") || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/predictions.png" 1600x1000 || fail "blank predictions.png"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS $case_name"
