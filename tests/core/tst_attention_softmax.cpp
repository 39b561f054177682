// SPDX-License-Identifier: Apache-2.0
// fusedMaskedSoftmaxApplies (core/attention_softmax.h) against FusedScaleMaskSoftmax.is_kernel_available
// (megatron/core/fusions/fused_softmax.py) for the causal kernel, condition by condition.
#include <QtTest>

#include "core/attention_softmax.h"

using namespace rs;

namespace {

Recipe kernelRecipe()
{
    Recipe r;
    r.masked_softmax_fusion = true;
    r.transformer_impl = "transformer_engine";
    r.bf16 = true;
    r.attention_backend = "unfused";
    return r;
}

} // namespace

class TestAttentionSoftmax : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void kernelConditions_data();
    void kernelConditions();
};

void TestAttentionSoftmax::kernelConditions_data()
{
    QTest::addColumn<QString>("change");
    QTest::addColumn<int>("b");
    QTest::addColumn<int>("np");
    QTest::addColumn<int>("s");
    QTest::addColumn<bool>("applies");
    QTest::newRow("all hold") << QString() << 1 << 32 << 4096 << true;
    QTest::newRow("fusion off") << QStringLiteral("fusion off") << 1 << 32 << 4096 << false;
    QTest::newRow("local spec") << QStringLiteral("local") << 1 << 32 << 4096 << false;
    QTest::newRow("fp32 scores") << QStringLiteral("fp32") << 1 << 32 << 4096 << false;
    QTest::newRow("fp16 scores") << QStringLiteral("fp16") << 1 << 32 << 4096 << true;
    QTest::newRow("sk 4100 above 4096") << QString() << 1 << 32 << 4100 << false;
    QTest::newRow("sk 8192") << QString() << 1 << 32 << 8192 << false;
    QTest::newRow("sk 16 not above 16") << QString() << 1 << 32 << 16 << false;
    QTest::newRow("sk 20") << QString() << 1 << 8 << 20 << true;
    QTest::newRow("sk 18 not a multiple of 4") << QString() << 1 << 8 << 18 << false;
    QTest::newRow("b*np 6 not a multiple of 4") << QString() << 2 << 3 << 512 << false;
    QTest::newRow("b*np 4 at sk 512 (4 per block)") << QString() << 1 << 4 << 512 << true;
    QTest::newRow("b*np 4 at sk 128 (8 per block)") << QString() << 1 << 4 << 128 << false;
    QTest::newRow("b*np 8 at sk 128") << QString() << 2 << 4 << 128 << true;
    QTest::newRow("b*np 4 at sk 132 (4 per block)") << QString() << 1 << 4 << 132 << true;
}

void TestAttentionSoftmax::kernelConditions()
{
    QFETCH(QString, change);
    QFETCH(int, b);
    QFETCH(int, np);
    QFETCH(int, s);
    QFETCH(bool, applies);
    Recipe r = kernelRecipe();
    if (change == QLatin1String("fusion off"))
        r.masked_softmax_fusion = false;
    else if (change == QLatin1String("local"))
        r.transformer_impl = "local";
    else if (change == QLatin1String("fp32"))
        r.bf16 = false;
    else if (change == QLatin1String("fp16")) {
        r.bf16 = false;
        r.fp16 = true;
    }
    QCOMPARE(fusedMaskedSoftmaxApplies(r, b, np, s, s), applies);
}

QTEST_GUILESS_MAIN(TestAttentionSoftmax)
#include "tst_attention_softmax.moc"
