#!/usr/bin/env bash
# A real-job sweep on one GPU (issue 15): `recompute sweep --job` runs Megatron-LM's own pretrain_gpt.py
# (MEGATRON_DIR, default .megatron: profile main, d98e8a64) once per recompute choice: the control
# (recompute off) first, then core_attn, full uniform 1 and full block 4, each written into the command in
# Megatron-LM's spelling with --train-iters N --log-interval 1 --log-memory-interval 1; every run's output
# is read as it streams, imported, linked to the control, compared with intervals (median, Δ vs the control,
# "not significant") and chosen; the estimate is printed beside each measured peak (calibration).
# The shape is the fixtures' dense one (bench/gpu/megatron_lm/run_fixtures.sh, 8 layers, hidden 2048,
# seq 4096): its peaks are 23.1 GB (none), 13.6 (core_attn), 11.8 (full uniform 1), 16.6 (full block 4), so
# the 14 GB target leaves core_attn and full uniform 1 to the step-time comparison.
#
# The `recompute` CLI needs Qt 6 (Core, Sql and its SQLite driver), which a GPU host built with
# RS_BUILD_GUI=OFF lacks. On the dev machine, `bench/gpu/megatron_lm/job_sweep.sh bundle` copies the built
# CLI (build/ci or build/dev) with its Qt libraries into .deps/recompute-cli (about 50 MiB: under the 64 MiB carry); carry that
# folder to the GPU host. RECOMPUTE=path overrides.
# Usage: bench/gpu/megatron_lm/job_sweep.sh [bundle]
#   env: OUT (default /tmp/job-sweep), ITERS (10), REPEATS (1), REPEATS_MAX (2), TARGET_GB (14),
#        MODULES ("core_attn full:uniform:1 full:block:4")
set -uo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
bundle="$root/.deps/recompute-cli"

if [ "${1:-}" = bundle ]; then
  cli=""
  for c in build/ci/app/cli/recompute build/dev/app/cli/recompute; do [ -x "$c" ] && cli=$c && break; done
  [ -n "$cli" ] || { echo "no built recompute CLI (cmake --build --preset ci --target recompute)"; exit 1; }
  rm -rf "$bundle" && mkdir -p "$bundle/lib" "$bundle/plugins/sqldrivers"
  cp "$cli" "$bundle/recompute"
  # Qt and what Qt needs beyond glibc (ICU, double-conversion, pcre2, zstd, ...).
  ldd "$cli" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' |
    while read -r l; do cp -L "$l" "$bundle/lib/"; done
  plugdir=$(dirname "$(ldd "$cli" | awk '/libQt6Core/{print $3}')")/qt6/plugins/sqldrivers
  cp -L "$plugdir/libqsqlite.so" "$bundle/plugins/sqldrivers/" 2>/dev/null ||
    cp -L /usr/lib/x86_64-linux-gnu/qt6/plugins/sqldrivers/libqsqlite.so "$bundle/plugins/sqldrivers/"
  ldd "$bundle/plugins/sqldrivers/libqsqlite.so" | awk '/=> \//{print $3}' | grep -E 'sqlite' |
    while read -r l; do cp -L "$l" "$bundle/lib/"; done
  strip --strip-unneeded "$bundle/recompute" "$bundle"/lib/*.so* "$bundle"/plugins/sqldrivers/*.so 2>/dev/null
  du -sh "$bundle"
  exit 0
fi

mdir="${MEGATRON_DIR:-$root/.megatron}"
out="${OUT:-/tmp/job-sweep}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
if [ -n "${RECOMPUTE:-}" ]; then
  cli=$RECOMPUTE
elif [ -x "$bundle/recompute" ]; then
  cli="$bundle/recompute"
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" QT_PLUGIN_PATH="$bundle/plugins"
else
  cli=$(command -v recompute || true)
fi
[ -n "$cli" ] && "$cli" --help >/dev/null 2>&1 || {
  echo "no runnable recompute CLI: run '$0 bundle' on the dev machine and carry .deps/recompute-cli"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
make -C "$mdir/megatron/core/datasets" >/dev/null 2>&1 || echo "datasets helpers: make failed (Megatron compiles them at start)"

# The user's job: the fixtures' dense command, recompute off (the sweep writes each choice into it).
job=(torchrun --standalone --nproc-per-node 1 pretrain_gpt.py --mock-data --tokenizer-type NullTokenizer
  --vocab-size 32000 --transformer-impl local --no-persist-layer-norm --no-masked-softmax-fusion
  --no-bias-dropout-fusion --no-gradient-accumulation-fusion --no-rope-fusion --lr 1e-4 --min-lr 1e-5
  --lr-decay-style constant --bf16 --eval-iters 0 --eval-interval 100000 --seed 1234 --log-throughput
  --num-layers 8 --hidden-size 2048 --num-attention-heads 16 --seq-length 4096
  --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 4)
# shellcheck disable=SC2206 # MODULES splits on whitespace on purpose
modules=(${MODULES:-core_attn full:uniform:1 full:block:4})
start=$(date +%s)
# pretrain_gpt.py is found from Megatron-LM's folder, as run_fixtures.sh runs it.
(cd "$mdir" && timeout 570 "$cli" sweep --job --db "$out/jobs.sqlite" --job-log-dir "$out/logs" \
   --target-gb "${TARGET_GB:-14}" --job-iters "${ITERS:-10}" --repeats "${REPEATS:-1}" \
   --repeats-max "${REPEATS_MAX:-2}" --interval-target 2 --modules "${modules[@]}" \
   --profile main --mlm-args "${job[@]}") >"$out/sweep.txt" 2>"$out/sweep.err"
rc=$?
echo "sweep rc=$rc in $(( $(date +%s) - start )) s" | tee -a "$out/sweep.txt"
grep -vE 'iteration +[0-9]+/' "$out/sweep.err" | tail -40
cat "$out/sweep.txt"
tar -C "$out" -czf "$out/job-sweep.tar.gz" logs jobs.sqlite sweep.txt sweep.err gpu.txt && rm -rf "$out/logs"
