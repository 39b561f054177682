// SPDX-License-Identifier: Apache-2.0
#include "storage/ingest.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QSysInfo>

#include "core/overrides.h"
#include "core/recipe_json.h"
#include "core/stream.h"
#include "storage/log.h"
#include "storage/store_internal.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

namespace {
QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}
QString qs(const std::optional<std::string>& s)
{
    return s ? QString::fromStdString(*s) : QString();
}
template <typename T> std::optional<qint64> bytesOf(const std::optional<T>& v)
{
    return v ? std::optional<qint64>(qint64(*v)) : std::nullopt;
}
QJsonObject qjson(const nlohmann::json& j)
{
    return QJsonDocument::fromJson(
        QByteArray::fromStdString(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)))
        .object();
}
// The recipe's hash (the worker's when given, else ours of the canonical text) and its Bridge overrides.
void fillRecipeIdentity(RunRecord* run, const QJsonObject& recipe, const QString& workerHash)
{
    run->recipeHash = workerHash;
    try {
        const rs::Recipe r
            = rs::recipeFromJsonText(QJsonDocument(recipe).toJson(QJsonDocument::Compact).toStdString());
        if (run->recipeHash.isEmpty())
            run->recipeHash = QString::fromStdString(rs::sha256Hex(rs::recipeCanonicalText(r)));
        run->overrides.clear();
        for (const auto& o : rs::recipeToBridgeOverrides(r))
            run->overrides << QString::fromStdString(o);
    } catch (const std::exception&) {
        // A recipe this build cannot read (a newer worker's keys): keep the JSON, leave hash/overrides as
        // given.
    }
}

// A flat JSON object, one pass: keys and values as byte ranges. Returns false on anything it does not
// handle (escapes, nested values, syntax errors): the caller then uses the full JSON parser.
bool decodeIterationLine(const QByteArray& line, IterationRow* row)
{
    static const QString steady = u"steady"_s, warmup = u"warmup"_s; // shared, not one copy per row
    const char* p = line.constData();
    const char* const end = p + line.size();
    auto skipSpace = [&] {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
            ++p;
    };
    auto readString = [&](std::string_view* out) {
        if (p >= end || *p != '"')
            return false;
        const char* start = ++p;
        while (p < end && *p != '"') {
            if (*p == '\\')
                return false; // escapes: leave it to the real parser
            ++p;
        }
        if (p >= end)
            return false;
        *out = std::string_view(start, size_t(p - start));
        ++p;
        return true;
    };
    skipSpace();
    if (p >= end || *p != '{')
        return false;
    ++p;
    bool isIteration = false;
    bool first = true;
    for (;;) {
        skipSpace();
        if (p < end && *p == '}') {
            ++p;
            break;
        }
        if (!first) {
            if (p >= end || *p != ',')
                return false;
            ++p;
            skipSpace();
        }
        first = false;
        std::string_view key;
        if (!readString(&key))
            return false;
        skipSpace();
        if (p >= end || *p != ':')
            return false;
        ++p;
        skipSpace();
        if (p >= end)
            return false;
        // the value
        std::string_view text;
        std::optional<double> number;
        std::optional<bool> boolean;
        bool isNull = false;
        if (*p == '"') {
            if (!readString(&text))
                return false;
        } else if (*p == '{' || *p == '[') {
            return false;
        } else if (end - p >= 4 && std::memcmp(p, "true", 4) == 0) {
            boolean = true;
            p += 4;
        } else if (end - p >= 5 && std::memcmp(p, "false", 5) == 0) {
            boolean = false;
            p += 5;
        } else if (end - p >= 4 && std::memcmp(p, "null", 4) == 0) {
            isNull = true;
            p += 4;
        } else {
            double v = 0;
            const auto [next, ec] = std::from_chars(p, end, v);
            if (ec != std::errc() || next == p)
                return false;
            number = v;
            p = next;
        }
        if (key == "event") {
            if (text != "iteration")
                return false;
            isIteration = true;
            continue;
        }
        const int c
            = detail::iterationColumnIndex(QByteArray::fromRawData(key.data(), qsizetype(key.size())));
        if (c < 0)
            continue; // unknown keys are ignored (stream contract)
        const IterationColumn& column = iterationColumns()[c];
        if (isNull) {
            column.set(*row, QVariant()); // null is unknown, as absent values are
            continue;
        }
        switch (column.type) {
        case ColumnType::Integer:
        case ColumnType::Real:
            if (!number)
                return false; // the real parser says what is wrong
            column.set(*row, QVariant(*number));
            break;
        case ColumnType::Boolean:
            if (!boolean)
                return false;
            column.set(*row, QVariant(*boolean));
            break;
        case ColumnType::Text:
            if (number || boolean)
                return false;
            column.set(*row,
                text == "steady"       ? QVariant(steady)
                    : text == "warmup" ? QVariant(warmup)
                                       : QVariant(QString::fromUtf8(text.data(), qsizetype(text.size()))));
            break;
        }
    }
    skipSpace();
    return isIteration && p == end;
}

