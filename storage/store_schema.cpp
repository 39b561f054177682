// SPDX-License-Identifier: Apache-2.0
// The store's schema: the runs column table, the migrations from version to version, opening (WAL,
// foreign keys, busy timeout, read-only), the connection and its errors.
#include <algorithm>
#include <atomic>
#include <functional>

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QSqlDriver>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QThread>
#include <QUrl>
#include <QUuid>

#include "core/comparison.h"
#include "storage/log.h"
#include "storage/store.h"
#include "storage/store_internal.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

using namespace detail;

namespace {

template <typename T>
Column opt(const char* name, const char* type, std::optional<T> RunRecord::*m, int since = 1)
{
    return { QString::fromLatin1(name), QString::fromLatin1(type), since,
        [m](const RunRecord& r) { return optVar(r.*m); },
        [m](RunRecord& r, const QVariant& v) { r.*m = varOpt<T>(v); } };
}

Column text(const char* name, QString RunRecord::*m, int since = 1)
{
    return { QString::fromLatin1(name), u"TEXT"_s, since, [m](const RunRecord& r) { return textVar(r.*m); },
        [m](RunRecord& r, const QVariant& v) { r.*m = v.toString(); } };
}

QString listToJson(const QStringList& list)
{
    return QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(list)).toJson(QJsonDocument::Compact));
}

QStringList jsonToList(const QString& text)
{
    QStringList out;
    const auto doc = QJsonDocument::fromJson(text.toUtf8());
    for (const auto& v : doc.array())
        out << v.toString();
    return out;
}

} // namespace

