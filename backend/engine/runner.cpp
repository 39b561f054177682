// SPDX-License-Identifier: Apache-2.0
#include "engine/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/flops.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "engine/checkpoint.h"
#include "engine/memory_probe.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/torch_compat.h"

namespace rs::engine {
namespace {

using nlohmann::json;

class Stream {
public:
    explicit Stream(std::ostream& out)
        : out_(out)
    {
    }
    void emit(const json& j)
    {
        out_ << j.dump() << '\n';
        out_.flush();
    }

private:
    std::ostream& out_;
};

int envInt(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

json hello(const Recipe& recipe, const torch::Device& device)
{
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const bool cuda = device.is_cuda();
    return { { "event", "hello" }, { "worker_version", RS_VERSION }, { "libtorch_version", TORCH_VERSION },
        { "cuda_version", cuda ? json(compat::cudaRuntimeVersion()) : json(nullptr) },
        { "nccl_version", nullptr },
        { "device", cuda ? compat::cudaDeviceName(device.index()) : std::string("cpu") },
        { "device_kind", cuda ? "cuda" : "cpu" }, { "host", host }, { "pid", static_cast<int64_t>(getpid()) },
        { "rank", envInt("RANK", 0) }, { "world_size", envInt("WORLD_SIZE", 1) },
        { "local_rank", envInt("LOCAL_RANK", 0) }, { "profile", profileName(recipe.profile) },
        { "stream_version", 1 }, { "cpu_threads", at::get_num_threads() } };
}

json result(const std::string& status, const std::optional<std::string>& stage, std::optional<int> iteration,
    const std::string& message)
{
    return { { "event", "result" }, { "status", status }, { "stage", stage ? json(*stage) : json(nullptr) },
        { "iteration", iteration ? json(*iteration) : json(nullptr) }, { "message", message },
        { "steady_step_ms", nullptr }, { "tokens_per_s", nullptr }, { "model_tflops", nullptr },
        { "executed_tflops", nullptr }, { "model_flops_per_step", nullptr },
        { "executed_flops_per_step", nullptr } };
}

bool isOutOfMemory(const std::exception& e)
{
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e))
        return true;
    const std::string what = e.what();
    return what.find("out of memory") != std::string::npos
        || what.find("can't allocate memory") != std::string::npos;
}

// The first line of an exception's message (c10 appends a C++ backtrace).
std::string firstLine(const std::string& text)
{
    return text.substr(0, text.find('\n'));
}

struct Peak {
    int64_t allocated = 0;
    int64_t reserved = 0;
};

} // namespace

