#!/usr/bin/env bash
# Regenerates every picture README.md and docs/ show, with the commands they name:
# app screenshots (--screenshot under Xvfb), an exported heatmap (mhascope export) and the
# lesson tour (input scripts in assets/docs/img/lesson_*.script that click the lesson's tab), and the
# Train mode with its contact sheet (assets/docs/img/train_lab.script).
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
# The Train mode at the phase change and its exported contact sheet (assets/docs/img/train_lab.script).
"${XVFB[@]}" $BIN --fresh --view train --script assets/docs/img/train_lab.script
echo "assets/docs/img regenerated"
