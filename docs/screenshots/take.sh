#!/usr/bin/env bash
# Re-takes the user guide's screenshots as a user sees the program (docs/user-guide.md, "Screenshots"):
# under Xvfb at SIZE (default 1366x768; check 1920x1080 too), a fresh HOME each time (a first start: the store
# is the guide's sample), the window saved by the studio itself (--screenshot, once it is up or once its launch
# is over). The launch page runs the tiny CPU recipe with the real worker ($RS_WORKER, default this build's
# recompute-bench) on two ranks, and a real-job sweep of the dense H200 fixture's Megatron-LM line with the
# repository's stand-in for Megatron (tests/launch/fake_megatron, which replays the real logs).
#   scripts/setup.sh shot && docs/screenshots/take.sh [OUT_DIR] [SIZE]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/screenshots}
size=${2:-1366x768}
build=${RS_BUILD:-build/ci}
studio=$PWD/$build/app/studio/recompute-studio
export RS_WORKER=${RS_WORKER:-$PWD/$build/app/bench/recompute-bench}
tmp=$(mktemp -d)
shot() { # shot FILE ARGS...
  local file=$1
  shift
  HOME=$(mktemp -d -p "$tmp") xvfb-run -a -s "-screen 0 ${size}x24" "$studio" --screenshot "$file" "$@"
}
shot "$out/start-page.png"
shot "$out/main-window.png" --page 0 --show-group Recompute docs/screenshots/demo.recipe.json
shot "$out/runs-and-tradeoff-chart.png" --page 1 docs/screenshots/demo.recipe.json
shot "$out/recipe-plan.png" --page 0 --plan h200-bf16 --plan-target 32 resources/presets/gpt-unfused.json
HOME=$(mktemp -d -p "$tmp") QT_QPA_PLATFORM=offscreen "$studio" --db "$tmp/shots.sqlite" --export-report "$out/report-page.png" \
  docs/screenshots/demo.recipe.json
shot "$out/launch-live-memory.png" --db "$tmp/launch.sqlite" --launch --ranks 2 docs/screenshots/tiny-cpu.recipe.json
# The dense fixture's own command line, the stand-in in torchrun's place.
fake=${RS_FAKE_MEGATRON:-$PWD/$build/tests/launch/fake_megatron}
echo "$fake $(head -n 1 tests/fixtures/logs/megatron-lm-h200/dense-none.log | sed 's/^# command: torchrun //')" \
  >"$tmp/command.txt"
RS_FAKE_MEGATRON_PACE=0.05 shot "$out/launch-job-sweep.png" --db "$tmp/job.sqlite" --command-line "$tmp/command.txt" \
  --job "core_attn full:uniform:1" --job-iters 6 --launch
rm -rf "$tmp"
echo "take.sh: $out/{start-page,main-window,runs-and-tradeoff-chart,recipe-plan,report-page,launch-live-memory,launch-job-sweep}.png at $size"