namespace detail {
// Filtering by module set ignores order: "layernorm, moe_act" and "moe_act, layernorm" are one set.
QString moduleKey(const std::optional<QStringList>& modules)
{
    if (!modules)
        return {};
    QStringList sorted = *modules;
    sorted.sort();
    return u"["_s + sorted.join(u',') + u"]"_s;
}

const QVector<Column>& runColumns()
{
    static const QVector<Column> columns = {
        text("source", &RunRecord::source),
        text("provenance", &RunRecord::provenance),
        { u"created_at"_s, u"TEXT"_s, 1,
            [](const RunRecord& r) {
                return r.createdAt.isValid() ? QVariant(r.createdAt.toUTC().toString(Qt::ISODateWithMs))
                                             : nullOf(QMetaType::QString);
            },
            [](RunRecord& r, const QVariant& v) {
                r.createdAt = QDateTime::fromString(v.toString(), Qt::ISODateWithMs);
                r.createdAt.setTimeSpec(Qt::UTC);
            } },
        text("recipe_name", &RunRecord::recipeName),
        text("recipe_json", &RunRecord::recipeJson),
        text("recipe_hash", &RunRecord::recipeHash),
        { u"overrides"_s, u"TEXT"_s, 1,
            [](const RunRecord& r) {
                return r.overrides.isEmpty() ? nullOf(QMetaType::QString) : QVariant(listToJson(r.overrides));
            },
            [](RunRecord& r, const QVariant& v) { r.overrides = jsonToList(v.toString()); } },
        text("worker_version", &RunRecord::workerVersion),
        text("libtorch_version", &RunRecord::libtorchVersion),
        text("cuda_version", &RunRecord::cudaVersion),
        text("nccl_version", &RunRecord::ncclVersion),
        text("device", &RunRecord::device),
        text("device_kind", &RunRecord::deviceKind),
        text("host", &RunRecord::host),
        text("megatron_core_revision", &RunRecord::megatronCoreRevision),
        text("bridge_revision", &RunRecord::bridgeRevision),
        text("profile", &RunRecord::profile),
        opt("world_size", "INTEGER", &RunRecord::worldSize),
        opt("gpu_count", "INTEGER", &RunRecord::gpuCount),
        text("model", &RunRecord::model),
        opt("num_layers", "INTEGER", &RunRecord::numLayers),
        opt("hidden_size", "INTEGER", &RunRecord::hiddenSize),
        opt("ffn_hidden_size", "INTEGER", &RunRecord::ffnHiddenSize),
        opt("num_attention_heads", "INTEGER", &RunRecord::numAttentionHeads),
        opt("num_query_groups", "INTEGER", &RunRecord::numQueryGroups),
        opt("num_moe_experts", "INTEGER", &RunRecord::numMoeExperts),
        opt("moe_router_topk", "INTEGER", &RunRecord::moeRouterTopk),
        opt("multi_latent_attention", "INTEGER", &RunRecord::multiLatentAttention),
        opt("seq_length", "INTEGER", &RunRecord::seqLength),
        opt("micro_batch_size", "INTEGER", &RunRecord::microBatchSize),
        opt("global_batch_size", "INTEGER", &RunRecord::globalBatchSize),
        text("precision", &RunRecord::precision),
        text("attention_backend", &RunRecord::attentionBackend),
        opt("tensor_model_parallel_size", "INTEGER", &RunRecord::tensorModelParallelSize),
        opt("pipeline_model_parallel_size", "INTEGER", &RunRecord::pipelineModelParallelSize),
        opt("virtual_pipeline_model_parallel_size", "INTEGER", &RunRecord::virtualPipelineModelParallelSize),
        opt("context_parallel_size", "INTEGER", &RunRecord::contextParallelSize),
        opt("expert_model_parallel_size", "INTEGER", &RunRecord::expertModelParallelSize),
        opt("sequence_parallel", "INTEGER", &RunRecord::sequenceParallel),
        text("recompute_granularity", &RunRecord::recomputeGranularity),
        { u"recompute_modules"_s, u"TEXT"_s, 1,
            [](const RunRecord& r) {
                return r.recomputeModules ? QVariant(listToJson(*r.recomputeModules))
                                          : nullOf(QMetaType::QString);
            },
            [](RunRecord& r, const QVariant& v) {
                if (v.isNull())
                    r.recomputeModules.reset();
                else
                    r.recomputeModules = jsonToList(v.toString());
            } },
        // derived, for filtering: the sorted module set
        { u"module_key"_s, u"TEXT"_s, 1,
            [](const RunRecord& r) { return textVar(moduleKey(r.recomputeModules)); },
            [](RunRecord&, const QVariant&) {} },
        text("recompute_method", &RunRecord::recomputeMethod),
        opt("recompute_num_layers", "INTEGER", &RunRecord::recomputeNumLayers),
        text("outcome", &RunRecord::outcome),
        text("failure_stage", &RunRecord::failureStage),
        opt("failure_iteration", "INTEGER", &RunRecord::failureIteration),
        text("message", &RunRecord::message),
        opt("peak_allocated", "INTEGER", &RunRecord::peakAllocated),
        opt("peak_reserved", "INTEGER", &RunRecord::peakReserved),
        opt("peak_rank", "INTEGER", &RunRecord::peakRank),
        text("peak_note", &RunRecord::peakNote),
        opt("steady_step_ms", "REAL", &RunRecord::steadyStepMs),
        opt("tokens_per_s", "REAL", &RunRecord::tokensPerS),
        opt("model_tflops", "REAL", &RunRecord::modelTflops),
        opt("executed_tflops", "REAL", &RunRecord::executedTflops),
        opt("loss_finite", "INTEGER", &RunRecord::lossFinite),
        opt("skipped_iterations", "INTEGER", &RunRecord::skippedIterations),
        opt("nan_iterations", "INTEGER", &RunRecord::nanIterations),
        opt("iterations_planned", "INTEGER", &RunRecord::iterationsPlanned),
        opt("warmup_iters", "INTEGER", &RunRecord::warmupIters),
        opt("control_run_id", "INTEGER", &RunRecord::controlRunId),
        text("steady_window", &RunRecord::steadyWindow),
        text("notes", &RunRecord::notes),
        // v2
        text("import_path", &RunRecord::importPath, 2),
        text("import_sha256", &RunRecord::importSha256, 2),
        text("import_format", &RunRecord::importFormat, 2),
        opt("theoretical_weight_optimizer_mb", "REAL", &RunRecord::theoreticalWeightOptimizerMb, 2),
        opt("theoretical_activation_mb", "REAL", &RunRecord::theoreticalActivationMb, 2),
        opt("theoretical_total_mb", "REAL", &RunRecord::theoreticalTotalMb, 2),
        // v3: derived from recipe_json on every write
        { u"recipe_match_key"_s, u"TEXT"_s, 3,
            [](const RunRecord& r) { return textVar(Store::recipeMatchKey(r.recipeJson)); },
            [](RunRecord& r, const QVariant& v) { r.recipeMatchKey = v.toString(); } },
        // v4: who ingests the run
        text("ingest_host", &RunRecord::ingestHost, 4),
        opt("ingest_pid", "INTEGER", &RunRecord::ingestPid, 4),
        // v5: an imported log's settings
        text("import_settings", &RunRecord::importSettings, 5),
    };
    return columns;
}

QVector<const Column*> columnsFor(int version)
{
    QVector<const Column*> out;
    for (const auto& c : runColumns()) {
        if (c.sinceVersion <= version)
            out << &c;
    }
    return out;
}

QString sqlError(const QSqlQuery& q)
{
    const QString driver = q.lastError().text() + u" [" + q.lastQuery() + u"]";
    // A lock held past the busy timeout: say what it means and what to do, the driver's words after.
    if (Store::isBusyError(q.lastError()))
        return u"the store is locked by another process (a writer held it for more than %1 s); nothing was "
               "lost: try again when the other run or import has finished (SQLite: %2)"_s
                   .arg(Store::kBusyTimeoutMs / 1000)
                   .arg(driver);
    return driver;
}

QString joinInts(const QVector<qint64>& ids)
{
    QStringList parts;
    for (qint64 id : ids)
        parts << QString::number(id);
    return parts.join(u',');
}
QString sqlType(ColumnType t)
{
    switch (t) {
    case ColumnType::Real:
        return u"REAL"_s;
    case ColumnType::Text:
        return u"TEXT"_s;
    case ColumnType::Integer:
    case ColumnType::Boolean:
        break;
    }
    return u"INTEGER"_s;
}

QString columnDefinition(const QString& name, ColumnType type, const QString& constraint)
{
    QString def = name + u' ' + sqlType(type);
    if (!constraint.isEmpty())
        def += u' ' + constraint;
    return def;
}

} // namespace detail

