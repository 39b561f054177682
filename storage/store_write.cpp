// SPDX-License-Identifier: Apache-2.0
// The store's writes: transactions, the runs row, iteration rows (SQLite's own API when its headers are
// there), peaks, memory reports, control links, deletion, import provenance, and the run fields a recipe
// determines.
#include <nlohmann/json.hpp>

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlError>
#include <QSqlQuery>

#include "storage/store.h"
#include "storage/store_internal.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

using namespace detail;

bool Store::beginWrite()
{
    if (m_inWrite)
        return true;
    if (!exec(u"BEGIN IMMEDIATE"_s))
        return false;
    m_inWrite = true;
    return true;
}

bool Store::commitWrite()
{
    if (!m_inWrite)
        return true;
    if (!exec(u"COMMIT"_s))
        return false;
    m_inWrite = false;
    return true;
}

void Store::rollbackWrite()
{
    if (!m_inWrite)
        return;
    exec(u"ROLLBACK"_s);
    m_inWrite = false;
}

bool Store::inWrite() const
{
    return m_inWrite;
}

// --- writing ---------------------------------------------------------------------------------------------

qint64 Store::insertRun(const RunRecord& run)
{
    const auto cols = columnsFor(schemaVersion());
    QStringList names, marks;
    for (const Column* c : cols) {
        names << c->name;
        marks << u"?"_s;
    }
    QSqlQuery q(database());
    q.prepare(u"INSERT INTO runs ("_s + names.join(u',') + u") VALUES ("_s + marks.join(u',') + u")"_s);
    RunRecord copy = run;
    if (!copy.createdAt.isValid())
        copy.createdAt = QDateTime::currentDateTimeUtc();
    if (copy.outcome.isEmpty())
        copy.outcome = outcome::Running;
    for (const Column* c : cols)
        q.addBindValue(c->get(copy));
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return 0;
    }
    return q.lastInsertId().toLongLong();
}

bool Store::updateRun(const RunRecord& run)
{
    const auto cols = columnsFor(schemaVersion());
    QStringList sets;
    for (const Column* c : cols)
        sets << c->name + u"=?"_s;
    QSqlQuery q(database());
    q.prepare(u"UPDATE runs SET "_s + sets.join(u',') + u" WHERE id=?"_s);
    for (const Column* c : cols)
        q.addBindValue(c->get(run));
    q.addBindValue(run.id);
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return true;
}

bool Store::insertIteration(const IterationRow& r)
{
    // One prepared statement per connection, over the table's columns this file has: live ingest and bulk
    // replay insert many rows.
    const auto& columns = iterationColumns();
    const bool prepared = m_iterationStmt || m_iterationInsert;
    if (!prepared) {
        m_iterationBound.clear();
        const QStringList present = tableColumnsInFile(u"iterations"_s);
        for (int i = 0; i < columns.size(); ++i)
            if (present.contains(columns[i].name))
                m_iterationBound << i;
    }
    QStringList names, marks;
    if (!prepared) {
        for (int i : m_iterationBound) {
            names << columns[i].name;
            marks << u"?"_s;
        }
    }
    const QString sql = prepared ? QString()
                                 : u"INSERT OR REPLACE INTO iterations ("_s + names.join(u", "_s)
            + u") VALUES ("_s + marks.join(u',') + u")"_s;
#ifdef RS_HAVE_SQLITE3
    // Iteration rows are the bulk of the store: bound straight through SQLite's API, they go in several
    // times faster than through QSqlQuery's QVariant binding (docs/benchmarks.md, "## Store").
    if (!prepared) {
        if (sqlite3* h = sqliteHandle(database())) {
            sqlite3_stmt* st = nullptr;
            const QByteArray utf8 = sql.toUtf8();
            if (sqlite3_prepare_v3(
                    h, utf8.constData(), int(utf8.size()), SQLITE_PREPARE_PERSISTENT, &st, nullptr)
                == SQLITE_OK)
                m_iterationStmt = st;
        }
    }
    if (auto* st = static_cast<sqlite3_stmt*>(m_iterationStmt)) {
        sqlite3_reset(st);
        int index = 1;
        for (int i : m_iterationBound) {
            const IterationColumn& c = columns[i];
            const QVariant v = c.get(r);
            if (v.isNull() || !v.isValid()) {
                sqlite3_bind_null(st, index);
            } else if (c.type == ColumnType::Real) {
                sqlite3_bind_double(st, index, v.toDouble());
            } else if (c.type == ColumnType::Text) {
                const QByteArray text = v.toString().toUtf8();
                sqlite3_bind_text(st, index, text.constData(), int(text.size()), SQLITE_TRANSIENT);
            } else {
                sqlite3_bind_int64(st, index, sqlite3_int64(v.toLongLong()));
            }
            ++index;
        }
        const int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE) {
            m_lastError = u"insert iteration: "_s + QString::fromUtf8(sqlite3_errmsg(sqlite3_db_handle(st)));
            m_lastBusy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
            sqlite3_reset(st);
            return false;
        }
        return true;
    }
