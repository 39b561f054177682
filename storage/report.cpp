// SPDX-License-Identifier: Apache-2.0
#include "storage/report.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QTemporaryFile>

#include "core/step_stats.h"
#include "core/units.h"
#include "storage/significance.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

std::optional<ReportFormat> reportFormatFromName(const QString& name)
{
    if (name == u"md" || name == u"markdown")
        return ReportFormat::Markdown;
    if (name == u"csv")
        return ReportFormat::Csv;
    if (name == u"json")
        return ReportFormat::Json;
    if (name == u"html")
        return ReportFormat::Html;
    return std::nullopt;
}

QString formatGigabytes(std::optional<qint64> bytes)
{
    return QString::fromStdString(rs::formatGb(bytes));
}

QString formatPercent(std::optional<double> pct)
{
    if (!pct)
        return {};
    // Rounded first, so -0.004 prints as -0.00% and keeps its sign as the guide does.
    return (*pct >= 0 ? u"+"_s : u"-"_s) + QString::number(std::abs(*pct), 'f', 2) + u"%"_s;
}

QString formatStepDelta(const ComparisonRow& row)
{
    if (row.isControl)
        return u"control"_s;
    // As core's deltaCell writes it (the runs table's cell).
    QString s = formatPercent(row.timeVsControlPct);
    if (row.timeVsControlPct && row.timeLowPct && row.timeHighPct)
        s += QString::asprintf(" [%+.2f, %+.2f]", *row.timeLowPct, *row.timeHighPct);
    if (row.timeVerdict == u"not significant"_s)
        s += u" not significant"_s;
    return s;
}

QString shortestDouble(double v)
{
    if (!std::isfinite(v))
        return {};
    char buf[400];
    // Shortest text that reads back as the same double (321.4, not 321.39999999999998); fixed notation in
    // the range where it is short, else the shortest of fixed and scientific.
    const double a = std::abs(v);
    const auto format = (a == 0 || (a >= 1e-5 && a < 1e16)) ? std::chars_format::fixed : std::chars_format {};
    const auto r = format == std::chars_format::fixed ? std::to_chars(buf, buf + sizeof buf, v, format)
                                                      : std::to_chars(buf, buf + sizeof buf, v);
    return QString::fromLatin1(buf, r.ptr - buf);
}