namespace {

template <typename T>
IterationColumn iterOpt(const char* name, ColumnType type, std::optional<T> IterationRow::*m, int since = 1,
    bool fromStream = true)
{
    return { QString::fromLatin1(name), type, since, fromStream,
        [m](const IterationRow& r) { return optVar(r.*m); },
        [m](IterationRow& r, const QVariant& v) { r.*m = varOpt<T>(v); } };
}

QVector<IterationColumn>& iterationTable()
{
    static QVector<IterationColumn> columns = {
        { u"run_id"_s, ColumnType::Integer, 1, false, [](const IterationRow& r) { return QVariant(r.runId); },
            [](IterationRow& r, const QVariant& v) { r.runId = v.toLongLong(); },
            u"NOT NULL REFERENCES runs(id) ON DELETE CASCADE"_s },
        { u"rank"_s, ColumnType::Integer, 1, true, [](const IterationRow& r) { return QVariant(r.rank); },
            [](IterationRow& r, const QVariant& v) { r.rank = v.toInt(); }, u"NOT NULL"_s },
        { u"iteration"_s, ColumnType::Integer, 1, true,
            [](const IterationRow& r) { return QVariant(r.iteration); },
            [](IterationRow& r, const QVariant& v) { r.iteration = v.toInt(); }, u"NOT NULL"_s },
        { u"phase"_s, ColumnType::Text, 1, true, [](const IterationRow& r) { return textVar(r.phase); },
            [](IterationRow& r, const QVariant& v) { r.phase = v.toString(); } },
        iterOpt("step_ms", ColumnType::Real, &IterationRow::stepMs),
        iterOpt("loss", ColumnType::Real, &IterationRow::loss),
        iterOpt("loss_finite", ColumnType::Boolean, &IterationRow::lossFinite),
        iterOpt("forward_peak_allocated", ColumnType::Integer, &IterationRow::forwardPeakAllocated),
        iterOpt("forward_peak_reserved", ColumnType::Integer, &IterationRow::forwardPeakReserved),
        iterOpt("backward_peak_allocated", ColumnType::Integer, &IterationRow::backwardPeakAllocated),
        iterOpt("backward_peak_reserved", ColumnType::Integer, &IterationRow::backwardPeakReserved),
        iterOpt("optimizer_peak_allocated", ColumnType::Integer, &IterationRow::optimizerPeakAllocated),
        iterOpt("optimizer_peak_reserved", ColumnType::Integer, &IterationRow::optimizerPeakReserved),
        iterOpt("allocated_after", ColumnType::Integer, &IterationRow::allocatedAfter),
        iterOpt("reserved_after", ColumnType::Integer, &IterationRow::reservedAfter),
        iterOpt("alloc_retries", ColumnType::Integer, &IterationRow::allocRetries),
        { u"optimizer_init"_s, ColumnType::Boolean, 1, true,
            [](const IterationRow& r) { return QVariant(int(r.optimizerInit)); },
            [](IterationRow& r, const QVariant& v) { r.optimizerInit = v.toInt() != 0; },
            u"NOT NULL DEFAULT 0"_s },
        // imported logs only
        iterOpt("tflops", ColumnType::Real, &IterationRow::tflops, 1, false),
        iterOpt("skipped_iterations", ColumnType::Integer, &IterationRow::skippedIterations, 1, false),
        iterOpt("nan_iterations", ColumnType::Integer, &IterationRow::nanIterations, 1, false),
        // v6
        iterOpt("forward_ms", ColumnType::Real, &IterationRow::forwardMs, 6),
        iterOpt("backward_ms", ColumnType::Real, &IterationRow::backwardMs, 6),
        iterOpt("optimizer_ms", ColumnType::Real, &IterationRow::optimizerMs, 6),
        iterOpt("grad_reduce_ms", ColumnType::Real, &IterationRow::gradReduceMs, 6),
        iterOpt("forward_allocated_after", ColumnType::Integer, &IterationRow::forwardAllocatedAfter, 6),
    };
    return columns;
}

template <typename Row, typename T>
TableColumn<Row> col(const char* name, ColumnType type, std::optional<T> Row::*m, const char* constraint = "")
{
    return { QString::fromLatin1(name), type, 6, true, [m](const Row& r) { return optVar(r.*m); },
        [m](Row& r, const QVariant& v) { r.*m = varOpt<T>(v); }, QString::fromLatin1(constraint) };
}
template <typename Row>
TableColumn<Row> textCol(const char* name, QString Row::*m, const char* constraint = "")
{
    return { QString::fromLatin1(name), ColumnType::Text, 6, true,
        [m](const Row& r) { return textVar(r.*m); }, [m](Row& r, const QVariant& v) { r.*m = v.toString(); },
        QString::fromLatin1(constraint) };
}
template <typename Row> TableColumn<Row> runIdCol()
{
    return { u"run_id"_s, ColumnType::Integer, 6, false, [](const Row& r) { return QVariant(r.runId); },
        [](Row& r, const QVariant& v) { r.runId = v.toLongLong(); },
        u"NOT NULL REFERENCES runs(id) ON DELETE CASCADE"_s };
}
template <typename Row> TableColumn<Row> rankCol()
{
    return { u"rank"_s, ColumnType::Integer, 6, true, [](const Row& r) { return QVariant(r.rank); },
        [](Row& r, const QVariant& v) { r.rank = v.toInt(); }, u"NOT NULL"_s };
}

template <typename Row>
QString createTable(const QString& table, const QVector<TableColumn<Row>>& columns, const QString& tail)
{
    QStringList defs;
    for (const auto& c : columns)
        defs << columnDefinition(c.name, c.type, c.constraint);
    if (!tail.isEmpty())
        defs << tail;
    return u"CREATE TABLE "_s + table + u" (\n  "_s + defs.join(u",\n  "_s) + u")"_s;
}

QString iterationsTableV1()
{
    QStringList defs;
    for (const auto& c : iterationTable())
        if (c.sinceVersion == 1)
            defs << columnDefinition(c.name, c.type, c.constraint);
    defs << u"PRIMARY KEY (run_id, rank, iteration)"_s;
    return u"CREATE TABLE iterations (\n  "_s + defs.join(u",\n  "_s) + u") WITHOUT ROWID"_s;
}

// ALTER TABLE for every column of `table` that schema version `version` added.
template <typename Row>
QStringList addedColumns(const QString& table, const QVector<TableColumn<Row>>& columns, int version)
{
    QStringList out;
    for (const auto& c : columns)
        if (c.sinceVersion == version)
            out << u"ALTER TABLE "_s + table + u" ADD COLUMN "_s
                    + columnDefinition(c.name, c.type, c.constraint);
    return out;
}

QString v1RunsTable()
{
    QStringList defs { u"id INTEGER PRIMARY KEY AUTOINCREMENT"_s };
    for (const auto& c : runColumns()) {
        if (c.sinceVersion != 1)
            continue;
        if (c.name == u"control_run_id")
            defs << u"control_run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL"_s;
        else if (c.name == u"outcome")
            defs << u"outcome TEXT NOT NULL DEFAULT 'running' CHECK (outcome IN "
                    "('pass','oom','nonfinite','invalid','error','aborted','running'))"_s;
        else if (c.name == u"source")
            defs << u"source TEXT NOT NULL CHECK (source IN ('worker','import','guide'))"_s;
        else
            defs << c.name + u' ' + c.type;
    }
    return u"CREATE TABLE runs (\n  "_s + defs.join(u",\n  "_s) + u"\n)"_s;
}

// One entry per schema version: the statements that take the file from version-1 to version.
// Never edit a shipped entry; add a new one.
QVector<QStringList> migrations()
{
    QStringList v1 {
        v1RunsTable(),
        u"CREATE INDEX runs_recipe_name ON runs(recipe_name)"_s,
        u"CREATE INDEX runs_module_key ON runs(module_key)"_s,
        u"CREATE INDEX runs_outcome ON runs(outcome)"_s,
        u"CREATE INDEX runs_host ON runs(host)"_s,
        u"CREATE INDEX runs_control ON runs(control_run_id)"_s,
        u"CREATE TABLE rank_peaks (\n"
        "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
        "  rank INTEGER NOT NULL,\n"
        "  peak_allocated INTEGER, peak_reserved INTEGER, peak_phase TEXT, peak_iteration INTEGER,\n"
        "  steady_step_ms REAL, steady_step_ms_median REAL,\n"
        "  PRIMARY KEY (run_id, rank)) WITHOUT ROWID"_s,
        iterationsTableV1(),
    };
    QStringList v2;
    for (const auto& c : runColumns()) {
        if (c.sinceVersion == 2)
            v2 << u"ALTER TABLE runs ADD COLUMN "_s + c.name + u' ' + c.type;
    }
    v2 << u"CREATE UNIQUE INDEX runs_import_sha256 ON runs(import_sha256) WHERE import_sha256 IS NOT NULL"_s
       << u"CREATE TABLE phase_peaks (\n"
          "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
          "  rank INTEGER NOT NULL, phase TEXT NOT NULL, allocated INTEGER, reserved INTEGER,\n"
          "  PRIMARY KEY (run_id, rank, phase)) WITHOUT ROWID"_s
       << u"CREATE TABLE memory_reports (\n"
          "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
          "  rank INTEGER NOT NULL, after_iteration INTEGER NOT NULL,\n"
          "  allocated INTEGER, max_allocated INTEGER, reserved INTEGER, max_reserved INTEGER,\n"
          "  alloc_retries INTEGER,\n"
          "  PRIMARY KEY (run_id, rank, after_iteration)) WITHOUT ROWID"_s;
    QStringList v3 { u"ALTER TABLE runs ADD COLUMN recipe_match_key TEXT"_s,
        u"CREATE INDEX runs_recipe_match_key ON runs(recipe_match_key)"_s };
    // (the keys of existing rows are computed in C++ after these statements: Store::migrate)
    QStringList v4 { u"ALTER TABLE runs ADD COLUMN ingest_host TEXT"_s,
        u"ALTER TABLE runs ADD COLUMN ingest_pid INTEGER"_s };
    QStringList v5 { u"ALTER TABLE runs ADD COLUMN import_settings TEXT"_s };
    QStringList v6 = addedColumns(u"iterations"_s, iterationTable(), 6);
    v6 << createTable(u"peak_attribution"_s, peakAttributionColumns(), u"PRIMARY KEY (run_id, rank, phase)"_s)
            + u" WITHOUT ROWID"_s
       << createTable(u"peak_attribution_bytes"_s, attributionBytesColumns(), {})
       << u"CREATE INDEX peak_attribution_bytes_run ON peak_attribution_bytes(run_id, rank, phase)"_s
       << createTable(u"memory_layout"_s, memoryLayoutColumns(), u"PRIMARY KEY (run_id, rank)"_s)
            + u" WITHOUT ROWID"_s;
    return { v1, v2, v3, v4, v5, v6 };
}

std::atomic<int> g_connectionSerial { 0 };

// The recipe keys that may differ between matched runs (core/comparison.h).
const QStringList& notMatchedKeys()
{
    static const QStringList keys = [] {
        QStringList k;
        for (const std::string& key : rs::fieldsThatMayDiffer())
            k << QString::fromStdString(key);
        return k;
    }();
    return keys;
}

} // namespace

