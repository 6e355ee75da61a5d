#!/usr/bin/env bash
# The Compare tab under Xvfb (compare.txt), and its numbers against the command line: the words of
# the largest |B − A| equal what `mhascope compare` prints for the same two models, and the hovered
# cell's two values and their difference equal the stages `run --dump` writes for each side.
# Usage: compare_test.sh MHASCOPE_BINARY
set -u
case_name=compare
bin=$1
source "$(dirname "$0")/gui_common.sh"
"$bin" train --d-model 16 --steps 10 --eval-every 10 --save "$out/ckpt.safetensors" >/dev/null 2>&1 \
  || fail "cannot make the checkpoint"
log=$(xvfb "$bin" --fresh --preset default --script "$(script_from compare.txt)") || fail "script failed (exit $?): $log"
echo "$log"
for shot in compare_start compare_seed compare_heads compare_rope compare_checkpoint; do
  /usr/bin/python3 "$here/check_png.py" "$out/$shot.png" 1600x1000 || fail "blank $shot.png"
done
/usr/bin/python3 "$here/check_png.py" "$out/picture.png" || fail "blank exported comparison"
gui_words=$(grep -m1 "^compare_words: " <<<"$log" | sed 's/^compare_words: //')
cli_words=$("$bin" compare --preset default --b-seed 7 --stage weights | grep "^max |B − A|")
[ -n "$cli_words" ] && [ "over every head: $cli_words" = "over every head: $gui_words" ] \
  || fail "window says \"$gui_words\", the command line \"$cli_words\""
"$bin" run --preset default --dump "$out/a" >/dev/null && "$bin" run --preset default --seed 7 --dump "$out/b" >/dev/null \
  || fail "cannot dump"
hovers=$(grep "^compare_hover: " <<<"$log" | head -3 | sed 's/^compare_hover: //')
/usr/bin/python3 - "$out/a/weights.npy" "$out/b/weights.npy" "$hovers" <<'PYEOF' || fail "hovered values differ from the dumps"
import re, sys
import numpy as np
a, b = np.load(sys.argv[1])[0, 0], np.load(sys.argv[2])[0, 0]   # head 0, batch item 0
lines = sys.argv[3].splitlines()
assert len(lines) == 3 and len(set(lines)) == 1, lines   # the same cell from A, from B − A and from B
m = re.match(r"query (\d+) '[^']*', key (\d+) '[^']*': A (\S+), B (\S+), B − A (\S+)$", lines[0])
assert m, lines[0]
q, k = int(m.group(1)), int(m.group(2))
va, vb, vd = (float(m.group(i)) for i in (3, 4, 5))
assert abs(va - a[q, k]) <= 0.006 * max(abs(a[q, k]), 1e-3), (va, a[q, k])
assert abs(vb - b[q, k]) <= 0.006 * max(abs(b[q, k]), 1e-3), (vb, b[q, k])
assert abs(vd - (b[q, k] - a[q, k])) <= 0.006 * max(abs(b[q, k] - a[q, k]), 1e-3), (vd, b[q, k] - a[q, k])
print("hovered cell", q, k, "A", va, "B", vb, "B − A", vd, "match the dumps")
PYEOF
# Two steps of one live run (compare_timeline.txt): A is the later step, B step 0.
log=$(xvfb "$bin" --fresh --preset default --script "$(script_from compare_timeline.txt)") || fail "timeline script failed (exit $?): $log"
echo "$log"
grep -q "^compare_a_config: .*trained layer 0 (L = 2; induction, step [1-9][0-9]*, " <<<"$log" || fail "A is not a later step: $log"
/usr/bin/python3 "$here/check_png.py" "$out/compare_timeline.png" 1600x1000 || fail "blank compare_timeline.png"
echo "ok: compare"
