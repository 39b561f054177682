// SPDX-License-Identifier: Apache-2.0
// Runs the worker `recompute-bench` for one recipe and turns its JSON-lines stdout into typed events
// (core/stream.h, each line decoded once, here) with one signal per event kind: on this host as a child
// process (an argument vector, never a shell string; the recipe as a temporary JSON file that lives as long
// as the run), as N local ranks, or on another host through the OpenSSH client (the recipe on ssh's stdin),
// or as a Slurm batch job (slurm_job.h: the recipe written into the settings' work folder, one task per rank,
// task 0's output file read as it grows). RunSession (run_session.h) is the loop above it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <QObject>
#include <QProcess>
#include <QStringList>

#include "core/stream.h"
#include "launch/json_lines.h"
#include "launch/slurm_job.h"

class QTemporaryFile;

namespace rs::launch {

// Where the worker is: $RS_WORKER, else next to the running executable, else in the build tree
// (<exe dir>/../bench/, <exe dir>/../../app/bench/), else `recompute-bench` on PATH. Returns "" when not
// found; *searched (when given) lists the places looked at.
QString findWorker(QStringList* searched = nullptr);

// A loopback port nobody listens on now (bind to port 0, read what the kernel chose, let it go): the ranks'
// rendezvous port. 29500 when no socket can be had.
int freeLoopbackPort();

struct LaunchOptions {
    QString workerPath; // empty: findWorker()
    QStringList extraArguments; // appended after the recipe file (e.g. --device cuda:0)
    QString workingDirectory; // empty: inherit
    QStringList environment; // extra VAR=value entries
    // Ranks on this host (data-parallel replicas, docs/engine.md "Several ranks"): one worker process each,
    // with RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT set as torchrun would; rank 0's
    // stream carries every rank's events, the others' stderr comes through stderrText() prefixed.
    int ranks = 1;
    // A remote GPU host: the worker runs there through the OpenSSH client (`ssh -o BatchMode=yes -T HOST --
    // WORKER - ARGS...`, every word quoted for the remote shell); the recipe travels on ssh's stdin, never on
    // a command line. Keys and host keys are the user's ssh setup (sshOptions adds e.g. -p 2222 -i KEY).
    QString sshHost; // [user@]host; empty: this host
    QStringList sshOptions;
    QString remoteWorker; // the worker's path on that host; empty: recompute-bench on its PATH
    // A Slurm allocation (slurm_job.h): the worker runs as a batch job, submitted on this host or on the
    // settings' login host, its task outputs read as they grow. nullopt: not Slurm (this host or sshHost).
    // The job's tasks are the ranks (nodes x tasksPerNode; `ranks` must then be 1 or that number): srun sets
    // SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID, the batch script MASTER_ADDR / MASTER_PORT. The worker
    // is workerPath or findWorker() on this host (a path the compute nodes see), remoteWorker or
    // recompute-bench on the nodes' PATH with a login host; `environment` is set for it with env(1),
    // workingDirectory is not used (the job runs in the work folder), sshHost must be empty.
    std::optional<SlurmSettings> slurm;
};

// The ranks a launch runs: the Slurm job's tasks, else `ranks`.
int launchRanks(const LaunchOptions& options);

// Checks an ssh destination, [user@]host[:port] (host: a DNS name, IPv4, or [IPv6]); anything else, a
// leading '-' above all, is refused with *error naming the host and the forms allowed. *destination gets
// [user@]host (brackets dropped), *port the port or "".
bool parseSshHost(const QString& host, QString* destination, QString* port, QString* error);

class WorkerLauncher : public QObject {
    Q_OBJECT
public:
    explicit WorkerLauncher(QObject* parent = nullptr);
    ~WorkerLauncher() override; // kills a running worker

    // Starts the worker for this recipe JSON (an object with Megatron field names, core's recipeToJson).
    // Returns false (and sets *error) when the worker cannot be found or the temp file cannot be written; a
    // worker that fails to start reports through finished(aborted = true).
    bool start(const nlohmann::json& recipe, const LaunchOptions& options = {}, QString* error = nullptr);
    // Same, with the recipe file text given as is.
    bool startWithRecipeText(
        const QByteArray& recipeJson, const LaunchOptions& options = {}, QString* error = nullptr);
    // Stops the worker: SIGTERM, then SIGKILL after `graceMs`. The run finishes aborted unless a result
    // arrived first.
    void cancel(int graceMs = 2000);
    bool isRunning() const;
    QStringList lastArguments() const { return m_arguments; } // the argv used (without the program)
    QString workerPath() const { return m_workerPath; }
    qint64 pid() const; // 0 for a Slurm job
    QString slurmJobId() const; // "" unless the run is (or was) a submitted Slurm job
    QString slurmState() const; // Slurm's JobState as last seen, "" when not Slurm

signals:
    void started();
    // Every event, in order, as its type (the store's ingest takes these), then the one for its kind (note,
    // memory_layout, peak_attribution and events this build does not know come through streamEvent only).
    void streamEvent(const rs::stream::Event& event);
    void hello(const rs::stream::Hello& event);
    void recipe(const rs::stream::RecipeEvent& event);
    void phase(const rs::stream::Phase& event);
    void iteration(const rs::stream::Iteration& event);
    void rankSummary(const rs::stream::RankSummary& event);
    void result(const rs::stream::Result& event);
    void stderrText(const QString& text);
    // A sentence about the launch itself (a Slurm job submitted, pending and why, running, its outcome).
    void note(const QString& text);
    // A line that is no event, or whose known key has the wrong type ("iteration event: 'step_ms': expected
    // a number, got \"x\""); it is not dispatched, and the run goes on.
    void malformedLine(const QByteArray& line, const QString& why);
    // Once per start: aborted when the stream ended without `result`, the process crashed or was killed,
    // or it failed to start; `reason` says which. exitCode is -1 for a crash / signal.
    void finished(bool aborted, int exitCode, const QString& reason);

private:
    void onStdout();
    void onStderr();
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);
    void dispatch(const stream::Event& e);
    void emitFinished(bool aborted, int exitCode, const QString& reason);
    void stopPeers(int graceMs, bool terminateNow);
    bool startSlurm(const QByteArray& recipeJson, const LaunchOptions& options, QString* error);
    void feedStdout(const QByteArray& bytes);
    void drainReader();
    void onSlurmFinished(SlurmOutcome outcome, int exitCode, const QString& message);

    std::unique_ptr<QProcess> m_process; // rank 0
    std::vector<std::unique_ptr<QProcess>> m_peers; // ranks 1..N-1
    std::unique_ptr<QTemporaryFile> m_recipeFile;
    JsonLinesReader m_reader;
    QString m_workerPath;
    QStringList m_arguments;
    bool m_gotResult = false;
    bool m_cancelled = false;
    bool m_finishedEmitted = false;
    QString m_sshHost; // non-empty while the run is remote
    QString m_lastStderr; // the last stderr text, to name why ssh gave up
    std::unique_ptr<SlurmJob> m_job; // the Slurm job, when the run is one
    bool m_slurmActive = false; // submitted (or refused) and finished() not yet emitted
    std::map<int, QByteArray> m_partialErr; // per task (-1: the batch output), a line not yet ended
};

} // namespace rs::launch
