// SPDX-License-Identifier: Apache-2.0
// The measurement store: one SQLite file (QtSql, QSQLITE) holding the guide's measurement contract for
// every run: the recipe (full JSON, its hash, its Megatron Bridge overrides), revisions and environment,
// shape, precision, attention backend, parallelism, the exact recompute choice, per-rank peaks (and per
// phase), per-iteration rows, steady-state step time and throughput, numerical sanity, the outcome with its
// failure stage, and which run is the matched control of which. Schema: docs/store.md.
//
// A Store is one connection; use it from the thread that opened it. Several processes may write to one
// file at once (WAL, busy timeout, BEGIN IMMEDIATE).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json_fwd.hpp>

#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QPair>
#include <QSqlDatabase>
#include <QString>
#include <QStringList>
#include <QVariant>
#include <QVariantMap>
#include <QVector>

class QSqlError;
class QSqlQuery;

namespace rs {
struct RunFacts;
struct MeasuredRun;
} // namespace rs

namespace rs::storage {

// Outcome of a run, as stored (text): the worker's result statuses plus `aborted` (the stream ended without
// `result`) and `running` (ingest still in progress, or the ingesting process died).
namespace outcome {
inline const QString Pass = QStringLiteral("pass");
inline const QString Oom = QStringLiteral("oom");
inline const QString Nonfinite = QStringLiteral("nonfinite");
inline const QString Invalid = QStringLiteral("invalid");
inline const QString Error = QStringLiteral("error");
inline const QString Aborted = QStringLiteral("aborted");
inline const QString Running = QStringLiteral("running");
} // namespace outcome

// Where a run came from.
namespace source {
inline const QString Worker = QStringLiteral("worker"); // a recompute-bench stream
inline const QString Import = QStringLiteral("import"); // a Megatron-LM / Bridge training log
inline const QString Guide = QStringLiteral("guide"); // the guide's published measurements (sample data)
} // namespace source

// One stored run: the row of the `runs` table. Unknown values are empty optionals / empty strings (an
// imported log does not know everything a worker stream does).
struct RunRecord {
    qint64 id = 0;
    QString source; // source::Worker / Import / Guide
    QString provenance; // free text: the log path, or the guide's citation
    QDateTime createdAt; // UTC
    QString recipeName;
    QString recipeJson; // full resolved recipe (Megatron field names); empty when unknown
    QString recipeHash; // sha256 hex of the canonical recipe text
    QStringList overrides; // Megatron Bridge Hydra overrides of the recipe

    // revisions and environment
    QString workerVersion, libtorchVersion, cudaVersion, ncclVersion;
    QString device, deviceKind, host;
    QString megatronCoreRevision, bridgeRevision;
    QString profile; // rules profile name (bridge-pin, guide, main, dev)
    std::optional<int> worldSize;
    std::optional<int> gpuCount; // imported / guide runs: GPUs of the job

    // model shape
    QString model; // free text, e.g. "Moonlight 16B"
    std::optional<int> numLayers, hiddenSize, ffnHiddenSize, numAttentionHeads, numQueryGroups;
    std::optional<int> numMoeExperts, moeRouterTopk;
    std::optional<bool> multiLatentAttention;
    std::optional<int> seqLength, microBatchSize, globalBatchSize;
    QString precision; // "bf16", "fp32", "bf16 fp8 e4m3/delayed", ...
    QString attentionBackend; // fused | flash | unfused

    // parallelism
    std::optional<int> tensorModelParallelSize, pipelineModelParallelSize, virtualPipelineModelParallelSize;
    std::optional<int> contextParallelSize, expertModelParallelSize;
    std::optional<bool> sequenceParallel;

    // the exact recompute choice
    QString recomputeGranularity; // "" (none) | selective | full | "unknown" (an import that cannot tell)
    std::optional<QStringList> recomputeModules; // empty optional: unset; empty list: the explicit [] control
    QString recomputeMethod; // uniform | block
    std::optional<int> recomputeNumLayers;

