// SPDX-License-Identifier: Apache-2.0
// Unfused attention's softmax as Megatron configures it (core/attention_softmax.h): with
// masked_softmax_fusion, Transformer Engine / Apex present, 16-bit scores and the kernel's shapes, the
// worker runs Megatron's ScaledUpperTriangMaskedSoftmax (a custom autograd function keeping only the
// 16-bit probabilities); otherwise FusedScaleMaskSoftmax's torch path. Same values within bf16 tolerance;
// the memory each keeps, measured with the CPU allocator probe, as the shapes say.
#include <QtTest>

#include "core/attention_softmax.h"
#include "engine_test_util.h"

using namespace rs;
using namespace rs::enginetest;

namespace {

// bf16 unfused attention on the TE spec where the kernel's shape conditions hold: b * np = 8, sk = 64.
Recipe softmaxRecipe(bool fusion, double attentionDropout)
{
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.seq_length = 64;
    r.bf16 = true;
    r.transformer_impl = "transformer_engine";
    r.attention_dropout = attentionDropout;
    r.masked_softmax_fusion = fusion;
    return r;
}

int64_t scoresOf(const Recipe& r)
{
    return int64_t(r.micro_batch_size) * r.num_attention_heads * r.seq_length * r.seq_length;
}

// max |a - b| within `tolerance` of max |b| (bf16 keeps 8 bits of mantissa: 2^-8 = 0.4 % an element).
bool close(const torch::Tensor& a, const torch::Tensor& b, double tolerance, QString* detail)
{
    const double diff = (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
    const double scale = b.to(torch::kFloat32).abs().max().item<double>();
    *detail = QStringLiteral("max |diff| %1, max |ref| %2").arg(diff).arg(scale);
    return diff <= tolerance * scale + 1e-12;
}

struct Peaks {
    int64_t retained = 0; // held when backward starts
    int64_t peak = 0; // over forward and backward, above the level before the forward
};

Peaks measure(const Recipe& r)
{
    auto probe = engine::MemoryProbe::create(torch::Device(torch::kCPU));
    const auto config = engine::modelConfig(r, 0);
    engine::Model model(config, engine::recomputePlan(r, config), torch::Device(torch::kCPU), 1234);
    const auto [tokens, labels] = model.batch(1235);
    torch::manual_seed(1236);
    // A first step allocates what stays for the run (the scores' input buffer, the gradients).
    model.loss(tokens, labels).backward();
    Peaks p;
    const int64_t before = probe->read().allocated;
    probe->resetPeak();
    auto loss = model.loss(tokens, labels);
    p.retained = probe->read().allocated - before;
    loss.backward();
    p.peak = probe->read().peak_allocated - before;
    return p;
}

} // namespace

class TestEngineSoftmax : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void workerFollowsTheCoreFact();
    void fusedMatchesTorchPath_data();
    void fusedMatchesTorchPath();
    void fusedKeepsOnlyTheBf16Probabilities_data();
    void fusedKeepsOnlyTheBf16Probabilities();
};

void TestEngineSoftmax::workerFollowsTheCoreFact()
{
    const Recipe on = softmaxRecipe(true, 0);
    QVERIFY(fusedMaskedSoftmaxApplies(on, 2, 4, 64, 64));
    QVERIFY(engine::modelConfig(on, 0).fused_softmax);
    QVERIFY(!engine::modelConfig(softmaxRecipe(false, 0), 0).fused_softmax);
    Recipe local = on;
    local.transformer_impl = "local"; // no kernel without Transformer Engine / Apex
    QVERIFY(!engine::modelConfig(local, 0).fused_softmax);
    Recipe fp32 = on;
    fp32.bf16 = false; // the kernel takes 16-bit scores only
    QVERIFY(!engine::modelConfig(fp32, 0).fused_softmax);
    Recipe odd = on;
    odd.micro_batch_size = 1; // b * np = 4: not a multiple of the 8 batches per block at sk <= 128
    QVERIFY(!engine::modelConfig(odd, 0).fused_softmax);
}

