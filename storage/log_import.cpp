// SPDX-License-Identifier: Apache-2.0
// The regexes follow megatron-rules.md (e): Megatron-LM `training_log` / `report_memory`, Megatron Bridge
// `training_log` / its GB memory report, the theoretical-memory line, and the OOM message. Lines are matched
// unanchored, so launcher prefixes ("0: ", "[rank0]: ") do not matter.
//
// One pass over the bytes: a line is decoded only when a cheap byte test says it may be one of ours, and
// every lookup (an iteration or a memory report seen before) is a hash, so the time is linear in the size
// of the log (docs/benchmarks.md, "## Log import": the earlier version searched every stored iteration for
// each new line, which made a 100 MB log take minutes).
#include "storage/log_import.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include "core/model_shape.h"
#include "core/overrides.h"
#include "core/recipe_input.h"
#include "core/recipe_json.h"
#include "core/shell_words.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

namespace {

// No device reports more than this (1 PiB); a larger figure is a broken line, not a measurement.
constexpr double kMaxBytes = double(qint64(1) << 50);

QRegularExpression compiled(const QString& pattern)
{
    QRegularExpression re(pattern);
    re.optimize();
    return re;
}

// Every OOM form Megatron-LM and Megatron Bridge runs print: PyTorch's allocator (old and new exception
// names), the CUDA runtime's own error (RuntimeError: CUDA error: out of memory), Transformer Engine's
// "CUDA Error: out of memory", NCCL's failed allocations, cuBLAS / cuDNN handles that could not be
// allocated, and the C++ c10::OutOfMemoryError.
const QString kOomAlternatives
    = u"OutOfMemoryError|CUDA out of memory|CUDA [Ee]rror: out of memory|Cuda failure(?: \\d+)? "
      "'out of memory'|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|Failed to "
      "CUDA calloc|cudaErrorMemoryAllocation|HIP out of memory|NCCL WARN .*out of memory"_s;

bool mayBeOom(QByteArrayView line)
{
    return line.contains("out of memory") || line.contains("OutOfMemoryError")
        || line.contains("ALLOC_FAILED") || line.contains("CUDA calloc")
        || line.contains("cudaErrorMemoryAllocation");
}

// An integer as Megatron prints it; empty when it is not one or does not fit an int.
std::optional<int> intOf(QStringView s)
{
    bool ok = false;
    const qlonglong v = s.trimmed().toLongLong(&ok);
    if (!ok || v < INT_MIN || v > INT_MAX)
        return std::nullopt;
    return int(v);
}

std::optional<double> finiteOf(QStringView s)
{
    bool ok = false;
    const double v = s.trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(v))
        return std::nullopt;
    return v;
}

// A memory figure in `unit` bytes (MiB or 1e9): finite, not negative, at most kMaxBytes.
std::optional<qint64> bytesOf(QStringView s, double unit)
{
    const auto v = finiteOf(s);
    if (!v || *v < 0 || *v * unit > kMaxBytes)
        return std::nullopt;
    return std::llround(*v * unit);
}

// The argument's value as Python printed it: None, True/False, numbers, lists ['a', 'b'], enums
// (`AttnBackend.fused`, `<AttnBackend.fused: 1>`), strings with or without quotes.
QJsonValue pythonValue(const QString& text)
{
    QString t = text.trimmed();
    if (t == u"None")
        return QJsonValue();
    if (t == u"True")
        return true;
    if (t == u"False")
        return false;
    bool ok = false;
    const qlonglong i = t.toLongLong(&ok);
    if (ok)
        return double(i);
    const double d = t.toDouble(&ok);
    if (ok)
        return d;
    if (t.startsWith(u'[') && t.endsWith(u']')) {
        QJsonArray arr;
        const QString inner = t.mid(1, t.size() - 2).trimmed();
        if (!inner.isEmpty()) {
            for (QString item : inner.split(u',')) {
                item = item.trimmed();
                if (item.size() >= 2 && (item.front() == u'\'' || item.front() == u'"'))
                    item = item.mid(1, item.size() - 2);
                arr.append(item);
            }
        }
        return arr;
    }
    if (t.startsWith(u'<') && t.endsWith(u'>') && t.contains(u':')) // <AttnBackend.fused: 1>
        t = t.mid(1, t.indexOf(u':') - 1);
    if (t.size() >= 2 && (t.front() == u'\'' || t.front() == u'"') && t.back() == t.front())
        return t.mid(1, t.size() - 2);
    return t;
}

class LogParser {
public:
    explicit LogParser(const ImportProgress& progress)
        : m_progress(progress)
    {
    }
    ParsedLog parse(const QByteArray& bytes);
    // Incremental use (TrainingLogStream): one complete line (without its '\n'), then the end.
    void feedLine(QByteArrayView raw)
    {
        ++m_lineNo;
        line(raw);
    }
    const ParsedLog& current() const { return m_log; }
    ParsedLog finish(bool truncatedLastLine);

private:
    void line(QByteArrayView raw);
    bool iterationLine(const QString& line);
    void memoryLine(const QString& line);
    void argumentsLine(const QString& line);
    void endArguments();
    void summaryLine(const QString& line);
    void endSummary();
    void oomLine(const QString& line);
    void refuse(const QString& kind, const QString& example);
    void conflict(const QString& what);

    const ImportProgress& m_progress;
    ParsedLog m_log;
    int m_lineNo = 0;
    // iteration → (index in m_log.iterations, hash of its line, line number)
    struct Seen {
        qsizetype index;
        size_t hash;
        int line;
    };
    QHash<int, Seen> m_iterations;
    QHash<qint64, Seen> m_memory; // (rank << 32 | iteration) → index in m_log.memory
    struct Refusal {
        int count = 0;
        int firstLine = 0;
        QString example;
    };
    QMap<QString, Refusal> m_refusals;
    int m_conflicts = 0;
    // the arguments block being read, and where it started
    bool m_inArguments = false;
    int m_argumentsStart = 0, m_firstArgumentsStart = 0;
    QMap<QString, QString> m_arguments;
    // Bridge's configuration summary being read
    bool m_inSummary = false;
    int m_summaryStart = 0, m_firstSummaryStart = 0, m_summaryRules = 0;
    QString m_summarySection;
    QMap<QString, QString> m_summary;
    bool m_sawMlmMemory = false, m_sawBridgeMemory = false, m_sawMicroseconds = false,
         m_sawTimestampWithout = false;
    int m_lastIterationSeen = 0;
    QStringList m_traceback;
};

void LogParser::refuse(const QString& kind, const QString& example)
{
    Refusal& r = m_refusals[kind];
    if (r.count++ == 0) {
        r.firstLine = m_lineNo;
        r.example = example.left(120);
    }
}

void LogParser::conflict(const QString& what)
{
    // The first few say enough; the count says the rest.
    if (++m_conflicts <= 3)
        m_log.conflicts << what;
}

ParsedLog LogParser::parse(const QByteArray& bytes)
{
    const char* data = bytes.constData();
    const qsizetype size = bytes.size();
    qsizetype pos = 0;
    qsizetype nextReport = 0;
    constexpr qsizetype kReportEvery = 1 << 20;
    while (pos < size) {
        if (m_progress && pos >= nextReport) {
            nextReport = pos + kReportEvery;
            if (!m_progress(pos, size)) {
                m_log.cancelled = true;
                return m_log;
            }
        }
        const void* nl = std::memchr(data + pos, '\n', size_t(size - pos));
        if (!nl) {
            // Written up to here when the job died: not trusted.
            m_log.truncatedLastLine = true;
            break;
        }
        const qsizetype end = static_cast<const char*>(nl) - data;
        feedLine(QByteArrayView(data + pos, end - pos));
        pos = end + 1;
    }
    if (m_progress)
        m_progress(size, size);
    return finish(m_log.truncatedLastLine);
}

