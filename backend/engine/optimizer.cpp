// SPDX-License-Identifier: Apache-2.0
#include "engine/optimizer.h"

#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <type_traits>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "core/model_shape.h"
#include "engine/adamw_element.h"
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

kernels::AdamWHyper hyperAt(int64_t step)
{
    using A = MainParamAdamW;
    kernels::AdamWHyper h;
    h.lr = static_cast<float>(A::kLr);
    h.beta1 = static_cast<float>(A::kBeta1);
    h.beta2 = static_cast<float>(A::kBeta2);
    h.weight_decay = static_cast<float>(A::kWeightDecay);
    h.eps = static_cast<float>(A::kEps);
    h.bias_correction1 = static_cast<float>(1 - std::pow(A::kBeta1, step));
    h.bias_correction2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(A::kBeta2, step)));
    return h;
}

template <typename T> struct Tag {
    using type = T;
};

// Calls f with the Tag of a floating dtype's C++ type.
template <typename F> void withFloatType(torch::ScalarType t, F&& f)
{
    switch (t) {
    case torch::kFloat32:
        f(Tag<float> {});
        return;
    case torch::kBFloat16:
        f(Tag<c10::BFloat16> {});
        return;
    case torch::kHalf:
        f(Tag<c10::Half> {});
        return;
    default:
        throw std::invalid_argument(std::string("optimizer: no AdamW over ") + c10::toString(t));
    }
}

// The one-pass update on host memory (MainParamAdamW::Path::HostLoop): adamw_element.h's element, as the
// CUDA kernel runs it. main: an fp32 master (null: the fp32 parameter is its own); remainder: int16
// remainders beside bf16 parameters (null: none).
template <typename P, typename G, typename M, typename V>
void hostAdamW(P* param, const G* grad, float* main, int16_t* remainder, M* exp_avg, V* exp_avg_sq, int64_t n,
    const kernels::AdamWHyper& h)
{
    constexpr bool kBf16 = std::is_same_v<P, c10::BFloat16>;
    at::parallel_for(0, n, int64_t(1) << 14, [&](int64_t lo, int64_t hi) {
        for (int64_t j = lo; j < hi; ++j) {
            float p = 0;
            uint16_t bits = 0;
            if constexpr (kBf16)
                std::memcpy(&bits, &param[j], sizeof bits);
            if (kBf16 && remainder) {
                const uint32_t u = kernels::joinRemainder(bits, remainder[j]);
                std::memcpy(&p, &u, sizeof p);
            } else {
                p = main ? main[j] : static_cast<float>(param[j]);
            }
            float m = static_cast<float>(exp_avg[j]), v = static_cast<float>(exp_avg_sq[j]);
            kernels::adamwUpdate(p, m, v, grad ? static_cast<float>(grad[j]) : 0.0f, h);
            exp_avg[j] = M(m);
            exp_avg_sq[j] = V(v);
            if (kBf16 && remainder) {
                uint32_t u = 0;
                std::memcpy(&u, &p, sizeof u);
                kernels::splitRemainder(u, bits, remainder[j]);
                std::memcpy(&param[j], &bits, sizeof bits);
            } else {
                if (main)
                    main[j] = p;
                param[j] = P(p);
            }
        }
    });
}

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
    t.precision_aware = precisionAwareOptimizer(r);
    if (t.precision_aware) {
        const auto stateDtype = [](const char* field, const std::string& d) {
            if (d == "fp32")
                return torch::kFloat32;
            if (d == "bf16")
                return torch::kBFloat16;
            if (d == "fp16")
                return torch::kHalf;
            throw EngineError(field,
                std::string(field) + " " + d
                    + ": the worker keeps Adam's moments in fp32, bf16 or fp16 (allowed: fp32, bf16, fp16; "
                      "Transformer Engine's scaled fp8 moments are not built)");
        };
        t.exp_avg_dtype = stateDtype("exp_avg_dtype", r.exp_avg_dtype);
        t.exp_avg_sq_dtype = stateDtype("exp_avg_sq_dtype", r.exp_avg_sq_dtype);
        if (r.main_params_dtype != "fp32")
            throw EngineError("main_params_dtype",
                "main_params_dtype " + r.main_params_dtype
                    + ": the worker keeps master weights in fp32 (allowed: fp32), as remainders beside bf16 "
                      "parameters where Megatron does");
        t.master_remainders = masterWeightsAsRemainders(r) && param_dtype == torch::kBFloat16;
    }
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
    // The precision-aware optimizer is Transformer Engine's FusedAdam whatever adam_implementation says.
    : path_(path != Path::Auto       ? path
            : layout.precision_aware ? Path::Auto
            : layout.torch_adam      ? Path::Foreach
                                     : Path::Buckets)
    , aware_(layout.precision_aware)
    , remainders_(layout.master_remainders)
    , exp_avg_dtype_(layout.exp_avg_dtype)
    , exp_avg_sq_dtype_(layout.exp_avg_sq_dtype)
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
        // fp32 parameters are their own main parameters (Megatron's FP32Optimizer); remainders start at
        // zero, the bf16 parameter being the whole master weight.
        main_.push_back(remainders_ && piece.scalar_type() == torch::kBFloat16
                ? torch::zeros({ last - first }, piece.options().dtype(torch::kInt16))
                : piece.scalar_type() == torch::kFloat32 ? piece
                                                         : piece.to(torch::kFloat32));
    }
    if (path_ == Path::OnePass && !onePassAvailable())
        throw std::invalid_argument("optimizer: the one-pass AdamW needs a build with CUDA kernels, "
                                    "contiguous bf16/fp16 CUDA parameters and a gradient buffer of their "
                                    "dtype");
    const bool fp32_state
        = !remainders_ && exp_avg_dtype_ == torch::kFloat32 && exp_avg_sq_dtype_ == torch::kFloat32;
    if ((path_ == Path::Buckets || path_ == Path::Foreach) && !fp32_state)
        throw std::invalid_argument("optimizer: the bucketed and multi-tensor AdamW need fp32 moments and "
                                    "master weights");
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
    if (exp_avg_dtype_ != exp_avg_sq_dtype_ || (remainders_ && half != torch::kBFloat16))
        return false;
    for (size_t i = 0; i < pieces_.size(); ++i)
        if (pieces_[i].scalar_type() != half || (!from_param_grads_ && grads_[i].scalar_type() != half)
            || !pieces_[i].is_contiguous() || !main_[i].is_contiguous()
            || (remainders_ && main_[i].scalar_type() != torch::kInt16))
            return false;
    return true;
