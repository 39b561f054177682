// SPDX-License-Identifier: Apache-2.0
// The estimator (core/estimator.h, Layout::Worker) against the worker's own CPU allocator peaks: every
// preset of resources/presets shrunk to small shapes (the worker's one-rank layout: TP = EP = 1), for [] and
// every recompute choice the preset's model can take, run through the real step loop (engine::runRecipe,
// the code recompute-bench runs) with the CPU memory probe. The overall peak must be within 5 % of the
// estimate; every phase's figures are printed beside it (docs/estimator.md lists the known gaps).
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include <QtTest>

#include <torch/torch.h>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "engine/runner.h"

using namespace rs;

namespace {

constexpr double kTolerance = 0.05;

Recipe readPreset(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return recipeFromJsonText(f.readAll().toStdString(), path.toStdString());
}

// Small shapes with the preset's architecture (norm, activation, GQA, MLA, MoE with its first dense layer,
// attention backend, dtype), on one rank.
Recipe shrink(Recipe r)
{
    r.hidden_size = 64;
    r.num_attention_heads = 4;
    r.seq_length = 128;
    r.micro_batch_size = 2;
    r.vocab_size = 512;
    r.tensor_model_parallel_size = 1;
    r.expert_model_parallel_size = 1;
    r.context_parallel_size = 1;
    r.pipeline_model_parallel_size = 1;
    r.virtual_pipeline_model_parallel_size.reset();
    r.sequence_parallel = false;
    r.global_batch_size.reset();
    r.transformer_impl = "local";
    r.warmup_iters = 1;
    r.train_iters = 2;
    if (r.num_moe_experts) {
        r.num_layers = 3;
        r.ffn_hidden_size = 192;
        r.moe_layer_freq = { 0, 1, 1 };
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 48;
        if (r.moe_shared_expert_intermediate_size)
            r.moe_shared_expert_intermediate_size = 64;
        r.kv_lora_rank = 32;
        r.qk_head_dim = 16;
        r.qk_pos_emb_head_dim = 8;
        r.v_head_dim = 16;
        if (r.q_lora_rank)
            r.q_lora_rank = 48;
    } else {
        r.num_layers = 2;
        r.ffn_hidden_size = r.gated_linear_unit ? 160 : 256;
        if (r.num_query_groups)
            r.num_query_groups = 2;
        if (r.multi_latent_attention) {
            r.kv_lora_rank = 32;
            r.qk_head_dim = 16;
            r.qk_pos_emb_head_dim = 8;
            r.v_head_dim = 16;
        }
    }
    return r;
}

struct Measured {
    int64_t peak = 0;
    std::map<std::string, int64_t> phases;
    std::string error;
    std::vector<std::string> attributions; // peak_attribution events, for RS_DEBUG_TERMS
};

Measured runWorker(const Recipe& r)
{
    engine::RunOptions options;
    options.device = "cpu";
    options.warmup = 1;
    options.iters = 1;
    std::ostringstream out;
    const int code = engine::runRecipe(r, InputFormat::Json, options, out);
    Measured m;
    std::istringstream lines(out.str());
    std::string line;
    while (std::getline(lines, line)) {
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object())
            continue;
        if (j.value("event", "") == "rank_summary") {
            m.peak = j.value("peak_allocated", int64_t(0));
            for (const auto& [phase, p] : j["phase_peaks"].items())
                m.phases[phase] = p.value("allocated", int64_t(0));
        }
        // RS_DEBUG_TERMS=1: what holds each of the worker's phase peaks (its CPU attribution).
        if (j.value("event", "") == "peak_attribution" && qEnvironmentVariableIsSet("RS_DEBUG_TERMS"))
            qInfo("  worker %s %s", j.value("phase", "").c_str(), line.c_str());
        if (j.value("event", "") == "peak_attribution")
            m.attributions.push_back(line);
        if (j.value("event", "") == "result" && j.value("status", "") != "pass")
            m.error = j.value("message", "");
    }
    if (code != 0 && m.error.empty())
        m.error = "exit " + std::to_string(code);
    return m;
}

double err(int64_t estimate, int64_t measured)
{
    return (static_cast<double>(estimate) - static_cast<double>(measured)) / static_cast<double>(measured);
}

} // namespace

class TestEngineEstimate : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void presetWithinFivePercent_data();
    void presetWithinFivePercent();
    void layoutRankWithinFivePercent_data();
    void layoutRankWithinFivePercent();
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
    const Recipe r = validate(candidateRecipe(small, *readChoiceSpelling(choice.toStdString()))).resolved;
    const Measured m = runWorker(r);
    QVERIFY2(m.error.empty(), m.error.c_str());
    const MemoryEstimate e = estimateMemory(r, Layout::Worker);
    const RankEstimate& rank = e.ranks.front();
    QString detail = QStringLiteral("peak: estimate %1, measured %2 (%3%)")
                         .arg(e.peak_bytes)
                         .arg(m.peak)
                         .arg(100 * err(e.peak_bytes, m.peak), 0, 'f', 1);
    for (const char* phase : { "forward", "backward", "optimizer" }) {
        const auto it = m.phases.find(phase);
        if (it == m.phases.end())
            continue;
        const int64_t est = rank.phase(phase)->peak_bytes;
        detail += QStringLiteral("; %1: %2 vs %3 (%4%)")
                      .arg(QLatin1String(phase))
                      .arg(est)
                      .arg(it->second)
                      .arg(100 * err(est, it->second), 0, 'f', 1);
    }
    qInfo("%s %s: %s", qPrintable(QFileInfo(preset).fileName()), qPrintable(choice), qPrintable(detail));
    // RS_DEBUG_TERMS=1: every term of every phase of the estimate, to see which one makes a miss.
    if (qEnvironmentVariableIsSet("RS_DEBUG_TERMS"))
        for (const auto& ph : rank.phases)
            for (const auto& t : ph.terms)
                qInfo("  %s %s %s %lld", ph.phase.c_str(), t.category.c_str(), t.name.c_str(),
                    (long long)t.bytes);
    QVERIFY2(std::abs(err(e.peak_bytes, m.peak)) <= kTolerance, qPrintable(detail));
}

