// SPDX-License-Identifier: Apache-2.0
// The main window as first started: it fits 1400x900, seeds an empty store with the guide's measurements
// (compiled in from resources/sample/), opens on a preset, and a report export from it writes a file.
#include <QFileInfo>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "mainwindow.h"
#include "models/runsmodel.h"
#include "recipedocument.h"
#include "runspage.h"
#include "storage/store.h"

using namespace rs::ui;

class TestMainWindow : public QObject {
    Q_OBJECT

private slots:
    void firstStart()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        MainWindow window(dir.filePath(QStringLiteral("first.sqlite")));
        // usable at 1400x900
        const QSize minimum = window.minimumSizeHint();
        QVERIFY2(minimum.width() <= 1400 && minimum.height() <= 900,
            qPrintable(QStringLiteral("%1x%2").arg(minimum.width()).arg(minimum.height())));
        QCOMPARE(window.size(), QSize(1400, 900));
        QCOMPARE(window.pages()->count(), 3);
        // the guide's sample: Moonlight 16B (6 rows) and Nemotron 3 Nano (6 rows), marked as such
        QVERIFY(window.store()->isOpen());
        const int runs = window.runsPage()->model()->rowCount();
        QCOMPARE(runs, 12);
        for (int row = 0; row < runs; ++row)
            QCOMPARE(window.runsPage()->model()->run(row)->source, QStringLiteral("guide"));
        // opened on a preset, not an empty recipe
        QVERIFY(window.document()->recipe().num_layers > 0);
        QVERIFY(!window.document()->isModified());
        const QString report = dir.filePath(QStringLiteral("report.md"));
        QVERIFY(window.exportReport(report));
        QVERIFY(QFileInfo(report).size() > 200);

        // a Megatron Bridge log imported from the File menu's action lands in the table, selected
        QString error;
        const qint64 imported = window.importLog(
            QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/bridge_moe_pass.log"), &error);
        QVERIFY2(imported > 0, qPrintable(error));
        QCOMPARE(window.runsPage()->model()->rowCount(), 13);
        QCOMPARE(window.runsPage()->selectedRunId(), imported);
        QCOMPARE(window.runsPage()->model()->runById(imported)->source, QStringLiteral("import"));
        QVERIFY(!window.importLog(dir.filePath(QStringLiteral("missing.log")), &error));
        QVERIFY(error.contains(QStringLiteral("missing.log")));
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
