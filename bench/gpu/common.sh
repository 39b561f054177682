# SPDX-License-Identifier: Apache-2.0
# Shared by the GPU host scripts (run_h200.sh, run_ranks.sh): sourced from the repository root with OUT set.
# log TEXT: a timestamped line on the console and in $OUT/run.log.
# build_worker TARGET...: configures build/gpu against the PyTorch wheel's LibTorch (CUDA sm_90, NCCL from
#   the wheel, nlohmann/json from .deps/include when the host lacks it) and builds the targets; on failure
#   prints the errors and exits.
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/run.log"; }

build_worker() {
    local torch_prefix nlohmann=()
    torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
    [ -f .deps/include/nlohmann/json.hpp ] && nlohmann=(-DRS_NLOHMANN_INCLUDE_DIR="$PWD/.deps/include")
    if ! { cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_GUI=OFF -DRS_BUILD_TESTS=OFF \
            "${nlohmann[@]}" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$torch_prefix" &&
           cmake --build build/gpu --target "$@" -j"$(nproc)"; } >"$OUT/build.log" 2>&1; then
        grep -E "error|Error" "$OUT/build.log" | head -40
        tail -20 "$OUT/build.log"
        exit 1
    fi
}