    // results
    QString outcome; // outcome::*
    QString failureStage; // validate, build, forward, backward, optimizer, optimizer-init ("" on pass)
    std::optional<int> failureIteration;
    QString message;
    std::optional<qint64> peakAllocated; // bytes, max over ranks
    std::optional<qint64> peakReserved;
    std::optional<int> peakRank; // the rank holding peakAllocated
    QString peakNote; // how the peak was taken, e.g. "after iteration 2", "rank 0 after iteration 1"
    std::optional<double> steadyStepMs;
    std::optional<double> tokensPerS;
    std::optional<double> modelTflops; // per device
    std::optional<double> executedTflops;
    std::optional<bool> lossFinite; // every reported loss finite
    std::optional<int> skippedIterations, nanIterations;
    std::optional<int> iterationsPlanned, warmupIters;
    std::optional<qint64> controlRunId; // the matched [] control this run is compared with
    QString steadyWindow; // which iterations the step time is the mean of, e.g. "iterations 11-20"
    QString notes; // free text (the guide's "failure or steady-state evidence")

    // schema v2: import provenance and the log's theoretical-memory line
    QString importPath, importSha256, importFormat; // format: megatron-lm | megatron-bridge
    // schema v3 (derived, read-only): sha256 of the recipe without its recompute choice and name. Two runs
    // with one key are matched as far as their recipes go, without reading the recipes.
    QString recipeMatchKey;
    // schema v4: the process that ingests the run (host, pid), so a run whose ingesting process died can be
    // told from one still being measured.
    QString ingestHost;
    std::optional<qint64> ingestPid;
    std::optional<double> theoreticalWeightOptimizerMb, theoreticalActivationMb, theoreticalTotalMb;
    // schema v5: an imported log's settings (JSON object, name → printed value): Megatron-LM's printed
    // arguments or Bridge's configuration summary, less the recompute choice and the run's bookkeeping
    // (paths, logging, seeds, checkpoints). Two imports are matched only if these agree (Store::matchCheck).
    QString importSettings;

