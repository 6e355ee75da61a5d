#!/usr/bin/env bash
# Titles that name a model's layer, the preset box's " (edited)" mark, the tab strip at 1100 px,
# and `mhascope --model DIR` without --text, under Xvfb (scripts layer_titles.txt,
# random_titles.txt, model_no_text.txt, model_no_tokenizer.txt).
# Usage: layer_titles.sh CASE MHASCOPE_BINARY FIXTURES
set -u
case_name=${1//_/-}
bin=$2
fix=$3
source "$(dirname "$0")/gui_common.sh"
PY=/usr/bin/python3

case "$1" in
  layer_titles)
    copy_model gpt2 gpt
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --layer 1 --text "abcabc" --view heatmap --stage weights \
            --script "$(script_from layer_titles.txt)") || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in titles_grid titles_compare titles_heatmap; do
      "$PY" "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    # The CLI's export of the same layer: the same title in the picture.
    "$bin" export --model "$out/gpt" --layer 1 --text "abcabc" --stage weights --head 2 --out "$out/l1.svg" >/dev/null \
      || fail "CLI export of layer 1"
    grep -qF "<title>Softmax (weights) · layer 1 · head 2 · batch 0</title>" "$out/l1.svg" \
      || fail "the CLI's title does not name the layer: $(grep -o '<title>[^<]*' "$out/l1.svg")"
    ;;
  random_titles)
    log=$(xvfb "$bin" --fresh --size 1100x900 --script "$(script_from random_titles.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in tabs_1100 tabs_1100_predictions; do
      "$PY" "$here/check_png.py" "$out/$shot.png" 1100x900 || fail "blank $shot.png"
    done
    ;;
  model_no_text)
    copy_model llama_gqa llama
    log=$(xvfb "$bin" --fresh --model "$out/llama" --script "$(script_from model_no_text.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    grep -q "^start_text_note: *$" <<<"$log" || fail "the note stays after the text was changed: $log"
    "$PY" "$here/check_png.py" "$out/model_no_text.png" 1600x1000 || fail "blank model_no_text.png"
    # The commands still need the text.
    err=$("$bin" run --model "$out/llama" --dump "$out/d" 2>&1) && fail "run without --text accepted"
    grep -qF -- "--model needs the text" <<<"$err" || fail "run without --text: $err"
    ;;
  model_no_tokenizer)
    cp -r "$fix/models/gpt2" "$out/notok" || fail "cannot copy"
    log=$(xvfb "$bin" --fresh --model "$out/notok" --script "$(script_from model_no_tokenizer.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    grep -q "^model_probe_period: [0-9]" <<<"$log" || fail "the Model tab is not on random tokens: $log"
    "$PY" "$here/check_png.py" "$out/model_no_tokenizer.png" 1600x1000 || fail "blank model_no_tokenizer.png"
    # Options the folder decides are refused as with a text, before the window opens.
    err=$(xvfb "$bin" --fresh --model "$out/notok" --heads 3 2>&1) && fail "--heads with --model accepted"
    grep -qF -- "drop --heads" <<<"$err" || fail "--heads with --model: $err"
    # A folder that is not a model still fails before the window opens.
    mkdir -p "$out/empty"
    err=$(xvfb "$bin" --fresh --model "$out/empty" 2>&1) && fail "an empty folder opened"
    grep -q "config.json" <<<"$err" || fail "empty folder: $err"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $1"
