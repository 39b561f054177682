// SPDX-License-Identifier: Apache-2.0
// Import of real Megatron-LM and Megatron Bridge training logs (megatron-rules.md (e)): iteration lines,
// per-rank memory lines (MLM "memory (MB)" and Bridge "memory (GB)"), throughput, losses, skipped and NaN
// counts, theoretical-memory lines, OOM tracebacks, and the printed arguments block. Tolerates CRLF,
// garbage lines, interleaved ranks and a truncated last line.
#pragma once

#include <optional>

#include <QByteArray>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QVector>

#include "storage/store.h"

namespace rs::storage {

struct ParsedLog {
    QString format; // "megatron-lm" | "megatron-bridge" | "unknown"
    QMap<QString, QString> arguments; // the printed arguments block (name → value text)
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
    // The counters are per log interval (Megatron resets them after each print): these are their sums.
    int skippedIterations = 0;
    int nanIterations = 0;
    bool lossDroppedSomewhere = false; // an iteration line with no loss (NaN or negative, not printed)
    bool truncatedLastLine = false; // the file ended without '\n': its last line was not used
    int ignoredLines = 0;
};

// Parses the text of one log.
ParsedLog parseTrainingLog(const QByteArray& text);

struct ImportOptions {
    QStringList overrides; // Bridge overrides (`model.recompute_modules=[moe_act]` …) for what the log lacks
    QString recipeName; // default: the file name
    int steadyFrom = 0; // first steady iteration; 0: the second half of the logged iterations
};

struct ImportResult {
    qint64 runId = 0;
    bool duplicate = false; // the same content was imported before (runId is the earlier run)
    QString error;
};

// Parses the log and stores it as one run (source "import"). Importing the same bytes twice returns the
// first run with duplicate = true.
ImportResult importTrainingLog(Store* store, const QString& path, const ImportOptions& options = {});

} // namespace rs::storage
