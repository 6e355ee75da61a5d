#!/usr/bin/env bash
# Sets everything up, then runs every test: the Release build's CTest suite (core + CLI + GUI
# smoke tests under Xvfb), the core tests again under AddressSanitizer + UBSan, and a short
# libFuzzer run of each parser.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/setup.sh"

echo "== Release build: all tests"
ctest --test-dir build --output-on-failure -j2

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: core tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMHASCOPE_SANITIZE=ON \
      -DMHASCOPE_BUILD_APP=OFF >/dev/null
cmake --build build-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2

if [ -x scripts/fuzz.sh ]; then
  echo "== libFuzzer: parsers (${MHASCOPE_FUZZ_SECONDS:-15} s each)"
  scripts/fuzz.sh "${MHASCOPE_FUZZ_SECONDS:-15}"
fi
echo "== all tests passed"
