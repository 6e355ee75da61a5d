# Shared by the CLI test scripts (source it after BIN/FIX are set): a scratch folder removed at
# exit, ok/bad counting into $fails, and the two expectation helpers.
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fails=0
ok()   { echo "ok   - $1"; }
bad()  { echo "FAIL - $1"; fails=$((fails + 1)); }
# expect_error NAME SUBSTRING CMD...: non-zero exit and SUBSTRING on stderr
expect_error() {
  local name="$1" want="$2"; shift 2
  local err; err="$("$@" 2>&1 >/dev/null)"; local rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$err"; then ok "$name"; else bad "$name (rc=$rc, stderr: $err)"; fi
}
expect_ok() {
  local name="$1"; shift
  local out; out="$("$@" 2>&1)"; local rc=$?
  if [ $rc -eq 0 ]; then ok "$name"; else bad "$name (rc=$rc: $out)"; fi
}
