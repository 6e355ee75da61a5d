#!/usr/bin/env bash
# Two builds' dumps and pictures on the same configurations, compared byte for byte: every preset,
# GQA + RoPE, a window with sinks + ALiBi, cross-attention with padding, and a GPT-2 and a Llama
# (GQA) fixture folder's layer 1. For a change that must not change what is computed or drawn.
#   scripts/compare_builds.sh OLD/app/mhascope NEW/app/mhascope
# Prints one line per configuration ("same" or "DIFF" with the files that differ); exit 1 on a
# difference. The memory budget is fixed: the default one (half of the free memory) is recorded
# in trace.json and changes from run to run.
set -u
[ $# -eq 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
old=$1 new=$2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work=$(mktemp -d "${TMPDIR:-/tmp}/mhascope-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
for f in gpt2 llama_gqa; do
  cp -r "$root/tests/fixtures/models/$f" "$work/$f"
  /usr/bin/python3 "$root/tests/model_tokenizer.py" "$work/$f" > /dev/null || { echo "cannot make $f's tokenizer" >&2; exit 2; }
done
configs=(
  "--preset default" "--preset cat" "--preset deep" "--preset gqa_rope" "--preset interview" "--preset paper"
  "--preset specialists"
  "--preset default --mask causal --positions rope --kv-heads 2"
  "--preset default --mask causal --window 3 --sinks 1 --positions alibi"
  "--preset default --kv-text 'the dog ran | far away' --batch 2 --pad-last 1"
  "--model $work/gpt2 --text 'The cat sat on the mat' --layer 1"
  "--model $work/llama_gqa --text 'The cat sat on the mat' --layer 1"
)
i=0 bad=0
for c in "${configs[@]}"; do
  i=$((i + 1))
  for side in old new; do
    bin=$old; [ $side = new ] && bin=$new
    mkdir -p "$work/$side"
    eval "\"$bin\" run $c --memory-budget 4096 --dump \"$work/$side/d$i\"" > /dev/null 2>&1 || echo "$side: run failed: $c"
    eval "\"$bin\" export $c --memory-budget 4096 --stage weights --out \"$work/$side/e$i.png\"" > /dev/null 2>&1
    eval "\"$bin\" export $c --memory-budget 4096 --stage scores --out \"$work/$side/e$i.svg\"" > /dev/null 2>&1
  done
  if diff -r -q "$work/old/d$i" "$work/new/d$i" > /dev/null && cmp -s "$work/old/e$i.png" "$work/new/e$i.png" &&
     cmp -s "$work/old/e$i.svg" "$work/new/e$i.svg"; then
    echo "same  $c ($(ls "$work/old/d$i" | wc -l) dump files, 2 pictures)"
  else
    echo "DIFF  $c"
    diff -r -q "$work/old/d$i" "$work/new/d$i" | head -5
    cmp "$work/old/e$i.png" "$work/new/e$i.png" 2>&1 | head -1
    cmp "$work/old/e$i.svg" "$work/new/e$i.svg" 2>&1 | head -1
    bad=1
  fi
done
exit $bad