ParsedLog LogParser::finish(bool truncatedLastLine)
{
    m_log.truncatedLastLine = truncatedLastLine;
    if (m_inArguments)
        endArguments();
    if (m_inSummary)
        endSummary();

    std::sort(m_log.iterations.begin(), m_log.iterations.end(),
        [](const IterationRow& a, const IterationRow& b) { return a.iteration < b.iteration; });
    std::sort(m_log.memory.begin(), m_log.memory.end(), [](const MemoryReport& a, const MemoryReport& b) {
        return a.afterIteration != b.afterIteration ? a.afterIteration < b.afterIteration : a.rank < b.rank;
    });
    if (m_sawBridgeMemory || m_log.bridgeSummary
        || (m_sawTimestampWithout && !m_sawMicroseconds && !m_sawMlmMemory))
        m_log.format = u"megatron-bridge"_s;
    else if (m_sawMlmMemory || m_sawMicroseconds || !m_log.arguments.isEmpty())
        m_log.format = u"megatron-lm"_s;
    else
        m_log.format = u"unknown"_s;
    for (auto it = m_refusals.cbegin(); it != m_refusals.cend(); ++it) {
        m_log.refused << u"%1: %2 time(s), first at line %3 (%4)"_s.arg(it.key())
                             .arg(it->count)
                             .arg(it->firstLine)
                             .arg(it->example);
    }
    if (m_conflicts > 3)
        m_log.conflicts << u"and %1 more"_s.arg(m_conflicts - 3);
    return m_log;
}

void LogParser::line(QByteArrayView raw)
{
    if (raw.endsWith('\r'))
        raw.chop(1);
    // The lines a job run writes about itself (session/job_run.cpp: the command, when it started, Slurm's
    // word, how it ended) are no output of the job: a flag value that quotes a memory line is not one.
    if (raw.startsWith("# command: ") && m_lineNo <= 1 && m_log.jobCommand.isEmpty())
        m_log.jobCommand = QString::fromUtf8(raw.sliced(11));
    for (const char* own : { "# command: ", "# started: ", "# slurm: ", "# exit: " })
        if (raw.startsWith(own))
            return;
    if (m_inArguments) {
        argumentsLine(QString::fromUtf8(raw));
        return;
    }
    if (m_inSummary) {
        summaryLine(QString::fromUtf8(raw));
        return;
    }
    if (raw.contains("------------------------ arguments ------------------------")) {
        m_inArguments = true;
        m_argumentsStart = m_lineNo;
        m_arguments.clear();
        return;
    }
    if (raw.contains("Configuration Summary (Non-Default Values vs Megatron Core)")) {
        m_inSummary = true;
        m_summaryStart = m_lineNo;
        m_summaryRules = 0;
        m_summarySection.clear();
        m_summary.clear();
        return;
    }
    if (raw.contains("] (after ") && raw.contains("[Rank ")) {
        const QString line = QString::fromUtf8(raw);
        if (line.contains(u"memory (MB)"_s))
            m_sawMlmMemory = true;
        if (line.contains(u"memory (GB)"_s))
            m_sawBridgeMemory = true;
        memoryLine(line);
        return;
    }
    if (raw.contains("iteration") && iterationLine(QString::fromUtf8(raw)))
        return;
    if (raw.contains("Theoretical memory footprints")) {
        static const QRegularExpression theo = compiled(
            u"Theoretical memory footprints: weight and optimizer=([0-9.]+) MB(?:, activation=([0-9.]+) "
            "MB, total=([0-9.]+) MB)?"_s);
        const auto m = theo.match(QString::fromUtf8(raw));
        if (m.hasMatch()) {
            const auto weights = finiteOf(m.capturedView(1));
            if (weights)
                m_log.theoreticalWeightOptimizerMb = weights;
            else
                refuse(u"theoretical memory refused (not a finite number)"_s, m.captured(1));
            if (!m.capturedView(2).isEmpty()) {
                m_log.theoreticalActivationMb = finiteOf(m.capturedView(2));
                m_log.theoreticalTotalMb = finiteOf(m.capturedView(3));
            }
            return;
        }
    }
    if (raw.contains("Traceback (most recent call last)")) {
        m_traceback.clear();
        m_traceback << QString::fromUtf8(raw);
        return;
    }
    const bool traced = !m_traceback.isEmpty() && !m_log.oom;
    if (traced && m_traceback.size() < 4096)
        m_traceback << QString::fromUtf8(raw);
    if (mayBeOom(raw)) {
        static const QRegularExpression oom = compiled(kOomAlternatives);
        const QString line = QString::fromUtf8(raw);
        if (oom.match(line).hasMatch()) {
            oomLine(line);
            return;
        }
    }
    if (!traced && !raw.trimmed().isEmpty())
        ++m_log.ignoredLines;
}

void LogParser::oomLine(const QString& line)
{
    if (m_log.oom)
        return;
    m_log.oom = true;
    // The step that was running: one past the last one the log reported as done.
    int done = m_lastIterationSeen;
    for (const auto& m : std::as_const(m_log.memory))
        done = std::max(done, m.afterIteration);
    m_log.oomIteration = done < INT_MAX ? done + 1 : done;
    // The whole line, without the launcher's prefix ("[rank0]: ", "[default0]:", "0: ").
    static const QRegularExpression prefix
        = compiled(u"^\\s*(?:\\[(?:[Rr]ank|default) ?\\d+\\]:\\s*|\\d+:\\s+)"_s);
    QString message = line;
    const auto p = prefix.match(message);
    if (p.hasMatch())
        message.remove(0, p.capturedLength());
    m_log.oomMessage = message.trimmed().left(400);
    // The innermost frame that names a stage.
    for (qsizetype i = m_traceback.size() - 1; i >= 0 && m_log.oomStage.isEmpty(); --i) {
        const QString& frame = m_traceback[i];
        if (!frame.contains(u"File \""_s))
            continue;
        if (frame.contains(u"optimizer"_s) || frame.contains(u"in step"_s))
            m_log.oomStage = u"optimizer"_s;
        else if (frame.contains(u"backward"_s) || frame.contains(u"torch/autograd"_s))
            m_log.oomStage = u"backward"_s;
        else if (frame.contains(u"in forward"_s))
            m_log.oomStage = u"forward"_s;
    }
}

void LogParser::argumentsLine(const QString& line)
{
    if (line.contains(u"-------------------- end of arguments ---------------------"_s)) {
        endArguments();
        return;
    }
    // "  name ..... value" (48 - len(name) dots; none for long names)
    static const QRegularExpression arg = compiled(u"^(?:.*?\\s)?\\s([A-Za-z_][A-Za-z0-9_]*) \\.* ?(.*)$"_s);
    const auto m = arg.match(line);
    if (m.hasMatch())
        m_arguments.insert(m.captured(1), m.captured(2));
    else
        ++m_log.ignoredLines;
}

