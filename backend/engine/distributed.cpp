// SPDX-License-Identifier: Apache-2.0
#include "engine/distributed.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(RS_C10D_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(RS_C10D_NCCL)
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace rs::engine {
namespace {

const char* env(const char* name)
{
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

int envInt(const char* name, int fallback)
{
    const char* v = env(name);
    return v ? std::atoi(v) : fallback;
}

// LibTorch 1.13's Gloo derives from ProcessGroup, 2.x's backends from Backend: the two calls we make are
// spelled the same on both, so a template over the concrete group hides the difference.
struct Collective {
    virtual ~Collective() = default;
    virtual void allReduceSum(torch::Tensor& t) = 0;
    virtual void allGather(std::vector<torch::Tensor>& out, const torch::Tensor& t) = 0;
};

template <class Group> struct C10dCollective : Collective {
    c10::intrusive_ptr<Group> group;
    explicit C10dCollective(c10::intrusive_ptr<Group> g)
        : group(std::move(g))
    {
    }
    void allReduceSum(torch::Tensor& t) override
    {
        std::vector<torch::Tensor> tensors { t };
        group->allreduce(tensors)->wait();
    }
    void allGather(std::vector<torch::Tensor>& out, const torch::Tensor& t) override
    {
        std::vector<torch::Tensor> input { t };
        std::vector<std::vector<torch::Tensor>> output { out };
        group->allgather(output, input)->wait();
    }
};

std::string failedKey(int rank)
{
    return "recompute-bench/failed/" + std::to_string(rank);
}

// The rendezvous connection (every rank, counted as a worker, as torch.distributed's own TCPStore
// rendezvous does), or an extra one for a failure watcher (not counted, waits for nobody).
c10::intrusive_ptr<c10d::TCPStore> connectStore(const RankInfo& info, bool rendezvous)
{
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(info.master_port);
    // Under torchrun the agent already serves a store at MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE): join it.
    const char* agent = env("TORCHELASTIC_USE_AGENT_STORE");
    o.isServer = rendezvous && info.rank == 0 && !(agent && std::string(agent) == "True");
    if (rendezvous)
        o.numWorkers = static_cast<std::size_t>(info.world_size);
    o.waitWorkers = rendezvous;
    o.timeout = std::chrono::seconds(envInt("RS_RENDEZVOUS_TIMEOUT_S", 300));
    return c10::make_intrusive<c10d::TCPStore>(info.master_addr, o);
}

} // namespace

RankInfo rankInfoFromEnvironment()
{
    RankInfo info;
    if (env("WORLD_SIZE") || env("RANK")) {
        info.rank = envInt("RANK", 0);
        info.world_size = envInt("WORLD_SIZE", 1);
        info.local_rank = envInt("LOCAL_RANK", 0);
        info.source = "torchrun";
    } else if (env("SLURM_NTASKS") && env("SLURM_PROCID")) {
        info.rank = envInt("SLURM_PROCID", 0);
        info.world_size = envInt("SLURM_NTASKS", 1);
        info.local_rank = envInt("SLURM_LOCALID", 0);
        info.source = "slurm";
    } else {
        info.local_rank = envInt("LOCAL_RANK", 0);
        info.source = "none";
    }
    if (const char* a = env("MASTER_ADDR"))
        info.master_addr = a;
    info.master_port = envInt("MASTER_PORT", 29500);
    return info;
}

std::vector<std::string> collectiveBackends()
{
    std::vector<std::string> b;
#if defined(RS_C10D_NCCL)
    b.push_back("nccl");
#endif
#if defined(RS_C10D_GLOO)
    b.push_back("gloo");
#endif
    return b;
}

std::string ncclVersion()
{
#if defined(RS_C10D_NCCL)
    return c10d::getNcclVersion();
#else
    return {};
#endif
}

struct DataParallelGroup::Impl {
    RankInfo info;
    std::string backend;
    torch::Device device { torch::kCPU };
    c10::intrusive_ptr<c10d::TCPStore> store;
    std::unique_ptr<Collective> collective;
    std::thread watcher;
    std::atomic<bool> stop { false };
    // Every tensor handed to c10d is one of these, kept for the whole run: a backend's worker thread may
    // drop the last reference to what it was given, and a free on a thread the CPU allocator probe does not
    // watch would skew the rank's allocated bytes. The cost is one bucket's copy, allocated at the first
    // step (the optimizer-init phase).
    std::map<c10::ScalarType, torch::Tensor> bucket;
    std::map<size_t, std::pair<torch::Tensor, std::vector<torch::Tensor>>> gathered;

    torch::Tensor bucketOf(c10::ScalarType dtype, int64_t elements)
    {
        auto& b = bucket[dtype];
        if (!b.defined() || b.numel() < elements)
            b = torch::empty({ elements }, torch::TensorOptions().dtype(dtype).device(device));
        return b.narrow(0, 0, elements);
    }
};

DataParallelGroup::DataParallelGroup(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl))
{
}

DataParallelGroup::~DataParallelGroup()
{
    impl_->stop = true;
    if (impl_->watcher.joinable())
        impl_->watcher.join();
}

std::unique_ptr<DataParallelGroup> DataParallelGroup::join(const RankInfo& info, const torch::Device& device)
{
    auto impl = std::make_unique<Impl>();
    impl->info = info;
    impl->device = device;
    const std::string where = info.master_addr + ":" + std::to_string(info.master_port);
    const auto timeout = std::chrono::seconds(envInt("RS_RENDEZVOUS_TIMEOUT_S", 300));
    int64_t joined = 0;
    try {
        impl->store = connectStore(info, true);
        // TCPStore's own wait for workers gives up silently at its timeout: count the ranks ourselves.
        joined = impl->store->add("recompute-bench/joined", 1);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (joined < info.world_size && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            joined = impl->store->add("recompute-bench/joined", 0);
        }
    } catch (const std::exception& e) {
        throw std::runtime_error("rendezvous at MASTER_ADDR:MASTER_PORT = " + where
            + " failed: " + std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
    }
    if (joined < info.world_size)
        throw std::runtime_error("rendezvous at MASTER_ADDR:MASTER_PORT = " + where + ": "
            + std::to_string(joined) + " of WORLD_SIZE = " + std::to_string(info.world_size)
            + " ranks joined within " + std::to_string(timeout.count()) + " s (RS_RENDEZVOUS_TIMEOUT_S)");
    // A peer that dies without a word leaves the others in a collective until this runs out.
    const auto collective_timeout = std::chrono::milliseconds(1000 * envInt("RS_COLLECTIVE_TIMEOUT_S", 600));
    if (device.is_cuda()) {
#if defined(RS_C10D_NCCL)
        auto options = c10d::ProcessGroupNCCL::Options::create();
        options->timeout = collective_timeout;
        auto group
            = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, info.rank, info.world_size, options);
        impl->collective = std::make_unique<C10dCollective<c10d::ProcessGroupNCCL>>(std::move(group));
        impl->backend = "nccl";
#else
        throw std::runtime_error("several ranks on CUDA need NCCL, and this worker was built without it "
                                 "(configure with the wheel's nvidia/nccl include folder)");
#endif
    } else {
#if defined(RS_C10D_GLOO)
        auto options = c10d::ProcessGroupGloo::Options::create();
        options->timeout = collective_timeout;
        const bool loopback = info.master_addr.rfind("127.", 0) == 0 || info.master_addr == "localhost";
        if (const char* ifname = env("GLOO_SOCKET_IFNAME"))
            options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
        else if (loopback)
            options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        else
            options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        auto group
            = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, info.rank, info.world_size, options);
        impl->collective = std::make_unique<C10dCollective<c10d::ProcessGroupGloo>>(std::move(group));
        impl->backend = "gloo";
#else
        throw std::runtime_error("several ranks on CPU need Gloo, and this worker was built without it "
                                 "(install libgloo-dev and reconfigure)");
#endif
    }
    return std::unique_ptr<DataParallelGroup>(new DataParallelGroup(std::move(impl)));
}

