// SPDX-License-Identifier: Apache-2.0
// The CLI tests' one way to run a built program to its end and keep what it said.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace rs::test {

struct CliRun {
    int code = -1; // the exit code; -1 for a crash, a signal or a time-out
    QString out, err;
};

inline CliRun runToEnd(const QString& program, const QStringList& args, int timeoutMs,
    const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForFinished(timeoutMs))
        return {};
    return { p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
        QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError()) };
}

} // namespace rs::test