void maxInto(std::optional<qint64>* into, std::optional<qint64> v)
{
    if (v && (!*into || *v > **into))
        *into = v;
}
} // namespace

RunIngest::RunIngest(Store* store)
    : m_store(store)
{
    m_run.source = source::Worker;
    m_run.outcome = outcome::Running;
    // Short waits per attempt, so a lock held by another process is waited on in steps that are reported
    // (begin()), not in one silent 30 s busy timeout.
    if (m_store->isOpen())
        m_store->setBusyTimeout(kLockStepMs);
}

RunIngest::~RunIngest()
{
    if ((m_runId != 0 || m_spooling) && !m_finished)
        finish(u"the ingest ended before the stream did"_s);
    if (m_store->isOpen())
        m_store->setBusyTimeout(Store::kBusyTimeoutMs);
}

void RunIngest::setNotifier(std::function<void(const QString&)> notify)
{
    m_notify = std::move(notify);
}

void RunIngest::setSpoolEnabled(bool enabled)
{
    m_spoolEnabled = enabled;
    if (!enabled)
        m_lines.clear();
}

void RunIngest::setMaxLockWait(int ms)
{
    m_maxLockWaitMs = std::max(0, ms);
}

void RunIngest::notify(const QString& message)
{
    if (m_notify)
        m_notify(message);
}

bool RunIngest::begin()
{
    if (m_store->inWrite())
        return true;
    if (m_store->beginWrite())
        return true;
    if (!m_store->lastErrorIsBusy()) {
        m_error = m_store->lastError();
        return false;
    }
    // Another process holds the write lock: wait, bounded and said, then go on with every row kept.
    QElapsedTimer waited;
    waited.start();
    qint64 said = 0;
    while (waited.elapsed() + kLockStepMs <= m_maxLockWaitMs) {
        const qint64 seconds = (waited.elapsed() + kLockStepMs) / 1000;
        if (seconds >= said + 5 || said == 0) {
            said = std::max<qint64>(seconds, 1);
            notify(u"store locked by another process, waiting (%1 s)\u2026"_s.arg(said));
        }
        if (m_store->beginWrite()) {
            notify(u"store unlocked after %1 s; storing the rows that waited"_s.arg(
                (waited.elapsed() + kLockStepMs) / 1000));
            return true;
        }
        if (!m_store->lastErrorIsBusy()) {
            m_error = m_store->lastError();
            return false;
        }
    }
    m_error = u"store locked by another process for more than %1 s: "_s.arg(m_maxLockWaitMs / 1000)
        + m_store->lastError();
    return false;
}

QStringList RunIngest::spoolCandidates(const QString& storePath)
{
    const QString stamp = QDateTime::currentDateTimeUtc().toString(u"yyyyMMdd-HHmmss"_s);
    const QString name = (storePath.isEmpty() ? u"measurements.sqlite"_s : QFileInfo(storePath).fileName())
        + u".spool-"_s + stamp + u'-' + QString::number(QCoreApplication::applicationPid()) + u".jsonl"_s;
    QStringList dirs;
    if (!storePath.isEmpty())
        dirs << QFileInfo(storePath).absolutePath();
    QString data = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (data.isEmpty())
        data = QDir::homePath() + u"/.local/share/recompute-studio"_s;
    dirs << data + u"/spool"_s << QDir::tempPath();
    QStringList out;
    for (const QString& dir : dirs)
        if (!out.contains(dir + u'/' + name))
            out << dir + u'/' + name;
    return out;
}

