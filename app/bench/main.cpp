// SPDX-License-Identifier: Apache-2.0
// recompute-bench: the worker. Runs one recipe on this host's GPU (or CPU) and writes the JSON-lines
// stream of docs/stream.md on stdout; diagnostics go to stderr. No Qt: it builds on a GPU host that has
// only LibTorch, CUDA and NCCL.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/megatron_flags.h"
#include "core/recipe_input.h"
#include "core/recipe_json.h"
#include "engine/calibrate.h"
#include "engine/runner.h"

namespace {

constexpr const char* kHelp
    = R"(Usage: recompute-bench RECIPE.json | - | --overrides ARGS... [--mlm-args ARGS...]
                       [--profile P] [--device auto|cpu|cuda|cuda:N] [--warmup N] [--iters N] [--seed S]
                       [--rank-of-layout N]
       recompute-bench --calibrate [--device D] [--dtype bf16|fp16|fp32] [--quick] [--out FILE]

Runs one recipe: validates it with the rules of its profile, builds the transformer layer stack it
describes as one rank of its parallel layout sees it (TP / SP / CP / EP shares, the pipeline stage and
the micro-batches its schedule keeps in flight; collectives as local operations), trains it with AdamW for N
warm-up and N steady iterations with the recompute it asks for, and measures allocator peaks per phase
(forward, backward, optimizer; optimizer-state initialisation apart), step time and throughput.

Recipe (exactly one, as `recompute validate` reads it):
  RECIPE.json          a recipe file
  -                    a recipe on standard input
  --overrides ARGS...  Megatron Bridge Hydra overrides (model.recompute_modules=[core_attn] ...), up to the
                       next argument that starts with --
  --mlm-args ARGS...   Megatron-LM flags (--recompute-granularity selective ...); takes every argument after it
  --profile P          rules profile: bridge-pin, guide, main, dev (overrides the recipe's)

Run settings:
  --device D           auto (default: cuda when this worker was built with CUDA and sees a GPU, else cpu),
                       cpu, cuda (the device LOCAL_RANK names, else 0) or cuda:N
  --warmup N           warm-up iterations (default: the recipe's warmup_iters)
  --iters N            steady iterations, timed (default: train_iters - warmup_iters)
  --seed S             seed of the parameters, the batch and dropout (default 1234)
  --rank-of-layout N   the global rank of the recipe's layout (TP x CP x DP x PP, Megatron's tp-cp-ep-dp-pp
                       order) to run on this device (default: the hottest, as the estimator names it)
  --help               this text

Calibration (--calibrate): measures this device's rates at one dtype in a few seconds (matrix products at
layer sizes, causal fused attention forward and backward, the unfused attention chain (baddbmm, causal
mask, softmax, PV) and dropout over its scores, grouped GEMM over experts, elementwise bandwidth, the host's cost of a kernel, of a checkpoint and of a device-to-host read; CUDA events on a GPU) and writes
the record `recompute plan --rates FILE` reads (docs/stream.md's neighbour: core/calibration.h) to FILE, or
to stdout. --quick: small shapes (the CPU's default). Exit 0, or 2 for an unknown option or device.

Several ranks (data-parallel replicas, one process each, started by torchrun --no-python, srun or mpirun):
  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR (default 127.0.0.1; across nodes, rank 0's host), MASTER_PORT
  (default 29500), or SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (srun sets no MASTER_ADDR: set it yourself).
  The ranks meet at a TCPStore on rank 0 and average their gradients through c10d (NCCL on CUDA, Gloo on
  CPU); rank 0 writes the stream for all of them.
  RS_RENDEZVOUS_TIMEOUT_S (default 300) and RS_COLLECTIVE_TIMEOUT_S (default 600) bound the waits.

The run is one rank of the recipe's job: DDP's persistent gradient buffer (fp32 under grad_reduce_in_fp32),
global_batch_size / (micro_batch_size x data_parallel_size) micro-batches a step accumulated into it, fp32
main parameters and Adam moments (this rank's 1/DP shard under use_distributed_optimizer).

Output: one JSON object a line on stdout, flushed as it happens: hello, recipe, note, phase, memory_layout,
iteration, peak_attribution, rank_summary, result (docs/stream.md). Exit status: 0 pass, 1 error, 2 invalid, 3 oom, 4 nonfinite.
)";

bool takeInt(const std::vector<std::string>& args, size_t& i, const std::string& flag, long long& value)
{
    if (i + 1 >= args.size()) {
        std::cerr << "recompute-bench: " << flag << " needs a value\n";
        return false;
    }
    try {
        size_t used = 0;
        value = std::stoll(args[i + 1], &used);
        if (used != args[i + 1].size() || value < 0)
            throw std::invalid_argument(args[i + 1]);
    } catch (const std::exception&) {
        std::cerr << "recompute-bench: " << flag << ": expected a non-negative integer, got '" << args[i + 1]
                  << "'\n";
        return false;
    }
    ++i;
    return true;
}

// The Megatron-LM flags the reader kept as given and the worker does not model (the recipe's extra_flags):
// the worker lists their names in one note.
std::vector<std::string> ignoredFlags(const rs::Recipe& recipe)
{
    std::vector<std::string> out;
    for (const std::string& a : recipe.extra_flags) {
        if (a.rfind("--", 0) != 0)
            continue;
        const std::string name = a.substr(0, a.find('='));
        if (std::find(out.begin(), out.end(), name) == out.end())
            out.push_back(name);
    }
    return out;
}

// --calibrate [--device D] [--dtype T] [--quick] [--out FILE]
int calibrateMain(const std::vector<std::string>& args)
{
    rs::engine::CalibrateOptions o;
    std::string out;
    o.command = "recompute-bench";
    for (const auto& a : args)
        o.command += " " + a;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        const bool has_value = i + 1 < args.size();
        if (a == "--calibrate")
            continue;
        if (a == "--quick")
            o.quick = true;
        else if (a == "--device" && has_value)
            o.device = args[++i];
        else if (a == "--dtype" && has_value)
            o.dtype = args[++i];
        else if (a == "--out" && has_value)
            out = args[++i];
        else {
            std::cerr << "recompute-bench --calibrate: unknown or incomplete argument '" << a
                      << "' (--device D, --dtype bf16|fp16|fp32, --quick, --out FILE)\n";
            return rs::engine::kInvalid;
        }
    }
    try {
        const std::string text = rs::calibrationToJson(rs::engine::calibrate(o)).dump(2) + "\n";
        if (out.empty()) {
            std::cout << text;
        } else {
            std::ofstream f(out);
            if (!(f << text)) {
                std::cerr << "recompute-bench --calibrate: --out: cannot write '" << out << "'\n";
                return rs::engine::kError;
            }
        }
    } catch (const std::invalid_argument& e) {
        std::cerr << "recompute-bench --calibrate: " << e.what() << "\n";
        return rs::engine::kInvalid;
    }
    return rs::engine::kPass;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "--calibrate")
        return calibrateMain(args);
    for (const auto& a : args) {
        if (a == "--help" || a == "-h") {
            std::cout << kHelp;
            return 0;
        }
        if (a == "--mlm-args")
            break; // Megatron-LM's own flags follow
    }
    rs::engine::RunOptions options;
    std::vector<std::string> rest;
    rs::RecipeInput input;
    std::string input_error;
    try {
        input = rs::readRecipeInput(args, &rest);
        if (input.format == rs::InputFormat::MegatronFlags)
            options.ignored_flags = ignoredFlags(input.recipe);
    } catch (const std::exception& e) {
        input_error = e.what();
        rest.clear();
        // Keep the run settings readable even when the recipe is not, so hello names the device.
        for (size_t i = 0; i < args.size(); ++i)
            if (args[i] == "--device" && i + 1 < args.size())
                options.device = args[i + 1];
    }
    for (size_t i = 0; i < rest.size(); ++i) {
        const std::string& a = rest[i];
        long long value = 0;
        if (a == "--device" && i + 1 < rest.size()) {
            options.device = rest[++i];
        } else if (a == "--warmup" || a == "--iters") {
            if (!takeInt(rest, i, a, value))
                return rs::engine::kInvalid;
            if (value > rs::engine::kMaxIterations || (a == "--iters" && value < 1)) {
                std::cerr << "recompute-bench: " << a << ": " << value << " is out of range ("
                          << (a == "--iters" ? 1 : 0) << " to " << rs::engine::kMaxIterations << ")\n";
                return rs::engine::kInvalid;
            }
            (a == "--warmup" ? options.warmup : options.iters) = static_cast<int>(value);
        } else if (a == "--seed") {
            if (!takeInt(rest, i, a, value))
                return rs::engine::kInvalid;
            options.seed = static_cast<uint64_t>(value);
        } else if (a == "--rank-of-layout") {
            if (!takeInt(rest, i, a, value))
                return rs::engine::kInvalid;
            options.rank_of_layout = static_cast<int>(value);
        } else {
            std::cerr << "recompute-bench: unknown argument '" << a << "' (see --help)\n";
            return rs::engine::kInvalid;
        }
    }
    if (!input_error.empty())
        std::cerr << "recompute-bench: " << input_error << '\n';
    // Gloo writes to its peers' sockets with writev, which raises SIGPIPE once a peer has died: the default
    // action ended this rank before it could write its result (C++ has no Python to ignore the signal, as
    // torch.distributed's processes do). Ignored, the write fails and Gloo throws, so the run's error is
    // written; a reader that went away is noticed by the stream itself.
    std::signal(SIGPIPE, SIG_IGN);
    return rs::engine::runRecipe(input.recipe, input.format, options, std::cout, input_error);
}
