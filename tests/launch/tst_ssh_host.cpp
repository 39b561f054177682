// SPDX-License-Identifier: Apache-2.0
// The ssh destination check (issue 16): `--host` reaches ssh after "--" and only as [user@]host[:port];
// a host that ssh would read as an option ("-oProxyCommand=...") or that holds anything else is refused
// before ssh starts, and nothing runs.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "launch/worker_launcher.h"

using namespace Qt::StringLiterals;

class TestSshHost : public QObject {
    Q_OBJECT
private slots:
    void parse_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<QString>("destination");
        QTest::addColumn<QString>("port");
        QTest::newRow("name") << u"gpu-host"_s << true << u"gpu-host"_s << QString();
        QTest::newRow("user@name") << u"alice@gpu01.example.org"_s << true << u"alice@gpu01.example.org"_s
                                   << QString();
        QTest::newRow("user@ip:port") << u"bob@10.0.0.7:2222"_s << true << u"bob@10.0.0.7"_s << u"2222"_s;
        QTest::newRow("ipv6") << u"[::1]:22"_s << true << u"::1"_s << u"22"_s;
        QTest::newRow("user_with_dot") << u"first.last@h"_s << true << u"first.last@h"_s << QString();
        QTest::newRow("ProxyCommand") << u"-oProxyCommand=touch /tmp/x"_s << false << QString() << QString();
        QTest::newRow("-p option") << u"-p"_s << false << QString() << QString();
        QTest::newRow("user starting with -") << u"-l@host"_s << false << QString() << QString();
        QTest::newRow("host starting with -")
            << u"alice@-oProxyCommand=x"_s << false << QString() << QString();
        QTest::newRow("space") << u"host name"_s << false << QString() << QString();
        QTest::newRow("shell") << u"host;touch x"_s << false << QString() << QString();
        QTest::newRow("port 0") << u"host:0"_s << false << QString() << QString();
        QTest::newRow("port 70000") << u"host:70000"_s << false << QString() << QString();
        QTest::newRow("empty") << QString() << false << QString() << QString();
        QTest::newRow("two @") << u"a@b@c"_s << false << QString() << QString();
        QTest::newRow("newline") << u"host\n-oX"_s << false << QString() << QString();
    }
    void parse()
    {
        QFETCH(QString, host);
        QFETCH(bool, ok);
        QFETCH(QString, destination);
        QFETCH(QString, port);
        QString d, p, why;
        QCOMPARE(rs::launch::parseSshHost(host, &d, &p, &why), ok);
        if (ok) {
            QCOMPARE(d, destination);
            QCOMPARE(p, port);
        } else {
            QVERIFY2(why.contains(u"expected [user@]host[:port]"_s), qPrintable(why));
        }
    }

    void launcherRefusesBeforeSshStarts()
    {
        QTemporaryDir dir;
        const QString marker = dir.filePath(u"pwned"_s);
        rs::launch::WorkerLauncher launcher;
        rs::launch::LaunchOptions o;
        o.sshHost = u"-oProxyCommand=touch "_s + marker;
        QString error;
        QVERIFY(!launcher.start(nlohmann::json { { "num_layers", 2 } }, o, &error));
        QVERIFY2(error.contains(u"starts with '-'"_s), qPrintable(error));
        QVERIFY(!launcher.isRunning());
        QVERIFY(!QFile::exists(marker));
    }
};

QTEST_GUILESS_MAIN(TestSshHost)
#include "tst_ssh_host.moc"
