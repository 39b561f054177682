// SPDX-License-Identifier: Apache-2.0
#include "engine/cross_entropy.h"

namespace rs::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct VocabCrossEntropy : public torch::autograd::Function<VocabCrossEntropy> {
    static torch::Tensor forward(
        AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& labels)
    {
        // Every step works in place on the one fp32 copy: max subtracted, exp, divided by the sum.
        auto work = logits.to(torch::kFloat32);
        work.sub_(std::get<0>(work.max(-1, true)));
        const auto rows = torch::arange(work.size(0), labels.options());
        auto predicted = work.index({ rows, labels }).clone();
        work.exp_();
        const auto sum = work.sum(-1);
        auto loss = torch::log(sum) - predicted;
        work.div_(sum.unsqueeze(-1));
        ctx->save_for_backward({ work, labels });
        return loss;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs)
    {
        const auto saved = ctx->get_saved_variables();
        auto grad = saved[0]; // the softmax, turned into the gradient in place
        const auto& labels = saved[1];
        const auto rows = torch::arange(grad.size(0), labels.options());
        grad.index_put_({ rows, labels }, grad.index({ rows, labels }) - 1.0);
        grad.mul_(grad_outputs[0].unsqueeze(-1));
        // The engine casts the fp32 gradient to the logits' dtype (as in Megatron, where the input is
        // 16-bit).
        return { grad, torch::Tensor() };
    }
};

} // namespace

torch::Tensor vocabCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels)
{
    return VocabCrossEntropy::apply(logits, labels);
}

} // namespace rs::engine
