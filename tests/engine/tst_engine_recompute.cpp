// SPDX-License-Identifier: Apache-2.0
// Recompute changes memory, never the numbers: for every label the engine models and for full uniform /
// block with several recompute_num_layers (divisors and not), the loss and every parameter's gradient
// equal the no-recompute run's (fp32, dropout on, same seeds), and the replay really ran.
#include <QtTest>

#include "core/recompute_labels.h"
#include "engine/model.h"
#include "engine_test_util.h"

using namespace rs;
using namespace rs::enginetest;

Q_DECLARE_METATYPE(rs::enginetest::Arch)

class TestEngineRecompute : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); } // the same reduction order in every run

    void gradientsMatchNoRecompute_data();
    void gradientsMatchNoRecompute();
    void fusedActivationMatchesEager_data();
    void fusedActivationMatchesEager();
    void pipelineStageRunsItsChunks();
    void refusesLabelsItCannotModel_data();
    void refusesLabelsItCannotModel();
    void refusesFp8AndFp4_data();
    void refusesFp8AndFp4();
    void builtLabelsAreTheTablesBuiltRows();
    void fullRecomputeUnits_data();
    void fullRecomputeUnits();
};

void TestEngineRecompute::gradientsMatchNoRecompute_data()
{
    QTest::addColumn<Arch>("arch");
    QTest::addColumn<QString>("granularity");
    QTest::addColumn<QStringList>("modules"); // selective labels, or {method, k} for full
    QTest::addColumn<bool>("replays");

    const auto sel = [](const char* name, Arch arch, QStringList labels) {
        QTest::newRow(name) << arch << QStringLiteral("selective") << labels << true;
    };
    const auto fullRow = [](const char* name, Arch arch, const char* method, int k, bool replays) {
        QTest::newRow(name) << arch << QStringLiteral("full")
                            << QStringList { QString::fromLatin1(method), QString::number(k) } << replays;
    };
    sel("dense unfused core_attn", Arch::DenseUnfused, { QStringLiteral("core_attn") });
    sel("dense unfused layernorm", Arch::DenseUnfused, { QStringLiteral("layernorm") });
    sel("dense unfused mlp", Arch::DenseUnfused, { QStringLiteral("mlp") });
    sel("dense unfused core_attn+layernorm+mlp", Arch::DenseUnfused,
        { QStringLiteral("core_attn"), QStringLiteral("layernorm"), QStringLiteral("mlp") });
    sel("dense fused gqa core_attn", Arch::DenseFusedGqa, { QStringLiteral("core_attn") });
    sel("dense fused gqa layernorm", Arch::DenseFusedGqa, { QStringLiteral("layernorm") });
    sel("dense fused gqa mlp", Arch::DenseFusedGqa, { QStringLiteral("mlp") });
    sel("mla moe mla_up_proj", Arch::MlaMoe, { QStringLiteral("mla_up_proj") });
    sel("mla moe core_attn", Arch::MlaMoe, { QStringLiteral("core_attn") });
    sel("mla moe layernorm", Arch::MlaMoe, { QStringLiteral("layernorm") });
    sel("mla moe moe_act", Arch::MlaMoe, { QStringLiteral("moe_act") });
    sel("mla moe moe", Arch::MlaMoe, { QStringLiteral("moe") });
    sel("mla moe shared_experts", Arch::MlaMoe, { QStringLiteral("shared_experts") });
    sel("mla moe mlp (first dense layer)", Arch::MlaMoe, { QStringLiteral("mlp") });
    sel("mla moe mla_up_proj+core_attn+moe_act+layernorm", Arch::MlaMoe,
        { QStringLiteral("mla_up_proj"), QStringLiteral("core_attn"), QStringLiteral("moe_act"),
            QStringLiteral("layernorm") });
    sel("mla moe moe+moe_act+shared_experts+layernorm (nested)", Arch::MlaMoe,
        { QStringLiteral("moe"), QStringLiteral("moe_act"), QStringLiteral("shared_experts"),
            QStringLiteral("layernorm") });
    sel("mla no q_lora unfused mla_up_proj", Arch::MlaNoQLoraUnfused, { QStringLiteral("mla_up_proj") });
    sel("mla no q_lora unfused mla_up_proj+core_attn+layernorm", Arch::MlaNoQLoraUnfused,
        { QStringLiteral("mla_up_proj"), QStringLiteral("core_attn"), QStringLiteral("layernorm") });
    for (int k : { 1, 2, 3, 5 }) {
        fullRow(qPrintable(QStringLiteral("dense unfused uniform k=%1").arg(k)), Arch::DenseUnfused,
            "uniform", k, true);
        fullRow(qPrintable(QStringLiteral("dense unfused block k=%1").arg(k)), Arch::DenseUnfused, "block", k,
            true);
    }
    fullRow("dense unfused block k=0 (no layer checkpointed)", Arch::DenseUnfused, "block", 0, false);
    fullRow("dense fused gqa uniform k=2", Arch::DenseFusedGqa, "uniform", 2, true);
    // No hidden dropout: the replay of a unit stops before its last fc2 (a tail checkpoint).
    sel("no hidden dropout core_attn", Arch::DenseUnfusedNoHiddenDropout, { QStringLiteral("core_attn") });
    sel("no hidden dropout mlp", Arch::DenseUnfusedNoHiddenDropout, { QStringLiteral("mlp") });
    for (int k : { 1, 2 }) {
        fullRow(qPrintable(QStringLiteral("no hidden dropout uniform k=%1").arg(k)),
            Arch::DenseUnfusedNoHiddenDropout, "uniform", k, true);
        fullRow(qPrintable(QStringLiteral("no hidden dropout block k=%1").arg(k)),
            Arch::DenseUnfusedNoHiddenDropout, "block", k, true);
    }
    fullRow("mla moe uniform k=2", Arch::MlaMoe, "uniform", 2, true);
    fullRow("mla moe block k=2", Arch::MlaMoe, "block", 2, true);
    // Hybrid stacks: the labels that reach their MoE, MLP and attention layers, full recompute over Mamba
    // and GatedDeltaNet layers, and GatedDeltaNet's own labels.
    sel("hybrid mamba moe moe_act", Arch::HybridMambaMoe, { QStringLiteral("moe_act") });
    sel("hybrid mamba moe moe", Arch::HybridMambaMoe, { QStringLiteral("moe") });
    sel("hybrid mamba moe layernorm", Arch::HybridMambaMoe, { QStringLiteral("layernorm") });
    sel("hybrid mamba moe moe+layernorm", Arch::HybridMambaMoe,
        { QStringLiteral("moe"), QStringLiteral("layernorm") });
    sel("hybrid mamba moe core_attn+mlp+shared_experts", Arch::HybridMambaMoe,
        { QStringLiteral("core_attn"), QStringLiteral("mlp"), QStringLiteral("shared_experts") });
    fullRow("hybrid mamba moe uniform k=1", Arch::HybridMambaMoe, "uniform", 1, true);
    fullRow("hybrid mamba moe uniform k=2", Arch::HybridMambaMoe, "uniform", 2, true);
    fullRow("hybrid mamba moe block k=3", Arch::HybridMambaMoe, "block", 3, true);
    sel("hybrid gdn gdn_norm_out", Arch::HybridGdn, { QStringLiteral("gdn_norm_out") });
    sel("hybrid gdn gdn (dev)", Arch::HybridGdn, { QStringLiteral("gdn") });
    fullRow("hybrid gdn uniform k=1", Arch::HybridGdn, "uniform", 1, true);
    sel("gpt gdn moe gdn_norm_out+moe_act", Arch::GptGdnMoe,
        { QStringLiteral("gdn_norm_out"), QStringLiteral("moe_act") });
    sel("gpt gdn moe core_attn+layernorm", Arch::GptGdnMoe,
        { QStringLiteral("core_attn"), QStringLiteral("layernorm") });
}

