// SPDX-License-Identifier: Apache-2.0
// Real-job sweeps (issue 15): the user's own training command (a Megatron-LM `torchrun … pretrain_gpt.py
// --flags…` line, or a Megatron Bridge `… run_recipe.py … KEY=VALUE…` line) run once per recompute choice.
//
// jobCommand writes one choice into the command in the command's own syntax, through core's writers
// (recipeToMegatronCommand / recipeToBridgeOverrides), for a short run: the [] control (Megatron-LM cannot
// say selective with recompute_modules=[] (megatron-rules.md (i)): its control is recompute off, Megatron's
// recompute_granularity None; Bridge's is the explicit model.recompute_modules=[]), or the control with one
// RecomputeChoice set (--recompute-granularity / --recompute-modules / --recompute-method /
// --recompute-num-layers, or model.recompute_*), then the short-run settings: --train-iters N
// --log-interval 1 and, where the profile's arguments.py has it, --log-memory-interval 1 (the memory line
// every iteration: the per-rank peaks); Bridge: train.train_iters=N logger.log_interval=1. The user's own
// values of these are replaced, every other word is the user's.
//
// JobRun runs one such command as a child process (locally, or over ssh as WorkerLauncher does:
// `ssh -o BatchMode=yes -T HOST -- 'word' 'word'…`), stdout and stderr merged as a log is, every line
// written to a log file as it arrives and fed to the Megatron-LM log importer's incremental parser
// (storage::TrainingLogStream), which gives each iteration as its line arrives. At the end the log file
// is what `recompute import` stores (storage::importTrainingLog), so a real-job run and an imported log
// are one kind of run. It lives in rs_session (it needs the store's parser).
//
// With JobOptions::slurm the command is a Slurm batch job instead (slurm_job.h: the batch script from the
// host settings, sbatch on this host or on the login host over ssh, followed with squeue / scontrol / sacct,
// scancel on cancel()): every task's stdout and stderr and the script's own output are read as they grow,
// and their whole lines go into the log and the parser as they come (a line is never cut by another
// task's). Slurm's word on the job (submitted, pending and why, running, its end: rejected and why,
// cancelled, node failure, time limit) arrives as note() and is kept in the log as "# slurm: ..." lines.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QByteArray>
#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QProcess>
#include <QStringList>

#include "core/comparison.h"
#include "core/recipe.h"
#include "launch/slurm_job.h"
#include "storage/log_import.h"

namespace rs::session {

// One rank of the job's parallel layout on this one GPU (issue 28): Megatron-LM's --fake-process-group
// builds and trains that rank's own share of the model with real tensors and the real allocator, every
// collective skipped, so one GPU measures the real code's memory and compute for a layout of many. NCCL's
// buffers and the communication time are not in it.
struct OneRankOfLayout {
    std::optional<int> rank; // a global rank of the layout; nullopt: the hottest, as the estimate names it
};

// The rank a one-rank run runs: its global rank, the layout's world and its pipeline stage.
struct LayoutRankChoice {
    int rank = 0, world = 1, stage = 0;
    bool hottest = false; // chosen by the estimate
    // MoE tokens cross ranks (expert-TP x EP > 1): the skipped all-to-all would leave the received token
    // counts unset, so the run fills the skipped collectives as if every rank held this rank's tensors
    // (resources/megatron/symmetric_ranks.py): the rank receives world x its own routing's share.
    bool symmetricCollectives = false;
};
// Throws std::invalid_argument saying why the job cannot run as one rank: not a Megatron-LM command
// (Megatron Bridge 067f987d has no fake process group), a rank outside the layout, or a profile whose
// Megatron-LM has no --fake-process-group.
LayoutRankChoice layoutRankChoice(const Recipe& recipe, InputFormat format, const OneRankOfLayout& oneRank);

struct ShortRun {
    int trainIters = 10; // --train-iters / train.train_iters: warm-up (optimizer-state init) + steady
    // Set: the command runs one rank of its layout as one process (`env RANK=r WORLD_SIZE=W LOCAL_RANK=0
    // python3 pretrain_gpt.py ... --fake-process-group`): a distributed launcher (torchrun, `python -m
    // torch.distributed.run`, srun, mpirun) gives way to its Python; other words before the script stay.
    // With symmetric collectives Python first runs the shim (`python3 -c CODE pretrain_gpt.py ...`).
    std::optional<OneRankOfLayout> oneRank = {};
};

// The command as the sweep and the launch page show it: the symmetric-ranks bootstrap (5 KB of base64 after
// python3 -c) named instead of spelled out; the run's log keeps the whole command.
QStringList commandForDisplay(const QStringList& command);

// The command for one choice (nullopt: the [] control). Throws RecipeError (from core's writers) or
// std::invalid_argument: a Megatron-LM recipe without its launch command, a Bridge one without a launcher.
// `bridgeLauncher`: the words before the overrides (`torchrun --nproc-per-node 8
// scripts/training/run_recipe.py --recipe llama3_8b_pretrain_config`).
std::vector<std::string> jobCommand(const Recipe& recipe, InputFormat format,
    const std::optional<RecomputeChoice>& choice, const ShortRun& run,
    const std::vector<std::string>& bridgeLauncher = {});
// The recipe the command for that choice trains (its recompute fields and train_iters), for the match
// check, the labels and the estimate beside the run.
Recipe jobRecipe(const Recipe& recipe, InputFormat format, const std::optional<RecomputeChoice>& choice);
// The job log's first line, "# command: WORD WORD…\n": each word as the shell reads it, one with a control
// character (a newline in a flag's value) in bash's $'…' form, so the line is one line whatever the words
// hold and the job's own output, read back by the importer, starts after it (fuzz/fuzz_job_log.cpp).
QByteArray jobLogCommandLine(const std::vector<std::string>& command);

struct JobOptions {
    QString workingDirectory; // empty: inherit
    QStringList environment; // extra VAR=value entries
    QString sshHost; // [user@]host: run there through the OpenSSH client; empty: this host
    QStringList sshOptions;
    // A Slurm batch job (its login host, if any, is the settings'); sshHost must then be empty. The
    // working directory and the environment reach the job through `env -C DIR VAR=value ...`.
    std::optional<launch::SlurmSettings> slurm;
};

// How a job run was launched, for deciding whether a stored one measured the same way: the exact command
// (its words quoted), the working directory and environment given, and where it ran (this host, the ssh
// host, or the Slurm allocation: slurmAllocationSignature, and the login host).
QString jobSignature(const std::vector<std::string>& command, const JobOptions& options);

class JobRun : public QObject {
    Q_OBJECT
public:
    explicit JobRun(QObject* parent = nullptr);
    ~JobRun() override; // kills a running job

