#!/usr/bin/env bash
# The README's main command: sets up, builds and starts Recompute Studio (extra arguments go to
# recompute-studio). It needs a display to show the window on; without one it says how to get one (or how
# to do the same work with the command line) and stops before installing or building anything: a window
# started inside a virtual display no one looks at is no window.
#   RS_PRESET=ci scripts/run-studio.sh    use (and build) another CMake preset's tree than build/dev
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${RS_PRESET:-dev}"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  cat >&2 <<'TEXT'
run-studio: no display (neither DISPLAY nor WAYLAND_DISPLAY is set), so there is nowhere to show the window.
  - From another machine: ssh -X (or -Y) into this one and run scripts/run-studio.sh again; or run it on
    the machine you sit at, with the runs on this one (the Launch page's Host: ssh or Slurm).
  - On this machine without a screen: a VNC or remote-desktop session gives it a display.
  - Or do the same work headless with the command line:
      scripts/setup.sh && scripts/build.sh dev recompute recompute-bench
      build/dev/app/cli/recompute --help      (validate, estimate, sweep, advise, import, report ...)
Nothing was installed or built.
TEXT
  exit 2
fi
scripts/setup.sh # the build and the GUI's packages only (the tests' are `scripts/setup.sh test`)
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"   # clones in other folders share cache hits
scripts/build.sh "$preset" recompute-studio recompute recompute-bench   # the programs, not the tests
export RS_WORKER="${RS_WORKER:-$PWD/build/$preset/app/bench/recompute-bench}"
exec "build/$preset/app/studio/recompute-studio" "$@"