const RankInfo& DataParallelGroup::info() const
{
    return impl_->info;
}

std::string DataParallelGroup::backend() const
{
    return impl_->backend;
}

void DataParallelGroup::averageGradients(const std::vector<torch::Tensor>& params)
{
    // Megatron's DDP bucket: at least 40 M elements (distributed_data_parallel_config.py, bucket_size).
    constexpr int64_t kBucketElements = 40'000'000;
    torch::NoGradGuard no_grad;
    const double scale = 1.0 / impl_->info.world_size;
    size_t first = 0;
    while (first < params.size()) {
        const auto dtype = params[first].scalar_type();
        size_t end = first;
        int64_t elements = 0;
        while (end < params.size() && params[end].scalar_type() == dtype
            && (end == first || elements + params[end].numel() <= kBucketElements)) {
            elements += params[end].numel();
            ++end;
        }
        // Gloo (LibTorch 1.13) has no 16-bit reductions: those gradients travel as fp32 there, as with
        // Megatron's grad_reduce_in_fp32.
        const bool widen = impl_->backend == "gloo" && (dtype == torch::kBFloat16 || dtype == torch::kHalf);
        auto flat = impl_->bucketOf(widen ? torch::kFloat32 : dtype, elements);
        int64_t offset = 0;
        for (size_t i = first; i < end; ++i) {
            auto part = flat.narrow(0, offset, params[i].numel());
            const auto& g = params[i].grad();
            if (g.defined())
                part.copy_(g.reshape({ -1 }));
            else
                part.zero_();
            offset += params[i].numel();
        }
        impl_->collective->allReduceSum(flat);
        flat.mul_(scale);
        offset = 0;
        for (size_t i = first; i < end; ++i) {
            auto& p = params[i];
            auto part = flat.narrow(0, offset, p.numel()).view(p.sizes());
            if (p.grad().defined())
                p.mutable_grad().copy_(part);
            else
                p.mutable_grad() = part.to(p.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
            offset += p.numel();
        }
        first = end;
    }
}

void DataParallelGroup::averageBuffer(const torch::Tensor& flat)
{
    constexpr int64_t kBucketElements = 40'000'000;
    torch::NoGradGuard no_grad;
    const double scale = 1.0 / impl_->info.world_size;
    const auto dtype = flat.scalar_type();
    const bool widen = impl_->backend == "gloo" && (dtype == torch::kBFloat16 || dtype == torch::kHalf);
    if (!widen) {
        auto t = flat;
        impl_->collective->allReduceSum(t);
        t.mul_(scale);
        return;
    }
    for (int64_t first = 0; first < flat.numel(); first += kBucketElements) {
        const int64_t n = std::min(kBucketElements, flat.numel() - first);
        auto part = flat.narrow(0, first, n);
        auto wide = impl_->bucketOf(torch::kFloat32, n);
        wide.copy_(part);
        impl_->collective->allReduceSum(wide);
        wide.mul_(scale);
        part.copy_(wide);
    }
}

void DataParallelGroup::sumTensors(const std::vector<torch::Tensor>& tensors)
{
    constexpr int64_t kBucketElements = 40'000'000;
    torch::NoGradGuard no_grad;
    size_t first = 0;
    while (first < tensors.size()) {
        const auto dtype = tensors[first].scalar_type();
        size_t end = first;
        int64_t elements = 0;
        while (end < tensors.size() && tensors[end].scalar_type() == dtype
            && (end == first || elements + tensors[end].numel() <= kBucketElements)) {
            elements += tensors[end].numel();
            ++end;
        }
        const bool widen = impl_->backend == "gloo" && (dtype == torch::kBFloat16 || dtype == torch::kHalf);
        auto flat = impl_->bucketOf(widen ? torch::kFloat32 : dtype, elements);
        int64_t offset = 0;
        for (size_t i = first; i < end; ++i) {
            flat.narrow(0, offset, tensors[i].numel()).copy_(tensors[i].reshape({ -1 }));
            offset += tensors[i].numel();
        }
        impl_->collective->allReduceSum(flat);
        offset = 0;
        for (size_t i = first; i < end; ++i) {
            auto t = tensors[i];
            t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
            offset += t.numel();
        }
        first = end;
    }
}

std::vector<std::vector<double>> DataParallelGroup::gather(const std::vector<double>& values)
{
    torch::NoGradGuard no_grad;
    auto& [mine, all] = impl_->gathered[values.size()];
    if (!mine.defined()) {
        const auto options = torch::TensorOptions().dtype(torch::kFloat64).device(impl_->device);
        mine = torch::empty({ static_cast<int64_t>(values.size()) }, options);
        for (int r = 0; r < impl_->info.world_size; ++r)
            all.push_back(torch::empty_like(mine));
    }
    mine.copy_(torch::from_blob(const_cast<double*>(values.data()), { static_cast<int64_t>(values.size()) },
        torch::TensorOptions().dtype(torch::kFloat64)));
    impl_->collective->allGather(all, mine);
    const auto host = torch::stack(all).to(torch::kCPU).contiguous(); // one copy for every rank's row
    const double* data = host.data_ptr<double>();
    std::vector<std::vector<double>> rows;
    for (int r = 0; r < impl_->info.world_size; ++r)
        rows.emplace_back(data + r * values.size(), data + (r + 1) * values.size());
    return rows;
}

void DataParallelGroup::fail(const std::string& report)
{
    try {
        impl_->store->set(failedKey(impl_->info.rank), std::vector<uint8_t>(report.begin(), report.end()));
    } catch (const std::exception&) {
        // The store is gone (rank 0 ended): nobody is left to tell.
    }
}

void DataParallelGroup::watch(std::function<void(int rank, const std::string& report)> on_failure)
{
    Impl* impl = impl_.get();
    impl->watcher = std::thread([impl, on_failure = std::move(on_failure)] {
        c10::intrusive_ptr<c10d::TCPStore> store;
        try {
            store = connectStore(impl->info, false); // a connection of its own: the main thread uses its own
        } catch (const std::exception&) {
            return;
        }
        while (!impl->stop) {
            try {
                for (int r = 0; r < impl->info.world_size; ++r) {
                    if (r == impl->info.rank || !store->check({ failedKey(r) }))
                        continue;
                    const auto bytes = store->get(failedKey(r));
                    on_failure(r, std::string(bytes.begin(), bytes.end()));
                    return;
                }
            } catch (const std::exception&) {
                return; // the store's host ended: the run is over one way or another
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    });
}

} // namespace rs::engine
