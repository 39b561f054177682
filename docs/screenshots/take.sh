#!/usr/bin/env bash
# Re-takes the user guide's screenshots as a user sees the program (docs/user-guide.md, "Screenshots"):
# under Xvfb at SIZE (default 1366x768; check 1920x1080 too), a fresh HOME each time (so the store is the
# guide's sample, as on a first start), the screen grabbed with ImageMagick's import; the launch page runs
# the tiny CPU recipe with the real worker ($RS_WORKER, default this build's recompute-bench) on two ranks.
#   docs/screenshots/take.sh [OUT_DIR] [SIZE]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/screenshots}
size=${2:-1366x768}
build=${RS_BUILD:-build/ci}
studio=$build/app/studio/recompute-studio
export RS_WORKER=${RS_WORKER:-$PWD/$build/app/bench/recompute-bench}
wait_s=${SHOT_WAIT:-20} # a loaded machine needs this long for the first paint
shot() { # shot FILE ARGS...: the whole virtual screen once the studio is up
  local file=$1
  shift
  HOME=$(mktemp -d) xvfb-run -a -s "-screen 0 ${size}x24" bash -c '
    "$@" & pid=$!
    sleep '"$wait_s"'
    import -window root "'"$file"'"
    kill $pid' _ "$studio" "$@"
}
shot "$out/main-window.png" --page 0 --show-group Recompute docs/screenshots/demo.recipe.json
shot "$out/runs-and-tradeoff-chart.png" --page 1 docs/screenshots/demo.recipe.json
db=$(mktemp -d)
HOME=$(mktemp -d) "$studio" --db "$db/shots.sqlite" --export-report "$out/report-page.png" \
  docs/screenshots/demo.recipe.json
HOME=$(mktemp -d) xvfb-run -a -s "-screen 0 ${size}x24" "$studio" --db "$db/launch.sqlite" --launch --ranks 2 \
  --screenshot "$out/launch-live-memory.png" docs/screenshots/tiny-cpu.recipe.json
echo "take.sh: $out/{main-window,runs-and-tradeoff-chart,report-page,launch-live-memory}.png at $size"
