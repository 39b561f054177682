// SPDX-License-Identifier: Apache-2.0
// Megatron's training memory layout around the layers:
// - GradBuffer: DDP's contiguous gradient buffer (param_and_grad_buffer.py), allocated once for the
//   whole run in the recipe's main-gradient dtype; every parameter's main_grad is a view of it, and
//   each backward adds the parameter's gradient into it and frees the gradient at once (the grad
//   accumulator's hook), so micro-batches accumulate there;
// - MainParamAdamW: AdamW over fp32 main parameters when the model runs in bf16/fp16 (Megatron's
//   mixed-precision optimizer), over this rank's 1/DP shard of the buffer under the distributed optimizer
//   (distrib_optimizer.py: main parameters and moments of the shard only; the buffer stays whole). The
//   main parameters are made when the optimizer is; the moments at its first step, which is the
//   optimizer-init phase of the stream. For a 16-bit gradient buffer each step first copies the rank's
//   gradients (its shard under the distributed optimizer) to fp32, as Megatron's prepare_grads does
//   (_copy_model_grads_to_main_grads: main_param.grad = main_grad.float()), and keeps the copies until the
//   next zeroGrad(), where Megatron's optimizer.zero_grad(set_to_none=True) drops them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/recipe.h"

namespace rs::engine {

// How the recipe's job lays out one rank's training memory.
struct TrainingLayout {
    int micro_batches = 1; // global_batch_size / (micro_batch_size x data-parallel size)
    int data_parallel_size = 1; // the data-parallel replicas (micro-batches per step, the stream's report)
    // The ranks the distributed optimizer shards over: DP x CP, Megatron's intra_dp_cp group
    // (distributed_data_parallel.py, optimizer/__init__.py: context-parallel ranks hold the same parameters).
    int shard_ranks = 1;
    int shard = 0; // this rank's shard
    bool distributed_optimizer = false;
    torch::Dtype grad_dtype = torch::kFloat32; // the buffer's: fp32 under grad_reduce_in_fp32
    bool torch_adam = false; // recipe adam_implementation "torch": the step runs as torch.optim.AdamW's
    // recipe use_precision_aware_optimizer under the distributed optimizer (Megatron refuses it without):
    // the step reads the 16-bit gradients where they are (Megatron's decoupled_grad), no fp32 copies,
    // one pass over each element (our kernel on CUDA, a host loop on CPU); the moments in
    // exp_avg(_sq)_dtype and, with bf16 parameters, fp32 main_params_dtype and store_param_remainders
    // (and no fp8 other than delayed scaling, which keeps Megatron's own fp32 copy), the master weights as
    // int16 remainders: Transformer Engine's FusedAdam as Megatron Core configures it
    // (distrib_optimizer.py, optimizer_config.py).
    bool precision_aware = false;
    torch::Dtype exp_avg_dtype = torch::kFloat32;
    torch::Dtype exp_avg_sq_dtype = torch::kFloat32;
    bool master_remainders = false;
};

// `world` > 1: the worker's own ranks are the data-parallel ones; else the recipe's data_parallel_size
// (one rank of the user's job). Throws EngineError when global_batch_size does not divide, and for the
// precision-aware optimizer's dtypes the worker does not keep (fp8 moments, fp16 main parameters).
TrainingLayout trainingLayout(const Recipe& resolved, torch::Dtype param_dtype, int rank, int world);

struct GradHooks;

class GradBuffer {
public:
    // Megatron's layout: the parameters in reverse order, one bucket (overlap_grad_reduce off); under the
    // distributed optimizer each parameter starts at a multiple of 64 elements and the end is padded to a
    // multiple of lcm(DP x CP, 128).
    GradBuffer(const std::vector<std::pair<std::string, torch::Tensor>>& named, torch::Dtype dtype,
        bool distributed_optimizer, int shard_ranks);
    ~GradBuffer();
    GradBuffer(const GradBuffer&) = delete;
    GradBuffer& operator=(const GradBuffer&) = delete;

