#!/usr/bin/env bash
# The Practice mode under Xvfb (practice.txt): a wrong solution diagnosed at its stage and line, a
# save of the right one checked without a button, a hint, the solution revealed, "Mark as complete"
# — then, in a second launch (no --fresh, the test's own config folder), the mark and the file kept.
# Usage: practice.sh MHASCOPE_BINARY FIXTURES
set -u
case_name=practice
bin=$1
fixtures=$2
source "$(dirname "$0")/gui_common.sh"
cp "$fixtures/practice/wrong/scale_by_sqrt_d_model.py" "$out/mine.py"
cp "$fixtures/practice/wrong/causal_hides_diagonal.py" "$out/causal_wrong.py"
script=$(script_from practice.txt)
sed -i "s|@SOLUTION@|$MHASCOPE_ASSETS/practice/mha.solution.py|; s|click practice_start|click practice_starter_path\npress_ctrl\nkey A\nrelease_ctrl\ntype $out/causal.py\nkey Enter\nclick practice_start|" "$script"
# Not --fresh: the progress file is the test's own ($XDG_CONFIG_HOME is in $out).
log=$(xvfb "$bin" --preset default --script "$script") || fail "script failed (exit $?): $log"
echo "$log"
for shot in practice_wrong practice_right; do
  /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
done
progress="$XDG_CONFIG_HOME/mhascope/practice.json"
/usr/bin/python3 - "$progress" "$out" <<'PYEOF' || fail "progress: $(cat "$progress")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["completed"] == ["mha"], p
assert p["hints"].get("mha") == 1, p
assert p["files"]["mha"] == sys.argv[2] + "/mine.py", p
assert p["files"]["causal"] == sys.argv[2] + "/causal_wrong.py", p  # the dropped file
PYEOF
head -1 "$out/causal.py" | grep -q '^# mhascope exercise: causal$' || fail "the starter was not written"
# A second launch: the exercise's mark and its file come back.
cat > "$out/again.txt" <<EOF2
wait 3
click mode_practice
wait 3
click practice_exercise_mha
wait 3
wait_until_shown 6000 practice_summary all pass
expect_text practice_complete complete
expect_text practice_hints 1 of 5
quit
EOF2
log=$(xvfb "$bin" --preset default --script "$out/again.txt") || fail "second launch failed (exit $?): $log"
echo "all practice checks passed"
