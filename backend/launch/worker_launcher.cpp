// SPDX-License-Identifier: Apache-2.0
#include "launch/worker_launcher.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QPointer>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryFile>
#include <QTimer>

#include "core/stream.h"
#include "launch/log.h"

using namespace Qt::StringLiterals;

namespace rs::launch {

static const QString kWorkerName = u"recompute-bench"_s;

int launchRanks(const LaunchOptions& options)
{
    return options.slurm ? options.slurm->nodes * options.slurm->tasksPerNode : options.ranks;
}

int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 29500;
    sockaddr_in a {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 29500;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0
        && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

QString findWorker(QStringList* searched)
{
    auto executable = [](const QString& path) {
        const QFileInfo info(path);
        return info.isFile() && info.isExecutable();
    };
    auto look = [&](const QString& path) {
        if (searched)
            *searched << path;
        return executable(path);
    };
    const QString env = qEnvironmentVariable("RS_WORKER");
    if (!env.isEmpty())
        return look(env) ? QFileInfo(env).absoluteFilePath() : QString();
    const QString appDir = QCoreApplication::applicationDirPath();
    if (!appDir.isEmpty()) {
        // Installed side by side; then the build tree: <build>/app/cli/recompute,
        // <build>/app/bench/recompute-bench, and tests under <build>/tests/<lib>/.
        const QStringList candidates = {
            appDir + u'/' + kWorkerName,
            appDir + u"/../bench/"_s + kWorkerName,
            appDir + u"/../app/bench/"_s + kWorkerName,
            appDir + u"/../../app/bench/"_s + kWorkerName,
        };
        for (const QString& c : candidates) {
            if (look(c))
                return QFileInfo(c).absoluteFilePath();
        }
    }
    const QString onPath = QStandardPaths::findExecutable(kWorkerName);
    if (searched)
        *searched << u"PATH"_s;
    return onPath;
}

// One word for a POSIX shell on the remote host: single-quoted, with embedded quotes closed and escaped.
static QString remoteShellWord(const QString& word)
{
    QString quoted = word;
    quoted.replace(u'\'', u"'\\''"_s);
    return u'\'' + quoted + u'\'';
}

WorkerLauncher::WorkerLauncher(QObject* parent)
    : QObject(parent)
{
}

WorkerLauncher::~WorkerLauncher()
{
    // A job left behind would hold its nodes: it is cancelled with the launcher.
    if (m_job && m_job->isActive()) {
        m_job->disconnect(this);
        m_job->cancel();
    }
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(2000);
    }
    for (auto& peer : m_peers) {
        if (peer->state() != QProcess::NotRunning) {
            peer->disconnect(this);
            peer->kill();
            peer->waitForFinished(2000);
        }
    }
}

bool parseSshHost(const QString& host, QString* destination, QString* port, QString* error)
{
    // [user@]host[:port], host a DNS name, an IPv4 address or a bracketed IPv6 address ([::1]:2222).
    // Anchored at both ends (\z, not $: "host\n" must not pass).
    static const QRegularExpression form(QRegularExpression::anchoredPattern(
        uR"((?:([A-Za-z0-9._][A-Za-z0-9._-]{0,63})@)?)"
        uR"(([A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\]))"
        uR"((?::([0-9]{1,5}))?)"_s));
    const auto m = form.match(host);
    const auto bad = [&](const QString& why) {
        if (error)
            *error = u"--host '%1': %2; expected [user@]host[:port] (a user and a host of letters, digits, "
                     "'.', '-', '_', not starting with '-'; a port 1-65535)"_s.arg(host, why);
        return false;
    };
    if (host.isEmpty())
        return bad(u"empty"_s);
    if (host.startsWith(u'-'))
        return bad(u"starts with '-', which ssh would read as an option"_s);
    if (!m.hasMatch())
        return bad(u"not a host name"_s);
    const QString portText = m.captured(3);
    if (!portText.isEmpty()) {
        const int p = portText.toInt();
        if (p < 1 || p > 65535)
            return bad(u"port %1 is out of range"_s.arg(portText));
    }
    QString hostPart = m.captured(2);
    if (hostPart.startsWith(u'['))
        hostPart = hostPart.mid(1, hostPart.size() - 2);
    if (destination)
        *destination = m.captured(1).isEmpty() ? hostPart : m.captured(1) + u'@' + hostPart;
    if (port)
        *port = portText;
    return true;
}

bool WorkerLauncher::start(const nlohmann::json& recipe, const LaunchOptions& options, QString* error)
{
    return startWithRecipeText(
        QByteArray::fromStdString(recipe.dump(4, ' ', false, nlohmann::json::error_handler_t::replace))
            + '\n',
        options, error);
}

bool WorkerLauncher::startWithRecipeText(
    const QByteArray& recipeJson, const LaunchOptions& options, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (isRunning())
        return fail(u"a worker is already running"_s);
    if (options.ranks < 1)
        return fail(u"ranks: %1; at least 1"_s.arg(options.ranks));
    if (options.slurm)
        return startSlurm(recipeJson, options, error);
    m_job.reset();
    m_sshHost = options.sshHost;
    m_lastStderr.clear();
    QString program;
    if (!m_sshHost.isEmpty()) {
        if (options.ranks > 1)
            return fail(u"ranks: %1 on the remote host %2: start several ranks there with torchrun or srun "
                        "(the worker reads their variables)"_s.arg(options.ranks)
                            .arg(m_sshHost));
        // The host reaches ssh as its destination, never as an option ("-oProxyCommand=..."): checked,
        // and placed after "--".
        QString destination, port, why;
        if (!parseSshHost(m_sshHost, &destination, &port, &why))
            return fail(why);
        program = QStandardPaths::findExecutable(u"ssh"_s);
        if (program.isEmpty())
            return fail(u"ssh not found on PATH: install the OpenSSH client (openssh-client)"_s);
        const QString remote = options.remoteWorker.isEmpty() ? kWorkerName : options.remoteWorker;
        m_workerPath = m_sshHost + u':' + remote;
        m_recipeFile.reset();
        m_arguments = options.sshOptions;
        m_arguments << u"-o"_s << u"BatchMode=yes"_s << u"-T"_s;
        if (!port.isEmpty())
            m_arguments << u"-p"_s << port;
        m_arguments << u"--"_s << destination << remoteShellWord(remote) << remoteShellWord(u"-"_s);
        for (const QString& a : options.extraArguments)
            m_arguments << remoteShellWord(a);
    } else {
        QStringList searched;
        m_workerPath = options.workerPath.isEmpty() ? findWorker(&searched) : options.workerPath;
        if (m_workerPath.isEmpty())
            return fail(u"recompute-bench not found; set RS_WORKER to its path (looked at: %1)"_s.arg(
                searched.join(u", "_s)));
        program = m_workerPath;
        m_recipeFile
            = std::make_unique<QTemporaryFile>(QDir::tempPath() + u"/recompute-recipe-XXXXXX.json"_s);
        if (!m_recipeFile->open() || m_recipeFile->write(recipeJson) != recipeJson.size()
            || !m_recipeFile->flush())
            return fail(u"cannot write the recipe to a temporary file: "_s + m_recipeFile->errorString());
        m_recipeFile->close();
        m_arguments = QStringList { m_recipeFile->fileName() } + options.extraArguments;
    }

    m_reader = JsonLinesReader();
    m_gotResult = false;
    m_cancelled = false;
    m_finishedEmitted = false;

    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& kv : options.environment) {
        const qsizetype eq = kv.indexOf(u'=');
        if (eq > 0)
            env.insert(kv.left(eq), kv.mid(eq + 1));
    }
    const int port = options.ranks > 1 ? freeLoopbackPort() : 0;
    const auto rankEnvironment = [&](int rank) {
        QProcessEnvironment e = env;
        if (options.ranks > 1) {
            e.insert(u"RANK"_s, QString::number(rank));
            e.insert(u"LOCAL_RANK"_s, QString::number(rank));
            e.insert(u"WORLD_SIZE"_s, QString::number(options.ranks));
            e.insert(u"MASTER_ADDR"_s, u"127.0.0.1"_s);
            e.insert(u"MASTER_PORT"_s, QString::number(port));
        }
        return e;
    };

