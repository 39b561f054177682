// SPDX-License-Identifier: Apache-2.0
// Model FLOPs of a step (core/flops.h): each layer counts its own kind. The expected figures are worked by
// hand from Megatron-LM's formulas (megatron/training/training.py num_floating_point_operations at
// d98e8a64): T = 1024 tokens, hidden 1024, 8 heads of 128, FFN 4096, vocabulary 32000.
//   attention: linear_qkv 2 T h (8 + 2 x 8) 128 = 6,442,450,944; QK^T and PV, causal half,
//     0.5 x 4 x 8 x T^2 x 128 = 2,147,483,648; linear_proj 2 T 8 x 128 h = 2,147,483,648: 10,737,418,240
//   MLP: 2 T h 4096 + 2 T 4096 h = 17,179,869,184
//   Mamba (d_inner 2h = 2048, 32 heads of 64, 8 groups, state 128; in_proj 2 x 2048 + 2 x 8 x 128 + 32 =
//     6,176): 2 T h 6176 + 7 T 2048 x 128 + 2 T 2048 h = 19,126,026,240
//   output layer: 2 T h 32000 = 67,108,864,000
#include <QtTest>

#include "core/flops.h"
#include "core/model_shape.h"
#include "core/recipe.h"

using namespace rs;
using namespace Qt::StringLiterals;

namespace {

Recipe base()
{
    Recipe r;
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    r.ffn_hidden_size = 4096;
    r.seq_length = 1024;
    r.micro_batch_size = 1;
    r.vocab_size = 32000;
    return r;
}

std::vector<int> allLayers(const Recipe& r)
{
    std::vector<int> out;
    for (int i = 0; i < hybridLayerCount(r); ++i)
        out.push_back(i);
    return out;
}

} // namespace

class TestFlops : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void perLayerKind_data();
    void perLayerKind();
};

void TestFlops::perLayerKind_data()
{
    QTest::addColumn<QString>("pattern"); // hybrid_layer_pattern; "" for a GPT model of 2 layers
    QTest::addColumn<double>("forward");
    QTest::newRow("GPT, 2 layers: 2 x (attention + MLP) + output") << QString() << 122943438848.0;
    QTest::newRow("hybrid M*-: Mamba + attention + MLP + output") << u"M*-"_s << 114152177664.0;
    // The same layers in two orders count the same; a Mamba layer alone counts no attention and no MLP.
    QTest::newRow("hybrid -M*") << u"-M*"_s << 114152177664.0;
    QTest::newRow("hybrid MM: two Mamba layers + output") << u"MM"_s << 2 * 19126026240.0 + 67108864000.0;
    QTest::newRow("hybrid **: two attention-only layers + output")
        << u"**"_s << 2 * 10737418240.0 + 67108864000.0;
}

void TestFlops::perLayerKind()
{
    QFETCH(QString, pattern);
    QFETCH(double, forward);
    Recipe r = base();
    if (pattern.isEmpty()) {
        r.num_layers = 2;
    } else {
        r.hybrid_layer_pattern = pattern.toStdString();
        r.num_layers = int(pattern.size());
    }
    const StepFlops f = modelFlops(r, allLayers(r));
    QCOMPARE(f.forward, forward);
    QCOMPARE(f.per_step, 3 * forward);
}

QTEST_APPLESS_MAIN(TestFlops)
#include "tst_flops.moc"
