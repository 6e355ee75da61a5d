#!/usr/bin/env bash
# GUI tests of `mhascope`, each under a fresh Xvfb (24-bit screen, as GLX needs).
# Usage: gui_test.sh CASE MHASCOPE_BINARY
set -u
case_name=$1
bin=$2
source "$(dirname "$0")/gui_common.sh"

case "$case_name" in
  screenshot)
    for stage in weights masked_scores q_heads concat; do
      xvfb "$bin" --screenshot "$out/$stage.png" --preset default --stage "$stage" || fail "screenshot at $stage exited $?"
      /usr/bin/python3 "$here/check_png.py" "$out/$stage.png" 1600x1000 || fail "blank screenshot at $stage"
    done
    xvfb "$bin" --screenshot "$out/grid.png" --preset cat --view grid --size 1000x700 || fail "grid screenshot"
    /usr/bin/python3 "$here/check_png.py" "$out/grid.png" 1000x700 || fail "blank grid screenshot"
    # A font atlas larger than the GPU's texture limit draws every glyph as a box: the scale is
    # lowered until it fits, and said (the limit is lowered here, as no CJK font is installed).
    err=$(xvfb "$bin" --screenshot "$out/scale.png" --ui-scale 4 --max-texture-size 1024 2>&1 >/dev/null) \
      || fail "--ui-scale 4 exited $?"
    grep -q "exceeds the GPU's texture limit of 1024; using UI scale" <<<"$err" || fail "no atlas message: $err"
    /usr/bin/python3 "$here/check_png.py" "$out/scale.png" 1600x1000 || fail "blank --ui-scale 4 screenshot"
    ;;
  lesson_views)
    # Every lesson tab opens from the command line and draws a picture (specialists for the
    # two views that are about that preset).
    for view in split params mix roles masks pitfalls cost lines cell gqa positions windows kv_cache quiz; do
      preset=default; case "$view" in roles|lines) preset=specialists ;; esac
      xvfb "$bin" --screenshot "$out/$view.png" --preset "$preset" --view "$view" || fail "--view $view exited $?"
      /usr/bin/python3 "$here/check_png.py" "$out/$view.png" 1600x1000 || fail "blank screenshot of --view $view"
    done
    xvfb "$bin" --screenshot "$out/x.png" --view nope 2>/dev/null && fail "--view nope should be refused"
    ;;
  scripted_input)
    xvfb "$bin" --preset default --script "$(script_from scripted_input.txt)" || fail "script failed (exit $?)"
    # The exported picture's title is the window's label, word for word (0-based).
    grep -qF "<title>Softmax (weights) · head 0 · batch 0</title>" "$out/weights_b0_h0.svg" \
      || fail "exported title differs from the window's label: $(grep -o '<title>[^<]*' "$out/weights_b0_h0.svg")"
    # The page carries the window's workspace: the command line opens it, on the same stage.
    grep -q 'id="mhascope-workspace"' "$out/weights_b0_all_heads.html" || fail "the page carries no workspace"
    "$bin" export --workspace "$out/weights_b0_all_heads.html" --head 0 --out "$out/from_page.png" >/dev/null \
      || fail "the page does not open as a workspace"
    cmp -s "$out/from_page.png" "$out/weights_b0_h0.png" || fail "the page's workspace draws another picture than the window's"
    ;;
  train_lab)
    xvfb "$bin" --preset default --script "$(script_from train_lab.txt)" || fail "script failed (exit $?)"
    /usr/bin/python3 "$here/check_png.py" "$out/induction_contact_sheet.png" || fail "blank contact sheet"
    /usr/bin/python3 "$here/check_png.py" "$out/induction_curves.png" || fail "blank curves"
    # The animation: a GIF of one frame per kept attention picture (at most 40), each the contact
    # sheet's column beside the curves, so as wide as the two together.
    /usr/bin/python3 - "$out/induction_training.gif" "$out/induction_curves.png" <<'PY' || fail "the animation is not a GIF of the run"
