// SPDX-License-Identifier: Apache-2.0
// The recipe page's estimate panel follows the document: a new recipe re-estimates, the figure is the
// estimator's own, and the target decides "fits" / "over".
#include <QtTest>

#include "core/estimator.h"
#include "estimatepanel.h"
#include "recipedocument.h"

using namespace rs;

class TestEstimatePanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void followsTheDocument();
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

QTEST_MAIN(TestEstimatePanel)
#include "tst_estimatepanel.moc"
