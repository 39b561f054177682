// SPDX-License-Identifier: Apache-2.0
// The store's reads: runs (filtered), peaks, iterations, memory reports, and the guide's matched
// comparison on stored runs (core/comparison.h does the matching and the deltas).
#include <algorithm>

#include <QHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlError>
#include <QSqlQuery>

#include "core/comparison.h"
#include "storage/significance.h"
#include "storage/store.h"
#include "storage/store_internal.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

using namespace detail;

QString RunRecord::moduleSetLabel() const
{
    if (recomputeGranularity == u"full") {
        QString label = u"full"_s;
        if (!recomputeMethod.isEmpty())
            label += u' ' + recomputeMethod;
        if (recomputeNumLayers)
            label += u' ' + QString::number(*recomputeNumLayers);
        return label;
    }
    if (recomputeGranularity.isEmpty())
        return u"none"_s;
    if (recomputeGranularity == u"unknown")
        return u"unknown"_s;
    if (!recomputeModules)
        return u"core_attn (default)"_s;
    if (recomputeModules->isEmpty())
        return u"[]"_s;
    return recomputeModules->join(u", "_s);
}

bool RunRecord::isExplicitControl() const
{
    return recomputeGranularity == u"selective" && recomputeModules && recomputeModules->isEmpty();
}

// --- reading ---------------------------------------------------------------------------------------------

QVector<RunRecord> Store::listRuns(const RunFilter& filter) const
{
    const auto cols = columnsFor(schemaVersion());
    QStringList names { u"id"_s };
    for (const Column* c : cols)
        names << c->name;
    QStringList where;
    QVariantList binds;
    if (!filter.recipeName.isEmpty()) {
        where << u"recipe_name LIKE ? ESCAPE '\\'"_s;
        QString pattern = filter.recipeName;
        pattern.replace(u"\\"_s, u"\\\\"_s).replace(u"%"_s, u"\\%"_s).replace(u"_"_s, u"\\_"_s);
        binds << QVariant(QString(u"%"_s + pattern + u"%"_s));
    }
    if (!filter.model.isEmpty()) {
        where << u"model LIKE ?"_s;
        binds << QVariant(QString(u"%"_s + filter.model + u"%"_s));
    }
    if (filter.moduleSet) {
        where << u"module_key = ?"_s;
        binds << moduleKey(filter.moduleSet);
    }
    if (!filter.outcome.isEmpty()) {
        where << u"outcome = ?"_s;
        binds << filter.outcome;
    }
    if (!filter.host.isEmpty()) {
        where << u"host = ?"_s;
        binds << filter.host;
    }
    if (!filter.source.isEmpty()) {
        where << u"source = ?"_s;
        binds << filter.source;
    }
    if (!filter.ids.isEmpty())
        where << u"id IN ("_s + joinInts(filter.ids) + u")"_s;
    if (!filter.recipeMatchKeys.isEmpty()) {
        QStringList marks;
        for (const QString& key : filter.recipeMatchKeys) {
            marks << u"?"_s;
            binds << key;
        }
        where << u"recipe_match_key IN ("_s + marks.join(u',') + u")"_s;
    }
    QString sql = u"SELECT "_s + names.join(u',') + u" FROM runs"_s;
    if (!where.isEmpty())
        sql += u" WHERE "_s + where.join(u" AND "_s);
    sql += u" ORDER BY id DESC"_s;
    if (filter.limit >= 0)
        sql += u" LIMIT "_s + QString::number(filter.limit);
    QVector<RunRecord> out;
#ifdef RS_HAVE_SQLITE3
    // Reading every run is what a report over a large store spends its time on: straight from SQLite,
    // without QSqlQuery's per-row QVariant vector (docs/benchmarks.md, "## Store").
    if (sqlite3* h = sqliteHandle(database())) {
        sqlite3_stmt* st = nullptr;
        const QByteArray utf8 = sql.toUtf8();
        if (sqlite3_prepare_v2(h, utf8.constData(), int(utf8.size()), &st, nullptr) == SQLITE_OK) {
            for (int i = 0; i < binds.size(); ++i) {
                const QByteArray text = binds[i].toString().toUtf8();
                sqlite3_bind_text(st, i + 1, text.constData(), int(text.size()), SQLITE_TRANSIENT);
            }
            int rc;
            while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                RunRecord r;
                r.id = sqlite3_column_int64(st, 0);
                for (int i = 0; i < cols.size(); ++i) {
                    const int c = i + 1;
                    switch (sqlite3_column_type(st, c)) {
                    case SQLITE_INTEGER:
                        cols[i]->set(r, QVariant(qlonglong(sqlite3_column_int64(st, c))));
                        break;
                    case SQLITE_FLOAT:
                        cols[i]->set(r, QVariant(sqlite3_column_double(st, c)));
                        break;
                    case SQLITE_NULL:
                        cols[i]->set(r, QVariant());
                        break;
                    default:
                        cols[i]->set(r,
                            QVariant(
                                QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, c)),
                                    sqlite3_column_bytes(st, c))));
                    }
                }
                out << r;
            }
            if (rc != SQLITE_DONE)
                const_cast<Store*>(this)->m_lastError = QString::fromUtf8(sqlite3_errmsg(h));
            sqlite3_finalize(st);
            return out;
        }
        sqlite3_finalize(st);
    }
