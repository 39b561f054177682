// SPDX-License-Identifier: Apache-2.0
// The estimator against closed forms: Korthikanti et al. (2022) Table 2 per layer, the optimizer's bytes
// per parameter as Megatron's theoretical_memory_usage.py counts them, the pipeline's in-flight
// micro-batches, and the recompute choices' order. Each expectation is written from the formula, not from a
// previous run of the estimator.
#include <QtTest>

#include "core/bridge_recipes.h"
#include "core/estimator.h"
#include "core/model_shape.h"
#include "core/recipe_json.h"
#include "core/rules.h"

using namespace rs;
using namespace Qt::StringLiterals;

namespace {

// A GPT layer as Korthikanti's Table 2 has it: MHA, LayerNorm, GeLU with ffn = 4h, unfused attention with
// dropout, bf16, local spec.
Recipe gpt()
{
    Recipe r;
    r.num_layers = 4;
    r.hidden_size = 1024;
    r.num_attention_heads = 16;
    r.seq_length = 2048;
    r.micro_batch_size = 2;
    r.vocab_size = 50304;
    r.bf16 = true;
    r.attention_backend = "unfused";
    r.transformer_impl = "local";
    r.attention_dropout = 0.1;
    r.hidden_dropout = 0.1;
    r.attention_softmax_in_fp32 = false; // Korthikanti's 2-byte softmax output
    r.recompute_granularity = "selective";
    r.recompute_modules = std::vector<std::string> {};
    return r;
}

Recipe moonlight()
{
    Recipe r = recipeFromJsonText(
        [] {
            QFile f(QStringLiteral(RS_SOURCE_DIR "/resources/presets/moonlight-mla-moe.json"));
            f.open(QIODevice::ReadOnly);
            return f.readAll().toStdString();
        }(),
        "moonlight");
    r.data_parallel_size = 4; // the guide's 8 H100 at TP 2
    r.use_distributed_optimizer = true;
    r.grad_reduce_in_fp32 = true;
    return validate(r).resolved;
}

// A small DSA model on the cuDNN path (experimental_attention_variant dsa): absorbed MLA with 16 heads
// (FlashMLA pads them to 64 on Hopper), kv_lora_rank 512 (FlashMLA's value width), an indexer of 8 heads x 64
// with top-1024 of 4096 keys and the sparse indexer loss; dense GeLU MLP, no dropout, bf16, TE spec.
Recipe dsaModel()
{
    Recipe r;
    r.num_layers = 4;
    r.hidden_size = 1024;
    r.num_attention_heads = 16;
    r.ffn_hidden_size = 2048;
    r.seq_length = 4096;
    r.micro_batch_size = 1;
    r.vocab_size = 32000;
    r.bf16 = true;
    r.add_bias_linear = false;
    r.attention_dropout = 0;
    r.hidden_dropout = 0;
    r.multi_latent_attention = true;
    r.q_lora_rank = 256;
    r.kv_lora_rank = 512;
    r.qk_head_dim = 64;
    r.qk_pos_emb_head_dim = 64;
    r.v_head_dim = 64;
    r.experimental_attention_variant = "dsa";
    r.dsa_indexer_n_heads = 8;
    r.dsa_indexer_head_dim = 64;
    r.dsa_indexer_topk = 1024;
    r.dsa_indexer_loss_coeff = 0.001;
    r.dsa_indexer_use_sparse_loss = true;
    r.dsa_kernel_backend = "cudnn";
    r.recompute_granularity = "selective";
    r.recompute_modules = std::vector<std::string> {};
    return r;
}

// A small hybrid stack of `pattern` in bf16, its num_layers the pattern's: hidden 1024, 8 heads, seq 2048,
// the vocabulary 32000 (a multiple of 128: not padded), RMSNorm, no biases, no position table, no dropout;
// MoE layers of 8 grouped experts of 512, top-2.
Recipe smallHybrid(const std::string& pattern)
{
    Recipe r;
    r.hybrid_layer_pattern = pattern;
    r.num_layers = hybridLayerCount(r);
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    r.seq_length = 2048;
    r.vocab_size = 32000;
    r.normalization = "RMSNorm";
    r.add_bias_linear = false;
    r.position_embedding_type = "none";
    r.hidden_dropout = 0.0;
    r.attention_dropout = 0.0;
    r.bf16 = true;
    r.num_moe_experts = 8;
    r.moe_router_topk = 2;
    r.moe_ffn_hidden_size = 512;
    r.moe_grouped_gemm = true;
    return r;
}

Recipe choose(Recipe r, const std::string& label)
{
    return candidateRecipe(std::move(r), *readChoiceSpelling(label));
}

double rel(double a, double b)
{
    return std::abs(a - b) / std::abs(b);
}

} // namespace

class TestEstimator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void dsaLayerKeeps_data();
    void dsaLayerKeeps();
    void dsaIndexerParameters();
    void dsaTopkHolder();
    void dsaPathsNotModelled_data();
    void dsaPathsNotModelled();
    void sizesItDoesNotTakeAreNotEstimated_data();
    void sizesItDoesNotTakeAreNotEstimated();
    void korthikantiPerLayer_data();
    void korthikantiPerLayer();
    void fullRecomputeKeepsLayerInputs();
    void fusedActivationKeepsLess_data();
    void fusedActivationKeepsLess();
    void bytesPerParameter_data();
    void bytesPerParameter();
    void gradientBufferDtype();
    void pipelineInFlight_data();
    void pipelineInFlight();
    void labelsOnlyLower_data();
    void labelsOnlyLower();
    void mlaUpProjAndMoeActOnMoonlight();
    void latentMoe_data();
    void latentMoe();
    void latentMoeSuperPerRank();
    void fp32SoftmaxKeepsMore();
    void choicesFollowTheRules();
    void parseAndLabelRoundTrip_data();
    void parseAndLabelRoundTrip();
    void jsonShape();
    void rankCandidates();
    void everyTermHasSourceAndNote();
    void teCublasWorkspaces_data();
    void teCublasWorkspaces();
    void batchOnTheStagesThatReadIt_data();
    void qkLayernormKeepsItsInputs_data();
    void qkLayernormKeepsItsInputs();
    void batchOnTheStagesThatReadIt();
    void peftFreezesTheBase_data();
    void peftFreezesTheBase();
    void peftTrainsTheAdaptersOnly();
    void peftOnDsaLayers();
    void mtpAddsItsDepths_data();
    void mtpAddsItsDepths();
    void mtpHybridPatternSpellings_data();
    void mtpHybridPatternSpellings();
    void mtpUnderPeft();
};

void TestEstimator::korthikantiPerLayer_data()
{
    QTest::addColumn<int>("tp");
    QTest::addColumn<bool>("sp");
    QTest::addColumn<QString>("labels");
    QTest::newRow("no parallelism, no recompute") << 1 << false << QStringLiteral("[]");
    QTest::newRow("TP 4 + SP, no recompute") << 4 << true << QStringLiteral("[]");
    QTest::newRow("TP 4 + SP, core_attn (selective)") << 4 << true << QStringLiteral("core_attn");
}

void TestEstimator::korthikantiPerLayer()
{
    // Table 2: sbh (34 + 5 a s / h) / t with TP + SP; selective recompute: 34 sbh / t. We also count the
    // two norms' fp32 mean and rstd (16 sb / t bytes), which the paper leaves out.
    QFETCH(int, tp);
    QFETCH(bool, sp);
    QFETCH(QString, labels);
    Recipe r = choose(gpt(), labels.toStdString());
    r.tensor_model_parallel_size = tp;
    r.sequence_parallel = sp;
    const double s = r.seq_length, b = r.micro_batch_size, h = r.hidden_size, a = r.num_attention_heads;
    const double t = tp;
    double expected = s * b * h * 34 / t + 16 * s * b / t;
    if (labels == QLatin1String("[]"))
        expected += 5 * a * s * s * b / t;
    const auto got = activationsPerLayer(validate(r).resolved, Layout::Megatron);
    QVERIFY2(rel(static_cast<double>(got.dense), expected) < 1e-9,
        qPrintable(QStringLiteral("%1 vs %2").arg(got.dense).arg(expected, 0, 'f', 0)));
}

void TestEstimator::fullRecomputeKeepsLayerInputs()
{
    // Full uniform 1: every layer keeps its input, 2sbh (Korthikanti's "full recomputation" row); the
    // difference to [] in the forward peak is (34 sbh + 5 a s^2 b + 16 sb - 2 sbh) per layer.
    const Recipe none = validate(gpt()).resolved;
    const Recipe full = validate(choose(gpt(), "full:uniform:1")).resolved;
    const double s = none.seq_length, b = none.micro_batch_size, h = none.hidden_size,
                 a = none.num_attention_heads;
    const auto fwd = [](const Recipe& r) {
        return estimateMemory(r).ranks[0].phase("forward")->category("activations");
    };
    const double saved = static_cast<double>(fwd(none) - fwd(full));
    const double expected = none.num_layers * (32 * s * b * h + 5 * a * s * s * b + 16 * s * b);
    QVERIFY2(rel(saved, expected) < 1e-9, qPrintable(QStringLiteral("%1 vs %2").arg(saved).arg(expected)));
}

