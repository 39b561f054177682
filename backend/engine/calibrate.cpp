// SPDX-License-Identifier: Apache-2.0
#include "engine/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

#include "engine/checkpoint.h"
#include "engine/fp8.h"
#include "engine/torch_compat.h"

namespace rs::engine {

namespace {

using torch::Tensor;

struct Bench {
    torch::Device device;
    torch::Dtype dtype;
    int repeats;

    void sync() const
    {
#if defined(RS_ENGINE_CUDA)
        if (device.is_cuda())
            torch::cuda::synchronize(device.index());
#endif
    }

    // Milliseconds of one call: two warm-up calls, then the median of `repeats` timings of `inner` calls
    // each, between CUDA events on a GPU (the device's time) or the host's clock.
    double ms(const std::function<void()>& f, int inner = 1) const
    {
        f();
        f();
        sync();
        std::vector<double> t;
        for (int i = 0; i < repeats; ++i) {
            compat::PhaseClock clock(device, 2);
            clock.mark(0);
            for (int k = 0; k < inner; ++k)
                f();
            clock.mark(1);
            sync();
            t.push_back(clock.ms(0, 1) / inner);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }

    // Host milliseconds of `inner` calls queued back to back, then waited for: the host's cost per call
    // when each call is a small kernel.
    double hostMs(const std::function<void()>& f, int inner) const
    {
        f();
        sync();
        std::vector<double> t;
        for (int i = 0; i < repeats; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < inner; ++k)
                f();
            sync();
            t.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()
                / inner);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }

    torch::TensorOptions opts() const
    {
        return torch::TensorOptions().device(device).dtype(dtype);
    }
};

GemmRate matmulRate(const Bench& b, int64_t m, int64_t n, int64_t k)
{
    const Tensor x = torch::randn({ m, k }, b.opts()), w = torch::randn({ k, n }, b.opts());
    GemmRate g { m, n, k, 1, 0 };
    g.tflops = g.flops() / (b.ms([&] { (void)torch::mm(x, w); }) * 1e9);
    return g;
}

// An FP8 product [m, k] x [k, n] as Transformer Engine's linears run it (E4M3 codes, per-tensor scales, bf16
// out), through at::_scaled_mm; nothing where the device runs no FP8 GEMM.
std::optional<GemmRate> fp8MatmulRate(const Bench& b, int64_t m, int64_t n, int64_t k)
{
    const fp8::Quantized x = fp8::quantize(torch::randn({ m, k }, b.opts()), false);
    const fp8::Quantized w = fp8::quantize(torch::randn({ n, k }, b.opts()), false); // b's transpose
    bool ran = false;
    (void)fp8::scaledMm(x, w, torch::kBFloat16, &ran);
    if (!ran)
        return std::nullopt;
    GemmRate g { m, n, k, 1, 0 };
    g.tflops = g.flops() / (b.ms([&] { (void)fp8::scaledMm(x, w, torch::kBFloat16); }) * 1e9);
    return g;
}

// Experts' products: `groups` of them over m rows in all (balanced), through torch::_grouped_mm where the
// device has it, else the batched product the worker's fallback runs (engine/model.cpp).
GemmRate groupedRate(const Bench& b, int64_t groups, int64_t m, int64_t n, int64_t k)
{
    const int64_t rows = m / groups;
    GemmRate g { rows * groups, n, k, groups, 0 };
    const Tensor x = torch::randn({ rows * groups, k }, b.opts());
    const Tensor w = torch::randn({ groups, k, n }, b.opts());
    double t = 0;
    if (compat::groupedMmAvailable(x)) {
        const Tensor offs
            = torch::arange(1, groups + 1, torch::TensorOptions().device(b.device).dtype(torch::kInt))
            * static_cast<int>(rows);
        t = b.ms([&] { (void)compat::groupedMm(x, w, offs); });
    } else {
        const Tensor xb = x.view({ groups, rows, k });
        t = b.ms([&] { (void)torch::bmm(xb, w); });
    }
    g.tflops = g.flops() / (t * 1e9);
    return g;
}

// The backward alone: forward with backward less the forward, never below a tenth of the whole (timing noise
// on the CPU).
double backwardMs(double both, double forward)
{
    return std::max(both - forward, both * 0.1);
}

std::string utcNow()
{
    const std::time_t now = std::time(nullptr);
    char buf[32];
    std::tm tm {};
    gmtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

} // namespace

CalibrationRates calibrate(const CalibrateOptions& o)
{
    const bool gpu = compat::cudaBuilt() && torch::cuda::is_available();
    torch::Device device(torch::kCPU);
    try {
        device = o.device == "auto" ? (gpu ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU))
                                    : torch::Device(o.device);
    } catch (const std::exception&) {
        throw std::invalid_argument("--device: '" + o.device + "' is not auto, cpu, cuda or cuda:N");
    }
    if (device.is_cuda() && !gpu)
        throw std::invalid_argument("--device " + o.device + ": this worker has no CUDA device");
    if (device.is_cuda() && !device.has_index())
        device = torch::Device(torch::kCUDA, 0);
    if (device.is_cuda())
        compat::cudaSetDevice(device.index());
    torch::Dtype dtype = torch::kBFloat16;
    if (o.dtype == "fp16")
        dtype = torch::kHalf;
    else if (o.dtype == "fp32")
        dtype = torch::kFloat;
    else if (o.dtype != "bf16")
        throw std::invalid_argument("--dtype: '" + o.dtype + "' is not bf16, fp16 or fp32");
    const bool quick = o.quick || !device.is_cuda();
    torch::NoGradGuard no_grad;
    const Bench b { device, dtype, quick ? 3 : 10 };

