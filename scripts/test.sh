#!/usr/bin/env bash
# Sets everything up, then runs every test: the Release build's CTest suite (the command line's
# and the GUI's scripts under Xvfb, the training tests), the GoogleTest binaries under
# AddressSanitizer + UBSan, the threaded code's tests under ThreadSanitizer, and a short libFuzzer
# run of each parser. docs/testing.md says what each part costs on a 2-core machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Each stage's header says how long the command has run (docs/testing.md reads its costs from them).
stage() { echo "== $1 (at ${SECONDS} s)"; }
# The packages first (clang for the sanitizer build, GCC for the Release one); then both builds.
"$ROOT/scripts/setup.sh" --packages

# The sanitizer build: clang 14, which compiles this code with the sanitizers on in half to two
# thirds of GCC 12's time (measured file by file: 14 s against 8 s, 28 against 18, 19 against 8);
# -march=native, because clang compiles the SIMD head kernels only for what -march allows and these
# binaries run only here, so every kernel this CPU runs is tested; -O2 with line tables only
# (reports still name file and line; under the sanitizers -O2 compiles in the time of -O1, and at
# -O1 Eigen's products stay calls of its unoptimised internals); a unity build, like every build
# (CMakeLists.txt says why). It compiles in the background at the lowest priority while the
# Release suite runs: the tests leave a core idle at times (an X server starting, Python checks,
# the last long test alone) and the build takes that time; when the tests want both cores, it
# gets almost none. It starts before the Release build, for the same reason.
# A build-asan made by another compiler (GCC, before) starts afresh: on a compiler change CMake
# deletes its cache and would configure without the options below.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14$' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMHASCOPE_SANITIZE=ON -DMHASCOPE_MARCH=native \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DMHASCOPE_BUILD_APP=ON \
      -DMHASCOPE_UNITY_BUILD=ON >/dev/null
# Only the GoogleTest binaries: the window's own code (state, panels, the job system, the
# workers) runs there in-process; the window itself and its GUI scripts are the Release run's.
ASAN_TARGETS=(mhascope_core_tests mhascope_fresh_process_tests mhascope_train_tests mhascope_model_tests
              mhascope_tokenize_tests mhascope_thread_tests mhascope_app_tests mhascope_analysis_tests
              mhascope_practice_tests mhascope_experiments_tests)
# setsid gives a background job a session of its own (so it can be stopped whole), which Linux
# also schedules as a group of its own (autogroups): nice alone changes nothing against the other
# groups, so the new group itself gets nice 19, from inside it (set from here, it could land on
# this script's group before setsid has run).
lowest=(setsid bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' lowest)
"${lowest[@]}" cmake --build build-asan --target "${ASAN_TARGETS[@]}" > build-asan/build.log 2>&1 &
asan_build=$!
trap 'kill -- -"$asan_build" 2>/dev/null || true' EXIT  # a failed Release suite stops the build too

# The Release build of the app (the window and the command line, what the GUI and CLI scripts
# run; its man page and changelog, which the package test installs) and of the training tests
# (the two that train full induction runs need an optimised build, below) and of the practice
# tests (every solution and mistake through Python; the sanitizers run a part of them); the other
# test binaries are built only with the sanitizers. The sanitizer build above takes what this one
# leaves of the cores (its configure steps, the march probe, its links).
"$ROOT/scripts/setup.sh" mhascope mhascope_manpage mhascope_changelog mhascope_train_tests mhascope_practice_tests

stage "Release build: the GUI and CLI scripts, the training and practice tests, the package and docs checks"
# Tests labelled perf pin this machine's internals (page faults, the allocator, frame timings) and
# are left out here: `ctest --test-dir build -L perf` runs them. So are the GoogleTest binaries
# labelled core and app, not built here (CTest lists each as <binary>_NOT_BUILT; one built earlier
# by scripts/setup.sh would be stale): they run under the sanitizers below.
ctest --test-dir build --output-on-failure -j2 -LE '^(perf|core|app)$' -E '_NOT_BUILT$'

stage "AddressSanitizer + UndefinedBehaviorSanitizer: core, training and in-process app tests"
if ! wait "$asan_build"; then
  tail -n 60 build-asan/build.log >&2
  echo "the sanitizer build failed (whole log: build-asan/build.log)" >&2
  exit 1
fi
# The fuzzers' build and the ThreadSanitizer build (both clang) likewise, in the background while
# the sanitizer tests run. ThreadSanitizer cannot share a build with AddressSanitizer: its own
# build, of the threaded code's tests alone — the window's job system and the trace's job on it,
# the thread pool, the engine's threaded forward and the training session — at -O0, which
# compiles in two thirds of -O1's CPU time (105 s against 166) and runs these tests slower but
# in less than the difference, once the largest forward is left to the AddressSanitizer run (it
# checks the same parallel sections as the other threaded forward, at sizes that take 33 s at -O0).
"${lowest[@]}" scripts/fuzz.sh 0 > build-asan/fuzz_build.log 2>&1 &
fuzz_build=$!
cmake -S . -B build-tsan -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMHASCOPE_TSAN=ON -DMHASCOPE_BUILD_APP=OFF \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" >/dev/null
"${lowest[@]}" cmake --build build-tsan --target mhascope_thread_tests > build-tsan/build.log 2>&1 &
tsan_build=$!
trap 'kill -- -"$fuzz_build" -"$tsan_build" 2>/dev/null || true' EXIT
# Each test binary runs as a few shards here (tests/CMakeLists.txt says why). Two tests are left
# to the Release run: they train full induction runs (the 700-step reference run; two seeds for
# the circuits), minutes each under the sanitizers (the test code's unoptimised copies of Eigen's
# products, CMakeLists.txt says why), through the same code as the short training tests.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  GTEST_FILTER='-TrainReadCuts.OnTheReferenceRun*:Circuits.TrainedInductionRuns*' \
  ctest --test-dir build-asan --output-on-failure -j2 -L '^(core|train|app)$'

stage "ThreadSanitizer: the job system, the thread pool, the threaded forward, the training session"
if ! wait "$tsan_build"; then
  tail -n 60 build-tsan/build.log >&2
  echo "the ThreadSanitizer build failed (whole log: build-tsan/build.log)" >&2
  exit 1
fi
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  build-tsan/tests/mhascope_thread_tests --gtest_filter='-ThreadedForward.RegroupsHeadsExactlyInRowBlocksThatStraddleBatchItems' 

# The three fuzzers run at once on two cores: 22 s each gives each about the 15 s of a core it had
# when they ran one after another.
stage "libFuzzer: parsers (${MHASCOPE_FUZZ_SECONDS:-22} s each, all at once)"
if ! wait "$fuzz_build"; then
  tail -n 60 build-asan/fuzz_build.log >&2
  echo "the fuzzers' build failed (whole log: build-asan/fuzz_build.log)" >&2
  exit 1
fi
trap - EXIT
scripts/fuzz.sh "${MHASCOPE_FUZZ_SECONDS:-22}"
stage "all tests passed"