void TestEstimator::fusedActivationKeepsLess_data()
{
    QTest::addColumn<int>("layout");
    QTest::addColumn<QString>("activation"); // swiglu | geglu | gelu
    QTest::addColumn<bool>("moe");
    for (const Layout layout : { Layout::Megatron, Layout::Worker })
        for (const char* act : { "swiglu", "geglu", "gelu" })
            for (const bool moe : { false, true })
                QTest::newRow(qPrintable(QStringLiteral("%1 %2 %3")
                                             .arg(QLatin1String(layoutName(layout)), QLatin1String(act),
                                                 moe ? QStringLiteral("moe") : QStringLiteral("dense"))))
                    << static_cast<int>(layout) << QString::fromLatin1(act) << moe;
}

void TestEstimator::fusedActivationKeepsLess()
{
    // bias_activation_fusion keeps FC1's output only. Unfused, a GLU also keeps act(a) [T, F] (dense MLP,
    // shared experts), and routed experts keep act(a) [* b] for the multiply by the probabilities (and
    // act(a) under GLU) [R, Fm]; plain GeLU keeps its input either way (mlp.py glu(), experts.py
    // bias_act_func; the worker's Model::activation).
    QFETCH(int, layout);
    QFETCH(QString, activation);
    QFETCH(bool, moe);
    Recipe r = gpt();
    r.gated_linear_unit = activation != QLatin1String("gelu");
    r.activation_func = activation == QLatin1String("swiglu") ? "silu" : "gelu";
    if (moe) {
        r.num_moe_experts = 8;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 512;
        r.moe_shared_expert_intermediate_size = 1024;
        r.moe_grouped_gemm = true;
    }
    Recipe fused = r;
    fused.bias_activation_fusion = true;
    const Layout l = static_cast<Layout>(layout);
    const auto eager = activationsPerLayer(validate(r).resolved, l);
    const auto with = activationsPerLayer(validate(fused).resolved, l);
    const double T = double(r.seq_length) * r.micro_batch_size, d = 2, glu = r.gated_linear_unit ? 1 : 0;
    const double expected = moe ? (glu + 1) * T * r.moe_router_topk * *r.moe_ffn_hidden_size * d
            + glu * T * *r.moe_shared_expert_intermediate_size * d
                                : glu * T * 4 * r.hidden_size * d;
    const double saved = static_cast<double>(moe ? eager.moe - with.moe : eager.dense - with.dense);
    QVERIFY2(
        std::abs(saved - expected) < 0.5, qPrintable(QStringLiteral("%1 vs %2").arg(saved).arg(expected)));
}

void TestEstimator::bytesPerParameter_data()
{
    QTest::addColumn<bool>("distributed");
    QTest::addColumn<int>("dp");
    QTest::addColumn<double>("perParam");
    // theoretical_memory_usage.py: 18 bytes without the distributed optimizer, 6 + 12 / DP with it (bf16
    // parameters, fp32 gradients, fp32 main parameters and moments).
    QTest::newRow("no distributed optimizer") << false << 8 << 18.0;
    QTest::newRow("distributed optimizer, DP 8") << true << 8 << 6.0 + 12.0 / 8;
    QTest::newRow("distributed optimizer, DP 1") << true << 1 << 18.0;
}

void TestEstimator::bytesPerParameter()
{
    QFETCH(bool, distributed);
    QFETCH(int, dp);
    QFETCH(double, perParam);
    Recipe r = gpt();
    r.use_distributed_optimizer = distributed;
    r.data_parallel_size = dp;
    r.grad_reduce_in_fp32 = true;
    r.global_batch_size = r.micro_batch_size * dp;
    const auto e = estimateMemory(validate(r).resolved);
    const auto* opt = e.ranks[0].phase("optimizer");
    const double params = static_cast<double>(opt->category("parameters")) / 2;
    const double state = static_cast<double>(opt->category("parameters") + opt->category("gradients")
        + opt->category("main_parameters") + opt->category("optimizer_states"));
    QVERIFY2(rel(state / params, perParam) < 1e-6, qPrintable(QString::number(state / params)));
}

void TestEstimator::gradientBufferDtype()
{
    // bf16 gradient buffer: 2 bytes a parameter in DDP's buffer and a 4-byte fp32 main-gradient copy in
    // the optimizer; fp32 buffer (grad_reduce_in_fp32): 4 bytes, the main gradient is a view of it.
    Recipe r = gpt();
    r.grad_reduce_in_fp32 = false;
    const auto bf = estimateMemory(validate(r).resolved).ranks[0].phase("optimizer")->category("gradients");
    r.grad_reduce_in_fp32 = true;
    const auto fp = estimateMemory(validate(r).resolved).ranks[0].phase("optimizer")->category("gradients");
    QCOMPARE(bf * 4, fp * 6);
}

void TestEstimator::pipelineInFlight_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("microBatches");
    QTest::addColumn<QList<int>>("inFlight");
    // 1F1B: stage p keeps min(PP - p, m) micro-batches.
    QTest::newRow("1F1B PP4 m8") << 4 << 1 << 8 << QList<int> { 4, 3, 2, 1 };
    QTest::newRow("1F1B PP4 m2") << 4 << 1 << 2 << QList<int> { 2, 2, 2, 1 };
    // Interleaved (schedules.py): (PP - p - 1) * 2 + (VPP - 1) * PP warm-up chunk-micro-batches + 1.
    QTest::newRow("interleaved PP2 VPP2 m4") << 2 << 2 << 4 << QList<int> { 5, 3 };
}

void TestEstimator::pipelineInFlight()
{
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, microBatches);
    QFETCH(QList<int>, inFlight);
    Recipe r = gpt();
    r.num_layers = 8;
    r.pipeline_model_parallel_size = pp;
    if (vpp > 1)
        r.virtual_pipeline_model_parallel_size = vpp;
    r.global_batch_size = microBatches * r.micro_batch_size;
    const auto e = estimateMemory(r);
    QCOMPARE(static_cast<int>(e.ranks.size()), pp);
    for (int p = 0; p < pp; ++p)
        QCOMPARE(e.ranks[static_cast<size_t>(p)].in_flight_micro_batches, inFlight[p]);
    QVERIFY(e.ranks.front().peak_bytes > e.ranks[1].peak_bytes);
}

void TestEstimator::labelsOnlyLower_data()
{
    QTest::addColumn<QString>("label");
    for (const char* l : { "core_attn", "mla_up_proj", "layernorm", "moe_act", "moe", "shared_experts" })
        QTest::newRow(l) << QString::fromLatin1(l);
}

void TestEstimator::labelsOnlyLower()
{
    // Every label keeps no more than [] in forward, on both layouts, for Moonlight's shapes.
    QFETCH(QString, label);
    for (const Layout layout : { Layout::Megatron, Layout::Worker }) {
        Recipe base = moonlight();
        if (layout == Layout::Worker) {
            base.tensor_model_parallel_size = base.expert_model_parallel_size = 1;
            base.sequence_parallel = false;
        }
        const auto none
            = estimateMemory(choose(base, "[]"), layout).ranks[0].phase("forward")->category("activations");
        const auto with = estimateMemory(choose(base, label.toStdString()), layout)
                              .ranks[0]
                              .phase("forward")
                              ->category("activations");
        QVERIFY2(with <= none,
            qPrintable(
                QStringLiteral("%1: %2 > %3").arg(QLatin1String(layoutName(layout))).arg(with).arg(none)));
    }
}

void TestEstimator::mlaUpProjAndMoeActOnMoonlight()
{
    // The guide's ranking on Moonlight: mla_up_proj frees a little more than moe_act, both far more than
    // core_attn under fused attention (which frees nothing the flash kernel keeps).
    const Recipe r = moonlight();
    const auto peak = [&](const char* l) { return estimateMemory(choose(r, l)).peak_bytes; };
    QVERIFY(peak("mla_up_proj") < peak("moe_act"));
    QVERIFY(peak("moe_act") < peak("[]"));
    QVERIFY(peak("core_attn") <= peak("[]"));
    QVERIFY(peak("[]") - peak("core_attn") < (peak("[]") - peak("moe_act")) / 10);
}

void TestEstimator::latentMoe_data()
{
    QTest::addColumn<int>("latent"); // moe_latent_size; 0: unset
    QTest::addColumn<bool>("fp8");
    QTest::addColumn<QString>("label");
    for (const int latent : { 0, 256 })
        for (const bool fp8 : { false, true })
            for (const char* label : { "[]", "moe" })
                QTest::newRow(qPrintable(QStringLiteral("latent %1%2 %3")
                                             .arg(latent)
                                             .arg(fp8 ? QStringLiteral(" fp8") : QString())
                                             .arg(QLatin1String(label))))
                    << latent << fp8 << QString::fromLatin1(label);
}