int runRecipe(const Recipe& recipe, InputFormat format, const RunOptions& options, std::ostream& out,
    const std::string& input_error)
{
    Stream stream(out);
    torch::Device device(torch::kCPU);
    std::string device_error;
    try {
        device = torch::Device(options.device);
        if (device.is_cuda() && !device.has_index())
            device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(envInt("LOCAL_RANK", 0)));
        if (device.is_cuda() && !(compat::cudaBuilt() && torch::cuda::is_available()))
            device_error = "--device cuda: this worker has no CUDA device (built with CUDA: "
                + std::string(compat::cudaBuilt() ? "yes" : "no") + ")";
    } catch (const std::exception& e) {
        device_error = "--device: " + firstLine(e.what());
        device = torch::Device(torch::kCPU);
    }
    stream.emit(hello(recipe, device));
    if (!input_error.empty()) {
        stream.emit(result("invalid", "validate", std::nullopt, input_error));
        return kInvalid;
    }

    // Validation first: a recipe with errors ends here, before anything is allocated.
    const Validation validation = validate(recipe, format);
    const Recipe& resolved = validation.resolved;
    json findings = json::array();
    for (const auto& f : validation.findings)
        findings.push_back(findingToJson(f));
    ModelConfig config = modelConfig(resolved);
    stream.emit({ { "event", "recipe" }, { "recipe", recipeToJson(resolved) },
        { "recipe_hash", sha256Hex(recipeCanonicalText(resolved)) }, { "findings", findings },
        { "stage_scope", config.stage_scope } });
    if (validation.hasErrors()) {
        for (const auto& f : validation.findings) {
            if (f.severity == Severity::Error) {
                stream.emit(result("invalid", "validate", std::nullopt, f.rule_id + ": " + f.message));
                break;
            }
        }
        return kInvalid;
    }
    if (!device_error.empty()) {
        stream.emit(result("error", "build", std::nullopt, device_error));
        return kError;
    }
    RecomputePlan plan;
    try {
        plan = recomputePlan(resolved, config);
    } catch (const EngineError& e) {
        auto r = result("error", "build", std::nullopt, e.what());
        r["field"] = e.field;
        stream.emit(r);
        return kError;
    }

    const int warmup = std::max(0, options.warmup.value_or(resolved.warmup_iters));
    const int steady
        = std::max(1, options.iters.value_or(std::max(1, resolved.train_iters - resolved.warmup_iters)));
    const int rank = envInt("RANK", 0);
    const auto sync = [&] {
        if (device.is_cuda())
            compat::cudaSynchronize();
    };

    std::string stage = "build";
    int iteration = 0; // 0: not inside a step
    try {
        auto probe = MemoryProbe::create(device);
        stream.emit({ { "event", "phase" }, { "phase", "build" }, { "rank", rank } });
        Model model(config, plan, device, options.seed);
        MainParamAdamW optimizer(model.parameters());
        const auto [tokens, labels] = model.batch(options.seed + 1);
        torch::manual_seed(options.seed + 2); // dropout draws from here on

        std::map<std::string, Peak> phase_peaks;
        Peak overall;
        std::string overall_phase;
        int overall_iteration = 0;
        std::vector<double> steady_ms;
        FlopCount flops;
        const auto note = [&](const std::string& phase, const MemorySnapshot& s, int it) {
            auto& p = phase_peaks[phase];
            p.allocated = std::max(p.allocated, s.peak_allocated);
            p.reserved = std::max(p.reserved, s.peak_reserved);
            if (s.peak_allocated > overall.allocated) {
                overall.allocated = s.peak_allocated;
                overall_phase = phase;
                overall_iteration = it;
            }
            overall.reserved = std::max(overall.reserved, s.peak_reserved);
        };

        // Marks: step start, forward done, backward done, optimizer done.
        compat::PhaseClock clock(device, 4);
        for (int it = 1; it <= warmup + steady; ++it) {
            iteration = it;
            const bool is_steady = it > warmup;
            if (it == 1 && warmup > 0)
                stream.emit({ { "event", "phase" }, { "phase", "warmup" }, { "rank", rank } });
            if (it == warmup + 1)
                stream.emit({ { "event", "phase" }, { "phase", "steady" }, { "rank", rank } });
            sync();
            resetFlopCount();
            const auto t0 = std::chrono::steady_clock::now();
            clock.mark(0);

            stage = "forward";
            probe->resetPeak();
            auto loss = model.loss(tokens, labels);
            const auto fwd = probe->read();
            clock.mark(1);

            stage = "backward";
            probe->resetPeak();
            loss.backward();
            const auto loss_value = loss.detach();
            loss = torch::Tensor(); // frees what is left of the graph
            const auto bwd = probe->read();
            clock.mark(2);

            const bool init = !optimizer.initialized();
            stage = init ? "optimizer-init" : "optimizer";
            if (init)
                stream.emit({ { "event", "phase" }, { "phase", "optimizer-init" }, { "rank", rank } });
            probe->resetPeak();
            optimizer.step();
            clock.mark(3);
            sync();
            const auto opt = probe->read();
            const double ms
                = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            flops = flopCount();

            const double lv = loss_value.item<double>();
            const bool finite = std::isfinite(lv);
            note("forward", fwd, it);
            note("backward", bwd, it);
            note(stage, opt, it);
            if (is_steady)
                steady_ms.push_back(ms);
            stream.emit({ { "event", "iteration" }, { "rank", rank }, { "iteration", it },
                { "phase", is_steady ? "steady" : "warmup" }, { "step_ms", ms },
                { "forward_ms", clock.ms(0, 1) }, { "backward_ms", clock.ms(1, 2) },
                { "optimizer_ms", clock.ms(2, 3) }, { "loss", finite ? json(lv) : json(nullptr) },
                { "loss_finite", finite }, { "forward_peak_allocated", fwd.peak_allocated },
                { "forward_peak_reserved", fwd.peak_reserved },
                { "backward_peak_allocated", bwd.peak_allocated },
                { "backward_peak_reserved", bwd.peak_reserved },
                { "optimizer_peak_allocated", opt.peak_allocated },
                { "optimizer_peak_reserved", opt.peak_reserved }, { "allocated_after", opt.allocated },
                { "reserved_after", opt.reserved }, { "alloc_retries", opt.alloc_retries },
                { "optimizer_init", init }, { "forward_allocated_after", fwd.allocated } });
            if (!finite) {
                stream.emit(result(
                    "nonfinite", "forward", it, "loss is not finite at iteration " + std::to_string(it)));
                return kNonfinite;
            }
        }
        iteration = 0;

        std::vector<double> sorted = steady_ms;
        std::sort(sorted.begin(), sorted.end());
        double mean = 0;
        for (double v : steady_ms)
            mean += v;
        mean /= static_cast<double>(steady_ms.size());
        const size_t n = sorted.size();
        const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        json peaks = json::object();
        for (const auto& [phase, p] : phase_peaks)
            peaks[phase] = { { "allocated", p.allocated }, { "reserved", p.reserved } };
        stream.emit({ { "event", "rank_summary" }, { "rank", rank }, { "peak_allocated", overall.allocated },
            { "peak_reserved", overall.reserved }, { "peak_phase", overall_phase },
            { "peak_iteration", overall_iteration }, { "steady_step_ms", mean },
            { "steady_step_ms_median", median }, { "phase_peaks", peaks } });

        const double model_flops = modelFlops(resolved, config.global_layers).per_step;
        const double executed_flops
            = 3.0 * static_cast<double>(flops.forward) + static_cast<double>(flops.replay);
        auto r = result("pass", std::nullopt, std::nullopt, "");
        const double seconds = mean / 1000.0;
        r["steady_step_ms"] = mean;
        r["tokens_per_s"] = static_cast<double>(config.seq) * config.micro_batch / seconds;
        r["model_tflops"] = model_flops / seconds / 1e12;
        r["executed_tflops"] = executed_flops / seconds / 1e12;
        r["model_flops_per_step"] = model_flops;
        r["executed_flops_per_step"] = executed_flops;
        r["replay_flops_per_step"] = static_cast<double>(flops.replay);
        stream.emit(r);
        return kPass;
    } catch (const std::exception& e) {
        if (isOutOfMemory(e)) {
            stream.emit(result(
                "oom", stage, iteration ? std::optional<int>(iteration) : std::nullopt, firstLine(e.what())));
            return kOom;
        }
        stream.emit(result(
            "error", stage, iteration ? std::optional<int>(iteration) : std::nullopt, firstLine(e.what())));
        return kError;
    }
}

} // namespace rs::engine
