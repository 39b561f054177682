// SPDX-License-Identifier: Apache-2.0
// Activation checkpoints built on torch::autograd::Function (LibTorch has no checkpoint API), the two
// kinds Megatron Core uses (megatron-rules.md (c)):
// - normal (tensor_parallel.checkpoint / CheckpointFunction): the region runs without building a graph,
//   only its inputs (and the RNG state) are kept; backward replays the region and back-propagates
//   through the replay;
// - output-discard (CheckpointWithoutOutput): the region runs without a graph, its outputs are handed to
//   their consumers, then their storage is freed once the consumers have saved them; a hook on a later
//   tensor's gradient rebuilds the outputs in the same storage just before backward needs them.
// Both save the CPU and CUDA generator states and restore them for the replay, so dropout masks replay
// identically. Inside a region that is itself running without grad (the first pass of an enclosing
// checkpoint) a nested checkpoint just runs its function, as Megatron's nested checkpoints do.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/torch.h>

namespace rs::engine {

using Region = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>& inputs)>;

// Normal checkpoint: returns the region's outputs, attached to the graph through one node that keeps
// only `inputs`.
std::vector<torch::Tensor> checkpoint(const Region& region, const std::vector<torch::Tensor>& inputs);

// The last operation of a normal checkpoint's region when it saves nothing the replay must rebuild (a
// linear layer, a residual add, the probabilities x V product): the first pass runs it, the replay stops
// before it, and backward applies its gradient by hand. This is what torch.utils.checkpoint's early stop
// gives PyTorch: the final matrix multiply of the region is not replayed.
struct Tail {
    // outputs = forward(mids), where mids are what the head of the region returns.
    std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>& mids)> forward;
    // Gradients of the mids from the outputs' gradients (accumulating any parameter gradient itself).
    std::function<std::vector<torch::Tensor>(
        const std::vector<torch::Tensor>& mids, const std::vector<torch::Tensor>& grad_outputs)>
        backward;
};

// Normal checkpoint of head-then-tail: keeps only `inputs`; the replay runs `head` alone.
std::vector<torch::Tensor> checkpoint(
    const Region& head, const Tail& tail, const std::vector<torch::Tensor>& inputs);

// Tails the engine uses. y = x @ W^T (the region's single mid is x):
Tail linearTail(const torch::Tensor& weight);
// y = base + x @ W^T (mids: base, x), e.g. a layer's residual add after its last linear with no dropout:
Tail residualLinearTail(const torch::Tensor& weight);

struct DiscardState;

// Output-discard checkpoint: run(), then discardOutputAndRegisterRecompute() once the consumers of the
// outputs have run.
class OutputDiscardCheckpoint {
public:
    OutputDiscardCheckpoint();
    ~OutputDiscardCheckpoint();
    OutputDiscardCheckpoint(const OutputDiscardCheckpoint&) = delete;
    OutputDiscardCheckpoint& operator=(const OutputDiscardCheckpoint&) = delete;
    std::vector<torch::Tensor> run(const Region& region, const std::vector<torch::Tensor>& inputs);
    // Frees the outputs' storage; when the gradient of hook_tensor is computed, the region is replayed
    // and its outputs are rebuilt in place. A no-op when run() ran without grad.
    void discardOutputAndRegisterRecompute(const torch::Tensor& hook_tensor);
    // Before the discard: a tensor a consumer made from the outputs and saved (FC2's quantized copy of
    // its input under FP8, where Megatron's discarded output is that copy) goes with them; after the
    // replay its storage is allocated again and `rebuild` refills it from the recomputed outputs.
    void alsoDiscard(
        const torch::Tensor& made, std::function<void(const std::vector<torch::Tensor>& outputs)> rebuild);

private:
    c10::intrusive_ptr<DiscardState> state_;
};

// A parameter's gradient computed by hand (a tail's weight): added to the parameter's main gradient when
// one is registered (DDP's gradient buffer, engine/optimizer.h), else accumulated into .grad as
// AccumulateGrad would.
void accumulateParamGrad(const torch::Tensor& param, const torch::Tensor& grad);
// Registers (or, with an undefined main_grad, removes) the main gradient of `param`.
void registerMainGrad(const torch::Tensor& param, const torch::Tensor& main_grad);

// Matrix-multiply FLOPs executed by the engine, counted by the model's matmul helpers: first passes
// (forward) and replays (recompute) apart. Backward is accounted as twice the first-pass FLOPs.
struct FlopCount {
    int64_t forward = 0;
    int64_t replay = 0;
    int64_t replays = 0; // regions replayed (norm and activation regions replay without matmuls)
};
void countFlops(int64_t flops);
FlopCount flopCount();
void resetFlopCount();
// True while a checkpoint is replaying its region (on this thread).
bool replaying();

} // namespace rs::engine
