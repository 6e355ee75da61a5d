# What every GUI test script shares; source it after setting $case_name and $bin. Each case runs in
# a fresh folder $out (removed at exit unless KEEP_GUI_OUT is set) that also holds a private config
# and state folder, so no test reads or writes the user's imgui.ini or last workspace.
# ${out_prefix:-mhascope-gui} names the folder; the case name's "_" become "-" when a script
# types the path (xdotool types "_" as a space).
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/${out_prefix:-mhascope-gui}-${case_name}.XXXXXX")
xvfb_pid=""
trap '[ -z "$xvfb_pid" ] || { kill "$xvfb_pid" 2>/dev/null; wait "$xvfb_pid" 2>/dev/null; }; [ -n "${KEEP_GUI_OUT:-}" ] || rm -rf "$out"' EXIT
export XDG_CONFIG_HOME="$out/config"
export XDG_STATE_HOME="$out/state"
# Under AddressSanitizer builds: Mesa's GL driver leaks a few bytes at exit from a library it has
# already unloaded (the stack says "<unknown module>", so no suppression can name it). Leak
# checking stays on in the core tests; here only memory errors are checked.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# One X server per case (Xvfb with a 24-bit screen: GLX needs it), started here and stopped at
# exit; `xvfb CMD` runs CMD on it. A case opens its windows one after another, so each still has
# the screen to itself; a server per window (xvfb-run) cost a third of a second each, about a
# hundred times per suite. The display is drawn at random from :100 … :999, not the lowest free
# one: a number another case's server has just given up may still answer on its abstract socket
# while that server dies, so a client of the new one would reach the old one and then nothing
# (seen as "Failed to open display :0" when cases ran side by side). The server is ready when it
# answers and the display's lock file names its pid: two cases that draw the same number at once
# both start a server, the second exits on the first one's lock, and until it has exited its case
# would otherwise take the other case's server for its own and lose it when that case ends.
# -noreset: by default an X server resets when its last client leaves, and a client that connects
# during the reset is refused ("Failed to open display"); a case that polls with xdotool while its
# window starts would otherwise make the window's own connection land in such a reset.
xvfb_display=""
for _ in $(seq 20); do
  d=$(( RANDOM % 900 + 100 ))
  [ -e "/tmp/.X$d-lock" ] && continue
  Xvfb ":$d" -screen 0 1600x1000x24 -nolisten tcp -noreset > "$out/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 100); do
    xdpyinfo -display ":$d" > /dev/null 2>&1 && break
    kill -0 "$xvfb_pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$xvfb_pid" 2>/dev/null && xdpyinfo -display ":$d" > /dev/null 2>&1 &&
     [ "$(tr -d ' \n' < "/tmp/.X$d-lock" 2>/dev/null)" = "$xvfb_pid" ]; then
    xvfb_display=":$d"
    break
  fi
  kill "$xvfb_pid" 2>/dev/null; wait "$xvfb_pid" 2>/dev/null; xvfb_pid=""
done
[ -n "$xvfb_display" ] || { echo "FAIL: no Xvfb started in 20 tries: $(cat "$out/xvfb.log")" >&2; exit 1; }
xvfb() { DISPLAY="$xvfb_display" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
script_from() {  # template → the test's own copy with @OUT@ and @HERE@ filled in
  sed -e "s|@OUT@|$out|g" -e "s|@HERE@|$here|g" "$here/$1" > "$out/$1"
  echo "$out/$1"
}
# copy_model NAME FOLDER [bos]: the fixture model NAME ($fix/models, tests/fixtures) as $out/FOLDER with a
# byte-level tokenizer (tests/model_tokenizer.py)
copy_model() {
  cp -r "$fix/models/$1" "$out/$2" || fail "cannot copy $1"
  /usr/bin/python3 "$here/../model_tokenizer.py" "$out/$2" ${3:-} || fail "cannot write the tokenizer"
}
