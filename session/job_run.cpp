// SPDX-License-Identifier: Apache-2.0
#include "session/job_run.h"

#include <algorithm>
#include <stdexcept>

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QPointer>
#include <QProcessEnvironment>
#include <QStandardPaths>
#include <QTimer>

#include "core/estimator.h"
#include "core/megatron_arg_table.h"
#include "core/megatron_flags.h"
#include "core/model_shape.h"
#include "core/overrides.h"
#include "core/profiles.h"
#include "core/rules.h"
#include "launch/worker_launcher.h"
#include "session/symmetric_ranks_py.h"

using namespace Qt::StringLiterals;

namespace rs::session {

// The launcher's pieces (backend/launch) this session drives.
using namespace rs::launch;

namespace {

bool startsWith(const std::string& s, const std::string& prefix)
{
    return s.compare(0, prefix.size(), prefix) == 0;
}

// Drops `flag value` and `flag=value` from words[from..].
void dropFlag(std::vector<std::string>& words, std::size_t from, const std::string& flag)
{
    for (std::size_t i = from; i < words.size();) {
        if (words[i] == flag) {
            const bool hasValue = i + 1 < words.size() && !startsWith(words[i + 1], "--");
            words.erase(
                words.begin() + std::ptrdiff_t(i), words.begin() + std::ptrdiff_t(i + (hasValue ? 2 : 1)));
        } else if (startsWith(words[i], flag + "=")) {
            words.erase(words.begin() + std::ptrdiff_t(i));
        } else {
            ++i;
        }
    }
}

// One word for a POSIX shell: as is when it is plain, else single-quoted (the log's command line reads
// as the user would type it; slurm_job.h's shellWord quotes every word).
QString plainOrQuoted(const QString& word)
{
    static const QString plain
        = u"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%"_s;
    bool safe = !word.isEmpty();
    for (QChar c : word)
        safe = safe && plain.contains(c);
    if (safe)
        return word;
    QString q = word;
    q.replace(u'\'', u"'\\''"_s);
    return u'\'' + q + u'\'';
}

// A word for the log's one-line header: as plainOrQuoted, but a word with a control character (a newline
// in a flag's value) in bash's $'...' form, so the header stays one line and the job's output starts after
// it.
QString oneLineQuoted(const QString& word)
{
    // C0, DEL and C1 (U+0080-U+009F: a terminal reads U+009B as an escape's start).
    auto isControl = [](QChar c) {
        const ushort u = c.unicode();
        return u < 0x20 || u == 0x7f || (u >= 0x80 && u < 0xa0);
    };
    const bool control = std::any_of(word.begin(), word.end(), isControl);
    if (!control)
        return plainOrQuoted(word);
    QString q = u"$'"_s;
    for (QChar c : word) {
        const ushort u = c.unicode();
        if (c == u'\\' || c == u'\'')
            q += u'\\' + QString(c);
        else if (c == u'\n')
            q += u"\\n"_s;
        else if (c == u'\r')
            q += u"\\r"_s;
        else if (c == u'\t')
            q += u"\\t"_s;
        else if (u < 0x20 || u == 0x7f)
            q += u"\\x%1"_s.arg(u, 2, 16, QLatin1Char('0'));
        else if (isControl(c)) // its UTF-8 bytes, as bash's $'\xHH' and core's splitShellWords read them
            for (const char b : QString(c).toUtf8())
                q += u"\\x%1"_s.arg(uchar(b), 2, 16, QLatin1Char('0'));
        else
            q += c;
    }
    return q + u'\'';
}

// The words that run the script as one process, from the launcher's: a distributed launcher (torchrun,
// `python -m torch.distributed.run|launch`, srun, mpirun) gives way to its Python (python3 for torchrun,
// srun and mpirun); any other words before the script (python3, a venv's python, a wrapper) are kept.
std::vector<std::string> oneProcessRunner(const std::vector<std::string>& launch)
{
    const std::vector<std::string> before(launch.begin(), launch.end() - 1);
    if (before.empty())
        return { "python3" };
    const auto base = [](const std::string& w) { return w.substr(w.find_last_of('/') + 1); };
    const std::string first = base(before.front());
    if (first == "torchrun" || first == "srun" || first == "mpirun" || first == "mpiexec")
        return { "python3" };
    for (std::size_t i = 1; i + 1 < before.size(); ++i)
        if (before[i] == "-m" && startsWith(before[i + 1], "torch.distributed."))
            return { before.front() };
    return before;
}

// `python3 -c` code that runs the symmetric-ranks shim, then the script named next as __main__ (sys.argv and
// sys.path[0] as `python3 SCRIPT` would set them). One base64 word: it survives a shell, ssh and an sbatch
// script unchanged, and the log's command line stays one line.
constexpr const char* kSymmetricRanksTag
    = "  # recompute-studio: symmetric ranks (resources/megatron/symmetric_ranks.py)";

std::string symmetricRanksBootstrap()
{
    const QByteArray code = QByteArray(kSymmetricRanksPy)
        + "\nimport os as _os, runpy as _runpy, sys as _sys\n"
          "_sys.argv = _sys.argv[1:]\n"
          "_sys.path[0] = _os.path.dirname(_os.path.abspath(_sys.argv[0]))\n"
          "_runpy.run_path(_sys.argv[0], run_name=\"__main__\")\n";
    return "import base64; exec(base64.b64decode('" + code.toBase64().toStdString() + "'))"
        + kSymmetricRanksTag;
}

} // namespace

QStringList commandForDisplay(const QStringList& command)
{
    QStringList out = command;
    for (QString& w : out)
        if (w.endsWith(QLatin1String(kSymmetricRanksTag)))
            w = u"<symmetric-ranks shim, in full in the log>"_s;
    return out;
}

QByteArray jobLogCommandLine(const std::vector<std::string>& command)
{
    QStringList header;
    for (const std::string& w : command)
        header << oneLineQuoted(QString::fromStdString(w));
    return (u"# command: "_s + header.join(u' ') + u"\n"_s).toUtf8();
}

Recipe jobRecipe(const Recipe& recipe, InputFormat format, const std::optional<RecomputeChoice>& choice)
{
    if (choice)
        return candidateRecipe(recipe, *choice);
    Recipe control = controlRecipe(recipe);
    if (format == InputFormat::MegatronFlags) {
        // argparse's nargs='+' cannot say recompute_modules=[]: Megatron-LM's no-recompute is None.
        control.recompute_granularity.reset();
        control.recompute_modules.reset();
    }
    return control;
}

LayoutRankChoice layoutRankChoice(const Recipe& recipe, InputFormat format, const OneRankOfLayout& oneRank)
{
    if (format != InputFormat::MegatronFlags)
        throw std::invalid_argument(
            "one rank of the layout runs a Megatron-LM command line (--mlm-args ... pretrain_gpt.py ...) "
            "with "
            "--fake-process-group; Megatron Bridge 067f987d has no fake process group");
    const Recipe r = validate(controlRecipe(recipe), format).resolved;
    if (!megatronArgTable(r.profile).find("--fake-process-group"))
        throw std::invalid_argument("Megatron-LM at profile " + std::string(profileInfo(r.profile).name)
            + " has no --fake-process-group: one rank of the layout cannot run on one GPU there");
    const ParallelSizes p = parallelSizes(r);
    LayoutRankChoice c;
    // Unfilled, the counts an expert-parallel rank receives are whatever memory held (the Moonlight rank
    // read 61 GB on the H200); filled symmetrically, real Megatron's EP 8 ranks read within 1.0 % (MoE
    // stack) and 3.6 % (Moonlight) of the estimate (docs/benchmarks.md).
    c.symmetricCollectives = r.num_moe_experts && p.etp * p.ep > 1;
    c.world = p.world;
    c.hottest = !oneRank.rank;
    c.rank = oneRank.rank ? *oneRank.rank : hottestRankOfLayout(r);
    if (c.rank < 0 || c.rank >= c.world)
        throw std::invalid_argument("rank_of_layout " + std::to_string(c.rank) + " is outside the layout's "
            + std::to_string(c.world) + " ranks (TP x CP x DP x PP = " + std::to_string(p.tp) + " x "
            + std::to_string(p.cp) + " x " + std::to_string(p.dp) + " x " + std::to_string(p.pp) + ")");
    c.stage = stageOfRank(p, c.rank);
    return c;
}

std::vector<std::string> jobCommand(const Recipe& recipe, InputFormat format,
    const std::optional<RecomputeChoice>& choice, const ShortRun& run,
    const std::vector<std::string>& bridgeLauncher)
{
    const Recipe r = jobRecipe(recipe, format, choice);
    const std::string n = std::to_string(run.trainIters);
    if (format == InputFormat::MegatronFlags) {
        if (r.launch_command.empty())
            throw std::invalid_argument(
                "the recipe carries no launch command: give the whole Megatron-LM line "
                "(--mlm-args torchrun ... pretrain_gpt.py --flags...)");
        std::vector<std::string> words = recipeToMegatronCommand(r);
        const std::size_t from = r.launch_command.size();
        for (const char* f : { "--train-iters", "--log-interval", "--log-memory-interval" })
            dropFlag(words, from, f);
        words.insert(words.end(), { "--train-iters", n, "--log-interval", "1" });
        if (megatronArgTable(r.profile).find("--log-memory-interval"))
            words.insert(words.end(), { "--log-memory-interval", "1" });
        if (run.oneRank) {
            // The launcher (torchrun and its options) would start the layout's every rank: one process
            // instead, the rank and the world in the variables Megatron-LM reads (arguments.py), the
            // script's interpreter the launcher's own where it names one.
            const LayoutRankChoice c = layoutRankChoice(recipe, format, *run.oneRank);
            std::vector<std::string> one = { "env", "RANK=" + std::to_string(c.rank),
                "WORLD_SIZE=" + std::to_string(c.world), "LOCAL_RANK=0" };
            const std::vector<std::string> runner = oneProcessRunner(r.launch_command);
            one.insert(one.end(), runner.begin(), runner.end());
            if (c.symmetricCollectives)
                one.insert(one.end(), { "-c", symmetricRanksBootstrap() });
            one.push_back(r.launch_command.back());
            dropFlag(words, from, "--fake-process-group");
            one.insert(one.end(), words.begin() + std::ptrdiff_t(from), words.end());
            one.push_back("--fake-process-group");
            return one;
        }
        return words;
    }
    if (format == InputFormat::BridgeOverrides) {
        if (run.oneRank)
            layoutRankChoice(recipe, format, *run.oneRank); // throws: Bridge has no fake process group
        if (bridgeLauncher.empty())
            throw std::invalid_argument("a Bridge job needs its launcher: the words before the overrides "
                                        "(torchrun ... scripts/training/run_recipe.py --recipe NAME)");
        std::vector<std::string> words = bridgeLauncher;
        for (const std::string& o : recipeToBridgeOverrides(r)) {
            if (!startsWith(o, "train.train_iters=") && !startsWith(o, "logger.log_interval="))
                words.push_back(o);
        }
        words.push_back("train.train_iters=" + n);
        words.push_back("logger.log_interval=1");
        return words;
    }
    throw std::invalid_argument("a real job is a Megatron-LM command line (--mlm-args) or Bridge overrides "
                                "(--overrides), not a JSON recipe");
}

QString jobSignature(const std::vector<std::string>& command, const JobOptions& options)
{
    QStringList words;
    for (const std::string& w : command)
        words << plainOrQuoted(QString::fromStdString(w));
    QString s = u"job command "_s + words.join(u' ');
    if (!options.workingDirectory.isEmpty())
        s += u", in "_s + options.workingDirectory;
    if (!options.environment.isEmpty())
        s += u", environment "_s + options.environment.join(u' ');
    if (options.slurm)
        s += (options.slurm->loginHost.isEmpty() ? QString()
                                                 : u", submitted on "_s + options.slurm->loginHost)
            + u", "_s + slurmAllocationSignature(*options.slurm);
    else if (!options.sshHost.isEmpty())
        s += u", ssh "_s + options.sshHost;
    else
        s += u", this host"_s;
    return s;
}

JobRun::JobRun(QObject* parent)
    : QObject(parent)
    , m_stream(std::make_unique<storage::TrainingLogStream>())
{
}

JobRun::~JobRun()
{
    if (m_slurm && m_slurm->isActive()) {
        // No job is left running behind a sweep that ends: scancel.
        m_slurm->disconnect(this);
        m_slurm->cancel();
    }
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(5000);
    }
}

