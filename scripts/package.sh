#!/usr/bin/env bash
# Builds the Debian package dist/mhascope_<version>-1_amd64.deb with CPack.
#   scripts/package.sh            configure build-pkg/ (Release, -march=x86-64-v3, no tests), build, cpack
#   scripts/package.sh --lintian  the same, then run lintian on the package (apt-get install lintian)
# A package must run on CPUs other than the build machine's, so it never uses the -march that
# scripts/setup.sh measured for this machine (often native = AVX-512): x86-64-v3 (AVX2 + FMA,
# Haswell and later) is the baseline, and the build checks the binary holds no AVX-512 code.
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

# AVX-512 instructions name zmm registers; an x86-64-v3 binary has none.
if objdump -d --no-show-raw-insn "$BUILD/app/mhascope" | grep -q '%zmm'; then
  echo "package: $BUILD/app/mhascope contains AVX-512 code; refusing to package it" >&2
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
