// SPDX-License-Identifier: Apache-2.0
#include "engine/optimizer.h"

#include <cmath>
#include <numeric>
#include <stdexcept>

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "engine/checkpoint.h"
#include "engine/memory_probe.h"
#include "engine/model.h"
#include "engine/torch_compat.h"
#ifdef RS_ENGINE_CUDA_KERNELS
#include "engine/adamw_main_params.h"
#endif

namespace rs::engine {

namespace {

int64_t roundUp(int64_t n, int64_t multiple)
{
    return (n + multiple - 1) / multiple * multiple;
}

// Megatron's grad-accumulation hook on each parameter's grad accumulator: the gradient autograd just
// accumulated is added into the parameter's main_grad and the parameter's .grad is set to none.
struct MainGradPostHook : torch::autograd::FunctionPostHook {
    MainGradPostHook(torch::Tensor p, torch::Tensor g)
        : param(std::move(p))
        , main_grad(std::move(g))
    {
    }
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
        const torch::autograd::variable_list& /*inputs*/) override
    {
        const auto grad = param.grad();
        if (grad.defined()) {
            torch::NoGradGuard no_grad;
            main_grad.add_(grad.view_as(main_grad));
            param.mutable_grad() = torch::Tensor();
        }
        return outputs;
    }
    torch::Tensor param, main_grad;
};

} // namespace

struct GradHooks {
    std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
};

TrainingLayout trainingLayout(const Recipe& r, torch::Dtype param_dtype, int rank, int world)
{
    TrainingLayout t;
    t.data_parallel_size = world > 1 ? world : std::max(1, r.data_parallel_size);
    t.shard_ranks = world > 1 ? world : t.data_parallel_size * std::max(1, r.context_parallel_size);
    t.shard = world > 1 ? rank : 0;
    t.distributed_optimizer = r.use_distributed_optimizer;
    t.grad_dtype = r.grad_reduce_in_fp32 ? torch::kFloat32 : param_dtype;
    t.torch_adam = r.adam_implementation == "torch";
    t.precision_aware = r.use_precision_aware_optimizer;
    if (r.global_batch_size && world > 1 && *r.global_batch_size < int64_t(r.micro_batch_size) * world) {
        // The worker's own ranks replicate a recipe written for fewer: at least one micro-batch each.
        t.micro_batches = 1;
    } else if (r.global_batch_size) {
        const int64_t per_step = int64_t(r.micro_batch_size) * t.data_parallel_size;
        if (*r.global_batch_size <= 0 || *r.global_batch_size % per_step != 0)
            throw EngineError("global_batch_size",
                "global_batch_size " + std::to_string(*r.global_batch_size)
                    + " is not a multiple of micro_batch_size x data-parallel size ("
                    + std::to_string(per_step) + ")");
        t.micro_batches = static_cast<int>(*r.global_batch_size / per_step);
    }
    return t;
}

GradBuffer::GradBuffer(const std::vector<std::pair<std::string, torch::Tensor>>& named, torch::Dtype dtype,
    bool distributed_optimizer, int shard_ranks)
    : hooks_(std::make_unique<GradHooks>())
{
    for (auto it = named.rbegin(); it != named.rend(); ++it)
        params_.push_back(it->second);
    int64_t end = 0;
    for (const auto& p : params_) {
        if (distributed_optimizer)
            end = roundUp(end, 64);
        starts_.push_back(end);
        end += p.numel();
    }
    if (distributed_optimizer)
        end = roundUp(end, std::lcm(int64_t(std::max(1, shard_ranks)), int64_t(128)));
    {
        MemoryRegion region(MemoryCategory::GradientBuffer);
        data_ = torch::zeros({ end }, torch::TensorOptions().dtype(dtype).device(params_.front().device()));
    }
    for (size_t i = 0; i < params_.size(); ++i) {
        const auto& p = params_[i];
        auto main_grad = data_.narrow(0, starts_[i], p.numel()).view(p.sizes());
        main_grads_.push_back(main_grad);
        registerMainGrad(p, main_grad);
        auto acc = torch::autograd::impl::grad_accumulator(p);
        acc->add_post_hook(std::make_unique<MainGradPostHook>(p, main_grad));
        hooks_->accumulators.push_back(std::move(acc));
    }
}

GradBuffer::~GradBuffer()
{
    for (const auto& p : params_)
        registerMainGrad(p, torch::Tensor());
}

void GradBuffer::zero()
{
    torch::NoGradGuard no_grad;
    data_.zero_();
}

