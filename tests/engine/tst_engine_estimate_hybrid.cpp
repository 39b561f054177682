// SPDX-License-Identifier: Apache-2.0
// The estimator's Worker layout against the worker's CPU allocator peaks for hybrid stacks and GatedDeltaNet
// layers (issue 27), as tst_engine_estimate does for the presets: a Nemotron-H-like stack (Mamba, attention,
// MLP and MoE layers with squared ReLU and a shared expert), a hybrid stack with GatedDeltaNet layers and a
// Qwen3-Next-like GPT model (GatedDeltaNet and attention by linear_attention_freq, MoE MLPs), fp32 and bf16,
// for [] and every recompute choice each model can take; the overall peak within 5 %.
#include "core/estimator.h"
#include "core/rules.h"
#include "estimate_test_util.h"

using namespace rs;
using namespace rs::estimatetest;

namespace {

Recipe hybridRecipe(const QString& kind, bool bf16)
{
    Recipe r;
    r.name = kind.toStdString();
    r.hidden_size = 64;
    r.num_attention_heads = 4;
    r.num_query_groups = 2;
    r.seq_length = 128;
    r.micro_batch_size = 2;
    r.vocab_size = 512;
    r.normalization = "RMSNorm";
    r.add_bias_linear = false;
    r.attention_dropout = 0.0;
    r.hidden_dropout = 0.0;
    r.bf16 = bf16;
    r.warmup_iters = 1;
    r.train_iters = 2;
    r.ffn_hidden_size = 128;
    if (kind == QLatin1String("mamba-moe")) {
        r.hybrid_layer_pattern = "M*EM-EME";
        r.num_layers = 8;
        r.activation_func = "squared_relu";
        r.mamba_num_heads = 8;
        r.mamba_head_dim = 16;
        r.mamba_state_dim = 16;
        r.mamba_num_groups = 2;
        r.mamba_chunk_size = 32;
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 48;
        r.moe_shared_expert_intermediate_size = 64;
        r.moe_grouped_gemm = true;
        r.use_fused_weighted_squared_relu = true;
    } else {
        r.gated_linear_unit = true;
        r.activation_func = "silu";
        r.experimental_attention_variant = "gated_delta_net";
        r.linear_num_key_heads = 2;
        r.linear_num_value_heads = 4;
        r.linear_key_head_dim = 16;
        r.linear_value_head_dim = 16;
        if (kind == QLatin1String("gdn")) {
            r.hybrid_layer_pattern = "G*G-G*G-";
            r.num_layers = 8;
        } else { // gpt-gdn-moe
            r.num_layers = 4;
            r.linear_attention_freq = { 1, 1, 0, 1 };
            r.num_moe_experts = 4;
            r.moe_router_topk = 2;
            r.moe_ffn_hidden_size = 48;
            r.moe_grouped_gemm = true;
        }
    }
    return r;
}

} // namespace

class TestEngineEstimateHybrid : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void withinFivePercent_data();
    void withinFivePercent();
};

void TestEngineEstimateHybrid::withinFivePercent_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<QString>("choice");
    for (const char* kind : { "mamba-moe", "gdn", "gpt-gdn-moe" }) {
        for (const bool bf16 : { false, true }) {
            const Recipe small = validate(hybridRecipe(QLatin1String(kind), bf16)).resolved;
            for (const auto& c : recomputeChoices(small)) {
                const QString label = QString::fromStdString(choiceSpelling(c));
                QTest::newRow(qPrintable(QLatin1String(kind) + (bf16 ? u" bf16 " : u" fp32 ") + label))
                    << QString::fromLatin1(kind) << bf16 << label;
            }
        }
    }
}

void TestEngineEstimateHybrid::withinFivePercent()
{
    QFETCH(QString, kind);
    QFETCH(bool, bf16);
    QFETCH(QString, choice);
    const Validation v
        = validate(candidateRecipe(hybridRecipe(kind, bf16), *readChoiceSpelling(choice.toStdString())));
    QVERIFY2(!v.hasErrors(), v.findings.empty() ? "" : v.findings.front().message.c_str());
    const Recipe& r = v.resolved;
    const Measured m = runWorker(r);
    QVERIFY2(m.error.empty(), m.error.c_str());
    const MemoryEstimate e = estimateMemory(r, Layout::Worker);
    QVERIFY2(e.not_estimated.empty(), e.not_estimated.c_str());
    const RankEstimate& rank = e.ranks.front();
    QString detail = QStringLiteral("peak: estimate %1 (%2), measured %3 (%4%)")
                         .arg(e.peak_bytes)
                         .arg(QString::fromStdString(rank.peak_phase))
                         .arg(m.peak)
                         .arg(100 * err(e.peak_bytes, m.peak), 0, 'f', 1);
    detail += phaseDetails(rank, m);
    qInfo("%s: %s", QTest::currentDataTag(), qPrintable(detail));
    QVERIFY2(std::abs(err(e.peak_bytes, m.peak)) <= kTolerance, qPrintable(detail));
}

QTEST_GUILESS_MAIN(TestEngineEstimateHybrid)
#include "tst_engine_estimate_hybrid.moc"
