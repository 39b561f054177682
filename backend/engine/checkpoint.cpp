// SPDX-License-Identifier: Apache-2.0
#include "engine/checkpoint.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>

namespace rs::engine {
namespace {

std::atomic<int64_t> g_forward_flops { 0 };
std::atomic<int64_t> g_replay_flops { 0 };
std::atomic<int64_t> g_replays { 0 };
thread_local int t_replay_depth = 0;

struct ReplayScope {
    ReplayScope() { ++t_replay_depth; }
    ~ReplayScope() { --t_replay_depth; }
    ReplayScope(const ReplayScope&) = delete;
    ReplayScope& operator=(const ReplayScope&) = delete;
};

// The generator states a region's dropout draws from: the CPU generator always, and the CUDA generator of
// the device the region's inputs live on.
struct RngState {
    torch::Tensor cpu;
    torch::Tensor cuda;
    c10::Device cuda_device { c10::kCPU };

    static at::Generator generator(const c10::Device& d) { return at::globalContext().defaultGenerator(d); }

    static RngState capture(const std::vector<torch::Tensor>& inputs)
    {
        RngState s;
        {
            auto gen = generator(c10::Device(c10::kCPU));
            std::lock_guard<std::mutex> lock(gen.mutex());
            s.cpu = gen.get_state();
        }
        for (const auto& t : inputs) {
            if (t.defined() && t.is_cuda()) {
                s.cuda_device = t.device();
                auto gen = generator(s.cuda_device);
                std::lock_guard<std::mutex> lock(gen.mutex());
                s.cuda = gen.get_state();
                break;
            }
        }
        return s;
    }

    void restore() const
    {
        {
            auto gen = generator(c10::Device(c10::kCPU));
            std::lock_guard<std::mutex> lock(gen.mutex());
            gen.set_state(cpu);
        }
        if (cuda.defined()) {
            auto gen = generator(cuda_device);
            std::lock_guard<std::mutex> lock(gen.mutex());
            gen.set_state(cuda);
        }
    }
};

// Replays `region` on detached copies of `inputs` with the forward pass's RNG state, building a graph.
std::vector<torch::Tensor> replay(const Region& region, const std::vector<torch::Tensor>& inputs,
    const std::vector<bool>& needs_grad, const RngState& rng, std::vector<torch::Tensor>* detached)
{
    detached->clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
        auto d = inputs[i].detach();
        if (needs_grad[i])
            d.requires_grad_(true);
        detached->push_back(d);
    }
    const RngState current = RngState::capture(inputs);
    rng.restore();
    g_replays.fetch_add(1);
    std::vector<torch::Tensor> outputs;
    {
        torch::AutoGradMode grad(true);
        ReplayScope scope;
        outputs = region(*detached);
    }
    current.restore();
    return outputs;
}

// The root of a checkpoint's backward through its replay. It owns the gradients it hands to the replayed
// graph (for a tail checkpoint: the tail's gradients of the replayed mids, which it computes and then drops
// with the mids) and lets go of them as soon as they are handed over. The engine's own root input is a
// scalar placeholder, so nothing the caller holds keeps an output gradient alive while the replayed graph
// runs backward: an [s, b, h] gradient held that long was the difference between this checkpoint's
// backward peak and non-reentrant torch.utils.checkpoint's.
struct ReplayRoot : torch::autograd::Node {
    std::optional<Tail> tail;
    std::vector<torch::Tensor> mids; // tail checkpoints only
    torch::autograd::variable_list grads;
    std::string name() const override { return "ReplayRoot"; }
    torch::autograd::variable_list apply(torch::autograd::variable_list&& /*placeholder*/) override
    {
        torch::autograd::variable_list result;
        if (tail) {
            torch::NoGradGuard no_grad;
            result = tail->backward(mids, grads);
        } else {
            result = std::move(grads);
        }
        mids.clear();
        grads.clear();
        return result;
    }
};

// Back-propagates `grads` (taken from the caller, which keeps no reference) through the replayed
// `outputs` (released here: only their graph edges are needed) and returns the inputs' gradients,
// preceded by an undefined entry for the state argument of the Function.
torch::autograd::variable_list backwardThroughReplay(std::vector<torch::Tensor>&& outputs,
    torch::autograd::variable_list&& grads, const std::vector<torch::Tensor>& detached,
    const std::optional<Tail>& tail = std::nullopt)
{
    auto root = std::make_shared<ReplayRoot>();
    torch::autograd::edge_list next;
    torch::Tensor placeholder;
    bool any = false;
    if (tail) {
        // The tail turns the one output gradient into the mids' gradients.
        if (grads.size() == 1 && grads[0].defined()) {
            for (const auto& m : outputs)
                next.push_back(
                    m.requires_grad() ? torch::autograd::impl::gradient_edge(m) : torch::autograd::Edge());
            placeholder = torch::zeros({}, grads[0].options());
            root->tail = tail;
            root->mids = std::move(outputs);
            root->grads = std::move(grads);
            any = true;
        }
    } else {
        for (size_t i = 0; i < outputs.size(); ++i) {
            const bool flows = i < grads.size() && outputs[i].defined() && outputs[i].requires_grad()
                && grads[i].defined();
            next.push_back(
                flows ? torch::autograd::impl::gradient_edge(outputs[i]) : torch::autograd::Edge());
            root->grads.push_back(flows ? std::move(grads[i]) : torch::Tensor());
            if (flows && !placeholder.defined())
                placeholder = torch::zeros({}, root->grads.back().options());
            any = any || flows;
        }
        outputs.clear();
    }
    grads.clear();
    if (any) {
        root->set_next_edges(std::move(next));
        root->add_input_metadata(placeholder);
        torch::autograd::Engine::get_default_engine().execute(
            { torch::autograd::Edge(std::move(root), 0) }, { placeholder }, false, false, true);
    }
    torch::autograd::variable_list result { torch::Tensor() };
    for (const auto& d : detached)
        result.push_back(d.requires_grad() ? d.grad() : torch::Tensor());
    return result;
}

std::vector<bool> needsGrad(at::TensorList inputs)
{
    std::vector<bool> needs;
    for (const auto& t : inputs)
        needs.push_back(t.defined() && t.requires_grad());
    return needs;
}

bool anyNeedsGrad(const std::vector<torch::Tensor>& inputs)
{
    for (const auto& t : inputs)
        if (t.defined() && t.requires_grad())
            return true;
    return false;
}

struct CheckpointState : torch::CustomClassHolder {
    Region region;
    std::optional<Tail> tail;
    RngState rng;
    std::vector<bool> needs_grad;
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
public:
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
        c10::intrusive_ptr<CheckpointState> state, at::TensorList inputs)
    {
        std::vector<torch::Tensor> in(inputs.begin(), inputs.end());
        state->rng = RngState::capture(in);
        state->needs_grad = needsGrad(inputs);
        ctx->save_for_backward(in);
        ctx->saved_data["state"] = c10::IValue::make_capsule(state);
        // Function::apply runs forward with grad disabled: no graph, nothing of the region is kept.
        auto out = state->region(in);
        return state->tail ? state->tail->forward(out) : out;
    }