#endif
    QSqlQuery q(database());
    q.setForwardOnly(true);
    q.prepare(sql);
    for (const auto& b : binds)
        q.addBindValue(b);
    if (!q.exec()) {
        const_cast<Store*>(this)->m_lastError = sqlError(q);
        return out;
    }
    while (q.next()) {
        RunRecord r;
        r.id = q.value(0).toLongLong();
        for (int i = 0; i < cols.size(); ++i)
            cols[i]->set(r, q.value(i + 1));
        out << r;
    }
    return out;
}

std::optional<RunRecord> Store::run(qint64 runId) const
{
    RunFilter f;
    f.ids = { runId };
    const auto rows = listRuns(f);
    if (rows.isEmpty())
        return std::nullopt;
    return rows.first();
}

int Store::runCount() const
{
    QSqlQuery q(database());
    if (!q.exec(u"SELECT COUNT(*) FROM runs"_s) || !q.next())
        return -1;
    return q.value(0).toInt();
}

QVector<RankPeak> Store::rankPeaks(qint64 runId) const
{
    QSqlQuery q(database());
    q.prepare(u"SELECT rank, peak_allocated, peak_reserved, peak_phase, peak_iteration, steady_step_ms, "
              "steady_step_ms_median FROM rank_peaks WHERE run_id=? ORDER BY rank"_s);
    q.addBindValue(runId);
    QVector<RankPeak> out;
    if (!q.exec())
        return out;
    while (q.next()) {
        RankPeak p;
        p.runId = runId;
        p.rank = q.value(0).toInt();
        p.peakAllocated = varOpt<qint64>(q.value(1));
        p.peakReserved = varOpt<qint64>(q.value(2));
        p.peakPhase = q.value(3).toString();
        p.peakIteration = varOpt<int>(q.value(4));
        p.steadyStepMs = varOpt<double>(q.value(5));
        p.steadyStepMsMedian = varOpt<double>(q.value(6));
        out << p;
    }
    return out;
}

QVector<PhasePeak> Store::phasePeaks(qint64 runId) const
{
    QVector<PhasePeak> out;
    if (schemaVersion() < 2)
        return out;
    QSqlQuery q(database());
    q.prepare(
        u"SELECT rank, phase, allocated, reserved FROM phase_peaks WHERE run_id=? ORDER BY rank, phase"_s);
    q.addBindValue(runId);
    if (!q.exec())
        return out;
    while (q.next()) {
        PhasePeak p;
        p.runId = runId;
        p.rank = q.value(0).toInt();
        p.phase = q.value(1).toString();
        p.allocated = varOpt<qint64>(q.value(2));
        p.reserved = varOpt<qint64>(q.value(3));
        out << p;
    }
    return out;
}

QVector<IterationRow> Store::iterations(qint64 runId, int rank) const
{
    // The table's columns this file has; the others stay unknown.
    const auto& columns = iterationColumns();
    const QStringList present = tableColumnsInFile(u"iterations"_s);
    QVector<int> read;
    QStringList names;
    for (int i = 0; i < columns.size(); ++i) {
        if (present.contains(columns[i].name)) {
            read << i;
            names << columns[i].name;
        }
    }
    QVector<IterationRow> out;
    if (read.isEmpty())
        return out;
    QSqlQuery q(database());
    q.setForwardOnly(true);
    QString sql = u"SELECT "_s + names.join(u", "_s) + u" FROM iterations WHERE run_id=?"_s;
    if (rank >= 0)
        sql += u" AND rank=?"_s;
    sql += u" ORDER BY iteration, rank"_s;
    q.prepare(sql);
    q.addBindValue(runId);
    if (rank >= 0)
        q.addBindValue(rank);
    if (!q.exec())
        return out;
    while (q.next()) {
        IterationRow r;
        for (int k = 0; k < read.size(); ++k)
            columns[read[k]].set(r, q.value(k));
        r.runId = runId;
        out << r;
    }
    return out;
}

