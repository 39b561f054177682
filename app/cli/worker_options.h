// SPDX-License-Identifier: Apache-2.0
// Where `recompute run` and `recompute sweep` run the worker, read from their options (option_table.cpp):
// this host (--ranks N processes), another over ssh (--host, --ssh-options, --remote-worker), or a Slurm
// batch job (any --slurm-* option: launch::SlurmSettings, checked before anything starts).
#pragma once

#include <optional>
#include <string>

#include <QString>
#include <QStringList>

#include "launch/slurm_job.h"
#include "option_table.h"

namespace rs::cli {

struct WorkerOptions {
    QString workerPath; // empty: WorkerLauncher's search ($RS_WORKER, next to the CLI, build tree, PATH)
    QString device; // passed as --device to the worker when set
    int ranks = 1; // worker processes on this host, data-parallel replicas (LaunchOptions::ranks)
    QString sshHost; // run the worker on this host over ssh (LaunchOptions::sshHost)
    QStringList sshOptions;
    QString remoteWorker;
    std::optional<launch::SlurmSettings> slurm; // a Slurm batch job (LaunchOptions::slurm): --slurm-*
};

// --device, --worker, --ranks, --host, --ssh-options, --remote-worker and --slurm-*: any --slurm-* option
// makes *options->slurm, refused when launch::checkSlurmSettings refuses it. False with *error (empty on
// entry) naming the option and what it allows; --host or --ranks beside a --slurm-* option is one.
bool readWorkerOptions(const ParsedArgs& args, WorkerOptions* options, std::string* error);

// --warmup N (0 or more) and --iters N (1 or more); false with *error (empty on entry).
bool readRunLength(const ParsedArgs& args, std::optional<int>* warmupIters, std::optional<int>* steadyIters,
    std::string* error);

} // namespace rs::cli
