#!/usr/bin/env bash
# The README's main command on a fresh root, for a person to look at: run inside the CI root as
#   RS_CI_OUT=DIR .ci/run .ci/studio-shot.sh [CMD...]
# (CMD, default scripts/run-studio.sh, is what starts the studio: e.g. RS_PRESET=ci scripts/run-studio.sh,
# whose build shares CI's ccache)
# it gives CMD a virtual display (xvfb-run at 1366x768, from `scripts/setup.sh shot`: run-studio.sh itself
# refuses to hide the window in one), waits for the window, then installs xwd (only now, so that it cannot
# stand in for a package setup.sh misses), saves the whole virtual screen to /out/studio.xwd and stops the
# studio. Exit status 0 when the studio was still running when the screenshot was taken.
set -euo pipefail
out=${RS_SHOT_OUT:-/out}
mkdir -p "$out"
find_studio() {
  for p in /proc/[0-9]*; do
    # (not comm: the kernel cuts it to 15 characters, "recompute-studi")
    exe=$(readlink "$p/exe" 2>/dev/null || true)
    if [ "${exe##*/}" = recompute-studio ]; then basename "$p"; fi
  done | head -n 1 || true
}
if [ $# -eq 0 ]; then set -- scripts/run-studio.sh; fi
scripts/setup.sh shot
xvfb-run -a -s "-screen 0 1366x768x24" "$@" >"$out/run-studio.log" 2>&1 &
runner=$!
studio=""
for _ in $(seq 1 3600); do
  studio=$(find_studio)
  [ -n "$studio" ] && break
  if ! kill -0 "$runner" 2>/dev/null; then
    tail -n 40 "$out/run-studio.log" >&2
    echo "studio-shot: '$*' ended before the window opened" >&2
    exit 1
  fi
  sleep 1
done
[ -n "$studio" ] || { echo "studio-shot: no recompute-studio after an hour" >&2; exit 1; }
echo "studio-shot: recompute-studio is running (pid $studio); waiting for its first paint"
sleep 15
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends x11-apps >/dev/null
display=$(tr '\0' '\n' <"/proc/$studio/environ" | sed -n 's/^DISPLAY=//p')
auth=$(tr '\0' '\n' <"/proc/$studio/environ" | sed -n 's/^XAUTHORITY=//p')
XAUTHORITY=$auth xwd -root -silent -display "$display" -out "$out/studio.xwd"
alive=0
kill -0 "$studio" 2>/dev/null && alive=1
kill "$studio" 2>/dev/null || true
wait "$runner" || true
tail -n 5 "$out/run-studio.log"
[ "$alive" -eq 1 ] || { echo "studio-shot: the studio had ended by the screenshot" >&2; exit 1; }
echo "studio-shot: $out/studio.xwd (display $display)"
