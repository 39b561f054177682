// SPDX-License-Identifier: Apache-2.0
#include "engine/fp8.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <mutex>

#include "engine/checkpoint.h"
#include "engine/memory_probe.h"
#include "engine/torch_compat.h"

namespace rs::engine::fp8 {

using torch::Tensor;
using Tensors = std::vector<Tensor>;

namespace {

// The largest finite magnitude of each format (OCP FP8: E4M3 448, E5M2 57344); 127 for the int8 stand-in.
double formatMax(bool e5m2)
{
    if (!hasFloat8())
        return 127.0;
    return e5m2 ? 57344.0 : 448.0;
}

torch::ScalarType codeType(bool e5m2)
{
#if RS_TORCH_AT_LEAST(2, 1)
    return e5m2 ? c10::ScalarType::Float8_e5m2 : c10::ScalarType::Float8_e4m3fn;
#else
    (void)e5m2;
    return torch::kChar;
#endif
}

Tensor flat2d(const Tensor& t)
{
    return t.reshape({ -1, t.size(-1) });
}

} // namespace

bool hasFloat8()
{
    return RS_TORCH_AT_LEAST(2, 1);
}

bool hasScaledMm()
{
#if RS_TORCH_AT_LEAST(2, 5) && defined(RS_ENGINE_CUDA)
    return true;
#else
    return false;
#endif
}

Quantized quantize(const Tensor& x, bool e5m2, bool transpose)
{
    torch::NoGradGuard no_grad;
    const Tensor v = x.detach();
    const double fmax = formatMax(e5m2);
    // amax without a temporary of x's size: the minimum and the maximum.
    const auto mm = at::aminmax(v);
    const Tensor amax = at::maximum(std::get<0>(mm).abs(), std::get<1>(mm).abs()).to(torch::kFloat);
    // The scale as x's dtype multiplies x; the dequantizing factor is that same scale's inverse.
    const Tensor scale = (fmax / amax.clamp_min(1e-12)).to(v.scalar_type());
    Tensor scaled = v * scale;
    scaled.clamp_(-fmax, fmax);
    if (!hasFloat8())
        scaled.round_();
    Quantized q;
    q.scale_inv = scale.to(torch::kFloat).reciprocal();
    const Tensor source = transpose ? scaled.t() : scaled;
    q.data = torch::empty(source.sizes(), v.options().dtype(codeType(e5m2)));
    q.data.copy_(source);
    return q;
}

Tensor dequantize(const Quantized& q, torch::ScalarType dtype)
{
    return q.data.to(dtype) * q.scale_inv.to(dtype);
}

Tensor scaledMm(const Quantized& a, const Quantized& b_t, torch::ScalarType out_dtype, bool* fp8_ran)
{
    if (fp8_ran)
        *fp8_ran = false;
#if RS_TORCH_AT_LEAST(2, 5) && defined(RS_ENGINE_CUDA)
    // cuBLASLt's FP8 GEMM on Hopper: a row-major, b column-major, K and N multiples of 16, not both E5M2.
    const int64_t k = a.data.size(1), n = b_t.data.size(0);
    const bool both_e5m2 = a.data.scalar_type() == c10::ScalarType::Float8_e5m2
        && b_t.data.scalar_type() == c10::ScalarType::Float8_e5m2;
    if (a.data.is_cuda() && k % 16 == 0 && n % 16 == 0 && !both_e5m2) {
        try {
            Tensor out = at::_scaled_mm(a.data, b_t.data.t(), a.scale_inv, b_t.scale_inv, std::nullopt,
                std::nullopt, out_dtype, /*use_fast_accum=*/false);
            if (fp8_ran)
                *fp8_ran = true;
            return out;
        } catch (const c10::Error& e) {
            // A shape or layout this cuBLASLt refuses: the 16-bit product below, said once on stderr.
            static std::once_flag once;
            std::call_once(once, [&e] {
                std::cerr << "fp8: at::_scaled_mm refused a product, running it in 16 bits: "
                          << e.what_without_backtrace() << "\n";
            });
        }
    }
#endif
    return at::mm(dequantize(a, out_dtype), dequantize(b_t, out_dtype).t());
}

const WeightCache::Entry& WeightCache::get(const Tensor& weight, bool e5m2)
{
    Slot& slot = slots_[weight.unsafeGetTensorImpl()];
    // A replay reuses what the first pass used; a step's first use quantizes anew.
    if (slot.step == step_ || (replaying() && slot.entry.rowwise.data.defined()))
        return slot.entry;
    MemoryRegion region(MemoryCategory::Parameters);
    torch::NoGradGuard no_grad;
    const Tensor w = weight.detach();
    const bool grouped = w.dim() == 3;
    Quantized row = quantize(w, e5m2);
    Quantized col;
    col.scale_inv = row.scale_inv;
    col.data = grouped ? row.data.transpose(1, 2).contiguous() : row.data.t().contiguous();
    if (!slot.entry.rowwise.data.defined()) {
        slot.entry.rowwise = std::move(row);
        slot.entry.columnwise = std::move(col);
    } else {
        // In place: the copies keep their storage from step to step, as TE's weight workspaces do.
        slot.entry.rowwise.data.copy_(row.data);
        slot.entry.rowwise.scale_inv.copy_(row.scale_inv);
        slot.entry.columnwise.data.copy_(col.data);
        slot.entry.columnwise.scale_inv = slot.entry.rowwise.scale_inv;
    }
    slot.step = step_;
    return slot.entry;
}

int64_t WeightCache::bytes() const
{
    int64_t total = 0;
    for (const auto& [impl, slot] : slots_)
        total += slot.entry.rowwise.data.nbytes() + slot.entry.columnwise.data.nbytes();
    return total;
}

namespace {

// TE's Linear under FP8. Saved: the input's column-wise codes (or the input itself), the weight's
// column-wise codes (the cache's own storage).
class Fp8Linear : public torch::autograd::Function<Fp8Linear> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& weight,
        const Tensor& bias, const Tensor& w_col, const Tensor& w_row, const Tensor& w_scale_inv,
        int64_t flags)
    {
        const bool save_original = flags & 1, e5m2_grads = flags & 2;
        const Tensor x2 = flat2d(x);
        Quantized xq = quantize(x2, false);
        Tensor out = scaledMm(xq, Quantized { w_row, w_scale_inv }, x.scalar_type());
        if (bias.numel() > 0)
            out.add_(bias);
        Tensor saved_x, saved_scale;
        if (save_original) {
            saved_x = x;
        } else {
            // Only the column-wise copy stays for backward (the row-wise one was the forward GEMM's).
            saved_x = xq.data.t().contiguous();
            saved_scale = xq.scale_inv;
        }
        xq.data.reset();
        ctx->save_for_backward({ saved_x, w_col });
        ctx->saved_data["x_scale_inv"] = saved_scale.defined() ? saved_scale : torch::ones({}, x.options());
        ctx->saved_data["w_scale_inv"] = w_scale_inv;
        ctx->saved_data["save_original"] = save_original;
        ctx->saved_data["e5m2"] = e5m2_grads;
        ctx->saved_data["has_bias"] = bias.numel() > 0;
        ctx->saved_data["weight_requires_grad"] = weight.requires_grad();
        std::vector<int64_t> shape = x.sizes().vec();
        shape.back() = out.size(-1);
        return out.view(shape);
    }

    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const bool save_original = ctx->saved_data["save_original"].toBool();
        const bool e5m2 = ctx->saved_data["e5m2"].toBool();
        const Tensor g = flat2d(grads[0]);
        const auto dtype = g.scalar_type();
        const Quantized gq = quantize(g, e5m2);
        const Quantized w_col { saved[1], ctx->saved_data["w_scale_inv"].toTensor() };
        // dgrad: g [T, out] @ W [out, in]; W's column-wise codes are W^T [in, out] row-major.
        Tensor dx = scaledMm(gq, w_col, dtype);
        Tensor dw;
        if (ctx->saved_data["weight_requires_grad"].toBool()) {
            // wgrad: g^T [out, T] @ x [T, in]; x's column-wise codes are x^T [in, T] row-major.
            const Quantized x_col = save_original
                ? quantize(flat2d(saved[0]), false, /*transpose=*/true)
                : Quantized { saved[0], ctx->saved_data["x_scale_inv"].toTensor() };
            const Quantized g_col { gq.data.t().contiguous(), gq.scale_inv };
            dw = scaledMm(g_col, x_col, dtype);
        }
        Tensor db;
        if (ctx->saved_data["has_bias"].toBool())
            db = g.sum(0);
        std::vector<int64_t> shape = grads[0].sizes().vec();
        shape.back() = dx.size(-1);
        return { dx.view(shape), dw, db, Tensor(), Tensor(), Tensor(), Tensor() };
    }
};

