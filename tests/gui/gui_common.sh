# What every GUI test script shares; source it after setting $case_name and $bin. Each case runs in
# a fresh folder $out (removed at exit unless KEEP_GUI_OUT is set) that also holds a private config
# and state folder, so no test reads or writes the user's imgui.ini or last workspace.
# ${out_prefix:-mhascope-gui} names the folder; the case name's "_" become "-" when a script
# types the path (xdotool types "_" as a space).
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/${out_prefix:-mhascope-gui}-${case_name}.XXXXXX")
trap '[ -n "${KEEP_GUI_OUT:-}" ] || rm -rf "$out"' EXIT
export XDG_CONFIG_HOME="$out/config"
export XDG_STATE_HOME="$out/state"
# Under AddressSanitizer builds: Mesa's GL driver leaks a few bytes at exit from a library it has
# already unloaded (the stack says "<unknown module>", so no suppression can name it). Leak
# checking stays on in the core tests; here only memory errors are checked.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
xvfb() { xvfb-run -a -s "-screen 0 1600x1000x24" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
script_from() {  # template → the test's own copy with @OUT@ and @HERE@ filled in
  sed -e "s|@OUT@|$out|g" -e "s|@HERE@|$here|g" "$here/$1" > "$out/$1"
  echo "$out/$1"
}
