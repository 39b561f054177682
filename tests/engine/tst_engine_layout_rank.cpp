// SPDX-License-Identifier: Apache-2.0
// One rank of a parallel layout (engine/layout_rank.h, issue 14): the rank's parameters are the ones the
// estimator's Megatron layout counts for its stage (TP / EP / expert-TP / PP splits, the vocabulary split,
// the last stage's copy of a tied embedding), its pipeline schedule keeps the micro-batches the estimator
// says are in flight, the TP / SP / CP / EP ranks train (finite loss, every parameter a gradient), the
// grouped-GEMM experts give the per-expert loop's loss and gradients, and the steady-time spread.
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include <QtTest>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "engine/layout_rank.h"
#include "engine/runner.h"
#include "engine/timing.h"
#include "engine_test_util.h"

using namespace rs;
using namespace rs::enginetest;

namespace {

Recipe readPreset(const QString& name)
{
    QFile f(QStringLiteral(RS_SOURCE_DIR "/resources/presets/") + name);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return recipeFromJsonText(f.readAll().toStdString(), name.toStdString());
}

// The preset's architecture at small sizes that every layout below divides.
Recipe small(Recipe r)
{
    r.hidden_size = 64;
    r.num_attention_heads = 8;
    r.seq_length = 64;
    r.micro_batch_size = 1;
    r.vocab_size = 500;
    r.transformer_impl = "local";
    r.num_layers = 8;
    r.ffn_hidden_size = 128;
    if (r.num_query_groups)
        r.num_query_groups = 8;
    if (r.num_moe_experts) {
        // Moonlight has no linear biases (the preset leaves add_bias_linear at Megatron's default, true): the
        // estimator counts grouped experts' biases that the worker's GroupedMLP does not build.
        r.add_bias_linear = false;
        r.moe_layer_freq = { 0, 1, 1, 1, 1, 1, 1, 1 };
        r.num_moe_experts = 8;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 32;
        if (r.moe_shared_expert_intermediate_size)
            r.moe_shared_expert_intermediate_size = 64;
    }
    if (r.multi_latent_attention) {
        r.kv_lora_rank = 32;
        r.qk_head_dim = 8;
        r.qk_pos_emb_head_dim = 8;
        r.v_head_dim = 8;
        if (r.q_lora_rank)
            r.q_lora_rank = 48;
    }
    r.global_batch_size.reset();
    r.warmup_iters = 1;
    r.train_iters = 2;
    return r;
}

Recipe withLayout(Recipe r, int tp, int cp, int ep, int pp, int vpp, int dp, bool sp)
{
    r.tensor_model_parallel_size = tp;
    r.context_parallel_size = cp;
    r.expert_model_parallel_size = r.num_moe_experts ? ep : 1;
    r.pipeline_model_parallel_size = pp;
    if (vpp > 1)
        r.virtual_pipeline_model_parallel_size = vpp;
    else
        r.virtual_pipeline_model_parallel_size.reset();
    r.data_parallel_size = dp;
    r.sequence_parallel = sp && tp > 1;
    return r;
}

void layoutRows()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("cp");
    QTest::addColumn<int>("ep");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<bool>("sp");
    struct L {
        int tp, cp, ep, pp, vpp;
        bool sp;
    };
    const L layouts[] = { { 1, 1, 1, 1, 1, false }, { 2, 1, 1, 1, 1, true }, { 4, 1, 1, 1, 1, false },
        { 8, 1, 1, 1, 1, true }, { 1, 2, 1, 1, 1, false }, { 2, 2, 8, 1, 1, true }, { 1, 1, 8, 1, 1, false },
        { 1, 1, 1, 2, 1, false }, { 1, 1, 1, 4, 1, false }, { 2, 1, 1, 2, 2, true },
        { 1, 1, 8, 4, 2, false } };
    for (const char* preset : { "dense-gqa-swiglu.json", "gpt-unfused.json", "moonlight-mla-moe.json" }) {
        for (const auto& l : layouts) {
            const bool moe = QString::fromLatin1(preset).startsWith(QLatin1String("moonlight"));
            if (l.ep > 1 && !moe)
                continue;
            // MoE layers under TP need sequence parallelism (RT16: Megatron raises at the first forward).
            const bool sp = l.sp || (moe && l.tp > 1);
            QTest::newRow(qPrintable(QStringLiteral("%1 tp%2%3 cp%4 ep%5 pp%6 vpp%7")
                                         .arg(QLatin1String(preset))
                                         .arg(l.tp)
                                         .arg(sp ? QStringLiteral("sp") : QString())
                                         .arg(l.cp)
                                         .arg(l.ep)
                                         .arg(l.pp)
                                         .arg(l.vpp)))
                << QString::fromLatin1(preset) << l.tp << l.cp << l.ep << l.pp << l.vpp << sp;
        }
    }
}

} // namespace