bool JobRun::isRunning() const
{
    return m_slurmActive || (m_process && m_process->state() != QProcess::NotRunning);
}

bool JobRun::start(const std::vector<std::string>& command, const QString& logPath, const JobOptions& options,
    QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (isRunning())
        return fail(tr("a job is already running"));
    if (command.empty())
        return fail(tr("no command to run"));
    if (!options.sshHost.isEmpty()) {
        QString destination, port, problem;
        if (!launch::parseSshHost(options.sshHost, &destination, &port, &problem))
            return fail(problem); // never an option to ssh ('-oProxyCommand=...')
    }
    if (options.slurm && !options.sshHost.isEmpty())
        return fail(tr("ssh host %1 and a Slurm job at once: give the host as the Slurm settings' login host")
                        .arg(options.sshHost));
    if (options.slurm) {
        if (const QString problem = checkSlurmSettings(*options.slurm); !problem.isEmpty())
            return fail(tr("Slurm settings: %1").arg(problem));
    }
    m_stream = std::make_unique<storage::TrainingLogStream>();
    m_parsed = {};
    m_partial.clear();
    m_cancelled = false;
    m_done = false;
    m_slurmPartial.clear();
    m_slurm.reset();
    m_logPath = logPath;
    m_logBytes.clear();
    m_logFailures.clear();
    m_logFolder = 0;
    m_log.close();
    m_log.setFileName(logPath);
    // A new file, never an existing one (O_CREAT | O_EXCL: no file truncated, no symbolic link followed).
    if (!m_log.open(QIODevice::WriteOnly | QIODevice::NewOnly))
        return fail(tr("cannot make the job's log %1: %2").arg(logPath, m_log.errorString()));
    // Like the fixtures' logs: the exact command first (one line), then when and where.
    writeLog(jobLogCommandLine(command));
    QStringList words, quoted;
    for (const std::string& w : command) {
        words << QString::fromStdString(w);
        quoted << plainOrQuoted(words.back());
    }
    QString where;
    if (options.slurm)
        where = u" as a Slurm job"_s
            + (options.slurm->loginHost.isEmpty() ? QString()
                                                  : u" submitted on "_s + options.slurm->loginHost);
    else if (!options.sshHost.isEmpty())
        where = u" on "_s + options.sshHost;
    writeLog((u"# started: %1%2\n"_s.arg(QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs), where))
                 .toUtf8());
    if (options.slurm)
        return startSlurm(words, options);

    m_process = std::make_unique<QProcess>();
    m_process->setProcessChannelMode(QProcess::MergedChannels);
    if (options.sshHost.isEmpty()) {
        m_program = words.first();
        m_arguments = words.mid(1);
        if (!options.workingDirectory.isEmpty())
            m_process->setWorkingDirectory(options.workingDirectory);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString& kv : options.environment) {
            const qsizetype eq = kv.indexOf(u'=');
            if (eq > 0)
                env.insert(kv.left(eq), kv.mid(eq + 1));
        }
        m_process->setProcessEnvironment(env);
    } else {
        // The remote shell reads one line: cd there, the environment, then every word quoted.
        QString remote;
        if (!options.workingDirectory.isEmpty())
            remote += u"cd "_s + plainOrQuoted(options.workingDirectory) + u" && "_s;
        if (!options.environment.isEmpty()) {
            remote += u"env"_s;
            for (const QString& kv : options.environment)
                remote += u' ' + plainOrQuoted(kv);
            remote += u' ';
        }
        remote += quoted.join(u' ');
        m_program = u"ssh"_s;
        m_arguments = QStringList { u"-o"_s, u"BatchMode=yes"_s, u"-T"_s } + options.sshOptions
            + QStringList { options.sshHost, u"--"_s, remote };
    }
    connect(m_process.get(), &QProcess::readyReadStandardOutput, this, &JobRun::onOutput);
    connect(m_process.get(), &QProcess::finished, this, &JobRun::onFinished);
    connect(m_process.get(), &QProcess::errorOccurred, this, &JobRun::onError);
    connect(m_process.get(), &QProcess::started, this, &JobRun::started);
    m_process->start(m_program, m_arguments);
    return true;
}