void TestEstimator::latentMoe()
{
    // A stack of two MoE-only layers ('EE', Nemotron 3's MoE layers: squared ReLU with the fused weighted
    // activation, a shared expert, grouped GEMM), one rank, bf16, with and without latent MoE.
    QFETCH(int, latent);
    QFETCH(bool, fp8);
    QFETCH(QString, label);
    Recipe r = smallHybrid("EE");
    r.micro_batch_size = 2;
    if (fp8)
        r.fp8 = "e4m3";
    r.activation_func = "squared_relu";
    r.use_fused_weighted_squared_relu = true;
    r.moe_shared_expert_intermediate_size = 1024;
    if (latent > 0)
        r.moe_latent_size = latent;
    const Validation v = validate(choose(r, label.toStdString()));
    QVERIFY2(!v.hasErrors(), v.findings.empty() ? "" : v.findings.front().message.c_str());

    // Megatron's MoELayer with moe_latent_size L (moe_layer.py, experts.py at 2a75ac12): the router and the
    // shared expert read the hidden-wide norm output; fc1_latent_proj takes it to L before dispatch, the
    // routed experts read and write L (Hr = L, else h), fc2_latent_proj takes the combined [T, L] back to h.
    const double h = 1024, E = 8, k = 2, Fm = 512, Fs = 1024, L = latent;
    const double T = 2048.0 * 2, R = T * k, d = 2, q = fp8 ? 1 : d; // q: what a TE linear saves per element
    const double Hr = latent > 0 ? L : h;
    // One layer's saved bytes with no recompute:
    //   layer input T h d + the norm's fp32 rstd-and-mean slots 2 T 4 + the norm's output T h d
    //   + router: logits T E d, routing map T E, top-k probabilities T k 4
    //   + [L, fp8] fc1_latent_proj's own quantized input T h q
    //   + the dispatched tokens R Hr q (kept by the experts' FC1) + their probabilities R 4
    //   + FC1's output R Fm d + the weighted activation's output R Fm q (kept by FC2)
    //   + the combine's index map T k 8
    //   + [L] fc2_latent_proj's input, the combined tokens T L q
    //   + shared expert: FC1's output T Fs d, its activation T Fs q, [fp8] its quantized input T h
    // 'moe' keeps the checkpoint's input only: layer input, statistics, norm output.
    const double kept_by_moe = T * h * d + 2 * T * 4 + T * h * d;
    double expected = kept_by_moe;
    if (label == QLatin1String("[]")) {
        expected += T * E * d + T * E + T * k * 4;
        if (latent > 0 && fp8)
            expected += T * h * q;
        expected += R * Hr * q + R * 4 + R * Fm * d + R * Fm * q + T * k * 8;
        if (latent > 0)
            expected += T * L * q;
        expected += T * Fs * d + T * Fs * q + (fp8 ? T * h : 0);
    }
    const LayerActivations acts = activationsPerLayer(v.resolved, Layout::Megatron);
    QCOMPARE(int(acts.by_kind.size()), 1);
    QVERIFY2(std::abs(static_cast<double>(acts.by_kind.front().second) - expected) < 0.5,
        qPrintable(QStringLiteral("%1 vs %2").arg(acts.by_kind.front().second).arg(expected, 0, 'f', 0)));

    // Parameters (theoretical_memory_usage.py:104-125 at 2a75ac12 counts the same): the tied embedding V h,
    // the final RMSNorm h, and per layer its pre-MLP RMSNorm h, the router E h (hidden-wide), the experts
    // E x (FC1 + FC2) Fm Hr (squared ReLU: not gated), [L] fc1_latent_proj and fc2_latent_proj 2 h L, the
    // shared expert 2 Fs h. 2 bytes each in bf16.
    if (!fp8) {
        const double V = 32000;
        const double per_layer = h + E * h + E * 2 * Fm * Hr + (latent > 0 ? 2 * h * L : 0) + 2 * Fs * h;
        const double params = V * h + h + 2 * per_layer;
        const MemoryEstimate e = estimateMemory(v.resolved);
        QCOMPARE(static_cast<double>(e.ranks[0].phase("forward")->category("parameters")), params * 2);
    }
}

// The case: Bridge's nemotron_3_super_pretrain_64gpu_h100_bf16_config on its 64 H100 (TP 1, PP 2,
// EP 32, DP 32, expert-DP 1), whose experts work at moe_latent_size 1024 against hidden 4096. With the
// experts sized at the hidden width the estimate was 108.555 GB a rank (commit 6275072; 108.723 GB with TE's
// cuBLAS workspaces counted); with latent MoE the first stage's parameters are 5.7245 G (20 Mamba, 20 MoE, 4
// attention layers and the embedding): 11.449 GB in bf16, where hidden-wide experts made 21.683 GB.
void TestEstimator::latentMoeSuperPerRank()
{
    const BridgeJob job = bridgeJob("nemotron_3_super_pretrain_64gpu_h100_bf16_config");
    QCOMPARE(job.recipe.moe_latent_size.value_or(0), 1024);
    const Validation v = validate(job.recipe, InputFormat::BridgeOverrides);
    QVERIFY(!v.hasErrors());
    const MemoryEstimate e = estimateMemory(v.resolved);
    QCOMPARE(e.hottest, 0);
    // Stage 0 (layers 0-43 of the pattern and the embedding), hand-counted: Mamba layer in_proj
    // h (2 d_inner + 2 G N + H) + conv (d_inner + 2 G N) x 5 + 3 H + d_inner (norm) + out_proj d_inner h +
    // its norm h; MoE layer h + E h + 16 local experts x 2 x 2688 x 1024 + 2 h 1024 + 2 x 5376 h; attention
    // layer (32 + 2 x 2) 128 h + 32 x 128 h + h; embedding 131072 h.
    const double h = 4096, di = 128 * 64, gn = 8 * 128;
    const double mamba = h * (2 * di + 2 * gn + 128) + (di + 2 * gn) * 5 + 3 * 128 + di + di * h + h;
    const double moe = h + 512 * h + 16 * 2 * 2688 * 1024.0 + 2 * h * 1024 + 2 * 5376 * h;
    const double attention = (32 + 4) * 128 * h + 32 * 128 * h + h;
    const double params = 20 * mamba + 20 * moe + 4 * attention + 131072 * h;
    QCOMPARE(static_cast<double>(e.ranks[0].phase("forward")->category("parameters")), params * 2);
    qInfo("nemotron_3_super_pretrain_64gpu_h100_bf16_config: %.3f GB a rank (108.723 GB with hidden-wide "
          "experts)",
        static_cast<double>(e.peak_bytes) / 1e9);
    QVERIFY(e.peak_bytes < int64_t(80e9));
}

void TestEstimator::fp32SoftmaxKeepsMore()
{
    // Unfused attention on the torch softmax path (s > 4096: no fused kernel): attention_softmax_in_fp32
    // keeps [b, np, s, s] fp32 probabilities instead of bf16 ones: 2 more bytes per score element.
    Recipe r = gpt();
    r.seq_length = 8192;
    r.num_layers = 1;
    r.attention_softmax_in_fp32 = false;
    const auto bf = activationsPerLayer(validate(r).resolved).dense;
    r.attention_softmax_in_fp32 = true;
    const auto fp = activationsPerLayer(validate(r).resolved).dense;
    const double scores = double(r.micro_batch_size) * r.num_attention_heads * r.seq_length * r.seq_length;
    QCOMPARE(static_cast<double>(fp - bf), 2 * scores);
}

void TestEstimator::choicesFollowTheRules()
{
    // Dense GQA under the TE spec: layernorm has no effect (both norms fused), nor do the MoE / MLA labels.
    Recipe dense = gpt();
    dense.transformer_impl = "transformer_engine";
    std::vector<std::string> labels;
    for (const auto& c : recomputeChoices(validate(dense).resolved))
        labels.push_back(choiceSpelling(c));
    const std::vector<std::string> expected = { "[]", "core_attn", "mlp", "full:uniform:1", "full:block:4" };
    QCOMPARE(labels, expected);
    std::vector<std::string> moon;
    for (const auto& c : recomputeChoices(moonlight()))
        moon.push_back(choiceSpelling(c));
    for (const char* l : { "moe_act", "mla_up_proj", "layernorm", "moe" })
        QVERIFY2(std::find(moon.begin(), moon.end(), l) != moon.end(), l);
}

void TestEstimator::parseAndLabelRoundTrip_data()
{
    QTest::addColumn<QString>("text");
    for (const char* t : { "[]", "core_attn", "layernorm,moe_act", "full:uniform:1", "full:block:3" })
        QTest::newRow(t) << QString::fromLatin1(t);
}

void TestEstimator::parseAndLabelRoundTrip()
{
    QFETCH(QString, text);
    const auto c = readChoiceSpelling(text.toStdString());
    QVERIFY(c);
    QCOMPARE(QString::fromStdString(choiceSpelling(*c)), text);
    QCOMPARE(QString::fromStdString(choiceSpelling(recipeChoice(candidateRecipe(gpt(), *c)))), text);
    QVERIFY(!readChoiceSpelling("full:sideways:1"));
}

void TestEstimator::jsonShape()
{
    const auto e = estimateMemory(moonlight());
    const auto j = estimateToJson(e);
    QCOMPARE(j["peak_allocated_bytes"].get<int64_t>(), e.peak_bytes);
    QCOMPARE(j["choice"].get<std::string>(), std::string("moe_act"));
    QCOMPARE(j["ranks"].size(), size_t(1));
    const auto& rank = j["ranks"][0];
    QCOMPARE(rank["peak_bytes"].get<int64_t>(), e.peak_bytes);
    int64_t sum = 0;
    for (const auto& [k, v] : rank["categories"].items())
        sum += v.get<int64_t>();
    QCOMPARE(sum, e.peak_bytes);
    QCOMPARE(rank["phases"].size(), size_t(4));
}