void TestEngineRecompute::gradientsMatchNoRecompute()
{
    QFETCH(Arch, arch);
    QFETCH(QString, granularity);
    QFETCH(QStringList, modules);
    QFETCH(bool, replays);

    const Recipe base = tinyRecipe(arch);
    Recipe recipe = base;
    if (granularity == QLatin1String("selective")) {
        std::vector<std::string> labels;
        for (const auto& m : modules)
            labels.push_back(m.toStdString());
        recipe = selective(base, labels);
    } else {
        recipe = full(base, modules[0].toStdString(), modules[1].toInt());
    }
    const auto reference = runStep(base);
    const auto run = runStep(recipe);

    QCOMPARE(reference.flops.replays, int64_t(0));
    if (replays)
        QVERIFY2(run.flops.replays > 0, "the checkpoint never replayed its region");
    else
        QCOMPARE(run.flops.replays, int64_t(0));
    QVERIFY(std::isfinite(reference.loss));
    QCOMPARE(run.loss, reference.loss);
    QCOMPARE(run.grads.size(), reference.grads.size());
    // A replay reorders fp32 sums (every recompute moves gradients by about 1e-7 of their size). A gradient
    // that is a near-cancelling sum, a thousand times smaller than the model's largest (GatedDeltaNet's
    // A_log under Megatron's A in [1, 16], whose decay exp(-16) leaves almost nothing to differentiate), is
    // held to 1e-6 of that thousandth instead of its own size.
    double largest = 0;
    for (const auto& [name, g0] : reference.grads)
        if (g0.defined())
            largest = std::max(largest, g0.abs().max().item<double>());
    for (const auto& [name, g0] : reference.grads) {
        const auto& g = run.grads.at(name);
        QVERIFY2(g0.defined() && g.defined(), name.c_str());
        const double scale = g0.abs().max().item<double>();
        const double diff = (g - g0).abs().max().item<double>();
        QVERIFY2(scale > 0,
            qPrintable(QStringLiteral("%1 has a zero gradient").arg(QString::fromStdString(name))));
        QVERIFY2(diff <= 1e-6 * std::max(scale, 1e-3 * largest),
            qPrintable(QStringLiteral("%1: max |diff| %2 (scale %3)")
                           .arg(QString::fromStdString(name))
                           .arg(diff)
                           .arg(scale)));
    }
}