    // the guide's label for the recompute choice: "[]", "core_attn", "layernorm, moe_act",
    // "full uniform 1", "none" (granularity unset)
    QString moduleSetLabel() const;
    // true for selective granularity with recompute_modules == [] (the explicit no-recompute control)
    bool isExplicitControl() const;
    // true when the run recomputes nothing: Megatron's recompute_granularity None (stored as NULL), or the
    // explicit [] (store_links.cpp)
    bool isNoRecompute() const;
    // How the run stands as a control: "explicit-[]" (selective with recompute_modules=[]),
    // "megatron-none" (recompute_granularity None: Megatron's own no-recompute, not the explicit []), or
    // "recompute" (a run that recomputes something, made a control by the user).
    QString controlKind() const;
    // The same in words, for report titles: "no recompute (Megatron's recompute_granularity None)".
    QString controlKindLabel() const;
};

struct RankPeak {
    qint64 runId = 0;
    int rank = 0;
    std::optional<qint64> peakAllocated, peakReserved; // bytes
    QString peakPhase; // forward / backward / optimizer / optimizer-init
    std::optional<int> peakIteration;
    std::optional<double> steadyStepMs, steadyStepMsMedian;
};

// Per-phase peaks of one rank (schema v2; from rank_summary.phase_peaks).
struct PhasePeak {
    qint64 runId = 0;
    int rank = 0;
    QString phase;
    std::optional<qint64> allocated, reserved;
};

// One step of one rank. Worker runs fill the per-phase peaks; imported logs fill loss, step time,
// throughput and the counters.
struct IterationRow {
    qint64 runId = 0;
    int rank = 0;
    int iteration = 0; // 1-based
    QString phase; // warmup | steady ("" when unknown)
    std::optional<double> stepMs;
    std::optional<double> loss; // empty when not finite or not printed
    std::optional<bool> lossFinite;
    std::optional<qint64> forwardPeakAllocated, forwardPeakReserved;
    std::optional<qint64> backwardPeakAllocated, backwardPeakReserved;
    std::optional<qint64> optimizerPeakAllocated, optimizerPeakReserved;
    std::optional<qint64> allocatedAfter, reservedAfter;
    std::optional<int> allocRetries;
    bool optimizerInit = false;
    std::optional<double> tflops; // imported: throughput per GPU (TFLOP/s/GPU)
    std::optional<int> skippedIterations, nanIterations; // imported: the log's running counters
    // schema v6: the step's phases (sums over the micro-batches), the gradient average (several ranks), and
    // what forward left allocated
    std::optional<double> forwardMs, backwardMs, optimizerMs, gradReduceMs;
    std::optional<qint64> forwardAllocatedAfter;
    // Registered columns (registerIterationColumn) by name; absent when unknown.
    QVariantMap extra;
};

// A stored table, column by column: one list drives CREATE (and the migrations that add columns), INSERT
// and its bindings, SELECT and the row decoders. The iteration table's column names are the stream's keys.
enum class ColumnType { Integer, Real, Text, Boolean }; // Boolean is stored as INTEGER 0/1
template <typename Row> struct TableColumn {
    QString name;
    ColumnType type = ColumnType::Integer;
    int sinceVersion = 1; // the schema version that added it; 0: registered at run time
    bool fromStream = true; // read from the event's key of this name (false: the run id, imported fields)
    std::function<QVariant(const Row&)> get; // a null QVariant for unknown
    std::function<void(Row&, const QVariant&)> set; // a null / invalid QVariant for unknown
    QString constraint = {}; // "NOT NULL", "NOT NULL DEFAULT 0", "REFERENCES ..."
};
using IterationColumn = TableColumn<IterationRow>;
// The iterations table: the shipped columns (store_schema.cpp) and any registered ones. Ingest decodes
// iteration events with it (both its JSON paths), the store creates, migrates, binds and selects with it,
// the GUI's live curve decodes with it, export writes what it stored.
const QVector<IterationColumn>& iterationColumns();
// Adds a column beyond the shipped ones (tests, tools): its values live in IterationRow::extra under
// `name`, are read from the iteration event's key `name`, stored, read back by Store::iterations and
// exported. Register before opening stores: a file opened for writing gets the column when it lacks it,
// one opened read-only without it reads the column as unknown. Registering a name twice does nothing.
void registerIterationColumn(const QString& name, ColumnType type);

// A memory report line of an imported log (schema v2): one rank after one iteration, in bytes.
struct MemoryReport {
    qint64 runId = 0;
    int rank = 0;
    int afterIteration = 0;
    std::optional<qint64> allocated, maxAllocated, reserved, maxReserved;
    std::optional<int> allocRetries;
};

// What held one phase's peak on one rank (schema v6; the stream's peak_attribution): the live bytes by
// category at the step whose phase peak was the run's highest, and the activations by layer and region.
struct ActivationShare {
    std::optional<int> layer; // global layer index; empty for embedding / output
    QString region; // input_layernorm, self_attention, core_attn, ..., embedding, output
    qint64 bytes = 0;
};
struct PeakAttributionRow {
    qint64 runId = 0;
    int rank = 0;
    QString phase; // forward, backward, optimizer-init, optimizer
    std::optional<int> iteration;
    std::optional<qint64> peakAllocated; // the allocator's peak
    std::optional<qint64> attributed; // the sum of the categories
    // category -> bytes, in the stream contract's order: parameters, main_parameters, gradient_buffer,
    // optimizer_states, activations, backward, workspace, other (then any other, by name)
    QVector<QPair<QString, qint64>> categories;
    QVector<ActivationShare> activations; // by layer, then region
};

// The training memory layout of one rank (schema v6; the stream's memory_layout).
struct MemoryLayoutRow {
    qint64 runId = 0;
    int rank = 0;
    std::optional<int> microBatches, dataParallelSize;
    std::optional<bool> distributedOptimizer;
    QString gradBufferDtype; // fp32 | param
    std::optional<qint64> gradBufferBytes, parameters, parameterBytes, mainParameterBytes, shardElements;
    std::optional<qint64> paddedVocabSize;
    std::optional<bool> tiedEmbeddings, onePassOptimizer;
};

struct RunFilter {
    QString recipeName; // substring, case-insensitive; empty: any
    std::optional<QStringList> moduleSet; // exact set, order-insensitive; [] selects explicit controls
    QString outcome; // outcome::*; empty: any
    QString host; // exact; empty: any
    QString source; // source::*; empty: any
    QString model; // substring, case-insensitive
    QVector<qint64> ids; // empty: any
    QStringList recipeMatchKeys; // any of these recipeMatchKey()s (indexed); empty: any
    int limit = -1; // newest first; -1: all
};

// Whether two runs may be compared: same model and shape, seq/mbs/gbs, precision, attention backend,
// parallelism, profile, device, world size and Megatron revisions, and (both recipes stored) every other
// recipe field; only the recompute choice may differ. `reasons` says why not, one line
// per differing field ("seq_length: 4096 vs 8192"); `notes` lists what could not be checked.
struct MatchCheck {
    bool matched = false;
    QStringList reasons;
    QStringList notes;
};

// One row of the guide's comparison table against a control.
struct ComparisonRow {
    RunRecord run;
    bool isControl = false;
    MatchCheck match; // run vs control
    std::optional<double> allocatedVsControlPct; // (run - control) / control * 100, only when matched
    // Δ step time, only when matched: Store::compare fills it with the one definition (core's
    // kStepDeltaName, storage::stepTimeDelta: the Hodges-Lehmann shift of the steady iterations, in % of the
    // control's median) and its 95 % interval (nullopt: too few iterations for one); compareRecords alone
    // gives the plain percentage of the stored step times, with no interval.
    std::optional<double> timeVsControlPct;
    std::optional<double> timeLowPct, timeHighPct;
    QString timeVerdict; // "faster" | "slower" | "not significant"; "" without an interval
};

class Store {
public:
    // v1: runs, rank peaks, iterations. v2: per-phase peaks, import provenance, memory reports,
    // theoretical memory. v3: the recipe match key (backfilled from the stored recipes). v4: the ingesting
    // process of each run. v5: the settings of an imported log (import_settings). v6: the iterations' phase
    // times and forward_allocated_after; peak attribution (peak_attribution, peak_attribution_bytes) and
    // the memory layout (memory_layout) of worker runs.
    static constexpr int kSchemaVersion = 6;

