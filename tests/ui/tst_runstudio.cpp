// SPDX-License-Identifier: Apache-2.0
// The README's main command, scripts/run-studio.sh (issue 29 item 11), on a copy of the scripts with the
// system's package and build tools replaced by recorders: with no display it says how to get one (or how to
// do the work with the command line) and neither installs, builds nor starts a window inside a virtual
// display no one sees; with a display it installs the build's and the GUI's packages only (no sshd, Slurm or
// munge, which only the tests start), builds the programs and starts the studio.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace Qt::StringLiterals;

namespace {

bool writeScript(const QString& path, const QByteArray& body)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return false;
    f.write("#!/bin/sh\n" + body);
    f.close();
    return f.setPermissions(f.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeUser);
}

bool copyScript(const QString& name, const QString& toDir)
{
    const QString to = toDir + u"/scripts/"_s + name;
    return QFile::copy(QStringLiteral(RS_SOURCE_DIR "/scripts/") + name, to)
        && QFile(to).setPermissions(QFile(to).permissions() | QFileDevice::ExeOwner);
}

} // namespace

class TestRunStudio : public QObject {
    Q_OBJECT
private slots:
    void withAndWithoutADisplay_data()
    {
        QTest::addColumn<QString>("display"); // "": none
        QTest::addColumn<int>("exitCode");
        QTest::newRow("no display") << QString() << 2;
        QTest::newRow("X display") << u":5"_s << 0;
    }
    void withAndWithoutADisplay()
    {
        QFETCH(QString, display);
        QFETCH(int, exitCode);
        QTemporaryDir dir;
        const QString root = dir.filePath(u"repo"_s), bin = dir.filePath(u"bin"_s),
                      log = dir.filePath(u"log"_s);
        QVERIFY(QDir().mkpath(root + u"/scripts"_s) && QDir().mkpath(bin));
        QVERIFY(QDir().mkpath(root + u"/build/dev/app/studio"_s));
        for (const QString& s : { u"run-studio.sh"_s, u"setup.sh"_s, u"build.sh"_s })
            QVERIFY(copyScript(s, root));
        const QByteArray record = "echo \"$(basename \"$0\") $*\" >> '" + log.toUtf8() + "'\n";
        // Every package missing, so setup asks apt for the whole list; sudo runs what it is given.
        QVERIFY(writeScript(bin + u"/dpkg-query"_s, "exit 1\n"));
        QVERIFY(writeScript(bin + u"/sudo"_s, "exec \"$@\"\n"));
        for (const QString& tool : { u"apt-get"_s, u"cmake"_s, u"xvfb-run"_s, u"Xvfb"_s })
            QVERIFY(writeScript(bin + u'/' + tool, record));
        QVERIFY(writeScript(root + u"/build/dev/app/studio/recompute-studio"_s,
            "echo \"studio started $*\" >> '" + log.toUtf8() + "'\n"));
        QProcessEnvironment env;
        env.insert(u"PATH"_s, bin + u":/usr/bin:/bin"_s);
        env.insert(u"HOME"_s, dir.path());
        if (!display.isEmpty())
            env.insert(u"DISPLAY"_s, display);
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(u"bash"_s, { root + u"/scripts/run-studio.sh"_s, u"--page"_s, u"1"_s });
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QFile l(log);
        const QString calls = l.open(QIODevice::ReadOnly) ? QString::fromUtf8(l.readAll()) : QString();
        QVERIFY2(p.exitCode() == exitCode, qPrintable(err + calls));
        QVERIFY2(!calls.contains(u"xvfb-run"_s) && !calls.contains(u"Xvfb"_s), qPrintable(calls));
        if (display.isEmpty()) {
            QVERIFY2(err.contains(u"no display"_s) && err.contains(u"ssh -X"_s), qPrintable(err));
            QVERIFY2(err.contains(u"recompute --help"_s), qPrintable(err)); // the command line's way
            QVERIFY2(calls.isEmpty(), qPrintable(calls)); // nothing installed, built or started
            return;
        }
        const QString install = calls.section(u'\n', 1, 1); // apt-get update, then apt-get install
        QVERIFY2(install.startsWith(u"apt-get"_s) && install.contains(u"qt6-base-dev"_s), qPrintable(calls));
        for (const QString& testOnly :
            { u"slurm-wlm"_s, u"munge"_s, u"openssh-server"_s, u"python3-pandas"_s })
            QVERIFY2(!install.contains(testOnly), qPrintable(install));
        QVERIFY2(calls.contains(u"cmake --build --preset dev"_s), qPrintable(calls));
        QVERIFY2(calls.contains(u"studio started --page 1"_s), qPrintable(calls));
    }
};

QTEST_GUILESS_MAIN(TestRunStudio)
#include "tst_runstudio.moc"