// bias_activation_fusion (Megatron's fused bias SwiGLU / GeGLU / GeLU: one autograd node that recomputes
// the activation in backward) changes what is kept, not the numbers: the loss and every gradient equal the
// eager path's, in fp32 and bf16, dense, routed (grouped and per-expert) and shared experts, with the
// checkpoints around it.
void TestEngineRecompute::fusedActivationMatchesEager_data()
{
    QTest::addColumn<Arch>("arch");
    QTest::addColumn<QString>("activation"); // swiglu | geglu | gelu
    QTest::addColumn<bool>("grouped");
    QTest::addColumn<QStringList>("modules");
    QTest::addColumn<bool>("bf16");
    const auto row = [](const char* name, Arch arch, const char* act, bool grouped, QStringList modules) {
        for (const bool bf16 : { false, true })
            QTest::newRow(qPrintable(
                QString::fromLatin1(name) + (bf16 ? QStringLiteral(" bf16") : QStringLiteral(" fp32"))))
                << arch << QString::fromLatin1(act) << grouped << modules << bf16;
    };
    row("dense swiglu", Arch::DenseFusedGqa, "swiglu", false, {});
    row("dense geglu", Arch::DenseUnfused, "geglu", false, {});
    row("dense gelu", Arch::DenseUnfused, "gelu", false, {});
    row("dense swiglu mlp", Arch::DenseFusedGqa, "swiglu", false, { QStringLiteral("mlp") });
    row("moe swiglu grouped", Arch::MlaMoe, "swiglu", true, {});
    row("moe swiglu sequential", Arch::MlaMoe, "swiglu", false, {});
    row("moe geglu grouped", Arch::MlaMoe, "geglu", true, {});
    row("moe gelu sequential", Arch::MlaMoe, "gelu", false, {});
    row("moe swiglu moe_act", Arch::MlaMoe, "swiglu", true, { QStringLiteral("moe_act") });
    row("moe swiglu moe+shared_experts", Arch::MlaMoe, "swiglu", true,
        { QStringLiteral("moe"), QStringLiteral("shared_experts") });
}

void TestEngineRecompute::fusedActivationMatchesEager()
{
    QFETCH(Arch, arch);
    QFETCH(QString, activation);
    QFETCH(bool, grouped);
    QFETCH(QStringList, modules);
    QFETCH(bool, bf16);
    const auto [eager, fused] = activationPair(arch, activation, grouped, modules, bf16);
    const auto reference = runStep(eager);
    const auto run = runStep(fused);
    // bf16: the same ops in the same order; a gradient summed over tokens may round differently.
    const double tolerance = bf16 ? 1e-2 : 1e-6;
    QVERIFY(std::isfinite(reference.loss));
    QVERIFY2(std::abs(run.loss - reference.loss) <= tolerance * std::abs(reference.loss),
        qPrintable(QStringLiteral("loss %1 vs %2").arg(run.loss).arg(reference.loss)));
    QCOMPARE(run.grads.size(), reference.grads.size());
    for (const auto& [name, g0] : reference.grads) {
        const auto& g = run.grads.at(name);
        QVERIFY2(g0.defined() && g.defined(), name.c_str());
        const double scale = g0.abs().max().item<double>();
        const double diff = (g.to(torch::kFloat32) - g0.to(torch::kFloat32)).abs().max().item<double>();
        QVERIFY2(scale > 0, name.c_str());
        QVERIFY2(diff <= tolerance * scale,
            qPrintable(QStringLiteral("%1: max |diff| %2 (scale %3)")
                           .arg(QString::fromStdString(name))
                           .arg(diff)
                           .arg(scale)));
    }
}

