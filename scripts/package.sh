#!/usr/bin/env bash
# Builds the Debian package dist/mhascope_<version>-1_amd64.deb with CPack.
#   scripts/package.sh            configure build-pkg/ (Release, -march=x86-64-v3, no tests), build, cpack
#   scripts/package.sh --lintian  the same, then run lintian on the package (apt-get install lintian)
# A package must run on CPUs other than the build machine's, so it never uses the -march that
# scripts/setup.sh measured for this machine (often native = AVX-512): x86-64-v3 (AVX2 + FMA,
# Haswell and later) is the baseline, and the build checks that no AVX-512 code is in it but the
# AVX-512 head kernels, which run only where the CPU has AVX-512.
# Install it with `sudo apt install ./dist/mhascope_*.deb` (apt pulls the dependencies).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LINTIAN=0
for a in "$@"; do
  case "$a" in
    --lintian) LINTIAN=1 ;;
    *) echo "usage: scripts/package.sh [--lintian]" >&2; exit 2 ;;
  esac
done

BUILD=build-pkg
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMHASCOPE_MARCH=x86-64-v3 \
      -DMHASCOPE_PACKAGE=ON -DMHASCOPE_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD"

# AVX-512 instructions name zmm registers. The only ones allowed are the AVX-512 head kernels'
# (core/kernels/head_kernels_avx512.cpp), compiled for AVX-512 by a target pragma and run only when
# the CPU reports AVX-512 at run time; every other object of an x86-64-v3 build has none (ymm, as
# in the AVX2 + FMA head kernels, is the baseline's own).
avx512=$(find "$BUILD" -name '*.o' ! -name 'head_kernels_avx512.cpp.o' -print0 |
         xargs -0 -r sh -c 'for f; do objdump -d --no-show-raw-insn "$f" | grep -q "%zmm" && echo "$f"; done; true' sh)
if [ -n "$avx512" ]; then
  echo "package: AVX-512 code outside the run-time-dispatched head kernels; refusing to package:" >&2
  echo "$avx512" >&2
  exit 1
fi

mkdir -p dist
(cd "$BUILD" && cpack -G DEB -B "$ROOT/dist" >/dev/null)
rm -rf dist/_CPack_Packages
deb="$(ls -t dist/mhascope_*.deb | head -n 1)"
echo "package: $deb"
dpkg-deb -f "$deb" Package Version Architecture Depends

if [ "$LINTIAN" = 1 ]; then
  lintian --fail-on error "$deb"
fi
