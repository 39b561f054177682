// SPDX-License-Identifier: Apache-2.0
// The estimator (core/estimator.h, Layout::Worker) against the worker's own CPU allocator peaks: every
// preset of resources/presets shrunk to small shapes (the worker's one-rank layout: TP = EP = 1), for [] and
// every recompute choice the preset's model can take, run through the real step loop (engine::runRecipe,
// the code recompute-bench runs) with the CPU memory probe. The overall peak must be within 5 % of the
// estimate; every phase's figures are printed beside it (docs/estimator.md lists the known gaps). The
// ranks of parallel layouts: tst_engine_estimate_layout.cpp.
#include "core/estimator.h"
#include "core/rules.h"
#include "estimate_test_util.h"

using namespace rs;
using namespace rs::estimatetest;

class TestEngineEstimate : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void presetWithinFivePercent_data();
    void presetWithinFivePercent();
    void fp8WithinFivePercent_data();
    void fp8WithinFivePercent();
    void unfusedSoftmaxWithinFivePercent_data();
    void unfusedSoftmaxWithinFivePercent();
};

void TestEngineEstimate::presetWithinFivePercent_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("choice");
    QTest::addColumn<bool>("fused"); // bias_activation_fusion on (Megatron-LM's default), for SwiGLU presets
    const QDir dir(QStringLiteral(RS_SOURCE_DIR "/resources/presets"));
    const auto files = dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    QVERIFY(!files.isEmpty());
    for (const auto& file : files) {
        const Recipe small = validate(shrink(readPreset(dir.filePath(file)))).resolved;
        for (const bool fused : { false, true }) {
            if (fused && !small.gated_linear_unit)
                continue;
            for (const auto& c : recomputeChoices(small)) {
                const QString label = QString::fromStdString(choiceSpelling(c));
                QTest::newRow(qPrintable(
                    file + QStringLiteral(" ") + label + (fused ? QStringLiteral(" fused") : QString())))
                    << dir.filePath(file) << label << fused;
            }
        }
    }
}

void TestEngineEstimate::presetWithinFivePercent()
{
    QFETCH(QString, preset);
    QFETCH(QString, choice);
    QFETCH(bool, fused);
    Recipe small = shrink(readPreset(preset));
    small.bias_activation_fusion = fused;
    checkAgainstWorker(candidateRecipe(small, *readChoiceSpelling(choice.toStdString())),
        QFileInfo(preset).fileName() + u' ' + choice + (fused ? QStringLiteral(" fused") : QString()));
}

// FP8 through the worker's TE linears (engine/fp8.h; on LibTorch < 2.1 its codes are int8 of the same bytes):
// the presets the FP8 path builds (standard attention, dense and MoE layers) on the TE spec in bf16, current
// and delayed scaling, [] and each choice, against the estimate's worker layout.
void TestEngineEstimate::fp8WithinFivePercent_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("scaling");
    QTest::addColumn<QString>("choice");
    QTest::addColumn<bool>("moe");
    const QString dir = QStringLiteral(RS_SOURCE_DIR "/resources/presets/");
    for (const QString& scaling : { QStringLiteral("tensorwise"), QStringLiteral("delayed") })
        for (const bool moe : { false, true }) {
            const QString file = dir + QStringLiteral("dense-gqa-swiglu.json");
            Recipe small = fp8Recipe(shrink(readPreset(file)), scaling, moe);
            for (const auto& c : recomputeChoices(small)) {
                const QString label = QString::fromStdString(choiceSpelling(c));
                QTest::newRow(qPrintable(
                    QStringLiteral("%1 %2 %3")
                        .arg(moe ? QStringLiteral("moe") : QStringLiteral("dense"), scaling, label)))
                    << file << scaling << label << moe;
            }
        }
}

void TestEngineEstimate::fp8WithinFivePercent()
{
    QFETCH(QString, preset);
    QFETCH(QString, scaling);
    QFETCH(QString, choice);
    QFETCH(bool, moe);
    const Recipe small = fp8Recipe(shrink(readPreset(preset)), scaling, moe);
    // Megatron refuses moe_act and layernorm under delayed scaling (R17): so does the worker.
    checkAgainstWorker(candidateRecipe(small, *readChoiceSpelling(choice.toStdString())),
        QString::fromLatin1(QTest::currentDataTag()));
}