bool JobRun::startSlurm(const QStringList& words, const JobOptions& options)
{
    const SlurmSettings& s = *options.slurm;
    // The job's shell starts in the work folder with sbatch's environment: the folder and the variables
    // asked for go through env.
    QStringList command;
    QStringList environment;
    for (const QString& kv : options.environment) {
        if (kv.indexOf(u'=') > 0 && !kv.startsWith(u'-'))
            environment << kv;
    }
    if (!options.workingDirectory.isEmpty() || !environment.isEmpty()) {
        command << u"env"_s;
        if (!options.workingDirectory.isEmpty())
            command << u"-C"_s << options.workingDirectory;
        command << environment;
    }
    command << words;
    m_program = u"sbatch"_s;
    m_arguments = command;
    m_slurm = std::make_unique<SlurmJob>();
    SlurmJob* job = m_slurm.get();
    connect(job, &SlurmJob::submitted, this, [this, s](const QString& id) {
        emit started();
        writeNote(u"Slurm job %1 submitted%2: %3 node(s) x %4 task(s)%5, output in %6"_s
                      .arg(id, s.loginHost.isEmpty() ? QString() : u" on "_s + s.loginHost)
                      .arg(s.nodes)
                      .arg(s.tasksPerNode)
                      .arg(s.partition.isEmpty() ? QString() : u", partition "_s + s.partition, s.workDir));
    });
    connect(job, &SlurmJob::stateChanged, this, [this, job](const QString& state, const QString& reason) {
        writeNote(slurmStateNote(job->jobId(), state, reason));
    });
    connect(job, &SlurmJob::taskOutput, this,
        [this](int task, const QByteArray& bytes) { onSlurmBytes(2 * task, bytes); });
    connect(job, &SlurmJob::taskError, this,
        [this](int task, const QByteArray& bytes) { onSlurmBytes(2 * task + 1, bytes); });
    connect(job, &SlurmJob::batchOutput, this, [this](const QByteArray& bytes) { onSlurmBytes(-1, bytes); });
    connect(
        job, &SlurmJob::finished, this, [this](SlurmOutcome outcome, int exitCode, const QString& message) {
            for (auto& [key, bytes] : m_slurmPartial) {
                if (!bytes.isEmpty())
                    onSlurmBytes(key, {}, true);
            }
            // From the event loop: the job may end inside submit() or cancel(), before they return.
            QTimer::singleShot(0, this, [this, outcome, exitCode, message] {
                const QString what = u"Slurm "_s + message;
                writeNote(what);
                const bool aborted = outcome != SlurmOutcome::Completed || exitCode > 0;
                end(aborted, exitCode,
                    outcome == SlurmOutcome::Cancelled && m_cancelled ? u"cancelled: "_s + what
                        : aborted                                     ? what
                                                                      : QString());
            });
        });
    m_slurmActive = true;
    QString why;
    if (!job->submit(s, command, &why)) {
        // Refused by sbatch (its own words) or the work folder could not be made: the run ends like a
        // program that did not start.
        writeNote(why);
        QTimer::singleShot(0, this, [this, why] { end(true, -1, why); });
    }
    return true;
}

