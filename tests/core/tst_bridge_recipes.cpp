// SPDX-License-Identifier: Apache-2.0
// Megatron Bridge's recipes by name (core/bridge_recipes.h): every text-LLM recipe whose architecture the
// table holds gives a job that validates and estimates; the others are refused with a sentence that says
// why (not a text LLM; an architecture the table lacks, naming its Hugging Face model); the job is the one
// Bridge's setup() would run (the world size's DP, the mixed-precision preset, the precision-aware
// optimizer's dtypes, the overrides on top); an unknown name gets the nearest names.
#include <QtTest>

#include "core/bridge_recipes.h"
#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"

using namespace rs;
using namespace Qt::StringLiterals;

class TestBridgeRecipes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyTextRecipeEstimatesOrSaysWhyNot();
    void moonlightIsTheGuidesJob();
    void overridesAndWorldSizeApplyOnTop();
    void refusals_data();
    void refusals();
};

void TestBridgeRecipes::everyTextRecipeEstimatesOrSaysWhyNot()
{
    QCOMPARE(bridgeRecipeCommit(), std::string("067f987df03b8355b03192d88d70f1709fedf51a"));
    int text = 0, estimated = 0, refused = 0;
    QStringList failures;
    for (const BridgeRecipeEntry& e : bridgeRecipes()) {
        if (e.kind != "text") {
            try {
                bridgeJob(e.name);
                failures << QString::fromStdString(e.name + ": a " + e.kind + " recipe was taken");
            } catch (const RecipeError& err) {
                if (std::string(err.what()).find("text LLMs") == std::string::npos)
                    failures << QString::fromStdString(e.name + ": " + err.what());
            }
            continue;
        }
        ++text;
        try {
            const BridgeJob job = bridgeJob(e.name);
            const Validation v = validate(job.recipe, InputFormat::BridgeOverrides);
            const MemoryEstimate m = estimateMemory(v.resolved);
            if (m.peak_bytes > 0)
                ++estimated;
            else if (job.recipe.num_layers < 1 && !m.not_estimated.empty())
                ++refused; // vanilla GPT: a bare GPTModelProvider, the architecture left to the overrides
            else
                failures << QString::fromStdString(e.name + ": no estimate (" + m.not_estimated + ")");
        } catch (const RecipeError& err) {
            ++refused;
            // Only an architecture the table could not resolve is a reason, and the message names its model,
            // or the reason Bridge's own function gave for not building one.
            const std::string what = err.what();
            if (e.provider.empty() && !e.hf_model.empty() && what.find(e.hf_model) != std::string::npos)
                continue;
            if (e.provider.empty() && what.find("did not build a configuration") != std::string::npos)
                continue;
            failures << QString::fromStdString(e.name + ": " + what);
        }
    }
    qInfo("%d text recipes: %d estimated by name, %d refused for an architecture the table lacks", text,
        estimated, refused);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.mid(0, 10).join(u'\n')));
    QVERIFY(text >= 580); // Bridge 067f987d's text-LLM recipe functions
}