    // Starts `command` (argv, never a shell string), its output going to `logPath` (which starts with a
    // "# command: …" line). False, with *error, when the log file cannot be written or the command is empty;
    // a program that fails to start reports through finished(aborted = true).
    bool start(const std::vector<std::string>& command, const QString& logPath,
        const JobOptions& options = {}, QString* error = nullptr);
    void cancel(int graceMs = 5000);
    bool isRunning() const;
    // Where the log is: logPath as given, or, when its folder stopped taking bytes (a full disk), the folder
    // it moved to (the user's data folder's job-logs/, else the temp folder), every byte so far with it;
    // empty when no folder took it (logFailures() says why).
    QString logPath() const { return m_logPath; }
    QStringList logFailures() const { return m_logFailures; }
    // Every iteration so far (the incremental parser's), in order of arrival.
    const QVector<storage::IterationRow>& iterations() const { return m_stream->iterations(); }
    // Every memory line so far (Megatron's per-rank "memory (MB)" report), in order of arrival.
    const QVector<storage::MemoryReport>& memoryReports() const { return m_stream->memory(); }
    // The whole log as parsed, once finished() was emitted.
    const storage::ParsedLog& parsed() const { return m_parsed; }
    QStringList lastArguments() const { return m_arguments; } // the argv run (ssh's when over ssh)
    QString program() const { return m_program; } // "sbatch" for a Slurm job
    QString slurmJobId() const { return m_slurm ? m_slurm->jobId() : QString(); }
    QString slurmState() const { return m_slurm ? m_slurm->state() : QString(); }

signals:
    void started();
    void line(const QString& text); // every line of the job's output, as it arrives
    // A sentence about the launch itself: a Slurm job submitted, pending and why, running, how it ended.
    void note(const QString& text);
    void iteration(const storage::IterationRow& row); // an iteration line, parsed as it arrived
    // aborted: killed, crashed, failed to start, or exit code != 0; `reason` says which.
    void finished(bool aborted, int exitCode, const QString& reason);

private:
    bool startSlurm(const QStringList& words, const JobOptions& options);
    void onOutput();
    // Bytes of one of a Slurm job's outputs (key: 2 x task (+1 for stderr), -1 the batch script's): its
    // whole lines are taken; flush: the rest too, ended by a line break.
    void onSlurmBytes(int key, const QByteArray& bytes, bool flush = false);
    void takeBytes(const QByteArray& bytes); // into the log, the line signal and the parser
    void writeNote(const QString& text); // note(), and a "# slurm: " line in the log
    // Into the log, checked: a write or flush that fails moves the whole log (kept in memory) to the next
    // folder that takes it, and says so.
    void writeLog(const QByteArray& bytes);
    bool moveLog(const QString& why);
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);
    void end(bool aborted, int exitCode, const QString& reason);

    std::unique_ptr<QProcess> m_process;
    std::unique_ptr<launch::SlurmJob> m_slurm;
    std::map<int, QByteArray> m_slurmPartial;
    bool m_slurmActive = false;
    std::unique_ptr<storage::TrainingLogStream> m_stream;
    storage::ParsedLog m_parsed;
    QFile m_log;
    QByteArray m_logBytes; // everything written to the log, for a move to another folder
    QStringList m_logFailures;
    int m_logFolder = 0; // 0: the folder asked for; 1: the data folder's job-logs; 2: the temp folder
    QString m_logPath, m_program;
    QStringList m_arguments;
    QByteArray m_partial;
    bool m_cancelled = false;
    bool m_done = false;
};

} // namespace rs::session