void TestEstimator::rankCandidates()
{
    // With a target between the smallest and the largest estimate, the fitting candidates come first in
    // the order given, the others after, each with its reason.
    const Recipe r = moonlight();
    std::vector<RecomputeChoice> cands;
    for (const char* l : { "[]", "moe_act", "mla_up_proj", "full:uniform:1" })
        cands.push_back(*readChoiceSpelling(l));
    const double none = static_cast<double>(estimateMemory(choose(r, "[]")).peak_bytes);
    const double full = static_cast<double>(estimateMemory(choose(r, "full:uniform:1")).peak_bytes);
    QVERIFY(full < none);
    const auto ranked = rankCandidatesByEstimate(r, cands, (none + full) / 2 / 1e9);
    QCOMPARE(ranked.size(), cands.size());
    QCOMPARE(ranked.front().label, std::string("full:uniform:1"));
    QVERIFY(ranked.front().fits);
    QVERIFY(!ranked.back().fits);
    QVERIFY(QString::fromStdString(ranked.back().skip_reason).contains(QLatin1String("over the target")));
    const auto all = rankCandidatesByEstimate(r, cands, std::nullopt);
    for (size_t i = 0; i < all.size(); ++i) {
        QCOMPARE(all[i].index, i);
        QVERIFY(all[i].fits);
    }
}

void TestEstimator::everyTermHasSourceAndNote()
{
    for (const Layout layout : { Layout::Megatron, Layout::Worker }) {
        Recipe r = moonlight();
        if (layout == Layout::Worker) {
            r.tensor_model_parallel_size = r.expert_model_parallel_size = 1;
            r.sequence_parallel = false;
        }
        const auto e = estimateMemory(r, layout);
        QVERIFY(!e.assumptions.empty());
        for (const auto& rank : e.ranks)
            for (const auto& p : rank.phases)
                for (const auto& t : p.terms) {
                    QVERIFY2(!t.source.empty() && !t.note.empty(), t.name.c_str());
                    QVERIFY(t.bytes > 0);
                }
    }
}

// One DSA layer's saved tensors (megatronDsa, Megatron Core bridge-pin's absorbed_mla.py / dsa.py /
// dsa_cudnn_kernels.py), written out from the shapes: T = 4096 tokens, h = 1024, d = 2 bytes, q_lora ql =
// 256, kv_lora kvl = 512, RoPE dr = 64 (the latent key kw = 576), nope dn = 64, v dv = 64, np = 16 heads
// (FlashMLA's npad = 64), indexer ih = 8 heads x id = 64, top-k K = 1024 of S = 4096 keys; the dense GeLU MLP
// with F = 2048 under the TE spec.
//   input norm: T h d (input) + 8T (statistics) + T h d (output)
//   q_compressed and q_layernorm: T ql d + 8T + T ql d;  kv_combined and kv_layernorm: T kw d + 8T
//   up-projection: q T np (dn + dr) d, query T np kw d, key T kw d
//   core: up_v np dv kvl d; the indexer's k T id d + 8T; the fused function's int32 indices T K 4, FlashMLA's
//   out T npad kvl d and lse T npad 4, the indexer's gradients T ih id d + S id d + T ih d; the output
//   T np dv d
//   MLP: T h d (input) + 8T + T h d (fc1's input) + 2 T F d
// core_attn drops the core's own (up_v, the indexer's, the fused function's); mla_up_proj drops q, query and
// key and keeps the up-projection's kv input T kvl d; a layer that reuses another's top-k (freq 2) has no
// indexer's k and no gradients.
void TestEstimator::dsaLayerKeeps_data()
{
    QTest::addColumn<QString>("labels");
    QTest::addColumn<int>("freq");
    QTest::addColumn<QString>("kind");
    QTest::newRow("computing layer, []")
        << QStringLiteral("[]") << 1 << QStringLiteral("DSA attention + MLP");
    QTest::newRow("computing layer, core_attn")
        << QStringLiteral("core_attn") << 1 << QStringLiteral("DSA attention + MLP");
    QTest::newRow("computing layer, mla_up_proj")
        << QStringLiteral("mla_up_proj") << 1 << QStringLiteral("DSA attention + MLP");
    QTest::newRow("shared top-k layer, []")
        << QStringLiteral("[]") << 2 << QStringLiteral("DSA attention (shared top-k) + MLP");
}

void TestEstimator::dsaLayerKeeps()
{
    QFETCH(QString, labels);
    QFETCH(int, freq);
    QFETCH(QString, kind);
    Recipe r = choose(dsaModel(), labels.toStdString());
    r.dsa_indexer_topk_freq = freq;
    const double T = 4096, h = 1024, d = 2, ql = 256, kvl = 512, dr = 64, kw = kvl + dr, dn = 64, dv = 64;
    const double np = 16, npad = 64, ih = 8, id = 64, K = 1024, S = 4096, F = 2048;
    const bool computing = kind == QLatin1String("DSA attention + MLP");
    const double norm = 2 * T * h * d + 8 * T;
    const double down = 2 * T * ql * d + 8 * T + T * kw * d + 8 * T;
    const double up = T * np * (dn + dr) * d + T * np * kw * d + T * kw * d;
    const double core = np * dv * kvl * d + (computing ? T * id * d + 8 * T : 0) + T * K * 4
        + T * npad * kvl * d + T * npad * 4 + (computing ? T * ih * id * d + S * id * d + T * ih * d : 0);
    const double output = T * np * dv * d;
    const double mlp = 2 * T * h * d + 8 * T + 2 * T * F * d;
    double expected = norm + down + up + core + output + mlp;
    if (labels == QLatin1String("core_attn"))
        expected -= core;
    if (labels == QLatin1String("mla_up_proj"))
        expected += T * kvl * d - up;
    const Validation v = validate(r);
    for (const Finding& f : v.findings)
        QVERIFY2(
            f.severity != Severity::Error, qPrintable(QString::fromStdString(f.rule_id + ": " + f.message)));
    const auto got = activationsPerLayer(v.resolved, Layout::Megatron);
    double bytes = -1;
    for (const auto& [name, b] : got.by_kind)
        if (QString::fromStdString(name) == kind)
            bytes = static_cast<double>(b);
    QVERIFY2(rel(bytes, expected) < 1e-9,
        qPrintable(QStringLiteral("%1 vs %2").arg(bytes).arg(expected, 0, 'f', 0)));
}

// The indexer's parameters (dsa.py DSAIndexer.__init__): linear_wq_b ql x ih id, linear_wk h x id, k_norm's
// weight and bias 2 id, linear_weights_proj h x ih, duplicated on every TP rank; a layer that reuses
// another's top-k has none. With dsa_indexer_topk_freq 2 and offset 0 layers 2 and 4 (1-based) reuse: 2
// indexers fewer, at 2 bytes a parameter (bf16).
void TestEstimator::dsaIndexerParameters()
{
    const double h = 1024, ql = 256, ih = 8, id = 64;
    const auto params = [](const Recipe& r) {
        return estimateMemory(validate(r).resolved).ranks[0].phase("optimizer")->category("parameters");
    };
    Recipe every = dsaModel();
    Recipe shared = dsaModel();
    shared.dsa_indexer_topk_freq = 2;
    const double expected = 2 * (ql * ih * id + h * id + 2 * id + h * ih) * 2;
    QCOMPARE(static_cast<double>(params(every) - params(shared)), expected);
    QVERIFY(isDsaSkipTopkLayer(shared, 1) && isDsaSkipTopkLayer(shared, 3));
    QVERIFY(!isDsaSkipTopkLayer(shared, 0) && !isDsaSkipTopkLayer(shared, 2));
    QCOMPARE(dsaSourceLayer(shared, 3), 2);
}

// With top-k sharing each computing layer of the stage leaves its int32 top-k [b, s, K] and lengths [b, s] in
// the holder (dsa.py:2214-2218): 2 computing layers x 4096 x (1024 + 1) x 4 bytes.
void TestEstimator::dsaTopkHolder()
{
    Recipe r = dsaModel();
    r.dsa_indexer_topk_freq = 2;
    const MemoryEstimate e = estimateMemory(validate(r).resolved);
    QVERIFY(e.not_estimated.empty());
    int64_t holder = -1;
    for (const MemoryTerm& t : e.ranks[0].phase("optimizer")->terms)
        if (t.name == "DSA top-k holder")
            holder = t.bytes;
    QCOMPARE(holder, int64_t(2) * 4096 * (1024 + 1) * 4);
}

