// SPDX-License-Identifier: Apache-2.0
#include "storage/ingest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QSysInfo>

#include "core/overrides.h"
#include "core/recipe_json.h"
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
// The event as a stream line, for the spool.
QByteArray lineOf(const stream::Event& e)
{
    return QByteArray::fromStdString(
        stream::toJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}
// The recipe's hash (the worker's when given, else ours of the canonical text) and its Bridge overrides,
// from the recipe the run stores.
void fillRecipeIdentity(RunRecord* run, const QString& workerHash)
{
    run->recipeHash = workerHash;
    try {
        const rs::Recipe r = rs::recipeFromJsonText(run->recipeJson.toStdString());
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

// A stream phase as column text: the two every row carries are shared, not one copy per row.
QString phaseText(std::string_view text)
{
    static const QString steady = u"steady"_s, warmup = u"warmup"_s;
    return text == "steady" ? steady
        : text == "warmup"  ? warmup
                            : QString::fromUtf8(text.data(), qsizetype(text.size()));
}

// The range of an integer column's values: its stream member's (an `int` or an `int64_t`), so the line
// decoder leaves a value out of range to the stream's reader, which names it. Registered columns are int64.
struct IntegerRange {
    double lo = double(std::numeric_limits<int64_t>::min());
    double hi = 9.2e18; // below 2^63, which a double cannot tell from int64's maximum
};

// Per column of the iteration table: the range of its integers (for the line decoder). Rebuilt when a
// column is registered.
const std::vector<IntegerRange>& integerRanges()
{
    static std::vector<IntegerRange> ranges;
    static qsizetype builtFor = -1;
    const auto& columns = iterationColumns();
    if (builtFor != columns.size()) {
        ranges.assign(size_t(columns.size()), IntegerRange {});
        stream::Iteration probe;
        stream::forEachIterationField(probe, [&](const char* key, const auto& member) {
            using M = std::decay_t<decltype(member)>;
            const int c
                = detail::iterationColumnIndex(QByteArray::fromRawData(key, qsizetype(std::strlen(key))));
            if (c < 0)
                return;
            if constexpr (std::is_same_v<M, int> || std::is_same_v<M, std::optional<int>>)
                ranges[size_t(c)]
                    = { double(std::numeric_limits<int>::min()), double(std::numeric_limits<int>::max()) };
        });
        builtFor = columns.size();
    }
    return ranges;
}

// Where the JSON number starting at `p` ends (JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?);
// `p` itself when none starts there. from_chars alone would take ".5", "1." and "01", which JSON does not.
const char* jsonNumberEnd(const char* p, const char* end)
{
    const char* const start = p;
    auto digits = [&] {
        const char* from = p;
        while (p < end && *p >= '0' && *p <= '9')
            ++p;
        return p > from;
    };
    if (p < end && *p == '-')
        ++p;
    if (p < end && *p == '0')
        ++p;
    else if (!digits())
        return start;
    if (p < end && *p == '.') {
        ++p;
        if (!digits())
            return start;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        ++p;
        if (p < end && (*p == '+' || *p == '-'))
            ++p;
        if (!digits())
            return start;
    }
    return p;
}

// A flat JSON object, one pass: keys and values as byte ranges, into the row through the column table with
// the values the typed path gives (integers as qint64, numbers as double, booleans, text). Returns false on
// anything it does not read plainly (escapes, nested values, syntax errors, a value of the wrong type or out
// of range): the caller then decodes the line with the stream's reader, which says what is wrong.
bool decodeIterationLine(const QByteArray& line, IterationRow* row)
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
    const auto& columns = iterationColumns();
    const auto& ranges = integerRanges();
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
            const char* numberEnd = jsonNumberEnd(p, end);
            double v = 0;
            const auto [next, ec] = std::from_chars(p, numberEnd, v);
            if (numberEnd == p || ec != std::errc() || next != numberEnd || !std::isfinite(v))
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
        const IterationColumn& column = columns[c];
        if (isNull) {
            column.set(*row, QVariant()); // null is unknown, as absent values are
            continue;
        }
        switch (column.type) {
        case ColumnType::Integer: {
            const IntegerRange range = ranges[size_t(c)];
            if (!number || *number != std::floor(*number) || *number < range.lo || *number > range.hi)
                return false; // the real parser says what is wrong
            column.set(*row, QVariant(qint64(*number)));
            break;
        }
        case ColumnType::Real:
            if (!number)
                return false;
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
            column.set(*row, QVariant(phaseText(text)));
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
        m_received.clear();
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
        for (const auto& received : m_received) {
            const QByteArray line = std::holds_alternative<QByteArray>(received)
                ? std::get<QByteArray>(received)
                : lineOf(std::get<stream::Event>(received));
            ok = ok && file->write(line) == line.size() && file->write("\n") == 1;
        }
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
    m_received.emplace_back(line);
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

void RunIngest::setRecipe(const nlohmann::json& recipe)
{
    fillFromRecipeJson(&m_run, recipe);
    fillRecipeIdentity(&m_run, {});
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
        m_received.emplace_back(trimmed);
    if (ingestLineToStore(trimmed))
        return true;
    return startSpool();
}

bool RunIngest::ingestLineToStore(const QByteArray& line)
{
    // Iteration lines are the bulk of a stream: a flat object of numbers, booleans and two short strings.
    // They are decoded here straight into the row; anything else (or anything unusual in one: escapes,
    // nesting, a wrong type) is decoded by the stream's reader into its event.
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
    stream::Event event;
    try {
        event = stream::decodeLine(std::string_view(line.constData(), size_t(line.size())));
    } catch (const std::exception& error) {
        ++m_malformed;
        m_malformedReason = QString::fromStdString(error.what());
        return true;
    }
    return ingestToStore(event);
}

bool RunIngest::ingest(const stream::Event& e)
{
    if (m_finished) {
        m_error = u"the run is finished; a new run needs a new RunIngest"_s;
        return false;
    }
    if (m_spooling)
        return spool(lineOf(e));
    if (m_spoolEnabled)
        m_received.emplace_back(e);
    if (ingestToStore(e))
        return true;
    return startSpool();
}

bool RunIngest::ingestToStore(const stream::Event& e)
{
    using stream::EventKind;
    const EventKind kind = stream::kindOf(e);
    bool ok = true;
    try {
        switch (kind) {
        case EventKind::Unknown:
            return true; // unknown events are ignored (stream contract)
        case EventKind::Iteration:
            ok = onIteration(std::get<stream::Iteration>(e));
            break;
        case EventKind::Hello:
            ok = onHello(std::get<stream::Hello>(e));
            break;
        case EventKind::Recipe:
            ok = onRecipe(std::get<stream::RecipeEvent>(e));
            break;
        case EventKind::RankSummary:
            ok = onRankSummary(std::get<stream::RankSummary>(e));
            break;
        case EventKind::Result:
            ok = onResult(std::get<stream::Result>(e));
            break;
        case EventKind::PeakAttribution:
            ok = onPeakAttribution(std::get<stream::PeakAttribution>(e));
            break;
        case EventKind::MemoryLayout:
            ok = onMemoryLayout(std::get<stream::MemoryLayout>(e));
            break;
        case EventKind::Phase:
        case EventKind::Note:
            ok = ensureRun(); // the run exists from here on
            break;
        }
    } catch (const std::exception& error) {
        // a registered iteration column's value of the wrong type (onIteration)
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
    fillFromRecipeJson(&m_run, e.recipe);
    if (m_run.profile.isEmpty())
        m_run.profile = profile;
    fillRecipeIdentity(&m_run, qs(e.recipe_hash));
    if (!e.findings.empty())
        m_run.notes = u"findings: "_s + storedJsonText(e.findings);
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
// A member of stream::Iteration as the column table takes it: the values the line decoder gives.
QVariant columnValue(int v)
{
    return QVariant(qint64(v));
}
QVariant columnValue(int64_t v)
{
    return QVariant(qint64(v));
}
QVariant columnValue(double v)
{
    return QVariant(v);
}
QVariant columnValue(bool v)
{
    return QVariant(v);
}
QVariant columnValue(const std::string& v)
{
    return QVariant(phaseText(v));
}
template <typename T> QVariant columnValue(const std::optional<T>& v)
{
    return v ? columnValue(*v) : QVariant();
}

// The column of each of stream::forEachIterationField's keys, in its order (-1: none). Rebuilt when a
// column is registered.
const std::vector<int>& fieldColumns()
{
    static std::vector<int> at;
    static qsizetype builtFor = -1;
    if (builtFor != iterationColumns().size()) {
        at.clear();
        const stream::Iteration probe;
        stream::forEachIterationField(probe, [](const char* key, const auto&) {
            at.push_back(
                detail::iterationColumnIndex(QByteArray::fromRawData(key, qsizetype(std::strlen(key)))));
        });
        builtFor = iterationColumns().size();
    }
    return at;
}

std::string shortText(const nlohmann::json& v)
{
    std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// A registered column's value from the event's extra keys; nullptr when it reads, else what was expected.
const char* setRegistered(const IterationColumn& column, const nlohmann::json& v, IterationRow& r)
{
    if (v.is_null()) {
        column.set(r, QVariant());
        return nullptr;
    }
    switch (column.type) {
    case ColumnType::Integer:
        if (v.is_number_integer()
            && !(v.is_number_unsigned()
                && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))) {
            column.set(r, QVariant(qint64(v.get<int64_t>())));
            return nullptr;
        }
        if (v.is_number_float()) {
            const double d = v.get<double>();
            if (std::isfinite(d) && d == std::floor(d) && d >= double(std::numeric_limits<int64_t>::min())
                && d <= 9.2e18) {
                column.set(r, QVariant(qint64(d)));
                return nullptr;
            }
        }
        return "an integer";
    case ColumnType::Real:
        if (!v.is_number())
            return "a number";
        column.set(r, QVariant(v.get<double>()));
        return nullptr;
    case ColumnType::Boolean:
        if (!v.is_boolean())
            return "true or false";
        column.set(r, QVariant(v.get<bool>()));
        return nullptr;
    case ColumnType::Text:
        if (!v.is_string())
            return "a string";
        column.set(r, QVariant(QString::fromStdString(v.get<std::string>())));
        return nullptr;
    }
    return nullptr;
}
} // namespace

IterationRow iterationRowFromEvent(const stream::Iteration& e, QString* error)
{
    IterationRow r;
    const auto& columns = iterationColumns();
    const std::vector<int>& at = fieldColumns();
    size_t i = 0;
    stream::forEachIterationField(e, [&](const char*, const auto& value) {
        const int c = at[i++];
        if (c >= 0)
            columns[c].set(r, columnValue(value));
    });
    // Registered columns: keys the stream's type does not know, kept in extra.
    for (auto it = e.extra.begin(); it != e.extra.end(); ++it) {
        const int c = detail::iterationColumnIndex(QByteArray::fromStdString(it.key()));
        if (c < 0)
            continue; // unknown keys are ignored (stream contract)
        const char* expected = setRegistered(columns[c], it.value(), r);
        if (expected && error && error->isEmpty())
            *error = QString::fromStdString("iteration event: '" + it.key() + "': expected " + expected
                + ", got " + shortText(it.value()));
    }
    return r;
}

bool RunIngest::onIteration(const stream::Iteration& e)
{
    QString why;
    IterationRow r = iterationRowFromEvent(e, &why);
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
        const auto j
            = nlohmann::json::parse(line.constData(), line.constData() + line.size(), nullptr, false);
        return stream::eventKind(j) == stream::EventKind::Hello;
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