import sys
from PIL import Image
g, c = Image.open(sys.argv[1]), Image.open(sys.argv[2])
assert g.format == "GIF" and 2 <= g.n_frames <= 40, (g.format, g.n_frames)
assert g.size[0] > c.size[0] and g.size[1] >= c.size[1], (g.size, c.size)
print(sys.argv[1], g.n_frames, "frames", g.size)
PY
    /usr/bin/python3 "$here/check_png.py" "$out/pipeline.png" 1600x1000 || fail "blank pipeline after Open in pipeline"
    "$bin" export --checkpoint "$out/induction.safetensors" --layer 0 --stage weights --head 0 --out "$out/cli.png" \
      || fail "CLI export of the saved checkpoint"
    # below the subtitle (which describes the model in different words) every pixel is the same
    /usr/bin/python3 "$here/same_region.py" "$out/cli.png" "$out/weights_layer0_b0_h0.png" 0 85 990 800 \
      || fail "Open in pipeline differs from --checkpoint --layer 0"
    # --view train opens the Train mode
    xvfb "$bin" --screenshot "$out/train.png" --view train || fail "--view train exited $?"
    /usr/bin/python3 "$here/check_png.py" "$out/train.png" 1600x1000 || fail "blank --view train"
    ;;
  openfiles)
    # Fixtures: MHA weights (d_model 12), a query input of 6 tokens (a stage dump), a 2-layer
    # checkpoint, a file that is not .safetensors, one whose header promises more than the budget.
    "$bin" info --text "a b c d e f" --d-model 12 --heads 3 --seed 5 --save-weights "$out/w.safetensors" >/dev/null \
      || fail "cannot make the weights fixture"
    "$bin" run --text "a b c d e f" --d-model 12 --heads 3 --dump "$out/dump" >/dev/null || fail "cannot dump"
    "$bin" train --layers 2 --steps 2 --save "$out/m.safetensors" >/dev/null || fail "cannot make the checkpoint"
    printf 'hello, not a safetensors file' > "$out/bad.safetensors"
    cp "$out/w.safetensors" "$out/big.safetensors" && truncate -s 300M "$out/big.safetensors"
    xvfb "$bin" --fresh --preset default --memory-budget 64 --script "$(script_from openfiles.txt)" \
      || fail "script failed (exit $?)"
    /usr/bin/python3 "$here/check_png.py" "$out/weights_open.png" 1600x1000 || fail "blank after opening weights"
    grep -q "$out/m.safetensors" "$XDG_CONFIG_HOME/mhascope/recent_files.txt" || fail "recent files not kept"
    ;;
  window_model_options)
    # `mhascope OPTIONS` opens the picture `mhascope export OPTIONS` draws: every pixel the same,
    # subtitle included.
    "$bin" info --text "x" --d-model 12 --heads 3 --seed 9 --save-weights "$out/w.safetensors" >/dev/null \
      || fail "cannot make the weights fixture"
    opts=(--text "the cat sat on the mat" --d-model 12 --heads 3 --mask causal --weights "$out/w.safetensors")
    "$bin" export "${opts[@]}" --stage weights --head 1 --out "$out/cli.png" || fail "CLI export"
    xvfb "$bin" --fresh "${opts[@]}" --stage weights --head 1 --script "$(script_from window_model_options.txt)" \
      || fail "script failed (exit $?)"
    size=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$here'); from check_png import decode; w, h, _, _ = decode('$out/cli.png'); print(w, h)")
    /usr/bin/python3 "$here/same_region.py" "$out/cli.png" "$out/weights_b0_h1.png" 0 0 $size \
      || fail "the window's picture differs from export's with the same options"
    # a bad MODEL option fails before the window opens, with the command's message
    for bad in "--d-model 10 --heads 4" "--weights $out/missing.safetensors"; do
      # shellcheck disable=SC2086
      err=$(xvfb "$bin" $bad 2>&1) && fail "bad options accepted: $bad"
      # shellcheck disable=SC2086
      cli=$("$bin" export $bad --out "$out/x.png" 2>&1 | head -1)
      cli=${cli#mhascope: error: }
      grep -qF -- "$cli" <<<"$err" || fail "window says '$err', export says '$cli'"
    done
    ;;
  texture_churn)
    xvfb "$bin" --preset default --script "$(script_from texture_churn.txt)" || fail "script failed (exit $?)"
    ;;
  tiny_framebuffer)
    xvfb "$bin" --preset cat --script "$(script_from tiny_framebuffer.txt)" || fail "script failed (exit $?)"
    /usr/bin/python3 "$here/check_png.py" "$out/after_resize.png" 1200x800 || fail "blank after resizing back"
    ;;
  corrupt_ini)
    mkdir -p "$XDG_CONFIG_HOME/mhascope"
    head -c 4096 /dev/urandom > "$XDG_CONFIG_HOME/mhascope/imgui.ini"
    printf '[Window][x]\nPos=\x01\x02\n' >> "$XDG_CONFIG_HOME/mhascope/imgui.ini"
    xvfb "$bin" --screenshot "$out/junk.png" 2> "$out/stderr.txt" || fail "corrupt imgui.ini stopped the app"
    grep -q "imgui.ini" "$out/stderr.txt" || fail "no note about the ignored imgui.ini"
    /usr/bin/python3 "$here/check_png.py" "$out/junk.png" || fail "blank with a corrupt imgui.ini"
    # Plausible text with absurd numbers is handed to ImGui, which must cope too.
    printf '[Window][mhascope##host]\nPos=-99999,99999\nSize=0,0\n[Table][0xDEADBEEF,3]\nColumn 0  Weight=1e30\n' \
      > "$XDG_CONFIG_HOME/mhascope/imgui.ini"
    xvfb "$bin" --screenshot "$out/absurd.png" || fail "absurd imgui.ini stopped the app"
    /usr/bin/python3 "$here/check_png.py" "$out/absurd.png" || fail "blank with an absurd imgui.ini"
    # An imgui.ini that cannot be written (a folder in its place): start, say so, exit 0.
    rm -f "$XDG_CONFIG_HOME/mhascope/imgui.ini" && mkdir "$XDG_CONFIG_HOME/mhascope/imgui.ini"
    xvfb "$bin" --screenshot "$out/unwritable.png" || fail "unwritable imgui.ini stopped the app"
    # The ini lives in the XDG folder, never in the working directory.
    [ ! -e imgui.ini ] || fail "imgui.ini written to the working directory"
    ;;
  no_display)
    env -u DISPLAY -u WAYLAND_DISPLAY "$bin" > "$out/stdout.txt" 2> "$out/stderr.txt"
    rc=$?
    [ "$rc" -eq 2 ] || fail "exit code $rc without a display, expected 2"
    [ "$(wc -l < "$out/stderr.txt")" -eq 1 ] || fail "expected one line on stderr, got: $(cat "$out/stderr.txt")"
    grep -q "mhascope export" "$out/stderr.txt" || fail "no hint to use mhascope export: $(cat "$out/stderr.txt")"
    cat "$out/stderr.txt"
    ;;
  worker)
    xvfb "$bin" --preset default --script "$(script_from worker.txt)" || fail "script failed (exit $?)"
    /usr/bin/python3 "$here/check_png.py" "$out/after_worker.png" || fail "blank after the worker's result"
    ;;
  memory_budget)
    # --memory-budget 1024 at start: the big preset (T = 1536, ~300 MiB) fits; the script lowers it.
    xvfb "$bin" --fresh --preset default --memory-budget 1024 --script "$(script_from memory_budget.txt)" \
      || fail "script failed (exit $?)"
    /usr/bin/python3 "$here/check_png.py" "$out/memory_budget_refused.png" || fail "blank after the refused budget"
    ;;
  lesson_worker)
    xvfb "$bin" --preset default --view pitfalls --script "$(script_from lesson_worker.txt)" || fail "script failed (exit $?)"
    /usr/bin/python3 "$here/check_png.py" "$out/after_lesson_worker.png" || fail "blank after the lesson's result"
    ;;
  downsample)
    # Textures above the GPU limit are downsampled, not blank (limit lowered to 64 texels).
    xvfb "$bin" --screenshot "$out/long.png" --preset "$here/long_sequence.json" --max-texture-size 64 \
      --stage weights || fail "long sequence with a small texture limit"
    /usr/bin/python3 "$here/check_png.py" "$out/long.png" || fail "blank long-sequence screenshot"
    ;;
  long_sequence|long_sequence_perf)
    # T = 4096, h = 8, d_model = 512 (a 1.1 GiB trace; the default budget is half of the available
    # memory): computed on the worker, downsampled to the screen by the max rule, zoomed to cells.
    # long_sequence checks what it shows; long_sequence_perf (CTest label perf, out of the default
    # run) also checks this machine's internals: page faults on the UI thread, frame times, how much
    # of the time the window drew while the worker computed.
    perf=0; [ "$case_name" = long_sequence_perf ] && perf=1
    script=$(script_from long_sequence.txt)
    [ $perf -eq 1 ] || sed -i 's/^frame_times_end \([^ ]*\) [0-9]*$/frame_times_end \1/' "$script"
    xvfb "$bin" --preset default --script "$script" > "$out/log.txt" 2>&1 \
      || { tail -n 30 "$out/log.txt"; fail "long-sequence script failed"; }
    grep -E "stopwatch|frame times|stats|rss|idle after|first picture" "$out/log.txt"
    grep -q "^frame times zoom_and_pan: " "$out/log.txt" || fail "no frame times printed"
    for png in computing t4096 cells; do
      /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png.png"
    done
    if [ $perf -eq 1 ]; then
      # Every frame is timed once: a frame that ends one command and starts the next counted twice
      # before (a second time of ~0 ms, half the list, which pulled the median down).
      min=$(sed -n 's/^frame times zoom_and_pan: .* min \([0-9.]*\) ms.*/\1/p' "$out/log.txt")
      awk -v m="$min" 'BEGIN { exit !(m >= 1.0) }' || fail "a frame timed at $min ms: counted twice?"
      # While the worker computes, the window draws a few frames a second and leaves the CPU to it
      # (drawing back to back, it took one of the two cores: ~100 % of the time). Judged on the
      # waits of at least half a second: a compute can end before the script starts waiting (the
      # first T = 4096 picture takes 0.9 s on a quiet machine), and a wait of a frame or two says
      # nothing about sharing.
      shares=$(awk '/^idle after .* drawing [0-9]+ % of the time$/ && $6 + 0 >= 0.5 { print $9 }' "$out/log.txt")
      [ -n "$shares" ] || fail "no wait of at least 0.5 s for a compute (no drawing share to check)"
      for share in $shares; do
        [ "$share" -le 50 ] || fail "the window drew $share % of the time while the worker computed (at most 50)"
      done
    fi
    # The window's refusal names a flag the window takes: --memory-budget.
    printf 'wait 3\nexpect_config_error\nquit\n' > "$out/refuse.txt"
    xvfb "$bin" --preset "$here/t4096.json" --memory-budget 512 --script "$out/refuse.txt" > "$out/refuse.log" 2>&1 \
      || { cat "$out/refuse.log"; fail "--memory-budget 512 did not refuse T = 4096"; }
    ;;
  color_scale)
    xvfb "$bin" --preset "$here/causal2048.json" --script "$(script_from color_scale.txt)" > "$out/log.txt" 2>&1 \
      || { tail -n 30 "$out/log.txt"; fail "colour-scale script failed"; }
    # The ~1/T weights: dark on the linear scale, lit on the log and per-row scales (measured: 43 →
    # 51.5 log, 50.7 per row; the random weights make per-row the closer one).
    /usr/bin/python3 "$here/brighter.py" "$out/linear.png" "$out/log.png" 5 || fail "the log scale does not light up the weights"
    /usr/bin/python3 "$here/brighter.py" "$out/linear.png" "$out/per_row.png" 5 || fail "the per-row scale does not light up the weights"
    ;;
  screenshot_timing)
    # A script's screenshot shows the frame as the script left it, not the next command's hover:
    # the first picture has the blocked cell's tooltip with its reason (255,217,115), the second
    # (hovering a cell that is not forced) has none.
    xvfb "$bin" --preset "$here/causal.json" --script "$(script_from screenshot_timing.txt)" > "$out/log.txt" 2>&1 \
      || { tail -n 20 "$out/log.txt"; fail "script failed"; }
    /usr/bin/python3 "$here/count_color.py" "$out/tooltip.png" 255,217,115 1 \
      || fail "the screenshot does not show the hover that preceded it (the next command's input leaked in)"
    /usr/bin/python3 "$here/count_color.py" "$out/no_tooltip.png" 255,217,115 0 0 || fail "a reason shown for a cell that is not forced"
    ;;
  window_kv_lessons)
    # The Windows and KV cache lessons, every control used (W, S, causal / none; prefill, Next token,
    # Reset), their probes checked against the live numbers, with MHA and with GQA + RoPE.
    xvfb "$bin" --preset default --view windows --script "$(script_from window_kv_lessons.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "window_kv_lessons script failed (exit $rc)"; }
    for png in windows kv_cache kv_cache_gqa_rope; do
      /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png screenshot"
    done
    ;;
  lesson_texts)
    # Live sentences follow the configuration (the Scale stage's d_k figure, the masks lesson).
    xvfb "$bin" --preset default --stage scaled_scores --script "$(script_from lesson_texts.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "lesson_texts script failed (exit $rc)"; }
    for png in scale masks learned; do
      /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png screenshot"
    done
    ;;
  lesson_list)
    # The Lessons tab by mouse and keys, and the wheel on long lessons, wide and narrow.
    for size in 1600x1000 1100x800; do
      mkdir -p "$out/$size"
      sed "s|@OUT@|$out/$size|g" "$here/lesson_list.txt" > "$out/lesson_list_$size.txt"
      xvfb "$bin" --fresh --preset default --size "$size" --script "$out/lesson_list_$size.txt" > "$out/log_$size.txt" 2>&1
      rc=$?
      [ "$rc" -eq 0 ] || { tail -n 20 "$out/log_$size.txt"; fail "lesson_list script failed at $size (exit $rc)"; }
      for png in lessons_quiz lessons_gqa_scrolled lessons_positions_scrolled; do
        /usr/bin/python3 "$here/check_png.py" "$out/$size/$png.png" "$size" || fail "blank $png screenshot at $size"
      done
    done
    ;;
  wide_characters)
    # Characters above U+FFFF kept: the box read-only until the user removes them (wide_characters.txt).
    xvfb "$bin" --fresh --preset default --text "I like 😀 ok" --script "$(script_from wide_characters.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "wide_characters script failed (exit $rc)"; }
    /usr/bin/python3 "$here/check_png.py" "$out/wide_characters.png" || fail "blank wide_characters.png"
    ;;
  head_dim)
    # The d_k control: the heads' own width, and back to d_k = d_model / h (head_dim.txt).
    xvfb "$bin" --fresh --preset default --script "$(script_from head_dim.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "head_dim script failed (exit $rc)"; }
    for png in wide three_heads; do
      /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png.png"
    done
    ;;
  stable_scores)
    # q/k norm and the softcap in the window (stable_scores.txt), then the softcapped stage exported:
    # every cell within ±c.
    xvfb "$bin" --fresh --preset default --script "$(script_from stable_scores.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "stable_scores script failed (exit $rc)"; }
    /usr/bin/python3 "$here/check_png.py" "$out/stable.png" || fail "blank stable.png"
    "$bin" run --softcap 0.5 --qk-norm --dump "$out/dump" > /dev/null || fail "run --softcap --qk-norm"
    /usr/bin/python3 -c "