#endif
    if (!m_iterationInsert) {
        m_iterationInsert = std::make_unique<QSqlQuery>(database());
        if (!m_iterationInsert->prepare(sql)) {
            m_lastError = sqlError(*m_iterationInsert);
            m_iterationInsert.reset();
            return false;
        }
    }
    QSqlQuery& q = *m_iterationInsert;
    for (int k = 0; k < m_iterationBound.size(); ++k)
        q.bindValue(k, columns[m_iterationBound[k]].get(r));
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return true;
}

bool Store::insertRankPeak(const RankPeak& p)
{
    QSqlQuery q(database());
    q.prepare(u"INSERT OR REPLACE INTO rank_peaks (run_id, rank, peak_allocated, peak_reserved, peak_phase, "
              "peak_iteration, steady_step_ms, steady_step_ms_median) VALUES (?,?,?,?,?,?,?,?)"_s);
    q.addBindValue(p.runId);
    q.addBindValue(p.rank);
    q.addBindValue(optVar(p.peakAllocated));
    q.addBindValue(optVar(p.peakReserved));
    q.addBindValue(textVar(p.peakPhase));
    q.addBindValue(optVar(p.peakIteration));
    q.addBindValue(optVar(p.steadyStepMs));
    q.addBindValue(optVar(p.steadyStepMsMedian));
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return true;
}

bool Store::insertPhasePeak(const PhasePeak& p)
{
    QSqlQuery q(database());
    q.prepare(
        u"INSERT OR REPLACE INTO phase_peaks (run_id, rank, phase, allocated, reserved) VALUES (?,?,?,?,?)"_s);
    q.addBindValue(p.runId);
    q.addBindValue(p.rank);
    q.addBindValue(p.phase);
    q.addBindValue(optVar(p.allocated));
    q.addBindValue(optVar(p.reserved));
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return true;
}

bool Store::insertMemoryReport(const MemoryReport& m)
{
    QSqlQuery q(database());
    q.prepare(
        u"INSERT OR REPLACE INTO memory_reports (run_id, rank, after_iteration, allocated, max_allocated, "
        "reserved, max_reserved, alloc_retries) VALUES (?,?,?,?,?,?,?,?)"_s);
    q.addBindValue(m.runId);
    q.addBindValue(m.rank);
    q.addBindValue(m.afterIteration);
    q.addBindValue(optVar(m.allocated));
    q.addBindValue(optVar(m.maxAllocated));
    q.addBindValue(optVar(m.reserved));
    q.addBindValue(optVar(m.maxReserved));
    q.addBindValue(optVar(m.allocRetries));
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return true;
}

bool Store::insertPeakAttribution(const PeakAttributionRow& row)
{
    QString error;
    if (!insertRow(database(), u"peak_attribution"_s, peakAttributionColumns(), row, &error)) {
        m_lastError = error;
        return false;
    }
    QSqlQuery clear(database());
    clear.prepare(u"DELETE FROM peak_attribution_bytes WHERE run_id=? AND rank=? AND phase=?"_s);
    clear.addBindValue(row.runId);
    clear.addBindValue(row.rank);
    clear.addBindValue(row.phase);
    if (!clear.exec()) {
        m_lastError = sqlError(clear);
        return false;
    }
    AttributionBytesRow b { row.runId, row.rank, row.phase, u"category"_s, {}, std::nullopt, 0 };
    for (const auto& [name, bytes] : row.categories) {
        b.name = name;
        b.bytes = bytes;
        if (!insertRow(database(), u"peak_attribution_bytes"_s, attributionBytesColumns(), b, &error)) {
            m_lastError = error;
            return false;
        }
    }
    b.kind = u"activation"_s;
    for (const ActivationShare& a : row.activations) {
        b.name = a.region;
        b.layer = a.layer;
        b.bytes = a.bytes;
        if (!insertRow(database(), u"peak_attribution_bytes"_s, attributionBytesColumns(), b, &error)) {
            m_lastError = error;
            return false;
        }
    }
    return true;
}

bool Store::insertMemoryLayout(const MemoryLayoutRow& row)
{
    QString error;
    if (!insertRow(database(), u"memory_layout"_s, memoryLayoutColumns(), row, &error)) {
        m_lastError = error;
        return false;
    }
    return true;
}

bool Store::setControl(qint64 runId, std::optional<qint64> controlRunId)
{
    QSqlQuery q(database());
    q.prepare(u"UPDATE runs SET control_run_id=? WHERE id=?"_s);
    q.addBindValue(optVar(controlRunId));
    q.addBindValue(runId);
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return q.numRowsAffected() == 1;
}

bool Store::deleteRun(qint64 runId)
{
    QSqlQuery q(database());
    q.prepare(u"DELETE FROM runs WHERE id=?"_s);
    q.addBindValue(runId);
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return q.numRowsAffected() == 1;
}

bool Store::setImportProvenance(
    qint64 runId, const QString& path, const QString& sha256Hex, const QString& format)
{
    QSqlQuery q(database());
    q.prepare(u"UPDATE runs SET import_path=?, import_sha256=?, import_format=? WHERE id=?"_s);
    q.addBindValue(path);
    q.addBindValue(sha256Hex);
    q.addBindValue(format);
    q.addBindValue(runId);
    if (!q.exec()) {
        m_lastError = sqlError(q);
        return false;
    }
    return true;
}

