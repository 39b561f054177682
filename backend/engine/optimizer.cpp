// SPDX-License-Identifier: Apache-2.0
#include "engine/optimizer.h"

#include <cmath>
#include <stdexcept>

#include "engine/torch_compat.h"
#ifdef RS_ENGINE_CUDA_KERNELS
#include "engine/adamw_main_params.h"
#endif

namespace rs::engine {

MainParamAdamW::MainParamAdamW(const std::vector<std::pair<std::string, torch::Tensor>>& named, Path path)
    : path_(path)
{
    for (const auto& [name, p] : named) {
        params_.push_back(p);
        main_.push_back(p.scalar_type() == torch::kFloat32 ? p : p.detach().to(torch::kFloat32));
    }
    if (path_ == Path::OnePass && !onePassAvailable())
        throw std::invalid_argument("optimizer: the one-pass AdamW needs a build with CUDA kernels and "
                                    "contiguous bf16/fp16 CUDA parameters");
}

bool MainParamAdamW::onePassAvailable() const
{
#ifdef RS_ENGINE_CUDA_KERNELS
    if (params_.empty() || !params_.front().is_cuda())
        return false;
    const auto half = params_.front().scalar_type();
    if (half != torch::kBFloat16 && half != torch::kHalf)
        return false;
    for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].scalar_type() != half || !params_[i].is_contiguous() || !main_[i].is_contiguous())
            return false;
    return true;
#else
    return false;
#endif
}

void MainParamAdamW::step()
{
    torch::NoGradGuard no_grad;
    if (!initialized()) {
        for (const auto& m : main_) {
            exp_avg_.push_back(torch::zeros_like(m));
            exp_avg_sq_.push_back(torch::zeros_like(m));
            steps_.push_back(torch::zeros({}, m.options()));
        }
    }
    ++step_;
    const bool one_pass = path_ == Path::OnePass || (path_ == Path::Auto && onePassAvailable());
    if (one_pass)
        stepOnePass();
    else
        stepBuckets();
}

void MainParamAdamW::stepOnePass()
{
#ifdef RS_ENGINE_CUDA_KERNELS
    const auto half = params_.front().scalar_type();
    std::vector<kernels::AdamWMainParamTensor> tensors;
    std::vector<torch::Tensor> grads; // contiguous 16-bit gradients, alive until the launch
    for (size_t i = 0; i < params_.size(); ++i) {
        auto g = params_[i].grad();
        if (g.defined())
            g = g.to(half).contiguous(); // no-op for autograd's own gradients
        grads.push_back(g);
        kernels::AdamWMainParamTensor t;
        t.main = main_[i].data_ptr<float>();
        t.exp_avg = exp_avg_[i].data_ptr<float>();
        t.exp_avg_sq = exp_avg_sq_[i].data_ptr<float>();
        t.grad = g.defined() ? g.data_ptr() : nullptr;
        t.param = params_[i].data_ptr();
        t.numel = params_[i].numel();
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
    // Freed after the launch on the same stream: the caching allocator hands the blocks only to work
    // queued behind the kernel.
    grads.clear();
    for (auto& p : params_)
        p.mutable_grad() = torch::Tensor();
#endif
}

void MainParamAdamW::stepBuckets()
{
    // Each bucket's gradients are converted to fp32 (the 16-bit gradient is freed as soon as its copy
    // exists), updated, copied back, and released before the next bucket, so the optimizer never holds a
    // second full set of gradients.
    size_t first = 0;
    while (first < params_.size()) {
        std::vector<torch::Tensor> main, grads, exp_avg, exp_avg_sq, steps;
        int64_t elements = 0;
        size_t end = first;
        for (; end < params_.size() && (end == first || elements + params_[end].numel() <= kBucketElements);
             ++end) {
            auto g = params_[end].grad();
            grads.push_back(g.defined() ? g.to(torch::kFloat32) : torch::zeros_like(main_[end]));
            params_[end].mutable_grad() = torch::Tensor(); // set to none, as zero_grad() does
            main.push_back(main_[end]);
            exp_avg.push_back(exp_avg_[end]);
            exp_avg_sq.push_back(exp_avg_sq_[end]);
            steps.push_back(steps_[end]);
            elements += params_[end].numel();
        }
        if (!compat::fusedAdamW(
                main, grads, exp_avg, exp_avg_sq, steps, kLr, kBeta1, kBeta2, kWeightDecay, kEps)) {
            const double bc1 = 1 - std::pow(kBeta1, step_), bc2 = 1 - std::pow(kBeta2, step_);
            for (size_t i = 0; i < main.size(); ++i) {
                main[i].mul_(1 - kLr * kWeightDecay);
                exp_avg[i].mul_(kBeta1).add_(grads[i], 1 - kBeta1);
                exp_avg_sq[i].mul_(kBeta2).addcmul_(grads[i], grads[i], 1 - kBeta2);
                auto denom = (exp_avg_sq[i].sqrt() / std::sqrt(bc2)).add_(kEps);
                main[i].addcdiv_(exp_avg[i], denom, -kLr / bc1);
            }
        }
        grads.clear();
        for (size_t i = first; i < end; ++i)
            if (!params_[i].is_same(main_[i]))
                params_[i].copy_(main_[i]);
        first = end;
    }
}

} // namespace rs::engine