    // grads by reference: the node moved them in, and backwardThroughReplay takes them from here.
    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list& grads)
    {
        auto state
            = c10::static_intrusive_pointer_cast<CheckpointState>(ctx->saved_data["state"].toCapsule());
        const auto inputs = ctx->get_saved_variables();
        std::vector<torch::Tensor> detached;
        auto outputs = replay(state->region, inputs, state->needs_grad, state->rng, &detached);
        return backwardThroughReplay(std::move(outputs), std::move(grads), detached, state->tail);
    }
};

} // namespace

struct DiscardState : torch::CustomClassHolder {
    Region region;
    RngState rng;
    std::vector<bool> needs_grad;
    std::vector<torch::Tensor> inputs; // detached: no graph is held from here
    // The outputs as the consumers see them: their storage (freed and refilled in place) and layout.
    struct OutputView {
        c10::Storage storage;
        size_t nbytes = 0;
        int64_t offset = 0;
        std::vector<int64_t> sizes, strides;
        c10::TensorOptions options;
    };
    std::vector<OutputView> views;
    bool discarded = false;
    std::vector<torch::Tensor> recomputed;
    std::vector<torch::Tensor> detached;
    // Tensors made from the outputs by their consumers and saved by them (alsoDiscard): each one's storage
    // and bytes, freed with the outputs, and what refills it from the recomputed outputs.
    struct Extra {
        c10::Storage storage;
        size_t nbytes;
        std::function<void(const std::vector<torch::Tensor>& outputs)> rebuild;
    };
    std::vector<Extra> extra;