bool RunIngest::writeSpoolFrom(int candidate)
{
    // Every event so far into the first folder that takes all of them: a file that opens is not enough
    // (a full disk opens and then refuses the bytes), so each is written, flushed and checked, and a folder
    // that fails is left for the next one.
    const QStringList paths
        = spoolCandidates(m_store->path().isEmpty() ? m_store->requestedPath() : m_store->path());
    if (m_spoolFile) {
        m_spoolFile->close();
        m_spoolFile.reset();
    }
    for (int i = std::max(0, candidate); i < paths.size(); ++i) {
        if (!QDir().mkpath(QFileInfo(paths[i]).absolutePath()))
            continue;
        auto file = std::make_unique<QFile>(paths[i]);
        if (!file->open(QIODevice::WriteOnly | QIODevice::NewOnly))
            continue;
        bool ok = true;
        for (const QByteArray& line : m_lines)
            ok = ok && file->write(line) == line.size() && file->write("\n") == 1;
        ok = ok && file->flush();
        if (!ok) {
            m_spoolFailures << paths[i] + u": "_s + file->errorString();
            file->close();
            QFile::remove(paths[i]);
            continue;
        }
        qCDebug(lcStore) << "spool at" << paths[i];
        m_spoolFile = std::move(file);
        m_spoolPath = paths[i];
        m_spoolIndex = i;
        return true;
    }
    return false;
}

bool RunIngest::startSpool()
{
    if (!m_spoolEnabled)
        return false;
    const QString reason = m_error.isEmpty() ? m_store->lastError() : m_error;
    if (m_store->inWrite())
        m_store->rollbackWrite();
    if (!writeSpoolFrom(0)) {
        m_error = reason + u"; and no folder could take a spool of the stream"_s
            + (m_spoolFailures.isEmpty() ? QString() : u" ("_s + m_spoolFailures.join(u"; "_s) + u')');
        return false;
    }
    m_spoolReason = reason;
    m_spooling = true;
    // What the store took before it failed is dropped, best effort: the spool has all of it, and importing
    // the spool must not leave a second, partial copy. A store that takes nothing keeps it (aborted later).
    if (m_runId != 0 && m_store->deleteRun(m_runId))
        m_runId = 0;
    m_error.clear();
    notify(u"the store cannot take the run (%1); its stream is spooled to %2"_s.arg(reason, m_spoolPath));
    return true;
}

bool RunIngest::spool(const QByteArray& line)
{
    if (!m_spoolFile)
        return false;
    if (line.isEmpty())
        return true;
    // Kept in memory too: a folder that stops taking bytes (a disk that fills) hands the whole stream on.
    m_lines.append(line);
    // Line by line and flushed, so a process killed mid-run still leaves every event it received.
    if (m_spoolFile->write(line) == line.size() && m_spoolFile->write("\n") == 1 && m_spoolFile->flush())
        return true;
    const QString failed = m_spoolPath;
    m_spoolFailures << failed + u": "_s + m_spoolFile->errorString();
    QFile::remove(failed);
    if (writeSpoolFrom(m_spoolIndex + 1)) {
        notify(
            u"the spool %1 could not be written; the stream is spooled to %2 now"_s.arg(failed, m_spoolPath));
        return true;
    }
    m_spoolPath.clear();
    m_error = u"no folder could take the spool of the stream: "_s + m_spoolFailures.join(u"; "_s);
    return false;
}

void RunIngest::setCommitPolicy(int rows, int ms)
{
    m_commitRows = std::max(1, rows);
    m_commitMs = std::max(0, ms);
}

void RunIngest::setControl(std::optional<qint64> controlRunId)
{
    m_control = controlRunId;
    m_controlGiven = true;
}

void RunIngest::setProvenance(const QString& provenance)
{
    m_run.provenance = provenance;
}

void RunIngest::setRecipe(const QJsonObject& recipe)
{
    fillFromRecipeJson(&m_run, recipe);
    fillRecipeIdentity(&m_run, recipe, {});
}

