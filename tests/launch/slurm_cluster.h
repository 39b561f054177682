// SPDX-License-Identifier: Apache-2.0
// A real Slurm on this host for the tests that submit jobs: munged, a controller (slurmctld) and a node
// daemon (slurmd) with a config in the test's own folder (one node, partition "debug", 4 CPUs). Shared by
// tst_slurm (SlurmJob) and tst_launcher_slurm (the worker through WorkerLauncher and RunSession).
#pragma once

#include <csignal>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>

#include "launch/slurm_job.h"
#include "launch/worker_launcher.h"

namespace rs::launch::test {

using namespace Qt::StringLiterals;

// In CI every daemon must be installed (scripts/setup.sh installs slurm-wlm and munge): a missing one is a
// failure; one that cannot start where the test runs (no root, a container without what it needs) skips.
inline bool inCi()
{
    return qEnvironmentVariable("CI") == u"true"_s;
}

class SlurmCluster {
public:
    SlurmCluster()
    {
        const QStringList sbin = { u"/usr/sbin"_s, u"/usr/bin"_s };
        for (const QString& tool : { u"munged"_s, u"slurmctld"_s, u"slurmd"_s, u"sbatch"_s, u"squeue"_s,
                 u"scancel"_s, u"sinfo"_s }) {
            if (QStandardPaths::findExecutable(tool, sbin).isEmpty()) {
                problem = "no " + tool.toUtf8() + " (Debian's slurm-wlm and munge)";
                missingTool = true;
                return;
            }
        }
        if (::geteuid() != 0) {
            problem = "slurmd runs jobs as root here; this test needs root";
            return;
        }
        QDir d(m_dir.path());
        // munged wants every folder above its socket searchable by all.
        QFile::setPermissions(m_dir.path(),
            QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup | QFile::ExeGroup
                | QFile::ReadOther | QFile::ExeOther);
        for (const char* sub : { "state", "spool", "log", "run", "jobs" })
            d.mkpath(QLatin1String(sub));
        const QString key = d.filePath(u"munge.key"_s);
        {
            QFile k(key);
            k.open(QIODevice::WriteOnly);
            QByteArray bytes(1024, '\0');
            for (char& c : bytes)
                c = char(QRandomGenerator::global()->generate());
            k.write(bytes);
        }
        QFile::setPermissions(key, QFile::ReadOwner);
        socket = d.filePath(u"run/munge.sock"_s);
        QProcess munge;
        munge.start(QStandardPaths::findExecutable(u"munged"_s, sbin),
            { u"--key-file="_s + key, u"--socket="_s + socket,
                u"--pid-file="_s + d.filePath(u"run/munged.pid"_s),
                u"--log-file="_s + d.filePath(u"log/munged.log"_s),
                u"--seed-file="_s + d.filePath(u"state/munge.seed"_s) });
        if (!munge.waitForFinished(10000) || munge.exitCode() != 0) {
            problem = "munged did not start: " + munge.readAllStandardError().left(300);
            return;
        }
        host = QSysInfo::machineHostName().section(u'.', 0, 0);
        const int ctldPort = freeLoopbackPort();
        int slurmdPort = freeLoopbackPort();
        while (slurmdPort == ctldPort)
            slurmdPort = freeLoopbackPort();
        conf = d.filePath(u"slurm.conf"_s);
        QFile c(conf);
        c.open(QIODevice::WriteOnly);
        c.write(QStringLiteral(
            "ClusterName=rstest\nSlurmctldHost=%1(127.0.0.1)\nSlurmctldPort=%2\nSlurmdPort=%3\n"
            "AuthType=auth/munge\nAuthInfo=socket=%4\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n"
            "StateSaveLocation=%5/state\nSlurmdSpoolDir=%5/spool\nSlurmctldPidFile=%5/run/slurmctld.pid\n"
            "SlurmdPidFile=%5/run/slurmd.pid\nSlurmctldLogFile=%5/log/slurmctld.log\n"
            "SlurmdLogFile=%5/log/slurmd.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
            "SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
            "SlurmdParameters=config_overrides\nReturnToService=2\nMpiDefault=none\nSwitchType=switch/none\n"
            "MinJobAge=600\nNodeName=%1 NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN\n"
            "PartitionName=debug Nodes=%1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n")
                    .arg(host)
                    .arg(ctldPort)
                    .arg(slurmdPort)
                    .arg(socket, m_dir.path())
                    .toUtf8());
        c.close();
        qputenv("SLURM_CONF", conf.toUtf8());
        m_ctld.start(QStandardPaths::findExecutable(u"slurmctld"_s, sbin), { u"-D"_s, u"-f"_s, conf });
        m_slurmd.start(
            QStandardPaths::findExecutable(u"slurmd"_s, sbin), { u"-D"_s, u"-N"_s, host, u"-f"_s, conf });
        if (!m_ctld.waitForStarted(5000) || !m_slurmd.waitForStarted(5000)) {
            problem = "slurmctld / slurmd did not start";
            return;
        }
        for (int attempt = 0; attempt < 150; ++attempt) {
            QProcess sinfo;
            sinfo.start(u"sinfo"_s, { u"-h"_s, u"-o"_s, u"%t"_s });
            if (sinfo.waitForFinished(5000) && sinfo.readAllStandardOutput().trimmed() == "idle")
                return;
            QTest::qWait(200);
        }
        problem = "the Slurm node never became idle: " + m_ctld.readAllStandardError().right(300)
            + m_slurmd.readAllStandardError().right(300);
    }
    ~SlurmCluster()
    {
        for (QProcess* p : { &m_slurmd, &m_ctld }) {
            p->terminate();
            if (!p->waitForFinished(5000))
                p->kill();
        }
        QFile pid(QDir(m_dir.path()).filePath(u"run/munged.pid"_s));
        if (pid.open(QIODevice::ReadOnly))
            ::kill(pid_t(pid.readAll().trimmed().toInt()), SIGTERM);
        qunsetenv("SLURM_CONF");
    }
    SlurmSettings settings(const QString& jobName) const
    {
        SlurmSettings s;
        s.partition = u"debug"_s;
        s.jobName = jobName;
        s.workDir = QDir(m_dir.path()).filePath(u"jobs/"_s + jobName);
        s.pollIntervalMs = 200;
        return s;
    }
    QByteArray problem; // why the cluster is not up
    bool missingTool = false; // a package scripts/setup.sh should have installed: a failure in CI
    QString conf;
    QString socket;
    QString host;

private:
    QTemporaryDir m_dir;
    QProcess m_ctld;
    QProcess m_slurmd;
};

// The cluster lives for the whole test program: starting one takes seconds.
inline SlurmCluster* cluster = nullptr;

#define REQUIRE_CLUSTER()                                                                                    \
    do {                                                                                                     \
        if (!cluster->problem.isEmpty()) {                                                                   \
            if (inCi() && cluster->missingTool)                                                              \
                QFAIL(cluster->problem.constData());                                                         \
            QSKIP(cluster->problem.constData());                                                             \
        }                                                                                                    \
    } while (false)

} // namespace rs::launch::test
