// SPDX-License-Identifier: Apache-2.0
// The worker's optimizer step (docs/benchmarks.md, "Worker on the H200"): checks that the one-pass AdamW
// kernel gives the bucketed torch path's result, then times both on the parameter shapes of the dense GPT
// benchmark recipe (8 x 4096, FFN 16384, vocab 32000). One JSON object per line; exit 1 when the paths
// disagree. On a machine without the kernel (CPU, or no nvcc) the check compares the bucketed path with
// itself and nothing is timed (the dense shapes need about 30 GB).
// Usage: bench_optimizer [--device cuda|cpu] [--steps N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/optimizer.h"
#include "engine/torch_compat.h"

using rs::engine::MainParamAdamW;
using Named = std::vector<std::pair<std::string, torch::Tensor>>;

namespace {

Named makeParams(const std::vector<std::vector<int64_t>>& shapes, const torch::TensorOptions& options)
{
    Named named;
    torch::manual_seed(1);
    for (size_t i = 0; i < shapes.size(); ++i)
        named.emplace_back("p" + std::to_string(i),
            (torch::randn(shapes[i], options.dtype(torch::kFloat32)) * 0.02).to(options.dtype()));
    return named;
}

void setGrads(Named& named, int step, bool skip_last)
{
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < named.size(); ++i) {
        auto& p = named[i].second;
        if (skip_last && i + 1 == named.size()) {
            p.mutable_grad() = torch::Tensor(); // a parameter with no gradient this step
            continue;
        }
        p.mutable_grad()
            = (torch::randn(p.sizes(), p.options().dtype(torch::kFloat32)) * 0.1).to(p.scalar_type());
    }
}

double bytesPerElement(bool one_pass, int64_t half_bytes)
{
    // One pass: read gradient, main, two moments; write main, two moments, 16-bit parameter.
    // Buckets: gradient read and fp32 copy written; fused AdamW reads that copy, main and moments and
    // writes main and moments; the copy-back reads main and writes the 16-bit parameter.
    return one_pass ? double(2 * half_bytes + 6 * 4) : double(half_bytes + 4 + 4 + 6 * 4 + 4 + half_bytes);
}

} // namespace

int main(int argc, char** argv)
{
    std::string device_name = torch::cuda::is_available() ? "cuda" : "cpu";
    int steps = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--device")
            device_name = argv[i + 1];
        else if (a == "--steps")
            steps = std::max(1, std::atoi(argv[i + 1]));
    }
    const torch::Device device(device_name);
    const auto options = torch::TensorOptions().device(device).dtype(torch::kBFloat16);

    // 1. Agreement, in bf16 and fp16, on awkward sizes (a single element, a partial vector, non-multiples
    //    of the chunk) and a parameter without a gradient.
    const std::vector<std::vector<int64_t>> small { { 1 }, { 5 }, { 4099 }, { 1027, 1021 }, { 8192, 33 },
        { 3 } };
    bool kernel = false, agree = true;
    for (const auto dtype : { torch::kBFloat16, torch::kHalf }) {
        const auto o = options.dtype(dtype);
        Named a = makeParams(small, o), b = makeParams(small, o);
        MainParamAdamW reference(b, MainParamAdamW::Path::Buckets);
        kernel = MainParamAdamW(a).onePassAvailable();
        MainParamAdamW candidate(a, kernel ? MainParamAdamW::Path::OnePass : MainParamAdamW::Path::Buckets);
        for (int s = 1; s <= 3; ++s) {
            setGrads(a, s, s == 2);
            setGrads(b, s, s == 2);
            candidate.step();
            reference.step();
        }
        // Differences against the largest value of each tensor: an element near zero has no useful
        // relative error of its own (Adam moves every element by about lr a step, whatever its size).
        double max_rel = 0;
        int64_t param_mismatch = 0, elements = 0;
        for (size_t i = 0; i < small.size(); ++i) {
            const auto ma = candidate.mainParams()[i], mb = reference.mainParams()[i];
            max_rel = std::max(max_rel, ((ma - mb).abs().max() / mb.abs().max()).item<double>());
            param_mismatch += (a[i].second != b[i].second).sum().item<int64_t>();
            elements += ma.numel();
        }
        // Same update, different order of fp32 operations: main parameters agree to a few ulps, and the
        // rounded 16-bit parameters almost everywhere (a few land on the other side of a rounding
        // boundary).
        const bool ok = max_rel < 1e-6 && param_mismatch <= elements / 1000;
        agree = agree && ok;
        std::printf(
            "{\"event\":\"optimizer_check\",\"device\":\"%s\",\"dtype\":\"%s\",\"one_pass_kernel\":%s,"
            "\"elements\":%lld,\"main_max_diff_rel_to_max\":%.3g,\"param16_mismatches\":%lld,"
            "\"agree\":%s}\n",
            device_name.c_str(), dtype == torch::kBFloat16 ? "bf16" : "fp16", kernel ? "true" : "false",
            static_cast<long long>(elements), max_rel, static_cast<long long>(param_mismatch),
            ok ? "true" : "false");
        std::fflush(stdout);
    }

    // 2. Time per step on the dense benchmark model's parameter shapes.
    if (!device.is_cuda())
        return agree ? 0 : 1;
    std::vector<std::vector<int64_t>> dense { { 32000, 4096 } };
    for (int l = 0; l < 8; ++l) {
        for (const auto& shape : std::vector<std::vector<int64_t>> { { 4096 }, { 4096 }, { 12288, 4096 },
                 { 12288 }, { 4096, 4096 }, { 4096 }, { 4096 }, { 4096 }, { 16384, 4096 }, { 16384 },
                 { 4096, 16384 }, { 4096 } })
            dense.push_back(shape);
    }
    dense.push_back({ 4096 });
    dense.push_back({ 4096 });
    for (const auto path : { MainParamAdamW::Path::OnePass, MainParamAdamW::Path::Buckets }) {
        if (path == MainParamAdamW::Path::OnePass && !kernel)
            continue;
        Named p = makeParams(dense, options);
        MainParamAdamW opt(p, path);
        int64_t n = 0;
        for (const auto& [name, t] : p)
            n += t.numel();
        std::vector<double> ms;
        for (int s = 0; s < steps + 2; ++s) {
            setGrads(p, s, false);
            rs::engine::compat::cudaSynchronize();
            const auto t0 = std::chrono::steady_clock::now();
            opt.step();
            rs::engine::compat::cudaSynchronize();
            if (s >= 2)
                ms.push_back(
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        const double median = ms[ms.size() / 2];
        const bool one_pass = path == MainParamAdamW::Path::OnePass;
        std::printf("{\"event\":\"optimizer_time\",\"path\":\"%s\",\"parameters\":%lld,\"median_ms\":%.3f,"
                    "\"min_ms\":%.3f,\"bytes_per_parameter\":%.0f,\"gb_per_s_by_byte_count\":%.0f}\n",
            one_pass ? "one-pass" : "buckets", static_cast<long long>(n), median, ms.front(),
            bytesPerElement(one_pass, 2), bytesPerElement(one_pass, 2) * double(n) / (median / 1000) / 1e9);
        std::fflush(stdout);
    }
    return agree ? 0 : 1;
}