namespace detail {
const QVector<TableColumn<PeakAttributionRow>>& peakAttributionColumns()
{
    using R = PeakAttributionRow;
    static const QVector<TableColumn<R>> columns = {
        runIdCol<R>(),
        rankCol<R>(),
        textCol("phase", &R::phase, "NOT NULL"),
        col("iteration", ColumnType::Integer, &R::iteration),
        col("peak_allocated", ColumnType::Integer, &R::peakAllocated),
        col("attributed", ColumnType::Integer, &R::attributed),
    };
    return columns;
}
const QVector<TableColumn<AttributionBytesRow>>& attributionBytesColumns()
{
    using R = AttributionBytesRow;
    static const QVector<TableColumn<R>> columns = {
        runIdCol<R>(),
        rankCol<R>(),
        textCol("phase", &R::phase, "NOT NULL"),
        textCol("kind", &R::kind, "NOT NULL CHECK (kind IN ('category','activation'))"),
        textCol("name", &R::name, "NOT NULL"),
        col("layer", ColumnType::Integer, &R::layer),
        { u"bytes"_s, ColumnType::Integer, 6, true, [](const R& r) { return QVariant(r.bytes); },
            [](R& r, const QVariant& v) { r.bytes = v.toLongLong(); }, u"NOT NULL"_s },
    };
    return columns;
}
const QVector<TableColumn<MemoryLayoutRow>>& memoryLayoutColumns()
{
    using R = MemoryLayoutRow;
    static const QVector<TableColumn<R>> columns = {
        runIdCol<R>(),
        rankCol<R>(),
        col("micro_batches", ColumnType::Integer, &R::microBatches),
        col("data_parallel_size", ColumnType::Integer, &R::dataParallelSize),
        col("distributed_optimizer", ColumnType::Boolean, &R::distributedOptimizer),
        textCol("grad_buffer_dtype", &R::gradBufferDtype),
        col("grad_buffer_bytes", ColumnType::Integer, &R::gradBufferBytes),
        col("parameters", ColumnType::Integer, &R::parameters),
        col("parameter_bytes", ColumnType::Integer, &R::parameterBytes),
        col("main_parameter_bytes", ColumnType::Integer, &R::mainParameterBytes),
        col("shard_elements", ColumnType::Integer, &R::shardElements),
        col("padded_vocab_size", ColumnType::Integer, &R::paddedVocabSize),
        col("tied_embeddings", ColumnType::Boolean, &R::tiedEmbeddings),
        col("one_pass_optimizer", ColumnType::Boolean, &R::onePassOptimizer),
    };
    return columns;
}
} // namespace detail