// Megatron's other DSA paths are said, never counted as MLA: the PyTorch reference path (the default
// backend, or unfused attention), TileLang's kernels, FlashMLA's fallbacks (its value width, its head
// counts), the dense indexer loss; the worker builds no DSA layer.
void TestEstimator::dsaPathsNotModelled_data()
{
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("json"); // the field's value as JSON
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("reason");
    using namespace Qt::StringLiterals;
    QTest::newRow("backend none") << u"dsa_kernel_backend"_s << u"\"none\""_s << u"megatron"_s
                                  << u"reference path"_s;
    QTest::newRow("tilelang") << u"dsa_kernel_backend"_s << u"\"tilelang\""_s << u"megatron"_s
                              << u"TileLang"_s;
    QTest::newRow("unfused attention")
        << u"attention_backend"_s << u"\"unfused\""_s << u"megatron"_s << u"attention_backend unfused"_s;
    QTest::newRow("kv_lora_rank 256")
        << u"kv_lora_rank"_s << u"256"_s << u"megatron"_s << u"FlashMLA takes 512"_s;
    QTest::newRow("96 heads") << u"num_attention_heads"_s << u"96"_s << u"megatron"_s
                              << u"96 attention heads"_s;
    QTest::newRow("dense loss") << u"dsa_indexer_use_sparse_loss"_s << u"false"_s << u"megatron"_s
                                << u"dense indexer loss"_s;
    QTest::newRow("no indexer sizes") << u"dsa_indexer_topk"_s << u"null"_s << u"megatron"_s << u"RS39"_s;
    QTest::newRow("worker") << u"dsa_kernel_backend"_s << u"\"cudnn\""_s << u"worker"_s << u"builds no"_s;
}

void TestEstimator::dsaPathsNotModelled()
{
    QFETCH(QString, field);
    QFETCH(QString, json);
    QFETCH(QString, layout);
    QFETCH(QString, reason);
    QCOMPARE(estimateMemory(dsaModel()).not_estimated, std::string()); // the cuDNN path: estimated
    Recipe r = dsaModel();
    setRecipeField(r, field.toStdString(), nlohmann::json::parse(json.toStdString()), "test");
    const MemoryEstimate e = estimateMemory(r, *layoutFromName(layout.toStdString()));
    QVERIFY(e.ranks.empty());
    QVERIFY2(QString::fromStdString(e.not_estimated).contains(reason), e.not_estimated.c_str());
}

// Issue 30: sizes the arithmetic does not take give no estimate, with the reason, at once (num_layers
// 2147483647 allocated until the machine's memory was gone; PP 2147483647 likewise).
void TestEstimator::sizesItDoesNotTakeAreNotEstimated_data()
{
    QTest::addColumn<QString>("field");
    QTest::addColumn<int>("value");
    QTest::addColumn<QString>("reason");
    using namespace Qt::StringLiterals;
    QTest::newRow("num_layers 2^31-1") << u"num_layers"_s << 2147483647 << u"RS36"_s;
    QTest::newRow("PP 2^31-1") << u"pipeline_model_parallel_size"_s << 2147483647 << u"RS28"_s;
    QTest::newRow("no layer") << u"num_layers"_s << 0 << u"at least 1"_s;
    QTest::newRow("TP 0") << u"tensor_model_parallel_size"_s << 0 << u"RS23"_s;
    QTest::newRow("DSA without the indexer's sizes") << u"experimental_attention_variant"_s << 0 << u"RS39"_s;
}

void TestEstimator::sizesItDoesNotTakeAreNotEstimated()
{
    QFETCH(QString, field);
    QFETCH(int, value);
    QFETCH(QString, reason);
    Recipe r;
    r.num_layers = 8;
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    if (field == QStringLiteral("experimental_attention_variant")) {
        r.multi_latent_attention = true;
        r.experimental_attention_variant = "dsa";
    } else {
        setRecipeField(r, field.toStdString(), value, "test");
    }
    const MemoryEstimate e = estimateMemory(r);
    QVERIFY(e.ranks.empty());
    QCOMPARE(e.peak_bytes, int64_t(0));
    QVERIFY2(QString::fromStdString(e.not_estimated).contains(reason), e.not_estimated.c_str());
}

// Transformer Engine's cuBLAS workspaces (TE 2.17.1 transformer_engine/pytorch/cpp_extensions/gemm.py:34-61),
// written out by hand: 32 MiB + 1 KiB = 33,554,432 + 1,024 = 33,555,456 bytes from compute capability 9.0 on,
// 4 MiB = 4,194,304 before; one for TE's GEMMs, and 4 more (one per compute stream,
// nvte_get_num_compute_streams) on a stage whose MoE layers run TE's grouped GEMM. Kept for the whole run:
// the same bytes in every phase and in the first iteration. None without Transformer Engine (the local spec)
// and none in the worker's layout (LibTorch, no TE).
// The micro-batch on the GPU (pretrain_gpt.py get_batch at Megatron-LM d98e8a64; Bridge's gpt_step.py
// get_batch_from_iterator at 067f987d): a middle pipeline stage reads none; Megatron-LM moves every key
// (int64 tokens, labels, positions, fp32 loss mask: 28 bytes a token) and the bool [b, 1, s, s] mask;
// Bridge moves tokens and positions where the embedding is (16 bytes), labels and the loss mask where the
// loss is (12 bytes), and no mask (skip_getting_attention_mask_from_dataset True).
void TestEstimator::batchOnTheStagesThatReadIt_data()
{
    QTest::addColumn<int>("frontEnd"); // InputFormat
    QTest::addColumn<int>("pp");
    QTest::addColumn<bool>("mask"); // create_attention_mask_in_dataloader
    QTest::addColumn<QList<qint64>>("perStage"); // the term's bytes on each stage
    const qint64 T = 2 * 2048, mask = 2LL * 2048 * 2048; // gpt(): micro-batch 2, seq 2048
    const int lm = static_cast<int>(InputFormat::MegatronFlags),
              br = static_cast<int>(InputFormat::BridgeOverrides);
    QTest::newRow("Megatron-LM, PP 1") << lm << 1 << true << QList<qint64> { 28 * T + mask };
    QTest::newRow("Megatron-LM, PP 4: first and last only")
        << lm << 4 << true << QList<qint64> { 28 * T + mask, 0, 0, 28 * T + mask };
    QTest::newRow("Megatron-LM, --no-create-attention-mask-in-dataloader")
        << lm << 2 << false << QList<qint64> { 28 * T, 28 * T };
    QTest::newRow("Bridge, PP 1") << br << 1 << false << QList<qint64> { 28 * T };
    QTest::newRow("Bridge, PP 4") << br << 4 << false << QList<qint64> { 16 * T, 0, 0, 12 * T };
    QTest::newRow("Bridge, mask asked for")
        << br << 2 << true << QList<qint64> { 16 * T + mask, 12 * T + mask };
}

void TestEstimator::batchOnTheStagesThatReadIt()
{
    QFETCH(int, frontEnd);
    QFETCH(int, pp);
    QFETCH(bool, mask);
    QFETCH(QList<qint64>, perStage);
    Recipe r = gpt();
    r.front_end = static_cast<InputFormat>(frontEnd);
    r.pipeline_model_parallel_size = pp;
    r.create_attention_mask_in_dataloader = mask;
    const MemoryEstimate e = estimateMemory(validate(r).resolved, Layout::Megatron);
    QVERIFY2(e.not_estimated.empty(), e.not_estimated.c_str());
    QCOMPARE(static_cast<qsizetype>(e.ranks.size()), perStage.size());
    for (size_t p = 0; p < e.ranks.size(); ++p) {
        for (const PhaseEstimate& phase : e.ranks[p].phases) {
            qint64 bytes = 0;
            for (const MemoryTerm& t : phase.terms)
                if (t.name.rfind("batch:", 0) == 0) {
                    QCOMPARE(t.name.find("attention mask") != std::string::npos, mask);
                    bytes += t.bytes;
                }
            QCOMPARE(bytes, perStage[static_cast<qsizetype>(p)]);
        }
    }
}

// qk_layernorm (attention.py get_query_key_value_tensors at d98e8a64): q_layernorm and k_layernorm each keep
// their input, contiguous (the query's reshape copy, the key's view made contiguous), and their fp32 rstd per
// head row, outside core attention: T (np + ng) (kv d + 4) / TP bytes a layer more, whatever selective
// recompute says, nothing under full recompute; one head-wide weight each. Under MLA the latent norms are
// taken as on whatever the field says (every MLA recipe sets it).
void TestEstimator::qkLayernormKeepsItsInputs_data()
{
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("labels");
    QTest::addColumn<bool>("kept");
    QTest::newRow("no recompute") << 1 << u"[]"_s << true;
    QTest::newRow("core_attn") << 1 << u"core_attn"_s << true;
    QTest::newRow("TP 2 + SP, core_attn,mlp") << 2 << u"core_attn,mlp"_s << true;
    QTest::newRow("full uniform 1") << 1 << u"full:uniform:1"_s << false;
}