void LogParser::endArguments()
{
    m_inArguments = false;
    if (m_log.arguments.isEmpty()) {
        m_log.arguments = m_arguments;
        m_firstArgumentsStart = m_argumentsStart;
    } else if (m_log.arguments != m_arguments) {
        QString which;
        for (auto it = m_arguments.cbegin(); it != m_arguments.cend() && which.isEmpty(); ++it) {
            if (m_log.arguments.value(it.key()) != it.value())
                which = u"%1: %2 vs %3"_s.arg(it.key(), m_log.arguments.value(it.key()), it.value());
        }
        conflict(u"two different arguments blocks (lines %1 and %2; %3)"_s.arg(m_firstArgumentsStart)
                     .arg(m_argumentsStart)
                     .arg(which));
    } else {
        m_log.duplicateLines += m_lineNo - m_argumentsStart + 1;
    }
}

void LogParser::summaryLine(const QString& raw)
{
    // Launcher prefixes ("[rank0]: ", "0: ") come before every line of the block.
    static const QRegularExpression prefix = compiled(u"^(?:\\[[Rr]ank ?\\d+\\]: ?|\\d+: )"_s);
    QString line = raw;
    const auto p = prefix.match(line);
    if (p.hasMatch())
        line.remove(0, p.capturedLength());
    const QString t = line.trimmed();
    if (t.size() >= 20 && t.count(u'=') == t.size()) {
        // The block opens with a rule under its title and closes with one after its sections.
        if (++m_summaryRules >= 2 || !m_summarySection.isEmpty())
            endSummary();
        return;
    }
    if (t.isEmpty() || t.startsWith(u"---"_s) || t == u"Other Configuration Values:")
        return;
    static const QRegularExpression section
        = compiled(u"^\\[([A-Za-z_]+)\\](?: Non-default values \\(vs Mcore ([A-Za-z_]+)\\))?:$"_s);
    const auto s = section.match(t);
    if (s.hasMatch()) {
        m_summarySection = s.captured(1);
        if (!s.capturedView(2).isEmpty())
            m_summary.insert(m_summarySection + u".__mcore_class__"_s, s.captured(2));
        return;
    }
    static const QRegularExpression entry = compiled(u"^\\s+([A-Za-z_][A-Za-z0-9_]*): (.*)$"_s);
    const auto e = entry.match(line);
    if (e.hasMatch() && !m_summarySection.isEmpty()) {
        QString value = e.captured(2);
        const qsizetype d = value.lastIndexOf(u"  (Mcore default: "_s);
        if (d >= 0)
            value.truncate(d);
        m_summary.insert(m_summarySection + u'.' + e.captured(1), value.trimmed());
        return;
    }
    ++m_log.ignoredLines;
}

void LogParser::endSummary()
{
    m_inSummary = false;
    if (!m_log.bridgeSummary) {
        m_log.bridgeConfig = m_summary;
        m_log.bridgeSummary = m_summary.contains(u"model.__mcore_class__"_s);
        m_firstSummaryStart = m_summaryStart;
    } else if (m_log.bridgeConfig != m_summary) {
        conflict(u"two different configuration summaries (lines %1 and %2)"_s.arg(m_firstSummaryStart)
                     .arg(m_summaryStart));
    }
}

void LogParser::memoryLine(const QString& line)
{
    // Unsynchronised ranks can write two reports onto one line: take each "[Rank N]" piece on its own.
    static const QRegularExpression head
        = compiled(u"\\[Rank (\\d+)\\] \\(after (\\d+) iterations\\) memory \\((MB|GB)\\)"_s);
    static const QString f = u"([-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?|nan|inf|-inf)"_s;
    static const QRegularExpression mlm
        = compiled(u"^ \\| allocated: "_s + f + u" \\| max allocated: "_s + f + u" \\| reserved: "_s + f
            + u" \\| max reserved: "_s + f + u"(?: \\| total device memory used: "_s + f + u")?\\s*$"_s);
    static const QRegularExpression keyValue = compiled(u"\\|\\s*([a-z-]+):\\s*([^|\\s]+)"_s);
    QVector<QRegularExpressionMatch> heads;
    for (auto it = head.globalMatch(line); it.hasNext();)
        heads << it.next();
    if (heads.isEmpty()) {
        ++m_log.ignoredLines;
        return;
    }
    for (int h = 0; h < heads.size(); ++h) {
        const auto& m = heads[h];
        const qsizetype end = h + 1 < heads.size() ? heads[h + 1].capturedStart() : line.size();
        const QStringView body = QStringView(line).mid(m.capturedEnd(), end - m.capturedEnd());
        const auto rank = intOf(m.capturedView(1));
        const auto after = intOf(m.capturedView(2));
        if (!rank || !after) {
            refuse(u"memory line refused (rank or iteration too big for an int)"_s, m.captured(0));
            continue;
        }
        MemoryReport r;
        r.rank = *rank;
        r.afterIteration = *after;
        auto take = [&](std::optional<qint64>* slot, QStringView text, double unit, const char* name) {
            *slot = bytesOf(text, unit);
            if (!*slot)
                refuse(u"memory figure refused (not finite, negative or above 1 PiB)"_s,
                    QString::fromLatin1(name) + u": "_s + text.toString());
        };
        if (m.capturedView(3) == u"MB") {
            // All four values and the line's end (or the optional total) must be there: a cut number is not
            // one.
            const auto v = mlm.match(body);
            if (!v.hasMatch()) {
                // A memory report whose figures do not read (a byte of it broken, a number cut off): said,
                // never dropped in silence; the peak may be under it.
                refuse(u"memory line refused (not report_memory's four figures; the peak may be above what "
                       "was imported)"_s,
                    m.captured(0) + body.toString());
                continue;
            }
            constexpr double mib = 1024.0 * 1024.0; // report_memory divides by 1024*1024 ("MB")
            take(&r.allocated, v.capturedView(1), mib, "allocated");
            take(&r.maxAllocated, v.capturedView(2), mib, "max allocated");
            take(&r.reserved, v.capturedView(3), mib, "reserved");
            take(&r.maxReserved, v.capturedView(4), mib, "max reserved");
        } else {
            for (auto kv = keyValue.globalMatch(body); kv.hasNext();) {
                const auto k = kv.next();
                const QStringView key = k.capturedView(1);
                const QStringView value = k.capturedView(2);
                constexpr double gb = 1e9; // Bridge divides by 1e9 ("gigabytes")
                if (key == u"mem-allocated-gigabytes")
                    take(&r.allocated, value, gb, "mem-allocated-gigabytes");
                else if (key == u"mem-max-allocated-gigabytes")
                    take(&r.maxAllocated, value, gb, "mem-max-allocated-gigabytes");
                else if (key == u"mem-reserved-gigabytes")
                    take(&r.reserved, value, gb, "mem-reserved-gigabytes");
                else if (key == u"mem-max-reserved-gigabytes")
                    take(&r.maxReserved, value, gb, "mem-max-reserved-gigabytes");
                else if (key == u"mem-alloc-retires") { // sic: Bridge's key has this typo
                    const auto n = finiteOf(value);
                    if (n && *n >= 0 && *n <= INT_MAX && *n == std::floor(*n))
                        r.allocRetries = int(*n);
                    else
                        refuse(u"alloc retries refused (not an integer in 0..2147483647)"_s,
                            u"mem-alloc-retires: "_s + value.toString());
                }
            }
        }
        if (!r.maxAllocated && !r.allocated && !r.maxReserved && !r.reserved) {
            ++m_log.ignoredLines;
            continue;
        }
        // The allocator reserves at least what it has allocated: a max reserved below the max allocated is
        // no reading of it, and is not kept.
        if (r.maxReserved && r.maxAllocated && *r.maxReserved < *r.maxAllocated) {
            refuse(u"max reserved below max allocated refused (the allocator reserves what it allocates)"_s,
                m.captured(0));
            r.maxReserved.reset();
        }
        const qint64 key = (qint64(r.rank) << 32) | quint32(r.afterIteration);
        const size_t hash = qHash(body.trimmed());
        const auto seen = m_memory.constFind(key);
        if (seen != m_memory.cend()) {
            if (seen->hash == hash)
                ++m_log.duplicateLines;
            else
                conflict(
                    u"rank %1's memory after iteration %2 printed twice with other values (lines %3 and %4)"_s
                        .arg(r.rank)
                        .arg(r.afterIteration)
                        .arg(seen->line)
                        .arg(m_lineNo));
            continue;
        }
        m_memory.insert(key, { m_log.memory.size(), hash, m_lineNo });
        m_log.memory << r;
    }
}

