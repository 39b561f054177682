// SPDX-License-Identifier: Apache-2.0
#include "worker_options.h"

#include <algorithm>

#include <QProcess>

namespace rs::cli {

bool readWorkerOptions(const ParsedArgs& args, WorkerOptions* options, std::string* error)
{
    options->device = QString::fromStdString(args.value("device"));
    options->workerPath = QString::fromStdString(args.value("worker"));
    options->sshHost = QString::fromStdString(args.value("host"));
    options->sshOptions = QProcess::splitCommand(QString::fromStdString(args.value("ssh-options")));
    options->remoteWorker = QString::fromStdString(args.value("remote-worker"));
    if (const auto ranks = intOption(args, "ranks", 1, error))
        options->ranks = *ranks;
    else if (!error->empty())
        return false;

    // Any --slurm-* option makes the worker a Slurm batch job.
    const auto firstSlurm = std::find_if(
        args.order.begin(), args.order.end(), [](const std::string& o) { return o.rfind("slurm-", 0) == 0; });
    if (firstSlurm == args.order.end())
        return true;
    const std::string slurm = "--" + *firstSlurm;
    if (args.has("host")) {
        *error = "--host and " + slurm
            + " exclude each other: the worker runs on --host over ssh, or as a Slurm job "
              "(--slurm-login-host "
              "submits it over ssh)";
        return false;
    }
    if (args.has("ranks")) {
        *error = "--ranks and " + slurm
            + " exclude each other: a Slurm job's ranks are --slurm-nodes x --slurm-tasks-per-node";
        return false;
    }
    launch::SlurmSettings s;
    auto integer = [&](const char* option, int* field) {
        if (!args.has(option))
            return true;
        bool ok = false;
        const int n = QString::fromStdString(args.value(option)).toInt(&ok);
        if (!ok) {
            *error = std::string("--") + option + ": '" + args.value(option) + "' is not an integer";
            return false;
        }
        *field = n;
        return true;
    };
    if (!integer("slurm-nodes", &s.nodes) || !integer("slurm-tasks-per-node", &s.tasksPerNode)
        || !integer("slurm-gpus-per-node", &s.gpusPerNode))
        return false;
    s.partition = QString::fromStdString(args.value("slurm-partition"));
    s.timeLimit = QString::fromStdString(args.value("slurm-time"));
    s.account = QString::fromStdString(args.value("slurm-account"));
    for (const auto& line : args.all("slurm-sbatch"))
        s.extraSbatchLines << QString::fromStdString(line);
    s.workDir = QString::fromStdString(args.value("slurm-workdir"));
    s.loginHost = QString::fromStdString(args.value("slurm-login-host"));
    for (const auto& o : args.all("slurm-ssh-option"))
        s.sshOptions << QProcess::splitCommand(QString::fromStdString(o));
    if (const QString problem = launch::checkSlurmSettings(s); !problem.isEmpty()) {
        *error = "Slurm settings refused (" + slurm + "...): " + problem.toStdString();
        return false;
    }
    options->slurm = s;
    return true;
}

bool readRunLength(const ParsedArgs& args, std::optional<int>* warmupIters, std::optional<int>* steadyIters,
    std::string* error)
{
    *warmupIters = intOption(args, "warmup", 0, error);
    if (!error->empty())
        return false;
    *steadyIters = intOption(args, "iters", 1, error);
    if (!error->empty())
        return false;
    // The worker's bound (engine/runner.h kMaxIterations: 1,000,000 each), so warm-up plus steady never
    // overflows the recipe's train_iters.
    for (const auto& [name, n] :
        { std::pair { "warmup", *warmupIters }, std::pair { "iters", *steadyIters } })
        if (n && *n > 1000000)
            *error = std::string("--") + name + ": " + std::to_string(*n)
                + " is out of range (at most 1000000 iterations)";
    return error->empty();
}

} // namespace rs::cli