QVector<MemoryReport> Store::memoryReports(qint64 runId) const
{
    QVector<MemoryReport> out;
    if (schemaVersion() < 2)
        return out;
    QSqlQuery q(database());
    q.prepare(
        u"SELECT rank, after_iteration, allocated, max_allocated, reserved, max_reserved, alloc_retries "
        "FROM memory_reports WHERE run_id=? ORDER BY after_iteration, rank"_s);
    q.addBindValue(runId);
    if (!q.exec())
        return out;
    while (q.next()) {
        MemoryReport m;
        m.runId = runId;
        m.rank = q.value(0).toInt();
        m.afterIteration = q.value(1).toInt();
        m.allocated = varOpt<qint64>(q.value(2));
        m.maxAllocated = varOpt<qint64>(q.value(3));
        m.reserved = varOpt<qint64>(q.value(4));
        m.maxReserved = varOpt<qint64>(q.value(5));
        m.allocRetries = varOpt<int>(q.value(6));
        out << m;
    }
    return out;
}

namespace {
int phaseOrder(const QString& phase)
{
    static const QStringList order { u"forward"_s, u"backward"_s, u"optimizer-init"_s, u"optimizer"_s };
    const int i = int(order.indexOf(phase));
    return i < 0 ? int(order.size()) : i;
}
int categoryOrder(const QString& category)
{
    static const QStringList order { u"parameters"_s, u"main_parameters"_s, u"gradient_buffer"_s,
        u"optimizer_states"_s, u"activations"_s, u"backward"_s, u"workspace"_s, u"other"_s };
    const int i = int(order.indexOf(category));
    return i < 0 ? int(order.size()) : i;
}
} // namespace

QHash<qint64, QVector<PeakAttributionRow>> Store::peakAttributions(
    const QVector<qint64>& runIds, int rank) const
{
    QHash<qint64, QVector<PeakAttributionRow>> out;
    if (schemaVersion() < 6)
        return out;
    QString where = u"rank=?"_s;
    if (!runIds.isEmpty())
        where += u" AND run_id IN ("_s + joinInts(runIds) + u")"_s;
    for (const PeakAttributionRow& r :
        selectRows(database(), u"peak_attribution"_s, peakAttributionColumns(), where, { rank }, {}))
        out[r.runId] << r;
    for (const AttributionBytesRow& b : selectRows(database(), u"peak_attribution_bytes"_s,
             attributionBytesColumns(), where, { rank }, u"rowid"_s)) {
        auto it = out.find(b.runId);
        if (it == out.end())
            continue;
        for (PeakAttributionRow& r : *it) {
            if (r.phase != b.phase)
                continue;
            if (b.kind == u"category")
                r.categories.append({ b.name, b.bytes });
            else
                r.activations.append({ b.layer, b.name, b.bytes });
        }
    }
    for (auto& rows : out) {
        std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return phaseOrder(a.phase) < phaseOrder(b.phase); });
        for (auto& r : rows) {
            std::stable_sort(r.categories.begin(), r.categories.end(), [](const auto& a, const auto& b) {
                const int x = categoryOrder(a.first), y = categoryOrder(b.first);
                return x != y ? x < y : a.first < b.first;
            });
            std::stable_sort(r.activations.begin(), r.activations.end(),
                [](const ActivationShare& a, const ActivationShare& b) {
                    return a.layer.value_or(-1) < b.layer.value_or(-1);
                });
        }
    }
    return out;
}

QVector<PeakAttributionRow> Store::peakAttribution(qint64 runId, int rank) const
{
    return peakAttributions({ runId }, rank).value(runId);
}