    // The previous run's other ranks end right after its rank 0 (they only wait for the last gather).
    for (auto& peer : m_peers) {
        if (peer->state() != QProcess::NotRunning && !peer->waitForFinished(5000)) {
            peer->kill();
            peer->waitForFinished(2000);
        }
    }
    m_peers.clear();
    m_process = std::make_unique<QProcess>();
    m_process->setProgram(program);
    m_process->setArguments(m_arguments);
    if (!options.workingDirectory.isEmpty())
        m_process->setWorkingDirectory(options.workingDirectory);
    m_process->setProcessEnvironment(rankEnvironment(0));
    m_process->setProcessChannelMode(QProcess::SeparateChannels);
    connect(m_process.get(), &QProcess::readyReadStandardOutput, this, &WorkerLauncher::onStdout);
    connect(m_process.get(), &QProcess::readyReadStandardError, this, &WorkerLauncher::onStderr);
    connect(m_process.get(), &QProcess::finished, this, &WorkerLauncher::onFinished);
    connect(m_process.get(), &QProcess::errorOccurred, this, &WorkerLauncher::onError);
    connect(m_process.get(), &QProcess::started, this, &WorkerLauncher::started);
    qCDebug(lcLaunch) << "starting" << m_process->program() << m_process->arguments();
    if (m_sshHost.isEmpty()) {
        m_process->start(QIODevice::ReadOnly);
    } else {
        // The recipe on stdin, buffered until ssh has started, then end of input.
        m_process->start(QIODevice::ReadWrite);
        m_process->write(recipeJson);
        m_process->closeWriteChannel();
    }