void JobRun::writeNote(const QString& text)
{
    if (m_log.isOpen()) {
        // Every line of it a note of ours (sbatch's refusal can take two), never read as the job's output.
        for (const QString& l : text.split(u'\n', Qt::SkipEmptyParts))
            writeLog((u"# slurm: "_s + l + u'\n').toUtf8());
    }
    emit note(text);
}

void JobRun::writeLog(const QByteArray& bytes)
{
    if (bytes.isEmpty() || !m_log.isOpen())
        return;
    m_logBytes += bytes;
    if (m_log.write(bytes) == bytes.size() && m_log.flush())
        return;
    moveLog(m_log.errorString());
}

bool JobRun::moveLog(const QString& why)
{
    // A full disk takes the file's name and then refuses its bytes: every byte the log should hold so far
    // goes to the next folder that takes all of them, as the store's spool does (storage/ingest.cpp), and
    // the partial file goes, so that no importer reads half a run.
    const QString failed = m_logPath;
    m_logFailures << failed + u": "_s + why;
    m_log.close();
    QFile::remove(failed);
    const QString name = QFileInfo(failed).fileName();
    QString data = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (data.isEmpty())
        data = QDir::homePath() + u"/.local/share/recompute-studio"_s;
    const QStringList folders = { data + u"/job-logs"_s, QDir::tempPath() };
    while (m_logFolder < folders.size()) {
        const QString path = folders[m_logFolder++] + u'/' + name;
        if (path == failed || !QDir().mkpath(QFileInfo(path).absolutePath()))
            continue;
        m_log.setFileName(path);
        if (!m_log.open(QIODevice::WriteOnly | QIODevice::NewOnly)) {
            m_logFailures << path + u": "_s + m_log.errorString();
            continue;
        }
        if (m_log.write(m_logBytes) == m_logBytes.size() && m_log.flush()) {
            m_logPath = path;
            emit note(tr("the job's log %1 could not be written (%2); it goes on, whole, in %3")
                          .arg(failed, why, path));
            return true;
        }
        m_logFailures << path + u": "_s + m_log.errorString();
        m_log.close();
        QFile::remove(path);
    }
    m_logPath.clear();
    emit note(tr("the job's log could not be written anywhere: %1").arg(m_logFailures.join(u"; "_s)));
    return false;
}