namespace {
QString num(std::optional<double> v, int decimals)
{
    return v ? QString::number(*v, 'f', decimals) : QString();
}

QString outcomeCell(const RunRecord& r)
{
    QString s = r.outcome;
    if (!r.failureStage.isEmpty())
        s += u" in "_s + r.failureStage;
    if (r.failureIteration)
        s += u" (iteration %1)"_s.arg(*r.failureIteration);
    return s;
}

QString allocatedCell(const ComparisonRow& row)
{
    if (row.isControl)
        return u"control"_s;
    return formatPercent(row.allocatedVsControlPct);
}
QString timeCell(const ComparisonRow& row)
{
    return formatStepDelta(row);
}
QString flagCell(const ComparisonRow& row)
{
    if (row.isControl)
        return u"control"_s;
    if (!row.match.matched)
        return u"NOT MATCHED: "_s + row.match.reasons.join(u"; "_s);
    return row.match.notes.isEmpty() ? u"yes"_s : u"yes ("_s + row.match.notes.join(u"; "_s) + u")"_s;
}

QString controlTitleText(const ReportTable& t);

QString controlTitle(const ReportTable& t)
{
    return terminalText(controlTitleText(t));
}

QString controlTitleText(const ReportTable& t)
{
    if (!t.control)
        return u"Runs with no matched [] control stored (no deltas)"_s;
    const RunRecord& c = *t.control;
    QStringList parts { c.controlKindLabel() };
    if (!c.model.isEmpty())
        parts << c.model;
    if (!c.recipeName.isEmpty() && c.recipeName != c.model)
        parts << c.recipeName;
    if (c.seqLength)
        parts << u"seq %1"_s.arg(*c.seqLength);
    if (c.microBatchSize && c.globalBatchSize)
        parts << u"MBS=%1 GBS=%2"_s.arg(*c.microBatchSize).arg(*c.globalBatchSize);
    if (!c.precision.isEmpty())
        parts << c.precision;
    if (c.tensorModelParallelSize)
        parts << u"TP=%1 PP=%2 CP=%3 EP=%4"_s.arg(*c.tensorModelParallelSize)
                     .arg(c.pipelineModelParallelSize.value_or(1))
                     .arg(c.contextParallelSize.value_or(1))
                     .arg(c.expertModelParallelSize.value_or(1));
    if (!c.device.isEmpty())
        parts << c.device;
    return u"Control: run %1 (%2)"_s.arg(c.id).arg(parts.join(u", "_s));
}

QString csvCell(QString s)
{
    if (s.contains(u',') || s.contains(u'"') || s.contains(u'\n') || s.contains(u'\r')) {
        s.replace(u"\""_s, u"\"\""_s);
        return u"\""_s + s + u"\""_s;
    }
    return s;
}

QString htmlEscape(const QString& s)
{
    return s.toHtmlEscaped();
}

// "vs []" against the explicit [] (the guide's header), "vs None" against Megatron's no-recompute,
// "vs control" against a control the user chose that recomputes something.
QStringList header(const ReportTable& t)
{
    const QString kind = !t.control || t.control->isExplicitControl() ? u"[]"_s
        : t.control->controlKind() == u"megatron-none"                ? u"None"_s
                                                                      : u"control"_s;
    return { u"Selective modules"_s, u"Peak allocated (GB)"_s, u"Step time (ms)"_s, u"TFLOP/s/GPU"_s,
        u"Allocated vs "_s + kind, u"Time vs "_s + kind + u" (HL)"_s, u"Outcome"_s, u"Run"_s, u"Matched?"_s };
}

QStringList cellsText(const ComparisonRow& row);

QStringList cells(const ComparisonRow& row)
{
    QStringList c = cellsText(row);
    for (QString& s : c)
        s = terminalText(s);
    return c;
}

QStringList cellsText(const ComparisonRow& row)
{
    const RunRecord& r = row.run;
    return { r.moduleSetLabel(), formatGigabytes(r.peakAllocated), num(r.steadyStepMs, 2),
        num(r.modelTflops, 2), allocatedCell(row), timeCell(row), outcomeCell(r), QString::number(r.id),
        flagCell(row) };
}

QJsonValue jsonOpt(std::optional<double> v)
{
    return v ? QJsonValue(*v) : QJsonValue();
}
QJsonValue jsonOpt(std::optional<qint64> v)
{
    return v ? QJsonValue(*v) : QJsonValue();
}
QJsonValue jsonOpt(std::optional<int> v)
{
    return v ? QJsonValue(*v) : QJsonValue();
}
QString csvNum(std::optional<double> v)
{
    return v ? shortestDouble(*v) : QString();
}
} // namespace