    void recompute()
    {
        if (!recomputed.empty())
            return;
        recomputed = replay(region, inputs, needs_grad, rng, &detached);
        TORCH_CHECK(recomputed.size() == views.size(), "output-discard recompute returned ",
            recomputed.size(), " outputs, the forward pass returned ", views.size());
        if (!discarded)
            return;
        torch::NoGradGuard no_grad;
        for (size_t i = 0; i < views.size(); ++i) {
            auto& v = views[i];
            auto* impl = v.storage.unsafeGetStorageImpl();
            if (impl->nbytes() != v.nbytes) { // outputs sharing one storage refill it once
                impl->set_data_ptr_noswap(impl->allocator()->allocate(v.nbytes));
                impl->set_nbytes(v.nbytes);
            }
            // A fresh tensor over the old storage: copying through it leaves the version counter that the
            // consumers' saved tensors check untouched.
            auto target = torch::empty({ 0 }, v.options).set_(v.storage, v.offset, v.sizes, v.strides);
            target.copy_(recomputed[i]);
        }
        for (Extra& e : extra) {
            auto* impl = e.storage.unsafeGetStorageImpl();
            impl->set_data_ptr_noswap(impl->allocator()->allocate(e.nbytes));
            impl->set_nbytes(e.nbytes);
            if (e.rebuild)
                e.rebuild(recomputed);
        }
    }
};

namespace {

class DiscardFunction : public torch::autograd::Function<DiscardFunction> {
public:
    static torch::autograd::variable_list forward(
        torch::autograd::AutogradContext* ctx, c10::intrusive_ptr<DiscardState> state, at::TensorList inputs)
    {
        for (const auto& t : inputs)
            state->inputs.push_back(t.detach());
        state->rng = RngState::capture(state->inputs);
        state->needs_grad = needsGrad(inputs);
        ctx->saved_data["state"] = c10::IValue::make_capsule(state);
        return state->region(state->inputs);
    }

    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list& grads)
    {
        auto state = c10::static_intrusive_pointer_cast<DiscardState>(ctx->saved_data["state"].toCapsule());
        state->recompute(); // normally done already by the hook
        auto result = backwardThroughReplay(std::move(state->recomputed), std::move(grads), state->detached);
        // Drop everything now rather than when the graph is freed, so backward's peak is the real one.
        state->recomputed.clear();
        state->detached.clear();
        state->inputs.clear();
        state->views.clear();
        return result;
    }
};

} // namespace

std::vector<torch::Tensor> checkpoint(const Region& region, const std::vector<torch::Tensor>& inputs)
{
    if (!torch::GradMode::is_enabled() || !anyNeedsGrad(inputs))
        return region(inputs);
    auto state = c10::make_intrusive<CheckpointState>();
    state->region = region;
    return CheckpointFunction::apply(state, at::TensorList(inputs));
}

OutputDiscardCheckpoint::OutputDiscardCheckpoint() = default;
OutputDiscardCheckpoint::~OutputDiscardCheckpoint() = default;

std::vector<torch::Tensor> checkpoint(
    const Region& head, const Tail& tail, const std::vector<torch::Tensor>& inputs)
{
    if (!torch::GradMode::is_enabled() || !anyNeedsGrad(inputs))
        return tail.forward(head(inputs));
    auto state = c10::make_intrusive<CheckpointState>();
    state->region = head;
    state->tail = tail;
    return CheckpointFunction::apply(state, at::TensorList(inputs));
}

namespace {

// x @ W^T's gradients as autograd's linear computes them: dx = g @ W, dW = g^T @ x (flattened to 2-D),
// dW accumulated into W.grad as AccumulateGrad would.
torch::Tensor linearBackward(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& g)
{
    if (weight.requires_grad())
        accumulateParamGrad(weight, g.reshape({ -1, g.size(-1) }).t().mm(x.reshape({ -1, x.size(-1) })));
    return g.matmul(weight);
}

} // namespace

namespace {
std::mutex g_main_grads_mutex;
std::unordered_map<const c10::TensorImpl*, torch::Tensor> g_main_grads;
} // namespace

void registerMainGrad(const torch::Tensor& param, const torch::Tensor& main_grad)
{
    std::lock_guard<std::mutex> lock(g_main_grads_mutex);
    if (main_grad.defined())
        g_main_grads[param.unsafeGetTensorImpl()] = main_grad;
    else
        g_main_grads.erase(param.unsafeGetTensorImpl());
}

