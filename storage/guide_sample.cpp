// SPDX-License-Identifier: Apache-2.0
// Seeding an empty store with the guide's published matched measurements (Moonlight 16B and Nemotron 3
// Nano), so the GUI has something true to show on its first start. Every number is the guide's; the
// percentages in the file are the published ones and are not stored: the store computes its own deltas
// from the stored values (tests check that they agree).
#include <cmath>

#include <QCoreApplication>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlError>
#include <QSqlQuery>

#include "core/units.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

QString Store::guideSamplePath()
{
    const QString env = qEnvironmentVariable("RS_SAMPLE_DATA");
    if (!env.isEmpty())
        return env;
    const QStringList candidates = {
        u":/sample/guide-measurements.json"_s, // compiled into recompute-studio (resources/)
        QCoreApplication::applicationDirPath()
            + u"/../share/recompute-studio/sample/guide-measurements.json"_s,
        QStringLiteral(RS_SOURCE_DIR "/resources/sample/guide-measurements.json"),
    };
    for (const QString& c : candidates) {
        if (QFile::exists(c))
            return c;
    }
    return candidates.last();
}

namespace {
std::optional<int> intOf(const QJsonObject& o, const char* key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isDouble() ? std::optional<int>(v.toInt()) : std::nullopt;
}
std::optional<double> doubleOf(const QJsonObject& o, const char* key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isDouble() ? std::optional<double>(v.toDouble()) : std::nullopt;
}
std::optional<qint64> gbToBytes(const QJsonObject& o, const char* key)
{
    const auto gb = doubleOf(o, key);
    // GB as Bridge prints them (bytes / 1e9); rounding keeps 36.618 → 36618000000 exactly.
    return gb ? std::optional<qint64>(rs::gbToBytes(*gb)) : std::nullopt;
}
} // namespace

int Store::seedGuideSample(const QString& jsonPath, QString* error)
{
    auto fail = [&](const QString& why) {
        m_lastError = why;
        if (error)
            *error = why;
        return -1;
    };
    const QString path = jsonPath.isEmpty() ? guideSamplePath() : jsonPath;
    {
        QSqlQuery q(database());
        if (!q.exec(u"SELECT COUNT(*) FROM runs WHERE source='guide'"_s) || !q.next())
            return fail(q.lastError().text());
        if (q.value(0).toInt() > 0)
            return 0;
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return fail(path + u": "_s + file.errorString());
    QJsonParseError perr;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &perr);
    if (perr.error != QJsonParseError::NoError)
        return fail(
            path + u": not JSON: "_s + perr.errorString() + u" at byte "_s + QString::number(perr.offset));
    const QJsonObject root = doc.object();
    const QString source = root.value(u"source"_s).toString();
    const QJsonArray studies = root.value(u"studies"_s).toArray();
    if (source.isEmpty() || studies.isEmpty())
        return fail(path + u": needs \"source\" and a non-empty \"studies\" array"_s);

    if (!beginWrite())
        return fail(m_lastError);
    int added = 0;
    for (const QJsonValue& sv : studies) {
        const QJsonObject s = sv.toObject();
        const QJsonArray rows = s.value(u"rows"_s).toArray();
        std::optional<qint64> controlId;
        QVector<qint64> others;
        for (const QJsonValue& rv : rows) {
            const QJsonObject row = rv.toObject();
            RunRecord r;
            r.source = source::Guide;
            r.provenance = source + u": "_s + s.value(u"name"_s).toString();
            r.recipeName = s.value(u"model"_s).toString();
            r.model = s.value(u"model"_s).toString();
            r.bridgeRevision = s.value(u"bridge_revision"_s).toString();
            r.megatronCoreRevision = s.value(u"megatron_core_revision"_s).toString();
            r.profile = s.value(u"profile"_s).toString();
            r.device = s.value(u"device"_s).toString();
            r.deviceKind = u"cuda"_s;
            r.gpuCount = intOf(s, "gpu_count");
            r.precision = s.value(u"precision"_s).toString();
            r.attentionBackend = s.value(u"attention_backend"_s).toString();
            r.numLayers = intOf(s, "num_layers");
            if (s.contains(u"multi_latent_attention"_s))
                r.multiLatentAttention = s.value(u"multi_latent_attention"_s).toBool();
            r.seqLength = intOf(s, "seq_length");
            r.microBatchSize = intOf(s, "micro_batch_size");
            r.globalBatchSize = intOf(s, "global_batch_size");
            r.tensorModelParallelSize = intOf(s, "tensor_model_parallel_size");
            r.pipelineModelParallelSize = intOf(s, "pipeline_model_parallel_size");
            r.contextParallelSize = intOf(s, "context_parallel_size");
            r.expertModelParallelSize = intOf(s, "expert_model_parallel_size");
            r.iterationsPlanned = intOf(s, "train_iters");
            r.steadyWindow = s.value(u"steady_window"_s).toString();
            r.recomputeGranularity = s.value(u"recompute_granularity"_s).toString();
            QStringList modules;
            for (const QJsonValue& m : row.value(u"recompute_modules"_s).toArray())
                modules << m.toString();
            r.recomputeModules = modules;
            r.outcome = row.value(u"outcome"_s).toString();
            r.failureStage = row.value(u"failure_stage"_s).toString();
            r.failureIteration = intOf(row, "failure_iteration");
            r.message = row.value(u"outcome_published"_s).toString();
            if (row.contains(u"peak_allocated_gb"_s)) {
                r.peakAllocated = gbToBytes(row, "peak_allocated_gb");
                r.peakNote = u"after iteration 2 (the study's "_s + s.value(u"peak_definition"_s).toString()
                    + u")"_s;
            } else {
                r.peakAllocated = gbToBytes(row, "rank0_peak_gb");
                if (r.peakAllocated)
                    r.peakRank = 0;
                r.peakNote = row.value(u"peak_note"_s).toString();
                if (r.peakAllocated)
                    r.peakNote = u"rank 0 "_s + r.peakNote;
            }
            r.steadyStepMs = doubleOf(row, "step_time_ms");
            r.modelTflops = doubleOf(row, "tflops_per_gpu");
            if (r.outcome == outcome::Pass) {
                // "all 20 losses were finite with zero skipped or NaN iterations" / "both successful rows
                // ..."
                r.lossFinite = true;
                r.skippedIterations = 0;
                r.nanIterations = 0;
            }
            QStringList notes;
            notes << s.value(u"description"_s).toString();
            if (row.contains(u"evidence"_s))
                notes << row.value(u"evidence"_s).toString();
            if (r.outcome == outcome::Pass)
                notes << s.value(u"sanity"_s).toString();
            notes.removeAll(QString());
            r.notes = notes.join(u" "_s);
            const qint64 id = insertRun(r);
            if (id == 0) {
                rollbackWrite();
                return fail(m_lastError);
            }
            if (r.peakRank) {
                RankPeak p;
                p.runId = id;
                p.rank = *r.peakRank;
                p.peakAllocated = r.peakAllocated;
                insertRankPeak(p);
            }
            ++added;
            if (r.isExplicitControl())
                controlId = id;
            else
                others << id;
        }
        for (qint64 id : others) {
            if (controlId && !setControl(id, controlId)) {
                rollbackWrite();
                return fail(m_lastError);
            }
        }
    }
    if (!commitWrite())
        return fail(m_lastError);
    return added;
}

} // namespace rs::storage