class TestEngineLayoutRank : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void parametersAreTheEstimatorsPerStage_data() { layoutRows(); }
    void parametersAreTheEstimatorsPerStage();
    void scheduleKeepsTheEstimatorsInFlight_data();
    void scheduleKeepsTheEstimatorsInFlight();
    void rankTrains_data() { layoutRows(); }
    void rankTrains();
    void sentOutputsFreedWhenDeallocated_data();
    void sentOutputsFreedWhenDeallocated();
    void groupedGemmMatchesSequential_data();
    void groupedGemmMatchesSequential();
    void hottestRankByDefault();
    void rankOutsideTheLayoutRefused();
    void steadySpread();
};

void TestEngineLayoutRank::parametersAreTheEstimatorsPerStage()
{
    QFETCH(QString, preset);
    QFETCH(int, tp);
    QFETCH(int, cp);
    QFETCH(int, ep);
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(bool, sp);
    const int dp = 8;
    const Recipe r = validate(withLayout(small(readPreset(preset)), tp, cp, ep, pp, vpp, dp, sp)).resolved;
    const MemoryEstimate e = estimateMemory(r, Layout::Megatron);
    const double pd = r.bf16 || r.fp16 ? 2 : 4;
    for (int stage = 0; stage < pp; ++stage) {
        const int rank = stage * tp * cp * dp;
        const auto config = engine::modelConfig(r, rank);
        QCOMPARE(config.layout.stage, stage);
        engine::Model model(config, engine::recomputePlan(r, config), torch::Device(torch::kCPU), 1);
        int64_t elements = 0;
        for (const auto& [name, p] : model.parameters())
            elements += p.numel();
        const auto& est = e.ranks[static_cast<size_t>(stage)];
        const int64_t expected = est.phases.front().category("parameters");
        QVERIFY2(std::abs(double(elements) * pd - double(expected)) < 1,
            qPrintable(QStringLiteral("stage %1: worker %2 parameter bytes, estimator %3")
                           .arg(stage)
                           .arg(double(elements) * pd, 0, 'f', 0)
                           .arg(expected)));
        QCOMPARE(config.layout.in_flight, est.in_flight_micro_batches);
    }
}

void TestEngineLayoutRank::scheduleKeepsTheEstimatorsInFlight_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("stage");
    QTest::addColumn<int>("micro_batches");
    QTest::addColumn<int>("expected");
    // 1F1B: min(PP - stage, m); interleaved: min((PP - stage - 1) x 2 + (vpp - 1) x PP + 1, m x vpp).
    QTest::newRow("pp1") << 1 << 1 << 0 << 4 << 1;
    QTest::newRow("1f1b pp4 stage0 m8") << 4 << 1 << 0 << 8 << 4;
    QTest::newRow("1f1b pp4 stage3 m8") << 4 << 1 << 3 << 8 << 1;
    QTest::newRow("1f1b pp4 stage1 m2") << 4 << 1 << 1 << 2 << 2;
    QTest::newRow("vpp2 pp2 stage0 m4") << 2 << 2 << 0 << 4 << 5;
    QTest::newRow("vpp2 pp2 stage1 m4") << 2 << 2 << 1 << 4 << 3;
    QTest::newRow("vpp5 pp4 stage0 m16") << 4 << 5 << 0 << 16 << 23;
    QTest::newRow("vpp2 pp4 stage0 m2") << 4 << 2 << 0 << 2 << 4;
}