const PeakAttributionRow* Store::peakPhaseOf(const QVector<PeakAttributionRow>& rows)
{
    const PeakAttributionRow* best = nullptr;
    for (const auto& r : rows)
        if (r.peakAllocated && (!best || *r.peakAllocated > *best->peakAllocated))
            best = &r;
    return best;
}

std::optional<MemoryLayoutRow> Store::memoryLayout(qint64 runId, int rank) const
{
    if (schemaVersion() < 6)
        return std::nullopt;
    const auto rows = selectRows(
        database(), u"memory_layout"_s, memoryLayoutColumns(), u"run_id=? AND rank=?"_s, { runId, rank }, {});
    if (rows.isEmpty())
        return std::nullopt;
    return rows.first();
}

std::optional<qint64> Store::matchedControl(qint64 runId) const
{
    QSqlQuery q(database());
    q.prepare(u"SELECT control_run_id FROM runs WHERE id=?"_s);
    q.addBindValue(runId);
    if (!q.exec() || !q.next())
        return std::nullopt;
    return varOpt<qint64>(q.value(0));
}

std::optional<qint64> Store::findLatestControlFor(qint64 runId) const
{
    const auto subject = run(runId);
    if (!subject)
        return std::nullopt;
    RunFilter f;
    f.moduleSet = QStringList {};
    for (const RunRecord& candidate : listRuns(f)) {
        if (candidate.id == runId || !candidate.isExplicitControl())
            continue;
        if (candidate.outcome == outcome::Running)
            continue;
        if (matchCheck(*subject, candidate).matched)
            return candidate.id;
    }
    return std::nullopt;
}

namespace {
template <typename T> std::optional<std::string> fact(const std::optional<T>& v)
{
    if (!v)
        return std::nullopt;
    if constexpr (std::is_same_v<T, bool>)
        return std::string(*v ? "true" : "false");
    else
        return std::to_string(*v);
}
std::optional<std::string> fact(const QString& v)
{
    return v.isEmpty() ? std::nullopt : std::optional<std::string>(v.toStdString());
}
QStringList qStrings(const std::vector<std::string>& v)
{
    QStringList out;
    for (const auto& s : v)
        out << QString::fromStdString(s);
    return out;
}
} // namespace

rs::RunFacts matchFacts(const RunRecord& r, bool withRecipe)
{
    rs::RunFacts f;
    f.run_id = r.id;
    f.recipe_match_key = r.recipeMatchKey.toStdString();
    f.fields = {
        { "model", fact(r.model) },
        { "num_layers", fact(r.numLayers) },
        { "hidden_size", fact(r.hiddenSize) },
        { "ffn_hidden_size", fact(r.ffnHiddenSize) },
        { "num_attention_heads", fact(r.numAttentionHeads) },
        { "num_query_groups", fact(r.numQueryGroups) },
        { "num_moe_experts", fact(r.numMoeExperts) },
        { "moe_router_topk", fact(r.moeRouterTopk) },
        { "multi_latent_attention", fact(r.multiLatentAttention) },
        { "seq_length", fact(r.seqLength) },
        { "micro_batch_size", fact(r.microBatchSize) },
        { "global_batch_size", fact(r.globalBatchSize) },
        { "precision", fact(r.precision) },
        { "attention_backend", fact(r.attentionBackend) },
        { "tensor_model_parallel_size", fact(r.tensorModelParallelSize) },
        { "pipeline_model_parallel_size", fact(r.pipelineModelParallelSize) },
        { "virtual_pipeline_model_parallel_size", fact(r.virtualPipelineModelParallelSize) },
        { "context_parallel_size", fact(r.contextParallelSize) },
        { "expert_model_parallel_size", fact(r.expertModelParallelSize) },
        { "sequence_parallel", fact(r.sequenceParallel) },
        { "profile", fact(r.profile) },
        { "device", fact(r.device) },
        { "world_size", fact(r.worldSize) },
        { "gpu_count", fact(r.gpuCount) },
        { "megatron_core_revision", fact(r.megatronCoreRevision) },
        { "bridge_revision", fact(r.bridgeRevision) },
    };
    if (withRecipe && !r.recipeJson.isEmpty()) {
        // Text that does not parse compares as an empty recipe (every key absent), never as a match.
        nlohmann::json j = nlohmann::json::parse(r.recipeJson.toStdString(), nullptr, false);
        f.recipe = j.is_discarded() ? nlohmann::json::object() : std::move(j);
    }
    return f;
}

