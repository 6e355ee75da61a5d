#!/usr/bin/env bash
# The Model tab under Xvfb on the fixture model folders (tests/fixtures/models: random tiny models,
# copied here with a byte-level tokenizer.json, tests/model_tokenizer.py): every layer and head as a grid,
# hover, colour by role, the probe switch and its choices (where the run is drawn from, period, copies), a click opening that layer and head in the pipeline,
# File → Open of a model folder, errors keeping the previous grid, and cancelling a load.
# Usage: model_view.sh CASE MHASCOPE_BINARY FIXTURES
set -u
case_name=${1//_/-}  # the folder's name is typed into the Open popup, where "_" types a space
bin=$2
fix=$3
source "$(dirname "$0")/gui_common.sh"
PY=/usr/bin/python3

# copy NAME FOLDER [bos]: the fixture NAME as $out/FOLDER with a tokenizer
copy() {
  cp -r "$fix/models/$1" "$out/$2" || fail "cannot copy $1"
  "$PY" "$here/../model_tokenizer.py" "$out/$2" ${3:-} || fail "cannot write the tokenizer"
}

case "$1" in
  model_view)
    copy gpt2 gpt
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcdefabcdefabcdef" --script "$(script_from model_view.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in model_gpt2 model_hover model_pipeline; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    # The pipeline shows the clicked layer and head: layer 1 in use, head 3 in the heatmap.
    grep -q "^files_in_use: model $out/gpt$" <<<"$log" || fail "the model folder is not in use: $log"
    grep -q "^heatmap_label: .*head 3" <<<"$log" || fail "the heatmap is not on head 3: $log"
    grep -q "^subtitle: .*layer 1" <<<"$log" || fail "the pipeline is not on layer 1: $log"
    ;;
  model_llama)
    copy llama_gqa llama bos
    log=$(xvfb "$bin" --fresh --model "$out/llama" --text "one two one two" --script "$(script_from model_llama.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_llama.png" 1600x1000 || fail "blank model_llama.png"
    ;;
  model_errors)
    # Refusals keep the model in use and its grid: a folder without config.json and a config of
    # an unknown model_type (said in the Open popup), a folder without a tokenizer (the pipeline
    # cannot tokenize the text: put back, said).
    copy gpt2 gpt
    cp -r "$fix/models/gpt2" "$out/notok" || fail "cannot copy"
    mkdir -p "$out/empty" "$out/bert"
    echo '{"model_type": "bert", "hidden_size": 8}' > "$out/bert/config.json"
    log=$(xvfb "$bin" --fresh --model "$out/gpt" --text "abcabc" --script "$(script_from model_errors.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_error.png" 1600x1000 || fail "blank model_error.png"
    ;;
  model_open)
    copy gpt2 gpt
    copy llama_gqa llama bos
    log=$(xvfb "$bin" --fresh --text "abcabc" --script "$(script_from model_open.txt)") || fail "script failed (exit $?): $log"
    echo "$log"
    /usr/bin/python3 "$here/check_png.py" "$out/model_opened.png" 1600x1000 || fail "blank model_opened.png"
    ;;
  model_probe)
    copy llama_gqa llama
    log=$(xvfb "$bin" --fresh --model "$out/llama" --text "qwertyuiopaqwertyuiopa" --script "$(script_from model_probe.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in model_probe_alphabet model_probe_hover model_probe_one_token; do
      /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    ;;
  model_cancel)
    # A random model big enough (d_model 512, 8 layers, 1024 positions) that its 512-token probe
    # takes longer than a click.
    "$PY" "$here/make_model.py" "$out/big" 512 8 8 1024 || fail "cannot make the big model"
    "$PY" "$here/../model_tokenizer.py" "$out/big" || fail "cannot write the tokenizer"
    log=$(xvfb "$bin" --fresh --model "$out/big" --text "abc" --script "$(script_from model_cancel.txt)") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $1"