void TestEstimator::qkLayernormKeepsItsInputs()
{
    QFETCH(int, tp);
    QFETCH(QString, labels);
    QFETCH(bool, kept);
    Recipe r = choose(gpt(), labels.toStdString());
    r.transformer_impl = "transformer_engine";
    r.attention_backend = "fused";
    r.normalization = "RMSNorm";
    r.num_query_groups = 4;
    r.tensor_model_parallel_size = tp;
    r.sequence_parallel = tp > 1;
    Recipe qk = r;
    qk.qk_layernorm = true;
    const Recipe off = validate(r).resolved, on = validate(qk).resolved;
    const double T = r.seq_length * r.micro_batch_size, kv = r.hidden_size / r.num_attention_heads;
    const double np = r.num_attention_heads / tp, ng = 4.0 / tp;
    const double perLayer = kept ? T * (np + ng) * (kv * 2 + 4) : 0;
    const auto acts = [](const Recipe& x) {
        return static_cast<double>(estimateMemory(x).ranks[0].phase("forward")->category("activations"));
    };
    QCOMPARE(acts(on) - acts(off), r.num_layers * perLayer);
    QCOMPARE(estimateMemory(on).ranks[0].parameters - estimateMemory(off).ranks[0].parameters,
        r.num_layers * 2 * kv);
    // MLA: unchanged by the field.
    Recipe mla = moonlight();
    Recipe mlaOff = mla;
    mla.qk_layernorm = true;
    mlaOff.qk_layernorm = false;
    QCOMPARE(estimateMemory(validate(mla).resolved).ranks[0].peak_bytes,
        estimateMemory(validate(mlaOff).resolved).ranks[0].peak_bytes);
}

void TestEstimator::teCublasWorkspaces_data()
{
    QTest::addColumn<QString>("impl"); // transformer_impl
    QTest::addColumn<QString>("pattern"); // hybrid_layer_pattern; "" for a GPT model
    QTest::addColumn<int>("experts"); // 0: dense
    QTest::addColumn<bool>("grouped"); // moe_grouped_gemm
    QTest::addColumn<QList<int>>("moeLayers"); // moe_layer_freq as a list; empty: every layer
    QTest::addColumn<int>("cc"); // gpu_compute_capability
    QTest::addColumn<int>("pp");
    QTest::addColumn<bool>("worker");
    QTest::addColumn<QList<qint64>>("perStage"); // the term's bytes on each stage (0: no term)
    const QString te = QStringLiteral("transformer_engine"), local = QStringLiteral("local");
    const qint64 hopper = 33555456, ampere = 4194304;
    QTest::newRow("TE dense, Hopper (default 90)")
        << te << QString() << 0 << false << QList<int> {} << 90 << 1 << false << QList<qint64> { hopper };
    QTest::newRow("TE dense, Blackwell 100")
        << te << QString() << 0 << false << QList<int> {} << 100 << 1 << false << QList<qint64> { hopper };
    QTest::newRow("TE dense, Ampere 80")
        << te << QString() << 0 << false << QList<int> {} << 80 << 1 << false << QList<qint64> { ampere };
    QTest::newRow("TE grouped-GEMM experts, Hopper")
        << te << QString() << 8 << true << QList<int> {} << 90 << 1 << false << QList<qint64> { 167777280 };
    QTest::newRow("TE grouped-GEMM experts, Ampere")
        << te << QString() << 8 << true << QList<int> {} << 80 << 1 << false << QList<qint64> { 20971520 };
    QTest::newRow("TE experts without grouped GEMM (SequentialMLP of TE linears)")
        << te << QString() << 8 << false << QList<int> {} << 90 << 1 << false << QList<qint64> { hopper };
    QTest::newRow("PP 2, MoE layers on stage 1 only")
        << te << QString() << 8 << true << QList<int> { 0, 0, 1, 1 } << 90 << 2 << false
        << QList<qint64> { hopper, 167777280 };
    QTest::newRow("local spec") << local << QString() << 0 << false << QList<int> {} << 90 << 1 << false
                                << QList<qint64> { 0 };
    QTest::newRow("local spec, grouped-GEMM experts")
        << local << QString() << 8 << true << QList<int> {} << 90 << 1 << false << QList<qint64> { 0 };
    QTest::newRow("hybrid stack (TE modules whatever transformer_impl says)")
        << local << QStringLiteral("M*M-") << 0 << false << QList<int> {} << 90 << 1 << false
        << QList<qint64> { hopper };
    QTest::newRow("hybrid stack, grouped-GEMM experts")
        << local << QStringLiteral("M*ME") << 8 << true << QList<int> {} << 90 << 1 << false
        << QList<qint64> { 167777280 };
    QTest::newRow("worker layout, TE grouped-GEMM experts")
        << te << QString() << 8 << true << QList<int> {} << 90 << 1 << true << QList<qint64> { 0 };
}

void TestEstimator::teCublasWorkspaces()
{
    QFETCH(QString, impl);
    QFETCH(QString, pattern);
    QFETCH(int, experts);
    QFETCH(bool, grouped);
    QFETCH(QList<int>, moeLayers);
    QFETCH(int, cc);
    QFETCH(int, pp);
    QFETCH(bool, worker);
    QFETCH(QList<qint64>, perStage);
    Recipe r = gpt();
    r.transformer_impl = impl.toStdString();
    r.attention_backend = "fused";
    if (!pattern.isEmpty())
        r.hybrid_layer_pattern = pattern.toStdString();
    if (experts > 0) {
        r.num_moe_experts = experts;
        r.moe_router_topk = 2;
        r.moe_grouped_gemm = grouped;
        if (!moeLayers.isEmpty())
            r.moe_layer_freq = std::vector<int>(moeLayers.begin(), moeLayers.end());
    }
    r.gpu_compute_capability = cc;
    r.pipeline_model_parallel_size = pp;
    const Recipe resolved = validate(r).resolved;
    const MemoryEstimate e = estimateMemory(resolved, worker ? Layout::Worker : Layout::Megatron);
    QVERIFY2(e.not_estimated.empty(), e.not_estimated.c_str());
    QCOMPARE(static_cast<int>(e.ranks.size()), perStage.size());
    for (size_t p = 0; p < e.ranks.size(); ++p) {
        const RankEstimate& rank = e.ranks[p];
        for (const PhaseEstimate& phase : rank.phases) {
            qint64 bytes = 0;
            int terms = 0;
            for (const MemoryTerm& t : phase.terms)
                if (t.name == "Transformer Engine cuBLAS workspaces") {
                    QCOMPARE(QString::fromStdString(t.category), QStringLiteral("other"));
                    QVERIFY(t.source.find("cpp_extensions/gemm.py") != std::string::npos);
                    bytes += t.bytes;
                    ++terms;
                }
            QVERIFY(terms <= 1);
            QCOMPARE(bytes, perStage[static_cast<qsizetype>(p)]);
        }
    }
    // Persistent: without the workspaces every phase's peak and the first iteration's are lower by exactly
    // the term (a recipe with no Transformer Engine GEMM for the same layers: their bytes as 0).
    if (worker || perStage.front() == 0)
        return;
    Recipe other = r;
    other.gpu_compute_capability = cc >= 90 ? 80 : 90;
    const MemoryEstimate o = estimateMemory(validate(other).resolved, Layout::Megatron);
    for (size_t p = 0; p < e.ranks.size(); ++p) {
        const qint64 count = perStage[static_cast<qsizetype>(p)] / (cc >= 90 ? 33555456 : 4194304);
        const qint64 delta = count * (cc >= 90 ? 33555456 - 4194304 : 4194304 - 33555456);
        QCOMPARE(e.ranks[p].first_iteration_peak_bytes - o.ranks[p].first_iteration_peak_bytes, delta);
        for (size_t ph = 0; ph < e.ranks[p].phases.size(); ++ph)
            QCOMPARE(e.ranks[p].phases[ph].peak_bytes - o.ranks[p].phases[ph].peak_bytes, delta);
    }
    // The estimate says which compute capability it assumed.
    const auto said = std::find_if(e.assumptions.begin(), e.assumptions.end(), [&](const std::string& a) {
        return a.find("gpu_compute_capability " + std::to_string(cc)) != std::string::npos;
    });
    QVERIFY(said != e.assumptions.end());
}

// Multi-token prediction (multi_token_prediction.py MultiTokenPredictionLayer at d98e8a64) on Korthikanti's
// layer (gpt(): the local spec, LayerNorm, unfused attention with dropout, GeLU with ffn = 4h, biases; TP 1,
// s = 2048, b = 2, h = 1024, a = 16 heads, V = 50304): the job with D depths against the same job without, on
// the stage that runs them (the last), at the forward's worst moment (the loss, both with and without).
// One depth keeps, written from the modules it runs:
//   its layer: Korthikanti's 34 sbh + 5 a s^2 b (core_attn drops the latter), the norms' statistics 16 sb;
//   the input part: the rolled tokens' embedding 2 sbh (enorm's input) and its dropout mask sbh, hnorm's
//     input 2 sbh (the previous output: the loss reads the block's concatenated copy of it), enorm's and
//     hnorm's statistics 2 x 8 sb, the concatenation [s, b, 2h] eh_proj keeps 4 sbh;
//   the output part: final_layernorm's input 2 sbh, its statistics 8 sb, the depth's slice of the block's
//     output [(1 + D) s, b, h] 2 sbh (the output layer's input in the depth's loss);
//   the depth's loss: the fp32 softmax 4 sb V.
// Full uniform recompute checkpoints a depth whole: its inputs, the embedding 2 sbh and the previous output
// 2 sbh, the embedding's mask sbh before it, the depth's slice of the output 2 sbh after it; block leaves it
// as it is (RT9). Parameters per MTP layer: its layer's 12 h^2 + 13 h (LayerNorm weight and bias twice, qkv
// 3h^2 + 3h, proj h^2 + h, fc1 4h^2 + 4h, fc2 4h^2 + h), enorm, hnorm and final_layernorm 2h each, eh_proj
// 2h^2; mtp_use_repeated_layer builds one for every depth. A last stage that is not the first builds an
// embedding of its own: V h and the position table s h. The worker builds no MTP layer: its layout is the
// job without.
void TestEstimator::mtpAddsItsDepths_data()
{
    QTest::addColumn<int>("depths");
    QTest::addColumn<bool>("repeated");
    QTest::addColumn<QString>("choice");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("layout");
    const int megatron = static_cast<int>(Layout::Megatron);
    QTest::newRow("quiet: mtp_num_layers 0") << 0 << false << u"[]"_s << 1 << megatron;
    QTest::newRow("quiet: the worker builds none") << 1 << false << u"[]"_s << 1 << int(Layout::Worker);
    QTest::newRow("one depth") << 1 << false << u"[]"_s << 1 << megatron;
    QTest::newRow("two depths") << 2 << false << u"[]"_s << 1 << megatron;
    QTest::newRow("two depths of one repeated layer") << 2 << true << u"[]"_s << 1 << megatron;
    QTest::newRow("core_attn acts in the MTP layer") << 1 << false << u"core_attn"_s << 1 << megatron;
    QTest::newRow("full uniform: one checkpoint") << 2 << false << u"full:uniform:1"_s << 1 << megatron;
    QTest::newRow("full block: not recomputed") << 1 << false << u"full:block:4"_s << 1 << megatron;
    QTest::newRow("PP 2: the last stage's own embedding") << 1 << false << u"[]"_s << 2 << megatron;
}