// The guide's Moonlight study ran moonlight_16b_pretrain_8gpu_h100_bf16_config on 8 H100 with TP 2, EP 8:
// DP 4 from the world size, the recipe's bf16 precision-aware optimizer (bf16 moments, main parameters as
// remainders), a bf16 gradient buffer (its own MixedPrecisionConfig: grad_reduce_in_fp32 False).
void TestBridgeRecipes::moonlightIsTheGuidesJob()
{
    const BridgeJob job = bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config");
    const Recipe& r = job.recipe;
    QCOMPARE(job.world_size, 8);
    QCOMPARE(r.tensor_model_parallel_size, 2);
    QCOMPARE(r.expert_model_parallel_size, 8);
    QCOMPARE(r.data_parallel_size, 4);
    QVERIFY(r.sequence_parallel);
    QCOMPARE(r.num_layers, 27);
    QCOMPARE(r.hidden_size, 2048);
    QVERIFY(r.multi_latent_attention);
    QCOMPARE(r.num_moe_experts.value_or(0), 64);
    QCOMPARE(r.moe_router_topk, 6);
    QVERIFY(r.bf16);
    QVERIFY(!r.grad_reduce_in_fp32);
    QVERIFY(r.use_distributed_optimizer);
    QVERIFY(r.use_precision_aware_optimizer);
    QCOMPARE(r.exp_avg_dtype, std::string("bf16"));
    QCOMPARE(r.exp_avg_sq_dtype, std::string("bf16"));
    QCOMPARE(r.main_grads_dtype, std::string("bf16"));
    QVERIFY(r.store_param_remainders);
    QCOMPARE(r.seq_length, 4096);
    QCOMPARE(r.name, std::string("moonlight_16b_pretrain_8gpu_h100_bf16_config"));
    QVERIFY(!validate(r, InputFormat::BridgeOverrides).hasErrors());
    // The estimate reads the precision-aware optimizer: 2 bytes of master weight and 2 + 2 of moments per
    // element of the rank's shard, where plain Adam keeps 4 and 8.
    const MemoryEstimate aware = estimateMemory(validate(r, InputFormat::BridgeOverrides).resolved);
    Recipe plain = r;
    plain.use_precision_aware_optimizer = false;
    const MemoryEstimate fp32 = estimateMemory(validate(plain, InputFormat::BridgeOverrides).resolved);
    const PhaseEstimate& a = aware.ranks[size_t(aware.hottest)].peak();
    const PhaseEstimate& p = fp32.ranks[size_t(fp32.hottest)].peak();
    QCOMPARE(a.category("optimizer_states") * 2, p.category("optimizer_states"));
    QCOMPARE(a.category("main_parameters") * 2, p.category("main_parameters"));
}

void TestBridgeRecipes::overridesAndWorldSizeApplyOnTop()
{
    const BridgeJob job = bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config", 16,
        { "train.global_batch_size=4", "model.recompute_modules=[moe_act]" });
    QCOMPARE(job.recipe.data_parallel_size, 8);
    QCOMPARE(job.recipe.global_batch_size.value_or(0), 4);
    QCOMPARE(job.recipe.recompute_modules.value_or(std::vector<std::string> {}),
        std::vector<std::string> { "moe_act" });
    // A Bridge mixed-precision preset by name overrides the recipe's own (setup() copies it over).
    const BridgeJob fp16 = bridgeJob(
        "moonlight_16b_pretrain_8gpu_h100_bf16_config", std::nullopt, { "mixed_precision=fp16_mixed" });
    const Recipe resolved = validate(fp16.recipe, InputFormat::BridgeOverrides).resolved;
    QVERIFY(resolved.fp16 && !resolved.bf16);
}

void TestBridgeRecipes::refusals_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("gpus"); // 0: the name's
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("says");
    QTest::newRow("a typo") << u"moonlight_16b_pretrain_8gpu_h100_bf16_confg"_s << 0 << u"recipe"_s
                            << u"did you mean moonlight_16b_pretrain_8gpu_h100_bf16_config"_s;
    QTest::newRow("a world the layout does not divide")
        << u"moonlight_16b_pretrain_8gpu_h100_bf16_config"_s << 3 << u"gpus"_s << u"TP x PP x CP = 2"_s;
    QString vision;
    for (const BridgeRecipeEntry& e : bridgeRecipes())
        if (e.kind == "vision" && vision.isEmpty())
            vision = QString::fromStdString(e.name);
    QTest::newRow("a vision recipe") << vision << 0 << u"recipe"_s << u"text LLMs"_s;
}

void TestBridgeRecipes::refusals()
{
    QFETCH(QString, name);
    QFETCH(int, gpus);
    QFETCH(QString, field);
    QFETCH(QString, says);
    try {
        bridgeJob(name.toStdString(), gpus ? std::optional<int>(gpus) : std::nullopt);
        QFAIL("taken");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), field);
        QVERIFY2(QString::fromUtf8(e.what()).contains(says), e.what());
    }
}

QTEST_GUILESS_MAIN(TestBridgeRecipes)
#include "tst_bridge_recipes.moc"