bool RunIngest::ensureRun()
{
    if (m_runId != 0)
        return true;
    m_run.createdAt = QDateTime::currentDateTimeUtc();
    m_run.ingestHost = QSysInfo::machineHostName();
    m_run.ingestPid = QCoreApplication::applicationPid();
    if (!begin())
        return false;
    m_runId = m_store->insertRun(m_run);
    if (m_runId == 0) {
        m_error = m_store->lastError();
        m_store->rollbackWrite();
        return false;
    }
    m_run.id = m_runId;
    m_sinceCommit.start();
    return true;
}

bool RunIngest::maybeCommit(bool force)
{
    if (!m_store->inWrite())
        return true;
    const bool due
        = force || m_pending >= m_commitRows || (m_commitMs > 0 && m_sinceCommit.elapsed() >= m_commitMs);
    if (!due)
        return true;
    if (!m_store->commitWrite()) {
        m_error = m_store->lastError();
        return false;
    }
    m_pending = 0;
    m_sinceCommit.restart();
    return true;
}

bool RunIngest::ingestLine(const QByteArray& line)
{
    if (m_finished) {
        m_error = u"the run is finished; a new run needs a new RunIngest"_s;
        return false;
    }
    const QByteArray trimmed = line.trimmed();
    if (m_spooling)
        return spool(trimmed);
    if (m_spoolEnabled && !trimmed.isEmpty())
        m_lines.append(trimmed);
    if (ingestLineToStore(trimmed))
        return true;
    return startSpool();
}

bool RunIngest::ingestLineToStore(const QByteArray& line)
{
    // Iteration lines are the bulk of a stream: a flat object of numbers, booleans and two short strings.
    // They are decoded here without building a QJsonObject; anything else (or anything unusual in one:
    // escapes, nesting) goes through QJsonDocument.
    IterationRow row;
    if (!m_finished && m_runId != 0 && decodeIterationLine(line, &row)) {
        if (!begin())
            return false;
        row.runId = m_runId;
        if (!storeIteration(row)) {
            m_store->rollbackWrite();
            return false;
        }
        return maybeCommit(false);
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
        ++m_malformed;
        m_malformedReason
            = err.error != QJsonParseError::NoError ? err.errorString() : u"not a JSON object"_s;
        return true;
    }
    return ingestToStore(doc.object());
}

bool RunIngest::ingest(const QJsonObject& e)
{
    if (m_finished) {
        m_error = u"the run is finished; a new run needs a new RunIngest"_s;
        return false;
    }
    if (m_spooling)
        return spool(QJsonDocument(e).toJson(QJsonDocument::Compact));
    if (m_spoolEnabled)
        m_lines.append(QJsonDocument(e).toJson(QJsonDocument::Compact));
    if (ingestToStore(e))
        return true;
    return startSpool();
}

bool RunIngest::ingestToStore(const QJsonObject& e)
{
    using stream::EventKind;
    const EventKind kind
        = stream::eventKindFromName(e.value(QLatin1StringView("event")).toString().toStdString());
    if (kind == EventKind::Unknown)
        return true; // unknown events are ignored (stream contract)
    bool ok = true;
    try {
        if (kind == EventKind::Iteration) {
            ok = onIteration(e); // the hot path: decoded straight from the object
        } else {
            // Every other event is read as its type (core/stream.h); one that does not read is malformed.
            const QByteArray text = QJsonDocument(e).toJson(QJsonDocument::Compact);
            const nlohmann::json j = nlohmann::json::parse(text.constData(), text.constData() + text.size());
            switch (kind) {
            case EventKind::Hello:
                ok = onHello(stream::Hello::fromJson(j));
                break;
            case EventKind::Recipe:
                ok = onRecipe(stream::RecipeEvent::fromJson(j));
                break;
            case EventKind::RankSummary:
                ok = onRankSummary(stream::RankSummary::fromJson(j));
                break;
            case EventKind::Result:
                ok = onResult(stream::Result::fromJson(j));
                break;
            case EventKind::PeakAttribution:
                ok = onPeakAttribution(stream::PeakAttribution::fromJson(j));
                break;
            case EventKind::MemoryLayout:
                ok = onMemoryLayout(stream::MemoryLayout::fromJson(j));
                break;
            default:
                // phase, note: checked, and the run exists from here on
                stream::checkEvent(j);
                ok = ensureRun();
                break;
            }
        }
    } catch (const std::exception& error) {
        ++m_malformed;
        m_malformedReason = QString::fromStdString(error.what());
        return true;
    }
    if (!ok) {
        m_store->rollbackWrite();
        return false;
    }
    return maybeCommit(kind != EventKind::Iteration);
}

