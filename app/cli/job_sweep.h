// SPDX-License-Identifier: Apache-2.0
// The user's own training command, once per recompute choice with the [] control first
// (session::JobSession: each run's output streamed into the log importer, stored, linked to the control),
// as `recompute sweep --job` and `recompute plan --confirm N --job` run it. What the session says is printed
// as "recompute VERB --job: ...".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <QString>
#include <QStringList>
#include <QVector>

#include "core/comparison.h"
#include "core/recipe.h"
#include "core/recipe_input.h"
#include "launch/slurm_job.h"
#include "option_table.h"
#include "session/job_session.h"

namespace rs::storage {
class Store;
}

namespace rs::cli {

struct WorkerOptions;

struct JobSweepSettings {
    QString db;
    std::optional<double> target;
    int iters = 10; // --job-iters
    int repeats = 1, repeatsMax = 0;
    double intervalTargetPct = 2.0;
    QString logDir; // --job-log-dir
    std::vector<std::string> bridgeLauncher; // --job-launcher, split on spaces
    QString sshHost;
    QStringList sshOptions;
    std::optional<rs::launch::SlurmSettings> slurm; // --slurm-*: each run a Slurm batch job
    bool skipByEstimate = true; // --no-skip-by-estimate: false
    bool reuseControl = true, reuseCandidates = true; // --rerun-control, --rerun: false
    std::optional<rs::session::OneRankOfLayout> oneRank; // --one-rank [--rank-of-layout N]
};

// The job options (--job-iters, --job-log-dir, --job-launcher, --one-rank, --rank-of-layout) and where the
// runs go (--db, the ssh and Slurm options already read into `where`). False with *problem naming the option
// and what it allows.
bool readJobOptions(
    const ParsedArgs& args, const WorkerOptions& where, JobSweepSettings* out, std::string* problem);

struct JobSweepResult {
    int exitCode = 2; // 0: every choice measured (and one fits a target when there is one), 1, 2
    std::optional<qint64> controlRunId;
    // Each measured choice's first run, the choice spelled as --modules and the plan spell it.
    std::vector<std::pair<std::string, qint64>> measured;
};

// Runs the session, printing progress on stderr, then the report, the step-time table and, with a
// target, the advice on stdout. `verb`: "sweep" or "plan".
JobSweepResult runJobSweep(const char* verb, const rs::Recipe& base, rs::InputFormat format,
    const std::vector<rs::RecomputeChoice>& choices, const JobSweepSettings& settings);

// The sweep's report of what its estimate kept from running.
QByteArray estimateSkipTable(const QVector<rs::session::EstimateSkip>& skips);

// One stored run as a line: "run 7 (core_attn): completed, peak allocated 13.640 GB, 417.05 ms/step".
QString storedRunLine(const rs::storage::Store& store, qint64 runId);

} // namespace rs::cli