namespace {
QVector<ReportTable> buildTables(
    const Store& store, std::optional<qint64> control, const QVector<qint64>& runIds)
{
    QVector<ReportTable> tables;
    if (control) {
        QVector<qint64> ids = runIds;
        if (ids.isEmpty()) {
            QSqlQuery q(store.database());
            q.prepare(u"SELECT id FROM runs WHERE control_run_id=? ORDER BY id"_s);
            q.addBindValue(*control);
            if (q.exec()) {
                while (q.next())
                    ids << q.value(0).toLongLong();
            }
        }
        ReportTable t;
        t.rows = store.compare(*control, ids);
        if (!t.rows.isEmpty())
            t.control = t.rows.first().run;
        if (t.control)
            tables << t;
        return tables;
    }
    RunFilter f;
    f.ids = runIds;
    QVector<RunRecord> runs = store.listRuns(f);
    std::reverse(runs.begin(), runs.end()); // oldest first, as a study is read
    QVector<qint64> order;
    QHash<qint64, QVector<qint64>> members;
    QVector<qint64> orphans;
    // A run is a table's control when it recomputes nothing (the explicit [] or Megatron's None: the
    // control of its shape, even before anything is compared with it) or when another selected run names
    // it as its control (a control the user chose).
    QSet<qint64> named;
    for (const RunRecord& r : runs) {
        if (r.controlRunId)
            named.insert(*r.controlRunId);
    }
    for (const RunRecord& r : runs) {
        const std::optional<qint64> c = r.controlRunId    ? r.controlRunId
            : (r.isNoRecompute() || named.contains(r.id)) ? std::optional<qint64>(r.id)
                                                          : std::nullopt;
        if (!c) {
            orphans << r.id;
            continue;
        }
        if (!members.contains(*c))
            order << *c;
        if (*c != r.id)
            members[*c] << r.id;
        else
            members[*c];
    }
    // Compared in memory: every run was read once above (a control outside the selection is read here).
    QHash<qint64, const RunRecord*> byId;
    for (const RunRecord& r : runs)
        byId.insert(r.id, &r);
    for (qint64 c : order) {
        std::optional<RunRecord> outside;
        const RunRecord* control = byId.value(c, nullptr);
        if (!control) {
            outside = store.run(c);
            if (!outside)
                continue;
            control = &*outside;
        }
        QVector<RunRecord> compared;
        for (qint64 id : members.value(c))
            compared << *byId.value(id);
        ReportTable t;
        t.rows = Store::compareRecords(*control, compared);
        t.control = *control;
        tables << t;
    }
    if (!orphans.isEmpty()) {
        ReportTable t;
        RunFilter of;
        of.ids = orphans;
        auto rows = store.listRuns(of);
        std::reverse(rows.begin(), rows.end());
        for (const RunRecord& r : rows) {
            ComparisonRow row;
            row.run = r;
            row.match.reasons << u"no matched [] control stored"_s;
            t.rows << row;
        }
        tables << t;
    }
    return tables;
}

} // namespace

QVector<ReportTable> buildReport(
    const Store& store, std::optional<qint64> control, const QVector<qint64>& runIds)
{
    QVector<ReportTable> tables = buildTables(store, control, runIds);
    for (auto& t : tables)
        fillStepTimeDeltas(store, t.rows); // the one Δ step time (core's kStepDeltaName)
    QVector<qint64> ids;
    for (const auto& t : tables)
        for (const auto& row : t.rows)
            ids << row.run.id;
    if (ids.isEmpty())
        return tables;
    // One read for every run (a report over a large store reads each table once).
    const auto attribution = store.peakAttributions(runIds.isEmpty() && !control ? QVector<qint64>() : ids);
    for (auto& t : tables)
        for (const auto& row : t.rows)
            if (attribution.contains(row.run.id))
                t.attribution.insert(row.run.id, attribution.value(row.run.id));
    return tables;
}