    for (int rank = 1; rank < options.ranks; ++rank) {
        auto peer = std::make_unique<QProcess>();
        peer->setProgram(m_workerPath);
        peer->setArguments(m_arguments);
        if (!options.workingDirectory.isEmpty())
            peer->setWorkingDirectory(options.workingDirectory);
        peer->setProcessEnvironment(rankEnvironment(rank));
        peer->setStandardOutputFile(QProcess::nullDevice()); // rank 0 writes the stream for all
        QProcess* raw = peer.get();
        connect(raw, &QProcess::readyReadStandardError, this, [this, raw, rank] {
            const QByteArray bytes = raw->readAllStandardError();
            if (!bytes.isEmpty())
                emit stderrText(u"rank %1: "_s.arg(rank) + QString::fromLocal8Bit(bytes));
        });
        peer->start(QIODevice::ReadOnly);
        m_peers.push_back(std::move(peer));
    }
    return true;
}

void WorkerLauncher::stopPeers(int graceMs, bool terminateNow)
{
    for (auto& peer : m_peers) {
        if (peer->state() == QProcess::NotRunning)
            continue;
        if (terminateNow)
            peer->terminate();
        QPointer<QProcess> p = peer.get();
        QTimer::singleShot(graceMs, this, [p] {
            if (p && p->state() != QProcess::NotRunning)
                p->kill();
        });
    }
}

void WorkerLauncher::cancel(int graceMs)
{
    if (!isRunning())
        return;
    if (m_slurmActive) {
        // scancel: Slurm signals every task; the job's end arrives through the poll.
        m_cancelled = true;
        if (m_job && m_job->isActive())
            m_job->cancel();
        return;
    }
    m_cancelled = true;
    m_process->terminate();
    stopPeers(graceMs, true);
    QPointer<QProcess> process = m_process.get();
    QTimer::singleShot(graceMs, this, [process] {
        if (process && process->state() != QProcess::NotRunning)
            process->kill();
    });
}

