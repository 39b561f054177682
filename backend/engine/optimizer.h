// SPDX-License-Identifier: Apache-2.0
// The worker's optimizer: AdamW with fp32 main parameters when the model runs in bf16/fp16 (Megatron's
// mixed-precision optimizer). The moments are allocated at the first step, which is the optimizer-init
// phase of the stream.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace rs::engine {

class MainParamAdamW {
public:
    // How a step runs (Auto picks the first that applies):
    // - OnePass: 16-bit CUDA parameters, our kernel (engine/adamw_main_params.h) reads each 16-bit
    //   gradient and writes main parameter, moments and 16-bit parameter in one pass;
    // - Buckets: gradients converted to fp32 a bucket at a time, torch's fused AdamW where it has one
    //   (else the same update op by op), then the 16-bit parameters copied from the main ones.
    enum class Path { Auto, OnePass, Buckets };

    explicit MainParamAdamW(
        const std::vector<std::pair<std::string, torch::Tensor>>& named, Path path = Path::Auto);

    bool initialized() const { return !exp_avg_.empty(); }
    // Whether this build and these parameters can take the one-pass kernel.
    bool onePassAvailable() const;
    // One step; the gradients are set to none afterwards, as zero_grad() does.
    void step();

    const std::vector<torch::Tensor>& mainParams() const { return main_; }

    static constexpr double kLr = 3e-4, kBeta1 = 0.9, kBeta2 = 0.95, kWeightDecay = 0.1, kEps = 1e-8;

private:
    void stepOnePass();
    void stepBuckets();

    static constexpr int64_t kBucketElements = int64_t(1) << 27; // 512 MiB of fp32 gradients
    Path path_;
    std::vector<torch::Tensor> params_, main_, exp_avg_, exp_avg_sq_, steps_;
    int64_t step_ = 0;
};

} // namespace rs::engine