// One rank of a parallel layout (issue 14): the worker runs the rank's shapes (engine/layout_rank.h); the
// estimate is the Worker layout's. Rows: every preset at TP 2 (SP) / 4 / 8 (SP), CP 2, EP 8 (MoE), PP 2 and
// PP 4 with VPP 2, DP 4 with the distributed optimizer (and EP 8 with it: experts over expert-DP 1), for []
// and full recompute.
void TestEngineEstimate::layoutRankWithinFivePercent_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("choice");
    QTest::addColumn<QString>("layout");
    const QDir dir(QStringLiteral(RS_SOURCE_DIR "/resources/presets"));
    const auto files = dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    for (const auto& file : files) {
        const bool moe = file.startsWith(QLatin1String("moonlight"));
        for (const char* layout :
            { "tp2sp", "tp4", "tp8sp", "cp2", "ep8", "pp2", "pp4vpp2", "dp4do", "ep8do" }) {
            if (QLatin1String(layout).startsWith(QLatin1String("ep8")) && !moe)
                continue;
            for (const QString& choice : { QStringLiteral("[]"), QStringLiteral("full:uniform:1") })
                QTest::newRow(qPrintable(file + u' ' + QLatin1String(layout) + u' ' + choice))
                    << dir.filePath(file) << choice << QString::fromLatin1(layout);
        }
    }
}

void TestEngineEstimate::layoutRankWithinFivePercent()
{
    QFETCH(QString, preset);
    QFETCH(QString, choice);
    QFETCH(QString, layout);
    Recipe small = shrink(readPreset(preset));
    small.hidden_size = 64;
    small.num_attention_heads = 8;
    if (small.num_query_groups)
        small.num_query_groups = 8;
    small.num_layers = 8;
    if (small.num_moe_experts) {
        small.moe_layer_freq = { 0, 1, 1, 1, 1, 1, 1, 1 };
        small.num_moe_experts = 8;
    }
    small.data_parallel_size = 2;
    if (layout.startsWith(QLatin1String("tp"))) {
        small.tensor_model_parallel_size = layout.mid(2, 1).toInt();
        small.sequence_parallel = layout.endsWith(QLatin1String("sp"));
    } else if (layout == QLatin1String("cp2")) {
        small.context_parallel_size = 2;
    } else if (layout.startsWith(QLatin1String("ep8"))) {
        small.expert_model_parallel_size = 8;
        small.data_parallel_size = 8;
        // ep8do: the distributed optimizer shards dense parameters over DP 8, the experts over expert-DP 1.
        small.use_distributed_optimizer = layout.endsWith(QLatin1String("do"));
    } else if (layout == QLatin1String("dp4do")) {
        small.data_parallel_size = 4;
        small.use_distributed_optimizer = true;
    } else if (layout == QLatin1String("pp2")) {
        small.pipeline_model_parallel_size = 2;
        small.global_batch_size = 8;
    } else if (layout == QLatin1String("pp4vpp2")) {
        small.pipeline_model_parallel_size = 4;
        small.virtual_pipeline_model_parallel_size = 2;
        small.global_batch_size = 8;
    }
    const Recipe r = validate(candidateRecipe(small, *readChoiceSpelling(choice.toStdString()))).resolved;
    const Measured m = runWorker(r);
    QVERIFY2(m.error.empty(), m.error.c_str());
    const MemoryEstimate e = estimateMemory(r, Layout::Worker);
    const double error = err(e.peak_bytes, m.peak);
    const QString detail = QStringLiteral("%1 %2 %3: estimate %4, measured %5 (%6%)")
                               .arg(QFileInfo(preset).fileName(), layout, choice)
                               .arg(e.peak_bytes)
                               .arg(m.peak)
                               .arg(100 * error, 0, 'f', 1);
    qInfo("%s", qPrintable(detail));
    if (qEnvironmentVariableIsSet("RS_DEBUG_TERMS")) {
        const RankEstimate& rank = e.ranks[static_cast<size_t>(e.hottest)];
        for (const auto& [phase, bytes] : m.phases)
            qInfo("  measured %s %lld", phase.c_str(), (long long)bytes);
        for (const auto& ph : rank.phases)
            for (const auto& t : ph.terms)
                qInfo("  %s %s %s %lld", ph.phase.c_str(), t.category.c_str(), t.name.c_str(),
                    (long long)t.bytes);
        for (const auto& a : m.attributions)
            qInfo("  %s", a.c_str());
    }
    // The Worker layout of core/estimator.cpp models the rank the worker runs (its TP / SP / CP / EP shares,
    // its pipeline stage and schedule): every row within the tolerance.
    QVERIFY2(std::abs(error) <= kTolerance, qPrintable(detail));
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
