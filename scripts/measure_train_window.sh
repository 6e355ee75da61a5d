#!/usr/bin/env bash
# Training speed in the window's Train mode against `mhascope train` (same settings: the
# defaults, induction, 1500 steps), alternating, N rounds; the window is a real (event-waiting,
# not scripted) session under Xvfb whose Train button is clicked with xdotool.
#
# What is compared (both printed per round, medians at the end):
#   window/CLI       steps/s counted the same way on both sides: steps over the time spent inside
#                    Trainer::step (`mhascope train` prints this; the window's TrainingSession
#                    times its steps the same way) — how much the window slows the steps down.
#   window wall/CLI  the window's steps over the wall time from Train to the last step (its
#                    evaluations every 50 steps and publishing included) against the CLI's figure.
#   frame p95        the window's "frame work": from the loop waking up (input or the training
#                    tick) to the buffers swapped — events, the ImGui frame, GL submission and the
#                    swap (where a software renderer rasterises and presents) — over every frame
#                    drawn while the run was going; the waits between frames are not in it.
# The machine's load (uptime) is printed before and after: other processes change all three.
# Usage: [MHASCOPE_BIN=path/to/mhascope] scripts/measure_train_window.sh [ROUNDS]   (needs xvfb-run and xdotool)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin="${MHASCOPE_BIN:-$here/build/app/mhascope}"  # MHASCOPE_BIN: another build to compare
rounds=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CONFIG_HOME="$tmp/config"
echo "load before: $(uptime)"
: > "$tmp/ratios"
for r in $(seq 1 "$rounds"); do
  cli=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$bin" train --steps 1500 2>&1 | grep -o '[0-9.]* steps/s' | tail -1 | cut -d' ' -f1)
  xvfb-run -a -s "-screen 0 1600x1000x24" bash -c '
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$0" --fresh --view train --size 1600x1000 > "$1/win.txt" 2>&1 &
    app=$!
    sleep 3
    xdotool mousemove 35 324 click 1   # the Train button of the default layout
    for i in $(seq 1 600); do grep -q "training finished" "$1/win.txt" && break; sleep 0.1; done
    kill $app; wait $app 2>/dev/null || true' "$bin" "$tmp"
  line=$(grep -o 'finished.*' "$tmp/win.txt" || true)
  if [ -z "$line" ]; then echo "round $r: CLI $cli steps/s | window: no result"; continue; fi
  win=$(sed -E 's/^finished at step [0-9]+: ([0-9.]+) steps\/s.*/\1/' <<<"$line")
  wall=$(sed -E 's/.*; ([0-9.]+) steps\/s wall.*/\1/' <<<"$line")
  p95=$(sed -E 's/.*frame work p95 ([0-9.]+) ms over ([0-9]+) frames.*/\1 ms (\2 frames)/' <<<"$line")
  ratio=$(awk -v w="$win" -v c="$cli" 'BEGIN { printf "%.3f", w / c }')
  wratio=$(awk -v w="$wall" -v c="$cli" 'BEGIN { printf "%.3f", w / c }')
  echo "$ratio $wratio" >> "$tmp/ratios"
  echo "round $r: CLI $cli steps/s | window $win steps/s (window/CLI $ratio), wall $wall steps/s (wall/CLI $wratio) | frame work p95 $p95"
done
echo "load after: $(uptime)"
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median window/CLI $(cut -d' ' -f1 "$tmp/ratios" | median), median window wall/CLI $(cut -d' ' -f2 "$tmp/ratios" | median) over $(wc -l < "$tmp/ratios") rounds"