void accumulateParamGrad(const torch::Tensor& param, const torch::Tensor& grad)
{
    torch::Tensor main;
    {
        std::lock_guard<std::mutex> lock(g_main_grads_mutex);
        auto it = g_main_grads.find(param.unsafeGetTensorImpl());
        if (it != g_main_grads.end())
            main = it->second;
    }
    torch::NoGradGuard no_grad;
    if (main.defined())
        main.add_(grad.view_as(main));
    else if (param.grad().defined())
        param.mutable_grad().add_(grad);
    else
        param.mutable_grad() = grad;
}

Tail linearTail(const torch::Tensor& weight)
{
    Tail t;
    t.forward = [weight](const std::vector<torch::Tensor>& mids) -> std::vector<torch::Tensor> {
        countFlops(
            2 * (mids[0].numel() / std::max<int64_t>(1, mids[0].size(-1))) * weight.size(0) * weight.size(1));
        return { at::linear(mids[0], weight) };
    };
    t.backward = [weight](const std::vector<torch::Tensor>& mids,
                     const std::vector<torch::Tensor>& grads) -> std::vector<torch::Tensor> {
        if (!grads[0].defined())
            return { torch::Tensor() };
        return { linearBackward(mids[0], weight, grads[0]) };
    };
    return t;
}

Tail residualLinearTail(const torch::Tensor& weight)
{
    Tail t;
    t.forward = [weight](const std::vector<torch::Tensor>& mids) -> std::vector<torch::Tensor> {
        countFlops(
            2 * (mids[1].numel() / std::max<int64_t>(1, mids[1].size(-1))) * weight.size(0) * weight.size(1));
        return { mids[0] + at::linear(mids[1], weight) };
    };
    t.backward = [weight](const std::vector<torch::Tensor>& mids,
                     const std::vector<torch::Tensor>& grads) -> std::vector<torch::Tensor> {
        if (!grads[0].defined())
            return { torch::Tensor(), torch::Tensor() };
        return { grads[0], linearBackward(mids[1], weight, grads[0]) };
    };
    return t;
}

std::vector<torch::Tensor> OutputDiscardCheckpoint::run(
    const Region& region, const std::vector<torch::Tensor>& inputs)
{
    state_.reset();
    if (!torch::GradMode::is_enabled() || !anyNeedsGrad(inputs))
        return region(inputs);
    state_ = c10::make_intrusive<DiscardState>();
    state_->region = region;
    auto outputs = DiscardFunction::apply(state_, at::TensorList(inputs));
    for (const auto& o : outputs) {
        DiscardState::OutputView v;
        v.storage = o.storage();
        v.nbytes = o.storage().nbytes();
        v.offset = o.storage_offset();
        v.sizes = o.sizes().vec();
        v.strides = o.strides().vec();
        v.options = o.options();
        state_->views.push_back(std::move(v));
    }
    return outputs;
}

void OutputDiscardCheckpoint::alsoDiscard(
    const torch::Tensor& made, std::function<void(const std::vector<torch::Tensor>& outputs)> rebuild)
{
    if (!state_)
        return;
    state_->extra.push_back({ made.storage(), made.storage().nbytes(), std::move(rebuild) });
}

void OutputDiscardCheckpoint::discardOutputAndRegisterRecompute(const torch::Tensor& hook_tensor)
{
    if (!state_)
        return;
    std::vector<c10::StorageImpl*> freed;
    for (auto& v : state_->views) {
        auto* impl = v.storage.unsafeGetStorageImpl();
        if (std::find(freed.begin(), freed.end(), impl) != freed.end())
            continue;
        TORCH_CHECK(impl != nullptr, "output-discard: output without storage");
        impl->set_data_ptr_noswap(c10::DataPtr(nullptr, impl->device()));
        impl->set_nbytes(0);
        freed.push_back(impl);
    }
    for (auto& e : state_->extra) {
        auto* impl = e.storage.unsafeGetStorageImpl();
        impl->set_data_ptr_noswap(c10::DataPtr(nullptr, impl->device()));
        impl->set_nbytes(0);
    }
    state_->discarded = true;
    auto state = state_;
    hook_tensor.register_hook([state](const torch::Tensor& grad) {
        state->recompute();
        return grad;
    });
    state_.reset();
}

void countFlops(int64_t flops)
{
    (t_replay_depth > 0 ? g_replay_flops : g_forward_flops).fetch_add(flops);
}

FlopCount flopCount()
{
    return { g_forward_flops.load(), g_replay_flops.load(), g_replays.load() };
}

void resetFlopCount()
{
    g_forward_flops = 0;
    g_replay_flops = 0;
    g_replays = 0;
}

bool replaying()
{
    return t_replay_depth > 0;
}

} // namespace rs::engine
