// SPDX-License-Identifier: Apache-2.0
#include "engine/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <new>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>

#include "core/flops.h"
#include "core/model_shape.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/stream.h"
#include "core/units.h"
#include "engine/checkpoint.h"
#include "engine/distributed.h"
#include "engine/layout_rank.h"
#include "engine/memory_probe.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/timing.h"
#include "engine/torch_compat.h"

namespace rs::engine {
namespace {

using nlohmann::json;

class Stream {
public:
    Stream(std::ostream& out, bool enabled)
        : out_(out)
        , enabled_(enabled)
    {
    }
    template <typename Event> void emit(const Event& e) { emit(e.toJson()); }
    // Whole lines only, also when a rank's failure watcher emits the result from its own thread.
    void emit(const json& j)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!enabled_) {
            // A quiet rank's own ending still reaches whoever reads its diagnostics.
            if (j.value("event", "") == "result" && j.value("status", "") != "pass")
                std::cerr << "recompute-bench: " << j.value("status", "") << ": " << j.value("message", "")
                          << '\n';
            return;
        }
        // replace: a message that quotes bad input is still one line of valid JSON, never an exception.
        out_ << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
        out_.flush();
        // Nobody reads the stream any more (the launcher or the window ended, SIGPIPE is ignored): end as
        // the signal would have ended us, instead of training for nobody.
        if (!out_)
            std::_Exit(128 + SIGPIPE);
    }

private:
    std::ostream& out_;
    bool enabled_;
    std::mutex mutex_;
};

stream::Hello hello(const Recipe& recipe, const torch::Device& device, const RankInfo& ranks)
{
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const bool cuda = device.is_cuda();
    stream::Hello h;
    h.worker_version = RS_VERSION;
    h.libtorch_version = TORCH_VERSION;
    if (cuda)
        h.cuda_version = compat::cudaRuntimeVersion();
    if (cuda && !ncclVersion().empty())
        h.nccl_version = ncclVersion();
    h.device = cuda ? compat::cudaDeviceName(device.index()) : std::string("cpu");
    h.device_kind = cuda ? "cuda" : "cpu";
    h.host = host;
    h.pid = static_cast<int64_t>(getpid());
    h.rank = ranks.rank;
    h.world_size = ranks.world_size;
    h.local_rank = ranks.local_rank;
    h.profile = profileName(recipe.profile);
    h.cpu_threads = at::get_num_threads();
    return h;
}

stream::Result result(const std::string& status, const std::optional<std::string>& stage,
    std::optional<int> iteration, const std::string& message)
{
    stream::Result r;
    r.status = status;
    r.stage = stage;
    r.iteration = iteration;
    r.message = message;
    return r;
}