void TestEstimator::mtpAddsItsDepths()
{
    QFETCH(int, depths);
    QFETCH(bool, repeated);
    QFETCH(QString, choice);
    QFETCH(int, pp);
    QFETCH(int, layout);
    Recipe base = gpt();
    base.num_layers = 4 * pp;
    base.pipeline_model_parallel_size = pp;
    base = choose(base, choice.toStdString());
    Recipe with = base;
    with.mtp_num_layers = depths;
    with.mtp_use_repeated_layer = repeated;
    const Layout l = static_cast<Layout>(layout);
    const MemoryEstimate e0 = estimateMemory(validate(base).resolved, l);
    const MemoryEstimate e1 = estimateMemory(validate(with).resolved, l);
    QVERIFY2(e0.not_estimated.empty() && e1.not_estimated.empty(), e1.not_estimated.c_str());
    const RankEstimate& r0 = e0.ranks.back();
    const RankEstimate& r1 = e1.ranks.back();
    const bool counted = depths > 0 && l == Layout::Megatron;
    QCOMPARE(r1.scope.find("MTP layer") != std::string::npos, depths > 0);

    const double s = 2048, b = 2, h = 1024, a = 16, V = 50304, sbh = s * b * h, sb = s * b;
    double perDepth = 0;
    if (choice == u"full:uniform:1"_s)
        perDepth = 7 * sbh;
    else
        perDepth = 34 * sbh + (choice == u"core_attn"_s ? 0 : 5 * a * s * s * b) + 16 * sb + 9 * sbh + 16 * sb
            + 4 * sbh + 8 * sb;
    const double built = repeated ? 1 : depths;
    const double params = (12 * h * h + 13 * h) + 6 * h + 2 * h * h;
    const double expectedActs = counted ? depths * (perDepth + 4 * sb * V) : 0;
    const double expectedParams = counted ? built * params + (pp > 1 ? V * h + s * h : 0) : 0;

    // The same moment with and without: the loss.
    QCOMPARE(r1.phase("forward")->terms.back().name, r0.phase("forward")->terms.back().name);
    QCOMPARE(r1.phase("forward")->terms.back().name, std::string("logits during the loss"));
    const double acts = static_cast<double>(
        r1.phase("forward")->category("activations") - r0.phase("forward")->category("activations"));
    QVERIFY2(std::abs(acts - expectedActs) <= 1,
        qPrintable(u"activations %1 vs %2"_s.arg(acts, 0, 'f', 0).arg(expectedActs, 0, 'f', 0)));
    QCOMPARE(r1.parameters - r0.parameters, expectedParams);
    // The optimizer step holds 20 bytes a parameter here: bf16 parameters and gradient buffer (2 + 2), fp32
    // main parameters and moments (4 + 8, no distributed optimizer) and the step's fp32 main gradients (4).
    const double state
        = static_cast<double>(r1.phase("optimizer")->peak_bytes - r0.phase("optimizer")->peak_bytes);
    QVERIFY2(std::abs(state - 20 * expectedParams) <= 4, qPrintable(QString::number(state)));
}

// A hybrid stack's MTP layers are its pattern's after '/' (hybrid_model.py); mtp_hybrid_override_pattern, the
// deprecated spelling, is joined to a pattern without '/' as Megatron-LM's validate_args joins it
// (mtp_num_layers copies, when above 0) and Bridge's HybridModelProvider.finalize (at least one under
// mtp_use_repeated_layer); without a pattern HybridModel builds none, whatever mtp_num_layers says. Both take
// the depths from the pattern, except Bridge under mtp_use_repeated_layer with mtp_num_layers given; that
// builds one layer for every depth. Each spelling gives the estimate of the unified pattern of as many depths
// ("*E*E/*E/*E": an attention layer and an MoE layer a depth), less the repeated layer's parameters, or the
// one without MTP ("*E*E").
void TestEstimator::mtpHybridPatternSpellings_data()
{
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QString>("legacy"); // mtp_hybrid_override_pattern, "" unset
    QTest::addColumn<int>("mtpNumLayers"); // -1 unset
    QTest::addColumn<bool>("repeated");
    QTest::addColumn<bool>("bridge"); // the front end: Bridge overrides, else Megatron-LM flags
    QTest::addColumn<int>("depths");
    QTest::addColumn<int>("built");
    const auto row = [](const char* tag, const char* pattern, const char* legacy, int n, bool repeated,
                         bool bridge, int depths, int built) {
        QTest::newRow(tag) << QString::fromLatin1(pattern) << QString::fromLatin1(legacy) << n << repeated
                           << bridge << depths << built;
    };
    row("unified", "*E*E/*E/*E", "", -1, false, true, 2, 2);
    row("legacy, joined", "*E*E", "*E", 2, false, true, 2, 2);
    row("legacy, joined by Megatron-LM", "*E*E", "*E", 2, false, false, 2, 2);
    row("legacy without mtp_num_layers: none", "*E*E", "*E", -1, false, true, 0, 0);
    row("mtp_num_layers without a pattern: none", "*E*E", "", 2, false, true, 0, 0);
    row("Bridge, repeated: one layer, two depths", "*E*E/*E/*E", "", 2, true, true, 2, 1);
    row("Bridge, repeated legacy: at least one copy", "*E*E", "*E", -1, true, true, 1, 1);
    row("Megatron-LM, repeated legacy: none without mtp_num_layers", "*E*E", "*E", -1, true, false, 0, 0);
    row("Megatron-LM, repeated: the pattern's depths", "*E*E/*E/*E", "", 1, true, false, 2, 1);
}

void TestEstimator::mtpHybridPatternSpellings()
{
    QFETCH(QString, pattern);
    QFETCH(QString, legacy);
    QFETCH(int, mtpNumLayers);
    QFETCH(bool, repeated);
    QFETCH(bool, bridge);
    QFETCH(int, depths);
    QFETCH(int, built);
    Recipe r = smallHybrid("*E*E");
    r.front_end = bridge ? InputFormat::BridgeOverrides : InputFormat::MegatronFlags;
    const Recipe none = r;
    r.hybrid_layer_pattern = pattern.toStdString();
    if (!legacy.isEmpty())
        r.mtp_hybrid_override_pattern = legacy.toStdString();
    if (mtpNumLayers >= 0)
        r.mtp_num_layers = mtpNumLayers;
    r.mtp_use_repeated_layer = repeated;
    Recipe unified = none; // the unified pattern of as many depths, each layer its own
    for (int d = 0; d < depths; ++d)
        *unified.hybrid_layer_pattern += "/*E";

    const MtpShape m = mtpShape(r);
    QCOMPARE(m.depths, depths);
    QCOMPARE(m.built, built);
    QCOMPARE(pipelineStage(r, 0).mtp_layers, depths);
    if (depths > 0) {
        QCOMPARE(m.pattern, std::string("*E"));
        QCOMPARE(int(m.layers.size()), 2);
    }
    const auto estimate = [](const Recipe& x) {
        const MemoryEstimate e = estimateMemory(validate(x).resolved);
        return std::make_pair(e.ranks[0].parameters, e.ranks[0].phase("forward")->category("activations"));
    };
    const auto got = estimate(r);
    const auto want = estimate(depths > 0 ? unified : none);
    QCOMPARE(got.second, want.second);
    // One MTP layer of a repeated pair has no parameters of its own: the attention layer (RMSNorm h, qkv
    // (8 + 2 x 8) 128 h, proj h^2), the MoE layer (RMSNorm h, router 8 h, 8 experts of 2 x 512 h), enorm,
    // hnorm, final_layernorm h each and eh_proj 2 h^2.
    const double h = 1024;
    const double layer = (h + 24 * 128 * h + h * h) + (h + 8 * h + 8 * 2 * 512 * h) + 3 * h + 2 * h * h;
    QCOMPARE(got.first, want.first - (depths - built) * layer);
}

