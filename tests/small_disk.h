// SPDX-License-Identifier: Apache-2.0
// A real full disk for the tests that need one (issue 30): a tmpfs of a few hundred KiB mounted on a
// folder of the test's own, filled to its last byte (or to `leaveKiB`) by a file that can be removed
// again. Mounting needs root (CI runs as root in its own mount namespace); elsewhere the test skips.
#pragma once

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QString>
#include <QTemporaryDir>

namespace rs::test {

class SmallDisk {
public:
    explicit SmallDisk(int sizeKiB)
    {
        m_path = m_dir.filePath(QStringLiteral("disk"));
        QDir().mkpath(m_path);
        const QByteArray options = "size=" + QByteArray::number(sizeKiB) + "k";
        m_mounted
            = ::mount("tmpfs", QFile::encodeName(m_path).constData(), "tmpfs", 0, options.constData()) == 0;
    }
    ~SmallDisk()
    {
        if (m_mounted)
            ::umount2(QFile::encodeName(m_path).constData(), MNT_DETACH);
    }
    SmallDisk(const SmallDisk&) = delete;
    SmallDisk& operator=(const SmallDisk&) = delete;

    bool mounted() const { return m_mounted; }
    QString path() const { return m_path; }
    QString filePath(const QString& name) const { return m_path + u'/' + name; }

    // Fills what is free but `leaveKiB` with one file (writes until the disk refuses a 4 KiB block).
    // Returns the KiB that stayed free.
    qint64 fill(int leaveKiB = 0)
    {
        QFile f(filePath(QStringLiteral(".fill")));
        if (!f.open(QIODevice::WriteOnly | QIODevice::Append))
            return -1;
        const QByteArray block(4096, '\0');
        while (freeKiB() > leaveKiB) {
            if (f.write(block) != block.size() || !f.flush())
                break;
        }
        return freeKiB();
    }
    qint64 freeKiB() const
    {
        struct statvfs s;
        if (::statvfs(QFile::encodeName(m_path).constData(), &s) != 0)
            return -1;
        return qint64(s.f_bavail) * qint64(s.f_frsize) / 1024;
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
    bool m_mounted = false;
};

} // namespace rs::test