rs::MeasuredRun measuredRun(const RunRecord& r)
{
    return { r.peakAllocated, r.peakNote.toStdString(), r.steadyStepMs };
}

MatchCheck Store::matchCheck(const RunRecord& r, const RunRecord& c)
{
    // The recipes are parsed only when their match keys do not already say they agree.
    const bool keysAgree = !r.recipeMatchKey.isEmpty() && r.recipeMatchKey == c.recipeMatchKey;
    const rs::MatchResult result = rs::matchRuns(matchFacts(r, !keysAgree), matchFacts(c, !keysAgree));
    MatchCheck m;
    m.matched = result.matched;
    m.reasons = qStrings(result.reasons);
    m.notes = qStrings(result.notes);
    // Two imported logs: their printed settings (less the recompute choice) must agree too, e.g.
    // use_distributed_optimizer or attention_softmax_in_fp32, which the fields above do not hold.
    if (!r.importSettings.isEmpty() && !c.importSettings.isEmpty() && r.importSettings != c.importSettings) {
        const QJsonObject a = QJsonDocument::fromJson(r.importSettings.toUtf8()).object();
        const QJsonObject b = QJsonDocument::fromJson(c.importSettings.toUtf8()).object();
        QStringList keys = a.keys() + b.keys();
        keys.removeDuplicates();
        keys.sort();
        for (const QString& key : keys) {
            if (a.value(key) != b.value(key))
                m.reasons << key + u": "_s + a.value(key).toString(u"absent"_s) + u" vs "_s
                        + b.value(key).toString(u"absent"_s);
        }
    }
    m.matched = m.reasons.isEmpty();
    return m;
}

MatchCheck Store::matchCheck(qint64 runId, qint64 controlRunId) const
{
    const auto a = run(runId);
    const auto b = run(controlRunId);
    if (!a || !b) {
        MatchCheck m;
        m.reasons << u"run %1 is not in the store"_s.arg(!a ? runId : controlRunId);
        return m;
    }
    return matchCheck(*a, *b);
}

QVector<ComparisonRow> Store::compare(qint64 controlRunId, const QVector<qint64>& runIds) const
{
    QVector<qint64> all { controlRunId };
    for (qint64 id : runIds) {
        if (id != controlRunId && !all.contains(id))
            all << id;
    }
    RunFilter f;
    f.ids = all;
    QHash<qint64, RunRecord> byId;
    for (const auto& r : listRuns(f))
        byId.insert(r.id, r);
    if (!byId.contains(controlRunId))
        return {};
    QVector<RunRecord> runs;
    for (qint64 id : all.mid(1)) {
        if (byId.contains(id))
            runs << byId.value(id);
    }
    QVector<ComparisonRow> rows = compareRecords(byId.value(controlRunId), runs);
    fillStepTimeDeltas(*this, rows); // the one Δ step time (core's kStepDeltaName)
    return rows;
}

QVector<ComparisonRow> Store::compareRecords(const RunRecord& control, const QVector<RunRecord>& runs)
{
    QVector<ComparisonRow> out;
    out.reserve(runs.size() + 1);
    ComparisonRow head;
    head.run = control;
    head.isControl = true;
    head.match.matched = true;
    out << head;
    for (const RunRecord& run : runs) {
        if (run.id == control.id)
            continue;
        ComparisonRow row;
        row.run = run;
        row.match = matchCheck(row.run, control);
        if (!control.isExplicitControl())
            row.match.notes << u"the control's recompute choice is %1, not the explicit []"_s.arg(
                control.moduleSetLabel());
        if (row.match.matched) {
            const rs::ControlDeltas d = rs::deltasAgainstControl(measuredRun(row.run), measuredRun(control));
            row.allocatedVsControlPct = d.allocated_pct;
            row.timeVsControlPct = d.time_pct;
            row.match.notes << qStrings(d.notes);
        }
        out << row;
    }
    return out;
}

std::optional<qint64> Store::runByImportDigest(const QString& sha256Hex) const
{
    if (schemaVersion() < 2)
        return std::nullopt;
    QSqlQuery q(database());
    q.prepare(u"SELECT id FROM runs WHERE import_sha256=?"_s);
    q.addBindValue(sha256Hex);
    if (!q.exec() || !q.next())
        return std::nullopt;
    return q.value(0).toLongLong();
}

} // namespace rs::storage