MainParamAdamW::MainParamAdamW(const GradBuffer& buffer, const TrainingLayout& layout, Path path)
    : path_(path != Path::Auto       ? path
            : layout.torch_adam      ? Path::Foreach
            : layout.precision_aware ? Path::Auto
                                     : Path::Buckets)
{
    torch::NoGradGuard no_grad;
    const int64_t total = buffer.data().numel();
    int64_t lo = 0, hi = total;
    if (layout.distributed_optimizer) {
        const int64_t shard = total / std::max(1, layout.shard_ranks);
        lo = shard * layout.shard;
        hi = lo + shard;
    }
    shard_elements_ = hi - lo;
    MemoryRegion region(MemoryCategory::MainParameters);
    const auto& params = buffer.params();
    for (size_t i = 0; i < params.size(); ++i) {
        const int64_t start = buffer.starts()[i], end = start + params[i].numel();
        const int64_t first = std::max(start, lo), last = std::min(end, hi);
        if (first >= last)
            continue;
        auto piece = params[i].detach().view({ -1 }).narrow(0, first - start, last - first);
        pieces_.push_back(piece);
        grads_.push_back(buffer.data().narrow(0, first, last - first));
        // fp32 parameters are their own main parameters (Megatron's FP32Optimizer).
        main_.push_back(piece.scalar_type() == torch::kFloat32 ? piece : piece.to(torch::kFloat32));
    }
    if (path_ == Path::OnePass && !onePassAvailable())
        throw std::invalid_argument("optimizer: the one-pass AdamW needs a build with CUDA kernels, "
                                    "contiguous bf16/fp16 CUDA parameters and a gradient buffer of their "
                                    "dtype");
}

MainParamAdamW::MainParamAdamW(const std::vector<std::pair<std::string, torch::Tensor>>& named, Path path)
    : path_(path)
    , from_param_grads_(true)
{
    torch::NoGradGuard no_grad;
    MemoryRegion region(MemoryCategory::MainParameters);
    for (const auto& [name, p] : named) {
        params_.push_back(p);
        pieces_.push_back(p.detach());
        grads_.push_back(torch::Tensor());
        main_.push_back(p.scalar_type() == torch::kFloat32 ? p.detach() : p.detach().to(torch::kFloat32));
        shard_elements_ += p.numel();
    }
    if (path_ == Path::OnePass && !onePassAvailable())
        throw std::invalid_argument("optimizer: the one-pass AdamW needs a build with CUDA kernels and "
                                    "contiguous bf16/fp16 CUDA parameters");
}

bool MainParamAdamW::onePassAvailable() const
{
#ifdef RS_ENGINE_CUDA_KERNELS
    if (pieces_.empty() || !pieces_.front().is_cuda())
        return false;
    const auto half = pieces_.front().scalar_type();
    if (half != torch::kBFloat16 && half != torch::kHalf)
        return false;
    for (size_t i = 0; i < pieces_.size(); ++i)
        if (pieces_[i].scalar_type() != half || (!from_param_grads_ && grads_[i].scalar_type() != half)
            || !pieces_[i].is_contiguous() || !main_[i].is_contiguous())
            return false;
    return true;
#else
    return false;
#endif
}

bool MainParamAdamW::usesOnePass() const
{
    return path_ == Path::OnePass || (path_ == Path::Auto && onePassAvailable());
}

void MainParamAdamW::step()
{
    torch::NoGradGuard no_grad;
    const bool one_pass = usesOnePass();
    {
        MemoryRegion region(MemoryCategory::Workspace);
        if (from_param_grads_) {
            for (size_t i = 0; i < params_.size(); ++i) {
                const auto g = params_[i].grad();
                grads_[i] = g.defined()
                    ? g.to(one_pass ? params_[i].scalar_type() : torch::kFloat32).contiguous()
                    : (one_pass ? torch::Tensor() : torch::zeros_like(main_[i]));
            }
        }
        // Megatron's prepare_grads (_copy_model_grads_to_main_grads): every piece's gradient in fp32, one
        // copy after another, kept until zeroGrad(); an fp32 gradient is its own (`.float()` returns the
        // tensor itself). The one-pass kernel reads the 16-bit gradients in place (decoupled_grad).
        main_grads_.clear();
        if (!one_pass)
            for (const auto& g : grads_)
                main_grads_.push_back(g.scalar_type() == torch::kFloat32 ? g : g.to(torch::kFloat32));
    }
    if (!initialized()) {
        // Adam's state appears inside the first step, after the gradients (torch.optim / FusedAdam create
        // it lazily).
        MemoryRegion region(MemoryCategory::OptimizerStates);
        for (const auto& m : main_) {
            exp_avg_.push_back(torch::zeros_like(m));
            exp_avg_sq_.push_back(torch::zeros_like(m));
            steps_.push_back(torch::zeros({}, m.options()));
        }
    }
    MemoryRegion region(MemoryCategory::Workspace);
    ++step_;
    if (path_ == Path::Foreach)
        stepForeach();
    else if (one_pass)
        stepOnePass();
    else
        stepBuckets();
    if (from_param_grads_) {
        main_grads_.clear();
        for (size_t i = 0; i < params_.size(); ++i) {
            grads_[i] = torch::Tensor();
            params_[i].mutable_grad() = torch::Tensor(); // set to none, as zero_grad() does
        }
    }
}

