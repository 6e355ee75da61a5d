#!/usr/bin/env bash
# GUI tests of the Circuits panel under Xvfb, driven by input scripts (app/testing/input_script.hpp).
# Usage: circuits.sh CASE MHASCOPE_BINARY
#   train     the Train mode: a live run's scrubbed step — every control, the exports, the words
#   pipeline  the pipeline's Circuits tab with --checkpoint; without one it says how to open one
#   train_run the pipeline's Circuits tab offers the run the Train mode just trained
set -u
case_name=$1
bin=$2
source "$(dirname "$0")/gui_common.sh"
fixtures="$here/../fixtures"
run_script() {  # NAME SCRIPT [window options...]
  local name=$1 script=$2
  shift 2
  xvfb "$bin" "$@" --script "$script" > "$out/$name.log" 2>&1 || { cat "$out/$name.log"; fail "$name: script failed"; }
}

case "$case_name" in
  train)
    run_script train "$(script_from circuits.txt)" --fresh
    # The copying score printed beside the bar is the one the words name as the highest or lowest.
    grep -q '^circuits_copying_L1_h0: [01]\.[0-9]\{3\}$' "$out/train.log" || { cat "$out/train.log"; fail "no copying score"; }
    # The rollout's words follow the hovered row: a middle position, not the last (31) shown at rest.
    row=$(grep -oE '^circuits_rollout_text: Rollout \(Abnar & Zuidema 2020\): position [0-9]+' "$out/train.log" | tail -1 | grep -oE '[0-9]+$')
    [ -n "$row" ] && [ "$row" -ge 8 ] && [ "$row" -le 24 ] || { cat "$out/train.log"; fail "the rollout words did not follow the hovered row ($row)"; }
    ;;
  pipeline)
    run_script pipeline "$(script_from circuits_pipeline.txt)" --fresh \
      --checkpoint "$fixtures/circuits/induction_small.safetensors"
    printf 'wait 3\nclick tab_circuits\nwait 2\nexpect_shown circuits_status Open a training checkpoint\nquit\n' > "$out/none.txt"
    run_script none "$out/none.txt" --fresh --preset default
    ;;
  train_run)
    run_script train_run "$(script_from circuits_train_run.txt)" --fresh
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $case_name"
