// SPDX-License-Identifier: Apache-2.0
// Live ingest of one worker run: feed it the stream's events (docs/stream.md) as they arrive, typed
// (core/stream.h: what the launcher decodes) or as JSON lines (a saved stream), and it writes them to the
// store in transactions. The run row exists from `hello` on with outcome `running`;
// `result` sets the outcome; finish() without a `result` ends the run `aborted`, keeping every iteration
// that was reported. A process that dies mid-ingest leaves its run `running` with every committed row,
// until the next Store::open on this host sees that process gone and ends the run `aborted`.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include <QByteArray>
#include <QElapsedTimer>
#include <QFile>
#include <QString>

#include "core/stream.h"
#include "storage/store.h"

namespace rs::storage {

class RunIngest {
public:
    // The store must outlive the ingest.
    explicit RunIngest(Store* store);
    ~RunIngest(); // finish()es an unfinished run as aborted

    // Rows are committed every `rows` iterations or `ms` milliseconds, whichever comes first, and at every
    // event that is not an iteration. Default (1, 0): every event is its own transaction (live runs: a
    // step takes far longer than a commit). Bulk ingest (benchmarks, replays) raises `rows`.
    void setCommitPolicy(int rows, int ms);
    // A control run id to link when the result arrives; without one the store's latest matched []
    // control is linked (if any).
    void setControl(std::optional<qint64> controlRunId);
    // Run fields to carry into the row that the stream does not give (e.g. recipe name, provenance).
    void setProvenance(const QString& provenance);
    // The recipe as sent to the worker (core's recipeToJson): the run's recipe fields until the worker's
    // resolved `recipe` event replaces them (a run that fails before that event still says what it was for).
    void setRecipe(const nlohmann::json& recipe);

    // Measurements are never lost to the store. A write lock held by another process is waited on (up to
    // setMaxLockWait, default 10 min) in steps that are reported through the notifier ("store locked by
    // another process, waiting (12 s)…"), and every row is stored once it is free. A store that cannot
    // take the run (read-only, damaged, missing, or locked past the wait) switches the ingest to spooling:
    // every event of the run so far and from then on is written, line by line, to a JSON-lines file beside
    // the store (else in the user's data folder, else the temp folder), said through the notifier and
    // named by spoolPath(); `recompute import SPOOL` (importWorkerStream) stores it later.
    void setNotifier(std::function<void(const QString&)> notify);
    void setSpoolEnabled(bool enabled); // default on; off: a store error is returned as before
    void setMaxLockWait(int ms);
    QString spoolPath() const { return m_spoolPath; } // "" unless the stream was spooled
    QString spoolReason() const { return m_spoolReason; } // the store's error that started the spool
    static constexpr int kLockStepMs = 1000; // one wait step: the busy timeout while ingesting

    // One stream event, as the launcher decoded it. Unknown events and keys are ignored (a registered
    // iteration column is read from its key). Returns false on a store error that could not be spooled
    // either (see error()).
    bool ingest(const stream::Event& event);
    // Decodes one JSON line (core's decodeLine) and ingests it; a malformed line is ignored (returns true)
    // and counted. Iteration lines take a fast path straight into the row, through the column table (bulk
    // ingest of saved streams); it stores what the typed path stores, and leaves any line it does not read
    // plainly (escapes, nesting, a value of the wrong type) to decodeLine, which names what is wrong.
    bool ingestLine(const QByteArray& line);
    // Ends the run: without a `result` event the outcome is `aborted` with `message`. Commits.
    bool finish(const QString& message = {});

    qint64 runId() const { return m_runId; } // 0 before hello (or the first event)
    bool hasResult() const { return m_hasResult; }
    bool finished() const { return m_finished; }
    int iterationCount() const { return m_iterations; }
    int malformedLines() const { return m_malformed; }
    // Why the last malformed line was not ingested: not JSON, or an event whose key does not read as its
    // type ("rank_summary event: 'peak_allocated': expected an integer (bytes or a count), got \"x\"").
    QString lastMalformedReason() const { return m_malformedReason; }
    QString error() const { return m_error; }
    // The running maximum of allocated bytes seen in iterations (for progress displays).
    std::optional<qint64> currentPeakAllocated() const { return m_currentPeak; }

private:
    bool ingestToStore(const stream::Event& event);
    bool ingestLineToStore(const QByteArray& line);
    bool begin(); // BEGIN IMMEDIATE, waiting (bounded, reported) while another process holds the lock
    bool startSpool();
    bool spool(const QByteArray& line);
    void notify(const QString& message);
    // Where a spool may go, in order: beside the store, the user's data folder, the temp folder.
    static QStringList spoolCandidates(const QString& storePath);
    bool writeSpoolFrom(int candidate); // every event so far into the first candidate that takes them
    bool ensureRun();
    bool maybeCommit(bool force);
    bool onHello(const stream::Hello& e);
    bool onRecipe(const stream::RecipeEvent& e);
    bool onIteration(const stream::Iteration& e);
    bool storeIteration(IterationRow& row);
    bool onRankSummary(const stream::RankSummary& e);
    bool onResult(const stream::Result& e);
    bool onPeakAttribution(const stream::PeakAttribution& e);
    bool onMemoryLayout(const stream::MemoryLayout& e);

    Store* m_store;
    RunRecord m_run;
    qint64 m_runId = 0;
    int m_commitRows = 1;
    int m_commitMs = 0;
    int m_pending = 0;
    QElapsedTimer m_sinceCommit;
    std::optional<qint64> m_control;
    bool m_controlGiven = false;
    bool m_hasResult = false;
    bool m_finished = false;
    int m_iterations = 0;
    int m_malformed = 0;
    QString m_malformedReason;
    bool m_anyNonFinite = false;
    std::optional<qint64> m_currentPeak;
    QString m_error;
    std::function<void(const QString&)> m_notify;
    bool m_spoolEnabled = true;
    bool m_spooling = false;
    int m_maxLockWaitMs = 600000;
    // Every event of the run as received, until it is finished or spooled: a saved stream's line as it came,
    // or a typed event, written as a line only when a spool starts (a live run pays nothing for it).
    std::vector<std::variant<QByteArray, stream::Event>> m_received;
    std::unique_ptr<QFile> m_spoolFile;
    QString m_spoolPath;
    QString m_spoolReason;
    int m_spoolIndex = -1; // the candidate that holds the spool
    QStringList m_spoolFailures; // the folders that could not take it, and why
};

// A worker stream saved as JSON lines (a spool, or `recompute-bench ... > run.jsonl`): its first event is
// `hello`.
bool isWorkerStreamFile(const QString& path);
struct StreamImport {
    qint64 runId = 0;
    bool duplicate = false; // this very file was imported before (by content)
    int iterations = 0;
    int malformedLines = 0;
    QString error;
};
// Stores a saved worker stream as one run (a stream without `result` ends `aborted`); the same file twice
// is one run.
StreamImport importWorkerStream(Store* store, const QString& path);

// One `iteration` event of the stream as a row (runId left 0), through the column table: each key of
// stream::forEachIterationField, and each registered column from the event's `extra`. A registered
// column's value of the wrong type is left unknown and, with `error`, said there ("iteration event:
// 'key': expected a number, got \"x\""). Ingest and the GUI's live curve decode iterations with this one
// function.
IterationRow iterationRowFromEvent(const stream::Iteration& event, QString* error = nullptr);

} // namespace rs::storage