void MainParamAdamW::zeroGrad()
{
    main_grads_.clear();
}

void MainParamAdamW::stepOnePass()
{
#ifdef RS_ENGINE_CUDA_KERNELS
    const auto half = pieces_.front().scalar_type();
    std::vector<kernels::AdamWMainParamTensor> tensors;
    for (size_t i = 0; i < pieces_.size(); ++i) {
        kernels::AdamWMainParamTensor t;
        t.main = main_[i].data_ptr<float>();
        t.exp_avg = exp_avg_[i].data_ptr<float>();
        t.exp_avg_sq = exp_avg_sq_[i].data_ptr<float>();
        t.grad = grads_[i].defined() ? grads_[i].data_ptr() : nullptr;
        t.param = pieces_[i].data_ptr();
        t.numel = pieces_[i].numel();
        tensors.push_back(t);
    }
    kernels::AdamWHyper h;
    h.lr = static_cast<float>(kLr);
    h.beta1 = static_cast<float>(kBeta1);
    h.beta2 = static_cast<float>(kBeta2);
    h.weight_decay = static_cast<float>(kWeightDecay);
    h.eps = static_cast<float>(kEps);
    h.bias_correction1 = static_cast<float>(1 - std::pow(kBeta1, step_));
    h.bias_correction2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(kBeta2, step_)));
    const std::string error = kernels::adamwMainParams(tensors.data(), static_cast<int>(tensors.size()),
        half == torch::kBFloat16 ? kernels::HalfKind::BFloat16 : kernels::HalfKind::Float16, h,
        compat::currentCudaStream());
    if (!error.empty())
        throw std::runtime_error("optimizer step (one-pass AdamW): " + error);
#endif
}

void MainParamAdamW::stepForeach()
{
    // torch.optim.AdamW's multi-tensor path (foreach=True, what Megatron runs without Transformer Engine
    // and Apex), op for op: moments and decay in place, then the square root of every second moment at
    // once: a temporary as large as the main parameters, alive until the update is applied.
    auto& grads = main_grads_;
    const double bc1 = 1 - std::pow(kBeta1, step_), bc2 = 1 - std::pow(kBeta2, step_);
    at::_foreach_mul_(main_, 1 - kLr * kWeightDecay);
    at::_foreach_mul_(exp_avg_, kBeta1);
    at::_foreach_add_(exp_avg_, grads, 1 - kBeta1);
    at::_foreach_mul_(exp_avg_sq_, kBeta2);
    at::_foreach_addcmul_(exp_avg_sq_, grads, grads, 1 - kBeta2);
    {
        std::vector<torch::Tensor> denom = at::_foreach_sqrt(exp_avg_sq_);
        at::_foreach_div_(denom, std::sqrt(bc2));
        at::_foreach_add_(denom, kEps);
        at::_foreach_addcdiv_(main_, exp_avg_, denom, -kLr / bc1);
    }
    for (size_t i = 0; i < main_.size(); ++i)
        if (!pieces_[i].is_same(main_[i]))
            pieces_[i].copy_(main_[i]);
}

void MainParamAdamW::stepBuckets()
{
    // The main gradients in fp32 (step() made them): the buffer's own views when it is fp32, else fp32
    // copies of every piece (Megatron's _copy_model_grads_to_main_grads).
    auto& grads = main_grads_;
    if (!compat::fusedAdamW(
            main_, grads, exp_avg_, exp_avg_sq_, steps_, kLr, kBeta1, kBeta2, kWeightDecay, kEps)) {
        const double bc1 = 1 - std::pow(kBeta1, step_), bc2 = 1 - std::pow(kBeta2, step_);
        for (size_t i = 0; i < main_.size(); ++i) {
            main_[i].mul_(1 - kLr * kWeightDecay);
            exp_avg_[i].mul_(kBeta1).add_(grads[i], 1 - kBeta1);
            exp_avg_sq_[i].mul_(kBeta2).addcmul_(grads[i], grads[i], 1 - kBeta2);
            auto denom = (exp_avg_sq_[i].sqrt() / std::sqrt(bc2)).add_(kEps);
            main_[i].addcdiv_(exp_avg_[i], denom, -kLr / bc1);
        }
    }
    for (size_t i = 0; i < main_.size(); ++i)
        if (!pieces_[i].is_same(main_[i]))
            pieces_[i].copy_(main_[i]);
}

} // namespace rs::engine
