// SPDX-License-Identifier: Apache-2.0
#include "storage/store.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QSqlDriver>
#include <QSqlError>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QStandardPaths>
#include <QSysInfo>
#include <QThread>
#include <QUuid>

#include "core/comparison.h"

#ifdef Q_OS_UNIX
#include <cerrno>
#include <signal.h>
#endif

#ifdef RS_HAVE_SQLITE3
#include <sqlite3.h>
#endif

using namespace Qt::StringLiterals;

namespace rs::storage {

namespace {

// --- the runs table, column by column: one list drives CREATE, INSERT, UPDATE and SELECT ---
struct Column {
    QString name;
    QString type;
    int sinceVersion;
    std::function<QVariant(const RunRecord&)> get;
    std::function<void(RunRecord&, const QVariant&)> set;
};

QVariant nullOf(QMetaType::Type t)
{
    return QVariant(QMetaType(t));
}

template <typename T> QVariant optVar(const std::optional<T>& v)
{
    if constexpr (std::is_same_v<T, bool>)
        return v ? QVariant(int(*v)) : nullOf(QMetaType::Int);
    else if constexpr (std::is_same_v<T, double>)
        return v ? QVariant(*v) : nullOf(QMetaType::Double);
    else if constexpr (std::is_same_v<T, qint64>)
        return v ? QVariant(*v) : nullOf(QMetaType::LongLong);
    else
        return v ? QVariant(*v) : nullOf(QMetaType::Int);
}

template <typename T> std::optional<T> varOpt(const QVariant& v)
{
    if (v.isNull() || !v.isValid())
        return std::nullopt;
    if constexpr (std::is_same_v<T, bool>)
        return v.toInt() != 0;
    else if constexpr (std::is_same_v<T, double>)
        return v.toDouble();
    else if constexpr (std::is_same_v<T, qint64>)
        return v.toLongLong();
    else
        return v.toInt();
}

QVariant textVar(const QString& s)
{
    return s.isEmpty() ? nullOf(QMetaType::QString) : QVariant(s);
}

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
        u"CREATE TABLE iterations (\n"
        "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,\n"
        "  rank INTEGER NOT NULL, iteration INTEGER NOT NULL, phase TEXT,\n"
        "  step_ms REAL, loss REAL, loss_finite INTEGER,\n"
        "  forward_peak_allocated INTEGER, forward_peak_reserved INTEGER,\n"
        "  backward_peak_allocated INTEGER, backward_peak_reserved INTEGER,\n"
        "  optimizer_peak_allocated INTEGER, optimizer_peak_reserved INTEGER,\n"
        "  allocated_after INTEGER, reserved_after INTEGER, alloc_retries INTEGER,\n"
        "  optimizer_init INTEGER NOT NULL DEFAULT 0,\n"
        "  tflops REAL, skipped_iterations INTEGER, nan_iterations INTEGER,\n"
        "  PRIMARY KEY (run_id, rank, iteration)) WITHOUT ROWID"_s,
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
    return { v1, v2, v3, v4, v5 };
}

std::atomic<int> g_connectionSerial { 0 };

QString sqlError(const QSqlQuery& q)
{
    return QString(q.lastError().text() + u" [" + q.lastQuery() + u"]");
}

QString joinInts(const QVector<qint64>& ids)
{
    QStringList parts;
    for (qint64 id : ids)
        parts << QString::number(id);
    return parts.join(u',');
}

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

// ---------------------------------------------------------------------------------------------------------

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
    if (version >= 4)
        recoverInterruptedRuns();
    return true;
}

