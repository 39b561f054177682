// SPDX-License-Identifier: Apache-2.0
// A calibration record: the rates one device reaches at one dtype, measured once by the worker
// (`recompute-bench --calibrate`, engine/calibrate.h) and read by the step-time model (step_time.h). Plain
// values and their JSON; the model turns work into time with them. A record says where it comes from
// (`source`) and whether it was measured on the device it names: a `provisional` record is not a
// measurement and every prediction made from it says so.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rs {

inline constexpr const char* kCalibrationKind = "recompute-calibration";
inline constexpr int kCalibrationVersion = 1;

// One timed matrix product [m, k] x [k, n] (or, for a grouped GEMM, `groups` of them over m rows in all).
struct GemmRate {
    int64_t m = 0, n = 0, k = 0;
    int64_t groups = 1; // grouped GEMM: the experts; their rows sum to m
    double tflops = 0;
    double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

struct CalibrationRates {
    std::string device; // "NVIDIA H100 80GB HBM3", "cpu"
    std::string dtype; // bf16 | fp16 | fp32
    std::string torch_version; // the LibTorch that measured it
    std::string measured_at; // ISO 8601 UTC
    std::string source; // the command that wrote it, or where a provisional record's figures come from
    bool provisional = false; // not measured on `device`: its predictions are not measurements
    std::vector<GemmRate> matmul; // by size, increasing
    std::vector<GemmRate> grouped_gemm; // by size, increasing
    // FP8 products with per-tensor scales (E4M3 x E4M3 to bf16: at::_scaled_mm, cuBLASLt's FP8 GEMM, as
    // Transformer Engine's) at the dense sizes; empty: not measured (no FP8 GEMM on the device, or a record
    // from before it was measured).
    std::vector<GemmRate> fp8_matmul;
    // Causal fused attention (SDPA; flash where the device has it): FLOPs of the unmasked half over time.
    double attention_fwd_tflops = 0;
    double attention_bwd_tflops = 0; // the backward's FLOPs: 2.5 x the forward's (five products to two)
    double elementwise_gbps = 0; // a large out-of-place add: bytes read and written over time
    // Unfused attention as Megatron Core's local DotProductAttention runs it (attention_backend unfused, or
    // the local spec): QK^T by baddbmm, the causal mask filled in, the softmax over each row, PV, at 16 heads
    // of 128 over a 4096-token sequence; billions of score elements (b x heads x s^2) per second, forward and
    // backward. Its score-sized passes run well below the out-of-place add's bandwidth, so they are measured
    // as one chain, as fused attention is. 0: not in the record (written before this was measured).
    double unfused_attention_fwd_gscores = 0;
    double unfused_attention_bwd_gscores = 0;
    // Dropout over the scores (attention_dropout > 0 on that path), the same units; 0: not in the record.
    double score_dropout_fwd_gscores = 0;
    double score_dropout_bwd_gscores = 0;
    // The main_grad accumulation's own op: an fp32 buffer added to in place from a 16-bit gradient
    // (main_grad.add_(grad)), bytes read and written over time. Mixed dtypes take PyTorch's slower
    // non-vectorised kernel, well below the out-of-place add. 0: not in the record (the add's rate is used).
    double accumulate_gbps = 0;
    double kernel_launch_us = 0; // host time per small kernel, queued back to back (the framework's cost)
    double checkpoint_us = 0; // host time a checkpoint adds around its region, forward and replay
    // One device-to-host read of a small tensor after an idle queue. Recorded, not yet a term of the model:
    // the MoE dispatcher's read-back is modelled as the queue draining each layer (step_time.cpp runStretch).
    double host_sync_us = 0;
};

// A record that does not read: names the field and what is allowed.
class CalibrationError : public std::runtime_error {
public:
    CalibrationError(std::string field, const std::string& message)
        : std::runtime_error(field + ": " + message)
        , field_(std::move(field))
    {
    }
    const std::string& field() const { return field_; }

private:
    std::string field_;
};

nlohmann::json calibrationToJson(const CalibrationRates& c);
// Throws CalibrationError naming the field (missing, of the wrong type, not positive, an unknown kind or
// version).
CalibrationRates calibrationFromJson(const nlohmann::json& j);
// Reads a file; CalibrationError with field "file" when it cannot be read or is not JSON.
CalibrationRates readCalibrationFile(const std::string& path);

// Orders measured products by size (FLOPs), increasing, as gemmRateAt reads them; equal sizes keep their
// order.
void sortByFlops(std::vector<GemmRate>& rates);

// The rate of a product of this size: interpolated in log(FLOPs) between the measured ones, the nearest
// at either end. TFLOP/s.
double gemmRateAt(const std::vector<GemmRate>& measured, double flops);

} // namespace rs
