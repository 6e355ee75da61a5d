#!/usr/bin/env bash
# Sets everything up, then launches the mhascope window (arguments are passed on).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
exec "$ROOT/build/app/mhascope" "$@"