#else
    return false;
#endif
}

bool MainParamAdamW::usesOnePass() const
{
    return resolvedPath() == Path::OnePass;
}

MainParamAdamW::Path MainParamAdamW::resolvedPath() const
{
    if (path_ != Path::Auto)
        return path_;
    if (onePassAvailable())
        return Path::OnePass;
    // Non-fp32 moments and remainders come with the precision-aware layout only (trainingLayout).
    return aware_ ? Path::HostLoop : Path::Buckets;
}

void MainParamAdamW::step()
{
    torch::NoGradGuard no_grad;
    const Path path = resolvedPath();
    const bool one_pass = path == Path::OnePass;
    // OnePass and HostLoop read the gradients where they are (no fp32 copies).
    const bool in_place = one_pass || path == Path::HostLoop;
    if (path == Path::HostLoop && !pieces_.empty() && pieces_.front().is_cuda())
        throw std::invalid_argument("optimizer: the host AdamW loop needs CPU tensors");
    {
        MemoryRegion region(MemoryCategory::Workspace);
        if (from_param_grads_) {
            for (size_t i = 0; i < params_.size(); ++i) {
                const auto g = params_[i].grad();
                grads_[i] = g.defined()
                    ? (path == Path::HostLoop ? g
                                              : g.to(one_pass ? params_[i].scalar_type() : torch::kFloat32))
                          .contiguous()
                    : (in_place ? torch::Tensor() : torch::zeros_like(main_[i]));
            }
        }
        // Megatron's prepare_grads (_copy_model_grads_to_main_grads): every piece's gradient in fp32, one
        // copy after another, kept until zeroGrad(); an fp32 gradient is its own (`.float()` returns the
        // tensor itself). The one-pass kernel reads the 16-bit gradients in place (decoupled_grad).
        main_grads_.clear();
        if (!in_place)
            for (const auto& g : grads_)
                main_grads_.push_back(g.scalar_type() == torch::kFloat32 ? g : g.to(torch::kFloat32));
    }
    if (!initialized()) {
        // Adam's state appears inside the first step, after the gradients (torch.optim / FusedAdam create
        // it lazily).
        MemoryRegion region(MemoryCategory::OptimizerStates);
        for (size_t i = 0; i < main_.size(); ++i) {
            const auto opts = pieces_[i].options();
            exp_avg_.push_back(torch::zeros(main_[i].sizes(), opts.dtype(exp_avg_dtype_)));
            exp_avg_sq_.push_back(torch::zeros(main_[i].sizes(), opts.dtype(exp_avg_sq_dtype_)));
            steps_.push_back(torch::zeros({}, opts.dtype(torch::kFloat32)));
        }
    }
    MemoryRegion region(MemoryCategory::Workspace);
    ++step_;
    if (path == Path::Foreach)
        stepForeach();
    else if (one_pass)
        stepOnePass();
    else if (path == Path::HostLoop)
        stepHostLoop();
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
        t.main = main_[i].data_ptr();
        t.exp_avg = exp_avg_[i].data_ptr();
        t.exp_avg_sq = exp_avg_sq_[i].data_ptr();
        t.grad = grads_[i].defined() ? grads_[i].data_ptr() : nullptr;
        t.param = pieces_[i].data_ptr();
        t.numel = pieces_[i].numel();
        tensors.push_back(t);
    }
    kernels::AdamWKinds kinds;
    kinds.half = half == torch::kBFloat16 ? kernels::HalfKind::BFloat16 : kernels::HalfKind::Float16;
    kinds.state = exp_avg_dtype_ == torch::kBFloat16 ? kernels::StateKind::BFloat16
        : exp_avg_dtype_ == torch::kHalf             ? kernels::StateKind::Float16
                                                     : kernels::StateKind::Float32;
    kinds.master = remainders_ ? kernels::MasterKind::Remainder16 : kernels::MasterKind::Float32;
    const std::string error = kernels::adamwMainParams(
        tensors.data(), static_cast<int>(tensors.size()), kinds, hyperAt(step_), compat::currentCudaStream());
    if (!error.empty())
        throw std::runtime_error("optimizer step (one-pass AdamW): " + error);