bool LogParser::iterationLine(const QString& line)
{
    // " [ts] iteration      N/   TOTAL | key: value | ... | number of nan iterations:   0 |"
    const QList<QStringView> parts = QStringView(line).split(u'|');
    static const QRegularExpression iter = compiled(u"iteration\\s+(\\d+)/\\s*(\\d+)\\s*$"_s);
    const auto m = iter.match(parts.first());
    if (!m.hasMatch())
        return false;
    // The last fields of a complete line, each closed by its '|'; without them the line was cut (or is
    // not Megatron's).
    std::optional<QStringView> skippedText, nanText;
    IterationRow row;
    bool hasLoss = false;
    for (qsizetype i = 1; i + 1 < parts.size(); ++i) {
        const QStringView part = parts[i].trimmed();
        const qsizetype colon = part.lastIndexOf(u':');
        if (colon < 0)
            continue;
        const QStringView key = part.left(colon).trimmed();
        const QStringView value = part.mid(colon + 1).trimmed();
        if (key == u"elapsed time per iteration (ms)") {
            // A step time is positive and below a day: 0, a negative, 1e308 or 2^63 is a broken line.
            row.stepMs = finiteOf(value);
            if (row.stepMs && !(*row.stepMs > 0 && *row.stepMs < 86400e3)) {
                refuse(u"step time refused (not a number of milliseconds above 0 and below a day)"_s,
                    value.toString());
                row.stepMs.reset();
            }
        } else if (key == u"throughput per GPU (TFLOP/s/GPU)")
            row.tflops = finiteOf(value);
        else if (key == u"global batch size") {
            if (const auto gbs = intOf(value))
                m_log.globalBatchSize = gbs;
        } else if (key == u"lm loss") {
            hasLoss = true;
            row.loss = finiteOf(value); // Megatron prints a loss only when its average is >= 0
        } else if (key == u"number of skipped iterations")
            skippedText = value;
        else if (key == u"number of nan iterations")
            nanText = value;
    }
    if (!skippedText || !nanText) {
        ++m_log.ignoredLines;
        return true;
    }
    const auto iteration = intOf(m.capturedView(1));
    const auto total = intOf(m.capturedView(2));
    if (!iteration || !total || *iteration < 0) {
        refuse(u"iteration line refused (iteration or train_iters too big for an int)"_s, m.captured(0));
        return true;
    }
    // "iteration N/ 0", or past its own total: no such line in a run that counts its iterations.
    if (*total < 1 || *iteration > *total) {
        refuse(u"iteration line refused (iteration %1 of %2 train_iters)"_s.arg(*iteration).arg(*total),
            m.captured(0));
        return true;
    }
    row.iteration = *iteration;
    row.lossFinite = row.loss.has_value();
    row.skippedIterations = intOf(*skippedText);
    row.nanIterations = intOf(*nanText);
    if (!row.skippedIterations || *row.skippedIterations < 0) {
        row.skippedIterations.reset();
        refuse(u"skipped-iterations counter refused (not an integer in 0..2147483647)"_s,
            skippedText->toString());
    }
    if (!row.nanIterations || *row.nanIterations < 0) {
        row.nanIterations.reset();
        refuse(u"NaN-iterations counter refused (not an integer in 0..2147483647)"_s, nanText->toString());
    }
    // A repeated line (the same bytes) counts once; the same iteration with other values is a second run.
    const size_t hash = qHash(QStringView(line).mid(m.capturedStart(0)));
    const auto seen = m_iterations.constFind(row.iteration);
    if (seen != m_iterations.cend()) {
        if (seen->hash == hash)
            ++m_log.duplicateLines;
        else
            conflict(u"iteration %1 printed twice with other values (lines %2 and %3)"_s.arg(row.iteration)
                         .arg(seen->line)
                         .arg(m_lineNo));
        return true;
    }
    if (m_log.trainIters && *m_log.trainIters != *total)
        conflict(u"iteration lines count to %1 and to %2 (line %3)"_s.arg(*m_log.trainIters)
                     .arg(*total)
                     .arg(m_lineNo));
    if (!m_log.trainIters)
        m_log.trainIters = *total;
    if (!hasLoss || !row.loss)
        m_log.lossDroppedSomewhere = true;
    m_log.skippedIterations += row.skippedIterations.value_or(0);
    m_log.nanIterations += row.nanIterations.value_or(0);
    m_iterations.insert(row.iteration, { m_log.iterations.size(), hash, m_lineNo });
    m_log.iterations << row;
    m_lastIterationSeen = std::max(m_lastIterationSeen, row.iteration);
    static const QRegularExpression ts
        = compiled(u"\\[\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d(\\.\\d+)?\\] iteration"_s);
    const auto t = ts.match(parts.first());
    if (t.hasMatch())
        (t.capturedView(1).isEmpty() ? m_sawTimestampWithout : m_sawMicroseconds) = true;
    return true;
}

} // namespace

ParsedLog parseTrainingLog(const QByteArray& bytes, const ImportProgress& progress)
{
    return LogParser(progress).parse(bytes);
}

struct TrainingLogStream::Impl {
    ImportProgress noProgress;
    LogParser parser { noProgress };
    QByteArray partial;
    bool finished = false;
};

TrainingLogStream::TrainingLogStream()
    : m_impl(std::make_unique<Impl>())
{
}

TrainingLogStream::~TrainingLogStream() = default;

QVector<IterationRow> TrainingLogStream::feed(QByteArrayView bytes)
{
    QVector<IterationRow> out;
    if (m_impl->finished)
        return out;
    m_impl->partial.append(bytes);
    qsizetype pos = 0;
    const QByteArray& buf = m_impl->partial;
    while (true) {
        const qsizetype nl = buf.indexOf('\n', pos);
        if (nl < 0)
            break;
        const qsizetype before = m_impl->parser.current().iterations.size();
        m_impl->parser.feedLine(QByteArrayView(buf.constData() + pos, nl - pos));
        const QVector<IterationRow>& its = m_impl->parser.current().iterations;
        for (qsizetype i = before; i < its.size(); ++i)
            out << its[i];
        pos = nl + 1;
    }
    m_impl->partial.remove(0, pos);
    return out;
}

const QVector<IterationRow>& TrainingLogStream::iterations() const
{
    return m_impl->parser.current().iterations;
}

ParsedLog TrainingLogStream::finish()
{
    m_impl->finished = true;
    return m_impl->parser.finish(!m_impl->partial.isEmpty());
}