void TestEngineRecompute::pipelineStageRunsItsChunks()
{
    // PP=2, VPP=2 over 8 layers: the first stage holds global layers 0-1 and 4-5 (two chunks of two).
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.num_layers = 8;
    r.pipeline_model_parallel_size = 2;
    r.virtual_pipeline_model_parallel_size = 2;
    const auto config = engine::modelConfig(r, 0); // rank 0 of the layout: the first stage
    QCOMPARE(config.global_layers, (std::vector<int> { 0, 1, 4, 5 }));
    QCOMPARE(config.chunk, (std::vector<int> { 0, 0, 1, 1 }));
    QCOMPARE(QString::fromStdString(config.stage_scope),
        QStringLiteral("stage 0 of 2: layers 0-1, 4-5 of 8, embedding"));
    QVERIFY(config.has_embedding && !config.has_head);
    // block k=1 applies per chunk: local layers 0 and 2 (global 0 and 4) are checkpointed.
    const auto plan = engine::recomputePlan(full(r, "block", 1), config);
    QCOMPARE(plan.units.size(), size_t(4));
    QVERIFY(plan.units[0].checkpointed && !plan.units[1].checkpointed);
    QVERIFY(plan.units[2].checkpointed && !plan.units[3].checkpointed);
    const auto reference = runStep(r);
    const auto run = runStep(full(r, "block", 1));
    QCOMPARE(run.loss, reference.loss);
    QCOMPARE(run.flops.replays, int64_t(2)); // global layers 0 and 4
}

void TestEngineRecompute::refusesLabelsItCannotModel_data()
{
    QTest::addColumn<QString>("label");
    QTest::addColumn<QString>("reason");
    QTest::newRow("gdp_in_proj") << QStringLiteral("gdp_in_proj") << QStringLiteral("GatedDeltaProduct");
    QTest::newRow("mhc") << QStringLiteral("mhc") << QStringLiteral("hyper-connections");
    QTest::newRow("unknown") << QStringLiteral("moe_layer") << QStringLiteral("not a label the engine knows");
}

void TestEngineRecompute::refusesLabelsItCannotModel()
{
    QFETCH(QString, label);
    QFETCH(QString, reason);
    const Recipe r = selective(tinyRecipe(Arch::DenseUnfused), { "core_attn", label.toStdString() });
    const auto config = engine::modelConfig(r);
    try {
        engine::recomputePlan(r, config);
        QFAIL("the label was accepted");
    } catch (const engine::EngineError& e) {
        QCOMPARE(QString::fromStdString(e.field), QStringLiteral("recompute_modules"));
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.contains(label) && message.contains(reason), qPrintable(message));
    }
}

// FP4 is Transformer Engine's, LoRA Bridge's; FP8 runs through the worker's TE linears on the stacks measured
// against real Megatron + TE: what it does not build is refused by field, naming what measures it instead.
void TestEngineRecompute::refusesFp8AndFp4_data()
{
    QTest::addColumn<QString>("change");
    QTest::addColumn<QString>("field");
    QTest::newRow("fp4") << QStringLiteral("fp4") << QStringLiteral("fp4");
    QTest::newRow("fp8 on the local spec")
        << QStringLiteral("fp8 local") << QStringLiteral("transformer_impl");
    QTest::newRow("fp8 blockwise") << QStringLiteral("fp8 blockwise") << QStringLiteral("fp8_recipe");
    QTest::newRow("fp8 param gather")
        << QStringLiteral("fp8 param gather") << QStringLiteral("fp8_param_gather");
    QTest::newRow("fp8 sequence parallel") << QStringLiteral("fp8 sp") << QStringLiteral("sequence_parallel");
    QTest::newRow("fp8 MLA") << QStringLiteral("fp8 mla") << QStringLiteral("multi_latent_attention");
    QTest::newRow("peft (Bridge's LoRA)") << QStringLiteral("peft") << QStringLiteral("peft.scheme");
    QTest::newRow("qk_layernorm (norms on the heads)")
        << QStringLiteral("qk_layernorm") << QStringLiteral("qk_layernorm");
}

