#!/usr/bin/env bash
# GUI tests of the window's input rules outside the Train mode, each under a fresh Xvfb: the
# preset file in use is never overwritten by a workspace, a last workspace that cannot be restored
# is kept aside, a workspace is checked as a whole before anything of it is applied, a state
# folder that cannot be made is said, --ui-scale is range-checked, the zoom fits a new shape.
# Usage: window_rules_test.sh CASE MHASCOPE_BINARY
set -u
case_name=$1
bin=$2
out_prefix=mhascope-rules
case_name=${case_name//_/-}  # no "_" in $out: scripts type it as a space
source "$(dirname "$0")/gui_common.sh"
case_name=$1
script() {  # script NAME LINES…: a script file of the lines given
  local f="$out/$1.txt"; shift
  printf '%s\n' "$@" > "$f"
  echo "$f"
}
session="$XDG_STATE_HOME/mhascope/last-workspace.json"

case "$case_name" in
  ui_scale)
    # NaN, infinities, zero and negative scales have no font size: refused with the value and the range.
    for v in nan inf -inf -1 0 0.4 4.5 1e999 abc ""; do
      err=$(xvfb "$bin" --ui-scale "$v" --screenshot "$out/x.png" 2>&1) && fail "--ui-scale '$v' accepted"
      grep -qF "must be a number from 0.5 to 4, got '$v'" <<<"$err" || fail "--ui-scale '$v': $err"
    done
    [ -e "$out/x.png" ] && fail "a picture was made with a refused --ui-scale"
    xvfb "$bin" --ui-scale 0.5 --screenshot "$out/small.png" > /dev/null || fail "--ui-scale 0.5 refused"
    /usr/bin/python3 "$here/check_png.py" "$out/small.png" 1600x1000 || fail "blank at --ui-scale 0.5"
    ;;
  save_over_preset)
    # Save as… proposes <export folder>/workspace.json; here that is the preset file in use.
    cp "$here/../../assets/presets/cat.json" "$out/workspace.json"
    cp "$out/workspace.json" "$out/preset_before.json"
    s=$(script save "set_export_folder $out" "wait 3" "click workspace_save_as" "wait 2" \
        "click workspace_popup_save" "wait 2" \
        "expect_shown workspace_message is the preset file '$out/workspace.json' this window read its configuration from" \
        "screenshot $out/refused.png" "quit")
    xvfb "$bin" --fresh --preset "$out/workspace.json" --script "$s" > "$out/log.txt" 2>&1 \
      || { tail -n 5 "$out/log.txt"; fail "the preset file in use was not refused"; }
    cmp -s "$out/workspace.json" "$out/preset_before.json" || fail "the preset file was overwritten"
    # through a symlink, and with the preset edited (its name gets " (edited)"): still refused
    ln -s "$out/workspace.json" "$out/link.json"
    s=$(script link "set_export_folder $out/sub" "wait 3" "press_ctrl" "click d_model" "release_ctrl" "wait 1" \
        "type 12" "key Enter" "wait 2" "click workspace_save_as" "wait 2" "click workspace_path" \
        "press_ctrl" "key A" "release_ctrl" "type $out/link.json" "wait 1" "click workspace_popup_save" "wait 2" \
        "expect_shown workspace_message this window read its configuration from" "quit")
    mkdir -p "$out/sub"
    xvfb "$bin" --fresh --preset "$out/workspace.json" --script "$s" > "$out/log2.txt" 2>&1 \
      || { tail -n 5 "$out/log2.txt"; fail "the preset file behind a link was not refused"; }
    cmp -s "$out/workspace.json" "$out/preset_before.json" || fail "the preset file was overwritten through a link"
    # a preset opened in the window (File › Open, a drop) is protected the same way
    cp "$out/preset_before.json" "$out/mine.json"
    s=$(script drop "set_export_folder $out/sub" "wait 2" "drop $out/mine.json" "wait 3" "click workspace_save_as" \
        "wait 2" "click workspace_path" "press_ctrl" "key A" "release_ctrl" "type $out/mine.json" "wait 1" \
        "click workspace_popup_save" "wait 2" "expect_shown workspace_message is the preset file" \
        "click workspace_path" "press_ctrl" "key A" "release_ctrl" "type $out/sub/other.json" "wait 1" \
        "click workspace_popup_save" "wait 2" "expect_shown workspace_message Saved" "quit")
    xvfb "$bin" --fresh --script "$s" > "$out/log3.txt" 2>&1 || { tail -n 5 "$out/log3.txt"; fail "an opened preset was not refused"; }
    cmp -s "$out/mine.json" "$out/preset_before.json" || fail "the opened preset file was overwritten"
    grep -q '"mhascope_workspace": 1' "$out/sub/other.json" || fail "saving under another name failed"
    ;;
  unrestorable)
    # A last workspace of a newer mhascope (or whose files changed) is kept as .bak, never saved over.
    xvfb "$bin" --script "$(script first "wait 3" quit)" > /dev/null 2>&1 || fail "first run"
    [ -s "$session" ] || fail "no last workspace written"
    sed 's/"mhascope_workspace": 1/"mhascope_workspace": 99/' "$session" > "$out/newer.json"
    cp "$out/newer.json" "$session"
    s=$(script check "wait 3" "expect_shown action_error the file is kept as $session.bak" "wait 80" quit)
    xvfb "$bin" --script "$s" > "$out/log.txt" 2> "$out/err.txt" || { cat "$out/err.txt"; fail "no message naming the .bak"; }
    grep -qF "the last workspace was not restored" "$out/err.txt" || fail "nothing on stderr: $(cat "$out/err.txt")"
    cmp -s "$session.bak" "$out/newer.json" || fail "the unrestorable workspace was not kept as it was"
    grep -q '"mhascope_workspace": 1' "$session" || fail "no new last workspace after the refused one"
    # a second one goes to .1.bak; the first .bak stays
    sed 's/"d_model": 16/"d_model": "16"/' "$session" > "$out/wrong_type.json"
    cp "$out/wrong_type.json" "$session"
    xvfb "$bin" --script "$(script again "wait 3" "expect_shown action_error kept as $session.1.bak" quit)" \
      > /dev/null 2> "$out/err2.txt" || { cat "$out/err2.txt"; fail "second refusal"; }
    cmp -s "$session.1.bak" "$out/wrong_type.json" || fail "the second unrestorable workspace was not kept"
    cmp -s "$session.bak" "$out/newer.json" || fail "the first .bak was replaced"
    ;;
  workspace_layer)
    # A workspace whose checkpoint layer is out of range is refused as a whole, at launch and when
    # dropped on the window: the previous session stays exactly as it was.
    "$bin" train --layers 2 --steps 2 --save "$out/m.safetensors" > /dev/null || fail "cannot make the checkpoint"
    "$bin" export --checkpoint "$out/m.safetensors" --layer 1 --stage weights --out "$out/cli.png" \
      --save-workspace "$out/good.json" > /dev/null || fail "cannot make the workspace"
    sed 's/"layer": 1/"layer": 5/' "$out/good.json" > "$out/bad.json"
    grep -q '"layer": 5' "$out/bad.json" || fail "the fixture has no layer: $(cat "$out/good.json")"
    cli=$("$bin" export --workspace "$out/bad.json" --out "$out/x.png" 2>&1) && fail "the CLI accepted layer 5"
    err=$(xvfb "$bin" --workspace "$out/bad.json" --screenshot "$out/x.png" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "--workspace with layer 5: exit $rc: $err"
    grep -q "^mhascope: error: " <<<"$err" || fail "a refused launch says 'mhascope: error:': $err"
    grep -qF "layer 5 is out of range: this checkpoint has 2 layers (0 .. 1)" <<<"$err" || fail "message: $err (CLI: $cli)"
    [ -e "$out/x.png" ] && fail "a picture was made from the refused workspace"
    # in the window: cat at stage scores, head 1, zoomed; the dropped workspace changes none of it
    s=$(script drop "wait 3" "key Left" "key Left" "key Left" "wait 2" "click head_1" "wait 2" \
        "hover_at heatmap 0.3 0.3" "wheel 2" "wait 2" "print subtitle" "print zoom" \
        "hover_at heatmap 9 9" "wait 2" "screenshot $out/before.png" "drop $out/bad.json" "wait 4" \
        "expect_shown action_error layer 5 is out of range: this checkpoint has 2 layers (0 .. 1)" \
        "expect_text files_in_use none" "expect_session preset=cat" "expect_heads 2" "print subtitle" "print zoom" \
        "hover_at heatmap 9 9" "wait 2" "screenshot $out/after.png" "quit")
    xvfb "$bin" --fresh --preset cat --script "$s" > "$out/log.txt" 2>&1 || { tail -n 8 "$out/log.txt"; fail "the dropped workspace"; }
    [ "$(grep -c '^subtitle:' "$out/log.txt")" -eq 2 ] || fail "no subtitles printed"
    [ "$(grep '^subtitle:' "$out/log.txt" | sort -u | wc -l)" -eq 1 ] || fail "the subtitle changed: $(grep '^subtitle:' "$out/log.txt")"
    [ "$(grep '^zoom:' "$out/log.txt" | sort -u | wc -l)" -eq 1 ] || fail "the zoom changed: $(grep '^zoom:' "$out/log.txt")"
    /usr/bin/python3 "$here/same_region.py" "$out/before.png" "$out/after.png" 0 0 1600 700 \
      || fail "the picture changed after the refused workspace"
    # the good one opens
    xvfb "$bin" --workspace "$out/good.json" --screenshot "$out/good.png" > /dev/null 2>&1 || fail "the good workspace"
    ;;
  state_folder)
    # A state folder that cannot be created: said once, in the window and on stderr; the app runs.
    export XDG_STATE_HOME=/dev/null/state
    s=$(script check "wait 3" "expect_shown action_error this session will not be kept: cannot create the folder '/dev/null/state/mhascope'" \
        "wait 90" quit)
    xvfb "$bin" --script "$s" > "$out/log.txt" 2> "$out/err.txt" || { cat "$out/err.txt"; fail "no message in the window"; }
    [ "$(grep -c "will not be kept" "$out/err.txt")" -eq 1 ] || fail "not said exactly once: $(cat "$out/err.txt")"
    ;;
  zoom_fit)
    # A zoom set on T = 256 is not carried to T = 16: the view fits again (100 %). A change that
    # keeps the shape (h 8 → 4) keeps the zoom; so does the workspace's own zoom when it opens.
    s=$(script zoom "wait 3" "hover_at heatmap 0.3 0.3" "wheel 3" "wait 2" "print zoom" \
        "press_ctrl" "click heads" "release_ctrl" "wait 1" "type 4" "key Enter" "wait 3" "expect_heads 4" "print zoom" \
        "press_ctrl" "click tokens" "release_ctrl" "wait 1" "type 16" "key Enter" "wait 3" "expect_tokens 16" \
        "expect_text zoom 100%" "screenshot $out/t16.png" "quit")
    xvfb "$bin" --fresh --preset "$here/mid.json" --script "$s" > "$out/log.txt" 2>&1 || { tail -n 6 "$out/log.txt"; fail "zoom"; }
    zooms=$(grep '^zoom:' "$out/log.txt" | sort -u)
    [ "$(wc -l <<<"$zooms")" -eq 1 ] && [ "$zooms" != "zoom: 100%" ] || fail "the zoom did not stay for the same shape: $zooms"
    ;;
  clipped_text)
    # A T = 1024 pipeline (B = 2, h = 16): the Shapes column shows every shape whole, the first row
    # label of a long heatmap is inside the plot, the All heads hint wraps inside its column, a long
    # preset path is cut with "…" before the box's arrow; the same in a narrow window.
    big=(--fresh --tokens 1024 --d-model 1024 --heads 16 --batch 2 --stage weights)
    s=$(script wide "wait 3" "expect_text shapes_cut none" "expect_text row_labels_cut 0" "screenshot $out/wide.png" \
        "click tab_grid" "wait 3" "expect_text grid_hint_cut no" "screenshot $out/grid.png" quit)
    xvfb "$bin" "${big[@]}" --script "$s" > "$out/log.txt" 2>&1 || { tail -n 5 "$out/log.txt"; fail "T = 1024, wide"; }
    s=$(script narrow "wait 3" "expect_text row_labels_cut 0" "click tab_grid" "wait 3" "expect_text grid_hint_cut no" \
        "expect_shown preset_box …" "screenshot $out/narrow.png" quit)
    xvfb "$bin" "${big[@]}" --size 1000x700 --script "$s" > "$out/log.txt" 2>&1 || { tail -n 5 "$out/log.txt"; fail "T = 1024, narrow"; }
    mkdir -p "$out/a_folder_with_a_long_name_for_the_preset"
    cp "$here/mid.json" "$out/a_folder_with_a_long_name_for_the_preset/a_preset_with_a_long_name.json"
    s=$(script preset "wait 2" "print preset_box" "expect_shown preset_box a_preset_with_a_lo" "expect_shown preset_box …" quit)
    xvfb "$bin" --fresh --preset "$out/a_folder_with_a_long_name_for_the_preset/a_preset_with_a_long_name.json" \
      --script "$s" > "$out/log.txt" 2>&1 || { tail -n 5 "$out/log.txt"; fail "long preset name"; }
    ;;
  *)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS: $case_name"