bool WorkerLauncher::isRunning() const
{
    return m_slurmActive || (m_process && m_process->state() != QProcess::NotRunning);
}

qint64 WorkerLauncher::pid() const
{
    return m_process ? m_process->processId() : 0;
}

QString WorkerLauncher::slurmJobId() const
{
    return m_job ? m_job->jobId() : QString();
}

QString WorkerLauncher::slurmState() const
{
    return m_job ? m_job->state() : QString();
}

void WorkerLauncher::feedStdout(const QByteArray& bytes)
{
    const auto events = m_reader.feed(bytes);
    for (const auto& e : events)
        dispatch(e);
    for (const auto& bad : m_reader.takeMalformed())
        emit malformedLine(bad.line, bad.why);
}

void WorkerLauncher::drainReader()
{
    for (const auto& e : m_reader.finish())
        dispatch(e);
    for (const auto& bad : m_reader.takeMalformed())
        emit malformedLine(bad.line, bad.why);
}

void WorkerLauncher::onStdout()
{
    feedStdout(m_process->readAllStandardOutput());
}

void WorkerLauncher::onStderr()
{
    const QByteArray bytes = m_process->readAllStandardError();
    if (!bytes.isEmpty()) {
        const QString text = QString::fromLocal8Bit(bytes);
        m_lastStderr = text.trimmed().split(u'\n').last();
        emit stderrText(text);
    }
}

void WorkerLauncher::dispatch(const stream::Event& e)
{
    // Decoded by the reader (core/stream.h): a line that did not read as its event came as malformedLine.
    using stream::EventKind;
    const EventKind kind = stream::kindOf(e);
    if (kind == EventKind::Result)
        m_gotResult = true;
    emit streamEvent(e);
    switch (kind) {
    case EventKind::Hello:
        emit hello(std::get<stream::Hello>(e));
        break;
    case EventKind::Recipe:
        emit recipe(std::get<stream::RecipeEvent>(e));
        break;
    case EventKind::Phase:
        emit phase(std::get<stream::Phase>(e));
        break;
    case EventKind::Iteration:
        emit iteration(std::get<stream::Iteration>(e));
        break;
    case EventKind::RankSummary:
        emit rankSummary(std::get<stream::RankSummary>(e));
        break;
    case EventKind::Result:
        emit result(std::get<stream::Result>(e));
        break;
    case EventKind::Note:
    case EventKind::MemoryLayout:
    case EventKind::PeakAttribution:
    case EventKind::Unknown:
        break; // through streamEvent() only
    }
}

void WorkerLauncher::onFinished(int exitCode, QProcess::ExitStatus status)
{
    // The other ranks end on their own once rank 0 is done (or has told them it failed); any left after
    // a short grace are stopped, so no rank outlives the run.
    stopPeers(5000, false);
    // Drain what is left, including a last line without '\n'.
    onStdout();
    onStderr();
    drainReader();
    if (status == QProcess::CrashExit) {
        const QString why = m_cancelled ? u"cancelled: the worker was stopped"_s
                                        : u"the worker crashed or was killed by a signal"_s;
        emitFinished(!m_gotResult, -1, why);
        return;
    }
    if (!m_gotResult) {
        // ssh's own failures (unreachable host, refused key, unknown host key) exit 255.
        const bool sshFailed = !m_sshHost.isEmpty() && exitCode == 255;
        emitFinished(true, exitCode,
            m_cancelled     ? u"cancelled: the worker was stopped"_s
                : sshFailed ? u"ssh to %1 failed (exit 255): %2"_s.arg(m_sshHost, m_lastStderr)
                            : u"the worker exited with code %1 without a result"_s.arg(exitCode));
        return;
    }
    emitFinished(
        false, exitCode, exitCode == 0 ? QString() : u"the worker exited with code %1"_s.arg(exitCode));
}

