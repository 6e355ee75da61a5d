#!/usr/bin/env bash
# The Experiments tab under Xvfb: activation patching and direct logit attribution on the trained fixture folder
# (its previous-token and induction heads), the numbers the window shows checked against what `mhascope patch` and
# `mhascope attribute` write for the same inputs (experiments.txt); the refusals (experiments_errors.txt); Cancel of
# a long sweep on a bigger random model (experiments_cancel.txt).
# Usage: experiments.sh CASE MHASCOPE_BINARY FIXTURES
set -u
case_name=$1
bin=$2
fix=$3
source "$(dirname "$0")/gui_common.sh"
PY=/usr/bin/python3

# fill SCRIPT KEY VALUE: @KEY@ in the test's copy of a script becomes VALUE
fill() { "$PY" - "$1" "$2" "$3" <<'PYEOF'
import sys
p, k, v = sys.argv[1:]
s = open(p).read().replace("@" + k + "@", v)
open(p, "w").write(s)
PYEOF
}

# top JSON: the most restored cell of a `patch --json` file (noising: the least) as the tab words it ("L1 H1: restored 0.953")
top() { "$PY" - "$1" <<'PYEOF'
import json, math, sys
g = json.load(open(sys.argv[1]))
best = None
for r, row in enumerate(g["restored"]):
    for c, v in enumerate(row):
        # noising: the cell that keeps least of the clean answer, as the tab names it
        s = -1 if g["direction"] == "noise" else 1
        if v is not None and math.isfinite(v) and (best is None or s * v > s * best[0]):
            best = (v, r, c)
col = {"head": "H", "K/V head": "KV"}.get(g["col_axis"], "")
print(f"L{best[1]} {col}{best[2]}: restored {best[0]:.3f}")
PYEOF
}

case "$case_name" in
  experiments)
    cp -r "$fix/models/trained" "$out/trained" || fail "cannot copy the trained fixture"
    m="$out/trained"
    "$bin" patch --model "$m" --clean qwertyuiqwertyui --corrupt abcdfgihqwertyui --answer q --wrong h --site head \
      --json "$out/head.json" > /dev/null 2>&1 || fail "mhascope patch --site head failed"
    "$bin" patch --model "$m" --clean qwertyuiqwertyui --corrupt abcdfgihqwertyui --answer q --metric prob --site k \
      --direction noise --json "$out/k.json" > /dev/null 2>&1 || fail "mhascope patch --site k failed"
    "$bin" attribute --model "$m" --text qwertyuiqwertyui --answer q --wrong h --json "$out/dla.json" > /dev/null 2>&1 \
      || fail "mhascope attribute failed"
    head_top=$(top "$out/head.json") || fail "cannot read head.json"
    k_top=$(top "$out/k.json") || fail "cannot read k.json"
    dla=$("$PY" -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["logit_diff"])' "$out/dla.json") \
      || fail "cannot read dla.json"
    dla01=$("$PY" -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["head"][0][1])' "$out/dla.json") \
      || fail "cannot read dla.json heads"
    read -r top_layer top_head <<<"$(sed -E 's/^L([0-9]+) H([0-9]+):.*/\1 \2/' <<<"$head_top")"
    echo "patch --site head: $head_top; --site k noise prob: $k_top; attribute: logit difference $dla"
    s=$(script_from experiments.txt)
    fill "$s" TOP "$head_top"; fill "$s" KTOP "$k_top"; fill "$s" DLA "$dla"
    fill "$s" TOPLAYER "$top_layer"; fill "$s" TOPHEAD "$top_head"; fill "$s" DLA01 "$dla01"
    log=$(xvfb "$bin" --fresh --model "$m" --text "abc" --view experiments --script "$s") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    for shot in experiments experiments_hover experiments_words experiments_k_noise experiments_compare; do
      "$PY" "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
    done
    "$PY" "$here/check_png.py" "$out/patch_head_denoise.png" || fail "blank patch_head_denoise.png"
    grep -q "<svg" "$out/patch_head_denoise.svg" || fail "patch_head_denoise.svg is not an SVG"
    "$PY" "$here/check_png.py" "$out/attribution_heads.png" || fail "blank attribution_heads.png"
    ;;
  experiments_errors)
    cp -r "$fix/models/trained" "$out/trained" || fail "cannot copy the trained fixture"
    log=$(xvfb "$bin" --fresh --model "$out/trained" --text "abc" --view experiments \
            --script "$(script_from experiments_errors.txt)") || fail "script failed (exit $?): $log"
    echo "$log"
    "$PY" "$here/check_png.py" "$out/experiments_mismatch.png" 1600x1000 || fail "blank experiments_mismatch.png"
    ;;
  experiments_cancel)
    "$PY" "$here/make_model.py" "$out/big" 512 8 8 1024 || fail "cannot make the big model"
    "$PY" "$here/../model_tokenizer.py" "$out/big" || fail "cannot write the tokenizer"
    s=$(script_from experiments_cancel.txt)
    fill "$s" CLEAN "$(printf 'ab%.0s' $(seq 60))"; fill "$s" CORRUPT "$(printf 'ba%.0s' $(seq 60))"
    log=$(xvfb "$bin" --fresh --model "$out/big" --text "abc" --view experiments --script "$s") \
      || fail "script failed (exit $?): $log"
    echo "$log"
    "$PY" "$here/check_png.py" "$out/experiments_progress.png" 1600x1000 || fail "blank experiments_progress.png"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS $case_name"