import numpy as np, sys
s = np.load('$out/dump/softcapped.npy'); q = np.load('$out/dump/q_normed.npy')
assert np.abs(s).max() <= 0.5 + 1e-6, s.max()
assert np.allclose(np.sqrt((q ** 2).mean(-1)), 1, atol=1e-3)
" || fail "the softcapped scores leave ±c or the normed queries are not of RMS 1"
    ;;
  stable_scores_lesson)
    # The Stable scores lesson's controls and numbers (stable_scores_lesson.txt).
    xvfb "$bin" --fresh --preset default --view stable_scores --script "$(script_from stable_scores_lesson.txt)" \
      > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "stable_scores_lesson script failed (exit $rc)"; }
    /usr/bin/python3 "$here/check_png.py" "$out/stable_lesson.png" || fail "blank stable_lesson.png"
    ;;
  learned_sink)
    # The learned sink's control in the window (learned_sink.txt), then the command line's --sink: every row's
    # weights and its sink share sum to 1, and a logit above the scores takes most of the mass.
    xvfb "$bin" --fresh --preset default --script "$(script_from learned_sink.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "learned_sink script failed (exit $rc)"; }
    /usr/bin/python3 "$here/check_png.py" "$out/sink.png" || fail "blank sink.png"
    "$bin" run --sink 4 --dump "$out/dump" > /dev/null || fail "run --sink"
    /usr/bin/python3 -c "