    Store();
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    // <AppDataLocation of "recompute-studio">/measurements.sqlite
    static QString defaultPath();

    // Opens (creating folders and file as needed), sets WAL, foreign_keys=ON, a busy timeout, and migrates
    // to kSchemaVersion. A file newer than this build is refused. On failure returns false and sets *error.
    bool open(const QString& path, QString* error = nullptr);
    // For reading only (report, export): SQLite's read-only mode, no migration, no recovery, no write lock
    // ever taken, so it never waits for a writer. A file that is missing, older than this build or not
    // openable read-only is opened with open() instead. A negative or newer schema version is refused.
    bool openReadOnly(const QString& path, QString* error = nullptr);
    // Tests and tools: create or migrate the file only up to `version` (1..kSchemaVersion).
    bool openAtVersion(const QString& path, int version, QString* error = nullptr);
    void close();
    bool isOpen() const;
    // Runs left `running` by an ingesting process on this host that no longer exists (killed mid-ingest)
    // become `aborted`, keeping every committed row. open() does this; returns how many were ended.
    int recoverInterruptedRuns();
    QString path() const;
    QString requestedPath() const { return m_requestedPath; } // the path last given to open, opened or not
    int schemaVersion() const; // PRAGMA user_version of the open file
    QSqlDatabase database() const;
    QString lastError() const;
    // The columns of `table` in the open file, in file order (PRAGMA table_info).
    QStringList tableColumnsInFile(const QString& table) const;