void JobRun::onSlurmBytes(int key, const QByteArray& bytes, bool flush)
{
    QByteArray& pending = m_slurmPartial[key];
    pending += bytes;
    if (flush && !pending.isEmpty() && !pending.endsWith('\n'))
        pending += '\n';
    const qsizetype end = pending.lastIndexOf('\n') + 1;
    if (end <= 0)
        return;
    const QByteArray whole = pending.left(end);
    pending.remove(0, end);
    takeBytes(whole);
}

void JobRun::takeBytes(const QByteArray& bytes)
{
    writeLog(bytes);
    m_partial += bytes;
    qsizetype pos = 0;
    while (true) {
        const qsizetype nl = m_partial.indexOf('\n', pos);
        if (nl < 0)
            break;
        emit line(QString::fromUtf8(m_partial.constData() + pos, nl - pos));
        pos = nl + 1;
    }
    m_partial.remove(0, pos);
    for (const storage::IterationRow& row : m_stream->feed(bytes))
        emit iteration(row);
}

void JobRun::cancel(int graceMs)
{
    if (!isRunning())
        return;
    m_cancelled = true;
    if (m_slurm) {
        m_slurm->cancel(); // scancel: Slurm signals every task; the end arrives through the poll
        return;
    }
    m_process->terminate();
    QPointer<QProcess> p = m_process.get();
    QTimer::singleShot(graceMs, this, [p] {
        if (p && p->state() != QProcess::NotRunning)
            p->kill();
    });
}

