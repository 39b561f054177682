// SPDX-License-Identifier: Apache-2.0
// The worker stream the store tests ingest: a small recipe and the events of one run of it.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QVector>

namespace rs::storage::test {

using namespace Qt::StringLiterals;

inline QJsonObject recipeJson(const QJsonValue& modules, int seqLength = 4096)
{
    return QJsonObject {
        { u"name"_s, u"tiny"_s },
        { u"num_layers"_s, 4 },
        { u"hidden_size"_s, 256 },
        { u"ffn_hidden_size"_s, 1024 },
        { u"num_attention_heads"_s, 8 },
        { u"num_query_groups"_s, QJsonValue::Null },
        { u"seq_length"_s, seqLength },
        { u"micro_batch_size"_s, 1 },
        { u"global_batch_size"_s, 4 },
        { u"bf16"_s, true },
        { u"attention_backend"_s, u"fused"_s },
        { u"tensor_model_parallel_size"_s, 1 },
        { u"pipeline_model_parallel_size"_s, 1 },
        { u"context_parallel_size"_s, 1 },
        { u"expert_model_parallel_size"_s, 1 },
        { u"sequence_parallel"_s, false },
        { u"recompute_granularity"_s, u"selective"_s },
        { u"recompute_modules"_s, modules },
        { u"profile"_s, u"bridge-pin"_s },
        { u"train_iters"_s, 6 },
        { u"warmup_iters"_s, 2 },
    };
}

inline QVector<QJsonObject> stream(const QJsonObject& recipe, int iterations, qint64 peak, double stepMs,
    bool withResult, const QString& status = u"pass"_s)
{
    QVector<QJsonObject> events;
    events << QJsonObject { { u"event"_s, u"hello"_s }, { u"worker_version"_s, u"0.1.0"_s },
        { u"libtorch_version"_s, u"1.13.1"_s }, { u"cuda_version"_s, QJsonValue::Null },
        { u"nccl_version"_s, QJsonValue::Null }, { u"device"_s, u"cpu"_s }, { u"device_kind"_s, u"cpu"_s },
        { u"host"_s, u"dev1"_s }, { u"rank"_s, 0 }, { u"world_size"_s, 2 },
        { u"profile"_s, u"bridge-pin"_s } };
    events << QJsonObject { { u"event"_s, u"recipe"_s }, { u"recipe"_s, recipe },
        { u"recipe_hash"_s, u"abc"_s }, { u"findings"_s, QJsonArray() },
        { u"stage_scope"_s, u"all layers"_s } };
    for (int it = 1; it <= iterations; ++it) {
        for (int rank = 0; rank < 2; ++rank) {
            events << QJsonObject { { u"event"_s, u"iteration"_s }, { u"rank"_s, rank },
                { u"iteration"_s, it }, { u"phase"_s, it <= 2 ? u"warmup"_s : u"steady"_s },
                { u"step_ms"_s, stepMs },
                { u"loss"_s, status == u"nonfinite" && it == iterations ? QJsonValue() : 9.5 },
                { u"loss_finite"_s, !(status == u"nonfinite" && it == iterations) },
                { u"forward_peak_allocated"_s, double(peak - 10 - rank) },
                { u"backward_peak_allocated"_s, double(peak - rank) },
                { u"optimizer_peak_allocated"_s, double(peak / 2) }, { u"alloc_retries"_s, 0 },
                { u"optimizer_init"_s, it == 1 } };
        }
    }
    if (!withResult)
        return events;
    for (int rank = 0; rank < 2; ++rank) {
        events << QJsonObject {
            { u"event"_s, u"rank_summary"_s },
            { u"rank"_s, rank },
            { u"peak_allocated"_s, double(peak - rank) },
            { u"peak_reserved"_s, double(peak * 2) },
            { u"peak_phase"_s, u"backward"_s },
            { u"peak_iteration"_s, 3 },
            { u"steady_step_ms"_s, stepMs },
            { u"steady_step_ms_median"_s, stepMs },
            { u"phase_peaks"_s,
                QJsonObject { { u"forward"_s,
                                  QJsonObject { { u"allocated"_s, double(peak - 10 - rank) },
                                      { u"reserved"_s, double(peak * 2) } } },
                    { u"backward"_s,
                        QJsonObject { { u"allocated"_s, double(peak - rank) },
                            { u"reserved"_s, double(peak * 2) } } } } },
        };
    }
    events << QJsonObject { { u"event"_s, u"result"_s }, { u"status"_s, status },
        { u"stage"_s, status == u"pass" ? QJsonValue() : QJsonValue(u"backward"_s) },
        { u"iteration"_s, status == u"pass" ? QJsonValue() : QJsonValue(iterations) },
        { u"message"_s, QString() }, { u"steady_step_ms"_s, stepMs }, { u"tokens_per_s"_s, 1000.0 },
        { u"model_tflops"_s, 2.5 }, { u"executed_tflops"_s, 3.0 } };
    return events;
}

} // namespace rs::storage::test