// Each expert's rows of `codes` [R, in] transposed ([in, n_e], contiguous) one after another in `into`.
void fillExpertColumns(const Tensor& codes, const Tensor& counts, Tensor& into)
{
    const auto* count = counts.data_ptr<int64_t>();
    const int64_t in = codes.size(1);
    int64_t row = 0;
    for (int64_t e = 0; e < counts.numel(); ++e) {
        const int64_t n = count[e];
        if (n > 0)
            into.narrow(0, row * in, n * in).view({ in, n }).copy_(codes.narrow(0, row, n).t());
        row += n;
    }
}

// TE's GroupedLinear under FP8: one tensor's codes for every expert's rows; each expert's column-wise copy
// laid out one after another in one buffer (the bytes TE's per-expert quantized inputs take).
class Fp8GroupedLinear : public torch::autograd::Function<Fp8GroupedLinear> {
public:
    static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& x, const Tensor& weight,
        const Tensor& counts, const Tensor& w_col, const Tensor& w_row, const Tensor& w_scale_inv,
        int64_t flags)
    {
        const bool e5m2_grads = flags & 2;
        const int64_t experts = weight.size(0), out_features = weight.size(1);
        const auto* count = counts.data_ptr<int64_t>();
        const Quantized xq = quantize(x, false);
        Tensor out = torch::empty({ x.size(0), out_features }, x.options());
        int64_t row = 0;
        for (int64_t e = 0; e < experts; ++e) {
            const int64_t n = count[e];
            if (n == 0)
                continue;
            const Quantized xe { xq.data.narrow(0, row, n), xq.scale_inv };
            out.narrow(0, row, n).copy_(scaledMm(xe, Quantized { w_row[e], w_scale_inv }, x.scalar_type()));
            row += n;
        }
        Tensor x_cols = torch::empty({ x.numel() }, xq.data.options());
        fillExpertColumns(xq.data, counts, x_cols);
        ctx->save_for_backward({ x_cols, w_col, counts });
        ctx->saved_data["x_scale_inv"] = xq.scale_inv;
        ctx->saved_data["w_scale_inv"] = w_scale_inv;
        ctx->saved_data["e5m2"] = e5m2_grads;
        ctx->saved_data["weight_requires_grad"] = weight.requires_grad();
        return out;
    }

    static torch::autograd::variable_list backward(
        torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const Tensor& x_cols = saved[0];
        const Tensor& w_col = saved[1];
        const auto* count = saved[2].data_ptr<int64_t>();
        const Tensor x_scale = ctx->saved_data["x_scale_inv"].toTensor();
        const Tensor w_scale = ctx->saved_data["w_scale_inv"].toTensor();
        const bool weight_grad = ctx->saved_data["weight_requires_grad"].toBool();
        const Tensor& g = grads[0];
        const auto dtype = g.scalar_type();
        const int64_t experts = w_col.size(0), in = w_col.size(1), out_features = w_col.size(2);
        const Quantized gq = quantize(g, ctx->saved_data["e5m2"].toBool());
        Tensor dx = torch::empty({ g.size(0), in }, g.options());
        Tensor dw = weight_grad ? torch::zeros({ experts, out_features, in }, g.options()) : Tensor();
        int64_t row = 0;
        for (int64_t e = 0; e < experts; ++e) {
            const int64_t n = count[e];
            if (n == 0)
                continue;
            const Quantized ge { gq.data.narrow(0, row, n), gq.scale_inv };
            dx.narrow(0, row, n).copy_(scaledMm(ge, Quantized { w_col[e], w_scale }, dtype));
            if (weight_grad) {
                const Quantized ge_col { ge.data.t().contiguous(), gq.scale_inv };
                const Quantized xe_col { x_cols.narrow(0, row * in, n * in).view({ in, n }), x_scale };
                dw[e].copy_(scaledMm(ge_col, xe_col, dtype));
            }
            row += n;
        }
        return { dx, dw, Tensor(), Tensor(), Tensor(), Tensor(), Tensor() };
    }
};