// Under PEFT (Bridge's LoRA) an MTP depth's layer is adapted as the decoder's are (its linears carry the
// target names), the rest of the depth frozen. On gpt() with LoRA of rank 8 on linear_qkv and linear_fc2, one
// depth against none: the frozen parameters grow by the MTP layer's 14 h^2 + 19 h (mtpAddsItsDepths), the
// adapters by the layer's 8 (h + 3h) + 8 (4h + h), and the gradient buffer, main parameters and moments by
// the adapters' alone. The frozen eh_proj and output layer keep no input, so the depth's own parts keep 6 sbh
// less than without PEFT (the concatenation, 4 sbh, and the output's slice, 2 sbh): 5 sbh + 16 sb before its
// layer, 2 sbh + 8 sb after it; its layer keeps what a decoder layer keeps under PEFT (peftFreezesTheBase
// holds that to its closed form); its loss the 4 sbV softmax.
void TestEstimator::mtpUnderPeft()
{
    Recipe base = gpt();
    base.peft = "lora";
    base.peft_dim = 8;
    base.peft_target_modules = { "linear_qkv", "linear_fc2" };
    Recipe with = base;
    with.mtp_num_layers = 1;
    const Recipe r0 = validate(base).resolved, r1 = validate(with).resolved;
    const RankEstimate e0 = estimateMemory(r0).ranks[0], e1 = estimateMemory(r1).ranks[0];
    const double s = 2048, b = 2, h = 1024, V = 50304, sbh = s * b * h, sb = s * b;
    const double params = 14 * h * h + 19 * h, adapters = 8 * (h + 3 * h) + 8 * (4 * h + h);
    const PhaseEstimate &o0 = *e0.phase("optimizer"), &o1 = *e1.phase("optimizer");
    const auto more = [&](const char* category) {
        return static_cast<double>(o1.category(category) - o0.category(category));
    };
    QCOMPARE(more("parameters"), (params + adapters) * 2);
    QCOMPARE(more("gradients"), adapters * (2 + 4));
    QCOMPARE(more("main_parameters"), adapters * 4);
    QCOMPARE(more("optimizer_states"), adapters * 8);
    QCOMPARE(e1.phase("forward")->terms.back().name, std::string("logits during the loss"));
    const double layer = static_cast<double>(activationsPerLayer(r0, Layout::Megatron).dense);
    const double expected = layer + 5 * sbh + 16 * sb + 2 * sbh + 8 * sb + 4 * sb * V;
    const double acts = static_cast<double>(
        e1.phase("forward")->category("activations") - e0.phase("forward")->category("activations"));
    QVERIFY2(std::abs(acts - expected) <= 1,
        qPrintable(u"activations %1 vs %2"_s.arg(acts, 0, 'f', 0).arg(expected, 0, 'f', 0)));
}

QTEST_GUILESS_MAIN(TestEstimator)
#include "tst_estimator.moc"

// PEFT (Bridge's LoRA) on Korthikanti's layer: the frozen linears keep no input for a weight gradient (QKV's
// input 2sbh, the context 2sbh, FC1's input 2sbh, FC2's input 8sbh, all / t under SP); an adapted one keeps
// it (its adapter's linear_in does), plus linear_out's input [s b, dim] whole, and under SP a gathered copy
// of a column-parallel base's input (2sbh).
void TestEstimator::peftFreezesTheBase_data()
{
    using namespace Qt::StringLiterals;
    QTest::addColumn<int>("tp");
    QTest::addColumn<QStringList>("targets");
    QTest::addColumn<int>("dim");
    QTest::addColumn<QString>("labels");
    QTest::addColumn<double>("sbh"); // per-layer multiple of sbh / t, the rest's
    QTest::addColumn<double>("gathered"); // multiple of sbh (not split): SP's copies
    QTest::addColumn<int>("adapters"); // adapted linears: 2 s b dim bytes each
    QTest::newRow("frozen, nothing adapted")
        << 1 << QStringList { u"in_proj"_s } << 8 << u"[]"_s << 20.0 << 0.0 << 0;
    QTest::newRow("linear_qkv and linear_fc2, rank 8")
        << 1 << QStringList { u"linear_qkv"_s, u"linear_fc2"_s } << 8 << u"[]"_s << 30.0 << 0.0 << 2;
    QTest::newRow("all four, rank 16, TP 4 + SP")
        << 4 << QStringList { u"linear_qkv"_s, u"linear_proj"_s, u"linear_fc1"_s, u"linear_fc2"_s } << 16
        << u"[]"_s << 34.0 << 4.0 << 4;
    QTest::newRow("frozen, core_attn")
        << 1 << QStringList { u"in_proj"_s } << 8 << u"core_attn"_s << 20.0 << 0.0 << 0;
    QTest::newRow("linear_proj, core_attn, TP 4 + SP")
        << 4 << QStringList { u"linear_proj"_s } << 32 << u"core_attn"_s << 22.0 << 0.0 << 1;
}

void TestEstimator::peftFreezesTheBase()
{
    QFETCH(int, tp);
    QFETCH(QStringList, targets);
    QFETCH(int, dim);
    QFETCH(QString, labels);
    QFETCH(double, sbh);
    QFETCH(double, gathered);
    QFETCH(int, adapters);
    Recipe r = choose(gpt(), labels.toStdString());
    r.tensor_model_parallel_size = tp;
    r.sequence_parallel = tp > 1;
    r.peft = "lora";
    r.peft_dim = dim;
    r.peft_target_modules.clear();
    for (const QString& t : targets)
        r.peft_target_modules.push_back(t.toStdString());
    const double s = r.seq_length, b = r.micro_batch_size, h = r.hidden_size, a = r.num_attention_heads;
    const double t = tp;
    double expected
        = s * b * h * sbh / t + s * b * h * gathered + 16 * s * b / t + adapters * 2 * s * b * dim;
    if (labels == QLatin1String("[]"))
        expected += 5 * a * s * s * b / t;
    const auto got = activationsPerLayer(validate(r).resolved, Layout::Megatron);
    QVERIFY2(rel(static_cast<double>(got.dense), expected) < 1e-9,
        qPrintable(QStringLiteral("%1 vs %2").arg(got.dense).arg(expected, 0, 'f', 0)));
    // The worker trains every parameter: its layout is the full job's.
    Recipe full = r;
    full.peft.reset();
    QCOMPARE(activationsPerLayer(validate(r).resolved, Layout::Worker).dense,
        activationsPerLayer(validate(full).resolved, Layout::Worker).dense);
}

// The optimizer's side: every parameter of the model stays in the training dtype, frozen; the adapters
// (dim x (in + out) per adapted linear) alone have a gradient, a main copy and Adam's moments.
void TestEstimator::peftTrainsTheAdaptersOnly()
{
    Recipe full = gpt();
    Recipe peft = full;
    peft.peft = "lora";
    peft.peft_dim = 8;
    peft.peft_target_modules = { "linear_qkv", "linear_fc2" };
    const double h = full.hidden_size, F = 4 * h;
    const double adapters = full.num_layers * (8 * (h + 3 * h) + 8 * (F + h)); // QKV: h -> 3h (MHA)
    const auto opt
        = [](const Recipe& r) { return *estimateMemory(validate(r).resolved).ranks[0].phase("optimizer"); };
    const PhaseEstimate f = opt(full), p = opt(peft);
    const double P = static_cast<double>(f.category("parameters")) / 2; // bf16
    QCOMPARE(static_cast<double>(p.category("parameters")), (P + adapters) * 2);
    // The bf16 gradient buffer, and in the step its fp32 copies (_copy_model_grads_to_main_grads).
    QCOMPARE(static_cast<double>(p.category("gradients")), adapters * (2 + 4));
    QCOMPARE(static_cast<double>(p.category("main_parameters")), adapters * 4);
    QCOMPARE(static_cast<double>(p.category("optimizer_states")), adapters * 8);
    QCOMPARE(static_cast<double>(f.category("optimizer_states")), P * 8); // the full job's, for contrast
}

// PEFT on a DSA layer (the small DSA model, TP 1, no recompute), nothing adapted: the frozen down projections
// and the indexer's linears keep no hidden state (Tsp x h), linear_q_up_proj no normalised compressed query
// (Tsp x q_lora_rank), linear_proj no context (T x heads x v_head_dim), the MLP's FC1 no normalised input
// (T x h) and FC2 no activation (T x ffn): all 16-bit.
void TestEstimator::peftOnDsaLayers()
{
    Recipe full = dsaModel();
    Recipe frozen = full;
    frozen.peft = "lora";
    frozen.peft_target_modules = { "in_proj" };
    const double T = full.seq_length, h = full.hidden_size, ql = *full.q_lora_rank, F = *full.ffn_hidden_size;
    const double heads_dv = full.num_attention_heads * full.v_head_dim;
    const auto perLayer = [](const Recipe& r) {
        return static_cast<double>(activationsPerLayer(validate(r).resolved, Layout::Megatron).dense);
    };
    QCOMPARE(perLayer(full) - perLayer(frozen), 2 * (T * h + T * ql + T * heads_dv + T * h + T * F));
}