const QVector<IterationColumn>& iterationColumns()
{
    return iterationTable();
}

void registerIterationColumn(const QString& name, ColumnType type)
{
    auto& columns = iterationTable();
    for (const auto& c : columns)
        if (c.name == name)
            return;
    columns.append({ name, type, 0, true,
        [name](const IterationRow& r) {
            const auto it = r.extra.constFind(name);
            return it == r.extra.constEnd() ? QVariant() : it.value();
        },
        [name, type](IterationRow& r, const QVariant& v) {
            if (v.isNull() || !v.isValid()) {
                r.extra.remove(name);
                return;
            }
            switch (type) {
            case ColumnType::Integer:
                r.extra.insert(name, QVariant(v.toLongLong()));
                break;
            case ColumnType::Real:
                r.extra.insert(name, QVariant(v.toDouble()));
                break;
            case ColumnType::Boolean:
                r.extra.insert(name, QVariant(v.toInt() != 0 || v.toBool()));
                break;
            case ColumnType::Text:
                r.extra.insert(name, QVariant(v.toString()));
                break;
            }
        } });
}

namespace detail {
namespace {
template <typename Key> int indexIn(QHash<Key, int>& map, int& builtFor, const Key& key)
{
    const auto& columns = iterationTable();
    if (builtFor != columns.size()) {
        map.clear();
        for (int i = 0; i < columns.size(); ++i) {
            if (!columns[i].fromStream)
                continue;
            if constexpr (std::is_same_v<Key, QByteArray>)
                map.insert(columns[i].name.toUtf8(), i);
            else
                map.insert(columns[i].name, i);
        }
        builtFor = int(columns.size());
    }
    return map.value(key, -1);
}
} // namespace
int iterationColumnIndex(const QByteArray& key)
{
    static QHash<QByteArray, int> map;
    static int builtFor = -1;
    return indexIn(map, builtFor, key);
}
int iterationColumnIndex(const QString& key)
{
    static QHash<QString, int> map;
    static int builtFor = -1;
    return indexIn(map, builtFor, key);
}
} // namespace detail

