// SPDX-License-Identifier: Apache-2.0
// Report export, content checked: the guide's comparison tables with their published deltas, the trade-off
// chart embedded, recipe diffs against the control, environment and revisions, the validator's findings,
// the guide's data marked as imported; and the PDF, Markdown and CSV files.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include "core/recipe_json.h"
#include "presets.h"
#include "recipedocument.h"
#include "reportwriter.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;

namespace {

QByteArray readAll(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

qint64 insertWorkerRun(storage::Store* store, const Recipe& recipe, double gb, double ms)
{
    storage::RunRecord run;
    run.source = storage::source::Worker;
    run.createdAt = QDateTime::currentDateTimeUtc();
    storage::fillFromRecipeJson(
        &run, QJsonDocument::fromJson(QByteArray::fromStdString(recipeToJson(recipe).dump())).object());
    run.device = QStringLiteral("cpu");
    run.host = QStringLiteral("testhost");
    run.workerVersion = QStringLiteral("0.1.0");
    run.libtorchVersion = QStringLiteral("1.13.1");
    run.outcome = storage::outcome::Pass;
    run.peakAllocated = qint64(gb * 1e9);
    run.steadyStepMs = ms;
    run.worldSize = 1;
    return store->insertRun(run);
}

} // namespace

class TestReport : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QString error;
        QVERIFY2(m_store.open(m_dir.filePath(QStringLiteral("runs.sqlite")), &error), qPrintable(error));
        QVERIFY2(m_store.seedGuideSample(storage::Store::guideSamplePath(), &error) > 0, qPrintable(error));
        // A worker comparison with full recipes: the gpt preset against its [] control.
        const Recipe candidate = presetRecipe(QStringLiteral("gpt-unfused"));
        const qint64 control = insertWorkerRun(&m_store, RecipeDocument::controlFor(candidate), 10.0, 100.0);
        const qint64 run = insertWorkerRun(&m_store, candidate, 8.0, 112.0);
        QVERIFY(control > 0 && run > 0);
        QVERIFY(m_store.setControl(run, control));
    }

    void htmlCarriesEverything()
    {
        ReportWriter writer(m_store, {});
        Recipe edited = presetRecipe(QStringLiteral("dense-gqa-swiglu"));
        writer.setEditedRecipe(edited, validate(edited));
        QVERIFY(writer.tables().size() >= 3); // Moonlight, Nemotron, the worker pair
        const QString html = writer.html(true);
        // the guide's Moonlight table, with its published deltas
        QVERIFY(html.contains(QStringLiteral("Moonlight 16B")));
        QVERIFY(html.contains(QStringLiteral("36.618")));
        QVERIFY2(html.contains(QStringLiteral("-1.85%")), "moe_act allocated vs []");
        QVERIFY(html.contains(QStringLiteral("+1.99%")));
        QVERIFY(html.contains(QStringLiteral("Nemotron 3 Nano")));
        QVERIFY(html.contains(QStringLiteral("Imported from the guide")));
        // environment and revisions
        QVERIFY(html.contains(QStringLiteral("24bad8e677d22625d86ef2a54c9506b6e4992c93")));
        QVERIFY(html.contains(QStringLiteral("600d069b824dd5ce50367a311a5a3244478faf22")));
        // charts embedded
        QVERIFY(html.contains(QStringLiteral("<img src='data:image/png;base64,")));
        // the worker pair: a real recipe diff (recompute_modules [] vs ["core_attn"]) and its findings
        QVERIFY2(html.contains(
                     QStringLiteral("<td>recompute_modules</td><td>[]</td><td>[&quot;core_attn&quot;]</td>")),
            "recipe diff against the control");
        QVERIFY(html.contains(QStringLiteral("+12.00%"))); // 112 ms vs 100 ms
        QVERIFY(html.contains(QStringLiteral("-20.00%"))); // 8 GB vs 10 GB
        QVERIFY(html.contains(QStringLiteral("Validator findings")));
        // the edited recipe's findings (fused attention + core_attn: R15's warning)
        QVERIFY(html.contains(QStringLiteral("The recipe being edited")));
        QVERIFY(html.contains(QStringLiteral("R15")));
    }

    void filesByType()
    {
        ReportWriter writer(m_store, {});
        QString error;
        const QString html = m_dir.filePath(QStringLiteral("r.html"));
        QVERIFY2(writer.write(html, &error), qPrintable(error));
        QVERIFY(readAll(html).startsWith("<!DOCTYPE html>"));

        const QString pdf = m_dir.filePath(QStringLiteral("r.pdf"));
        QVERIFY2(writer.write(pdf, &error), qPrintable(error));
        const QByteArray pdfBytes = readAll(pdf);
        QVERIFY(pdfBytes.startsWith("%PDF-"));
        QVERIFY2(pdfBytes.size() > 20000, "the PDF carries the chart images");
        QVERIFY(pdfBytes.contains("/Image"));

        const QString md = m_dir.filePath(QStringLiteral("r.md"));
        QVERIFY2(writer.write(md, &error), qPrintable(error));
        const QByteArray mdText = readAll(md);
        QVERIFY(mdText.startsWith("# Recompute Studio report"));
        QVERIFY(mdText.contains("| moe_act"));
        QVERIFY(mdText.contains("-1.85%"));

        const QString csv = m_dir.filePath(QStringLiteral("r.csv"));
        QVERIFY2(writer.write(csv, &error), qPrintable(error));
        const QByteArray csvText = readAll(csv);
        QVERIFY(csvText.contains("moe_act"));
        QVERIFY(csvText.contains(","));

        QVERIFY(!writer.write(m_dir.filePath(QStringLiteral("r.docx")), &error));
        QVERIFY(error.contains(QStringLiteral(".html, .pdf, .md or .csv")));
    }

    void onlyTheChosenRuns()
    {
        // the Moonlight runs alone: one table
        storage::RunFilter f;
        f.model = QStringLiteral("Moonlight");
        QVector<qint64> ids;
        for (const auto& r : m_store.listRuns(f))
            ids << r.id;
        ReportWriter writer(m_store, ids);
        QCOMPARE(writer.tables().size(), 1);
        QVERIFY(!writer.html(true).contains(QStringLiteral("Nemotron")));
        const QImage page = writer.preview(900, 1200);
        QCOMPARE(page.size(), QSize(900, 1200));
    }

private:
    QTemporaryDir m_dir;
    storage::Store m_store;
};

QTEST_MAIN(TestReport)
#include "tst_report.moc"
