#!/usr/bin/env bash
# GUI tests of the window's Train mode under Xvfb (24-bit screen), driven by input scripts
# (app/testing/input_script.hpp). Usage: train_mode.sh CASE MHASCOPE_BINARY
#   train_load      Load checkpoint: with its saved history the real curves and formation step;
#                   without it, said plainly and nothing made up (no "formed at step <load step>",
#                   no train loss); a bad file keeps the run on screen
#   train_async     a large checkpoint loads off the UI thread: the window keeps drawing and says so
#   train_memory    Train over the memory budget is refused with the estimate and the budget; a
#                   run of T = 2048 (and its checkpoint) shows an error, never a crash
#   train_text      a large text file named by the last workspace: no stall at launch or on a form
#                   edit (only its size is looked at); Train reads it on the worker thread
#   train_variants  RoPE and N K/V heads from the setup form: a bad N explained in one line; RoPE
#                   with N = 1 trains to the induction circuit
#   slider_range    a value typed past a slider's end is set to that end and said (not silently)
#   train_finished  Train on a finished run says so; raised steps continue it; the layer slider
#                   follows a 1-layer run; default file names follow the task; messages beside
#                   the button clicked; the grid says which tokens it labels
set -u
case_name=$1
bin=$2
source "$(dirname "$0")/gui_common.sh"
# The same checkpoint without its history block, as files written before it existed are.
strip_history() {
  python3 - "$1" "$2" <<'EOF'
import json, struct, sys
data = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
header = json.loads(data[8:8 + n])
assert 'history' in header['__metadata__'], 'the checkpoint has no history block to strip'
del header['__metadata__']['history']
h = json.dumps(header, separators=(',', ':')).encode()
h += b' ' * (-len(h) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(h)) + h + data[8 + n:])
EOF
}
# Runs a script in the window; on failure prints its log.
run_script() {  # NAME SCRIPT [window options...]
  local name=$1 script=$2
  shift 2
  xvfb "$bin" "$@" --script "$script" > "$out/$name.log" 2>&1 || { cat "$out/$name.log"; fail "$name: script failed"; }
}

case "$case_name" in
  train_load)
    # The reference induction run (the circuit forms before step 1500), saved with its history.
    "$bin" train --steps 1500 --save "$out/with.safetensors" > "$out/train.txt" || fail "cannot train the fixture"
    strip_history "$out/with.safetensors" "$out/without.safetensors" || fail "cannot strip the history"
    printf 'not a checkpoint' > "$out/bad.safetensors"
    run_script load "$(script_from train_load.txt)" --fresh
    # With its history the formation step is the run's own, before the step the file was saved at.
    formed=$(grep -oE '^train_circuit: formed at step [0-9]+$' "$out/load.log" | grep -oE '[0-9]+$')
    [ -n "$formed" ] && [ "$formed" -lt 1500 ] || { cat "$out/load.log"; fail "no formation step before 1500 from the saved history"; }
    ;;
  train_async)
    # ≈ 135 MB of parameters: d_model 2048, 2 layers; no step taken.
    "$bin" train --d-model 2048 --heads 2 --layers 2 --steps 0 --save "$out/big.safetensors" --memory-budget 4096 \
      > /dev/null || fail "cannot make the large checkpoint"
    run_script async "$(script_from train_async.txt)" --fresh --memory-budget 4096
    grep -q "frame times load:" "$out/async.log" || { cat "$out/async.log"; fail "no frame times while loading"; }
    # While the 135 MB file is read and decoded the window keeps drawing: no frame of a second or more.
    max=$(grep "frame times load:" "$out/async.log" | sed -E 's/.*max ([0-9.]+) ms.*/\1/')
    python3 -c "import sys; sys.exit(0 if float('$max') < 1000 else 1)" || fail "a frame took $max ms while loading"
    ;;
  train_memory)
    # A checkpoint of T = 2048 (made with room to spare; the window's budget is 64 MiB).
    "$bin" train --layers 1 --seq 2048 --batch 1 --steps 0 --memory-budget 16384 --save "$out/seq2048.safetensors" \
      > /dev/null || fail "cannot make the T = 2048 checkpoint"
    run_script memory "$(script_from train_memory.txt)" --fresh --memory-budget 64
    ;;
  train_variants)
    run_script variants "$(script_from train_variants.txt)" --fresh
    ;;
  train_text)
    # A last workspace whose Train form names a 15 MiB text file (under the task's 16 MiB limit).
    python3 -c "
import random
random.seed(1)
words = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'far']
out = open('$out/big.txt', 'w')
n = 0
while n < 15 * 1024 * 1024:
    line = ' '.join(random.choice(words) for _ in range(12)) + '\n'
    out.write(line)
    n += len(line)
"
    printf 'wait 3\nclick mode_train\nwait 2\nquit\n' > "$out/first.txt"
    run_script first "$out/first.txt"
    session="$XDG_STATE_HOME/mhascope/last-workspace.json"
    python3 - "$session" "$out/big.txt" <<'EOF' || fail "cannot edit the last workspace"
import json, sys
ws = json.load(open(sys.argv[1]))
train = json.loads(ws['train']) if isinstance(ws['train'], str) else ws['train']
train.update({'task': 'text', 'text_path': sys.argv[2], 'steps': 3, 'eval_every': 3})
ws['train'] = json.dumps(train) if isinstance(ws['train'], str) else train
json.dump(ws, open(sys.argv[1], 'w'), indent=2)
EOF
    run_script text "$(script_from train_text.txt)"
    grep -q '^train_form_error: $' "$out/text.log" || { cat "$out/text.log"; fail "the form refused the text file"; }
    ms=$(grep "^stopwatch form" "$out/text.log" | grep -oE '[0-9.]+ ms' | grep -oE '^[0-9.]+')
    [ -n "$ms" ] || { cat "$out/text.log"; fail "no stopwatch form"; }
    python3 -c "import sys; sys.exit(0 if float('$ms') < 1500 else 1)" || fail "a form edit took $ms ms (the text read on the UI thread?)"
    # Launching with that form takes as long as with a tiny text file (no read before the first frame).
    printf 'wait 3\nexpect_text mode train\nquit\n' > "$out/launch.txt"
    launch_seconds() {
      local t0 t1
      t0=$(date +%s.%N)
      xvfb "$bin" --script "$out/launch.txt" > "$out/launch.log" 2>&1 || { cat "$out/launch.log"; fail "launch failed"; }
      t1=$(date +%s.%N)
      python3 -c "print($t1 - $t0)"
    }
    big_s=$(launch_seconds)
    printf 'the cat sat on the mat and the dog ran far away\n' > "$out/small.txt"
    sed -i "s|$out/big.txt|$out/small.txt|" "$session"
    small_s=$(launch_seconds)
    echo "launch with the 15 MiB text: $big_s s; with a tiny one: $small_s s"
    python3 -c "import sys; sys.exit(0 if $big_s < $small_s + 1.5 else 1)" || fail "launching with the large text took $big_s s against $small_s s"
    max=$(grep "frame times form:" "$out/text.log" | sed -E 's/.*max ([0-9.]+) ms.*/\1/')
    python3 -c "import sys; sys.exit(0 if float('$max') < 1000 else 1)" || fail "a frame took $max ms on a form edit"
    ;;
  train_finished)
    run_script finished "$(script_from train_finished.txt)" --fresh
    ;;
  slider_range)
    run_script slider "$(script_from slider_range.txt)" --fresh --preset default
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $case_name"
