// SPDX-License-Identifier: Apache-2.0
#include "launch/slurm_job.h"

#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

#include "launch/log.h"

using namespace Qt::StringLiterals;

namespace rs::launch {

namespace {

bool isName(const QString& s)
{
    static const QRegularExpression re(u"^[A-Za-z0-9_.+-]+$"_s);
    return re.match(s).hasMatch() && !s.startsWith(u'-');
}

// [user@]host: no option-looking word, no shell or ssh metacharacters.
bool isHostName(const QString& s)
{
    static const QRegularExpression re(u"^([A-Za-z0-9_.-]+@)?[A-Za-z0-9_.:\\[\\]-]+$"_s);
    return re.match(s).hasMatch() && !s.startsWith(u'-');
}

// Slurm's own --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
bool isTimeLimit(const QString& s)
{
    static const QRegularExpression re(u"^(\\d+-)?\\d+(:\\d+){0,2}$"_s);
    return re.match(s).hasMatch();
}

// KEY=VALUE fields of `scontrol show job -o`.
QString scontrolField(const QString& line, const QString& key)
{
    const QRegularExpression re(u"(?:^|\\s)"_s + QRegularExpression::escape(key) + u"=(\\S*)"_s);
    const auto m = re.match(line);
    return m.hasMatch() ? m.captured(1) : QString();
}

// One ssh connection for the many short commands of a job (each poll is a squeue and an output read):
// OpenSSH's multiplexing through a socket in a folder of this user's only, unless the user's own options
// already say how (ControlMaster / ControlPath). Empty when no such folder can be had.
QStringList multiplexOptions(const QStringList& sshOptions)
{
    for (const QString& o : sshOptions) {
        if (o.contains(u"ControlMaster"_s, Qt::CaseInsensitive)
            || o.contains(u"ControlPath"_s, Qt::CaseInsensitive))
            return {};
    }
    const QString dir = QDir::tempPath() + u"/recompute-ssh-"_s + QString::number(::getuid());
    // A unix socket path has ~104 bytes; %C is 40.
    if (dir.toUtf8().size() > 60 || !QDir().mkpath(dir))
        return {};
    // In a folder anyone can write to: a name another user made first (a link to elsewhere, a folder of
    // theirs) is not ours to put a socket in.
    if (const QFileInfo made(dir); made.isSymLink() || !made.isDir() || made.ownerId() != ::getuid()
        || !QFile::setPermissions(dir, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner))
        return {};
    return { u"-o"_s, u"ControlMaster=auto"_s, u"-o"_s, u"ControlPath="_s + dir + u"/%C"_s, u"-o"_s,
        u"ControlPersist=60"_s };
}

} // namespace

QString shellWord(const QString& word)
{
    QString quoted = word;
    quoted.replace(u'\'', u"'\\''"_s);
    return u'\'' + quoted + u'\'';
}

QString checkSlurmSettings(const SlurmSettings& s)
{
    if (!s.partition.isEmpty() && !isName(s.partition))
        return u"partition: '%1' is not a Slurm partition name (letters, digits, _ . + -)"_s.arg(s.partition);
    if (!s.account.isEmpty() && !isName(s.account))
        return u"account: '%1' is not a Slurm account name (letters, digits, _ . + -)"_s.arg(s.account);
    if (!isName(s.jobName))
        return u"job name: '%1' is not allowed (letters, digits, _ . + -)"_s.arg(s.jobName);
    if (s.nodes < 1 || s.nodes > 100000)
        return u"nodes: %1; allowed 1 to 100000"_s.arg(s.nodes);
    if (s.tasksPerNode < 1 || s.tasksPerNode > 1024)
        return u"tasks per node: %1; allowed 1 to 1024"_s.arg(s.tasksPerNode);
    if (s.gpusPerNode < 0 || s.gpusPerNode > 1024)
        return u"GPUs per node: %1; allowed 0 to 1024"_s.arg(s.gpusPerNode);
    if (!s.timeLimit.isEmpty() && !isTimeLimit(s.timeLimit))
        return u"time limit: '%1'; Slurm takes M, M:S, H:M:S, D-H, D-H:M or D-H:M:S"_s.arg(s.timeLimit);
    for (const QString& line : s.extraSbatchLines) {
        if (!line.startsWith(u"#SBATCH --"_s) || line.contains(u'\n') || line.contains(u'\r'))
            return u"extra #SBATCH line: '%1'; each must be one line starting with '#SBATCH --'"_s.arg(line);
    }
    if (s.workDir.isEmpty())
        return u"work folder: empty; the job's script and output need a folder the compute nodes see"_s;
    if (s.workDir.contains(u'\n'))
        return u"work folder: contains a line break"_s;
    // It is written into `#SBATCH --output=DIR/...`, which sbatch splits at blanks and reads quotes in: a
    // folder with them would add options to the job ('DIR --partition=x').
    for (QChar c : s.workDir)
        if (c.isSpace() || c == u'"' || c == u'\'' || c == u'\\' || c.unicode() < 0x20)
            return u"work folder: '%1' holds a blank, a quote or a backslash, which an #SBATCH line cannot carry"_s
                .arg(s.workDir);
    if (!s.loginHost.isEmpty() && !isHostName(s.loginHost))
        return u"login host: '%1' is not [user@]host (it may not start with '-' or hold spaces or shell "
               "characters)"_s.arg(s.loginHost);
    if (s.pollIntervalMs < 50)
        return u"poll interval: %1 ms; at least 50"_s.arg(s.pollIntervalMs);
    return {};
}

QString slurmBatchScript(const SlurmSettings& s, const QStringList& command)
{
    const QString dir = QDir::cleanPath(s.workDir);
    QStringList lines = { u"#!/bin/bash"_s, u"#SBATCH --job-name="_s + s.jobName,
        u"#SBATCH --nodes=%1"_s.arg(s.nodes), u"#SBATCH --ntasks-per-node=%1"_s.arg(s.tasksPerNode),
        u"#SBATCH --output="_s + dir + u"/slurm-%j.out"_s };
    if (!s.partition.isEmpty())
        lines << u"#SBATCH --partition="_s + s.partition;
    if (s.gpusPerNode > 0)
        lines << u"#SBATCH --gpus-per-node=%1"_s.arg(s.gpusPerNode);
    if (!s.timeLimit.isEmpty())
        lines << u"#SBATCH --time="_s + s.timeLimit;
    if (!s.account.isEmpty())
        lines << u"#SBATCH --account="_s + s.account;
    lines << s.extraSbatchLines;
    QStringList words;
    for (const QString& w : command)
        words << shellWord(w);
    lines << u"set -u"_s
          // Rank 0's node address (NodeAddr, what the controller itself uses; its name when none is set)
          // and a port from the job id, for torchrun-style rendezvous across nodes.
          << u"first=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)"_s
          << u"MASTER_ADDR=$(scontrol show node \"$first\" -o | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p')"_s
          << u"export MASTER_ADDR=${MASTER_ADDR:-$first}"_s
          << u"export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))"_s
          << u"exec srun --kill-on-bad-exit=1 --output=%1 --error=%2 %3"_s.arg(
                 shellWord(dir + u"/task-%j-%t.out"_s), shellWord(dir + u"/task-%j-%t.err"_s),
                 words.join(u' '));
    return lines.join(u'\n') + u'\n';
}

const char* slurmOutcomeName(SlurmOutcome o)
{
    switch (o) {
    case SlurmOutcome::Completed:
        return "completed";
    case SlurmOutcome::Failed:
        return "failed";
    case SlurmOutcome::Cancelled:
        return "cancelled";
    case SlurmOutcome::TimeLimit:
        return "time limit";
    case SlurmOutcome::NodeFailure:
        return "node failure";
    case SlurmOutcome::OutOfMemory:
        return "out of memory";
    case SlurmOutcome::Preempted:
        return "preempted";
    case SlurmOutcome::Rejected:
        return "rejected";
    case SlurmOutcome::Lost:
        return "lost";
    }
    return "lost";
}

SlurmOutcome slurmOutcomeFromState(const QString& jobState)
{
    // "CANCELLED by 0" in squeue/sacct; scontrol prints CANCELLED alone.
    const QString s = jobState.section(u' ', 0, 0).toUpper();
    if (s == u"COMPLETED"_s)
        return SlurmOutcome::Completed;
    if (s == u"CANCELLED"_s)
        return SlurmOutcome::Cancelled;
    if (s == u"TIMEOUT"_s || s == u"DEADLINE"_s)
        return SlurmOutcome::TimeLimit;
    if (s == u"NODE_FAIL"_s || s == u"BOOT_FAIL"_s)
        return SlurmOutcome::NodeFailure;
    if (s == u"OUT_OF_MEMORY"_s)
        return SlurmOutcome::OutOfMemory;
    if (s == u"PREEMPTED"_s)
        return SlurmOutcome::Preempted;
    if (s == u"FAILED"_s)
        return SlurmOutcome::Failed;
    return SlurmOutcome::Lost;
}

QString pendingReasonText(const QString& reason)
{
    if (reason == u"Resources"_s)
        return u"waiting for resources (the nodes it asks for are busy)"_s;
    if (reason == u"Priority"_s)
        return u"waiting behind jobs of higher priority"_s;
    if (reason == u"JobHeldUser"_s || reason == u"JobHeldAdmin"_s)
        return u"held (release it with scontrol release)"_s;
    if (reason == u"PartitionDown"_s || reason == u"PartitionInactive"_s)
        return u"its partition is down"_s;
    if (reason == u"ReqNodeNotAvail"_s)
        return u"a node it asks for is not available (down, drained or reserved)"_s;
    if (reason == u"BeginTime"_s)
        return u"its start time has not come"_s;
    if (reason == u"Dependency"_s)
        return u"waiting for a job it depends on"_s;
    if (reason.startsWith(u"AssocMax"_s) || reason.startsWith(u"QOSMax"_s))
        return u"over a limit of its account or QOS (%1)"_s.arg(reason);
    if (reason.isEmpty() || reason == u"None"_s)
        return u"pending"_s;
    return reason;
}

QString slurmStateNote(const QString& jobId, const QString& state, const QString& reason)
{
    if (reason.startsWith(u"squeue failed"_s) || reason.startsWith(u"scancel failed"_s))
        return u"Slurm job %1: %2"_s.arg(jobId, reason);
    if (state == u"PENDING"_s)
        return u"Slurm job %1 pending: %2"_s.arg(jobId, pendingReasonText(reason));
    return u"Slurm job %1 %2"_s.arg(jobId, state.toLower());
}

QString slurmAllocationSignature(const SlurmSettings& j)
{
    QString s = u"slurm partition %1, nodes %2, tasks per node %3, GPUs per node %4"_s
                    .arg(j.partition.isEmpty() ? u"(default)"_s : j.partition)
                    .arg(j.nodes)
                    .arg(j.tasksPerNode)
                    .arg(j.gpusPerNode);
    if (!j.extraSbatchLines.isEmpty())
        s += u", "_s + j.extraSbatchLines.join(u"; "_s);
    return s;
}

SlurmJob::SlurmJob(QObject* parent)
    : QObject(parent)
{
    m_timer.setSingleShot(false);
    connect(&m_timer, &QTimer::timeout, this, &SlurmJob::poll);
}

SlurmJob::~SlurmJob() = default;

SlurmJob::Result SlurmJob::runCommand(const QStringList& words, const QByteArray& input, int timeoutMs) const
{
    Result r;
    QString program;
    QStringList args;
    if (m_settings.loginHost.isEmpty()) {
        program = QStandardPaths::findExecutable(words.first());
        if (program.isEmpty()) {
            r.err = words.first().toUtf8() + " not found on PATH";
            return r;
        }
        args = words.mid(1);
    } else {
        program = QStandardPaths::findExecutable(u"ssh"_s);
        if (program.isEmpty()) {
            r.err = "ssh not found on PATH: install the OpenSSH client (openssh-client)";
            return r;
        }
        args = m_settings.sshOptions + multiplexOptions(m_settings.sshOptions);
        args << u"-o"_s << u"BatchMode=yes"_s << u"-T"_s << u"--"_s << m_settings.loginHost;
        for (const QString& w : words)
            args << shellWord(w);
    }
    QProcess p;
    p.start(program, args);
    if (!p.waitForStarted(10000)) {
        r.err = "cannot start " + program.toUtf8() + ": " + p.errorString().toUtf8();
        return r;
    }
    if (!input.isEmpty())
        p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished(2000);
        r.err = words.first().toUtf8() + " did not answer within " + QByteArray::number(timeoutMs / 1000)
            + " s";
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QString SlurmJob::putFile(
    const SlurmSettings& settings, const QString& name, const QByteArray& contents, QString* error)
{
    m_settings = settings;
    const QString problem = checkSlurmSettings(settings);
    if (!problem.isEmpty() || !isName(name)) {
        if (error)
            *error = problem.isEmpty() ? u"file name: '%1' is not allowed"_s.arg(name) : problem;
        return {};
    }
    const QString path = QDir::cleanPath(settings.workDir) + u'/' + name;
    const Result r = runCommand({ u"sh"_s, u"-c"_s, u"mkdir -p \"$1\" && cat > \"$1/$2\""_s, u"sh"_s,
                                    QDir::cleanPath(settings.workDir), name },
        contents);
    if (r.exitCode != 0) {
        if (error)
            *error = u"cannot write %1: %2"_s.arg(path, QString::fromUtf8(r.err).trimmed());
        return {};
    }
    return path;
}

bool SlurmJob::submit(const SlurmSettings& settings, const QStringList& command, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (isActive())
        return fail(u"a job is already being followed (%1)"_s.arg(m_jobId));
    if (command.isEmpty())
        return fail(u"the job has no command"_s);
    if (const QString problem = checkSlurmSettings(settings); !problem.isEmpty())
        return fail(problem);
    m_settings = settings;
    m_jobId.clear();
    m_state.clear();
    m_reason.clear();
    m_done = false;
    m_cancelRequested = false;
    m_script = slurmBatchScript(settings, command);
    const QString dir = QDir::cleanPath(settings.workDir);
    const Result made = runCommand({ u"mkdir"_s, u"-p"_s, dir });
    if (made.exitCode != 0)
        return fail(u"cannot make the work folder %1: %2"_s.arg(dir, QString::fromUtf8(made.err).trimmed()));
    // The script goes on sbatch's stdin: nothing of it reaches a command line.
    const Result r = runCommand({ u"sbatch"_s, u"--parsable"_s, u"--chdir="_s + dir }, m_script.toUtf8());
    if (r.exitCode != 0) {
        QString why = QString::fromUtf8(r.err).trimmed();
        why.remove(u"sbatch: error: "_s);
        return fail(
            u"Slurm rejected the job: %1"_s.arg(why.isEmpty() ? u"sbatch exited %1"_s.arg(r.exitCode) : why));
    }
    // "<id>" or "<id>;<cluster>"
    m_jobId = QString::fromUtf8(r.out).trimmed().section(u';', 0, 0);
    static const QRegularExpression id(u"^\\d+$"_s);
    if (!id.match(m_jobId).hasMatch()) {
        const QString got = m_jobId;
        m_jobId.clear();
        return fail(u"sbatch answered '%1', not a job id"_s.arg(got));
    }
    m_outOffsets.assign(std::size_t(tasks()), 0);
    m_errOffsets.assign(std::size_t(tasks()), 0);
    m_batchOffset = 0;
    qCDebug(lcLaunch) << "Slurm job" << m_jobId << "submitted";
    emit submitted(m_jobId);
    m_timer.start(settings.pollIntervalMs);
    poll();
    return true;
}

QString SlurmJob::outputPath(int task) const
{
    return QDir::cleanPath(m_settings.workDir) + u"/task-%1-%2.out"_s.arg(m_jobId).arg(task);
}

void SlurmJob::cancel()
{
    if (!isActive())
        return;
    m_cancelRequested = true;
    const Result r = runCommand({ u"scancel"_s, m_jobId });
    if (r.exitCode != 0)
        emit stateChanged(m_state, u"scancel failed: "_s + QString::fromUtf8(r.err).trimmed());
    poll();
}

QString SlurmJob::batchOutputPath() const
{
    return QDir::cleanPath(m_settings.workDir) + u"/slurm-%1.out"_s.arg(m_jobId);
}

void SlurmJob::readOutputs()
{
    // Every file the job writes, with how much of it was already read: each task's stdout and stderr, then
    // the batch script's own output.
    struct Source {
        QString path;
        qint64* offset;
        int task; // -1: the batch output
        bool err;
    };
    std::vector<Source> sources;
    for (int t = 0; t < tasks(); ++t) {
        QString err = outputPath(t);
        err.replace(err.size() - 3, 3, u"err"_s);
        sources.push_back({ outputPath(t), &m_outOffsets[std::size_t(t)], t, false });
        sources.push_back({ err, &m_errOffsets[std::size_t(t)], t, true });
    }
    sources.push_back({ batchOutputPath(), &m_batchOffset, -1, false });
    std::vector<QByteArray> chunks(sources.size());
    if (m_settings.loginHost.isEmpty()) {
        for (std::size_t i = 0; i < sources.size(); ++i) {
            QFile f(sources[i].path);
            if (f.open(QIODevice::ReadOnly) && f.seek(*sources[i].offset))
                chunks[i] = f.readAll();
        }
    } else {
        // One ssh round trip for all files: for each, a line with the count of new bytes, then those bytes
        // (head -c bounds them, should the file grow between wc and tail).
        QStringList words = { u"sh"_s, u"-c"_s,
            u"while [ $# -gt 1 ]; do n=0; [ ! -f \"$1\" ] || n=$(( $(wc -c < \"$1\") - $2 )); "
            "if [ \"$n\" -gt 0 ]; then echo \"$n\"; tail -c +$(( $2 + 1 )) \"$1\" | head -c \"$n\"; "
            "else echo 0; fi; shift 2; done"_s,
            u"sh"_s };
        for (const Source& src : sources)
            words << src.path << QString::number(*src.offset);
        const Result r = runCommand(words);
        if (r.exitCode != 0)
            return;
        qsizetype at = 0;
        for (std::size_t i = 0; i < sources.size(); ++i) {
            const qsizetype eol = r.out.indexOf('\n', at);
            if (eol < 0)
                break;
            bool ok = false;
            const qint64 n = r.out.mid(at, eol - at).trimmed().toLongLong(&ok);
            if (!ok || n < 0 || eol + 1 + n > r.out.size())
                break; // a garbled answer: read again on the next poll
            chunks[i] = r.out.mid(eol + 1, n);
            at = eol + 1 + n;
        }
    }
    for (std::size_t i = 0; i < sources.size(); ++i) {
        if (chunks[i].isEmpty())
            continue;
        *sources[i].offset += chunks[i].size();
        if (sources[i].task < 0)
            emit batchOutput(chunks[i]);
        else if (sources[i].err)
            emit taskError(sources[i].task, chunks[i]);
        else
            emit taskOutput(sources[i].task, chunks[i]);
    }
}

void SlurmJob::poll()
{
    if (!isActive())
        return;
    const Result r = runCommand({ u"squeue"_s, u"-h"_s, u"-j"_s, m_jobId, u"-o"_s, u"%T|%r"_s });
    const QString line = QString::fromUtf8(r.out).trimmed();
    if (r.exitCode == 0 && !line.isEmpty()) {
        const QString state = line.section(u'|', 0, 0);
        const QString reason = line.section(u'|', 1);
        if (state != m_state || reason != m_reason) {
            m_state = state;
            m_reason = reason;
            qCDebug(lcLaunch) << "Slurm job" << m_jobId << state << reason;
            emit stateChanged(state, reason);
        }
        if (state == u"RUNNING"_s || state == u"COMPLETING"_s)
            readOutputs();
        // Finished states can show in squeue for a moment (MinJobAge); they are concluded below.
        if (state == u"PENDING"_s || state == u"RUNNING"_s || state == u"CONFIGURING"_s
            || state == u"COMPLETING"_s || state == u"SUSPENDED"_s || state == u"REQUEUED"_s)
            return;
    } else if (r.exitCode != 0 && !r.err.contains("Invalid job id")) {
        // squeue itself failed (controller down, ssh broke): say so and keep trying.
        emit stateChanged(m_state, u"squeue failed: "_s + QString::fromUtf8(r.err).trimmed());
        return;
    }
    conclude();
}

void SlurmJob::conclude()
{
    readOutputs();
    QString state;
    QString reason;
    int exitCode = -1;
    const Result sc = runCommand({ u"scontrol"_s, u"show"_s, u"job"_s, u"-o"_s, m_jobId });
    if (sc.exitCode == 0) {
        const QString line = QString::fromUtf8(sc.out).trimmed();
        state = scontrolField(line, u"JobState"_s);
        reason = scontrolField(line, u"Reason"_s);
        exitCode = scontrolField(line, u"ExitCode"_s).section(u':', 0, 0).toInt();
    } else {
        // scontrol forgets a job MinJobAge after it ended; accounting, when there is one, still knows.
        const Result sa = runCommand(
            { u"sacct"_s, u"-n"_s, u"-P"_s, u"-X"_s, u"-j"_s, m_jobId, u"-o"_s, u"State,ExitCode,Reason"_s });
        const QString line = QString::fromUtf8(sa.out).trimmed().section(u'\n', 0, 0);
        if (sa.exitCode == 0 && !line.isEmpty()) {
            state = line.section(u'|', 0, 0);
            exitCode = line.section(u'|', 1, 1).section(u':', 0, 0).toInt();
            reason = line.section(u'|', 2);
        }
    }
    if (state.isEmpty()) {
        finish(SlurmOutcome::Lost, -1,
            u"job %1 left the queue and neither scontrol nor sacct knows how it ended"_s.arg(m_jobId));
        return;
    }
    if (state == u"PENDING"_s || state == u"RUNNING"_s || state == u"COMPLETING"_s)
        return; // squeue raced the controller; the next poll sees it again
    const SlurmOutcome outcome = slurmOutcomeFromState(state);
    QString message;
    switch (outcome) {
    case SlurmOutcome::Completed:
        message = u"job %1 completed"_s.arg(m_jobId);
        break;
    case SlurmOutcome::Failed:
        message = u"job %1 failed with exit code %2"_s.arg(m_jobId).arg(exitCode);
        break;
    case SlurmOutcome::Cancelled:
        message = m_cancelRequested ? u"job %1 cancelled (scancel)"_s.arg(m_jobId)
                                    : u"job %1 was cancelled outside this program"_s.arg(m_jobId);
        break;
    case SlurmOutcome::TimeLimit:
        message = u"job %1 reached its time limit%2"_s.arg(
            m_jobId, m_settings.timeLimit.isEmpty() ? QString() : u" (%1)"_s.arg(m_settings.timeLimit));
        break;
    case SlurmOutcome::NodeFailure:
        message = u"job %1 ended by a node failure (%2)"_s.arg(m_jobId, reason);
        break;
    case SlurmOutcome::OutOfMemory:
        message = u"job %1 ran out of host memory (Slurm's memory limit)"_s.arg(m_jobId);
        break;
    case SlurmOutcome::Preempted:
        message = u"job %1 was preempted"_s.arg(m_jobId);
        break;
    default:
        message = u"job %1 ended in state %2 (%3)"_s.arg(m_jobId, state, reason);
        break;
    }
    m_state = state;
    finish(outcome, exitCode, message);
}

void SlurmJob::finish(SlurmOutcome outcome, int exitCode, const QString& message)
{
    if (m_done)
        return;
    m_done = true;
    m_timer.stop();
    emit finished(outcome, exitCode, message);
}

} // namespace rs::launch
