// SPDX-License-Identifier: Apache-2.0
// The guide's comparison table (module set, peak allocated, step time, TFLOP/s/GPU, Allocated vs [],
// Time vs [], outcome), built from the store and written as Markdown, CSV, JSON or HTML; and the plain
// export of runs, per-rank peaks and iterations as CSV / JSON that pandas reads. Rows that are not
// matched to their control are flagged with the reasons and get no deltas: never silently compared.
#pragma once

#include <optional>

#include <QHash>
#include <QString>
#include <QVector>

#include "storage/store.h"

namespace rs::storage {

enum class ReportFormat { Markdown, Csv, Json, Html };
// "md" | "markdown" | "csv" | "json" | "html"
std::optional<ReportFormat> reportFormatFromName(const QString& name);

// One table: a control and the runs compared with it (the control's own row first).
struct ReportTable {
    std::optional<RunRecord> control; // empty: these runs have no matched control stored
    QVector<ComparisonRow> rows;
    // What held each run's peak on rank 0 (Store::peakAttribution), for the rows that have it.
    QHash<qint64, QVector<PeakAttributionRow>> attribution;
};
// "What holds the peak": per run of the table (the control first), the phase of its peak and the live
// GB by category there; empty when no run of the table has an attribution.
QString formatPeakAttribution(const ReportTable& table);

// With `control`: one table of `runIds` (or, when empty, every run linked to that control) against it.
// Without: the runs (every run when `runIds` is empty) grouped by their stored matched control; runs whose
// control is not among them bring it in.
QVector<ReportTable> buildReport(
    const Store& store, std::optional<qint64> control, const QVector<qint64>& runIds);
// Text a report or the CLI shows as one line: a control character in a stored name (an escape sequence
// that would retitle or recolour the terminal, a line break that would forge a row) shown as U+FFFD.
QString terminalText(QString text);
QString formatReport(const QVector<ReportTable>& tables, ReportFormat format);
// The number of rows flagged as not matched.
int unmatchedRows(const QVector<ReportTable>& tables);

// Cells as the guide writes them: "36.618" (GB = 1e9 bytes, 3 decimals), "457.18" (ms), "-0.01%", "control".
QString formatGigabytes(std::optional<qint64> bytes);
QString formatPercent(std::optional<double> pct);
// A row's Δ step time as every table writes it (the runs table, the reports): "+1.00% [+0.80, +1.20]", with
// " not significant" when its interval holds 0 (core's deltaCell); "control" for the control's row.
QString formatStepDelta(const ComparisonRow& row);
// The shortest text that reads back as the same double ("321.4", never "321.39999999999998"); "" for NaN
// and infinities.
QString shortestDouble(double v);

// Export: runs, rank_peaks, phase_peaks, memory_reports and iterations (.csv and/or .json) in `dir` for the
// runs (all when empty), each with <table>.dtypes.json, its columns' pandas dtypes, so that
//   pd.read_json("runs.json", dtype=json.load(open("runs.dtypes.json")))
//   pd.read_csv("runs.csv", dtype=json.load(open("runs.dtypes.json")))
// give nullable integers (Int64), nullable booleans (boolean), float64 and text as they are stored.
// JSON is an array of records with arrays as arrays (overrides, recompute_modules), booleans as booleans and
// integers as integers; CSV has a header row, empty cells for unknown values, integers without ".0",
// booleans true/false, arrays as JSON text. Doubles are the shortest text that reads back the same. Byte
// counts are in columns named *_bytes. Returns the files written; on failure sets *error.
QStringList exportRuns(const Store& store, const QVector<qint64>& runIds, const QString& dir, bool csv,
    bool json, QString* error = nullptr);

} // namespace rs::storage