void TestEngineSoftmax::fusedMatchesTorchPath_data()
{
    QTest::addColumn<double>("dropout");
    QTest::addColumn<bool>("layerScaling");
    QTest::addColumn<QString>("recompute");
    QTest::newRow("no dropout") << 0.0 << false << QString();
    QTest::newRow("dropout 0.1") << 0.1 << false << QString();
    QTest::newRow("query_key_layer_scaling") << 0.0 << true << QString();
    QTest::newRow("core_attn recomputed") << 0.1 << false << QStringLiteral("core_attn");
}

void TestEngineSoftmax::fusedMatchesTorchPath()
{
    QFETCH(double, dropout);
    QFETCH(bool, layerScaling);
    QFETCH(QString, recompute);
    Recipe fused = softmaxRecipe(true, dropout);
    fused.apply_query_key_layer_scaling = layerScaling;
    if (!recompute.isEmpty())
        fused = selective(fused, { recompute.toStdString() });
    Recipe torchPath = fused;
    torchPath.masked_softmax_fusion = false; // softmax in fp32 (attention_softmax_in_fp32)
    QVERIFY(engine::modelConfig(fused, 0).fused_softmax);
    const StepResult a = runStep(fused);
    const StepResult b = runStep(torchPath);
    QVERIFY2(std::abs(a.loss - b.loss) <= 1e-2 * std::abs(b.loss),
        qPrintable(QStringLiteral("loss %1 vs %2").arg(a.loss).arg(b.loss)));
    QCOMPARE(a.grads.size(), b.grads.size());
    for (const auto& [name, grad] : b.grads) {
        QVERIFY(grad.defined());
        QString detail;
        QVERIFY2(close(a.grads.at(name), grad, 0.03, &detail),
            qPrintable(QString::fromStdString(name) + u' ' + detail));
    }
}

void TestEngineSoftmax::fusedKeepsOnlyTheBf16Probabilities_data()
{
    QTest::addColumn<double>("dropout");
    QTest::addColumn<int>("bytesPerScore"); // what the torch path keeps per layer beyond the kernel
    // No dropout: the torch path keeps softmax's fp32 output (4 bytes) and its bf16 cast for P x V; the
    // kernel's bf16 probabilities serve both its backward and P x V. Difference: the fp32 probabilities.
    QTest::newRow("no dropout") << 0.0 << 4;
    // Dropout: both keep the mask and the dropped probabilities (bf16); the torch path's bf16 cast dies
    // after dropout, the kernel's bf16 probabilities stay for its backward: 4 - 2 bytes.
    QTest::newRow("dropout 0.1") << 0.1 << 2;
}

void TestEngineSoftmax::fusedKeepsOnlyTheBf16Probabilities()
{
    QFETCH(double, dropout);
    QFETCH(int, bytesPerScore);
    const Recipe fused = softmaxRecipe(true, dropout);
    const Recipe torchPath = softmaxRecipe(false, dropout);
    const int64_t perLayer = scoresOf(fused) * bytesPerScore;
    const Peaks a = measure(fused);
    const Peaks b = measure(torchPath);
    const QString detail = QStringLiteral("retained %1 vs %2, peak %3 vs %4, per layer %5")
                               .arg(a.retained)
                               .arg(b.retained)
                               .arg(a.peak)
                               .arg(b.peak)
                               .arg(perLayer);
    qInfo("%s", qPrintable(detail));
    QVERIFY2(b.retained - a.retained == fused.num_layers * perLayer, qPrintable(detail));
    // The whole step's peak (in backward) drops by at least as much. Beyond what each retains, the kernel's
    // peak holds two fp32 chunks of the softmax (2 x 16 KiB here), the torch path's about one 16-bit
    // scores tensor (measured: 35836 and 64516 bytes above retained): at most 2 bytes a score more.
    const int64_t extra = (b.peak - a.peak) - fused.num_layers * perLayer;
    QVERIFY2(extra >= 0 && extra <= scoresOf(fused) * 2, qPrintable(detail));
}

QTEST_GUILESS_MAIN(TestEngineSoftmax)
#include "tst_engine_softmax.moc"
