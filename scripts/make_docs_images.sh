#!/usr/bin/env bash
# Regenerates every picture README.md and docs/ show, with the commands they name:
# app screenshots (--screenshot under Xvfb), an exported heatmap (mhascope export) and the
# lesson tour (input scripts in assets/docs/img/lesson_*.script that click the lesson's tab), and the
# Train mode with its contact sheet (assets/docs/img/train_lab.script), and two exported HTML pages in Chromium.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN=build/app/mhascope
XVFB=(xvfb-run -a -s "-screen 0 1600x1000x24")
"${XVFB[@]}" $BIN --screenshot assets/docs/img/app_weights.png --preset default --stage weights
"${XVFB[@]}" $BIN --screenshot assets/docs/img/app_all_heads.png --preset paper --stage weights --view grid
$BIN export --preset default --stage weights --head all --out assets/docs/img/export_weights_all.png
$BIN export --preset default --stage masked_scores --mask causal --head 1 --out assets/docs/img/export_masked_h1.png
for s in assets/docs/img/lesson_*.script; do
  name="$(basename "$s" .script)"
  preset=default
  case "$name" in lesson_roles|lesson_lines) preset=specialists ;; esac
  # --view opens the Lessons tab at the lesson (lesson_NAME: the lesson's id).
  "${XVFB[@]}" $BIN --fresh --preset "$preset" --view "${name#lesson_}" --script "$s"
done
# The whole window seen with deuteranopia (assets/docs/img/app_see_as.script).
"${XVFB[@]}" $BIN --fresh --preset tests/gui/causal.json --stage weights --script assets/docs/img/app_see_as.script
# The Experiments tab on the trained fixture's induction prompt (assets/docs/img/app_experiments.script).
"${XVFB[@]}" $BIN --fresh --model tests/fixtures/models/trained --text abc --view experiments \
  --script assets/docs/img/app_experiments.script
# The Train mode at the phase change and its exported contact sheet (assets/docs/img/train_lab.script).
"${XVFB[@]}" $BIN --fresh --view train --script assets/docs/img/train_lab.script
# An exported page (every head of a causal pattern, head 2 pointed at) and a training run's timeline
# at its phase change, as Debian's headless Chromium shows them, the network closed.
page() {  # page OUT.png URL
  chromium --headless --no-sandbox --disable-gpu --force-device-scale-factor=1 --hide-scrollbars \
    --window-size=1200,1560 --proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' \
    --user-data-dir="$tmp/profile" --screenshot="$1" "$2" 2>/dev/null
}
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
$BIN export --text "When Mary and John went to the store, John gave a drink to" --d-model 48 --heads 6 --mask causal \
  --stage weights --out "$tmp/page.html" >/dev/null
page assets/docs/img/html_page.png "file://$tmp/page.html#head=2&cell=11,3&query=11"
$BIN train --steps 600 --eval-every 50 --timeline "$tmp/timeline.html" >/dev/null
page assets/docs/img/html_timeline.png "file://$tmp/timeline.html#frame=7&head=3"
echo "assets/docs/img regenerated"