// --- recipe → run fields ---------------------------------------------------------------------------------

namespace {
std::optional<int> intField(const QJsonObject& o, const char* key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isDouble())
        return v.toInt();
    return std::nullopt;
}
std::optional<bool> boolField(const QJsonObject& o, const char* key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isBool())
        return v.toBool();
    return std::nullopt;
}
QString stringField(const QJsonObject& o, const char* key)
{
    return o.value(QLatin1String(key)).toString();
}
} // namespace

QString precisionLabel(const QJsonObject& recipe)
{
    QString label = recipe.value(u"bf16"_s).toBool() ? u"bf16"_s
        : recipe.value(u"fp16"_s).toBool()           ? u"fp16"_s
                                                     : u"fp32"_s;
    const QString fp8 = stringField(recipe, "fp8");
    if (!fp8.isEmpty()) {
        QString fp8Recipe = stringField(recipe, "fp8_recipe");
        if (fp8Recipe.isEmpty())
            fp8Recipe = u"delayed"_s;
        label += u" fp8 "_s + fp8 + u'/' + fp8Recipe;
    }
    const QString fp4 = stringField(recipe, "fp4");
    if (!fp4.isEmpty())
        label += u" fp4 "_s + fp4;
    const QString mixed = stringField(recipe, "mixed_precision");
    if (!mixed.isEmpty())
        label += u" ("_s + mixed + u')';
    return label;
}

QString storedJsonText(const nlohmann::json& value)
{
    // QJsonDocument takes objects and arrays; a scalar goes in an array and comes out of it.
    const bool wrapped = !value.is_object() && !value.is_array();
    const QByteArray text
        = QByteArray::fromStdString((wrapped ? nlohmann::json::array({ value }) : value)
                                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    const QJsonDocument doc = QJsonDocument::fromJson(text);
    QByteArray out = doc.toJson(QJsonDocument::Compact);
    if (wrapped)
        out = out.mid(1, out.size() - 2);
    return QString::fromUtf8(out);
}

void fillFromRecipeJson(RunRecord* run, const nlohmann::json& recipe)
{
    // Read as QJsonDocument reads it, so the stored text is storedJsonText's.
    fillFromRecipeJson(run,
        QJsonDocument::fromJson(
            QByteArray::fromStdString(recipe.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)))
            .object());
}

void fillFromRecipeJson(RunRecord* run, const QJsonObject& r)
{
    run->recipeJson = QString::fromUtf8(QJsonDocument(r).toJson(QJsonDocument::Compact));
    if (run->recipeName.isEmpty())
        run->recipeName = stringField(r, "name");
    run->numLayers = intField(r, "num_layers");
    run->hiddenSize = intField(r, "hidden_size");
    run->ffnHiddenSize = intField(r, "ffn_hidden_size");
    if (!run->ffnHiddenSize && run->hiddenSize)
        run->ffnHiddenSize = 4 * *run->hiddenSize; // TransformerConfig's default
    run->numAttentionHeads = intField(r, "num_attention_heads");
    run->numQueryGroups = intField(r, "num_query_groups");
    if (!run->numQueryGroups)
        run->numQueryGroups = run->numAttentionHeads;
    run->numMoeExperts = intField(r, "num_moe_experts");
    run->moeRouterTopk = run->numMoeExperts ? intField(r, "moe_router_topk") : std::nullopt;
    run->multiLatentAttention = boolField(r, "multi_latent_attention");
    run->seqLength = intField(r, "seq_length");
    run->microBatchSize = intField(r, "micro_batch_size");
    run->globalBatchSize = intField(r, "global_batch_size");
    run->precision = precisionLabel(r);
    run->attentionBackend = stringField(r, "attention_backend");
    run->tensorModelParallelSize = intField(r, "tensor_model_parallel_size");
    run->pipelineModelParallelSize = intField(r, "pipeline_model_parallel_size");
    run->virtualPipelineModelParallelSize = intField(r, "virtual_pipeline_model_parallel_size");
    run->contextParallelSize = intField(r, "context_parallel_size");
    run->expertModelParallelSize = intField(r, "expert_model_parallel_size");
    run->sequenceParallel = boolField(r, "sequence_parallel");
    run->recomputeGranularity = stringField(r, "recompute_granularity");
    const QJsonValue modules = r.value(u"recompute_modules"_s);
    if (modules.isArray()) {
        QStringList list;
        for (const auto& v : modules.toArray())
            list << v.toString();
        run->recomputeModules = list;
    } else {
        run->recomputeModules.reset();
    }
    run->recomputeMethod = stringField(r, "recompute_method");
    run->recomputeNumLayers = intField(r, "recompute_num_layers");
    if (r.contains(u"profile"_s))
        run->profile = stringField(r, "profile");
    run->iterationsPlanned = intField(r, "train_iters");
    run->warmupIters = intField(r, "warmup_iters");
}

} // namespace rs::storage