stream::Phase phaseEvent(const char* phase, int rank)
{
    stream::Phase p;
    p.phase = phase;
    p.rank = rank;
    return p;
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

// The attribution of one phase's highest peak over the run (this rank's).
struct PhaseAttribution {
    int64_t peak_allocated = -1;
    int iteration = 0;
    PeakAttribution attribution;
};

stream::PeakAttribution attributionEvent(int rank, const std::string& phase, const PhaseAttribution& a)
{
    stream::PeakAttribution e;
    e.rank = rank;
    e.phase = phase;
    e.iteration = a.iteration;
    e.peak_allocated = a.peak_allocated;
    for (int c = 0; c <= static_cast<int>(MemoryCategory::Workspace); ++c)
        e.categories[categoryName(static_cast<MemoryCategory>(c))] = 0;
    for (const auto& r : a.attribution.regions) {
        e.categories[categoryName(r.category)] += r.bytes;
        e.attributed += r.bytes;
        if (r.category == MemoryCategory::Activations)
            e.activations.push_back(
                { r.layer >= 0 ? std::optional<int>(r.layer) : std::nullopt, r.region, r.bytes });
    }
    return e;
}

// One rank's figures of one step, in the order they travel between ranks (DataParallelGroup::gather).
struct StepFigures {
    enum Index {
        StepMs,
        ForwardMs,
        BackwardMs,
        GradReduceMs,
        OptimizerMs,
        Loss,
        LossFinite,
        ForwardPeakAllocated,
        ForwardPeakReserved,
        BackwardPeakAllocated,
        BackwardPeakReserved,
        OptimizerPeakAllocated,
        OptimizerPeakReserved,
        AllocatedAfter,
        ReservedAfter,
        AllocRetries,
        ForwardAllocatedAfter,
        Count
    };
};

// Per-rank bookkeeping for the summary: phase peaks, the overall peak and where it happened, steady times.
struct RankRecord {
    std::map<std::string, Peak> phase_peaks;
    Peak overall;
    std::string overall_phase;
    int overall_iteration = 0;
    std::vector<double> steady_ms;

    void note(const std::string& phase, int64_t allocated, int64_t reserved, int it)
    {
        auto& p = phase_peaks[phase];
        p.allocated = std::max(p.allocated, allocated);
        p.reserved = std::max(p.reserved, reserved);
        if (allocated > overall.allocated) {
            overall.allocated = allocated;
            overall_phase = phase;
            overall_iteration = it;
        }
        overall.reserved = std::max(overall.reserved, reserved);
    }
};

double meanOf(const std::vector<double>& v)
{
    double sum = 0;
    for (double x : v)
        sum += x;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double medianOf(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int exitCodeOf(const std::string& status)
{
    return status == "oom"      ? kOom
        : status == "nonfinite" ? kNonfinite
        : status == "invalid"   ? kInvalid
                                : kError;
}

// What the engine itself cannot build, checked in arithmetic before anything is allocated: the sizes it
// divides by or allocates (validate's RS23-RS29 say the same, but the worker must never end on a signal or
// an uncaught bad_alloc whatever it is given), and a rough footprint against this host's memory on CPU
// (where an oversized run would be killed by the kernel instead of reporting oom).
struct SizeProblem {
    std::string field;
    std::string message;
};

std::optional<SizeProblem> sizeProblem(
    const Recipe& r, const RunOptions& options, const torch::Device& device)
{
    // The run's length, as train() takes it, in 64 bits: the recipe's own (no --warmup / --iters) is bounded
    // as the options are, so the iteration count never nears int's limit (train_iters=2147483647 would run
    // for ever and count past it).
    const long long warmup = options.warmup.value_or(r.warmup_iters);
    const long long steady = options.iters.value_or(static_cast<long long>(r.train_iters) - r.warmup_iters);
    if (warmup > kMaxIterations)
        return SizeProblem { "warmup_iters",
            "warmup_iters=" + std::to_string(warmup) + ": at most " + std::to_string(kMaxIterations)
                + " warm-up iterations a run" };
    if (steady > kMaxIterations)
        return SizeProblem { "train_iters",
            "train_iters=" + std::to_string(r.train_iters) + " is " + std::to_string(steady)
                + " steady iterations: at most " + std::to_string(kMaxIterations)
                + " a run (--iters N runs N)" };
    const std::pair<const char*, long long> sizes[] = {
        { "num_layers", r.num_layers },
        { "hidden_size", r.hidden_size },
        { "num_attention_heads", r.num_attention_heads },
        { "seq_length", r.seq_length },
        { "micro_batch_size", r.micro_batch_size },
        { "vocab_size", r.vocab_size },
        { "pipeline_model_parallel_size", r.pipeline_model_parallel_size },
        { "virtual_pipeline_model_parallel_size", r.virtual_pipeline_model_parallel_size.value_or(1) },
        { "num_query_groups", r.num_query_groups.value_or(1) },
        { "ffn_hidden_size", r.ffn_hidden_size.value_or(1) },
        { "kv_channels", r.kv_channels.value_or(1) },
        { "moe_ffn_hidden_size", r.moe_ffn_hidden_size.value_or(1) },
        { "num_moe_experts", r.num_moe_experts.value_or(1) },
        { "moe_latent_size", r.moe_latent_size.value_or(1) },
    };
    for (const auto& [field, value] : sizes) {
        if (value < 1)
            return SizeProblem { field,
                std::string(field) + "=" + std::to_string(value) + ": must be at least 1" };
    }
    const long long groups = r.num_query_groups.value_or(r.num_attention_heads);
    if (r.num_attention_heads % groups != 0)
        return SizeProblem { "num_query_groups",
            "num_attention_heads=" + std::to_string(r.num_attention_heads)
                + " is not divisible by num_query_groups=" + std::to_string(groups) };
    if (!r.kv_channels && r.hidden_size < r.num_attention_heads)
        return SizeProblem { "hidden_size",
            "hidden_size=" + std::to_string(r.hidden_size) + " is smaller than num_attention_heads="
                + std::to_string(r.num_attention_heads) + " (kv_channels would be 0)" };
    if (r.num_moe_experts && (r.moe_router_topk < 1 || r.moe_router_topk > *r.num_moe_experts))
        return SizeProblem { "moe_router_topk",
            "moe_router_topk=" + std::to_string(r.moe_router_topk)
                + ": must be between 1 and num_moe_experts=" + std::to_string(*r.num_moe_experts) };
    const long long chunks = static_cast<long long>(r.pipeline_model_parallel_size)
        * r.virtual_pipeline_model_parallel_size.value_or(1);
    if (chunks > r.num_layers)
        return SizeProblem { "pipeline_model_parallel_size",
            "pipeline_model_parallel_size x virtual_pipeline_model_parallel_size = " + std::to_string(chunks)
                + " exceeds num_layers=" + std::to_string(r.num_layers) };
    // The layers this worker builds (the first pipeline stage), and a footprint in doubles (no overflow):
    // parameters with gradients, fp32 main copies and Adam's two moments, plus the logits and a few
    // hidden-sized activations per layer.
    const double layers = static_cast<double>(r.num_layers / chunks)
        * static_cast<double>(chunks / r.pipeline_model_parallel_size);
    if (layers > kMaxLayers)
        return SizeProblem { "num_layers",
            "the first pipeline stage would build " + json(layers).dump()
                + " layers; the worker builds at most " + std::to_string(kMaxLayers) + " (RS36)" };
    const double h = r.hidden_size;
    const double ffn = r.ffn_hidden_size ? static_cast<double>(*r.ffn_hidden_size) : 4.0 * h;
    const double heads = r.num_attention_heads;
    const double kv = r.kv_channels.value_or(r.hidden_size / r.num_attention_heads);
    const double experts = r.num_moe_experts.value_or(0);
    const double moeFfn = r.moe_ffn_hidden_size ? static_cast<double>(*r.moe_ffn_hidden_size) : ffn;
    const double mlpMats = r.gated_linear_unit ? 3 : 2;
    const double attention = h * (heads + 2.0 * static_cast<double>(groups)) * kv + heads * kv * h;
    // Latent MoE: the experts at moe_latent_size, and its two projections.
    const double routed = r.moe_latent_size ? static_cast<double>(*r.moe_latent_size) : h;
    const double mlp = experts > 0
        ? experts * routed * moeFfn * mlpMats + h * experts + (r.moe_latent_size ? 2 * h * routed : 0)
        : h * ffn * mlpMats;
    const double params = layers * (attention + mlp) + 2.0 * r.vocab_size * h;
    const double elt = (r.bf16 || r.fp16) ? 2 : 4;
    const double tokens = static_cast<double>(r.seq_length) * r.micro_batch_size;
    const double bytes = params * (2 * elt + 12)
        + layers * tokens * (16 * h + 4 * std::max(ffn, moeFfn)) * elt + tokens * r.vocab_size * (elt + 8);
    // Every micro-batch of a step is drawn up front (token ids and labels, int64): a global batch of a
    // billion samples is a refusal naming it, not an allocation that fails.
    const double dp = std::max(1, r.data_parallel_size);
    const double microBatches = r.global_batch_size
        ? std::max(1.0, std::floor(static_cast<double>(*r.global_batch_size) / (r.micro_batch_size * dp)))
        : 1.0;
    const double inputs = microBatches * tokens * 16;
    if (inputs > 64e9)
        return SizeProblem { "global_batch_size",
            "global_batch_size=" + std::to_string(r.global_batch_size.value_or(0)) + " is "
                + json(microBatches).dump() + " micro-batches a step, whose tokens and labels alone take "
                + formatGbShort(inputs / kBytesPerGb, 0)
                + " GB (the worker draws a step's micro-batches up "
                  "front); at most 64 GB of them" };
    if (device.is_cpu()) {
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long page = sysconf(_SC_PAGE_SIZE);
        const double host
            = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
        if (host > 0 && bytes > host)
            return SizeProblem { "num_layers",
                "the recipe needs about " + formatGbShort(bytes / kBytesPerGb, 0)
                    + " GB (parameters, gradients, optimizer state and activations of the first pipeline "
                      "stage); "
                      "this host has "
                    + formatGbShort(host / kBytesPerGb, 0) + " GB" };
    }
    if (bytes > 1e18) // no device has an exabyte; also keeps every size below int64 in the model
        return SizeProblem { "num_layers",
            "the recipe needs about " + json(bytes).dump() + " bytes: more than any device holds" };
    return std::nullopt;
}

// The device of this rank: --device, or with "auto" the GPU when this build has one; cuda without an index
// is the rank's LOCAL_RANK. A device the worker cannot use is no exception here: hello still names the
// device first, and the run ends with a build error after the recipe event.
struct DeviceChoice {
    torch::Device device { torch::kCPU };
    std::string error;
};

DeviceChoice chooseDevice(const std::string& option, const RankInfo& ranks)
{
    DeviceChoice c;
    try {
        const bool gpu = compat::cudaBuilt() && torch::cuda::is_available();
        c.device = option == "auto" ? (gpu ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU))
                                    : torch::Device(option);
        if (c.device.is_cuda() && !c.device.has_index())
            c.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(ranks.local_rank));
        if (c.device.is_cuda() && !(compat::cudaBuilt() && torch::cuda::is_available()))
            c.error = "--device cuda: this worker has no CUDA device (built with CUDA: "
                + std::string(compat::cudaBuilt() ? "yes" : "no") + ")";
        else if (c.device.is_cuda() && c.device.index() >= static_cast<int>(torch::cuda::device_count()))
            c.error = "--device cuda:" + std::to_string(c.device.index()) + " (LOCAL_RANK "
                + std::to_string(ranks.local_rank) + "): this host has "
                + std::to_string(torch::cuda::device_count()) + " CUDA devices";
        else if (c.device.is_cuda())
            compat::cudaSetDevice(c.device.index());
    } catch (const std::exception& e) {
        c.error = "--device: " + firstLine(e.what());
        c.device = torch::Device(torch::kCPU);
    }
    return c;
}

// The recipe as this rank runs it: validate's resolved recipe, the engine's model of it (for the rank of
// the layout), its recompute plan and Megatron's training layout (micro-batches, DP, the optimizer's).
struct ResolvedRun {
    Validation validation;
    ModelConfig config;
    RecomputePlan plan;
    TrainingLayout layout;

    const Recipe& recipe() const { return validation.resolved; }
};

// What the engine can build of a valid recipe; an EngineError names the field that it cannot.
void planRun(ResolvedRun& run, const RankInfo& ranks, const std::optional<EngineError>& layout_error)
{
    const Recipe& resolved = run.recipe();
    const ModelConfig& config = run.config;
    if (layout_error)
        throw *layout_error;
    run.plan = recomputePlan(resolved, config);
    run.layout = trainingLayout(resolved, config.dtype, ranks.rank, std::max(1, ranks.world_size));
    if (ranks.world_size > 1 && (config.tp > 1 || config.cp > 1 || config.ep > 1))
        throw EngineError(config.tp > 1 ? "tensor_model_parallel_size"
                : config.cp > 1         ? "context_parallel_size"
                                        : "expert_model_parallel_size",
            "several ranks of the worker are data-parallel replicas; one rank of a TP / CP / EP layout "
            "runs on one device (--rank-of-layout)");
    if (ranks.world_size > 1 && resolved.pipeline_model_parallel_size > 1)
        throw EngineError("pipeline_model_parallel_size",
            "pipeline_model_parallel_size " + std::to_string(resolved.pipeline_model_parallel_size) + " with "
                + std::to_string(ranks.world_size)
                + " ranks: the worker runs the first pipeline stage on one rank; several ranks are "
                  "data-parallel replicas and need pipeline_model_parallel_size 1");
}

// Validation first: a recipe with errors ends here, before anything is allocated. The recipe event (with
// every finding) and the ignored-flags note come before the result of the first problem, whatever it is.
// Returns the exit code when the run ends here.
std::optional<int> resolveRun(const Recipe& recipe, InputFormat format, const RunOptions& options,
    const RankInfo& ranks, const DeviceChoice& device, Stream& stream, ResolvedRun& run)
{
    run.validation = validate(recipe, format);
    const Validation& validation = run.validation;
    const Recipe& resolved = run.recipe();
    json findings = json::array();
    for (const auto& f : validation.findings)
        findings.push_back(findingToJson(f));
    // Arithmetic only: whatever the recipe, nothing below divides by zero or allocates without bound.
    const std::optional<SizeProblem> size_problem = sizeProblem(resolved, options, device.device);
    std::optional<EngineError> layout_error; // reported with the other build errors below
    if (!size_problem && !validation.hasErrors()) {
        try {
            run.config = modelConfig(resolved, options.rank_of_layout);
        } catch (const EngineError& e) {
            layout_error = e;
        }
    }
    {
        stream::RecipeEvent e;
        e.recipe = recipeToJson(resolved);
        e.recipe_hash = sha256Hex(recipeCanonicalText(resolved));
        e.findings = findings;
        e.stage_scope = run.config.stage_scope;
        stream.emit(e);
    }
    if (!options.ignored_flags.empty()) {
        stream::Note note;
        note.kind = "ignored_flags";
        note.flags.assign(options.ignored_flags.begin(), options.ignored_flags.end());
        note.message = "accepted and not modelled (they change neither the layers' memory nor recompute): "
            + json(note.flags).dump();
        stream.emit(note);
    }
    if (validation.hasErrors()) {
        for (const auto& f : validation.findings) {
            if (f.severity == Severity::Error) {
                stream.emit(result("invalid", "validate", std::nullopt, f.rule_id + ": " + f.message));
                break;
            }
        }
        return kInvalid;
    }
    if (size_problem) {
        auto r = result("invalid", "validate", std::nullopt, size_problem->message);
        r.field = size_problem->field;
        stream.emit(r);
        return kInvalid;
    }
    if (!device.error.empty()) {
        stream.emit(result("error", "build", std::nullopt, device.error));
        return kError;
    }
    try {
        planRun(run, ranks, layout_error);
    } catch (const EngineError& e) {
        auto r = result("error", "build", std::nullopt, e.what());
        r.field = e.field;
        stream.emit(r);
        return kError;
    }
    return std::nullopt;
}

// What every phase of a run shares, and what the result of a failure names: the stage and iteration it
// happened in, and the data-parallel group whose other ranks it ends.
struct RunState {
    RunState(const ResolvedRun& run_, const RunOptions& options_, const torch::Device& device_,
        const RankInfo& ranks, Stream& stream_, std::ostream& out_)
        : run(run_)
        , options(options_)
        , device(device_)
        , rank(ranks.rank)
        , world(std::max(1, ranks.world_size))
        , stream(stream_)
        , out(out_)
    {
    }

    const ResolvedRun& run;
    const RunOptions& options;
    const torch::Device device;
    const int rank;
    const int world;
    Stream& stream;
    std::ostream& out;
    std::string stage = "build";
    int iteration = 0; // 0: not inside a step
    std::unique_ptr<DataParallelGroup> group;

    void sync() const
    {
        if (device.is_cuda())
            compat::cudaSynchronize();
    }

    // Several ranks end with _Exit once the stream is flushed: the order in which the ranks tear down
    // their process groups is not worth waiting on, and a rank whose peer failed may be blocked in a
    // collective.
    int finish(int code)
    {
        out.flush();
        if (world > 1)
            std::_Exit(code);
        return code;
    }
};

// Several ranks: a rank that fails reports through the store; rank 0 turns the first report into the
// stream's result, every rank then ends.
void joinGroup(RunState& s, const RankInfo& ranks)
{
    s.group = DataParallelGroup::join(ranks, s.device);
    Stream& stream = s.stream;
    const int rank = s.rank;
    s.group->watch([&stream, rank](int failed_rank, const std::string& report) {
        std::optional<stream::Result> r;
        try {
            r = stream::Result::fromJson(json::parse(report));
        } catch (const std::exception&) {
        }
        const std::string status = r && !r->status.empty() ? r->status : "error";
        if (rank == 0 && r) {
            r->message = "rank " + std::to_string(failed_rank) + ": " + r->message;
            r->rank = failed_rank;
            stream.emit(*r);
        }
        std::cerr << "recompute-bench: rank " << failed_rank << " failed (" << status << "), rank " << rank
                  << " ends\n";
        std::cout.flush();
        std::_Exit(exitCodeOf(status));
    });
}

// The stack of this rank (model, gradient buffer, optimizer, micro-batches) and Megatron's train loop over
// it. Built in the constructor and alive only inside runRecipe's try, so a failure's stack is freed
// before its result is written.
class Training {
public:
    explicit Training(RunState& s);
    // The warm-up and steady iterations; the exit code when a loss is not finite.
    std::optional<int> train();
    // rank_summary, peak_attribution and the result, after the last step.
    void summarize();

private:
    // A micro-batch's chunk between its forward and its backward.
    struct InFlight {
        Model::ChunkOutput out;
        torch::Tensor received;
        // deallocate_pipeline_outputs: the sent output's data is freed after its forward (only its autograd
        // node stays); its shape is what the gradient sent back has.
        std::vector<int64_t> sent_shape;
        torch::Tensor sent_mean; // the freed output's mean (a stage without the loss: its finiteness check)
    };
    // One step's figures as its schedule runs.
    struct Step {
        MemorySnapshot fwd, bwd;
        torch::Tensor loss_value;
        std::map<std::pair<int, int>, InFlight> in_flight;
        bool first_forward = true;
    };

    void emitMemoryLayout();
    void emitLayoutRank();
    void emitFp8();
    void attribute(const std::string& phase, int64_t peak, int it);
    int trainStep(int it, bool is_steady);
    void forwardStep(size_t k, Step& step, int it);
    void backwardStep(size_t k, Step& step, int it);
    MemorySnapshot optimizerStep(bool init, int it);
    void allGatherParameters();
    std::vector<double> stepFigures(const Step& step, const MemorySnapshot& opt, double ms) const;
    int reportIteration(const std::vector<std::vector<double>>& all, int it, bool is_steady, bool init);
    std::optional<bool> compareReplicas();
    std::vector<double> slowestSteps() const;
    void emitPeakAttributions();
    void emitRankSummaries();
    void emitResult(const std::vector<double>& step_ms, const std::optional<bool>& replicas_identical);

    RunState& s_;
    const ModelConfig& config_;
    const TrainingLayout& layout_;
    std::unique_ptr<MemoryProbe> probe_;
    std::optional<Model> model_;
    std::vector<torch::Tensor> params_;
    int64_t param_bytes_ = 0;
    std::optional<GradBuffer> buffer_;
    std::optional<MainParamAdamW> optimizer_;
    TrainingLayout expert_layout_;
    std::unique_ptr<GradBuffer> expert_buffer_;
    std::unique_ptr<MainParamAdamW> expert_optimizer_;
    std::vector<std::pair<torch::Tensor, torch::Tensor>> batches_;
    std::map<std::string, PhaseAttribution> attributions_;
    std::vector<RankRecord> records_;
    FlopCount flops_;
    std::vector<ScheduleOp> schedule_;
    size_t reduced_mark_ = 0, optimized_mark_ = 0;
    std::optional<compat::PhaseClock> clock_;
};

Training::Training(RunState& s)
    : s_(s)
    , config_(s.run.config)
    , layout_(s.run.layout)
{
    probe_ = MemoryProbe::create(s_.device);
    model_.emplace(config_, s_.run.plan, s_.device, s_.options.seed);
    for (const auto& [name, p] : model_->parameters()) {
        params_.push_back(p);
        param_bytes_ += static_cast<int64_t>(p.nbytes());
    }
    // One rank of a layout whose expert-DP differs from its DP (EP > 1): Megatron's DDP keeps the routed
    // experts' gradients in buffers of their own, sharded over expert-DP by the distributed optimizer.
    std::vector<std::pair<std::string, torch::Tensor>> dense_named, expert_named;
    const bool expert_shards
        = s_.world == 1 && layout_.distributed_optimizer && config_.layout.edp != layout_.shard_ranks;
    for (const auto& np : model_->parameters())
        (expert_shards && np.first.find(".mlp.experts.") != std::string::npos ? expert_named : dense_named)
            .push_back(np);
    buffer_.emplace(dense_named, layout_.grad_dtype, layout_.distributed_optimizer, layout_.shard_ranks);
    optimizer_.emplace(*buffer_, layout_);
    expert_layout_ = layout_;
    expert_layout_.data_parallel_size = config_.layout.edp;
    expert_layout_.shard_ranks = config_.layout.edp;
    expert_layout_.shard = 0;
    if (!expert_named.empty()) {
        expert_buffer_ = std::make_unique<GradBuffer>(
            expert_named, layout_.grad_dtype, layout_.distributed_optimizer, expert_layout_.shard_ranks);
        expert_optimizer_ = std::make_unique<MainParamAdamW>(*expert_buffer_, expert_layout_);
    }
    emitMemoryLayout();
    if (config_.layout.world > 1)
        emitLayoutRank();
    if (config_.fp8.enabled)
        emitFp8();
    // Each data-parallel replica trains on its own micro-batches.
    {
        MemoryRegion region(MemoryCategory::Other);
        for (int m = 0; m < layout_.micro_batches; ++m)
            batches_.push_back(model_->batch(
                s_.options.seed + 1 + static_cast<uint64_t>(s_.rank) + static_cast<uint64_t>(s_.world) * m));
    }
    torch::manual_seed(s_.options.seed + 2); // dropout draws from here on

    records_.resize(static_cast<size_t>(s_.world));
    // The pipeline schedule of this rank's stage (layout_rank.h): forward and backward per micro-batch with
    // PP 1; 1F1B or interleaved, keeping the micro-batches Megatron keeps in flight, with PP > 1.
    schedule_ = pipelineSchedule(config_.layout.pp, model_->chunks() > 1 ? config_.layout.vpp : 1,
        config_.layout.stage, layout_.micro_batches);
    // Marks: step start, then one after each scheduled forward or backward, gradients averaged, optimizer
    // done.
    reduced_mark_ = schedule_.size() + 1;
    optimized_mark_ = reduced_mark_ + 1;
    clock_.emplace(s_.device, optimized_mark_ + 1);
}

void Training::emitMemoryLayout()
{
    // The fp32 main copies the optimizer keeps where the model's parameters are not fp32 themselves.
    int64_t main_bytes = 0;
    for (size_t i = 0; i < optimizer_->mainParams().size(); ++i)
        if (!optimizer_->mainParams()[i].is_same(optimizer_->modelPieces()[i]))
            main_bytes += static_cast<int64_t>(optimizer_->mainParams()[i].nbytes());
    if (expert_optimizer_)
        for (size_t i = 0; i < expert_optimizer_->mainParams().size(); ++i)
            if (!expert_optimizer_->mainParams()[i].is_same(expert_optimizer_->modelPieces()[i]))
                main_bytes += static_cast<int64_t>(expert_optimizer_->mainParams()[i].nbytes());
    stream::MemoryLayout e;
    e.rank = s_.rank;
    e.micro_batches = layout_.micro_batches;
    e.data_parallel_size = layout_.data_parallel_size;
    e.distributed_optimizer = layout_.distributed_optimizer;
    e.grad_buffer_dtype = layout_.grad_dtype == torch::kFloat32 ? "fp32" : "param";
    e.grad_buffer_bytes = static_cast<int64_t>(
        buffer_->data().nbytes() + (expert_buffer_ ? expert_buffer_->data().nbytes() : 0));
    e.parameters = static_cast<int64_t>(params_.size());
    e.parameter_bytes = param_bytes_;
    e.main_parameter_bytes = main_bytes;
    e.shard_elements = optimizer_->shardElements();
    e.padded_vocab_size = config_.vocab;
    e.tied_embeddings = config_.tied_embeddings;
    e.one_pass_optimizer = optimizer_->usesOnePass();
    e.expert_data_parallel_size = config_.layout.edp;
    s_.stream.emit(e);
}

// One rank of a parallel layout on one device: the note says which rank and what is not measured.
void Training::emitLayoutRank()
{
    stream::Note note;
    note.kind = "layout_rank";
    note.message = config_.layout.describe()
        + ". The collectives (TP / SP all-gathers and reduce-scatters, CP's key/value gather, EP's "
          "all-to-all, pipeline sends) run as local operations producing tensors of the real shapes: "
          "communication time is not measured; MoE routing is taken as uniform (every EP rank "
          "receives as many routed tokens as it sends)";
    note.rank_of_layout = config_.layout.rank;
    note.layout_world_size = config_.layout.world;
    note.stage = config_.layout.stage;
    note.in_flight_micro_batches = config_.layout.in_flight;
    s_.stream.emit(note);
}

// FP8: what the worker keeps as Transformer Engine does, and what it computes differently.
void Training::emitFp8()
{
    stream::Note note;
    note.kind = "fp8";
    const bool gemms = fp8::hasScaledMm() && s_.device.is_cuda();
    note.message
        = std::string("FP8 as Transformer Engine's linears keep it: each TE linear's weight quantized "
                      "row-wise and column-wise (made at a step's first micro-batch), each one's input "
                      "saved quantized for its weight gradient")
        + (config_.fp8.delayed ? " (linear_proj too: delayed scaling)" : " (linear_proj keeps the context)")
        + ". Scales are the current tensor's amax"
        + (config_.fp8.delayed ? " (delayed scaling's history is not kept: its bytes are a few per tensor)"
                               : "")
        + (gemms ? "; products are FP8 GEMMs (at::_scaled_mm) where the shapes allow"
                 : "; products run in 16 bits on the dequantized codes (no FP8 GEMM in this build or device)")
        + (fp8::hasFloat8() ? "" : "; codes are int8 of the same scale (this LibTorch has no float8)")
        + ". Not in it: TE's cuBLAS workspaces, its fused cast and transpose kernels (the worker's "
          "quantizing "
          "makes a 16-bit temporary)";
    s_.stream.emit(note);
}

// Keeps what held the memory at each phase's highest peak of the run (the trace is read only then).
void Training::attribute(const std::string& phase, int64_t peak, int it)
{
    auto& a = attributions_[phase];
    if (peak > a.peak_allocated) {
        a.peak_allocated = peak;
        a.iteration = it;
        a.attribution = probe_->attribution();
    }
}

std::optional<int> Training::train()
{
    const Recipe& resolved = s_.run.recipe();
    const int warmup = std::max(0, s_.options.warmup.value_or(resolved.warmup_iters));
    const int steady
        = std::max(1, s_.options.iters.value_or(std::max(1, resolved.train_iters - resolved.warmup_iters)));
    // In 64 bits: warm-up and steady are each at most kMaxIterations (app/bench/main.cpp for --warmup and
    // --iters, sizeProblem for the recipe's own).
    const long long total = static_cast<long long>(warmup) + steady;
    for (int it = 1; it <= total; ++it) {
        s_.iteration = it;
        const bool is_steady = it > warmup;
        if (it == 1 && warmup > 0)
            s_.stream.emit(phaseEvent("warmup", s_.rank));
        if (it == warmup + 1)
            s_.stream.emit(phaseEvent("steady", s_.rank));
        const int nonfinite_rank = trainStep(it, is_steady);
        if (nonfinite_rank >= 0) {
            // Every rank saw the same gathered figures, so every rank ends here the same way.
            s_.stream.emit(result("nonfinite", "forward", it,
                "loss is not finite at iteration " + std::to_string(it)
                    + (s_.world > 1 ? " on rank " + std::to_string(nonfinite_rank) : std::string())));
            return kNonfinite;
        }
    }
    s_.iteration = 0;
    return std::nullopt;
}

// Megatron's train_step: zero_grad_buffer, then forward and backward per micro-batch (the loss divided by
// their number), the gradients accumulating in the buffer; one optimizer step. Returns the first rank whose
// loss is not finite, -1 when none.
int Training::trainStep(int it, bool is_steady)
{
    s_.sync();
    resetFlopCount();
    const auto t0 = std::chrono::steady_clock::now();
    clock_->mark(0);

    model_->beginStep();
    buffer_->zero();
    if (expert_buffer_)
        expert_buffer_->zero();
    // optimizer.zero_grad(): the last step's fp32 gradient copies go.
    optimizer_->zeroGrad();
    if (expert_optimizer_)
        expert_optimizer_->zeroGrad();
    Step step;
    for (size_t k = 0; k < schedule_.size(); ++k) {
        if (schedule_[k].forward)
            forwardStep(k, step, it);
        else
            backwardStep(k, step, it);
    }

    const bool init = !optimizer_->initialized();
    const MemorySnapshot opt = optimizerStep(init, it);
    const double ms
        = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    flops_ = flopCount();

    const std::vector<double> mine = stepFigures(step, opt, ms);
    const auto all = s_.group ? s_.group->gather(mine) : std::vector<std::vector<double>> { mine };
    return reportIteration(all, it, is_steady, init);
}

void Training::forwardStep(size_t k, Step& step, int it)
{
    const ScheduleOp& op = schedule_[k];
    const auto& batch = batches_[static_cast<size_t>(op.micro_batch)];
    const int m_count = layout_.micro_batches;
    s_.stage = "forward";
    probe_->resetPeak();
    {
        MemoryRegion region(MemoryCategory::Other);
        InFlight f;
        if (!model_->chunkStartsFromTokens(op.chunk))
            f.received = model_->receivedActivation(); // the previous stage's send
        f.out = model_->chunkForward(op.chunk, batch.first, batch.second, f.received);
        if (f.out.is_loss && m_count > 1)
            f.out.out = f.out.out / static_cast<double>(m_count);
        // Megatron's deallocate_output_tensor once the output is sent (schedules.py): the data goes, the
        // grad_fn stays for the backward; never for a view, whose storage is another tensor's.
        if (!f.out.is_loss && s_.run.recipe().deallocate_pipeline_outputs && !f.out.out.is_view()) {
            f.sent_shape = f.out.out.sizes().vec();
            f.sent_mean = f.out.out.detach().to(torch::kFloat32).mean();
            f.out.out.set_data(torch::empty({ 1 }, f.out.out.options()));
        }
        step.in_flight[std::make_pair(op.micro_batch, op.chunk)] = std::move(f);
    }
    const auto f = probe_->read();
    clock_->mark(k + 1);
    attribute("forward", f.peak_allocated, it);
    if (step.first_forward || f.peak_allocated > step.fwd.peak_allocated)
        step.fwd.peak_allocated = f.peak_allocated;
    step.first_forward = false;
    step.fwd.peak_reserved = std::max(step.fwd.peak_reserved, f.peak_reserved);
    step.fwd.allocated = f.allocated;
}

void Training::backwardStep(size_t k, Step& step, int it)
{
    const ScheduleOp& op = schedule_[k];
    const auto key = std::make_pair(op.micro_batch, op.chunk);
    const int m_count = layout_.micro_batches;
    s_.stage = "backward";
    probe_->resetPeak();
    {
        MemoryRegion region(MemoryCategory::Backward);
        InFlight f = std::move(step.in_flight[key]);
        step.in_flight.erase(key);
        torch::Tensor value;
        if (f.out.is_loss) {
            f.out.out.backward();
            value = f.out.out.detach();
        } else {
            // The gradient the next stage sends back (a fixed tensor of the output's shape), and the
            // chunk's MoE auxiliary losses.
            const std::vector<int64_t> shape = f.sent_shape.empty() ? f.out.out.sizes().vec() : f.sent_shape;
            int64_t numel = 1;
            for (const int64_t n : shape)
                numel *= n;
            std::vector<torch::Tensor> roots { f.out.out },
                grads { torch::full(shape, 1.0 / double(numel), f.out.out.options()) };
            if (f.out.aux.defined()) {
                roots.push_back(f.out.aux);
                grads.push_back(torch::ones_like(f.out.aux));
            }
            if (f.sent_shape.empty()) {
                value = f.out.out.detach().to(torch::kFloat32).mean() / static_cast<double>(m_count);
                torch::autograd::backward(roots, grads);
            } else {
                // As Megatron's custom_backward: the engine runs from the output's autograd node, whose
                // recorded shape the gradient matches, past the shape check of a freed output.
                torch::autograd::edge_list edges;
                for (const auto& root : roots)
                    edges.push_back(torch::autograd::impl::gradient_edge(root));
                torch::autograd::Engine::get_default_engine().execute(edges, grads, false, false, true);
                value = f.sent_mean / static_cast<double>(m_count);
            }
        }
        if (op.chunk == model_->chunks() - 1)
            step.loss_value = step.loss_value.defined() ? step.loss_value + value : value;
        f = InFlight(); // frees what is left of the graph and the received activation
    }
    const auto b = probe_->read();
    clock_->mark(k + 1);
    attribute("backward", b.peak_allocated, it);
    step.bwd.peak_allocated = std::max(step.bwd.peak_allocated, b.peak_allocated);
    step.bwd.peak_reserved = std::max(step.bwd.peak_reserved, b.peak_reserved);
}

// The optimizer phase holds the gradient average too (Megatron's finalize_model_grads runs between backward
// and the optimizer step when the reduce is not overlapped).
MemorySnapshot Training::optimizerStep(bool init, int it)
{
    s_.stage = init ? "optimizer-init" : "optimizer";
    if (init)
        s_.stream.emit(phaseEvent("optimizer-init", s_.rank));
    probe_->resetPeak();
    {
        MemoryRegion region(MemoryCategory::Workspace);
        if (s_.group)
            s_.group->averageBuffer(buffer_->data());
        clock_->mark(reduced_mark_);
        optimizer_->step();
        if (expert_optimizer_)
            expert_optimizer_->step();
        if (s_.group && layout_.distributed_optimizer)
            allGatherParameters();
        clock_->mark(optimized_mark_);
    }
    s_.sync();
    const auto opt = probe_->read();
    attribute(s_.stage, opt.peak_allocated, it);
    return opt;
}

// The distributed optimizer's parameter all-gather: each rank keeps the shard it updated and zeros the rest,
// and the sum hands every rank every shard.
void Training::allGatherParameters()
{
    torch::NoGradGuard no_grad;
    const int64_t shard = buffer_->data().numel() / layout_.shard_ranks;
    const int64_t lo = shard * layout_.shard, hi = lo + shard;
    std::vector<torch::Tensor> flat;
    for (size_t i = 0; i < buffer_->params().size(); ++i) {
        auto t = buffer_->params()[i].detach().view({ -1 });
        const int64_t start = buffer_->starts()[i], n = t.numel();
        const int64_t keep_from = std::clamp(lo - start, int64_t(0), n);
        const int64_t keep_to = std::clamp(hi - start, int64_t(0), n);
        t.narrow(0, 0, keep_from).zero_();
        t.narrow(0, keep_to, n - keep_to).zero_();
        flat.push_back(t);
    }
    s_.group->sumTensors(flat);
}

// This rank's figures of the step, as they travel to rank 0.
std::vector<double> Training::stepFigures(const Step& step, const MemorySnapshot& opt, double ms) const
{
    const double lv = step.loss_value.item<double>();
    double forward_ms = 0, backward_ms = 0;
    std::vector<double> mine(StepFigures::Count);
    mine[StepFigures::StepMs] = ms;
    for (size_t k = 0; k < schedule_.size(); ++k)
        (schedule_[k].forward ? forward_ms : backward_ms) += clock_->ms(k, k + 1);
    mine[StepFigures::ForwardMs] = forward_ms;
    mine[StepFigures::BackwardMs] = backward_ms;
    mine[StepFigures::GradReduceMs] = clock_->ms(reduced_mark_ - 1, reduced_mark_);
    mine[StepFigures::OptimizerMs] = clock_->ms(reduced_mark_, optimized_mark_);
    mine[StepFigures::Loss] = std::isfinite(lv) ? lv : 0.0;
    mine[StepFigures::LossFinite] = std::isfinite(lv) ? 1 : 0;
    mine[StepFigures::ForwardPeakAllocated] = double(step.fwd.peak_allocated);
    mine[StepFigures::ForwardPeakReserved] = double(step.fwd.peak_reserved);
    mine[StepFigures::BackwardPeakAllocated] = double(step.bwd.peak_allocated);
    mine[StepFigures::BackwardPeakReserved] = double(step.bwd.peak_reserved);
    mine[StepFigures::OptimizerPeakAllocated] = double(opt.peak_allocated);
    mine[StepFigures::OptimizerPeakReserved] = double(opt.peak_reserved);
    mine[StepFigures::AllocatedAfter] = double(opt.allocated);
    mine[StepFigures::ReservedAfter] = double(opt.reserved);
    mine[StepFigures::AllocRetries] = double(opt.alloc_retries);
    mine[StepFigures::ForwardAllocatedAfter] = double(step.fwd.allocated);
    return mine;
}

// Every rank's figures of the step: into the records of the summary, and one iteration event per rank.
// Returns the first rank whose loss is not finite, -1 when none.
int Training::reportIteration(const std::vector<std::vector<double>>& all, int it, bool is_steady, bool init)
{
    int nonfinite_rank = -1;
    for (int r = 0; r < s_.world; ++r) {
        const auto& f = all[static_cast<size_t>(r)];
        const auto bytes = [&f](int i) { return static_cast<int64_t>(f[static_cast<size_t>(i)]); };
        auto& record = records_[static_cast<size_t>(r)];
        record.note(
            "forward", bytes(StepFigures::ForwardPeakAllocated), bytes(StepFigures::ForwardPeakReserved), it);
        record.note("backward", bytes(StepFigures::BackwardPeakAllocated),
            bytes(StepFigures::BackwardPeakReserved), it);
        record.note(s_.stage, bytes(StepFigures::OptimizerPeakAllocated),
            bytes(StepFigures::OptimizerPeakReserved), it);
        if (is_steady)
            record.steady_ms.push_back(f[StepFigures::StepMs]);
        const bool finite = f[StepFigures::LossFinite] != 0;
        if (!finite && nonfinite_rank < 0)
            nonfinite_rank = r;
        stream::Iteration event;
        event.rank = r;
        event.iteration = it;
        event.phase = is_steady ? "steady" : "warmup";
        event.step_ms = f[StepFigures::StepMs];
        event.forward_ms = f[StepFigures::ForwardMs];
        event.backward_ms = f[StepFigures::BackwardMs];
        event.optimizer_ms = f[StepFigures::OptimizerMs];
        if (finite)
            event.loss = f[StepFigures::Loss];
        event.loss_finite = finite;
        event.forward_peak_allocated = bytes(StepFigures::ForwardPeakAllocated);
        event.forward_peak_reserved = bytes(StepFigures::ForwardPeakReserved);
        event.backward_peak_allocated = bytes(StepFigures::BackwardPeakAllocated);
        event.backward_peak_reserved = bytes(StepFigures::BackwardPeakReserved);
        event.optimizer_peak_allocated = bytes(StepFigures::OptimizerPeakAllocated);
        event.optimizer_peak_reserved = bytes(StepFigures::OptimizerPeakReserved);
        event.allocated_after = bytes(StepFigures::AllocatedAfter);
        event.reserved_after = bytes(StepFigures::ReservedAfter);
        event.alloc_retries = bytes(StepFigures::AllocRetries);
        event.optimizer_init = init;
        event.forward_allocated_after = bytes(StepFigures::ForwardAllocatedAfter);
        if (s_.group)
            event.grad_reduce_ms = f[StepFigures::GradReduceMs];
        s_.stream.emit(event);
    }
    return nonfinite_rank;
}

void Training::summarize()
{
    const std::optional<bool> replicas_identical = compareReplicas();
    const std::vector<double> step_ms = slowestSteps();
    emitPeakAttributions();
    emitRankSummaries();
    emitResult(step_ms, replicas_identical);
}

// Data-parallel replicas must hold the same parameters after the same averaged steps (Megatron checks the
// same with --check-weight-hash-across-dp-replicas-interval): compared once, after the last step, outside
// the timed steps. No group: nothing to compare.
std::optional<bool> Training::compareReplicas()
{
    if (!s_.group)
        return std::nullopt;
    torch::NoGradGuard no_grad;
    // Summed on the device, copied to the host once.
    std::vector<torch::Tensor> on_device;
    for (const auto& p : params_) {
        const auto d = p.detach().to(torch::kFloat64);
        on_device.push_back(d.sum());
        on_device.push_back(d.abs().sum());
    }
    const auto host = torch::stack(on_device).to(torch::kCPU).contiguous();
    const std::vector<double> sums(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
    const auto all = s_.group->gather(sums);
    bool identical = true;
    for (const auto& row : all)
        identical = identical && row == all.front();
    return identical;
}

// The step of several ranks ends with the slowest: per iteration the largest of the ranks' times.
std::vector<double> Training::slowestSteps() const
{
    std::vector<double> step_ms(records_.front().steady_ms.size(), 0.0);
    for (const auto& record : records_)
        for (size_t i = 0; i < step_ms.size() && i < record.steady_ms.size(); ++i)
            step_ms[i] = std::max(step_ms[i], record.steady_ms[i]);
    return step_ms;
}

// What holds each phase's peak: this rank's trace (rank 0 writes its own; the other ranks are replicas of
// the same layout).
void Training::emitPeakAttributions()
{
    for (const char* phase : { "forward", "backward", "optimizer-init", "optimizer" }) {
        auto it = attributions_.find(phase);
        if (it != attributions_.end() && it->second.attribution.available)
            s_.stream.emit(attributionEvent(s_.rank, phase, it->second));
    }
}

namespace {
stream::StepSpread streamSpread(const StepTimeSpread& s)
{
    return { s.p2_5, s.p97_5, std::make_pair(s.median_lo, s.median_hi), s.n };
}
} // namespace

void Training::emitRankSummaries()
{
    for (int r = 0; r < s_.world; ++r) {
        const auto& record = records_[static_cast<size_t>(r)];
        stream::RankSummary summary;
        summary.rank = r;
        summary.peak_allocated = record.overall.allocated;
        summary.peak_reserved = record.overall.reserved;
        summary.peak_phase = record.overall_phase;
        summary.peak_iteration = record.overall_iteration;
        summary.steady_step_ms = meanOf(record.steady_ms);
        summary.steady_step_ms_median = medianOf(record.steady_ms);
        for (const auto& [phase, p] : record.phase_peaks)
            summary.phase_peaks[phase] = { p.allocated, p.reserved };
        summary.spread = streamSpread(stepTimeSpread(record.steady_ms));
        s_.stream.emit(summary);
    }
}

// The run's pass: the steady step of the slowest rank, and the throughput and FLOPs it gives.
void Training::emitResult(const std::vector<double>& step_ms, const std::optional<bool>& replicas_identical)
{
    const int m_count = layout_.micro_batches;
    const double mean = meanOf(step_ms);
    const double model_flops = modelFlops(s_.run.recipe(), config_.global_layers).per_step * m_count;
    const double executed_flops
        = 3.0 * static_cast<double>(flops_.forward) + static_cast<double>(flops_.replay);
    auto r = result("pass", std::nullopt, std::nullopt, "");
    const double seconds = mean / 1000.0;
    r.steady_step_ms = mean;
    {
        // The step's spread over the steady iterations (timing.h states the method).
        const StepTimeSpread spread = stepTimeSpread(step_ms);
        r.steady_step_ms_median = spread.median;
        r.spread = streamSpread(spread);
        r.spread.iterations.reset(); // the count is the rank summaries' (as before: not in the result)
    }
    if (config_.layout.world > 1) {
        r.rank_of_layout = config_.layout.rank;
        r.layout_world_size = config_.layout.world;
    }
    r.tokens_per_s = static_cast<double>(config_.seq) * config_.micro_batch * s_.world * m_count / seconds;
    r.model_tflops = model_flops / seconds / 1e12;
    r.executed_tflops = executed_flops / seconds / 1e12;
    r.model_flops_per_step = model_flops;
    r.executed_flops_per_step = executed_flops;
    r.replay_flops_per_step = static_cast<double>(flops_.replay);
    if (s_.group) {
        r.world_size = s_.world;
        r.collective_backend = s_.group->backend();
        r.dp_replicas_identical = *replicas_identical;
    }
    s_.stream.emit(r);
}
} // namespace

// The run's phases: hello; resolve (validation, the recipe event, what the engine can build); build (the
// model, gradient buffer, optimizer and memory_layout event); the steps; the summary.
int runRecipe(const Recipe& recipe, InputFormat format, const RunOptions& options, std::ostream& out,
    const std::string& input_error)
{
    const RankInfo ranks = rankInfoFromEnvironment();
    // Rank 0 writes the stream for every rank; the others keep stdout quiet (their lines would interleave
    // with rank 0's under torchrun or srun) and send their figures to rank 0.
    Stream stream(out, ranks.rank == 0);
    const DeviceChoice device = chooseDevice(options.device, ranks);
    // On CPU, ATen hands bf16 matrix products to oneDNN where the processor has AVX-512, and oneDNN's
    // reorder and scratch buffers (allocated through c10, so the probe counts them) depend on the ISA it
    // picks: the same recipe measured 2,434,214 bytes on an AMD EPYC (avx512_bf16), 2,410,868 with
    // DNNL_MAX_CPU_ISA=AVX512_CORE and 2,438,438 on a Xeon. ATen's own kernels allocate the same bytes on
    // every x86-64 processor, so a CPU run measures the recipe, not the machine.
    if (device.device.is_cpu())
        at::globalContext().setUserEnabledMkldnn(false);
    stream.emit(hello(recipe, device.device, ranks));
    if (!input_error.empty()) {
        stream.emit(result("invalid", "validate", std::nullopt, input_error));
        return kInvalid;
    }
    ResolvedRun run;
    if (const std::optional<int> code = resolveRun(recipe, format, options, ranks, device, stream, run))
        return *code;

    RunState s(run, options, device.device, ranks, stream, out);
    try {
        stream.emit(phaseEvent("build", s.rank));
        if (s.world > 1)
            joinGroup(s, ranks);
        Training training(s);
        if (const std::optional<int> code = training.train())
            return s.finish(*code);
        training.summarize();
        return s.finish(kPass);
    } catch (const std::exception& e) {
        const std::string status = isOutOfMemory(e) ? "oom" : "error";
        auto r = result(status, s.stage, s.iteration ? std::optional<int>(s.iteration) : std::nullopt,
            firstLine(e.what()));
        if (s.group)
            s.group->fail(r.toJson().dump()); // the other ranks' watchers end them
        if (s.world > 1)
            r.rank = s.rank;
        stream.emit(r);
        return s.finish(exitCodeOf(status));
    }
}

} // namespace rs::engine