int Store::recoverInterruptedRuns()
{
    int ended = 0;
#ifdef Q_OS_UNIX
    const QString host = QSysInfo::machineHostName();
    QSqlQuery q(database());
    q.prepare(
        u"SELECT id, ingest_pid FROM runs WHERE outcome='running' AND ingest_host=? AND ingest_pid IS NOT NULL"_s);
    q.addBindValue(host);
    if (!q.exec())
        return 0;
    QVector<QPair<qint64, qint64>> candidates;
    while (q.next())
        candidates.append({ q.value(0).toLongLong(), q.value(1).toLongLong() });
    for (const auto& [id, pid] : candidates) {
        // kill(pid, 0) probes without signalling: ESRCH means no such process.
        if (pid <= 0 || pid == QCoreApplication::applicationPid() || ::kill(pid_t(pid), 0) == 0
            || errno != ESRCH)
            continue;
        auto run = this->run(id);
        if (!run || run->outcome != outcome::Running)
            continue;
        run->outcome = outcome::Aborted;
        run->message = u"the ingesting process (pid %1 on %2) ended before the run did"_s.arg(pid).arg(host);
        if (!run->peakAllocated) {
            for (const IterationRow& it : iterations(id)) {
                for (const auto& v :
                    { it.forwardPeakAllocated, it.backwardPeakAllocated, it.optimizerPeakAllocated })
                    if (v && (!run->peakAllocated || *v > *run->peakAllocated))
                        run->peakAllocated = v;
            }
            if (run->peakAllocated)
                run->peakNote = u"max over the iterations stored before the run ended"_s;
        }
        // Only if still `running` at write time: another process may have recovered it first.
        QSqlQuery claim(database());
        claim.prepare(u"UPDATE runs SET outcome='aborted' WHERE id=? AND outcome='running'"_s);
        claim.addBindValue(id);
        if (!beginWrite())
            continue;
        if (claim.exec() && claim.numRowsAffected() == 1 && updateRun(*run)) {
            commitWrite();
            ++ended;
        } else {
            rollbackWrite();
        }
    }
#endif
    return ended;
}