import numpy as np
w = np.load('$out/dump/weights.npy'); s = np.load('$out/dump/sink_share.npy')
assert s.shape == w.shape[:3] + (1,), s.shape
assert np.allclose(w.sum(-1, keepdims=True) + s, 1, atol=1e-5)
assert s.mean() > 0.5, s.mean()
" || fail "the weights and the sink share do not sum to 1, or the sink took little"
    ;;
  latent_attention)
    # The Latent attention lesson's choices and numbers (latent_attention.txt).
    xvfb "$bin" --fresh --preset default --view latent_attention --script "$(script_from latent_attention.txt)" \
      > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "latent_attention script failed (exit $rc)"; }
    /usr/bin/python3 "$here/check_png.py" "$out/latent.png" || fail "blank latent.png"
    ;;
  lesson_numbers)
    # One count in the status line, Params and Cost; GQA and Windows open at the controls' N, W, S.
    args=(--preset default --d-model 32 --heads 8 --kv-heads 2 --mask causal --window 4 --sinks 2)
    xvfb "$bin" "${args[@]}" --view params --script "$(script_from lesson_numbers.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "lesson numbers script failed (exit $rc)"; }
    xvfb "$bin" "${args[@]}" --view gqa --script "$(script_from lesson_start_gqa.txt)" > "$out/log_gqa.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log_gqa.txt"; fail "GQA start script failed (exit $rc)"; }
    xvfb "$bin" "${args[@]}" --view windows --script "$(script_from lesson_start_windows.txt)" > "$out/log_win.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log_win.txt"; fail "Windows start script failed (exit $rc)"; }
    for png in params cost gqa windows; do
      /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png screenshot"
    done
    ;;
  gqa_positions_lessons)
    # Every control of the GQA / MQA and Positions tabs moves their live sentences.
    xvfb "$bin" --preset default --view gqa --script "$(script_from gqa_positions_lessons.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "gqa/positions script failed (exit $rc)"; }
    for png in gqa_n2 gqa_layers positions_shift0 positions_shift; do
      /usr/bin/python3 "$here/check_png.py" "$out/$png.png" || fail "blank $png screenshot"
    done
    ;;
  quiz_click)
    # The right answer of question 1 aborted the app (ImGui assert).
    xvfb "$bin" --preset default --view quiz --script "$(script_from quiz_click.txt)" > "$out/log.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || { tail -n 20 "$out/log.txt"; fail "quiz script failed (exit $rc)"; }
    /usr/bin/python3 "$here/check_png.py" "$out/quiz.png" || fail "blank quiz screenshot"
    ;;
  input_feel)
    xvfb "$bin" --preset default --script "$(script_from input_feel.txt)" || fail "script failed (exit $?)"
    ;;
  session)
    # The last workspace comes back at launch; options given on the command line win; a corrupt
    # file is ignored with a message; Reset to defaults; an old session.json is read once.
    session="$XDG_STATE_HOME/mhascope/last-workspace.json"
    check() {  # check WANT [mhascope options...]: launch, expect the session summary to contain WANT
      local want=$1; shift
      printf 'wait 4\nexpect_session %s\nquit\n' "$want" > "$out/check.txt"
      xvfb "$bin" "$@" --script "$out/check.txt" > "$out/check_log.txt" 2> "$out/check_err.txt" \
        || { cat "$out/check_log.txt" "$out/check_err.txt"; fail "expected the session to contain $want (options: $*)"; }
    }
    # session.json of earlier versions: read once when there is no last workspace yet
    mkdir -p "$XDG_CONFIG_HOME/mhascope"
    { printf '{"mhascope_session": 1, "preset": "cat", "config": '; cat "$here/../../assets/presets/cat.json"
      printf ', "view": {"stage": "scores", "tab": "Heatmap", "head": 1, "batch": 0, "colormap": "auto", '
      printf '"shared_scale": true, "numbers": true, "play_speed": 1.0}}\n'; } > "$XDG_CONFIG_HOME/mhascope/session.json"
    check "d_model=8 h=2 seed=1 mask=none stage=scores"
    grep -q "restored the last session from" "$out/check_log.txt" || fail "session.json was not read: $(cat "$out/check_log.txt")"
    [ -s "$session" ] || fail "no $session written after reading session.json"
    rm "$XDG_CONFIG_HOME/mhascope/session.json" "$session"
    xvfb "$bin" --script "$(script_from session_change.txt)" || fail "changing the session failed (exit $?)"
    [ -s "$session" ] || fail "no $session written"
    grep -q '"mhascope_workspace": 1' "$session" || fail "the last workspace has no format version: $(cat "$session")"
    ls "$XDG_STATE_HOME/mhascope" | grep -q tmp && fail "temporary files left next to last-workspace.json"
    check "d_model=32"
    check "stage=output"
    check "tab=roles"
    cp "$session" "$out/saved.json"
    # explicit options win over the saved ones, each on its own
    check "preset=cat" --preset cat
    check "stage=scores" --stage scores
    check "tab=split" --view split
    check "d_model=16" --fresh   # --fresh: the default preset, and the saved session untouched
    xvfb "$bin" --preset default --script "$(script_from session_change.txt)" || fail "changing the session again"
    check "d_model=32"
    # Reset to defaults
    xvfb "$bin" --script "$(script_from session_reset.txt)" || fail "Reset to defaults (exit $?)"
    check "d_model=16"
    # corrupt, truncated, wrong-typed, future-version and duplicate-key files: ignored with a
    # message, the app starts from the defaults
    printf '\x00\x01garbage{{{' > "$session"
    check "preset=default" && grep -q "not restored" "$out/check_err.txt" || fail "no message about a corrupt last workspace"
    head -c 100 "$out/saved.json" > "$session"
    check "preset=default" && grep -q "not restored" "$out/check_err.txt" || fail "no message about a truncated last workspace"
    sed 's/"mhascope_workspace": 1/"mhascope_workspace": 99/' "$out/saved.json" > "$session"
    check "preset=default" && grep -q "written by a newer mhascope" "$out/check_err.txt" || fail "no message about a future version"
    sed 's/"d_model": 32/"d_model": "32"/' "$out/saved.json" > "$session"
    check "d_model=16" && grep -q "d_model" "$out/check_err.txt" || fail "no message about a wrong type"
    sed 's/"numbers": true/"numbers": true, "numbers": false/' "$out/saved.json" > "$session"
    check "d_model=16" && grep -q "duplicate" "$out/check_err.txt" || fail "no message about a duplicate key"
    # the Train mode comes back with its setup form (the last workspace's "train" block); --view wins
    rm -f "$session"
    printf 'wait 3\nclick mode_train\nwait 2\nclick train_step\nwait 3\nexpect_text mode train\nquit\n' > "$out/train.txt"
    xvfb "$bin" --script "$out/train.txt" > /dev/null 2>&1 || fail "switching to the Train mode failed"
    grep -q '"mode": "train"' "$session" || fail "no Train mode in the last workspace: $(cat "$session")"
    sed -i 's/"steps": 1500/"steps": 700/' "$session"
    printf 'wait 3\nexpect_text mode train\nexpect_text train_state none\nquit\n' > "$out/train_back.txt"
    xvfb "$bin" --script "$out/train_back.txt" > "$out/check_log.txt" 2>&1 || { cat "$out/check_log.txt"; fail "the Train mode did not come back"; }
    grep -q '"steps": 700' "$session" || fail "the Train mode's setup did not come back: $(cat "$session")"
    printf 'wait 3\nexpect_text mode pipeline\nquit\n' > "$out/train_view.txt"
    xvfb "$bin" --view heatmap --script "$out/train_view.txt" > "$out/check_log.txt" 2>&1 || { cat "$out/check_log.txt"; fail "--view did not win over the saved Train mode"; }
    ;;
  workspace)
    # Save workspace in the window after changing config, stage, head, zoom and colours; the
    # same picture comes back with --workspace, pixel for pixel (the status line, which holds
    # the compute time, left out); a different view gives a different picture. One GEMM for both
    # runs (the fastest is otherwise measured at start and may differ in the last bits).
    export MHASCOPE_GEMM=eigen
    # The memory budget control shows the machine's budget (half of MemAvailable, which moves
    # between runs) unless given: the same for all runs here.
    xvfb "$bin" --fresh --memory-budget 4096 --script "$(script_from workspace.txt)" > "$out/log.txt" 2>&1 \
      || { tail -n 20 "$out/log.txt"; fail "saving a workspace failed"; }
    grep -q '"mhascope_workspace": 1' "$out/workspace.json" || fail "no workspace written"
    grep -q '"zoom": 1.953125' "$out/workspace.json" || fail "zoom not kept: $(grep -A3 '"zoom"' "$out/workspace.json")"
    xvfb "$bin" --workspace "$out/workspace.json" --memory-budget 4096 --screenshot "$out/reopened.png" || fail "--workspace exited $?"
    /usr/bin/python3 "$here/same_region.py" "$out/saved.png" "$out/reopened.png" 0 0 1600 960 \
      || fail "the reopened workspace shows a different picture"
    xvfb "$bin" --workspace "$out/workspace.json" --memory-budget 4096 --head 0 --screenshot "$out/other.png" || fail "--head 0 exited $?"
    /usr/bin/python3 "$here/same_region.py" "$out/saved.png" "$out/other.png" 0 0 1600 960 > /dev/null \
      && fail "another head gave the same picture (the comparison sees nothing)"
    # a changed or missing workspace: a message and exit 2, never another picture
    sed 's/"mhascope_workspace": 1/"mhascope_workspace": 3/' "$out/workspace.json" > "$out/newer.json"
    err=$(xvfb "$bin" --workspace "$out/newer.json" --screenshot "$out/x.png" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] && grep -q "written by a newer mhascope" <<<"$err" || fail "newer workspace: rc=$rc $err"
    [ -e "$out/x.png" ] && fail "a picture was made from a refused workspace"
    ;;
  key_tap)
    command -v xdotool > /dev/null || fail "xdotool is needed (scripts/setup.sh installs it)"
    cat > "$out/tap.sh" <<EOF