void JobRun::onOutput()
{
    const QByteArray bytes = m_process->readAllStandardOutput();
    if (bytes.isEmpty())
        return;
    takeBytes(bytes);
}

void JobRun::onFinished(int exitCode, QProcess::ExitStatus status)
{
    onOutput();
    if (m_cancelled)
        end(true, status == QProcess::NormalExit ? exitCode : -1, tr("cancelled"));
    else if (status != QProcess::NormalExit)
        end(true, -1, tr("the job crashed or was killed"));
    else if (exitCode != 0)
        end(true, exitCode,
            m_program == u"ssh"_s && exitCode == 255 ? tr("ssh failed (exit 255)")
                                                     : tr("the job exited with code %1").arg(exitCode));
    else
        end(false, 0, {});
}

void JobRun::onError(QProcess::ProcessError error)
{
    if (error == QProcess::FailedToStart)
        end(true, -1, tr("%1 did not start: %2").arg(m_program, m_process->errorString()));
}

void JobRun::end(bool aborted, int exitCode, const QString& reason)
{
    if (m_done)
        return;
    m_done = true;
    m_slurmActive = false;
    m_parsed = m_stream->finish();
    if (!m_partial.isEmpty())
        writeLog("\n"); // the job's last line had no end: ours starts on a line of its own
    writeLog((u"# exit: %1\n"_s.arg(exitCode)).toUtf8());
    m_log.close();
    emit finished(aborted, exitCode, reason);
}

} // namespace rs::session
