#!/usr/bin/env bash
# The Debian package, built from the already-built tree (no recompilation; scripts/package.sh
# makes the real one in build-pkg/ with -march=x86-64-v3): cpack → dpkg-deb -x into a temporary
# root → the unpacked binary runs `info`, `export` and a window screenshot with the presets it
# finds beside itself (<root>/usr/share/mhascope/assets), not in the source tree.
#   tests/install/package_test.sh BUILD_DIR
set -euo pipefail
BUILD="$(cd "$1" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$(date +%s.%N)

(cd "$TMP" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1) \
  || { cat "$TMP/cpack.log"; fail "cpack"; }
deb="$(ls "$TMP"/pkg/mhascope_*_amd64.deb)" || fail "no mhascope_*_amd64.deb in $(ls "$TMP/pkg")"
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes"

# Control fields: dependencies from the binary (dpkg-shlibdeps) plus the fonts; no -dev package.
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
for lib in libglfw3 libcairo2 libstdc++6 libc6 fonts-dejavu-core; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib"
done
! grep -q -- '-dev' <<<"$depends" || fail "Depends names a -dev package"

ROOT="$TMP/root"
dpkg-deb -x "$deb" "$ROOT"
for f in usr/bin/mhascope usr/share/applications/mhascope.desktop usr/share/icons/hicolor/scalable/apps/mhascope.svg \
         usr/share/icons/hicolor/16x16/apps/mhascope.png usr/share/icons/hicolor/256x256/apps/mhascope.png \
         usr/share/man/man1/mhascope.1.gz usr/share/doc/mhascope/copyright usr/share/doc/mhascope/changelog.Debian.gz \
         usr/share/mhascope/assets/presets/default.json usr/share/mhascope/scripts/capture_attention.py \
         usr/share/mhascope/assets/practice/harness.py usr/share/mhascope/assets/practice/mha.starter.py; do
  [ -s "$ROOT/$f" ] || fail "package lacks $f"
done
[ -x "$ROOT/usr/share/mhascope/scripts/capture_attention.py" ] || fail "capture_attention.py is not executable"
grep -q '^Exec=mhascope$' "$ROOT/usr/share/applications/mhascope.desktop" || fail ".desktop Exec"
grep -q '^Icon=mhascope$' "$ROOT/usr/share/applications/mhascope.desktop" || fail ".desktop Icon"
if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$ROOT/usr/share/applications/mhascope.desktop"; fi
# The man page is the program's own --help: an option of each command must be in it.
man="$(zcat "$ROOT/usr/share/man/man1/mhascope.1.gz" | sed 's/\\-/-/g')"
grep -q '^\.TH MHASCOPE 1' <<<"$man" || fail "man page has no .TH header"
for opt in --screenshot --dump --batch-index --repeat --eval-every; do
  grep -q -- "$opt" <<<"$man" || fail "man page lacks $opt"
done
# PNG icons: the size in the folder name is the size in the file (IHDR width at byte 16).
for s in 16 32 48 64 128 256; do
  w=$(od -An -tu1 -j16 -N4 "$ROOT/usr/share/icons/hicolor/${s}x${s}/apps/mhascope.png" | awk '{print $1*16777216+$2*65536+$3*256+$4}')
  [ "$w" = "$s" ] || fail "icon ${s}x${s} is $w px wide"
done

# Assets relative to the binary: a preset that exists only inside the unpacked package.
cp "$ROOT/usr/share/mhascope/assets/presets/cat.json" "$ROOT/usr/share/mhascope/assets/presets/only_in_package.json"
bin="$ROOT/usr/bin/mhascope"
env -u MHASCOPE_ASSETS "$bin" info --preset only_in_package >"$TMP/info.txt" || fail "info --preset only_in_package"
grep -q 'weights' "$TMP/info.txt" || fail "info printed no stage table"
env -u MHASCOPE_ASSETS "$bin" export --preset only_in_package --stage weights --head all --out "$TMP/w.png" \
  || fail "export"
[ "$(head -c 4 "$TMP/w.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "export wrote no PNG"

# The window, from the package, under Xvfb (its own config folder so no session is touched).
# Under the sanitizers without leak checking, as the GUI scripts (tests/gui/gui_common.sh says why).
export XDG_CONFIG_HOME="$TMP/config"
env -u MHASCOPE_ASSETS ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" xvfb-run -a -s "-screen 0 1280x800x24" \
  "$bin" --fresh --preset only_in_package --size 1280x800 --screenshot "$TMP/window.png" >"$TMP/gui.log" 2>&1 \
  || { cat "$TMP/gui.log"; fail "window screenshot"; }
size=$(stat -c %s "$TMP/window.png")
[ "$size" -gt 20000 ] || fail "window screenshot is only $size bytes"
echo "info, export ($(stat -c %s "$TMP/w.png") bytes) and window screenshot ($size bytes) ran from the unpacked package"
echo "PASS in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s"
