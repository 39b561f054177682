// SPDX-License-Identifier: Apache-2.0
// Recovery of killed runs: a run left `running` by an ingesting process on this host that no longer
// exists ends `aborted`, keeping every committed row.
#include <QCoreApplication>
#include <QSqlQuery>
#include <QSysInfo>

#include "storage/log.h"
#include "storage/store.h"
#include "storage/store_internal.h"

#ifdef Q_OS_UNIX
#include <cerrno>
#include <signal.h>
#endif

using namespace Qt::StringLiterals;

namespace rs::storage {

int Store::recoverInterruptedRuns()
{
    int ended = 0;
#ifdef Q_OS_UNIX
    const QString host = QSysInfo::machineHostName();
    QSqlQuery q(database());
    q.prepare(
        u"SELECT id, ingest_pid FROM runs WHERE outcome='running' AND ingest_host=? AND ingest_pid IS NOT NULL"_s);
    q.addBindValue(host);
    if (!q.exec())
        return 0;
    QVector<QPair<qint64, qint64>> candidates;
    while (q.next())
        candidates.append({ q.value(0).toLongLong(), q.value(1).toLongLong() });
    for (const auto& [id, pid] : candidates) {
        // kill(pid, 0) probes without signalling: ESRCH means no such process.
        if (pid <= 0 || pid == QCoreApplication::applicationPid() || ::kill(pid_t(pid), 0) == 0
            || errno != ESRCH)
            continue;
        auto run = this->run(id);
        if (!run || run->outcome != outcome::Running)
            continue;
        run->outcome = outcome::Aborted;
        run->message = u"the ingesting process (pid %1 on %2) ended before the run did"_s.arg(pid).arg(host);
        if (!run->peakAllocated) {
            for (const IterationRow& it : iterations(id)) {
                for (const auto& v :
                    { it.forwardPeakAllocated, it.backwardPeakAllocated, it.optimizerPeakAllocated })
                    if (v && (!run->peakAllocated || *v > *run->peakAllocated))
                        run->peakAllocated = v;
            }
            if (run->peakAllocated)
                run->peakNote = u"max over the iterations stored before the run ended"_s;
        }
        // Only if still `running` at write time: another process may have recovered it first.
        QSqlQuery claim(database());
        claim.prepare(u"UPDATE runs SET outcome='aborted' WHERE id=? AND outcome='running'"_s);
        claim.addBindValue(id);
        if (!beginWrite())
            continue;
        if (claim.exec() && claim.numRowsAffected() == 1 && updateRun(*run)) {
            commitWrite();
            ++ended;
        } else {
            rollbackWrite();
        }
    }
#endif
    if (ended > 0)
        qCDebug(lcStore) << ended << "run(s) of a killed ingest ended aborted in" << m_path;
    return ended;
}

} // namespace rs::storage