QStringList Store::tableColumnsInFile(const QString& table) const
{
    QStringList names;
    QSqlQuery q(database());
    if (q.exec(u"PRAGMA table_info("_s + table + u")"_s))
        while (q.next())
            names << q.value(1).toString();
    return names;
}

bool Store::addRegisteredColumns()
{
    QStringList missing;
    const QStringList present = tableColumnsInFile(u"iterations"_s);
    if (present.isEmpty())
        return true;
    for (const auto& c : iterationColumns())
        if (c.sinceVersion == 0 && !present.contains(c.name))
            missing << u"ALTER TABLE iterations ADD COLUMN "_s
                    + columnDefinition(c.name, c.type, c.constraint);
    if (missing.isEmpty())
        return true;
    if (!beginWrite())
        return false;
    for (const QString& sql : missing) {
        if (!exec(sql)) {
            rollbackWrite();
            return false;
        }
    }
    return commitWrite();
}

QString Store::recipeMatchKey(const QString& recipeJson)
{
    if (recipeJson.isEmpty())
        return {};
    QJsonObject o = QJsonDocument::fromJson(recipeJson.toUtf8()).object();
    if (o.isEmpty())
        return {};
    for (const QString& key : notMatchedKeys())
        o.remove(key);
    // QJsonObject keeps its keys sorted, so the compact text is canonical.
    return QString::fromLatin1(
        QCryptographicHash::hash(QJsonDocument(o).toJson(QJsonDocument::Compact), QCryptographicHash::Sha256)
            .toHex());
}

bool Store::backfillMatchKeys(QString* error)
{
    QSqlQuery read(database());
    if (!read.exec(u"SELECT id, recipe_json FROM runs WHERE recipe_json IS NOT NULL"_s)) {
        if (error)
            *error = sqlError(read);
        return false;
    }
    QVector<QPair<qint64, QString>> keys;
    while (read.next())
        keys.append({ read.value(0).toLongLong(), recipeMatchKey(read.value(1).toString()) });
    QSqlQuery write(database());
    write.prepare(u"UPDATE runs SET recipe_match_key=? WHERE id=?"_s);
    for (const auto& [id, key] : keys) {
        write.addBindValue(textVar(key));
        write.addBindValue(id);
        if (!write.exec()) {
            if (error)
                *error = sqlError(write);
            return false;
        }
    }
    return true;
}

Store::Store()
    : m_connection(u"rs_storage_"_s + QString::number(++g_connectionSerial) + u'_'
        + QUuid::createUuid().toString(QUuid::Id128))
{
}

Store::~Store()
{
    close();
}

QString Store::defaultPath()
{
    // The product's programs (studio and CLI) name themselves "recompute-studio" (application and
    // organisation), so AppDataLocation is one folder for both. A tool that named itself otherwise still
    // gets that folder: the same layout under the generic data location.
    if (QCoreApplication::applicationName() == u"recompute-studio"
        && QCoreApplication::organizationName() == u"recompute-studio") {
        const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
        if (!dir.isEmpty())
            return dir + u"/measurements.sqlite"_s;
    }
    QString generic = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    if (generic.isEmpty())
        generic = QDir::homePath() + u"/.local/share"_s;
    return generic + u"/recompute-studio/recompute-studio/measurements.sqlite"_s;
}

bool Store::open(const QString& path, QString* error)
{
    return openAtVersion(path, kSchemaVersion, error);
}