void TestEngineRecompute::refusesFp8AndFp4()
{
    QFETCH(QString, change);
    QFETCH(QString, field);
    Recipe r = tinyRecipe(change == QStringLiteral("fp8 mla") ? Arch::MlaMoe : Arch::DenseUnfused);
    if (change.startsWith(QStringLiteral("fp8"))) {
        r.fp8 = "hybrid";
        r.fp8_recipe = "tensorwise";
        r.transformer_impl = change == QStringLiteral("fp8 local") ? "local" : "transformer_engine";
    }
    if (change == QStringLiteral("fp4"))
        r.fp4 = "e2m1";
    else if (change == QStringLiteral("fp8 blockwise"))
        r.fp8_recipe = "blockwise";
    else if (change == QStringLiteral("fp8 param gather"))
        r.fp8_param_gather = true;
    else if (change == QStringLiteral("fp8 sp")) {
        r.tensor_model_parallel_size = 2;
        r.sequence_parallel = true;
    } else if (change == QStringLiteral("qk_layernorm"))
        r.qk_layernorm = true;
    else if (change == QStringLiteral("peft"))
        r.peft = "lora";
    try {
        engine::recomputePlan(r, engine::modelConfig(r));
        QFAIL("the recipe was accepted");
    } catch (const engine::EngineError& e) {
        QCOMPARE(QString::fromStdString(e.field), field);
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(
            message.contains(QStringLiteral("--one-rank")) && message.contains(QStringLiteral("estimate")),
            qPrintable(message));
    }
}

// The label table (core/recompute_labels.h) says which labels the worker builds (no not_built reason): the
// engine's own list must be exactly those, so a row added to the table fails here until its checkpoint
// exists, and a checkpoint added here fails until the row says so.
void TestEngineRecompute::builtLabelsAreTheTablesBuiltRows()
{
    std::set<std::string> built_rows;
    for (const auto& row : recomputeLabels())
        if (row.not_built.empty())
            built_rows.insert(std::string(row.name));
    QCOMPARE(engine::builtRecomputeLabels(), built_rows);
}

void TestEngineRecompute::fullRecomputeUnits_data()
{
    // megatron-rules.md (d), worked example C and friends: n = 8 layers.
    QTest::addColumn<QString>("method");
    QTest::addColumn<int>("k");
    QTest::addColumn<QString>("units"); // first+count, '*' when checkpointed
    QTest::newRow("uniform k=3 (non-divisor: 3,3,2)")
        << QStringLiteral("uniform") << 3 << QStringLiteral("0+3* 3+3* 6+2*");
    QTest::newRow("uniform k=8 (one group)") << QStringLiteral("uniform") << 8 << QStringLiteral("0+8*");
    QTest::newRow("uniform k=10 (k > n)") << QStringLiteral("uniform") << 10 << QStringLiteral("0+8*");
    QTest::newRow("block k=3") << QStringLiteral("block") << 3
                               << QStringLiteral("0+1* 1+1* 2+1* 3+1 4+1 5+1 6+1 7+1");
    QTest::newRow("block k=10 (every layer)")
        << QStringLiteral("block") << 10 << QStringLiteral("0+1* 1+1* 2+1* 3+1* 4+1* 5+1* 6+1* 7+1*");
    QTest::newRow("block k=0 (none)")
        << QStringLiteral("block") << 0 << QStringLiteral("0+1 1+1 2+1 3+1 4+1 5+1 6+1 7+1");
}

void TestEngineRecompute::fullRecomputeUnits()
{
    QFETCH(QString, method);
    QFETCH(int, k);
    QFETCH(QString, units);
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.num_layers = 8;
    const auto plan = engine::recomputePlan(full(r, method.toStdString(), k), engine::modelConfig(r));
    QStringList got;
    for (const auto& u : plan.units)
        got << QStringLiteral("%1+%2%3").arg(u.first).arg(u.count).arg(
            u.checkpointed ? QStringLiteral("*") : QString());
    QCOMPARE(got.join(QLatin1Char(' ')), units);
}

QTEST_GUILESS_MAIN(TestEngineRecompute)
#include "tst_engine_recompute.moc"
