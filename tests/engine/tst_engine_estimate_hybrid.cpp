// SPDX-License-Identifier: Apache-2.0
// The estimator's Worker layout against the worker's CPU allocator peaks for hybrid stacks and GatedDeltaNet
// layers (issue 27), as tst_engine_estimate does for the presets: a Nemotron-H-like stack (Mamba, attention,
// MLP and MoE layers with squared ReLU and a shared expert), the same with latent MoE (Nemotron 3 Super's and
// Ultra's routed experts), a hybrid stack with GatedDeltaNet layers and a Qwen3-Next-like GPT model
// (GatedDeltaNet and attention by linear_attention_freq, MoE MLPs), fp32 and bf16, for [] and every recompute
// choice each model can take; the overall peak within 5 %.
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
    if (kind.startsWith(QLatin1String("mamba-moe")) || kind == QLatin1String("moe")) {
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
        // Nemotron 3 Super / Ultra: the routed experts in a latent space half the hidden width.
        if (kind == QLatin1String("mamba-moe-latent"))
            r.moe_latent_size = 32;
        if (kind == QLatin1String("moe")) {
            // Where the MoE layers dominate (latentMoeChangesThePeakAsMeasured): attention and MoE layers,
            // eight SequentialMLP experts of 128, top-4.
            r.hybrid_layer_pattern = "*E*E";
            r.num_layers = 4;
            r.num_moe_experts = 8;
            r.moe_router_topk = 4;
            r.moe_ffn_hidden_size = 128;
            r.moe_grouped_gemm = false;
        }
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
    void latentMoeChangesThePeakAsMeasured_data();
    void latentMoeChangesThePeakAsMeasured();
};

void TestEngineEstimateHybrid::withinFivePercent_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<QString>("choice");
    for (const char* kind : { "mamba-moe", "mamba-moe-latent", "gdn", "gpt-gdn-moe" }) {
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
    const Recipe candidate
        = candidateRecipe(hybridRecipe(kind, bf16), *readChoiceSpelling(choice.toStdString()));
    QVERIFY2(firstRuleError(candidate).empty(), firstRuleError(candidate).c_str()); // every row runs
    checkAgainstWorker(candidate, QString::fromLatin1(QTest::currentDataTag()));
}

// Where the MoE layers dominate the peak (top-4 of eight 128-wide experts against hidden 64), the Worker
// layout's backward is 8 to 16 % below the CPU probe with or without latent MoE: the MoE layer's backward
// holds about 2.5 x [R, moe_ffn] of gradients more than the layer model's generic backward (the same bytes
// at either width, so not a latent term; the peak can then fall in another phase of the estimate than of
// the run). What latent MoE changes is checked phase by phase: each phase's peak with moe_latent_size 16
// against the same model without it, the estimate's difference within 2 % of the measured one. Excepted:
// the forward where the MoE layer runs without grad ('moe', full recompute), whose moment the Worker layout
// misses at either width by more than 5 % (fp32 'moe': -12 % wide, -15 % latent, the part that scales
// with the routed width included; full recompute 3 to 7 % high, as withinFivePercent's rows show).
void TestEngineEstimateHybrid::latentMoeChangesThePeakAsMeasured_data()
{
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<QString>("choice");
    for (const bool bf16 : { false, true }) {
        const Recipe wide = validate(hybridRecipe(QStringLiteral("moe"), bf16)).resolved;
        for (const auto& c : recomputeChoices(wide)) {
            const QString label = QString::fromStdString(choiceSpelling(c));
            QTest::newRow(qPrintable((bf16 ? QStringLiteral("bf16 ") : QStringLiteral("fp32 ")) + label))
                << bf16 << label;
        }
    }
}

void TestEngineEstimateHybrid::latentMoeChangesThePeakAsMeasured()
{
    QFETCH(bool, bf16);
    QFETCH(QString, choice);
    std::map<std::string, double> estimated, measured; // phase -> wide less latent
    for (const int latent : { 0, 16 }) {
        Recipe r = hybridRecipe(QStringLiteral("moe"), bf16);
        if (latent > 0)
            r.moe_latent_size = latent;
        const Validation v = validate(candidateRecipe(r, *readChoiceSpelling(choice.toStdString())));
        QVERIFY2(!v.hasErrors(), v.findings.empty() ? "" : v.findings.front().message.c_str());
        const Measured m = runWorker(v.resolved);
        QVERIFY2(m.error.empty(), m.error.c_str());
        const MemoryEstimate e = estimateMemory(v.resolved, Layout::Worker);
        QVERIFY2(e.not_estimated.empty(), e.not_estimated.c_str());
        qInfo("%s, moe_latent_size %d: %s", QTest::currentDataTag(), latent,
            qPrintable(phaseDetails(e.ranks.front(), m).mid(2)));
        const double sign = latent > 0 ? -1 : 1;
        for (const auto& [phase, bytes] : m.phases) {
            measured[phase] += sign * static_cast<double>(bytes);
            estimated[phase] += sign * static_cast<double>(e.ranks.front().phase(phase)->peak_bytes);
        }
    }
    const bool nograd_moe
        = choice.startsWith(QLatin1String("full")) || choice.split(u',').contains(QStringLiteral("moe"));
    for (const char* phase : { "forward", "backward", "optimizer" }) {
        QVERIFY(measured.count(phase));
        const double est = estimated[phase], got = measured[phase];
        const QString detail = QStringLiteral("%1: latent MoE frees %2 bytes estimated, %3 measured (%4 %)")
                                   .arg(QLatin1String(phase))
                                   .arg(est, 0, 'f', 0)
                                   .arg(got, 0, 'f', 0)
                                   .arg(100 * (est - got) / got, 0, 'f', 2);
        qInfo("%s: %s", QTest::currentDataTag(), qPrintable(detail));
        QVERIFY2(got > 0, qPrintable(detail));
        if (!(nograd_moe && std::string(phase) == "forward"))
            QVERIFY2(std::abs(est - got) <= 0.02 * got, qPrintable(detail));
    }
}

QTEST_GUILESS_MAIN(TestEngineEstimateHybrid)
#include "tst_engine_estimate_hybrid.moc"
