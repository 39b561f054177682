// SPDX-License-Identifier: Apache-2.0
// The Slurm of slurm_cluster.h and a login host in front of it: the real sshd of sshd_fixture.h, whose
// sessions get SLURM_CONF (and what else the test names) through sshd's SetEnv. For the tests whose rows run
// "this host" (sbatch here) and "login host" (sbatch through ssh): tst_launcher_slurm and tst_job_slurm.
#pragma once

#include <memory>

#include <QStringList>
#include <QTest>

#include "launch/slurm_job.h"
#include "slurm_cluster.h"
#include "sshd_fixture.h"

namespace rs::launch::test {

// The login host's sshd, up for the whole test program with the cluster (none when the cluster is not up).
inline std::unique_ptr<Sshd> loginSshd;

// Starts the cluster, then (when it is up) the login host; loginEnvironment: more NAME=value for the login
// host's sessions.
inline void startSlurmAndLoginHost(const QStringList& loginEnvironment = {})
{
    cluster = new SlurmCluster;
    if (cluster->problem.isEmpty())
        loginSshd = std::make_unique<Sshd>(QStringList { u"SetEnv "_s
            + (QStringList { u"SLURM_CONF="_s + cluster->conf } + loginEnvironment).join(u' ') });
}

inline void stopSlurmAndLoginHost()
{
    loginSshd.reset();
    delete cluster;
    cluster = nullptr;
}

// "login host": the settings submit through the real sshd; false (the test skipped or failed) when it is
// not up.
inline bool onHost(SlurmSettings& s, const QString& host)
{
    if (host != u"login host"_s)
        return true;
    if (!loginSshd || !loginSshd->skipReason.isEmpty())
        return false;
    s.loginHost = u"127.0.0.1"_s;
    s.sshOptions = loginSshd->options();
    return true;
}

inline QByteArray sshdProblem()
{
    return loginSshd ? loginSshd->skipReason : QByteArray("no Slurm, no sshd");
}

// The rows of a test run on both hosts, in its _data().
inline void hostRows()
{
    QTest::addColumn<QString>("host");
    QTest::newRow("this host") << u"this host"_s;
    QTest::newRow("login host") << u"login host"_s;
}

#define ON_HOST(settings, host)                                                                              \
    do {                                                                                                     \
        if (!onHost(settings, host)) {                                                                       \
            if (inCi())                                                                                      \
                QFAIL(sshdProblem().constData());                                                            \
            QSKIP(sshdProblem().constData());                                                                \
        }                                                                                                    \
    } while (false)

} // namespace rs::launch::test