#!/usr/bin/env bash
"$bin" --fresh --preset default --script "$here/key_tap.txt" > "$out/log.txt" 2>&1 &
pid=\$!
for i in \$(seq 50); do xdotool search --name mhascope > /dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
xdotool key --delay 0 Right
wait \$pid
EOF
    xvfb bash "$out/tap.sh" || { tail -n 5 "$out/log.txt"; fail "a tapped → key was lost"; }
    ;;
  explore)
    # Seeded random input on every tab and every column, ImGui's asserts on
    # (app/imgui_user_config.hpp). Arguments: SEED EVENTS [WxH].
    seed=${3:?seed}; events=${4:?events}; size=${5:-1600x1000}
    sed -e "s|@OUT@|$out|g" -e "s|@SEED@|$seed|g" -e "s|@EVENTS@|$events|g" "$here/explore.txt" > "$out/explore.txt"
    mkdir -p "$out/home"
    start=$(date +%s)
    HOME="$out/home" xvfb "$bin" --preset default --size "$size" --script "$out/explore.txt" > "$out/log.txt" 2> "$out/err.txt"
    rc=$?
    echo "explore seed $seed: $events events at $size, exit $rc, $(( $(date +%s) - start )) s"
    if [ "$rc" -ne 0 ] || ! /usr/bin/python3 "$here/check_png.py" "$out/explore_end.png" > /dev/null 2>&1; then
      echo "---- seed $seed: the last events before the failure:" >&2
      grep "^random $seed #" "$out/log.txt" | tail -n 20 >&2
      echo "---- stderr:" >&2
      tail -n 20 "$out/err.txt" >&2
      echo "---- reproduce: tests/gui/gui_test.sh explore $bin $seed $events $size" >&2
      fail "exploration seed $seed (exit $rc)"
    fi
    grep -c "^random $seed #" "$out/log.txt" | xargs echo "events logged:"
    ;;
  blocked_cells)
    # A blocked cell looks the same in every view: at the Mask stage (−inf) and at the Softmax
    # stage (weight 0) the window fills the same cells with the blocked grey (64,64,64) and the
    # same light cross (205,205,205); without the mask there is none of that grey.
    for stage in masked_scores weights; do
      xvfb "$bin" --screenshot "$out/$stage.png" --preset "$here/causal.json" --stage "$stage" || fail "screenshot at $stage"
    done
    g1=$(/usr/bin/python3 "$here/count_color.py" "$out/masked_scores.png" 64,64,64 20000) || fail "masked scores: $g1"
    g2=$(/usr/bin/python3 "$here/count_color.py" "$out/weights.png" 64,64,64 20000) || fail "weights: blocked cells not in the blocked colour: $g2"
    x1=$(/usr/bin/python3 "$here/count_color.py" "$out/masked_scores.png" 205,205,205 200) || fail "masked scores: no crosses: $x1"
    x2=$(/usr/bin/python3 "$here/count_color.py" "$out/weights.png" 205,205,205 200) || fail "weights: no crosses: $x2"
    [ "${g1##*: }" = "${g2##*: }" ] && [ "${x1##*: }" = "${x2##*: }" ] || fail "blocked cells differ: $g1 / $g2 / $x1 / $x2"
    xvfb "$bin" --screenshot "$out/none.png" --preset default --stage weights || fail "screenshot without a mask"
    /usr/bin/python3 "$here/count_color.py" "$out/none.png" 64,64,64 0 0 || fail "blocked grey without a mask"
    ;;
  see_as)
    # The "see as" preview covers the whole window: after choosing deuteranopia (then greyscale)
    # every pixel is the simulation of the normal picture's pixel (the shader against numpy's
    # reference, within 2 of 255; the combo's label, which names the preview, may differ), and
    # choosing normal again gives the normal picture back. An export made meanwhile is seen the
    # same way (export --see-as, compared with the window's own export below).
    xvfb "$bin" --preset "$here/causal.json" --stage weights --script "$(script_from see_as.txt)" > "$out/log.txt" 2>&1 \
      || { tail -n 20 "$out/log.txt"; fail "see-as script failed"; }
    for kind in deuteranopia greyscale; do
      /usr/bin/python3 "$here/see_as_check.py" "$out/normal_scrolled.png" "$out/$kind.png" "$kind" 2 6000 100000 \
        || fail "the $kind preview is not the simulation of the whole window"
    done
    # (but for the hover highlight: the mouse rests on the combo now, on a control before — 608
    # pixels when measured, where a preview left on changes 1.3 M)
    /usr/bin/python3 "$here/see_as_check.py" "$out/normal_scrolled.png" "$out/back.png" normal 0 3000 0 \
      || fail "choosing normal again did not give the normal picture back"
    # The command line: --see-as reaches the picture, a bad kind is refused with the allowed names.
    "$bin" export --preset "$here/causal.json" --stage weights --out "$out/n.png" >/dev/null || fail "export"
    "$bin" export --preset "$here/causal.json" --stage weights --see-as deuteranopia --out "$out/d.png" >/dev/null \
      || fail "export --see-as deuteranopia"
    /usr/bin/python3 "$here/see_as_check.py" "$out/n.png" "$out/d.png" deuteranopia 1 20000 1000 \
      || fail "export --see-as deuteranopia is not the simulation of the normal export"
    err=$("$bin" export --preset default --see-as sepia --out "$out/x.png" 2>&1) && fail "--see-as sepia accepted"
    grep -q "unknown see-as 'sepia'" <<<"$err" || fail "no clear error for --see-as sepia: $err"
    [ ! -e "$out/x.png" ] || fail "a picture was written for a bad --see-as"
    ;;
  *)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS: $case_name"