void WorkerLauncher::onError(QProcess::ProcessError error)
{
    if (error == QProcess::FailedToStart)
        emitFinished(true, -1, u"cannot start %1: %2"_s.arg(m_workerPath, m_process->errorString()));
}

void WorkerLauncher::emitFinished(bool aborted, int exitCode, const QString& reason)
{
    if (m_finishedEmitted)
        return;
    m_finishedEmitted = true;
    m_slurmActive = false;
    qCDebug(lcLaunch) << "finished: aborted" << aborted << "exit code" << exitCode << reason;
    emit finished(aborted, exitCode, reason);
}

bool WorkerLauncher::startSlurm(const QByteArray& recipeJson, const LaunchOptions& options, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    const SlurmSettings& s = *options.slurm;
    if (const QString problem = checkSlurmSettings(s); !problem.isEmpty())
        return fail(u"Slurm settings: "_s + problem);
    const int tasks = s.nodes * s.tasksPerNode;
    if (options.ranks != 1 && options.ranks != tasks)
        return fail(u"ranks: %1, but the Slurm job runs %2 tasks (%3 node(s) x %4 tasks per node); a job's "
                    "ranks are its tasks"_s.arg(options.ranks)
                        .arg(tasks)
                        .arg(s.nodes)
                        .arg(s.tasksPerNode));
    if (!options.sshHost.isEmpty())
        return fail(
            u"ssh host %1 and a Slurm job at once: give the host as the Slurm settings' login host"_s.arg(
                options.sshHost));
    QString worker;
    if (s.loginHost.isEmpty()) {
        QStringList searched;
        worker = options.workerPath.isEmpty() ? findWorker(&searched) : options.workerPath;
        if (worker.isEmpty())
            return fail(u"recompute-bench not found; set RS_WORKER to its path (looked at: %1)"_s.arg(
                searched.join(u", "_s)));
        worker = QFileInfo(worker).absoluteFilePath();
    } else {
        worker = options.remoteWorker.isEmpty() ? kWorkerName : options.remoteWorker;
    }

    if (m_process && m_process->state() != QProcess::NotRunning)
        return fail(u"a worker is already running"_s);
    m_process.reset();
    m_peers.clear();
    m_recipeFile.reset();
    m_sshHost.clear();
    m_lastStderr.clear();
    m_partialErr.clear();
    m_reader = JsonLinesReader();
    m_gotResult = false;
    m_cancelled = false;
    m_finishedEmitted = false;

    m_job = std::make_unique<SlurmJob>();
    SlurmJob* job = m_job.get();
    connect(job, &SlurmJob::submitted, this, [this, s](const QString& id) {
        emit started();
        emit note(u"Slurm job %1 submitted%2: %3 node(s) x %4 task(s)%5, output in %6"_s
                      .arg(id, s.loginHost.isEmpty() ? QString() : u" on "_s + s.loginHost)
                      .arg(s.nodes)
                      .arg(s.tasksPerNode)
                      .arg(s.partition.isEmpty() ? QString() : u", partition "_s + s.partition, s.workDir));
    });
    connect(job, &SlurmJob::stateChanged, this, [this, job](const QString& state, const QString& reason) {
        emit note(slurmStateNote(job->jobId(), state, reason));
    });
    connect(job, &SlurmJob::taskOutput, this, [this](int task, const QByteArray& bytes) {
        if (task == 0) // rank 0 writes the stream for every rank
            feedStdout(bytes);
    });
    const auto passLines = [this](int task, const QByteArray& bytes, bool flush) {
        QByteArray& pending = m_partialErr[task];
        pending += bytes;
        const qsizetype end = flush ? pending.size() : pending.lastIndexOf('\n') + 1;
        if (end <= 0)
            return;
        const QString text = QString::fromLocal8Bit(pending.left(end));
        pending.remove(0, end);
        QString out;
        for (const QString& line : text.split(u'\n', Qt::SkipEmptyParts))
            out += (task < 0           ? u"slurm: "_s
                           : task == 0 ? QString()
                                       : u"task %1: "_s.arg(task))
                + line + u'\n';
        if (out.isEmpty())
            return;
        m_lastStderr = out.trimmed().split(u'\n').last();
        emit stderrText(out);
    };
    connect(job, &SlurmJob::taskError, this,
        [passLines](int task, const QByteArray& bytes) { passLines(task, bytes, false); });
    connect(job, &SlurmJob::batchOutput, this,
        [passLines](const QByteArray& bytes) { passLines(-1, bytes, false); });
    connect(job, &SlurmJob::finished, this,
        [this, passLines](SlurmOutcome outcome, int exitCode, const QString& message) {
            for (auto& [task, bytes] : m_partialErr) {
                if (!bytes.isEmpty())
                    passLines(task, {}, true);
            }
            // From the event loop: the job may end inside submit() or cancel(), before they return.
            QTimer::singleShot(
                0, this, [this, outcome, exitCode, message] { onSlurmFinished(outcome, exitCode, message); });
        });

    const QString name
        = u"recipe-%1-%2.json"_s.arg(QDateTime::currentDateTimeUtc().toString(u"yyyyMMdd-HHmmss-zzz"_s))
              .arg(QRandomGenerator::global()->bounded(1000000));
    QString why;
    const QString recipePath = job->putFile(s, name, recipeJson, &why);
    if (recipePath.isEmpty()) {
        m_job.reset();
        return fail(why);
    }
    // The job's tasks take their rank from srun (SLURM_PROCID ...), not from torchrun variables the
    // submitting shell may have exported into the job.
    QStringList command
        = { u"env"_s, u"-u"_s, u"RANK"_s, u"-u"_s, u"WORLD_SIZE"_s, u"-u"_s, u"LOCAL_RANK"_s };
    for (const QString& kv : options.environment) {
        if (kv.indexOf(u'=') > 0 && !kv.startsWith(u'-'))
            command << kv;
    }
    command << worker << recipePath << options.extraArguments;
    m_arguments = command;
    m_workerPath = s.loginHost.isEmpty() ? worker : s.loginHost + u':' + worker;
    m_slurmActive = true;
    if (!job->submit(s, command, &why)) {
        // Refused by sbatch (its own words): the run ends like a worker that could not start.
        emit note(why);
        QTimer::singleShot(0, this, [this, why] { emitFinished(true, -1, why); });
    }
    return true;
}

void WorkerLauncher::onSlurmFinished(SlurmOutcome outcome, int exitCode, const QString& message)
{
    drainReader();
    const QString what = u"Slurm "_s + message;
    emit note(what);
    const QString lastWords = m_lastStderr.isEmpty() ? QString() : u" (last words: %1)"_s.arg(m_lastStderr);
    switch (outcome) {
    case SlurmOutcome::Completed:
        if (m_gotResult)
            emitFinished(false, exitCode, QString());
        else
            emitFinished(
                true, exitCode, what + u", but the worker's stream ended without a result"_s + lastWords);
        return;
    case SlurmOutcome::Failed:
        // A worker that wrote its result (a failing one) and exited non-zero is a finished run, as locally.
        emitFinished(!m_gotResult, exitCode, m_gotResult ? what : what + lastWords);
        return;
    case SlurmOutcome::Cancelled:
        emitFinished(!m_gotResult, -1, m_cancelled ? u"cancelled: "_s + what : what);
        return;
    default:
        emitFinished(!m_gotResult, -1, what + lastWords);
        return;
    }
}

} // namespace rs::launch
