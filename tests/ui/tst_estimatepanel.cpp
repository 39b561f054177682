// SPDX-License-Identifier: Apache-2.0
// The recipe page's estimate panel follows the document: a new recipe re-estimates, the figure is the
// estimator's own, and the target decides "fits" / "over".
#include <QtTest>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "estimatepanel.h"
#include "recipedocument.h"

using namespace rs;

class TestEstimatePanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void followsTheDocument();
    void sizesItDoesNotTakeSayWhy_data();
    void sizesItDoesNotTakeSayWhy();
};

void TestEstimatePanel::followsTheDocument()
{
    ui::RecipeDocument doc;
    ui::EstimatePanel panel(&doc);
    Recipe r;
    r.num_layers = 4;
    r.hidden_size = 1024;
    r.num_attention_heads = 16;
    r.seq_length = 2048;
    r.bf16 = true;
    r.memory_target_gb = 1000.0;
    doc.setRecipe(r);
    const int64_t expected = estimateMemory(doc.validation().resolved).peak_bytes;
    QCOMPARE(panel.estimate().peak_bytes, expected);
    QVERIFY(panel.summary().contains(QLatin1String("fits")));
    r.memory_target_gb = 0.001;
    r.seq_length = 4096;
    doc.setRecipe(r);
    QVERIFY(panel.estimate().peak_bytes > expected);
    QVERIFY(panel.summary().contains(QLatin1String("over")));
    panel.resize(400, 80);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
}

// Issue 30: the panel estimates on every edit; a size the estimator does not take (num_layers 2^31-1 grew
// until memory was gone) says why at once, and an edit back estimates again.
void TestEstimatePanel::sizesItDoesNotTakeSayWhy_data()
{
    QTest::addColumn<QString>("field");
    QTest::addColumn<int>("value");
    QTest::addColumn<QString>("says");
    QTest::newRow("num_layers 2^31-1")
        << QStringLiteral("num_layers") << 2147483647 << QStringLiteral("RS36");
    QTest::newRow("PP 2^31-1") << QStringLiteral("pipeline_model_parallel_size") << 2147483647
                               << QStringLiteral("RS28");
    QTest::newRow("hidden 2^31-1") << QStringLiteral("hidden_size") << 2147483647 << QStringLiteral("1 EiB");
}

void TestEstimatePanel::sizesItDoesNotTakeSayWhy()
{
    QFETCH(QString, field);
    QFETCH(int, value);
    QFETCH(QString, says);
    ui::RecipeDocument doc;
    ui::EstimatePanel panel(&doc);
    Recipe r;
    r.num_layers = 4;
    r.hidden_size = 1024;
    r.num_attention_heads = 16;
    doc.setRecipe(r);
    QVERIFY(panel.estimate().peak_bytes > 0);
    Recipe huge = r;
    setRecipeField(huge, field.toStdString(), value, "test");
    doc.setRecipe(huge);
    QCOMPARE(panel.estimate().peak_bytes, int64_t(0));
    QVERIFY2(panel.summary().startsWith(QLatin1String("Not estimated: ")) && panel.summary().contains(says),
        qPrintable(panel.summary()));
    doc.setRecipe(r);
    QVERIFY(panel.estimate().peak_bytes > 0);
}

QTEST_MAIN(TestEstimatePanel)
#include "tst_estimatepanel.moc"