    CalibrationRates c;
    c.device = device.is_cuda() ? compat::cudaDeviceName(device.index()) : "cpu";
    c.dtype = o.dtype;
    c.torch_version = TORCH_VERSION;
    c.measured_at = utcNow();
    c.source = o.command.empty() ? "recompute-bench --calibrate" : o.command;
    c.provisional = false;

    // Products at the sizes of layers: square ones, and the projections and MLP of a 4096-wide model.
    const std::vector<std::array<int64_t, 3>> sizes = quick
        ? std::vector<std::array<int64_t, 3>> { { 64, 64, 64 }, { 128, 128, 128 }, { 256, 256, 256 } }
        : std::vector<std::array<int64_t, 3>> { { 1024, 1024, 1024 }, { 2048, 2048, 2048 },
              { 4096, 4096, 4096 }, { 4096, 11264, 2048 }, { 8192, 8192, 8192 } };
    for (const auto& s : sizes)
        c.matmul.push_back(matmulRate(b, s[0], s[1], s[2]));
    sortByFlops(c.matmul);
    // The same sizes in FP8 where the device has FP8 GEMMs (Hopper and later, LibTorch >= 2.5).
    if (device.is_cuda() && fp8::hasScaledMm() && !quick) {
        for (const auto& s : sizes)
            if (const auto g = fp8MatmulRate(b, s[0], s[1], s[2]))
                c.fp8_matmul.push_back(*g);
        sortByFlops(c.fp8_matmul);
    }

    // Experts: 8 local experts over the routed tokens of a 4096-token micro-batch at top-1 and top-6.
    if (quick) {
        c.grouped_gemm = { groupedRate(b, 4, 128, 64, 64), groupedRate(b, 4, 512, 128, 64) };
    } else {
        c.grouped_gemm = { groupedRate(b, 8, 4096, 1408, 2048), groupedRate(b, 8, 24576, 2816, 2048) };
    }

    // Causal attention (SDPA: flash or memory-efficient where the device has them): forward, and forward
    // with backward, whose FLOPs are 2.5 x the forward's.
    {
        const int64_t heads = quick ? 2 : 16, s = quick ? 128 : 4096, d = quick ? 32 : 128;
        const double fwd_flops = 0.5 * 4.0 * double(heads) * double(s) * double(s) * double(d);
        Tensor q = torch::randn({ 1, heads, s, d }, b.opts()), k = torch::randn_like(q),
               v = torch::randn_like(q);
        const double fwd = b.ms([&] { (void)compat::scaledDotProductAttention(q, k, v, 0.0, true); });
        torch::AutoGradMode grad(true);
        q.requires_grad_(true);
        k.requires_grad_(true);
        v.requires_grad_(true);
        const Tensor go = torch::randn_like(q);
        const double both = b.ms([&] {
            Tensor out = compat::scaledDotProductAttention(q, k, v, 0.0, true);
            out.backward(go);
        });
        c.attention_fwd_tflops = fwd_flops / (fwd * 1e9);
        c.attention_bwd_tflops = 2.5 * fwd_flops / (backwardMs(both, fwd) * 1e9);
    }