namespace {

// The recipe-relevant fields of Megatron-LM's printed arguments, as recipe JSON keys.
const QStringList& recipeKeys()
{
    static const QStringList keys = {
        u"num_layers"_s,
        u"hidden_size"_s,
        u"ffn_hidden_size"_s,
        u"num_attention_heads"_s,
        u"seq_length"_s,
        u"micro_batch_size"_s,
        u"global_batch_size"_s,
        u"bf16"_s,
        u"fp16"_s,
        u"fp8"_s,
        u"fp8_recipe"_s,
        u"fp4"_s,
        u"tensor_model_parallel_size"_s,
        u"pipeline_model_parallel_size"_s,
        u"virtual_pipeline_model_parallel_size"_s,
        u"context_parallel_size"_s,
        u"expert_model_parallel_size"_s,
        u"sequence_parallel"_s,
        u"moe_router_topk"_s,
        u"multi_latent_attention"_s,
        u"recompute_granularity"_s,
        u"recompute_modules"_s,
        u"recompute_method"_s,
        u"recompute_num_layers"_s,
        u"distribute_saved_activations"_s,
        u"train_iters"_s,
        u"moe_grouped_gemm"_s,
        u"transformer_impl"_s,
        u"cuda_graph_impl"_s,
        u"kv_lora_rank"_s,
        u"q_lora_rank"_s,
    };
    return keys;
}

QJsonObject recipeFromArguments(const QMap<QString, QString>& args)
{
    QJsonObject r;
    for (const QString& key : recipeKeys()) {
        if (args.contains(key))
            r.insert(key, pythonValue(args.value(key)));
    }
    // Megatron-LM calls it --num-experts; the config field is num_moe_experts.
    if (args.contains(u"num_experts"_s))
        r.insert(u"num_moe_experts"_s, pythonValue(args.value(u"num_experts"_s)));
    // num_query_groups is printed (default 1) but means something only with --group-query-attention.
    if (args.value(u"group_query_attention"_s) == u"True")
        r.insert(u"num_query_groups"_s, pythonValue(args.value(u"num_query_groups"_s)));
    if (args.contains(u"attention_backend"_s)) {
        QString backend = args.value(u"attention_backend"_s);
        backend = backend.mid(backend.lastIndexOf(u'.') + 1); // "AttnBackend.fused" → "fused"
        r.insert(u"attention_backend"_s, backend);
    }
    return r;
}

// The recipe as Megatron Bridge's configuration summary tells it: [model] lists only the TransformerConfig
// fields that differ from Megatron Core's defaults, so a field it does not list is at that default; [train]
// and [dataset] list every value that is set.
QJsonObject recipeFromBridgeSummary(const QMap<QString, QString>& cfg)
{
    QJsonObject r;
    const bool mla = cfg.value(u"model.__mcore_class__"_s) == u"MLATransformerConfig";
    // Megatron Core's defaults (TransformerConfig / ModelParallelConfig at d98e8a64) of the fields we read.
    const QJsonObject defaults {
        { u"recompute_granularity"_s, QJsonValue() },
        { u"recompute_method"_s, QJsonValue() },
        { u"recompute_num_layers"_s, QJsonValue() },
        { u"distribute_saved_activations"_s, false },
        { u"tensor_model_parallel_size"_s, 1 },
        { u"pipeline_model_parallel_size"_s, 1 },
        { u"virtual_pipeline_model_parallel_size"_s, QJsonValue() },
        { u"context_parallel_size"_s, 1 },
        { u"expert_model_parallel_size"_s, 1 },
        { u"sequence_parallel"_s, false },
        { u"bf16"_s, false },
        { u"fp16"_s, false },
        { u"fp8"_s, QJsonValue() },
        { u"fp4"_s, QJsonValue() },
        { u"num_moe_experts"_s, QJsonValue() },
        { u"multi_latent_attention"_s, mla },
        { u"moe_grouped_gemm"_s, false },
    };
    static const QStringList modelOnly = { u"num_moe_experts"_s, u"num_query_groups"_s };
    for (const QString& key : recipeKeys() + modelOnly + QStringList { u"attention_backend"_s }) {
        const QString name = u"model."_s + key;
        if (cfg.contains(name))
            r.insert(key, pythonValue(cfg.value(name)));
        else if (defaults.contains(key))
            r.insert(key, defaults.value(key));
    }
    for (const char* key : { "global_batch_size", "micro_batch_size", "train_iters" }) {
        const QString name = u"train."_s + QLatin1String(key);
        if (cfg.contains(name))
            r.insert(QLatin1String(key), pythonValue(cfg.value(name)));
    }
    const QString seq
        = cfg.contains(u"dataset.seq_length"_s) ? u"dataset.seq_length"_s : u"dataset.sequence_length"_s;
    if (cfg.contains(seq))
        r.insert(u"seq_length"_s, pythonValue(cfg.value(seq)));
    if (r.value(u"attention_backend"_s).isString()) {
        QString backend = r.value(u"attention_backend"_s).toString();
        r.insert(u"attention_backend"_s, backend.mid(backend.lastIndexOf(u'.') + 1));
    }
    return r;
}

// Every value read from the log is checked against what Megatron allows before it is stored: a value out of
// range is dropped from the recipe (the field becomes unknown) and noted.
void checkRecipe(QJsonObject* recipe, QStringList* notes)
{
    static const QStringList positive = { u"num_layers"_s, u"hidden_size"_s, u"ffn_hidden_size"_s,
        u"num_attention_heads"_s, u"num_query_groups"_s, u"num_moe_experts"_s, u"moe_router_topk"_s,
        u"seq_length"_s, u"micro_batch_size"_s, u"global_batch_size"_s, u"tensor_model_parallel_size"_s,
        u"pipeline_model_parallel_size"_s, u"virtual_pipeline_model_parallel_size"_s,
        u"context_parallel_size"_s, u"expert_model_parallel_size"_s, u"recompute_num_layers"_s,
        u"train_iters"_s, u"kv_lora_rank"_s, u"q_lora_rank"_s };
    auto show = [](const QJsonValue& v) {
        const QString s = QString::fromUtf8(QJsonDocument(QJsonArray { v }).toJson(QJsonDocument::Compact));
        return s.mid(1, s.size() - 2);
    };
    for (const QString& key : positive) {
        if (!recipe->contains(key) || recipe->value(key).isNull())
            continue;
        const QJsonValue v = recipe->value(key);
        const double d = v.toDouble(-1);
        if (!v.isDouble() || d < 1 || d > INT_MAX || d != std::floor(d)) {
            *notes << u"%1 = %2 refused (not an integer in 1..2147483647)"_s.arg(key, show(v));
            recipe->remove(key);
        }
    }
    const QJsonValue g = recipe->value(u"recompute_granularity"_s);
    if (recipe->contains(u"recompute_granularity"_s) && !g.isNull()
        && !(g.isString() && (g.toString() == u"full" || g.toString() == u"selective"))) {
        *notes
            << u"recompute_granularity = %1 refused (not one of full, selective, None): the recompute choice "
               "is stored as unknown"_s.arg(show(g));
        recipe->remove(u"recompute_granularity"_s);
    }
    const QJsonValue method = recipe->value(u"recompute_method"_s);
    if (recipe->contains(u"recompute_method"_s) && !method.isNull()
        && !(method.isString() && (method.toString() == u"uniform" || method.toString() == u"block"))) {
        *notes << u"recompute_method = %1 refused (not one of uniform, block, None)"_s.arg(show(method));
        recipe->remove(u"recompute_method"_s);
    }
    const QJsonValue modules = recipe->value(u"recompute_modules"_s);
    if (recipe->contains(u"recompute_modules"_s) && !modules.isNull()) {
        bool ok = modules.isArray();
        for (const auto& m : modules.toArray())
            ok = ok && m.isString() && !m.toString().isEmpty();
        if (!ok) {
            *notes << u"recompute_modules = %1 refused (not a list of module names)"_s.arg(show(modules));
            recipe->remove(u"recompute_modules"_s);
        }
    }
}

// The keys an override names: "model.recompute_modules=[...]" → "recompute_modules".
QString overrideKey(QString o)
{
    // The reader also takes an override quoted as a whole: 'model.recompute_modules=[moe]'
    if (o.size() >= 2 && (o.front() == u'\'' || o.front() == u'"') && o.back() == o.front())
        o = o.mid(1, o.size() - 2);
    while (o.startsWith(u'+'))
        o.remove(0, 1);
    o = o.left(o.indexOf(u'='));
    for (const QString& prefix : { u"model."_s, u"studio."_s, u"train."_s })
        if (o.startsWith(prefix))
            return o.mid(prefix.size());
    return o;
}

// The settings two imports must share to be compared: every printed argument (or configuration-summary
// entry) except the recompute choice and what is about the run rather than the workload: paths, logging,
// checkpoints, seeds, evaluation, exit conditions, and the process's own rank.
bool bookkeeping(const QString& key)
{
    static const QStringList exact = { u"rank"_s, u"local_rank"_s, u"world_size"_s, u"train_iters"_s,
        u"train_samples"_s, u"seed"_s, u"data_parallel_random_init"_s, u"iteration"_s,
        u"consumed_train_samples"_s, u"consumed_valid_samples"_s, u"wandb_project"_s, u"wandb_exp_name"_s,
        u"distributed_timeout_minutes"_s, u"distribute_saved_activations"_s, u"moe_layer_recompute"_s };
    static const QStringList parts = { u"recompute"_s, u"path"_s, u"_dir"_s, u"file"_s, u"save"_s, u"load"_s,
        u"log"_s, u"wandb"_s, u"tensorboard"_s, u"exit_"_s, u"eval_"_s, u"timing"_s, u"checkpoint"_s,
        u"ckpt"_s, u"profile"_s, u"timestamp"_s, u"port"_s, u"split"_s, u"mock_data"_s, u"tokenizer"_s,
        u"vocab_file"_s, u"merge_file"_s };
    if (exact.contains(key))
        return true;
    for (const QString& p : parts) {
        if (key.contains(p))
            return true;
    }
    return false;
}

QString importSettings(const ParsedLog& log)
{
    QJsonObject o;
    if (!log.arguments.isEmpty()) {
        for (auto it = log.arguments.cbegin(); it != log.arguments.cend(); ++it) {
            if (!bookkeeping(it.key()))
                o.insert(it.key(), it.value().trimmed());
        }
    } else if (log.bridgeSummary) {
        static const QStringList sections
            = { u"model."_s, u"ddp."_s, u"optimizer."_s, u"mixed_precision."_s };
        for (auto it = log.bridgeConfig.cbegin(); it != log.bridgeConfig.cend(); ++it) {
            const QString key = it.key();
            const QString field = key.mid(key.indexOf(u'.') + 1);
            const bool kept = std::any_of(sections.begin(), sections.end(),
                                  [&](const QString& s) { return key.startsWith(s); })
                || key == u"train.global_batch_size" || key == u"train.micro_batch_size"
                || key == u"dataset.seq_length";
            if (kept && !bookkeeping(field) && !field.startsWith(u"__"_s))
                o.insert(key, it.value());
        }
    }
    return o.isEmpty() ? QString() : QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

// A 64-bit sum that a run's int column can hold, or empty (noted).
std::optional<int> intSum(qint64 sum, const char* what, QStringList* notes)
{
    if (sum >= 0 && sum <= INT_MAX)
        return int(sum);
    *notes << u"the sum of the %1 counters (%2) does not fit an int: not stored"_s.arg(QLatin1String(what))
                  .arg(sum);
    return std::nullopt;
}

} // namespace

namespace {

// The job's words from its log's "# command: " line; empty when there is none or it does not read.
std::vector<std::string> jobWords(const ParsedLog& log)
{
    if (log.jobCommand.isEmpty())
        return {};
    return splitShellWords(log.jobCommand.toStdString()).value_or(std::vector<std::string> {});
}

// Megatron-LM's --fake-process-group (one rank of a layout on one GPU, collectives skipped), by the printed
// arguments or the job's command line.
bool fakeProcessGroup(const ParsedLog& log)
{
    if (log.arguments.value(u"fake_process_group"_s) == u"True")
        return true;
    const std::vector<std::string> words = jobWords(log);
    return std::find(words.begin(), words.end(), "--fake-process-group") != words.end();
}

// A Megatron-LM job log that prints no arguments block (a rank other than 0 prints none: print_rank_0) and
// no Bridge summary: the recipe as the job's own command line says it (its first line, written by the job
// run), read by core's Megatron-LM reader, its world from the launcher or WORLD_SIZE. Empty when there is no
// such line or it does not read as a Megatron-LM command (said in `notes`).
QJsonObject recipeFromJobCommand(const ParsedLog& log, std::optional<int>* world, QStringList* notes)
{
    const std::vector<std::string> words = jobWords(log);
    if (words.empty() || std::none_of(words.begin(), words.end(), [](const std::string& w) {
            return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
        }))
        return {};
    try {
        std::vector<std::string> in { "--mlm-args" };
        in.insert(in.end(), words.begin(), words.end());
        const Recipe r = readRecipeInput(in, nullptr).recipe;
        const QJsonObject full = QJsonDocument::fromJson(
            QByteArray::fromStdString(
                recipeToJson(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)))
                                     .object();
        QJsonObject out;
        for (const QString& key : recipeKeys())
            if (full.contains(key))
                out.insert(key, full.value(key));
        for (const char* key : { "num_moe_experts", "num_query_groups", "attention_backend" })
            if (full.contains(QLatin1String(key)))
                out.insert(QLatin1String(key), full.value(QLatin1String(key)));
        // Megatron-LM's no-recompute is a granularity of None (its flags cannot say []).
        if (!r.recompute_granularity)
            out.insert(u"recompute_granularity"_s, QJsonValue());
        *world = parallelSizes(r).world;
        *notes
            << u"the log prints no arguments (a rank other than 0): shape and recompute settings read from "
               "the job's command line"_s;
        return out;
    } catch (const std::exception& e) {
        *notes << u"the job's command line does not read as a Megatron-LM command ("_s
                + QString::fromUtf8(e.what()) + u"): its settings are not known"_s;
        return {};
    }
}

// Step 2: the recipe as far as the log and the overrides tell it: the printed arguments (Megatron-LM),
// else Bridge's configuration summary, else the job's command line, values out of Megatron's range dropped
// (noted), the overrides on top. Empty, with `error` set, when the overrides do not read.
std::optional<QJsonObject> recipeOfLog(const ParsedLog& log, const ImportOptions& options, QStringList* notes,
    QString* error, std::optional<int>* commandWorld)
{
    QJsonObject recipe = recipeFromArguments(log.arguments);
    if (log.arguments.isEmpty() && !log.bridgeSummary)
        recipe = recipeFromJobCommand(log, commandWorld, notes);
    if (log.bridgeSummary) {
        const QJsonObject summary = recipeFromBridgeSummary(log.bridgeConfig);
        for (auto it = summary.begin(); it != summary.end(); ++it) {
            if (!recipe.contains(it.key()))
                recipe.insert(it.key(), it.value());
        }
    }
    checkRecipe(&recipe, notes);
    // Without a granularity Megatron recomputes nothing, whatever recompute_modules says (Bridge prints
    // TransformerConfig's ['core_attn'], set in __post_init__).
    if (recipe.contains(u"recompute_granularity"_s) && recipe.value(u"recompute_granularity"_s).isNull())
        recipe.insert(u"recompute_modules"_s, QJsonValue());
    if (!options.overrides.isEmpty()) {
        std::vector<std::string> overrides;
        for (const QString& o : options.overrides)
            overrides.push_back(o.toStdString());
        try {
            const Recipe parsed = recipeFromBridgeOverrides(overrides);
            const QJsonObject full
                = QJsonDocument::fromJson(QByteArray::fromStdString(recipeToJson(parsed).dump())).object();
            for (const QString& o : options.overrides) {
                const QString key = overrideKey(o);
                if (key == u"comm_overlap.overlap_moe_expert_parallel_comm")
                    recipe.insert(key,
                        full.value(u"comm_overlap"_s)
                            .toObject()
                            .value(u"overlap_moe_expert_parallel_comm"_s));
                else if (full.contains(key))
                    recipe.insert(key, full.value(key));
            }
        } catch (const std::exception& e) {
            *error = u"--overrides: "_s + QString::fromUtf8(e.what());
            return std::nullopt;
        }
    }
    if (log.globalBatchSize && !recipe.contains(u"global_batch_size"_s) && *log.globalBatchSize > 0)
        recipe.insert(u"global_batch_size"_s, *log.globalBatchSize);
    if (log.trainIters && !recipe.contains(u"train_iters"_s) && *log.trainIters > 0)
        recipe.insert(u"train_iters"_s, *log.trainIters);
    return recipe;
}

// Step 3: the run record of what the log and its recipe say (a partial recipe: what is not known stays
// unknown, not a default).
RunRecord runOfLog(const ParsedLog& log, const QJsonObject& recipe, const QString& path,
    const QString& digest, const ImportOptions& options, QStringList* notes)
{
    RunRecord run;
    run.source = source::Import;
    run.provenance = QFileInfo(path).absoluteFilePath();
    run.recipeName = options.recipeName.isEmpty() ? QFileInfo(path).completeBaseName() : options.recipeName;
    fillFromRecipeJson(&run, recipe);
    run.recipeJson.clear(); // a partial recipe: the fields above are what is known, not a full recipe
    if (!recipe.contains(u"bf16"_s) && !recipe.contains(u"fp16"_s))
        run.precision.clear(); // unknown, not fp32
    if (!recipe.contains(u"ffn_hidden_size"_s))
        run.ffnHiddenSize.reset();
    if (!recipe.contains(u"num_query_groups"_s) && !log.arguments.contains(u"group_query_attention"_s)
        && !log.bridgeSummary)
        run.numQueryGroups.reset();
    run.overrides = options.overrides;
    // Neither printed arguments, summary nor overrides: the recompute choice is not known, which is not
    // "none".
    if (!recipe.contains(u"recompute_granularity"_s)) {
        run.recomputeGranularity = u"unknown"_s;
        run.recomputeModules.reset();
    }
    if (log.arguments.contains(u"world_size"_s)) {
        const QString text = log.arguments.value(u"world_size"_s);
        const auto ws = intOf(text);
        if (ws && *ws >= 1) {
            run.worldSize = ws;
            run.gpuCount = ws;
        } else {
            *notes << u"world_size = %1 refused (not an integer in 1..2147483647)"_s.arg(text.trimmed());
        }
    }
    run.importPath = run.provenance;
    run.importSha256 = digest;
    run.importFormat = log.format;
    run.importSettings = importSettings(log);
    run.theoreticalWeightOptimizerMb = log.theoreticalWeightOptimizerMb;
    run.theoreticalActivationMb = log.theoreticalActivationMb;
    run.theoreticalTotalMb = log.theoreticalTotalMb;
    return run;
}

// Step 4: every rank's peaks, and the run's: the largest max-allocated any rank reported (the guide's
// contract reads it after iteration 2).
QMap<int, RankPeak> peaksOfLog(const ParsedLog& log, RunRecord* run)
{
    QMap<int, RankPeak> ranks;
    for (const MemoryReport& m : log.memory) {
        RankPeak& p = ranks[m.rank];
        p.rank = m.rank;
        if (m.maxAllocated && (!p.peakAllocated || *m.maxAllocated > *p.peakAllocated)) {
            p.peakAllocated = m.maxAllocated;
            p.peakIteration = m.afterIteration;
        }
        if (m.maxReserved && (!p.peakReserved || *m.maxReserved > *p.peakReserved))
            p.peakReserved = m.maxReserved;
        if (m.maxAllocated && (!run->peakAllocated || *m.maxAllocated > *run->peakAllocated)) {
            run->peakAllocated = m.maxAllocated;
            run->peakRank = m.rank;
            run->peakNote = u"after iteration %1"_s.arg(m.afterIteration);
        }
        if (m.maxReserved && (!run->peakReserved || *m.maxReserved > *run->peakReserved))
            run->peakReserved = m.maxReserved;
    }
    return ranks;
}

// Step 5: the steady window and its mean step time and TFLOP/s: the second half of the run (the guide's
// 11-20 of 20, 7-12 of 12) unless told; returns its first iteration. `last`: the last iteration logged.
int steadyWindowOfLog(
    const ParsedLog& log, const ImportOptions& options, RunRecord* run, int* last, QStringList* notes)
{
    const int planned
        = log.trainIters.value_or(log.iterations.isEmpty() ? 0 : log.iterations.last().iteration);
    const int steadyFrom = options.steadyFrom > 0 ? options.steadyFrom : planned / 2 + 1;
    double stepSum = 0, tflopsSum = 0;
    int stepN = 0, tflopsN = 0;
    *last = 0;
    for (const IterationRow& it : log.iterations) {
        *last = std::max(*last, it.iteration);
        if (it.iteration < steadyFrom)
            continue;
        if (it.stepMs) {
            stepSum += *it.stepMs;
            ++stepN;
        }
        if (it.tflops) {
            tflopsSum += *it.tflops;
            ++tflopsN;
        }
    }
    if (stepN > 0) {
        run->steadyStepMs = stepSum / stepN;
        run->steadyWindow = u"iterations %1-%2 (%3 logged)"_s.arg(steadyFrom).arg(*last).arg(stepN);
    }
    if (tflopsN > 0)
        run->modelTflops = tflopsSum / tflopsN;
    if (!log.iterations.isEmpty()) {
        run->lossFinite = !log.lossDroppedSomewhere && log.nanIterations == 0;
        run->skippedIterations = intSum(log.skippedIterations, "skipped-iterations", notes);
        run->nanIterations = intSum(log.nanIterations, "NaN-iterations", notes);
    }
    return steadyFrom;
}

// Step 6: the outcome (OOM, a loss not finite, cut short, pass) and the notes on what the log lacked.
void outcomeOfLog(const ParsedLog& log, int last, RunRecord* run, QStringList* notes, bool fakeRankMeasures)
{
    if (log.oom) {
        run->outcome = outcome::Oom;
        run->failureIteration = log.oomIteration;
        run->failureStage = log.oomStage;
        run->message = log.oomMessage;
    } else if ((log.lossDroppedSomewhere || log.nanIterations > 0) && fakeRankMeasures
        && !log.iterations.isEmpty() && !(log.trainIters && last < *log.trainIters)) {
        // Under --fake-process-group every collective is skipped: the tensors a rank receives (pipeline
        // stages, tensor-parallel reductions) are whatever memory held, so its loss means nothing, while
        // its shapes, memory and compute are the rank's own.
        run->outcome = outcome::Pass;
        *notes << u"one rank of a layout under --fake-process-group: its loss is not finite because every "
                  "collective was skipped (what the rank receives is not computed), which is not a failure "
                  "of the run; its memory and step time are the rank's, without NCCL's buffers and "
                  "communication"_s;
    } else if (log.lossDroppedSomewhere || log.nanIterations > 0) {
        run->outcome = outcome::Nonfinite;
        for (const IterationRow& it : log.iterations) {
            if (!it.lossFinite.value_or(true) || it.nanIterations.value_or(0) > 0) {
                run->failureIteration = it.iteration;
                break;
            }
        }
        run->message
            = u"a loss was not finite (dropped from the iteration line) or NaN iterations were counted"_s;
    } else if (log.iterations.isEmpty() || (log.trainIters && last < *log.trainIters)) {
        run->outcome = outcome::Aborted;
        run->message = log.iterations.isEmpty()
            ? u"the log has no iteration line"_s
            : u"the log ends at iteration %1 of %2"_s.arg(last).arg(*log.trainIters);
    } else {
        run->outcome = outcome::Pass;
    }
    if (run->recomputeGranularity == u"unknown")
        *notes << u"the log does not print the recompute settings: give them with --overrides"_s;
    if (log.bridgeSummary)
        *notes << u"shape and recompute settings read from Bridge's configuration summary"_s;
    if (log.truncatedLastLine)
        *notes << u"the last line was cut off and not used"_s;
    if (log.duplicateLines > 0)
        *notes << u"%1 duplicated line(s) counted once"_s.arg(log.duplicateLines);
    if (log.ignoredLines > 0)
        *notes << u"%1 line(s) not recognised"_s.arg(log.ignoredLines);
    if (log.oom && log.arguments.value(u"log_interval"_s, u"1"_s) != u"1")
        *notes << u"log_interval is %1: the OOM iteration is a lower bound"_s.arg(
            log.arguments.value(u"log_interval"_s));
}

} // namespace

ImportResult importTrainingLog(Store* store, const QString& path, const ImportOptions& options)
{
    ImportResult result;
    // Step 1: the bytes, once: a log imported before is that run; a log that is not one, or holds two runs,
    // is refused.
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        result.error = path + u": "_s + file.errorString();
        return result;
    }
    const QByteArray bytes = file.readAll();
    const QString digest
        = QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
    if (const auto earlier = store->runByImportDigest(digest)) {
        result.runId = *earlier;
        result.duplicate = true;
        return result;
    }
    if (options.control && !store->run(*options.control)) {
        result.error
            = u"%1: --control: run %2 is not in %3"_s.arg(path).arg(*options.control).arg(store->path());
        return result;
    }
    const ParsedLog log = parseTrainingLog(bytes, options.progress);
    if (log.cancelled) {
        result.cancelled = true;
        result.error = path + u": import cancelled"_s;
        return result;
    }
    if (log.iterations.isEmpty() && log.memory.isEmpty() && !log.oom && log.arguments.isEmpty()
        && !log.bridgeSummary) {
        result.error = path
            + u": not a Megatron-LM or Megatron Bridge training log (no iteration, memory, "
              "arguments or OOM lines)"_s;
        return result;
    }
    if (!log.conflicts.isEmpty()) {
        // Never one run with another run's values (the wrong peak, a mixed step time).
        result.error = path + u": holds two runs (two logs interleaved, or a restarted job appended): "_s
            + log.conflicts.join(u"; "_s)
            + u". Not imported: split it into one file per run and import each."_s;
        return result;
    }