bool Store::openAtVersion(const QString& path, int version, QString* error)
{
    close();
    m_requestedPath = path;
    auto fail = [&](const QString& why) {
        m_lastError = path + u": "_s + why;
        if (error)
            *error = m_lastError;
        close();
        return false;
    };
    if (version < 1 || version > kSchemaVersion)
        return fail(u"schema version %1 is not one of 1..%2"_s.arg(version).arg(kSchemaVersion));
    // A FIFO, a device or a folder is no store: SQLite would block reading a FIFO for ever.
    if (const QFileInfo f(path); f.exists() && !f.isFile())
        return fail(u"not a regular file (a store is an SQLite file)"_s);
    const QFileInfo info(path);
    if (!QDir().mkpath(info.absolutePath()))
        return fail(u"cannot create the folder "_s + info.absolutePath());
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(u"QSQLITE"_s, m_connection);
        if (!db.isValid())
            return fail(u"the Qt SQLite driver (QSQLITE) is not available"_s);
        db.setDatabaseName(path);
        db.setConnectOptions(u"QSQLITE_BUSY_TIMEOUT=%1"_s.arg(kBusyTimeoutMs));
        if (!db.open())
            return fail(db.lastError().text());
    }
    m_path = path;
    QString why;
    // journal_mode=WAL persists in the file; synchronous=NORMAL is safe under WAL (a power cut may lose the
    // last commits, never corrupt the file). Switching a new file to WAL needs an exclusive lock, and
    // SQLite answers "database is locked" at once (no busy wait) when another connection is opening the
    // same new file: retry for as long as the busy timeout, with a little jitter. A file that cannot be
    // written keeps its journal mode and stays readable (a run then spools its stream: RunIngest).
    if (!setWalMode(&why))
        return fail(why);
    if (!exec(u"PRAGMA synchronous=NORMAL"_s, &why)
        || !exec(u"PRAGMA foreign_keys=ON"_s, &why)
        // 32 MiB of page cache: a batch of iteration rows stays in memory until its commit.
        || !exec(u"PRAGMA cache_size=-32768"_s, &why))
        return fail(why);
    if (!migrate(version, &why))
        return fail(why);
    addRegisteredColumns(); // a file that cannot be written reads them as unknown
    if (version >= 4)
        recoverInterruptedRuns();
    return true;
}

void Store::close()
{
    m_iterationInsert.reset();
#ifdef RS_HAVE_SQLITE3
    sqlite3_finalize(static_cast<sqlite3_stmt*>(m_iterationStmt));
#endif
    m_iterationStmt = nullptr;
    m_iterationBound.clear();
    if (QSqlDatabase::contains(m_connection)) {
        {
            QSqlDatabase db = QSqlDatabase::database(m_connection, false);
            if (db.isOpen())
                db.close();
        }
        QSqlDatabase::removeDatabase(m_connection);
    }
    m_path.clear();
    m_inWrite = false;
}

bool Store::isOpen() const
{
    return QSqlDatabase::contains(m_connection) && QSqlDatabase::database(m_connection, false).isOpen();
}

QString Store::path() const
{
    return m_path;
}

QSqlDatabase Store::database() const
{
    return QSqlDatabase::database(m_connection, false);
}

QString Store::lastError() const
{
    return m_lastError;
}

int Store::schemaVersion() const
{
    QSqlQuery q(database());
    if (!q.exec(u"PRAGMA user_version"_s) || !q.next())
        return -1;
    return q.value(0).toInt();
}

bool Store::exec(const QString& sql, QString* error)
{
    QSqlQuery q(database());
    m_lastBusy = false;
    if (!q.exec(sql)) {
        m_lastError = sqlError(q);
        m_lastBusy = isBusyError(q.lastError());
        if (error)
            *error = m_lastError;
        return false;
    }
    return true;
}

bool Store::setWalMode(QString* error)
{
    QElapsedTimer waited;
    waited.start();
    for (;;) {
        {
            // Read, then finish the statement: an unfinished one keeps a read transaction open, and the
            // journal mode cannot change inside a transaction.
            QSqlQuery mode(database());
            const bool wal = mode.exec(u"PRAGMA journal_mode"_s) && mode.next()
                && mode.value(0).toString().compare(u"wal"_s, Qt::CaseInsensitive) == 0;
            mode.finish();
            if (wal)
                return true; // already WAL (it persists in the file): nothing to take a lock for
        }
        QSqlQuery q(database());
        if (q.exec(u"PRAGMA journal_mode=WAL"_s))
            return true;
        m_lastError = sqlError(q);
        if (isReadOnlyError(q.lastError()))
            return true; // readable, not writable: reading still works
        if (!isBusyError(q.lastError()) || waited.elapsed() > kBusyTimeoutMs) {
            if (error)
                *error = m_lastError;
            return false;
        }
        QThread::msleep(static_cast<unsigned long>(20 + QRandomGenerator::global()->bounded(60)));
    }
}

bool Store::isBusyError(const QSqlError& e)
{
    // SQLITE_BUSY (5) / SQLITE_LOCKED (6), extended codes included (5 + 256 k).
    bool ok = false;
    const int code = e.nativeErrorCode().toInt(&ok);
    if (ok && ((code & 0xff) == 5 || (code & 0xff) == 6))
        return true;
    return e.text().contains(u"database is locked"_s) || e.text().contains(u"database table is locked"_s);
}

bool Store::isReadOnlyError(const QSqlError& e)
{
    bool ok = false;
    const int code = e.nativeErrorCode().toInt(&ok);
    return (ok && (code & 0xff) == 8) || e.text().contains(u"readonly database"_s); // SQLITE_READONLY
}

bool Store::lastErrorIsBusy() const
{
    return m_lastBusy;
}

