#!/usr/bin/env bash
# Training speed in the window's Train mode against `mhascope train` (same settings: the
# defaults, induction, 1500 steps), alternating, N rounds; the window is a real (event-waiting,
# not scripted) session under Xvfb whose Train button is clicked with xdotool. The window prints
# its mean steps/s and its frame p95 while training when the run finishes.
# Usage: scripts/measure_train_window.sh [ROUNDS]   (needs xvfb-run and xdotool)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/build/app/mhascope"
rounds=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CONFIG_HOME="$tmp/config"
for r in $(seq 1 "$rounds"); do
  cli=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$bin" train --steps 1500 2>&1 | grep -o '[0-9.]* steps/s' | tail -1)
  xvfb-run -a -s "-screen 0 1600x1000x24" bash -c '
    "$0" --fresh --view train --size 1600x1000 > "$1/win.txt" 2>&1 &
    app=$!
    sleep 3
    xdotool mousemove 35 324 click 1   # the Train button of the default layout
    for i in $(seq 1 600); do grep -q "training finished" "$1/win.txt" && break; sleep 0.1; done
    kill $app; wait $app 2>/dev/null || true' "$bin" "$tmp"
  win=$(grep -o 'finished.*' "$tmp/win.txt" || echo "window: no result")
  echo "round $r: CLI $cli | window $win"
done
