// SPDX-License-Identifier: Apache-2.0
// Another process (the sqlite3 shell) holding a store's write lock, for the tests of a locked store.
#pragma once

#include <memory>

#include <QElapsedTimer>
#include <QProcess>
#include <QStandardPaths>
#include <QString>

namespace rs::test {

using namespace Qt::StringLiterals;

// Holds the write lock (BEGIN IMMEDIATE) of `db` for `seconds`; returns once it holds it, or nullptr when
// there is no sqlite3 shell or it never took the lock.
inline std::unique_ptr<QProcess> holdWriteLock(const QString& db, int seconds)
{
    const QString sqlite = QStandardPaths::findExecutable(u"sqlite3"_s);
    if (sqlite.isEmpty())
        return nullptr;
    auto p = std::make_unique<QProcess>();
    p->start(sqlite, { db });
    if (!p->waitForStarted(5000))
        return nullptr;
    p->write(u"BEGIN IMMEDIATE;\nSELECT 'locked';\n.shell sleep %1\nCOMMIT;\n"_s.arg(seconds).toUtf8());
    p->closeWriteChannel();
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 10000) {
        p->waitForReadyRead(100);
        if (p->readAllStandardOutput().contains("locked"))
            return p;
    }
    return nullptr;
}

} // namespace rs::test
