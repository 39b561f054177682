// SPDX-License-Identifier: Apache-2.0
// Report export, content checked: the guide's comparison tables with their published deltas, the trade-off
// chart embedded, recipe diffs against the control, environment and revisions, the validator's findings,
// the guide's data marked as imported; and the PDF, Markdown and CSV files.
#include <QAbstractTextDocumentLayout>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextTable>

#include "core/recipe_json.h"
#include "presets.h"
#include "recipedocument.h"
#include "reportwriter.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;

namespace {

const char kFindingsNotes[]
    = "findings: [{\"rule_id\":\"R15\",\"severity\":\"warning\",\"fields\":["
      "\"recompute_modules\",\"attention_backend\"],\"message\":\"core_attn with fused "
      "attention recomputes nothing: the fused kernel keeps no scores to discard\","
      "\"source\":\"transformer_config.py:1850\"},{\"rule_id\":\"R11\",\"severity\":"
      "\"error\",\"fields\":[\"recompute_modules\"],\"message\":\"Invalid choices for "
      "recompute_modules: {'core_atn'}. Allowed modules are: {'core_attn', 'moe_act', "
      "'layernorm', 'mla_up_proj', 'mlp', 'moe', 'shared_experts'}\",\"source\":\"\"}]";

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
        // What the worker stores: its validator findings as JSON in the run's notes.
        std::optional<storage::RunRecord> stored = m_store.run(run);
        QVERIFY(stored);
        stored->notes = QString::fromUtf8(kFindingsNotes);
        QVERIFY(m_store.updateRun(*stored));
    }

    void notesText_data()
    {
        QTest::addColumn<QString>("notes");
        QTest::addColumn<QString>("expected");
        QTest::newRow("worker findings")
            << QString::fromUtf8(kFindingsNotes)
            << QStringLiteral("validator: R15 warning: core_attn with fused attention "
                              "recomputes nothing; R11 error: Invalid choices");
        QTest::newRow("plain notes") << QStringLiteral("first pipeline stage only")
                                     << QStringLiteral("first pipeline stage only");
        QTest::newRow("not JSON after all")
            << QStringLiteral("findings: see the log") << QStringLiteral("findings: see the log");
        QTest::newRow("no findings") << QStringLiteral("findings: []") << QString();
    }
    void notesText()
    {
        QFETCH(QString, notes);
        QFETCH(QString, expected);
        const QString text = ReportWriter::notesText(notes);
        QVERIFY2(text.startsWith(expected.left(60)), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("\"rule_id\"")));
        QVERIFY(text.size() < notes.size() + 20);
    }

    void findingsInNotesReadAsText()
    {
        ReportWriter writer(m_store, {});
        const QString html = writer.html(true);
        QVERIFY(!html.contains(QStringLiteral("rule_id")));
        QVERIFY(!html.contains(QStringLiteral("&quot;severity&quot;")));
        QVERIFY(html.contains(QStringLiteral("validator: R15 warning: core_attn with fused attention")));
    }

    // Issue 11: a six-row table over four PDF pages, a heading alone at a page's foot.
    void pdfPages()
    {
        ReportWriter writer(m_store, {});
        const std::unique_ptr<QTextDocument> doc = writer.printDocument();
        const qreal pageHeight = doc->pageSize().height();
        QVERIFY(pageHeight > 0 && pageHeight < 1e6);
        QAbstractTextDocumentLayout* layout = doc->documentLayout();
        auto pageOf = [&](qreal y) { return int(y / pageHeight); };
        int tables = 0;
        for (QTextFrame* frame : doc->rootFrame()->childFrames()) {
            auto* table = qobject_cast<QTextTable*>(frame);
            if (!table || table->rows() > 8 || table->columns() != 9)
                continue; // the comparison tables: nine columns
            ++tables;
            const QRectF first = layout->blockBoundingRect(table->cellAt(0, 0).firstCursorPosition().block());
            const QRectF last = layout->blockBoundingRect(
                table->cellAt(table->rows() - 1, table->columns() - 1).lastCursorPosition().block());
            QVERIFY2(pageOf(first.top()) == pageOf(last.bottom()),
                qPrintable(QStringLiteral("a %1-row table from page %2 to %3")
                               .arg(table->rows())
                               .arg(pageOf(first.top()) + 1)
                               .arg(pageOf(last.bottom()) + 1)));
        }
        QVERIFY(tables >= 3);
        int headings = 0;
        for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
            if (b.blockFormat().headingLevel() <= 0)
                continue;
            ++headings;
            const QRectF r = layout->blockBoundingRect(b);
            const qreal below = (pageOf(r.top()) + 1) * pageHeight - r.bottom();
            QVERIFY2(below >= std::min(140.0, pageHeight / 3),
                qPrintable(QStringLiteral("'%1' %2 px above the foot of page %3")
                               .arg(b.text())
                               .arg(below)
                               .arg(pageOf(r.top()) + 1)));
        }
        QVERIFY(headings > 10);
        // the PDF has the pages laid out here, each comparison starting one
        const QString pdf = m_dir.filePath(QStringLiteral("pages.pdf"));
        QString error;
        QVERIFY2(writer.writePdf(pdf, &error), qPrintable(error));
        const int pages = int(QString::fromLatin1(readAll(pdf))
                                  .count(QRegularExpression(QStringLiteral("/Type\\s*/Page[^s]"))));
        QCOMPARE(pages, doc->pageCount());
        QVERIFY2(pages >= int(writer.tables().size()) && pages <= 4 * int(writer.tables().size()) + 1,
            qPrintable(QString::number(pages)));
    }

    // Issue 29 item 10: the PDF's pages are not mostly blank: a page that another follows within its
    // comparison is filled at least half (a chart that does not fit is scaled down, not pushed whole onto
    // the next page behind a break).
    void pdfPagesAreFilled()
    {
        ReportWriter writer(m_store, {});
        const std::unique_ptr<QTextDocument> doc = writer.printDocument();
        const qreal pageHeight = doc->pageSize().height();
        QAbstractTextDocumentLayout* layout = doc->documentLayout();
        const int pages = doc->pageCount();
        QVector<qreal> bottom(pages, 0.0);
        QVector<bool> startsComparison(pages, false);
        for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
            const QRectF r = layout->blockBoundingRect(b);
            const int page = std::clamp(int(r.top() / pageHeight), 0, pages - 1);
            bottom[page]
                = std::max(bottom[page], std::min(r.bottom(), (page + 1) * pageHeight) - page * pageHeight);
            if (b.blockFormat().headingLevel() == 2)
                startsComparison[page] = true;
        }
        for (int p = 0; p + 1 < pages; ++p) {
            const qreal fill = bottom[p] / pageHeight;
            qInfo("page %d of %d: %.0f %% filled", p + 1, pages, fill * 100);
            if (!startsComparison[p + 1]) // the last page of a comparison may end where it ends
                QVERIFY2(fill >= 0.6,
                    qPrintable(QStringLiteral("page %1 of %2 is %3 % filled")
                                   .arg(p + 1)
                                   .arg(pages)
                                   .arg(fill * 100, 0, 'f', 0)));
        }
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