#endif
}

void MainParamAdamW::stepHostLoop()
{
    const kernels::AdamWHyper h = hyperAt(step_);
    for (size_t i = 0; i < pieces_.size(); ++i) {
        const torch::Tensor& piece = pieces_[i];
        const torch::Tensor& grad = grads_[i];
        const bool own = main_[i].is_same(piece);
        float* main
            = !own && main_[i].scalar_type() == torch::kFloat32 ? main_[i].data_ptr<float>() : nullptr;
        int16_t* remainder = main_[i].scalar_type() == torch::kInt16 ? main_[i].data_ptr<int16_t>() : nullptr;
        withFloatType(piece.scalar_type(), [&](auto p) {
            using P = typename decltype(p)::type;
            withFloatType(grad.defined() ? grad.scalar_type() : piece.scalar_type(), [&](auto g) {
                using G = typename decltype(g)::type;
                withFloatType(exp_avg_dtype_, [&](auto m) {
                    using M = typename decltype(m)::type;
                    withFloatType(exp_avg_sq_dtype_, [&](auto v) {
                        using V = typename decltype(v)::type;
                        hostAdamW(piece.data_ptr<P>(), grad.defined() ? grad.data_ptr<G>() : nullptr, main,
                            remainder, exp_avg_[i].data_ptr<M>(), exp_avg_sq_[i].data_ptr<V>(), piece.numel(),
                            h);
                    });
                });
            });
        });
    }
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
