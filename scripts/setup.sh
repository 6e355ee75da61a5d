#!/usr/bin/env bash
# Sets up everything mhascope needs on Debian 12 and builds it in build/ (Release).
# Idempotent: installs only missing packages (apt-get update once), re-measures nothing it
# already measured, and re-runs the build incrementally.
#   scripts/setup.sh              every target (the app, the command line, the test binaries)
#   scripts/setup.sh TARGET...    those targets only (scripts/test.sh names what its Release run needs)
#   scripts/setup.sh --packages   the Debian packages and ImGui's backend sources, no build
#                                 (scripts/test.sh, before its two builds)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Build, app, tests (GUI tests run under Xvfb and read their screenshots with Pillow; the
# capture_attention.py test uses torch), fuzzers.
PKGS=(build-essential cmake pkg-config ninja-build
      libimgui-dev libstb-dev libglfw3-dev libgl-dev libeigen3-dev libcairo2-dev libgif-dev
      nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
      fonts-dejavu-core xvfb xauth xdotool x11-utils python3 python3-torch python3-numpy python3-pil
      clang-14 libclang-rt-14-dev
      chromium   # the exported HTML page's test opens it in a real browser (tests/cli/html_test.sh)
      libopenblas0-pthread)  # the engine's GEMM with MHASCOPE_GEMM=openblas (kernels/gemm.cpp); PyTorch's BLAS
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# ImGui's GLFW/OpenGL3 backend sources ship in libimgui-dev's doc folder; images that strip
# /usr/share/doc lose them, so take them from the package archive instead.
BACKENDS=/usr/share/doc/libimgui-dev/examples/backends
LOCAL="$ROOT/third_party/imgui_backends_src"
if [ ! -f "$BACKENDS/imgui_impl_glfw.cpp" ] && [ ! -f "$LOCAL$BACKENDS/imgui_impl_glfw.cpp" ]; then
  echo "setup: extracting ImGui backend sources from the libimgui-dev package"
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download libimgui-dev >/dev/null)
  mkdir -p "$LOCAL"
  dpkg-deb -x "$tmp"/libimgui-dev_*.deb "$LOCAL"
  rm -rf "$tmp"
fi

if [ "${1:-}" = --packages ]; then exit 0; fi

# Pick the -march that makes Eigen's GEMM fastest here (x86-64-v3 beat -march=native's
# AVX-512 on the EPYC machines we measured). The result is cached in build/march.txt.
mkdir -p build
if [ ! -s build/march.txt ]; then
  # Build every candidate first, then run them round-robin three times and keep each one's best
  # result, so a burst of other load on the machine does not decide the winner.
  cands=(default x86-64-v3 native)
  for m in "${cands[@]}"; do
    flag=""; [ "$m" != default ] && flag="-march=$m"
    g++ -O3 -DNDEBUG $flag -I/usr/include/eigen3 scripts/march_probe.cpp -o "build/march_probe_$m" 2>/dev/null || true
  done
  declare -A bestOf
  for round in 1 2 3; do
    for m in "${cands[@]}"; do
      [ -x "build/march_probe_$m" ] || continue
      speed="$("./build/march_probe_$m" 2>/dev/null || echo 0)"
      if awk "BEGIN{exit !($speed > ${bestOf[$m]:-0})}"; then bestOf[$m]="$speed"; fi
    done
  done
  best=default bestSpeed=0
  for m in "${cands[@]}"; do
    echo "setup: Eigen GEMM with -march=$m: best of 3 rounds ${bestOf[$m]:-n/a} GFLOP/s"
    if awk "BEGIN{exit !(${bestOf[$m]:-0} > $bestSpeed)}"; then best="$m"; bestSpeed="${bestOf[$m]}"; fi
  done
  echo "$best" > build/march.txt
  rm -f build/march_probe_*
fi
MARCH="$(cat build/march.txt)"; [ "$MARCH" = default ] && MARCH=""
echo "setup: building with -march=${MARCH:-<default>}"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMHASCOPE_MARCH="$MARCH" >/dev/null
if [ $# -gt 0 ]; then cmake --build build --target "$@"; else cmake --build build; fi
