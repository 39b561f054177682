// SPDX-License-Identifier: Apache-2.0
// A real OpenSSH server for the tests that cross ssh (the remote worker, a Slurm login host).
#pragma once

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QStringList>
#include <QTemporaryDir>
#include <QTest>

#include "launch/local_launcher.h"

namespace rs::launch::test {

// A real OpenSSH server on a loopback port, for the remote launch: its own host key, one user key, this user
// allowed in. Not started (a reason in skipReason) when sshd or ssh is missing or privilege separation has no
// /run/sshd.
class Sshd {
public:
    // extraConfig: more sshd_config lines (e.g. "SetEnv SLURM_CONF=..." for a login host).
    explicit Sshd(const QStringList& extraConfig = {})
    {
        const QString sshd = QStandardPaths::findExecutable(
            QStringLiteral("sshd"), { QStringLiteral("/usr/sbin"), QStringLiteral("/usr/bin") });
        const QString keygen = QStandardPaths::findExecutable(QStringLiteral("ssh-keygen"));
        if (sshd.isEmpty() || keygen.isEmpty()
            || QStandardPaths::findExecutable(QStringLiteral("ssh")).isEmpty()) {
            skipReason = "no sshd / ssh / ssh-keygen (openssh-server, openssh-client)";
            return;
        }
        if (!QDir(QStringLiteral("/run/sshd")).exists() && !QDir().mkpath(QStringLiteral("/run/sshd"))) {
            skipReason = "sshd's privilege separation needs /run/sshd, which this user cannot create";
            return;
        }
        for (const char* key : { "host_key", "user_key" }) {
            QProcess k;
            k.start(keygen,
                { QStringLiteral("-q"), QStringLiteral("-t"), QStringLiteral("ed25519"), QStringLiteral("-N"),
                    QString(), QStringLiteral("-f"), m_dir.filePath(QLatin1String(key)) });
            if (!k.waitForFinished(20000) || k.exitCode() != 0) {
                skipReason = "ssh-keygen failed";
                return;
            }
        }
        QFile::copy(m_dir.filePath(QStringLiteral("user_key.pub")),
            m_dir.filePath(QStringLiteral("authorized_keys")));
        port = rs::launch::freeLoopbackPort();
        QFile config(m_dir.filePath(QStringLiteral("sshd_config")));
        config.open(QIODevice::WriteOnly);
        config.write(
            QStringLiteral("Port %1\nListenAddress 127.0.0.1\nHostKey %2\nAuthorizedKeysFile %3\n"
                           "PasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\n"
                           "UsePAM no\nPermitRootLogin prohibit-password\nPidFile %4\n")
                .arg(port)
                .arg(m_dir.filePath(QStringLiteral("host_key")),
                    m_dir.filePath(QStringLiteral("authorized_keys")),
                    m_dir.filePath(QStringLiteral("sshd.pid")))
                .toUtf8());
        for (const QString& line : extraConfig)
            config.write(line.toUtf8() + '\n');
        config.close();
        m_server.start(
            sshd, { QStringLiteral("-D"), QStringLiteral("-e"), QStringLiteral("-f"), config.fileName() });
        if (!m_server.waitForStarted(5000)) {
            skipReason = "sshd did not start";
            return;
        }
        // Ready once a login runs a command.
        for (int attempt = 0; attempt < 50; ++attempt) {
            QProcess probe;
            probe.start(QStringLiteral("ssh"),
                options() + QStringList { QStringLiteral("127.0.0.1"), QStringLiteral("true") });
            if (probe.waitForFinished(5000) && probe.exitCode() == 0)
                return;
            QTest::qWait(100);
        }
        skipReason = "sshd never accepted the test key: " + m_server.readAllStandardError().left(300);
    }
    ~Sshd()
    {
        m_server.terminate();
        m_server.waitForFinished(3000);
    }
    QStringList options() const
    {
        return { QStringLiteral("-p"), QString::number(port), QStringLiteral("-i"),
            m_dir.filePath(QStringLiteral("user_key")), QStringLiteral("-o"),
            QStringLiteral("StrictHostKeyChecking=no"), QStringLiteral("-o"),
            QStringLiteral("UserKnownHostsFile=/dev/null"), QStringLiteral("-o"),
            QStringLiteral("LogLevel=ERROR") };
    }
    QByteArray skipReason;
    int port = 0;

private:
    QTemporaryDir m_dir;
    QProcess m_server;
};
} // namespace rs::launch::test