bool Store::setBusyTimeout(int ms)
{
    return exec(u"PRAGMA busy_timeout = %1"_s.arg(std::max(0, ms)));
}

bool Store::openReadOnly(const QString& path, QString* error)
{
    close();
    m_requestedPath = path;
    if (const QFileInfo f(path); f.exists() && !f.isFile())
        return open(path, error); // refused there, with the reason
    // A file that is not there, is older than this build or cannot be opened read-only (a WAL file whose
    // -shm cannot be made) is opened the usual way: created or migrated.
    if (!QFileInfo::exists(path))
        return open(path, error);
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(u"QSQLITE"_s, m_connection);
        if (!db.isValid())
            return open(path, error);
        db.setDatabaseName(path);
        db.setConnectOptions(u"QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=%1"_s.arg(kBusyTimeoutMs));
        if (!db.open())
            return open(path, error);
    }
    m_path = path;
    QSqlQuery q(database());
    if (!q.exec(u"PRAGMA user_version"_s) || !q.next()) { // e.g. WAL without a -shm it may create
        q = QSqlQuery();
        // In a folder this user cannot write (a shared, read-only store), SQLite cannot make the WAL's -shm:
        // read the file as it is, unlocked (immutable), rather than open it for writing, which must fail.
        const QFileInfo folder(QFileInfo(path).absolutePath());
        if (folder.isWritable())
            return open(path, error);
        {
            QSqlDatabase db = database();
            db.close();
            db.setConnectOptions(
                u"QSQLITE_OPEN_READONLY;QSQLITE_OPEN_URI;QSQLITE_BUSY_TIMEOUT=%1"_s.arg(kBusyTimeoutMs));
            db.setDatabaseName(u"file:"_s
                + QString::fromUtf8(QUrl::toPercentEncoding(QFileInfo(path).absoluteFilePath(), "/"))
                + u"?immutable=1"_s);
            if (!db.open())
                return open(path, error);
        }
        q = QSqlQuery(database());
        if (!q.exec(u"PRAGMA user_version"_s) || !q.next())
            return open(path, error);
        qCDebug(lcStore) << path << "read unlocked (immutable): its folder is not writable";
    }
    const int version = q.value(0).toInt();
    q.finish();
    if (version < 0 || version > kSchemaVersion) {
        m_lastError = path + u": "_s + schemaVersionProblem(version);
        if (error)
            *error = m_lastError;
        close();
        return false;
    }
    if (version < kSchemaVersion)
        return open(path, error);
    exec(u"PRAGMA foreign_keys=ON"_s);
    return true;
}

QString Store::schemaVersionProblem(int version)
{
    if (version < 0)
        return u"schema version %1 (PRAGMA user_version) is not a version this program wrote: the file is "
               "not a Recompute Studio store, or it is damaged"_s.arg(version);
    return u"schema version %1 is newer than this build understands (%2); use a newer Recompute Studio"_s
        .arg(version)
        .arg(kSchemaVersion);
}

bool Store::migrate(int targetVersion, QString* error)
{
    // Nothing to do (the usual case): no write lock is taken, so opening never waits for a writer and a
    // file that cannot be written still opens for reading.
    {
        QSqlQuery q(database());
        if (!q.exec(u"PRAGMA user_version"_s) || !q.next()) {
            if (error)
                *error = sqlError(q);
            return false;
        }
        const int current = q.value(0).toInt();
        q.finish();
        if (current < 0 || current > kSchemaVersion) {
            if (error)
                *error = schemaVersionProblem(current);
            return false;
        }
        if (current >= targetVersion)
            return true;
    }
    // Inside one IMMEDIATE transaction: two processes opening a new file at once migrate it once.
    if (!exec(u"BEGIN IMMEDIATE"_s, error))
        return false;
    const int current = schemaVersion();
    if (current < 0) {
        exec(u"ROLLBACK"_s);
        if (error)
            *error = schemaVersionProblem(current);
        return false;
    }
    if (current > kSchemaVersion) {
        exec(u"ROLLBACK"_s);
        if (error)
            *error
                = u"schema version %1 is newer than this build understands (%2); use a newer Recompute Studio"_s
                      .arg(current)
                      .arg(kSchemaVersion);
        return false;
    }
    const auto steps = migrations();
    qCDebug(lcStore) << "migrating" << m_path << "from schema version" << current << "to" << targetVersion;
    for (int v = current + 1; v <= targetVersion; ++v) {
        for (const QString& sql : steps[v - 1]) {
            if (!exec(sql, error)) {
                exec(u"ROLLBACK"_s);
                if (error)
                    *error = u"migration to schema version %1 failed: "_s.arg(v) + *error;
                return false;
            }
        }
        if (v == 3 && !backfillMatchKeys(error)) {
            exec(u"ROLLBACK"_s);
            return false;
        }
        if (!exec(u"PRAGMA user_version = %1"_s.arg(v), error)) {
            exec(u"ROLLBACK"_s);
            return false;
        }
    }
    return exec(u"COMMIT"_s, error);
}

} // namespace rs::storage