    // --- writing (ingest and import use these; each is its own transaction unless one is open) ---
    // How long one statement waits for another process's write lock (SQLite's busy timeout).
    static constexpr int kBusyTimeoutMs = 30000;
    bool setBusyTimeout(int ms);
    // Whether the last failed statement failed because another connection held a lock (SQLITE_BUSY /
    // SQLITE_LOCKED): worth waiting for, unlike a file that cannot be written.
    bool lastErrorIsBusy() const;
    static bool isBusyError(const QSqlError& e);
    static bool isReadOnlyError(const QSqlError& e);
    // Why a schema version cannot be opened (negative: not ours or damaged; newer: this build is older).
    static QString schemaVersionProblem(int version);
    bool beginWrite(); // BEGIN IMMEDIATE
    bool commitWrite();
    void rollbackWrite();
    bool inWrite() const;

    // Inserts the run's row (id ignored) and returns the new id, 0 on failure.
    qint64 insertRun(const RunRecord& run);
    bool updateRun(const RunRecord& run); // every column, by id
    bool insertIteration(const IterationRow& row);
    bool insertRankPeak(const RankPeak& peak); // replaces an existing (run, rank)
    bool insertPhasePeak(const PhasePeak& peak);
    bool insertMemoryReport(const MemoryReport& report);
    bool insertPeakAttribution(const PeakAttributionRow& row); // replaces an existing (run, rank, phase)
    bool insertMemoryLayout(const MemoryLayoutRow& row); // replaces an existing (run, rank)
    bool setControl(qint64 runId, std::optional<qint64> controlRunId);
    bool deleteRun(qint64 runId); // cascades

    // --- reading ---
    QVector<RunRecord> listRuns(const RunFilter& filter = {}) const;
    std::optional<RunRecord> run(qint64 runId) const;
    QVector<RankPeak> rankPeaks(qint64 runId) const;
    QVector<PhasePeak> phasePeaks(qint64 runId) const;
    QVector<IterationRow> iterations(qint64 runId, int rank = -1) const; // rank -1: all ranks
    QVector<MemoryReport> memoryReports(qint64 runId) const;
    // What held each phase's peak on `rank`: forward, backward, optimizer-init, optimizer (those stored).
    // Empty for runs without attribution (imports, older workers, a file older than v6).
    QVector<PeakAttributionRow> peakAttribution(qint64 runId, int rank = 0) const;
    // The same for many runs at once (every run when `runIds` is empty), by run id.
    QHash<qint64, QVector<PeakAttributionRow>> peakAttributions(
        const QVector<qint64>& runIds, int rank = 0) const;
    // The phase whose peak is the run's highest among `rows` (nullptr when there is none).
    static const PeakAttributionRow* peakPhaseOf(const QVector<PeakAttributionRow>& rows);
    std::optional<MemoryLayoutRow> memoryLayout(qint64 runId, int rank = 0) const;
    int runCount() const;

    // The run's matched control: the stored link if any.
    std::optional<qint64> matchedControl(qint64 runId) const;
    // The newest other run that is matched with `runId` and is itself the explicit [] control.
    std::optional<qint64> findLatestControlFor(qint64 runId) const;
    static MatchCheck matchCheck(const RunRecord& run, const RunRecord& control);
    MatchCheck matchCheck(qint64 runId, qint64 controlRunId) const;
    // The guide's table: the control first, then every run in `runIds` (in order) against it.
    QVector<ComparisonRow> compare(qint64 controlRunId, const QVector<qint64>& runIds) const;
    // The same on records already read (the report reads every run once).
    static QVector<ComparisonRow> compareRecords(const RunRecord& control, const QVector<RunRecord>& runs);
    // The match key of a recipe JSON text ("" for an empty text).
    static QString recipeMatchKey(const QString& recipeJson);

