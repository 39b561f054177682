#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real Megatron-LM and the worker on the same flag lines, for lines that are a fixture run's flags with
# some flags added or replaced (a question about one Megatron-LM default at a time): each spec is
# NAME|FIXTURE|EXTRA FLAGS, the fixture's line from tests/fixtures/logs/megatron-lm-h200/FIXTURE.log with
# EXTRA appended (argparse keeps the last value of a repeated flag). Megatron-LM runs all at once (memory is
# per process; time is not compared here), with a CUDA memory snapshot when SNAP=1; the worker is built
# meanwhile and runs each line after them. Prints per spec: Megatron-LM's max allocated, the worker's peak
# and phase, what holds it (peak_attribution, activations by region: worker_peak.py) and, with SNAP=1,
# Megatron's live blocks at its peak by source line (snapshot_peak.py). Everything ends in
# $OUT/probe.tar.gz.
# A spec `wait` waits for the Megatron-LM runs started before it (the GPU's memory is shared: runs whose
# peaks add up to more than it must not run together).
# Usage: bench/gpu/megatron_lm/probe_flags.sh 'NAME|FIXTURE|EXTRA' [wait] ...
set -u
cd "$(dirname "$0")/../../.."
OUT=${OUT:-$PWD/out/probe_flags}
mkdir -p "$OUT/probe"
. bench/gpu/common.sh
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
fixtures=tests/fixtures/logs/megatron-lm-h200
mdir=${MEGATRON_DIR:-$PWD/.megatron}
SNAP=${SNAP:-0}
flags_of() { head -1 "$fixtures/$1.log" | sed 's/^# command: .*pretrain_gpt.py //'; }
(build_worker recompute-bench; echo built >"$OUT/built") &
builder=$!
port=29700
names=()
for spec in "$@"; do
  if [ "$spec" = wait ]; then
    for p in $(jobs -p); do [ "$p" = "$builder" ] || wait "$p"; done
    continue
  fi
  IFS='|' read -r name fixture extra <<<"$spec"
  names+=("$name")
  f="$(flags_of "$fixture") $extra"
  echo "$f" >"$OUT/probe/$name.flags"
  snap=()
  [ "$SNAP" = 1 ] && snap=(--record-memory-history --memory-snapshot-path "$OUT/probe/$name.pickle")
  # shellcheck disable=SC2086 # a flag line splits on whitespace, as the shell line did
  (cd "$mdir" && timeout 420 torchrun --nproc-per-node 1 --master-port $port pretrain_gpt.py $f "${snap[@]}") \
    >"$OUT/probe/$name.megatron.log" 2>&1 &
  port=$((port + 1))
  sleep 1
done
wait $builder
log "built: $(cat "$OUT/built" 2>/dev/null || echo FAILED)"
wait
log "megatron runs done"
BIN=build/gpu/app/bench/recompute-bench
for name in "${names[@]}"; do
  # shellcheck disable=SC2046
  timeout 200 "$BIN" --device cuda --warmup 2 --iters 4 --mlm-args $(cat "$OUT/probe/$name.flags") </dev/null \
    >"$OUT/probe/$name.worker.jsonl" 2>"$OUT/probe/$name.worker.err"
  log "worker $name rc=$?"
done
for name in "${names[@]}"; do
  echo "## $name: Megatron-LM max allocated $(grep -o 'max allocated: [0-9.]*' "$OUT/probe/$name.megatron.log" \
    | awk '{printf "%.3f GB\n", $3 * 1048576 / 1e9}' | sort -g | tail -1) ($(grep -c 'elapsed time per iteration' \
    "$OUT/probe/$name.megatron.log") iterations)"
  python3 bench/gpu/megatron_lm/worker_peak.py "$OUT/probe/$name.worker.jsonl"
  if [ -f "$OUT/probe/${name}_0.pickle" ]; then
    python3 bench/gpu/megatron_lm/snapshot_peak.py "$OUT/probe/${name}_0.pickle" --top 25
    rm -f "$OUT/probe/${name}_0.pickle"
  fi
done 2>&1 | tee "$OUT/probe/table.txt"
tar -C "$OUT" -czf "$OUT/probe.tar.gz" probe && rm -rf "$OUT/probe"
