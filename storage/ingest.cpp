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

using namespace Qt::StringLiterals;

namespace rs::storage {

namespace {
std::optional<qint64> bytes(const QJsonObject& o, const QString& key)
{
    const QJsonValue v = o.value(key);
    if (!v.isDouble())
        return std::nullopt;
    return qint64(v.toDouble());
}
std::optional<double> number(const QJsonObject& o, const QString& key)
{
    const QJsonValue v = o.value(key);
    if (!v.isDouble())
        return std::nullopt;
    return v.toDouble();
}
std::optional<int> integer(const QJsonObject& o, const QString& key)
{
    const QJsonValue v = o.value(key);
    if (!v.isDouble())
        return std::nullopt;
    return v.toInt();
}
QString str(const QJsonObject& o, const QString& key)
{
    const QJsonValue v = o.value(key);
    return v.isString() ? v.toString() : QString();
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
bool decodeIterationLine(const QByteArray& line, IterationRow* row, std::optional<bool>* finite)
{
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
        const auto asInt64 = [&] { return number ? std::optional<qint64>(qint64(*number)) : std::nullopt; };
        if (key == "event") {
            if (text != "iteration")
                return false;
            isIteration = true;
        } else if (key == "rank") {
            row->rank = number ? int(*number) : 0;
        } else if (key == "iteration") {
            row->iteration = number ? int(*number) : 0;
        } else if (key == "phase") {
            row->phase = text == "steady" ? u"steady"_s
                : text == "warmup"        ? u"warmup"_s
                                          : QString::fromUtf8(text.data(), qsizetype(text.size()));
        } else if (key == "step_ms") {
            row->stepMs = number;
        } else if (key == "loss") {
            row->loss = number;
        } else if (key == "loss_finite") {
            *finite = boolean;
        } else if (key == "forward_peak_allocated") {
            row->forwardPeakAllocated = asInt64();
        } else if (key == "forward_peak_reserved") {
            row->forwardPeakReserved = asInt64();
        } else if (key == "backward_peak_allocated") {
            row->backwardPeakAllocated = asInt64();
        } else if (key == "backward_peak_reserved") {
            row->backwardPeakReserved = asInt64();
        } else if (key == "optimizer_peak_allocated") {
            row->optimizerPeakAllocated = asInt64();
        } else if (key == "optimizer_peak_reserved") {
            row->optimizerPeakReserved = asInt64();
        } else if (key == "allocated_after") {
            row->allocatedAfter = asInt64();
        } else if (key == "reserved_after") {
            row->reservedAfter = asInt64();
        } else if (key == "alloc_retries") {
            row->allocRetries = number ? std::optional<int>(int(*number)) : std::nullopt;
        } else if (key == "optimizer_init") {
            row->optimizerInit = boolean.value_or(false);
        }
        (void)isNull; // null leaves the field unset, as absent values are
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

QString RunIngest::spoolPathFor(const QString& storePath)
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
    for (const QString& dir : dirs) {
        if (!QDir().mkpath(dir))
            continue;
        const QString candidate = dir + u'/' + name;
        QFile probe(candidate);
        if (probe.open(QIODevice::WriteOnly | QIODevice::Append)) {
            probe.close();
            return candidate;
        }
    }
    return {};
}

bool RunIngest::startSpool()
{
    if (!m_spoolEnabled)
        return false;
    const QString reason = m_error.isEmpty() ? m_store->lastError() : m_error;
    if (m_store->inWrite())
        m_store->rollbackWrite();
    const QString path = spoolPathFor(m_store->path().isEmpty() ? m_store->requestedPath() : m_store->path());
    auto file = std::make_unique<QFile>(path);
    if (path.isEmpty() || !file->open(QIODevice::WriteOnly | QIODevice::Append)) {
        m_error = reason + u"; and no folder could take a spool of the stream"_s;
        return false;
    }
    m_spoolFile = std::move(file);
    m_spoolPath = path;
    m_spoolReason = reason;
    m_spooling = true;
    for (const QByteArray& line : m_lines) {
        m_spoolFile->write(line);
        m_spoolFile->write("\n");
    }
    m_spoolFile->flush();
    m_lines.clear();
    // What the store took before it failed is dropped, best effort: the spool has all of it, and importing
    // the spool must not leave a second, partial copy. A store that takes nothing keeps it (aborted later).
    if (m_runId != 0 && m_store->deleteRun(m_runId))
        m_runId = 0;
    m_error.clear();
    notify(u"the store cannot take the run (%1); its stream is spooled to %2"_s.arg(reason, path));
    return true;
}

bool RunIngest::spool(const QByteArray& line)
{
    if (!m_spoolFile)
        return false;
    if (line.isEmpty())
        return true;
    // Line by line and flushed, so a process killed mid-run still leaves every event it received.
    const bool ok
        = m_spoolFile->write(line) == line.size() && m_spoolFile->write("\n") == 1 && m_spoolFile->flush();
    if (!ok)
        m_error = u"writing the spool %1 failed: %2"_s.arg(m_spoolPath, m_spoolFile->errorString());
    return ok;
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
    std::optional<bool> finite;
    if (!m_finished && m_runId != 0 && decodeIterationLine(line, &row, &finite)) {
        if (!begin())
            return false;
        row.runId = m_runId;
        if (!storeIteration(row, finite)) {
            m_store->rollbackWrite();
            return false;
        }
        return maybeCommit(false);
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
        ++m_malformed;
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
    const QString kind = e.value(QLatin1StringView("event")).toString();
    bool ok = true;
    if (kind == u"hello")
        ok = onHello(e);
    else if (kind == u"recipe")
        ok = onRecipe(e);
    else if (kind == u"phase")
        ok = ensureRun(); // the phase sequence is in the iteration rows; a marker alone stores nothing
    else if (kind == u"iteration")
        ok = onIteration(e);
    else if (kind == u"rank_summary")
        ok = onRankSummary(e);
    else if (kind == u"result")
        ok = onResult(e);
    else
        return true; // unknown events are ignored (stream contract)
    if (!ok) {
        m_store->rollbackWrite();
        return false;
    }
    return maybeCommit(kind != u"iteration");
}

bool RunIngest::onHello(const QJsonObject& e)
{
    m_run.workerVersion = str(e, u"worker_version"_s);
    m_run.libtorchVersion = str(e, u"libtorch_version"_s);
    m_run.cudaVersion = str(e, u"cuda_version"_s);
    m_run.ncclVersion = str(e, u"nccl_version"_s);
    m_run.device = str(e, u"device"_s);
    m_run.deviceKind = str(e, u"device_kind"_s);
    m_run.host = str(e, u"host"_s);
    m_run.worldSize = integer(e, u"world_size"_s);
    m_run.profile = str(e, u"profile"_s);
    if (!ensureRun())
        return false;
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

bool RunIngest::onRecipe(const QJsonObject& e)
{
    if (!ensureRun())
        return false;
    const QString profile = m_run.profile;
    fillFromRecipeJson(&m_run, e.value(u"recipe"_s).toObject());
    if (m_run.profile.isEmpty())
        m_run.profile = profile;
    fillRecipeIdentity(&m_run, e.value(u"recipe"_s).toObject(), str(e, u"recipe_hash"_s));
    const QJsonArray findings = e.value(u"findings"_s).toArray();
    if (!findings.isEmpty())
        m_run.notes
            = u"findings: "_s + QString::fromUtf8(QJsonDocument(findings).toJson(QJsonDocument::Compact));
    const QString scope = str(e, u"stage_scope"_s);
    if (!scope.isEmpty())
        m_run.peakNote = u"measured on "_s + scope;
    if (!m_store->updateRun(m_run)) {
        m_error = m_store->lastError();
        return false;
    }
    return true;
}

IterationRow iterationRowFromEvent(const QJsonObject& e, std::optional<bool>* finite)
{
    // One pass over the keys, dispatched on their length: a lookup per field would binary-search the object
    // 17 times, and this is the hot path of ingest (docs/benchmarks.md, "## Store").
    IterationRow r;
    for (auto it = e.constBegin(); it != e.constEnd(); ++it) {
        const QString k = it.key();
        const QJsonValue v = it.value();
        const auto is = [&k](const char* name) { return k == QLatin1StringView(name); };
        const auto num = [&v] { return v.isDouble() ? std::optional<double>(v.toDouble()) : std::nullopt; };
        const auto bytes
            = [&v] { return v.isDouble() ? std::optional<qint64>(qint64(v.toDouble())) : std::nullopt; };
        switch (k.size()) {
        case 4:
            if (is("rank"))
                r.rank = v.toInt();
            else if (is("loss"))
                r.loss = num();
            break;
        case 5:
            if (is("phase"))
                r.phase = v.toString();
            break;
        case 7:
            if (is("step_ms"))
                r.stepMs = num();
            break;
        case 9:
            if (is("iteration"))
                r.iteration = v.toInt();
            break;
        case 11:
            if (is("loss_finite") && v.isBool())
                if (finite)
                    *finite = v.toBool();
            break;
        case 13:
            if (is("alloc_retries"))
                r.allocRetries = v.isDouble() ? std::optional<int>(v.toInt()) : std::nullopt;
            break;
        case 14:
            if (is("reserved_after"))
                r.reservedAfter = bytes();
            else if (is("optimizer_init"))
                r.optimizerInit = v.toBool();
            break;
        case 15:
            if (is("allocated_after"))
                r.allocatedAfter = bytes();
            break;
        case 21:
            if (is("forward_peak_reserved"))
                r.forwardPeakReserved = bytes();
            break;
        case 22:
            if (is("forward_peak_allocated"))
                r.forwardPeakAllocated = bytes();
            else if (is("backward_peak_reserved"))
                r.backwardPeakReserved = bytes();
            break;
        case 23:
            if (is("backward_peak_allocated"))
                r.backwardPeakAllocated = bytes();
            else if (is("optimizer_peak_reserved"))
                r.optimizerPeakReserved = bytes();
            break;
        case 24:
            if (is("optimizer_peak_allocated"))
                r.optimizerPeakAllocated = bytes();
            break;
        default:
            break; // unknown keys are ignored (stream contract)
        }
    }
    return r;
}

bool RunIngest::onIteration(const QJsonObject& e)
{
    if (!ensureRun())
        return false;
    if (!begin())
        return false;
    std::optional<bool> finite;
    IterationRow r = iterationRowFromEvent(e, &finite);
    r.runId = m_runId;
    return storeIteration(r, finite);
}

bool RunIngest::storeIteration(IterationRow& r, std::optional<bool> finite)
{
    r.lossFinite = finite ? finite : std::optional<bool>(r.loss.has_value());
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

bool RunIngest::onRankSummary(const QJsonObject& e)
{
    if (!ensureRun())
        return false;
    if (!begin())
        return false;
    RankPeak p;
    p.runId = m_runId;
    p.rank = integer(e, u"rank"_s).value_or(0);
    p.peakAllocated = bytes(e, u"peak_allocated"_s);
    p.peakReserved = bytes(e, u"peak_reserved"_s);
    p.peakPhase = str(e, u"peak_phase"_s);
    p.peakIteration = integer(e, u"peak_iteration"_s);
    p.steadyStepMs = number(e, u"steady_step_ms"_s);
    p.steadyStepMsMedian = number(e, u"steady_step_ms_median"_s);
    if (!m_store->insertRankPeak(p)) {
        m_error = m_store->lastError();
        return false;
    }
    const QJsonObject phases = e.value(u"phase_peaks"_s).toObject();
    if (m_store->schemaVersion() >= 2) {
        for (auto it = phases.begin(); it != phases.end(); ++it) {
            const QJsonObject v = it.value().toObject();
            PhasePeak pp { m_runId, p.rank, it.key(), bytes(v, u"allocated"_s), bytes(v, u"reserved"_s) };
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

bool RunIngest::onResult(const QJsonObject& e)
{
    if (!ensureRun())
        return false;
    if (!begin())
        return false;
    m_hasResult = true;
    const QString status = str(e, u"status"_s);
    static const QStringList known
        = { outcome::Pass, outcome::Oom, outcome::Nonfinite, outcome::Invalid, outcome::Error };
    m_run.outcome = known.contains(status) ? status : outcome::Error;
    m_run.failureStage = str(e, u"stage"_s);
    m_run.failureIteration = integer(e, u"iteration"_s);
    m_run.message = str(e, u"message"_s);
    if (!known.contains(status))
        m_run.message = u"unknown result status '%1'. "_s.arg(status) + m_run.message;
    m_run.steadyStepMs = number(e, u"steady_step_ms"_s);
    m_run.tokensPerS = number(e, u"tokens_per_s"_s);
    m_run.modelTflops = number(e, u"model_tflops"_s);
    m_run.executedTflops = number(e, u"executed_tflops"_s);
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