bool RunIngest::onHello(const stream::Hello& e)
{
    m_run.workerVersion = qs(e.worker_version);
    m_run.libtorchVersion = qs(e.libtorch_version);
    m_run.cudaVersion = qs(e.cuda_version);
    m_run.ncclVersion = qs(e.nccl_version);
    m_run.device = qs(e.device);
    m_run.deviceKind = qs(e.device_kind);
    m_run.host = qs(e.host);
    m_run.worldSize = e.world_size;
    m_run.profile = qs(e.profile);
    if (!ensureRun())
        return false;
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

bool RunIngest::onRecipe(const stream::RecipeEvent& e)
{
    if (!ensureRun())
        return false;
    const QString profile = m_run.profile;
    const QJsonObject recipe = qjson(e.recipe);
    fillFromRecipeJson(&m_run, recipe);
    if (m_run.profile.isEmpty())
        m_run.profile = profile;
    fillRecipeIdentity(&m_run, recipe, qs(e.recipe_hash));
    const QJsonArray findings = QJsonDocument::fromJson(QByteArray::fromStdString(e.findings.dump())).array();
    if (!findings.isEmpty())
        m_run.notes
            = u"findings: "_s + QString::fromUtf8(QJsonDocument(findings).toJson(QJsonDocument::Compact));
    const QString scope = qs(e.stage_scope);
    if (!scope.isEmpty())
        m_run.peakNote = u"measured on "_s + scope;
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

namespace {
QString jsonText(const QJsonValue& v)
{
    QString text = QString::fromUtf8(QJsonDocument(QJsonArray { v }).toJson(QJsonDocument::Compact));
    text = text.mid(1, text.size() - 2);
    return text.size() > 60 ? text.left(57) + u"..."_s : text;
}
// One pass over the event's keys through the iteration column table. A value of the wrong type is left
// unknown; with `error` the first one is said there, as core/stream.h says it.
IterationRow decodeIteration(const QJsonObject& e, QString* error)
{
    IterationRow r;
    const auto& columns = iterationColumns();
    for (auto it = e.constBegin(); it != e.constEnd(); ++it) {
        const int c = detail::iterationColumnIndex(it.key());
        if (c < 0)
            continue; // unknown keys are ignored (stream contract)
        const IterationColumn& column = columns[c];
        const QJsonValue v = it.value();
        if (v.isNull() || v.isUndefined()) {
            column.set(r, QVariant());
            continue;
        }
        const char* expected = nullptr;
        switch (column.type) {
        case ColumnType::Integer:
        case ColumnType::Real:
            if (v.isDouble())
                column.set(r, QVariant(v.toDouble()));
            else
                expected = "a number";
            break;
        case ColumnType::Boolean:
            if (v.isBool())
                column.set(r, QVariant(v.toBool()));
            else
                expected = "true or false";
            break;
        case ColumnType::Text:
            if (v.isString())
                column.set(r, QVariant(v.toString()));
            else
                expected = "a string";
            break;
        }
        if (expected && error && error->isEmpty())
            *error = u"iteration event: '%1': expected %2, got %3"_s.arg(
                it.key(), QLatin1StringView(expected), jsonText(v));
    }
    return r;
}
} // namespace

IterationRow iterationRowFromEvent(const QJsonObject& e, std::optional<bool>* finite)
{
    IterationRow r = decodeIteration(e, nullptr);
    if (finite)
        *finite = r.lossFinite;
    return r;
}

bool RunIngest::onIteration(const QJsonObject& e)
{
    QString why;
    IterationRow r = decodeIteration(e, &why);
    if (!why.isEmpty())
        throw std::runtime_error(why.toStdString()); // malformed (ingestToStore)
    if (!ensureRun())
        return false;
    if (!begin())
        return false;
    r.runId = m_runId;
    return storeIteration(r);
}

bool RunIngest::storeIteration(IterationRow& r)
{
    if (!r.lossFinite)
        r.lossFinite = r.loss.has_value();
    if (!*r.lossFinite)
        m_anyNonFinite = true;
    if (!m_store->insertIteration(r)) {
        m_error = m_store->lastError();
        return false;
    }
    ++m_pending;
    ++m_iterations;
    maxInto(&m_currentPeak, r.forwardPeakAllocated);
    maxInto(&m_currentPeak, r.backwardPeakAllocated);
    maxInto(&m_currentPeak, r.optimizerPeakAllocated);
    return true;
}

bool RunIngest::onRankSummary(const stream::RankSummary& e)
{
    if (!ensureRun())
        return false;
    if (!begin())
        return false;
    RankPeak p;
    p.runId = m_runId;
    p.rank = e.rank;
    p.peakAllocated = bytesOf(e.peak_allocated);
    p.peakReserved = bytesOf(e.peak_reserved);
    p.peakPhase = qs(e.peak_phase);
    p.peakIteration = e.peak_iteration;
    p.steadyStepMs = e.steady_step_ms;
    p.steadyStepMsMedian = e.steady_step_ms_median;
    if (!m_store->insertRankPeak(p)) {
        m_error = m_store->lastError();
        return false;
    }
    if (m_store->schemaVersion() >= 2) {
        for (const auto& [phase, v] : e.phase_peaks) {
            PhasePeak pp { m_runId, p.rank, qs(phase), bytesOf(v.allocated), bytesOf(v.reserved) };
            if (!m_store->insertPhasePeak(pp)) {
                m_error = m_store->lastError();
                return false;
            }
        }
    }
    // The run's peak is the hottest rank's.
    if (p.peakAllocated && (!m_run.peakAllocated || *p.peakAllocated > *m_run.peakAllocated)) {
        m_run.peakAllocated = p.peakAllocated;
        m_run.peakRank = p.rank;
    }
    maxInto(&m_run.peakReserved, p.peakReserved);
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

bool RunIngest::onPeakAttribution(const stream::PeakAttribution& e)
{
    if (!ensureRun())
        return false;
    if (m_store->schemaVersion() < 6)
        return true;
    if (!begin())
        return false;
    PeakAttributionRow row;
    row.runId = m_runId;
    row.rank = e.rank;
    row.phase = qs(e.phase);
    row.iteration = e.iteration;
    row.peakAllocated = e.peak_allocated;
    row.attributed = e.attributed;
    for (const auto& [category, bytes] : e.categories)
        row.categories.append({ qs(category), bytes });
    for (const auto& a : e.activations)
        row.activations.append({ a.layer, qs(a.region), a.bytes });
    if (!m_store->insertPeakAttribution(row)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

bool RunIngest::onMemoryLayout(const stream::MemoryLayout& e)
{
    if (!ensureRun())
        return false;
    if (m_store->schemaVersion() < 6)
        return true;
    if (!begin())
        return false;
    MemoryLayoutRow row;
    row.runId = m_runId;
    row.rank = e.rank;
    row.microBatches = e.micro_batches;
    row.dataParallelSize = e.data_parallel_size;
    row.distributedOptimizer = e.distributed_optimizer;
    row.gradBufferDtype = qs(e.grad_buffer_dtype);
    row.gradBufferBytes = e.grad_buffer_bytes;
    row.parameters = e.parameters;
    row.parameterBytes = e.parameter_bytes;
    row.mainParameterBytes = e.main_parameter_bytes;
    row.shardElements = e.shard_elements;
    row.paddedVocabSize = e.padded_vocab_size;
    row.tiedEmbeddings = e.tied_embeddings;
    row.onePassOptimizer = e.one_pass_optimizer;
    if (!m_store->insertMemoryLayout(row)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

bool RunIngest::onResult(const stream::Result& e)
{
    if (!ensureRun())
        return false;
    if (!begin())
        return false;
    m_hasResult = true;
    const QString status = qs(e.status);
    static const QStringList known
        = { outcome::Pass, outcome::Oom, outcome::Nonfinite, outcome::Invalid, outcome::Error };
    m_run.outcome = known.contains(status) ? status : outcome::Error;
    m_run.failureStage = qs(e.stage);
    m_run.failureIteration = e.iteration;
    m_run.message = qs(e.message);
    if (!known.contains(status))
        m_run.message = u"unknown result status '%1'. "_s.arg(status) + m_run.message;
    m_run.steadyStepMs = e.steady_step_ms;
    m_run.tokensPerS = e.tokens_per_s;
    m_run.modelTflops = e.model_tflops;
    m_run.executedTflops = e.executed_tflops;
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

bool RunIngest::finish(const QString& message)
{
    if (m_finished)
        return true;
    if (m_spooling) {
        // Everything the stream said is in the spool; importing it ends the run as the stream did.
        m_finished = true;
        m_spoolFile.reset();
        return true;
    }
    if (!ensureRun() || !begin()) {
        if (startSpool()) {
            m_finished = true;
            m_spoolFile.reset();
            return true;
        }
        return false;
    }
    m_finished = true;
    if (!m_hasResult) {
        m_run.outcome = outcome::Aborted;
        m_run.message = message.isEmpty() ? u"the stream ended without a result"_s : message;
    }
    // Numerical sanity from what was stored: every loss finite?
    m_run.lossFinite = m_iterations > 0 ? std::optional<bool>(!m_anyNonFinite) : std::nullopt;
    // A run without a steady-state time from the worker (aborted) keeps the peak seen in its iterations.
    if (!m_run.peakAllocated && m_currentPeak) {
        m_run.peakAllocated = m_currentPeak;
        m_run.peakNote = u"max over the iterations reported before the run ended"_s;
    }
    if (!m_controlGiven && !m_run.isExplicitControl()) {
        if (!m_store->updateRun(m_run)) {
            m_error = m_store->lastError();
            return false;
        }
        m_control = m_store->findLatestControlFor(m_runId);
    }
    m_run.controlRunId = m_control;
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        m_store->rollbackWrite();
        return false;
    }
    return maybeCommit(true);
}

bool isWorkerStreamFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return false;
    for (int n = 0; n < 20 && !f.atEnd(); ++n) {
        const QByteArray line = f.readLine(1 << 20).trimmed();
        if (line.isEmpty())
            continue;
        const QJsonDocument doc = QJsonDocument::fromJson(line);
        return doc.isObject() && doc.object().value(u"event"_s).toString() == u"hello";
    }
    return false;
}

StreamImport importWorkerStream(Store* store, const QString& path)
{
    StreamImport out;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        out.error = path + u": "_s + f.errorString();
        return out;
    }
    QCryptographicHash hash(QCryptographicHash::Sha256);
    if (!hash.addData(&f)) {
        out.error = path + u": cannot read it"_s;
        return out;
    }
    const QString digest = QString::fromLatin1(hash.result().toHex());
    if (const auto existing = store->runByImportDigest(digest)) {
        out.runId = *existing;
        out.duplicate = true;
        return out;
    }
    f.seek(0);
    RunIngest ingest(store);
    ingest.setSpoolEnabled(false); // a spool that cannot be stored stays where it is; no second copy
    ingest.setCommitPolicy(500, 1000);
    ingest.setProvenance(u"worker stream "_s + QFileInfo(path).absoluteFilePath());
    while (!f.atEnd()) {
        const QByteArray line = f.readLine();
        if (line.trimmed().isEmpty())
            continue;
        if (!ingest.ingestLine(line)) {
            out.error = path + u": "_s + ingest.error();
            return out;
        }
    }
    if (!ingest.finish(u"the stream ended without a result (imported from %1)"_s.arg(path))
        || ingest.runId() == 0) {
        out.error = path + u": "_s + (ingest.error().isEmpty() ? u"no run in the stream"_s : ingest.error());
        return out;
    }
    out.runId = ingest.runId();
    out.iterations = ingest.iterationCount();
    out.malformedLines = ingest.malformedLines();
    if (!store->setImportProvenance(
            out.runId, QFileInfo(path).absoluteFilePath(), digest, u"worker-stream"_s))
        out.error = path + u": " + store->lastError();
    return out;
}

} // namespace rs::storage