void TestEngineLayoutRank::scheduleKeepsTheEstimatorsInFlight()
{
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, stage);
    QFETCH(int, micro_batches);
    QFETCH(int, expected);
    const auto schedule = engine::pipelineSchedule(pp, vpp, stage, micro_batches);
    QCOMPARE(engine::maxInFlight(schedule), expected);
    // Every chunk-micro-batch runs forward once, then backward once, never before its forward.
    std::map<std::pair<int, int>, int> state;
    for (const auto& op : schedule) {
        auto& s = state[{ op.micro_batch, op.chunk }];
        QCOMPARE(s, op.forward ? 0 : 1);
        s = op.forward ? 1 : 2;
    }
    QCOMPARE(int(state.size()), micro_batches * vpp);
    // The estimator's count for the same stage.
    Recipe r = small(readPreset(QStringLiteral("gpt-unfused.json")));
    r.num_layers = pp * vpp * 2;
    r = withLayout(r, 1, 1, 1, pp, vpp, 1, false);
    r.global_batch_size = micro_batches;
    const MemoryEstimate e = estimateMemory(validate(r).resolved, Layout::Megatron);
    QCOMPARE(e.ranks[static_cast<size_t>(stage)].in_flight_micro_batches, expected);
}

void TestEngineLayoutRank::rankTrains()
{
    QFETCH(QString, preset);
    QFETCH(int, tp);
    QFETCH(int, cp);
    QFETCH(int, ep);
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(bool, sp);
    Recipe r = withLayout(small(readPreset(preset)), tp, cp, ep, pp, vpp, 2, sp);
    r.bf16 = r.fp16 = false;
    r.global_batch_size = 2 * pp; // pp micro-batches per step on each DP rank
    engine::RunOptions options;
    options.device = "cpu";
    options.warmup = 0;
    options.iters = 1;
    int code = -1;
    std::string status, message, note;
    for (const auto& j : runStream(r, options, &code)) {
        if (j.value("event", "") == "result") {
            status = j.value("status", "");
            message = j.value("message", "");
        }
        if (j.value("event", "") == "note" && j.value("kind", "") == "layout_rank")
            note = j.value("message", "");
    }
    QVERIFY2(code == 0 && status == "pass", (status + ": " + message).c_str());
    if (tp * cp * pp * 2 > 1)
        QVERIFY2(note.find("communication time is not measured") != std::string::npos, note.c_str());
}

// deallocate_pipeline_outputs (Megatron-LM's and Bridge's setting): a stage frees each chunk output once sent
// and runs its backward from the output's autograd node (schedules.py deallocate_output_tensor,
// custom_backward). The first stage's forward peak drops by the sent outputs it held, [s, b, h] each, one per
// in-flight chunk-micro-batch but the current one; the gradients are the same (so is the second step's loss).
void TestEngineLayoutRank::sentOutputsFreedWhenDeallocated_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("micro_batches");
    QTest::addColumn<QString>("choice");
    QTest::newRow("1f1b pp4 m4 []") << 4 << 1 << 4 << QStringLiteral("[]");
    QTest::newRow("1f1b pp4 m4 full") << 4 << 1 << 4 << QStringLiteral("full:uniform:1");
    QTest::newRow("vpp2 pp2 m4 []") << 2 << 2 << 4 << QStringLiteral("[]");
}