    void zero(); // zero_grad_buffer(), at the start of every step
    const torch::Tensor& data() const { return data_; }
    const std::vector<torch::Tensor>& params() const { return params_; }
    const std::vector<torch::Tensor>& mainGrads() const { return main_grads_; }
    // Where each parameter (in params() order) starts in data().
    const std::vector<int64_t>& starts() const { return starts_; }

private:
    torch::Tensor data_;
    std::vector<torch::Tensor> params_, main_grads_;
    std::vector<int64_t> starts_;
    std::unique_ptr<GradHooks> hooks_;
};

class MainParamAdamW {
public:
    // How a step runs (Auto: Foreach for adam_implementation "torch"; with the precision-aware optimizer
    // OnePass where it applies, else HostLoop; else Buckets):
    // - OnePass: 16-bit CUDA parameters and a 16-bit gradient buffer, our kernel
    //   (engine/adamw_main_params.h) reads each 16-bit gradient and writes main parameter, moments and
    //   16-bit parameter in one pass, with no fp32 gradient (Megatron's precision-aware optimizer);
    // - Buckets: fp32 gradients (the buffer's own views when it is fp32, else fp32 copies of the whole
    //   shard, as Megatron's _copy_model_grads_to_main_grads makes them), torch's fused AdamW where it has
    //   one (else the same update op by op), then the 16-bit parameters copied from the main ones: what
    //   Megatron's FusedAdam (Transformer Engine / Apex) step does;
    // - Foreach: the same fp32 gradients, torch.optim.AdamW's multi-tensor update op for op;
    // - HostLoop: what OnePass does, element by element on the host (CPU tensors), with no temporary.
    // Buckets and Foreach need fp32 moments and master weights.
    enum class Path { Auto, OnePass, Buckets, Foreach, HostLoop };

    MainParamAdamW(const GradBuffer& buffer, const TrainingLayout& layout, Path path = Path::Auto);
    // Without a buffer: each step reads the parameters' own .grad (none: zero) and sets it to none after
    // (bench_optimizer's path comparison).
    explicit MainParamAdamW(
        const std::vector<std::pair<std::string, torch::Tensor>>& named, Path path = Path::Auto);

    bool initialized() const { return !exp_avg_.empty(); }
    // Whether this build and these parameters can take the one-pass kernel.
    bool onePassAvailable() const;
    // Whether step() runs the one-pass kernel (and so makes no fp32 gradient copies).
    bool usesOnePass() const;
    void step();
    // Megatron's optimizer.zero_grad(set_to_none=True) at the start of every train step: drops the fp32
    // gradient copies the last step made.
    void zeroGrad();

    // One entry per piece: a parameter's part inside this rank's shard (the whole parameter without the
    // distributed optimizer); int16 remainders under TrainingLayout::master_remainders.
    const std::vector<torch::Tensor>& mainParams() const { return main_; }
    // The pieces of the model parameters (views) that this rank updates.
    const std::vector<torch::Tensor>& modelPieces() const { return pieces_; }
    const std::vector<torch::Tensor>& gradPieces() const { return grads_; }
    // The fp32 gradients the last step read (main_param.grad): copies for a 16-bit buffer, the buffer's own
    // views for an fp32 one; empty after zeroGrad() and with the one-pass kernel.
    const std::vector<torch::Tensor>& mainGrads() const { return main_grads_; }
    int64_t shardElements() const { return shard_elements_; }

    static constexpr double kLr = 3e-4, kBeta1 = 0.9, kBeta2 = 0.95, kWeightDecay = 0.1, kEps = 1e-8;

private:
    void stepOnePass();
    void stepBuckets();
    void stepForeach();
    void stepHostLoop();
    // Which path step() takes (Auto resolved).
    Path resolvedPath() const;

    Path path_;
    bool aware_ = false; // the precision-aware optimizer: no fp32 gradient copies
    bool remainders_ = false;
    torch::Dtype exp_avg_dtype_ = torch::kFloat32, exp_avg_sq_dtype_ = torch::kFloat32;
    bool from_param_grads_ = false;
    std::vector<torch::Tensor> params_; // from_param_grads_ only
    std::vector<torch::Tensor> pieces_, grads_, main_, exp_avg_, exp_avg_sq_, steps_;
    std::vector<torch::Tensor> main_grads_; // fp32, one per piece, from the step to zeroGrad()
    int64_t step_ = 0;
    int64_t shard_elements_ = 0;
};

} // namespace rs::engine
