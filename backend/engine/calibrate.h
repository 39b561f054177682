// SPDX-License-Identifier: Apache-2.0
// The calibration (`recompute-bench --calibrate`): the rates this device reaches at one dtype, measured in a
// few seconds, as the typed record the step-time model reads (core/calibration.h). Matrix products at the
// sizes of transformer layers, causal fused attention forward and backward, grouped GEMM over experts, the
// bandwidth of an elementwise op, the host's cost of a kernel and of a checkpoint around a region, and a
// device-to-host read. Timed with CUDA events on a GPU (engine/torch_compat.h PhaseClock), the host's clock
// on the CPU, after warm-up, the median of several repeats.
#pragma once

#include <string>

#include "core/calibration.h"

namespace rs::engine {

struct CalibrateOptions {
    std::string device = "auto"; // auto | cpu | cuda | cuda:N
    std::string dtype = "bf16"; // bf16 | fp16 | fp32
    // Small shapes (the CPU's default): a record in well under a second, for tests; its rates are the
    // device's at those shapes.
    bool quick = false;
    std::string command; // the command line, written as the record's source
};

// Throws std::invalid_argument naming the option for an unknown device or dtype.
CalibrationRates calibrate(const CalibrateOptions& options);

} // namespace rs::engine
