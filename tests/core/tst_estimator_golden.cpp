// SPDX-License-Identifier: Apache-2.0
// Whole-model golden dumps of the estimator: for every preset and benchmark recipe, in both layouts, every
// recompute choice's term table (tests/core/estimate_golden.h) must equal the file kept under
// tests/core/golden/. A change to the estimate shows as a diff of those files, to be read and committed on
// purpose: run with RS_UPDATE_GOLDEN=1 to rewrite them.
#include <QtTest>

#include "core/recipe_json.h"
#include "estimate_golden.h"

using namespace rs;

class TestEstimatorGolden : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void termTablesEqualTheGoldenFiles_data();
    void termTablesEqualTheGoldenFiles();
};

void TestEstimatorGolden::termTablesEqualTheGoldenFiles_data()
{
    QTest::addColumn<QString>("recipe");
    QTest::addColumn<QString>("layout");
    QStringList files;
    for (const char* folder : { RS_SOURCE_DIR "/resources/presets", RS_SOURCE_DIR "/bench/gpu/recipes" }) {
        const QDir dir(QString::fromUtf8(folder));
        for (const QString& f : dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name))
            files << dir.filePath(f);
    }
    QVERIFY(files.size() >= 6);
    for (const QString& f : files)
        for (const char* layout : { "megatron", "worker" })
            QTest::newRow(qPrintable(QFileInfo(f).completeBaseName() + u' ' + QLatin1String(layout)))
                << f << QString::fromLatin1(layout);
}

void TestEstimatorGolden::termTablesEqualTheGoldenFiles()
{
    QFETCH(QString, recipe);
    QFETCH(QString, layout);
    QFile in(recipe);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const Recipe r = recipeFromJsonText(in.readAll().toStdString(), recipe.toStdString());
    const QByteArray actual
        = QByteArray::fromStdString(golden::estimateTable(r, *layoutFromName(layout.toStdString())));
    const QString path = QStringLiteral(RS_SOURCE_DIR "/tests/core/golden/estimate-%1-%2.txt")
                             .arg(QFileInfo(recipe).completeBaseName(), layout);
    if (qEnvironmentVariableIsSet("RS_UPDATE_GOLDEN")) {
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(actual);
        QSKIP("golden file rewritten");
    }
    QFile expected(path);
    QVERIFY2(
        expected.open(QIODevice::ReadOnly), qPrintable(path + u" is missing: run with RS_UPDATE_GOLDEN=1"));
    const QList<QByteArray> want = expected.readAll().split('\n');
    const QList<QByteArray> got = actual.split('\n');
    for (qsizetype i = 0; i < std::min(want.size(), got.size()); ++i)
        QVERIFY2(want[i] == got[i],
            qPrintable(QStringLiteral("%1:%2\n  golden:   %3\n  estimate: %4")
                           .arg(path)
                           .arg(i + 1)
                           .arg(QString::fromUtf8(want[i]), QString::fromUtf8(got[i]))));
    QCOMPARE(got.size(), want.size());
}

QTEST_GUILESS_MAIN(TestEstimatorGolden)
#include "tst_estimator_golden.moc"