    // --- control links (store_links.cpp): imports compare themselves, and the user can pick a control ---
    // The newest finished run that can be `runId`'s control: matched with it (Store::matchCheck), its shape
    // known on both sides (layers, hidden size, heads, sequence length), recomputing nothing: the explicit
    // [] first, then Megatron's recompute_granularity None.
    std::optional<qint64> findNoRecomputeControlFor(qint64 runId) const;
    struct AutoLink {
        std::optional<qint64> control; // the control `runId` was linked to
        QVector<qint64> linked; // the runs that took `runId` as their control
    };
    // Links `runId` to findNoRecomputeControlFor (when it has no control yet) and, when `runId` itself
    // recomputes nothing, every finished matched run with known shape and no control yet to it: a batch of
    // imports forms one comparison whatever order its files come in. Uses the caller's write if one is
    // open.
    AutoLink autoLinkControl(qint64 runId);
    // The user's choice: `controlRunId` becomes the run's control (empty: unlinked). Refuses a run that is
    // not stored, the run itself, and a loop (the control's chain of controls reaching the run); an
    // unmatched control is allowed (the report flags it NOT MATCHED). On failure sets *error.
    bool linkControl(qint64 runId, std::optional<qint64> controlRunId, QString* error = nullptr);
    // The runs whose control is `controlRunId`, oldest first.
    QVector<qint64> runsControlledBy(qint64 controlRunId) const;

    // A run imported from this file content before? (import provenance, v2)
    std::optional<qint64> runByImportDigest(const QString& sha256Hex) const;
    bool setImportProvenance(
        qint64 runId, const QString& path, const QString& sha256Hex, const QString& format);

    // Seeds the store from the guide's published measurements (resources/sample/guide-measurements.json, or
    // `jsonPath` when given) when it holds no guide runs yet. Returns the number of runs added (0 when
    // already seeded), -1 on error.
    int seedGuideSample(const QString& jsonPath = {}, QString* error = nullptr);
    // Where the sample file is looked for: $RS_SAMPLE_DATA, the studio's compiled-in resource
    // (:/sample/guide-measurements.json), next to the executable (../share/recompute-studio/sample/), the
    // source tree.
    static QString guideSamplePath();

private:
    bool migrate(int targetVersion, QString* error);
    bool setWalMode(QString* error);
    bool backfillMatchKeys(QString* error);
    bool addRegisteredColumns(); // registerIterationColumn's columns a writable file lacks
    bool exec(const QString& sql, QString* error = nullptr);
    QString m_connection;
    QString m_path;
    QString m_requestedPath;
    QString m_lastError;
    bool m_inWrite = false;
    bool m_lastBusy = false;
    std::unique_ptr<QSqlQuery> m_iterationInsert; // prepared once per connection
    void* m_iterationStmt = nullptr; // sqlite3_stmt*, when built with the SQLite headers (fast path)
    QVector<int> m_iterationBound; // iterationColumns() indices the prepared insert binds, in order
};

// A stored run as the guide's comparison (core/comparison.h) reads it: its facts for the match check (the
// full recipe only when `withRecipe`), and the measurements its deltas are computed from.
rs::RunFacts matchFacts(const RunRecord& run, bool withRecipe = true);
rs::MeasuredRun measuredRun(const RunRecord& run);

// The run fields that a recipe determines (shape, precision, parallelism, recompute choice, name, run length,
// the recipe JSON itself), filled from the recipe's JSON (Megatron field names). The hash and the Bridge
// overrides are the ingest's (RunIngest::setRecipe).
void fillFromRecipeJson(RunRecord* run, const QJsonObject& recipe);
// The same from the recipe as the stream and core carry it (RecipeEvent::recipe, recipeToJson).
void fillFromRecipeJson(RunRecord* run, const nlohmann::json& recipe);
// A JSON value as the store keeps JSON text (recipe_json, the findings in notes): QJsonDocument's compact
// form, keys sorted and numbers as Qt writes them (80.0 as 80), the form every stored recipe has. A recipe
// from the stream, one from a log import and one an earlier build stored read, match and hash alike.
QString storedJsonText(const nlohmann::json& value);
// "bf16", "fp16", "fp32", with " fp8 <fp8>/<fp8_recipe>" or " fp4 <fp4>" appended.
QString precisionLabel(const QJsonObject& recipe);

} // namespace rs::storage