void TestEngineLayoutRank::sentOutputsFreedWhenDeallocated()
{
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, micro_batches);
    QFETCH(QString, choice);
    Recipe r = withLayout(small(readPreset(QStringLiteral("gpt-unfused.json"))), 1, 1, 1, pp, vpp, 1, false);
    r.bf16 = r.fp16 = false;
    r.global_batch_size = micro_batches;
    r = candidateRecipe(r, *readChoiceSpelling(choice.toStdString()));
    struct Run {
        int64_t forward_peak = 0;
        double loss = NAN;
        int in_flight = 0;
    };
    auto run = [](const Recipe& recipe) {
        engine::RunOptions options;
        options.device = "cpu";
        options.warmup = 0;
        options.iters = 2; // the second step's loss follows from the first step's gradients
        Run result;
        int code = -1;
        const auto lines = runStream(recipe, options, &code);
        if (code != 0)
            return result;
        for (const auto& j : lines) {
            if (j.value("event", "") == "rank_summary")
                result.forward_peak = j["phase_peaks"]["forward"].value("allocated", int64_t(0));
            if (j.value("event", "") == "iteration" && j.contains("loss") && j["loss"].is_number())
                result.loss = j["loss"].get<double>();
            if (j.value("event", "") == "note" && j.value("kind", "") == "layout_rank")
                result.in_flight = j.value("in_flight_micro_batches", 0);
        }
        return result;
    };
    const Run kept = run(r);
    r.deallocate_pipeline_outputs = true;
    const Run freed = run(r);
    QVERIFY(kept.forward_peak > 0 && freed.forward_peak > 0);
    QVERIFY(kept.in_flight > 1);
    QCOMPARE(freed.in_flight, kept.in_flight);
    const int64_t boundary = int64_t(r.seq_length) * r.micro_batch_size * r.hidden_size * 4; // fp32
    const int64_t dropped = kept.forward_peak - freed.forward_peak;
    // Each freed output leaves a one-element tensor behind (its allocation rounded up).
    const int64_t placeholders = kept.in_flight * 64;
    QVERIFY2(
        dropped >= (kept.in_flight - 1) * boundary - placeholders && dropped <= kept.in_flight * boundary,
        qPrintable(QStringLiteral("forward peak %1 -> %2: %3 bytes freed, %4 in flight of %5 bytes")
                       .arg(kept.forward_peak)
                       .arg(freed.forward_peak)
                       .arg(dropped)
                       .arg(kept.in_flight)
                       .arg(boundary)));
    QVERIFY(std::isfinite(kept.loss));
    QCOMPARE(freed.loss, kept.loss);
}

void TestEngineLayoutRank::groupedGemmMatchesSequential_data()
{
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("ep");
    QTest::addColumn<bool>("sp");
    QTest::addColumn<QString>("label");
    QTest::newRow("ep1 []") << 1 << 1 << false << QString();
    QTest::newRow("ep1 moe_act") << 1 << 1 << false << QStringLiteral("moe_act");
    QTest::newRow("tp2 sp ep2 []") << 2 << 2 << true << QString();
    QTest::newRow("tp2 sp ep2 moe") << 2 << 2 << true << QStringLiteral("moe");
}