    // Unfused attention, the chain Megatron Core's local DotProductAttention runs (the worker's
    // Model::unfusedAttentionHead and its tail): baddbmm QK^T scaled, the causal mask filled in place, the
    // softmax over each row, PV; forward, and forward with backward. Then dropout over the probabilities
    // alone. Rates per score element (b x heads x sq x sk), the unit the model counts them in.
    {
        const int64_t heads = quick ? 2 : 16, s = quick ? 128 : 4096, d = quick ? 32 : 128;
        const double scores = double(heads) * double(s) * double(s);
        Tensor q = torch::randn({ heads, s, d }, b.opts()), k = torch::randn_like(q),
               v = torch::randn_like(q);
        const Tensor mask = torch::ones({ s, s }, b.opts().dtype(torch::kBool)).triu(1);
        const Tensor buffer = torch::empty({ heads, s, s }, b.opts());
        const double scale = 1.0 / std::sqrt(double(d));
        const auto chain = [&] {
            Tensor x = at::baddbmm(buffer, q, k.transpose(1, 2), 0.0, scale);
            x.masked_fill_(mask, -10000.0);
            return at::bmm(at::softmax(x, -1), v);
        };
        const double fwd = b.ms([&] { (void)chain(); });
        torch::AutoGradMode grad(true);
        q.requires_grad_(true);
        k.requires_grad_(true);
        v.requires_grad_(true);
        const Tensor go = torch::randn_like(q);
        // autograd::grad, not backward(): in a layer these gradients flow on; backward() into leaves would
        // add an accumulation pass into .grad to every repeat after the first.
        const double both = b.ms([&] { (void)torch::autograd::grad({ chain() }, { q, k, v }, { go }); });
        c.unfused_attention_fwd_gscores = scores / (fwd * 1e6);
        c.unfused_attention_bwd_gscores = scores / (backwardMs(both, fwd) * 1e6);
        const Tensor p = torch::rand({ heads, s, s }, b.opts()).requires_grad_(true);
        const Tensor gp = torch::randn_like(p);
        const double dfwd = b.ms([&] { (void)torch::dropout(p, 0.1, true); });
        // The same for dropout, where the accumulation into p.grad was a pass over every score (the shipped
        // H100 and H200 records were measured with it: the H100 profile shows 14.75 ms a step of dropout
        // backward where that record predicts 31.3, docs/benchmarks.md; re-measure them).
        const double dboth
            = b.ms([&] { (void)torch::autograd::grad({ torch::dropout(p, 0.1, true) }, { p }, { gp }); });
        c.score_dropout_fwd_gscores = scores / (dfwd * 1e6);
        c.score_dropout_bwd_gscores = scores / (backwardMs(dboth, dfwd) * 1e6);
    }

    // Bandwidth: an out-of-place add reads two tensors and writes one.
    {
        const int64_t n = quick ? (1 << 20) : (int64_t(1) << 28);
        const Tensor x = torch::randn({ n }, b.opts()), y = torch::randn({ n }, b.opts());
        const double bytes = 3.0 * double(n) * double(x.element_size());
        c.elementwise_gbps = bytes / (b.ms([&] { (void)torch::add(x, y); }) * 1e6);
    }

    // The main_grad accumulation: an fp32 buffer added to in place from a tensor of the run's dtype (DDP's
    // hook, main_grad.add_(grad)); 4 + 2 bytes read and 4 written an element in bf16. Only where the dtypes
    // differ: an fp32 run's is the add above.
    if (b.opts().dtype() != torch::kFloat32) {
        const int64_t n = quick ? (1 << 20) : (int64_t(1) << 28);
        const Tensor buffer = torch::zeros({ n }, b.opts().dtype(torch::kFloat32));
        const Tensor grad = torch::randn({ n }, b.opts());
        const double bytes = double(n) * (2.0 * 4 + double(grad.element_size()));
        c.accumulate_gbps = bytes / (b.ms([&] { buffer.add_(grad); }) * 1e6);
    }

    // The host's cost of a small kernel: a thousand one-element adds queued, then waited for.
    {
        const Tensor t = torch::ones({ 1 }, b.opts());
        c.kernel_launch_us = 1000 * b.hostMs([&] { (void)torch::add(t, t); }, 1000);
    }

    // A checkpoint around a one-kernel region, forward and backward, less the same region without it: the
    // worker's checkpoint machinery (engine/checkpoint.h) on the host.
    {
        torch::AutoGradMode grad(true);
        const Tensor x = torch::ones({ 8 }, b.opts()).requires_grad_(true);
        const Region region = [](const std::vector<Tensor>& in) { return std::vector<Tensor> { in[0] * 2 }; };
        const double plain = b.hostMs([&] { region({ x })[0].sum().backward(); }, 200);
        const double ckpt = b.hostMs([&] { checkpoint(region, { x })[0].sum().backward(); }, 200);
        c.checkpoint_us = 1000 * std::max(ckpt - plain, 0.01 * ckpt);
    }

    // A device-to-host read of one element after the queue ran dry.
    {
        const Tensor t = torch::ones({ 1 }, b.opts());
        c.host_sync_us = 1000 * b.hostMs([&] { (void)torch::add(t, t).item<float>(); }, 100);
    }
    return c;
}

} // namespace rs::engine
