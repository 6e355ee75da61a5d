#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14 with ASan + UBSan) and runs each parser's fuzzer
# for N seconds (default 60; the three at once), seeded with the real files under tests/fixtures/
# and guided by the token dictionaries in fuzz/. A crash, sanitizer report, leak, or a single
# allocation above the malloc limit (inputs are a few KiB, so anything bigger means the parser
# trusted a size from the file) makes the script exit non-zero; the reproducer is kept in
# <build>/artifacts/<parser>/.
#
# Usage: scripts/fuzz.sh [seconds] [build-dir]      (build-dir default: build-fuzz; 0 s: build only)
# Replay one input: <build>/fuzz/fuzz_npy <file>
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${2:-$root/build-fuzz}"
malloc_limit_mb=64

# -O1 with line tables, as the sanitizer build: reports still name file and line.
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DMHASCOPE_FUZZ=ON -DMHASCOPE_BUILD_APP=OFF -DMHASCOPE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target fuzz_npy fuzz_safetensors fuzz_tokenizer
if [[ $seconds == 0 ]]; then exit 0; fi

# The three fuzzers run at once (each is one process on one core): the test command's fuzzing
# takes N seconds, not 3 x N; on a 2-core machine each gets about two thirds of a core.
parsers=(npy safetensors tokenizer)
pids=()
for parser in "${parsers[@]}"; do
  # A fresh working corpus from the committed fixtures, so runs never write into the source tree.
  corpus="$build/corpus/$parser"
  artifacts="$build/artifacts/$parser"
  mkdir -p "$corpus" "$artifacts"
  cp "$root"/tests/fixtures/"$parser"/*."$parser" "$corpus"/
  log="$build/fuzz_$parser.log"
  echo "== fuzz_$parser for ${seconds}s (log: $log)"
  "$build/fuzz/fuzz_$parser" "$corpus" -dict="$root/fuzz/$parser.dict" -max_total_time="$seconds" \
    -malloc_limit_mb="$malloc_limit_mb" -rss_limit_mb=2048 -artifact_prefix="$artifacts/" \
    -print_final_stats=1 >"$log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!parsers[@]}"; do
  parser=${parsers[$i]}
  log="$build/fuzz_$parser.log"
  status=0
  wait "${pids[$i]}" || status=$?
  echo "== fuzz_$parser:"
  grep -E "DONE|stat::number_of_executed_units|stat::peak_rss_mb" "$log" || true
  if [[ $status -ne 0 ]]; then
    echo "fuzz_$parser FAILED (exit $status):" >&2
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -20 >&2 || tail -30 "$log" >&2
    failed=$status
  fi
done
[[ $failed -eq 0 ]] || exit "$failed"
echo "fuzzers ran clean"