void TestEngineLayoutRank::groupedGemmMatchesSequential()
{
    QFETCH(int, tp);
    QFETCH(int, ep);
    QFETCH(bool, sp);
    QFETCH(QString, label);
    Recipe r = tinyRecipe(Arch::MlaMoe);
    r.attention_dropout = r.hidden_dropout = 0;
    r.add_bias_linear = false;
    r.tensor_model_parallel_size = tp;
    r.expert_model_parallel_size = ep;
    r.sequence_parallel = sp;
    r.data_parallel_size = ep;
    if (!label.isEmpty())
        r = selective(r, { label.toStdString() });
    Recipe seq = r;
    seq.moe_grouped_gemm = false;
    r.moe_grouped_gemm = true;
    const auto grouped = runStep(r);
    const auto sequential = runStep(seq);
    QVERIFY(std::isfinite(grouped.loss));
    QVERIFY2(std::abs(grouped.loss - sequential.loss) < 1e-5,
        qPrintable(QStringLiteral("%1 vs %2").arg(grouped.loss).arg(sequential.loss)));
    int compared = 0;
    for (const auto& [name, g] : grouped.grads) {
        const auto key = name.find(".mlp.experts.linear_fc") != std::string::npos ? std::string() : name;
        if (key.empty()) {
            // [E, out, in]: expert e's slice is SequentialMLP's weight<e>.
            for (int64_t e = 0; e < g.size(0); ++e) {
                const auto& s = sequential.grads.at(name + std::to_string(e));
                QVERIFY2(torch::allclose(g[e], s, 1e-4, 1e-6), (name + std::to_string(e)).c_str());
                ++compared;
            }
            continue;
        }
        const auto& s = sequential.grads.at(name);
        QVERIFY2(g.defined() && s.defined(), name.c_str());
        QVERIFY2(torch::allclose(g, s, 1e-4, 1e-6), name.c_str());
        ++compared;
    }
    QVERIFY(compared > 10);
}

void TestEngineLayoutRank::hottestRankByDefault()
{
    // The estimator names the hottest stage; the worker runs that stage's first rank.
    Recipe r = withLayout(small(readPreset(QStringLiteral("dense-gqa-swiglu.json"))), 2, 1, 1, 4, 1, 2, true);
    r.global_batch_size = 16;
    r = validate(r).resolved;
    const MemoryEstimate e = estimateMemory(r, Layout::Megatron);
    const auto config = engine::modelConfig(r);
    QCOMPARE(config.layout.stage, e.ranks[static_cast<size_t>(e.hottest)].stage);
    QCOMPARE(config.layout.rank, config.layout.stage * 2 * 2);
    QCOMPARE(
        QString::fromStdString(config.layout.chosen_by), QStringLiteral("hottest rank by the estimator"));
    const auto other = engine::modelConfig(r, 13); // tp rank 1, dp rank 0, stage 3
    QCOMPARE(other.layout.stage, 3);
    QCOMPARE(other.layout.tp_rank, 1);
    QCOMPARE(other.layout.dp_rank, 0);
    QVERIFY(!other.has_embedding && other.has_head);
}

void TestEngineLayoutRank::rankOutsideTheLayoutRefused()
{
    Recipe r = withLayout(small(readPreset(QStringLiteral("gpt-unfused.json"))), 2, 1, 1, 1, 1, 2, false);
    engine::RunOptions options;
    options.device = "cpu";
    options.rank_of_layout = 4;
    std::ostringstream out;
    QCOMPARE(engine::runRecipe(r, InputFormat::Json, options, out), int(engine::kError));
    QVERIFY2(out.str().find("\"field\":\"rank_of_layout\"") != std::string::npos, out.str().c_str());
}

void TestEngineLayoutRank::steadySpread()
{
    // 20 iterations 1..20: median 10.5; 2.5th / 97.5th percentiles by linear interpolation 1.475 / 19.525;
    // the median's distribution-free 95 % interval is [x(6), x(15)] (coverage 0.9586).
    std::vector<double> v;
    for (int i = 20; i >= 1; --i)
        v.push_back(i);
    const auto s = engine::stepTimeSpread(v);
    QCOMPARE(s.n, 20);
    QCOMPARE(s.median, 10.5);
    QVERIFY(std::abs(s.p2_5 - 1.475) < 1e-9);
    QVERIFY(std::abs(s.p97_5 - 19.525) < 1e-9);
    QCOMPARE(s.median_lo, 6.0);
    QCOMPARE(s.median_hi, 15.0);
    const auto few = engine::stepTimeSpread({ 3, 1, 2 });
    QCOMPARE(few.median, 2.0);
    QCOMPARE(few.median_lo, 1.0);
    QCOMPARE(few.median_hi, 3.0);
}

QTEST_GUILESS_MAIN(TestEngineLayoutRank)
#include "tst_engine_layout_rank.moc"