void Store::close()
{
    m_iterationInsert.reset();
#ifdef RS_HAVE_SQLITE3
    sqlite3_finalize(static_cast<sqlite3_stmt*>(m_iterationStmt));
#endif
    m_iterationStmt = nullptr;
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
    if (!q.exec(u"PRAGMA user_version"_s) || !q.next()) // e.g. WAL without a -shm it may create
        return open(path, error);
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

namespace {
QVector<const Column*> columnsFor(int version)
{
    QVector<const Column*> out;
    for (const auto& c : runColumns()) {
        if (c.sinceVersion <= version)
            out << &c;
    }
    return out;
}
} // namespace

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

#ifdef RS_HAVE_SQLITE3
namespace {
// The QSQLITE connection's own sqlite3 handle (the driver links the same system libsqlite3).
sqlite3* sqliteHandle(const QSqlDatabase& db)
{
    const QVariant v = db.driver()->handle();
    if (!v.isValid() || qstrcmp(v.typeName(), "sqlite3*") != 0)
        return nullptr;
    return *static_cast<sqlite3* const*>(v.constData());
}
template <typename T> int bindOpt(sqlite3_stmt* st, int i, const std::optional<T>& v)
{
    if (!v)
        return sqlite3_bind_null(st, i);
    if constexpr (std::is_same_v<T, double>)
        return sqlite3_bind_double(st, i, *v);
    else
        return sqlite3_bind_int64(st, i, sqlite3_int64(*v));
}
} // namespace
#endif

bool Store::insertIteration(const IterationRow& r)
{
    // One prepared statement per connection: live ingest and bulk replay insert many rows.
    static const QString sql
        = u"INSERT OR REPLACE INTO iterations (run_id, rank, iteration, phase, step_ms, loss, "
          "loss_finite, forward_peak_allocated, forward_peak_reserved, backward_peak_allocated, "
          "backward_peak_reserved, optimizer_peak_allocated, optimizer_peak_reserved, "
          "allocated_after, reserved_after, alloc_retries, optimizer_init, tflops, "
          "skipped_iterations, nan_iterations) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"_s;
#ifdef RS_HAVE_SQLITE3
    // Iteration rows are the bulk of the store: bound straight through SQLite's API, they go in several
    // times faster than through QSqlQuery's QVariant binding (docs/benchmarks.md, "## Store").
    if (!m_iterationStmt) {
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
        sqlite3_bind_int64(st, 1, r.runId);
        sqlite3_bind_int(st, 2, r.rank);
        sqlite3_bind_int(st, 3, r.iteration);
        if (r.phase.isEmpty()) {
            sqlite3_bind_null(st, 4);
        } else {
            const QByteArray phase = r.phase.toUtf8();
            sqlite3_bind_text(st, 4, phase.constData(), int(phase.size()), SQLITE_TRANSIENT);
        }
        bindOpt(st, 5, r.stepMs);
        bindOpt(st, 6, r.loss);
        bindOpt(st, 7, r.lossFinite);
        bindOpt(st, 8, r.forwardPeakAllocated);
        bindOpt(st, 9, r.forwardPeakReserved);
        bindOpt(st, 10, r.backwardPeakAllocated);
        bindOpt(st, 11, r.backwardPeakReserved);
        bindOpt(st, 12, r.optimizerPeakAllocated);
        bindOpt(st, 13, r.optimizerPeakReserved);
        bindOpt(st, 14, r.allocatedAfter);
        bindOpt(st, 15, r.reservedAfter);
        bindOpt(st, 16, r.allocRetries);
        sqlite3_bind_int(st, 17, r.optimizerInit ? 1 : 0);
        bindOpt(st, 18, r.tflops);
        bindOpt(st, 19, r.skippedIterations);
        bindOpt(st, 20, r.nanIterations);
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
    q.bindValue(0, r.runId);
    q.bindValue(1, r.rank);
    q.bindValue(2, r.iteration);
    q.bindValue(3, textVar(r.phase));
    q.bindValue(4, optVar(r.stepMs));
    q.bindValue(5, optVar(r.loss));
    q.bindValue(6, optVar(r.lossFinite));
    q.bindValue(7, optVar(r.forwardPeakAllocated));
    q.bindValue(8, optVar(r.forwardPeakReserved));
    q.bindValue(9, optVar(r.backwardPeakAllocated));
    q.bindValue(10, optVar(r.backwardPeakReserved));
    q.bindValue(11, optVar(r.optimizerPeakAllocated));
    q.bindValue(12, optVar(r.optimizerPeakReserved));
    q.bindValue(13, optVar(r.allocatedAfter));
    q.bindValue(14, optVar(r.reservedAfter));
    q.bindValue(15, optVar(r.allocRetries));
    q.bindValue(16, int(r.optimizerInit));
    q.bindValue(17, optVar(r.tflops));
    q.bindValue(18, optVar(r.skippedIterations));
    q.bindValue(19, optVar(r.nanIterations));
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
    QSqlQuery q(database());
    q.setForwardOnly(true);
    QString sql
        = u"SELECT rank, iteration, phase, step_ms, loss, loss_finite, forward_peak_allocated, "
          "forward_peak_reserved, backward_peak_allocated, backward_peak_reserved, optimizer_peak_allocated, "
          "optimizer_peak_reserved, allocated_after, reserved_after, alloc_retries, optimizer_init, tflops, "
          "skipped_iterations, nan_iterations FROM iterations WHERE run_id=?"_s;
    if (rank >= 0)
        sql += u" AND rank=?"_s;
    sql += u" ORDER BY iteration, rank"_s;
    q.prepare(sql);
    q.addBindValue(runId);
    if (rank >= 0)
        q.addBindValue(rank);
    QVector<IterationRow> out;
    if (!q.exec())
        return out;
    while (q.next()) {
        IterationRow r;
        r.runId = runId;
        r.rank = q.value(0).toInt();
        r.iteration = q.value(1).toInt();
        r.phase = q.value(2).toString();
        r.stepMs = varOpt<double>(q.value(3));
        r.loss = varOpt<double>(q.value(4));
        r.lossFinite = varOpt<bool>(q.value(5));
        r.forwardPeakAllocated = varOpt<qint64>(q.value(6));
        r.forwardPeakReserved = varOpt<qint64>(q.value(7));
        r.backwardPeakAllocated = varOpt<qint64>(q.value(8));
        r.backwardPeakReserved = varOpt<qint64>(q.value(9));
        r.optimizerPeakAllocated = varOpt<qint64>(q.value(10));
        r.optimizerPeakReserved = varOpt<qint64>(q.value(11));
        r.allocatedAfter = varOpt<qint64>(q.value(12));
        r.reservedAfter = varOpt<qint64>(q.value(13));
        r.allocRetries = varOpt<int>(q.value(14));
        r.optimizerInit = q.value(15).toInt() != 0;
        r.tflops = varOpt<double>(q.value(16));
        r.skippedIterations = varOpt<int>(q.value(17));
        r.nanIterations = varOpt<int>(q.value(18));
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
    return compareRecords(byId.value(controlRunId), runs);
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