// Unfused attention where the scores dominate memory (hidden 64, 8 heads, seq 512, micro-batch 2, bf16, the
// TE spec): Megatron's fused masked-softmax kernel (masked_softmax_fusion on; core/attention_softmax.h)
// against the torch path, with and without attention dropout, and the torch softmax in bf16.
void TestEngineEstimate::unfusedSoftmaxWithinFivePercent_data()
{
    QTest::addColumn<bool>("fusion");
    QTest::addColumn<bool>("softmaxFp32");
    QTest::addColumn<double>("dropout");
    QTest::addColumn<QString>("choice");
    for (const char* choice : { "[]", "core_attn" }) {
        const QString c = QLatin1String(choice);
        QTest::newRow(qPrintable(u"fused kernel " + c)) << true << true << 0.0 << c;
        QTest::newRow(qPrintable(u"fused kernel dropout " + c)) << true << true << 0.1 << c;
        QTest::newRow(qPrintable(u"torch fp32 " + c)) << false << true << 0.0 << c;
        QTest::newRow(qPrintable(u"torch fp32 dropout " + c)) << false << true << 0.1 << c;
        QTest::newRow(qPrintable(u"torch bf16 " + c)) << false << false << 0.0 << c;
    }
}

void TestEngineEstimate::unfusedSoftmaxWithinFivePercent()
{
    QFETCH(bool, fusion);
    QFETCH(bool, softmaxFp32);
    QFETCH(double, dropout);
    QFETCH(QString, choice);
    Recipe small;
    small.name = "softmax";
    small.num_layers = 4;
    small.hidden_size = 64;
    small.num_attention_heads = 8;
    small.ffn_hidden_size = 256;
    small.seq_length = 512;
    small.micro_batch_size = 2;
    small.vocab_size = 512;
    small.bf16 = true;
    small.transformer_impl = "transformer_engine";
    small.attention_backend = "unfused";
    small.attention_softmax_in_fp32 = softmaxFp32;
    small.masked_softmax_fusion = fusion;
    small.attention_dropout = dropout;
    small.warmup_iters = 1;
    small.train_iters = 2;
    const Recipe r = validate(candidateRecipe(small, *readChoiceSpelling(choice.toStdString()))).resolved;
    const Measured m = runWorker(r);
    QVERIFY2(m.error.empty(), m.error.c_str());
    const MemoryEstimate e = estimateMemory(r, Layout::Worker);
    const double error = err(e.peak_bytes, m.peak);
    QString detail = QStringLiteral("%1: estimate %2, measured %3 (%4%)")
                         .arg(QString::fromLatin1(QTest::currentDataTag()))
                         .arg(e.peak_bytes)
                         .arg(m.peak)
                         .arg(100 * error, 0, 'f', 1);
    for (const char* phase : { "forward", "backward", "optimizer" }) {
        const auto it = m.phases.find(phase);
        if (it != m.phases.end())
            detail += QStringLiteral("; %1: %2 vs %3")
                          .arg(QLatin1String(phase))
                          .arg(e.ranks.front().phase(phase)->peak_bytes)
                          .arg(it->second);
    }
    qInfo("%s", qPrintable(detail));
    if (qEnvironmentVariableIsSet("RS_DEBUG_TERMS"))
        for (const auto& ph : e.ranks.front().phases)
            for (const auto& t : ph.terms)
                qInfo("  %s %s %s %lld", ph.phase.c_str(), t.category.c_str(), t.name.c_str(),
                    (long long)t.bytes);
    // The replay of core_attn with attention dropout on the torch fp32 path peaks in the replay's forward:
    // the fp32 copy of the scores and the 16-bit cast beside the rebuilt fp32 probabilities, mask and
    // dropped probabilities (14 bytes a score) exceed the softmax backward's 12, and the Worker layout adds
    // only a layer's backward transient to a replay (measured -8.9 %).
    if (QLatin1String(QTest::currentDataTag()) == QLatin1String("torch fp32 dropout core_attn"))
        QEXPECT_FAIL("", "torch fp32 softmax, dropout, core_attn replay: estimate 8.9 % low", Continue);
    QVERIFY2(std::abs(error) <= kTolerance, qPrintable(detail));
}

QTEST_GUILESS_MAIN(TestEngineEstimate)
#include "tst_engine_estimate.moc"