int64_t flagsOf(const Settings& s, bool save_original)
{
    return (save_original ? 1 : 0) | (s.e5m2_grads ? 2 : 0);
}

} // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, WeightCache& cache,
    const Settings& settings, bool save_original_input)
{
    const auto& w = cache.get(weight);
    return Fp8Linear::apply(x, weight, bias.defined() ? bias : torch::empty({ 0 }, x.options()),
        w.columnwise.data, w.rowwise.data, w.rowwise.scale_inv, flagsOf(settings, save_original_input));
}

Tensor groupedLinear(const Tensor& x, const Tensor& weight, const Tensor& counts, WeightCache& cache,
    const Settings& settings, SavedCodes* saved)
{
    const auto& w = cache.get(weight);
    const Tensor host_counts = counts.to(torch::kCPU).to(torch::kLong);
    Tensor out = Fp8GroupedLinear::apply(x, weight, host_counts, w.columnwise.data, w.rowwise.data,
        w.rowwise.scale_inv, flagsOf(settings, false));
    if (saved && out.grad_fn()) {
        // The input's codes the node saved: its first saved tensor.
        const auto* node = dynamic_cast<torch::autograd::CppNode<Fp8GroupedLinear>*>(out.grad_fn().get());
        TORCH_CHECK(node, "fp8: the grouped linear's node is not Fp8GroupedLinear's");
        saved->codes = node->ctx_.get_saved_variables().at(0);
        saved->rebuild = [host_counts](const Tensor& input, Tensor& codes) {
            torch::NoGradGuard no_grad;
            // Through a fresh tensor over the same storage: the node's saved copy keeps its version.
            Tensor flat = torch::empty({ 0 }, codes.options())
                              .set_(codes.storage(), codes.storage_offset(), { codes.numel() }, { 1 });
            fillExpertColumns(quantize(input, false).data, host_counts, flat);
        };
    }
    return out;
}

} // namespace rs::engine::fp8
