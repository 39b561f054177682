// SPDX-License-Identifier: Apache-2.0
#include "launch/local_launcher.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QPointer>
#include <QStandardPaths>
#include <QTemporaryFile>
#include <QTimer>

using namespace Qt::StringLiterals;

namespace rs::launch {

static const QString kWorkerName = u"recompute-bench"_s;

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

LocalLauncher::LocalLauncher(QObject* parent)
    : QObject(parent)
{
}

LocalLauncher::~LocalLauncher()
{
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(2000);
    }
}

bool LocalLauncher::start(const QJsonObject& recipe, const LaunchOptions& options, QString* error)
{
    return startWithRecipeText(QJsonDocument(recipe).toJson(QJsonDocument::Indented), options, error);
}

bool LocalLauncher::startWithRecipeText(
    const QByteArray& recipeJson, const LaunchOptions& options, QString* error)
{
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (isRunning())
        return fail(u"a worker is already running"_s);
    QStringList searched;
    m_workerPath = options.workerPath.isEmpty() ? findWorker(&searched) : options.workerPath;
    if (m_workerPath.isEmpty())
        return fail(u"recompute-bench not found; set RS_WORKER to its path (looked at: %1)"_s.arg(
            searched.join(u", "_s)));

    m_recipeFile = std::make_unique<QTemporaryFile>(QDir::tempPath() + u"/recompute-recipe-XXXXXX.json"_s);
    if (!m_recipeFile->open() || m_recipeFile->write(recipeJson) != recipeJson.size()
        || !m_recipeFile->flush())
        return fail(u"cannot write the recipe to a temporary file: "_s + m_recipeFile->errorString());
    m_recipeFile->close();

    m_reader = JsonLinesReader();
    m_gotResult = false;
    m_cancelled = false;
    m_finishedEmitted = false;
    m_arguments = QStringList { m_recipeFile->fileName() } + options.extraArguments;

    m_process = std::make_unique<QProcess>();
    m_process->setProgram(m_workerPath);
    m_process->setArguments(m_arguments);
    if (!options.workingDirectory.isEmpty())
        m_process->setWorkingDirectory(options.workingDirectory);
    if (!options.environment.isEmpty()) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString& kv : options.environment) {
            const qsizetype eq = kv.indexOf(u'=');
            if (eq > 0)
                env.insert(kv.left(eq), kv.mid(eq + 1));
        }
        m_process->setProcessEnvironment(env);
    }
    m_process->setProcessChannelMode(QProcess::SeparateChannels);
    connect(m_process.get(), &QProcess::readyReadStandardOutput, this, &LocalLauncher::onStdout);
    connect(m_process.get(), &QProcess::readyReadStandardError, this, &LocalLauncher::onStderr);
    connect(m_process.get(), &QProcess::finished, this, &LocalLauncher::onFinished);
    connect(m_process.get(), &QProcess::errorOccurred, this, &LocalLauncher::onError);
    connect(m_process.get(), &QProcess::started, this, &LocalLauncher::started);
    m_process->start(QIODevice::ReadOnly);
    return true;
}

void LocalLauncher::cancel(int graceMs)
{
    if (!isRunning())
        return;
    m_cancelled = true;
    m_process->terminate();
    QPointer<QProcess> process = m_process.get();
    QTimer::singleShot(graceMs, this, [process] {
        if (process && process->state() != QProcess::NotRunning)
            process->kill();
    });
}

bool LocalLauncher::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

qint64 LocalLauncher::pid() const
{
    return m_process ? m_process->processId() : 0;
}

void LocalLauncher::onStdout()
{
    const auto events = m_reader.feed(m_process->readAllStandardOutput());
    for (const auto& e : events)
        dispatch(e);
    for (const auto& bad : m_reader.takeMalformed())
        emit malformedLine(bad.line, bad.why);
}

void LocalLauncher::onStderr()
{
    const QByteArray bytes = m_process->readAllStandardError();
    if (!bytes.isEmpty())
        emit stderrText(QString::fromLocal8Bit(bytes));
}

void LocalLauncher::dispatch(const QJsonObject& e)
{
    const QString kind = e.value(u"event"_s).toString();
    if (kind == u"result")
        m_gotResult = true;
    emit event(e);
    if (kind == u"hello")
        emit hello(e);
    else if (kind == u"recipe")
        emit recipe(e);
    else if (kind == u"phase")
        emit phase(e);
    else if (kind == u"iteration")
        emit iteration(e);
    else if (kind == u"rank_summary")
        emit rankSummary(e);
    else if (kind == u"result")
        emit result(e);
}

void LocalLauncher::onFinished(int exitCode, QProcess::ExitStatus status)
{
    // Drain what is left, including a last line without '\n'.
    onStdout();
    onStderr();
    for (const auto& e : m_reader.finish())
        dispatch(e);
    for (const auto& bad : m_reader.takeMalformed())
        emit malformedLine(bad.line, bad.why);
    if (status == QProcess::CrashExit) {
        const QString why = m_cancelled ? u"cancelled: the worker was stopped"_s
                                        : u"the worker crashed or was killed by a signal"_s;
        emitFinished(!m_gotResult, -1, why);
        return;
    }
    if (!m_gotResult) {
        emitFinished(true, exitCode,
            m_cancelled ? u"cancelled: the worker was stopped"_s
                        : u"the worker exited with code %1 without a result"_s.arg(exitCode));
        return;
    }
    emitFinished(
        false, exitCode, exitCode == 0 ? QString() : u"the worker exited with code %1"_s.arg(exitCode));
}

void LocalLauncher::onError(QProcess::ProcessError error)
{
    if (error == QProcess::FailedToStart)
        emitFinished(true, -1, u"cannot start %1: %2"_s.arg(m_workerPath, m_process->errorString()));
}

void LocalLauncher::emitFinished(bool aborted, int exitCode, const QString& reason)
{
    if (m_finishedEmitted)
        return;
    m_finishedEmitted = true;
    emit finished(aborted, exitCode, reason);
}

} // namespace rs::launch