QString formatPeakAttribution(const ReportTable& t)
{
    if (t.attribution.isEmpty())
        return {};
    // The categories any run of the table has, in the stream's order.
    QStringList categories;
    for (const auto& row : t.rows)
        if (const PeakAttributionRow* p = Store::peakPhaseOf(t.attribution.value(row.run.id)))
            for (const auto& [name, bytes] : p->categories)
                if (!categories.contains(name))
                    categories << name;
    QStringList head { u"Module set"_s, u"Peak phase"_s, u"Peak (GB)"_s, u"Attributed (GB)"_s };
    for (const QString& c : categories)
        head << c + u" (GB)"_s;
    head << u"Largest activation region"_s;
    QString out = u"#### What holds the peak (rank 0, GB)\n\n"_s;
    out += u"| "_s + head.join(u" | "_s) + u" |\n"_s;
    out += u"|"_s + QStringList(head.size(), u" --- "_s).join(u"|"_s) + u"|\n"_s;
    for (const auto& row : t.rows) {
        const PeakAttributionRow* p = Store::peakPhaseOf(t.attribution.value(row.run.id));
        if (!p)
            continue;
        const auto gb = [](std::optional<qint64> b) {
            return b ? QString::fromStdString(rs::formatGb(std::optional<std::int64_t>(*b))) : QString();
        };
        QStringList c { row.run.moduleSetLabel() + (row.isControl ? u" (control)"_s : QString()), p->phase,
            gb(p->peakAllocated), gb(p->attributed) };
        for (const QString& name : categories) {
            std::optional<qint64> bytes;
            for (const auto& [n, b] : p->categories)
                if (n == name)
                    bytes = b;
            c << gb(bytes);
        }
        // The region that holds most of the activations: the label whose recompute would free most.
        QHash<QString, qint64> byRegion;
        for (const ActivationShare& a : p->activations)
            byRegion[a.region] += a.bytes;
        QString top;
        qint64 topBytes = -1;
        for (auto it = byRegion.cbegin(); it != byRegion.cend(); ++it)
            if (it.value() > topBytes || (it.value() == topBytes && it.key() < top)) {
                top = it.key();
                topBytes = it.value();
            }
        c << (top.isEmpty() ? QString() : top + u" "_s + gb(topBytes));
        for (auto& cell : c)
            cell.replace(u"|"_s, u"\\|"_s);
        out += u"| "_s + c.join(u" | "_s) + u" |\n"_s;
    }
    return out + u"\n"_s;
}

int unmatchedRows(const QVector<ReportTable>& tables)
{
    int n = 0;
    for (const auto& t : tables) {
        for (const auto& row : t.rows) {
            if (!row.isControl && !row.match.matched)
                ++n;
        }
    }
    return n;
}

namespace {

// An export's file: written to a new file beside `path` and renamed over it. A symbolic link at `path` is
// replaced, never followed (its target untouched, a dangling one makes no file elsewhere; QSaveFile
// follows it, and removing it first left a moment to put another back), and a failed write leaves the
// previous export whole.
bool writeFileReplacing(const QString& path, const QByteArray& bytes, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = path + u": "_s + why;
        return false;
    };
    const QFileInfo info(path);
    // A new name of our own (O_CREAT | O_EXCL, random) in the same folder, so the rename below is atomic and
    // never crosses a file system.
    QTemporaryFile tmp(info.absolutePath() + u"/."_s + info.fileName() + u".XXXXXX"_s);
    if (!tmp.open())
        return fail(tmp.errorString());
    if (tmp.write(bytes) != bytes.size() || !tmp.flush())
        return fail(tmp.errorString());
    tmp.setPermissions(
        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther);
    tmp.close();
    // rename(2) replaces the name itself: a symbolic link there is replaced, never followed.
    if (std::rename(QFile::encodeName(tmp.fileName()).constData(), QFile::encodeName(path).constData()) != 0)
        return fail(QString::fromLocal8Bit(std::strerror(errno)));
    tmp.setAutoRemove(false);
    return true;
}

} // namespace

QString terminalText(QString text)
{
    for (QChar& c : text) {
        const ushort u = c.unicode();
        if (u < 0x20 || u == 0x7f || (u >= 0x80 && u < 0xa0))
            c = QChar(0xfffd);
    }
    return text;
}

