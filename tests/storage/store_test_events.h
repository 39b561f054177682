// SPDX-License-Identifier: Apache-2.0
// The worker stream the store tests ingest: a small recipe and the events of one run of it, as the worker
// writes them (JSON objects), with the two forms the ingest takes them in: typed, as the launcher decodes a
// line (core/stream.h), and as a line of a saved stream.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QByteArray>
#include <QString>

#include "core/stream.h"

namespace rs::storage::test {

using nlohmann::json;

inline json recipeJson(const json& modules, int seqLength = 4096)
{
    return json {
        { "name", "tiny" },
        { "num_layers", 4 },
        { "hidden_size", 256 },
        { "ffn_hidden_size", 1024 },
        { "num_attention_heads", 8 },
        { "num_query_groups", nullptr },
        { "seq_length", seqLength },
        { "micro_batch_size", 1 },
        { "global_batch_size", 4 },
        { "bf16", true },
        { "attention_backend", "fused" },
        { "tensor_model_parallel_size", 1 },
        { "pipeline_model_parallel_size", 1 },
        { "context_parallel_size", 1 },
        { "expert_model_parallel_size", 1 },
        { "sequence_parallel", false },
        { "recompute_granularity", "selective" },
        { "recompute_modules", modules },
        { "profile", "bridge-pin" },
        { "train_iters", 6 },
        { "warmup_iters", 2 },
    };
}

// The recompute_modules of a recipe: modules({}) is the explicit [] control.
inline json modules(std::initializer_list<const char*> labels)
{
    json out = json::array();
    for (const char* l : labels)
        out.push_back(l);
    return out;
}

inline std::vector<json> stream(const json& recipe, int iterations, qint64 peak, double stepMs,
    bool withResult, const QString& outcome = QStringLiteral("pass"))
{
    const std::string status = outcome.toStdString();
    std::vector<json> events;
    events.push_back({ { "event", "hello" }, { "worker_version", "0.1.0" }, { "libtorch_version", "1.13.1" },
        { "cuda_version", nullptr }, { "nccl_version", nullptr }, { "device", "cpu" },
        { "device_kind", "cpu" }, { "host", "dev1" }, { "rank", 0 }, { "world_size", 2 },
        { "profile", "bridge-pin" } });
    events.push_back({ { "event", "recipe" }, { "recipe", recipe }, { "recipe_hash", "abc" },
        { "findings", json::array() }, { "stage_scope", "all layers" } });
    for (int it = 1; it <= iterations; ++it) {
        for (int rank = 0; rank < 2; ++rank) {
            const bool lost = status == "nonfinite" && it == iterations;
            events.push_back({ { "event", "iteration" }, { "rank", rank }, { "iteration", it },
                { "phase", it <= 2 ? "warmup" : "steady" }, { "step_ms", stepMs },
                { "loss", lost ? json(nullptr) : json(9.5) }, { "loss_finite", !lost },
                { "forward_peak_allocated", peak - 10 - rank }, { "backward_peak_allocated", peak - rank },
                { "optimizer_peak_allocated", peak / 2 }, { "alloc_retries", 0 },
                { "optimizer_init", it == 1 } });
        }
    }
    if (!withResult)
        return events;
    for (int rank = 0; rank < 2; ++rank) {
        events.push_back({
            { "event", "rank_summary" },
            { "rank", rank },
            { "peak_allocated", peak - rank },
            { "peak_reserved", peak * 2 },
            { "peak_phase", "backward" },
            { "peak_iteration", 3 },
            { "steady_step_ms", stepMs },
            { "steady_step_ms_median", stepMs },
            { "phase_peaks",
                { { "forward", { { "allocated", peak - 10 - rank }, { "reserved", peak * 2 } } },
                    { "backward", { { "allocated", peak - rank }, { "reserved", peak * 2 } } } } },
        });
    }
    const bool pass = status == "pass";
    events.push_back(
        { { "event", "result" }, { "status", status }, { "stage", pass ? json(nullptr) : json("backward") },
            { "iteration", pass ? json(nullptr) : json(iterations) }, { "message", "" },
            { "steady_step_ms", stepMs }, { "tokens_per_s", 1000.0 }, { "model_tflops", 2.5 },
            { "executed_tflops", 3.0 } });
    return events;
}

// The event's line, as a saved stream holds it.
inline QByteArray line(const json& event)
{
    return QByteArray::fromStdString(event.dump());
}

// The event as the launcher hands it on: its line decoded (core's decodeLine, the launcher's reader).
inline rs::stream::Event typed(const json& event)
{
    return rs::stream::decodeLine(event.dump());
}

} // namespace rs::storage::test