    QStringList notes = log.refused;
    QString error;
    std::optional<int> commandWorld;
    const std::optional<QJsonObject> recipe = recipeOfLog(log, options, &notes, &error, &commandWorld);
    if (!recipe) {
        result.error = path + u": "_s + error;
        return result;
    }
    RunRecord run = runOfLog(log, *recipe, path, digest, options, &notes);
    if (commandWorld && !run.worldSize) {
        run.worldSize = commandWorld;
        run.gpuCount = commandWorld; // the job's GPUs (one rank of them ran here)
    }
    const QMap<int, RankPeak> ranks = peaksOfLog(log, &run);
    int last = 0;
    const int steadyFrom = steadyWindowOfLog(log, options, &run, &last, &notes);
    // Under --fake-process-group a rank measures its own memory and time, except where MoE tokens cross
    // ranks (expert-TP x EP > 1, expert-TP being TP by default): the skipped all-to-all leaves the counts of
    // tokens each expert receives unset, so the dispatcher's buffers are not the job's.
    const auto sizeOf
        = [&](const char* key) { return std::max(1, recipe->value(QLatin1String(key)).toInt(1)); };
    const bool moeAcrossRanks = recipe->value(u"num_moe_experts"_s).toInt(0) > 0
        && sizeOf("expert_model_parallel_size") * sizeOf("tensor_model_parallel_size") > 1;
    const bool fakeRank = fakeProcessGroup(log);
    if (fakeRank && moeAcrossRanks)
        notes << u"one rank of an MoE layout under --fake-process-group: the skipped all-to-all leaves the "
                 "counts of tokens each expert receives unset, so its MoE buffers, memory and time are not "
                 "the job's"_s;
    outcomeOfLog(log, last, &run, &notes, fakeRank && !moeAcrossRanks);
    run.notes = notes.join(u"; "_s);
    result.notes = notes;