QString formatReport(const QVector<ReportTable>& tables, ReportFormat format)
{
    QString out;
    switch (format) {
    case ReportFormat::Markdown:
        for (const auto& t : tables) {
            const QStringList head = header(t);
            out += u"### "_s + controlTitle(t) + u"\n\n"_s;
            out += u"| "_s + head.join(u" | "_s) + u" |\n"_s;
            out += u"|"_s + QStringList(head.size(), u" --- "_s).join(u"|"_s) + u"|\n"_s;
            for (const auto& row : t.rows) {
                QStringList c = cells(row);
                for (auto& s : c)
                    s.replace(u"|"_s, u"\\|"_s);
                out += u"| "_s + c.join(u" | "_s) + u" |\n"_s;
            }
            out += u"\n"_s;
            out += formatPeakAttribution(t);
        }
        if (tables.isEmpty())
            out += u"No runs.\n"_s;
        else
            out += u"Time vs [] (HL): "_s + QString::fromUtf8(kStepDeltaDefinition) + u"\n"_s;
        break;
    case ReportFormat::Csv: {
        // pandas.read_csv reads it as it is: integers without ".0", booleans true/false, doubles in their
        // shortest round-trip text, byte counts in *_bytes columns.
        QStringList head = { u"control_run_id"_s, u"run_id"_s, u"recipe_name"_s, u"model"_s, u"module_set"_s,
            u"peak_allocated_bytes"_s, u"peak_allocated_gb"_s, u"steady_step_ms"_s, u"tflops_per_gpu"_s,
            u"allocated_vs_control_pct"_s, u"time_vs_control_pct"_s, u"outcome"_s, u"failure_stage"_s,
            u"failure_iteration"_s, u"is_control"_s, u"matched"_s, u"not_matched_reasons"_s, u"notes"_s,
            u"control_kind"_s, u"time_vs_control_low_pct"_s, u"time_vs_control_high_pct"_s };
        out += head.join(u',') + u"\n"_s;
        for (const auto& t : tables) {
            for (const auto& row : t.rows) {
                const RunRecord& r = row.run;
                QStringList c = { t.control ? QString::number(t.control->id) : QString(),
                    QString::number(r.id), r.recipeName, r.model, r.moduleSetLabel(),
                    r.peakAllocated ? QString::number(*r.peakAllocated) : QString(),
                    r.peakAllocated ? shortestDouble(bytesToGb(*r.peakAllocated)) : QString(),
                    csvNum(r.steadyStepMs), csvNum(r.modelTflops), csvNum(row.allocatedVsControlPct),
                    csvNum(row.timeVsControlPct), r.outcome, r.failureStage,
                    r.failureIteration ? QString::number(*r.failureIteration) : QString(),
                    row.isControl ? u"true"_s : u"false"_s,
                    row.isControl || row.match.matched ? u"true"_s : u"false"_s,
                    row.match.reasons.join(u"; "_s), row.match.notes.join(u"; "_s),
                    t.control ? t.control->controlKind() : QString(), csvNum(row.timeLowPct),
                    csvNum(row.timeHighPct) };
                for (auto& s : c)
                    s = csvCell(s);
                out += c.join(u',') + u"\n"_s;
            }
        }
        break;
    }
    case ReportFormat::Json: {
        QJsonArray arr;
        for (const auto& t : tables) {
            QJsonArray rows;
            for (const auto& row : t.rows) {
                const RunRecord& r = row.run;
                rows.append(QJsonObject {
                    { u"run_id"_s, r.id },
                    { u"recipe_name"_s, r.recipeName },
                    { u"model"_s, r.model },
                    { u"module_set"_s, r.moduleSetLabel() },
                    { u"recompute_granularity"_s,
                        r.recomputeGranularity.isEmpty() ? QJsonValue()
                                                         : QJsonValue(r.recomputeGranularity) },
                    { u"recompute_modules"_s,
                        r.recomputeModules ? QJsonValue(QJsonArray::fromStringList(*r.recomputeModules))
                                           : QJsonValue() },
                    { u"peak_allocated_bytes"_s, jsonOpt(r.peakAllocated) },
                    { u"steady_step_ms"_s, jsonOpt(r.steadyStepMs) },
                    { u"tflops_per_gpu"_s, jsonOpt(r.modelTflops) },
                    { u"allocated_vs_control_pct"_s, jsonOpt(row.allocatedVsControlPct) },
                    { u"time_vs_control_pct"_s, jsonOpt(row.timeVsControlPct) },
                    { u"time_vs_control_low_pct"_s, jsonOpt(row.timeLowPct) },
                    { u"time_vs_control_high_pct"_s, jsonOpt(row.timeHighPct) },
                    { u"outcome"_s, r.outcome },
                    { u"failure_stage"_s,
                        r.failureStage.isEmpty() ? QJsonValue() : QJsonValue(r.failureStage) },
                    { u"failure_iteration"_s, jsonOpt(r.failureIteration) },
                    { u"is_control"_s, row.isControl },
                    { u"matched"_s, row.isControl || row.match.matched },
                    { u"not_matched_reasons"_s, QJsonArray::fromStringList(row.match.reasons) },
                    { u"notes"_s, QJsonArray::fromStringList(row.match.notes) },
                });
            }
            arr.append(
                QJsonObject { { u"control_run_id"_s, t.control ? QJsonValue(t.control->id) : QJsonValue() },
                    { u"control_kind"_s, t.control ? QJsonValue(t.control->controlKind()) : QJsonValue() },
                    { u"title"_s, controlTitle(t) }, { u"rows"_s, rows } });
        }
        out = QString::fromUtf8(QJsonDocument(arr).toJson(QJsonDocument::Indented));
        break;
    }
    case ReportFormat::Html:
        out += u"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Recompute Studio "
               u"report</title>\n"
               "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin-bottom:2em}"
               "td,th{border:1px solid #999;padding:3px 8px}td.n{text-align:right}"
               "tr.unmatched{background:#fdd}</style></head><body>\n"_s;
        for (const auto& t : tables) {
            out += u"<h3>"_s + htmlEscape(controlTitle(t)) + u"</h3>\n<table>\n<tr>"_s;
            for (const auto& h : header(t))
                out += u"<th>"_s + htmlEscape(h) + u"</th>"_s;
            out += u"</tr>\n"_s;
            for (const auto& row : t.rows) {
                const bool flagged = !row.isControl && !row.match.matched;
                out += flagged ? u"<tr class=\"unmatched\">"_s : u"<tr>"_s;
                const QStringList c = cells(row);
                for (int i = 0; i < c.size(); ++i)
                    out += ((i >= 1 && i <= 5) ? u"<td class=\"n\">"_s : u"<td>"_s) + htmlEscape(c[i])
                        + u"</td>"_s;
                out += u"</tr>\n"_s;
            }
            out += u"</table>\n"_s;
        }
        out += u"</body></html>\n"_s;
        break;
    }
    return out;
}

