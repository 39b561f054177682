// SPDX-License-Identifier: Apache-2.0
// One Slurm batch job: a batch script written from the host settings, submitted with `sbatch` on this host
// or on a login host over ssh, followed with `squeue` (then `scontrol` / `sacct` once it left the queue),
// cancelled with `scancel`, and each task's output collected as it grows. Used for the worker (its ranks
// read SLURM_PROCID / SLURM_NTASKS) and for a user's own training command alike: the job runs whatever
// argument vector it is given, under `srun`, one output file per task.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <QByteArray>
#include <QMetaType>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

namespace rs::launch {

// What the launch page's "Slurm" host kind and `--slurm-*` options carry.
struct SlurmSettings {
    QString partition; // empty: the cluster's default partition
    int nodes = 1;
    int tasksPerNode = 1; // ranks per node (srun tasks)
    int gpusPerNode = 0; // 0: no --gpus-per-node line
    QString timeLimit; // sbatch --time (e.g. 00:30:00); empty: the partition's default
    QString account; // empty: the user's default account
    QString jobName = QStringLiteral("recompute");
    QStringList extraSbatchLines; // each a whole "#SBATCH --..." line, checked
    // Where the script, the recipe and every task's output live: a folder the compute nodes see (a shared
    // file system on a real cluster). Created if missing.
    QString workDir;
    // A login host: sbatch, squeue, scancel and the output reads run there through the OpenSSH client.
    QString loginHost; // [user@]host; empty: this host
    QStringList sshOptions; // e.g. -p 2222 -i KEY
    int pollIntervalMs = 1000;
};

// Checks the settings as sbatch would take them; "" when fine, else a message naming the field and what is
// allowed (nothing reaches a shell or a command line unchecked).
QString checkSlurmSettings(const SlurmSettings& settings);

// The batch script for `command` (an argument vector, each word quoted for the job's shell). Every task
// writes `<workDir>/task-<jobid>-<task>.out` (stdout) and `.err`; MASTER_ADDR / MASTER_PORT are set from
// the allocation's first node, for programs that rendezvous like torchrun.
QString slurmBatchScript(const SlurmSettings& settings, const QStringList& command);

// One word for a POSIX shell: single-quoted, embedded quotes closed and escaped.
QString shellWord(const QString& word);

// Slurm's final job states, and what a user is told for each.
enum class SlurmOutcome {
    Completed,
    Failed,
    Cancelled,
    TimeLimit,
    NodeFailure,
    OutOfMemory,
    Preempted,
    Rejected,
    Lost
};
const char* slurmOutcomeName(SlurmOutcome outcome);
SlurmOutcome slurmOutcomeFromState(const QString& jobState);
// Why a pending job waits, in words (Slurm's reason codes: Resources, Priority, JobHeldUser, ...).
QString pendingReasonText(const QString& reason);
// What a user is told when SlurmJob::stateChanged says `state` and `reason`: "Slurm job 12 pending: held
// (release it with scontrol release)", "Slurm job 12 running", or squeue's / scancel's failure.
QString slurmStateNote(const QString& jobId, const QString& state, const QString& reason);
// What places a job's tasks and their devices, for deciding whether a stored run measured the same way:
// "slurm partition P, nodes N, tasks per node T, GPUs per node G[, extra #SBATCH lines]" (not the time limit,
// account or folders).
QString slurmAllocationSignature(const SlurmSettings& settings);

class SlurmJob : public QObject {
    Q_OBJECT
public:
    explicit SlurmJob(QObject* parent = nullptr);
    ~SlurmJob() override;

    // Writes the script into workDir and submits it. Returns false with *error when the settings are wrong
    // or sbatch refused the job (its own message, e.g. "Invalid partition name specified").
    bool submit(const SlurmSettings& settings, const QStringList& command, QString* error = nullptr);
    // Writes a file into workDir (locally, or on the login host through ssh's stdin): the recipe a worker
    // job reads. Returns its path there, or "" with *error.
    QString putFile(const SlurmSettings& settings, const QString& name, const QByteArray& contents,
        QString* error = nullptr);
    void cancel(); // scancel; the job then ends Cancelled
    QString jobId() const { return m_jobId; }
    QString state() const { return m_state; } // Slurm's JobState as last seen (PENDING, RUNNING, ...)
    bool isActive() const { return !m_jobId.isEmpty() && !m_done; }
    int tasks() const { return m_settings.nodes * m_settings.tasksPerNode; }
    QString outputPath(int task) const;
    QString batchOutputPath() const; // <workDir>/slurm-<jobid>.out
    QString scriptText() const { return m_script; }

signals:
    void submitted(const QString& jobId);
    // The job's state or its pending reason changed (reason: Slurm's code, e.g. "Resources").
    void stateChanged(const QString& state, const QString& reason);
    // New bytes of one task's stdout (task 0 is rank 0: the worker's stream), in order.
    void taskOutput(int task, const QByteArray& bytes);
    void taskError(int task, const QByteArray& bytes);
    // New bytes of the batch script's own output (slurm-<jobid>.out): srun's and Slurm's messages.
    void batchOutput(const QByteArray& bytes);
    // Once: the final state, the job's exit code (-1 when unknown) and a sentence saying what happened.
    void finished(rs::launch::SlurmOutcome outcome, int exitCode, const QString& message);

private:
    struct Result {
        int exitCode = -1;
        QByteArray out;
        QByteArray err;
    };
    Result runCommand(const QStringList& words, const QByteArray& input = {}, int timeoutMs = 30000) const;
    void poll();
    void readOutputs();
    void conclude();
    void finish(SlurmOutcome outcome, int exitCode, const QString& message);

    SlurmSettings m_settings;
    QString m_jobId;
    QString m_script;
    QString m_state;
    QString m_reason;
    bool m_done = false;
    bool m_cancelRequested = false;
    std::vector<qint64> m_outOffsets;
    std::vector<qint64> m_errOffsets;
    qint64 m_batchOffset = 0;
    QTimer m_timer;
};

} // namespace rs::launch

Q_DECLARE_METATYPE(rs::launch::SlurmOutcome)