    // Step 7: the run, its iterations, memory reports and rank peaks in one transaction, then its control.
    if (!store->beginWrite()) {
        result.error = store->lastError();
        return result;
    }
    auto fail = [&]() {
        result.error = path + u": "_s + store->lastError();
        store->rollbackWrite();
        // Another process imported the same bytes at the same moment (unique digest).
        if (const auto earlier = store->runByImportDigest(digest)) {
            result.error.clear();
            result.runId = *earlier;
            result.duplicate = true;
        }
        return result;
    };
    const qint64 id = store->insertRun(run);
    if (id == 0)
        return fail();
    for (IterationRow it : log.iterations) {
        it.runId = id;
        it.phase = it.iteration >= steadyFrom ? u"steady"_s : u"warmup"_s;
        if (!store->insertIteration(it))
            return fail();
    }
    for (MemoryReport m : log.memory) {
        m.runId = id;
        if (!store->insertMemoryReport(m))
            return fail();
    }
    for (RankPeak p : ranks) {
        p.runId = id;
        if (!store->insertRankPeak(p))
            return fail();
    }
    if (options.control) {
        QString error;
        if (!store->linkControl(id, options.control, &error)) {
            store->rollbackWrite();
            result.error = path + u": --control: "_s + error;
            return result;
        }
        result.controlRunId = options.control;
    } else if (options.autoLink) {
        const Store::AutoLink link = store->autoLinkControl(id);
        result.controlRunId = link.control;
        result.runsLinkedToIt = int(link.linked.size());
    }
    if (!store->commitWrite())
        return fail();
    result.runId = id;
    return result;
}

} // namespace rs::storage