// --- export ----------------------------------------------------------------------------------------------

namespace {
enum class Kind { Integer, Real, Text, Boolean, Array };

struct ExportColumn {
    QString name; // stored name
    QString exported; // name in the export (byte counts get "_bytes")
    Kind kind;
};

struct Table {
    QVector<ExportColumn> columns;
    QVector<QVariantList> rows;
};

// What the stored columns hold beyond their SQLite type.
const QSet<QString>& booleanColumns()
{
    static const QSet<QString> names
        = { u"multi_latent_attention"_s, u"sequence_parallel"_s, u"loss_finite"_s, u"optimizer_init"_s };
    return names;
}
const QSet<QString>& arrayColumns()
{
    static const QSet<QString> names = { u"overrides"_s, u"recompute_modules"_s };
    return names;
}
bool isByteColumn(const QString& table, const QString& name)
{
    if (table == u"phase_peaks" || table == u"memory_reports")
        return name == u"allocated" || name == u"reserved" || name == u"max_allocated"
            || name == u"max_reserved";
    return name.endsWith(u"_allocated"_s) || name.endsWith(u"_reserved"_s)
        || name.endsWith(u"allocated_after"_s) || name.endsWith(u"reserved_after"_s);
}

Table selectTable(const Store& store, const QString& table, const QVector<qint64>& ids,
    const QString& idColumn, const QString& orderBy)
{
    Table t;
    QSqlQuery info(store.database());
    if (!info.exec(u"PRAGMA table_info("_s + table + u")"_s))
        return t;
    QStringList names;
    while (info.next()) {
        const QString name = info.value(1).toString();
        if (name == u"module_key") // derived, for filtering; module_set is the label
            continue;
        const QString type = info.value(2).toString().toUpper();
        ExportColumn c { name, name,
            type.contains(u"INT"_s) ? Kind::Integer
                : type == u"REAL"   ? Kind::Real
                                    : Kind::Text };
        if (booleanColumns().contains(name))
            c.kind = Kind::Boolean;
        else if (arrayColumns().contains(name))
            c.kind = Kind::Array;
        if (table == u"iterations") { // the iteration column table says which are booleans
            for (const auto& column : iterationColumns()) {
                if (column.name == name && column.type == ColumnType::Boolean)
                    c.kind = Kind::Boolean;
            }
        }
        if (isByteColumn(table, name))
            c.exported = name + u"_bytes"_s;
        t.columns << c;
        names << name;
    }
    QString sql = u"SELECT "_s + names.join(u',') + u" FROM "_s + table;
    if (!ids.isEmpty()) {
        QStringList parts;
        for (qint64 id : ids)
            parts << QString::number(id);
        sql += u" WHERE "_s + idColumn + u" IN ("_s + parts.join(u',') + u")"_s;
    }
    sql += u" ORDER BY "_s + orderBy;
    QSqlQuery q(store.database());
    q.setForwardOnly(true);
    if (!q.exec(sql))
        return t;
    while (q.next()) {
        QVariantList row;
        row.reserve(t.columns.size());
        for (int i = 0; i < t.columns.size(); ++i)
            row << q.value(i);
        t.rows << row;
    }
    return t;
}

QString csvValue(const QVariant& v, Kind kind)
{
    if (v.isNull() || !v.isValid())
        return {};
    switch (kind) {
    case Kind::Integer:
        return QString::number(v.toLongLong());
    case Kind::Real:
        return shortestDouble(v.toDouble());
    case Kind::Boolean:
        return v.toLongLong() != 0 ? u"true"_s : u"false"_s;
    case Kind::Array: // the stored JSON text: json.loads reads it
    case Kind::Text:
        break;
    }
    return csvCell(v.toString());
}

void appendJsonString(QByteArray* out, const QString& text)
{
    const QByteArray s = QJsonDocument(QJsonArray { text }).toJson(QJsonDocument::Compact);
    *out += s.mid(1, s.size() - 2);
}

// One cell as JSON, written here rather than by QJsonDocument so that doubles are the shortest round-trip
// text and integers stay integers.
void appendJsonCell(QByteArray* out, const QVariant& v, Kind kind)
{
    if (v.isNull() || !v.isValid()) {
        *out += "null";
        return;
    }
    switch (kind) {
    case Kind::Integer:
        *out += QByteArray::number(v.toLongLong());
        return;
    case Kind::Real: {
        const QString s = shortestDouble(v.toDouble());
        *out += s.isEmpty() ? QByteArray("null") : s.toLatin1();
        return;
    }
    case Kind::Boolean:
        *out += v.toLongLong() != 0 ? "true" : "false";
        return;
    case Kind::Array: {
        const QJsonDocument doc = QJsonDocument::fromJson(v.toString().toUtf8());
        *out += doc.isArray() ? doc.toJson(QJsonDocument::Compact) : QByteArray("null");
        return;
    }
    case Kind::Text:
        break;
    }
    appendJsonString(out, v.toString());
}

const char* pandasDtype(Kind kind)
{
    switch (kind) {
    case Kind::Integer:
        return "Int64";
    case Kind::Real:
        return "float64";
    case Kind::Boolean:
        return "boolean";
    case Kind::Array:
    case Kind::Text:
        break;
    }
    return "object";
}

} // namespace

