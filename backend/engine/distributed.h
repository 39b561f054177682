// SPDX-License-Identifier: Apache-2.0
// Several ranks of one run (design.md "The engine"): the launcher's standard variables say who is who, and
// PyTorch's own c10d carries the traffic — a TCPStore for the rendezvous, ProcessGroupNCCL on GPUs,
// ProcessGroupGloo on CPU. The ranks are data-parallel replicas: each runs its own micro-batch, and the
// gradients are averaged before the optimizer step, as Megatron's DDP does without overlap. The figures of
// every rank are gathered to rank 0, which alone writes the stream.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace rs::engine {

struct RankInfo {
    int rank = 0;
    int world_size = 1;
    int local_rank = 0;
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    std::string source; // which variables said so: "torchrun" (RANK...), "slurm" (SLURM_*), or "none"
};

// RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT (torchrun, mpirun wrappers); else SLURM_PROCID /
// SLURM_NTASKS / SLURM_LOCALID with MASTER_ADDR / MASTER_PORT (srun); else one rank.
RankInfo rankInfoFromEnvironment();

// Which c10d backends this build has ("nccl", "gloo"), and NCCL's version where it is built in ("" if not).
std::vector<std::string> collectiveBackends();
std::string ncclVersion();

class DataParallelGroup {
public:
    ~DataParallelGroup();
    DataParallelGroup(const DataParallelGroup&) = delete;
    DataParallelGroup& operator=(const DataParallelGroup&) = delete;

    // Joins the rendezvous and builds the process group for `device` (NCCL on CUDA, Gloo on CPU). Throws
    // std::runtime_error naming what is missing (a backend not built in, an unreachable store).
    static std::unique_ptr<DataParallelGroup> join(const RankInfo& info, const torch::Device& device);

    const RankInfo& info() const;
    std::string backend() const;

    // Averages the parameters' gradients over the ranks, in buckets of flattened gradients of one dtype
    // (one bucket's copy is the only extra memory). Parameters without a gradient take part with zeros.
    void averageGradients(const std::vector<torch::Tensor>& params);
    // Averages one contiguous buffer (DDP's gradient buffer) over the ranks in place. Gloo's 16-bit
    // buffers travel as fp32 a bucket at a time.
    void averageBuffer(const torch::Tensor& flat);
    // Sums each tensor over the ranks in place, in buckets of flattened tensors of one dtype (the
    // distributed optimizer's parameter gather: each rank contributes the shard it updated, zeros elsewhere).
    void sumTensors(const std::vector<torch::Tensor>& tensors);
    // Every rank's `values`, in rank order (a collective: every rank must call it).
    std::vector<std::vector<double>> gather(const std::vector<double>& values);

    // Failure reports through the store, so a rank that fails does not leave the others blocked in a
    // collective: fail() records this rank's failure; watch() starts a thread that calls `on_failure` with
    // the first other rank's report (which must end the process).
    void fail(const std::string& report);
    void watch(std::function<void(int rank, const std::string& report)> on_failure);

private:
    struct Impl;
    explicit DataParallelGroup(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace rs::engine
