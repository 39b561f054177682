#!/usr/bin/env bash
# The README's main command: sets up, builds and starts Recompute Studio. With no display it starts
# one (Xvfb) and says so. Extra arguments go to recompute-studio.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"   # clones in other folders share cache hits
scripts/build.sh dev recompute-studio recompute recompute-bench   # the programs, not the tests
studio=build/dev/app/studio/recompute-studio
export RS_WORKER="${RS_WORKER:-$PWD/build/dev/app/bench/recompute-bench}"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "run-studio: no display; starting Recompute Studio on a virtual X display (xvfb-run)" >&2
  exec xvfb-run -a -s "-screen 0 1600x1000x24" "$studio" "$@"
fi
exec "$studio" "$@"
