// SPDX-License-Identifier: Apache-2.0
// Import of real Megatron-LM and Megatron Bridge training logs (megatron-rules.md (e)): iteration lines,
// per-rank memory lines (MLM "memory (MB)" and Bridge "memory (GB)"), throughput, losses, skipped and NaN
// counts, theoretical-memory lines, OOM tracebacks (every form Megatron prints), the printed arguments block
// and Megatron Bridge's "Configuration Summary". Tolerates CRLF, garbage lines, interleaved ranks and a
// truncated last line; refuses (and notes) values out of range, counts duplicated lines once, and tells two
// logs in one file from one log. Linear in the size of the log, with progress.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include <QByteArray>
#include <QByteArrayView>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QVector>

#include "storage/store.h"

namespace rs::storage {

// Progress of an import: `done` of `total` bytes read. Returning false cancels the import.
using ImportProgress = std::function<bool(qint64 done, qint64 total)>;

struct ParsedLog {
    QString format; // "megatron-lm" | "megatron-bridge" | "unknown"
    QMap<QString, QString> arguments; // the printed arguments block (name → value text)
    // Megatron Bridge's "Configuration Summary (Non-Default Values vs Megatron Core)": "section.name" →
    // the value as Python's repr printed it ("model.recompute_granularity" → "'selective'"). A [model]
    // field the summary does not list is at Megatron Core's default.
    QMap<QString, QString> bridgeConfig;
    bool bridgeSummary = false; // the summary block was printed (with its [model] section)
    // The command a job run wrote as the log's first line ("# command: WORD ...", session/job_run.h), as the
    // shell reads it; "" when there is none. A rank other than 0 prints no arguments block: its recipe is
    // read from this line.
    QString jobCommand;
    QVector<IterationRow> iterations; // rank = the printing (last) rank, unknown → 0
    QVector<MemoryReport> memory; // one per rank and iteration
    std::optional<int> trainIters;
    std::optional<int> globalBatchSize;
    std::optional<double> theoreticalWeightOptimizerMb, theoreticalActivationMb, theoreticalTotalMb;
    bool oom = false;
    std::optional<int> oomIteration; // the iteration that was running when the OOM happened
    QString oomMessage;
    QString
        oomStage; // forward | backward | optimizer, from the traceback's innermost known frame; "" unknown
    // The counters are per log interval (Megatron resets them after each print): these are their sums
    // (64-bit: a sum past 2^31 is refused when stored, never wrapped).
    qint64 skippedIterations = 0;
    qint64 nanIterations = 0;
    bool lossDroppedSomewhere = false; // an iteration line with no loss (NaN or negative, not printed)
    bool truncatedLastLine = false; // the file ended without '\n': its last line was not used
    int ignoredLines = 0;
    int duplicateLines = 0; // lines repeated verbatim (counted once)
    // Values refused (out of range, not finite, too big for their type): one note per kind, with its
    // count and first line ("max allocated nan MB refused (not a finite size) at line 12").
    QStringList refused;
    // Signs of two logs in one file (two runs interleaved, or a restart appended): the same iteration or
    // memory report printed twice with other values, two different argument blocks, two train_iters.
    // A log with conflicts is not imported as one run.
    QStringList conflicts;
    bool cancelled = false; // the progress callback asked to stop
};

// Parses the text of one log, in one pass (linear in its size). `progress` is called about every MiB.
ParsedLog parseTrainingLog(const QByteArray& text, const ImportProgress& progress = {});

// The same parser fed as a log arrives (a running job's output streamed line by line): bytes in, the
// iteration lines they completed out. finish() gives what parseTrainingLog gives for the same bytes.
class TrainingLogStream {
public:
    TrainingLogStream();
    ~TrainingLogStream();
    TrainingLogStream(const TrainingLogStream&) = delete;
    TrainingLogStream& operator=(const TrainingLogStream&) = delete;
    // Complete lines are parsed at once; a partial last line waits for its '\n'. Returns the iteration rows
    // these bytes completed, in order of arrival (a repeated or refused line gives none).
    QVector<IterationRow> feed(QByteArrayView bytes);
    const QVector<IterationRow>& iterations() const; // every one so far, in order of arrival
    // The end of the log: a partial last line is not used (truncatedLastLine), as in parseTrainingLog.
    ParsedLog finish();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

struct ImportOptions {
    QStringList overrides; // Bridge overrides (`model.recompute_modules=[moe_act]` …) for what the log lacks
    QString recipeName; // default: the file name
    int steadyFrom = 0; // first steady iteration; 0: the second half of the logged iterations
    // The run's control. Empty: linked automatically (Store::autoLinkControl): to the newest stored run of
    // the same shape without recompute (the explicit [] first, then Megatron's recompute_granularity None),
    // and a run without recompute becomes the control of the matched runs that have none yet.
    std::optional<qint64> control;
    bool autoLink = true;
    ImportProgress progress;
};

struct ImportResult {
    qint64 runId = 0;
    bool duplicate = false; // the same content was imported before (runId is the earlier run)
    QString error;
    bool cancelled = false;
    std::optional<qint64> controlRunId; // the control the run was linked to
    int runsLinkedToIt = 0; // runs that took this run as their control
    QStringList notes; // what was refused or could not be read (also in the run's notes)
};

// Parses the log and stores it as one run (source "import"). Importing the same bytes twice returns the
// first run with duplicate = true.
ImportResult importTrainingLog(Store* store, const QString& path, const ImportOptions& options = {});

} // namespace rs::storage