QStringList exportRuns(const Store& store, const QVector<qint64>& runIds, const QString& dir, bool csv,
    bool json, QString* error)
{
    QStringList written;
    if (!QDir().mkpath(dir)) {
        if (error)
            *error = u"cannot create "_s + dir;
        return written;
    }
    // module_set is the guide's label, derived; everything else is the stored row as is.
    QHash<qint64, QString> moduleSets;
    {
        RunFilter f;
        f.ids = runIds;
        for (const auto& r : store.listRuns(f))
            moduleSets.insert(r.id, r.moduleSetLabel());
    }
    const struct {
        const char* name;
        const char* idColumn;
        const char* orderBy;
        int sinceVersion;
    } tables[] = { { "runs", "id", "id", 1 }, { "rank_peaks", "run_id", "run_id, rank", 1 },
        { "phase_peaks", "run_id", "run_id, rank, phase", 2 },
        { "memory_reports", "run_id", "run_id, after_iteration, rank", 2 },
        { "iterations", "run_id", "run_id, iteration, rank", 1 } };
    for (const auto& spec : tables) {
        const QString name = QString::fromLatin1(spec.name);
        if (store.schemaVersion() < spec.sinceVersion)
            continue;
        Table t = selectTable(
            store, name, runIds, QString::fromLatin1(spec.idColumn), QString::fromLatin1(spec.orderBy));
        if (name == u"runs") {
            t.columns << ExportColumn { u"module_set"_s, u"module_set"_s, Kind::Text };
            for (auto& row : t.rows)
                row << moduleSets.value(row.first().toLongLong());
        }
        {
            // Every column but created_at, which pandas.read_json reads as datetime64 by itself (and
            // read_csv as text, or a date with parse_dates).
            QByteArray dtypes = "{";
            for (int i = 0; i < t.columns.size(); ++i) {
                if (t.columns[i].name == u"created_at")
                    continue;
                if (dtypes.size() > 1)
                    dtypes += ',';
                dtypes += '\n';
                dtypes += "  \"" + t.columns[i].exported.toUtf8() + "\": \"" + pandasDtype(t.columns[i].kind)
                    + '"';
            }
            dtypes += "\n}\n";
            const QString path = dir + u'/' + name + u".dtypes.json"_s;
            if (!writeFileReplacing(path, dtypes, error))
                return written;
            written << path;
        }
        if (csv) {
            QStringList head;
            for (const auto& c : t.columns)
                head << c.exported;
            QString text = head.join(u',') + u"\n"_s;
            for (const auto& row : t.rows) {
                QStringList c;
                c.reserve(row.size());
                for (int i = 0; i < row.size(); ++i)
                    c << csvValue(row[i], t.columns[i].kind);
                text += c.join(u',') + u"\n"_s;
            }
            const QString path = dir + u'/' + name + u".csv"_s;
            if (!writeFileReplacing(path, text.toUtf8(), error))
                return written;
            written << path;
        }
        if (json) {
            QByteArray text = "[";
            for (qsizetype r = 0; r < t.rows.size(); ++r) {
                text += r ? ",\n{" : "\n{";
                for (int i = 0; i < t.columns.size(); ++i) {
                    if (i)
                        text += ',';
                    appendJsonString(&text, t.columns[i].exported);
                    text += ':';
                    appendJsonCell(&text, t.rows[r][i], t.columns[i].kind);
                }
                text += '}';
            }
            text += "\n]\n";
            const QString path = dir + u'/' + name + u".json"_s;
            if (!writeFileReplacing(path, text, error))
                return written;
            written << path;
        }
    }
    return written;
}

} // namespace rs::storage
