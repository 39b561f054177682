// SPDX-License-Identifier: Apache-2.0
// `recompute estimate` as a user runs it: the table (hottest stage first), --json's shape (top-level
// peak_allocated_bytes = the hottest stage's peak for the recipe's own choice, ranks, choices), every input
// form, the layouts, and the exit codes.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "../cli_process.h"

using namespace Qt::StringLiterals;

namespace {

rs::test::CliRun estimate(const QStringList& args)
{
    return rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE_EXE), QStringList { u"estimate"_s } + args, 30000);
}

const QString kMoonlight = QStringLiteral(RS_SOURCE_DIR "/resources/presets/moonlight-mla-moe.json");

} // namespace

class TestCliEstimate : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void jsonHasPeakRanksAndChoices();
    void tableListsHottestStageFirst();
    void inputForms_data();
    void inputForms();
    void badArguments_data();
    void badArguments();
    void bridgeRecipeByName();
    void localCudaGraphsPool();
    void refusedChoicesNameTheRule();
};

void TestCliEstimate::jsonHasPeakRanksAndChoices()
{
    const auto run = estimate({ kMoonlight, u"--json"_s, u"--all-choices"_s });
    QCOMPARE(run.code, 0);
    const auto j = QJsonDocument::fromJson(run.out.toUtf8()).object();
    QCOMPARE(j.value("choice"_L1).toString(), u"moe_act"_s);
    const double peak = j.value("peak_allocated_bytes"_L1).toDouble();
    QVERIFY(peak > 1e9);
    const auto ranks = j.value("ranks"_L1).toArray();
    QCOMPARE(ranks.size(), 1);
    QCOMPARE(ranks[0].toObject().value("peak_bytes"_L1).toDouble(), peak);
    const QString phase = ranks[0].toObject().value("phase"_L1).toString();
    QVERIFY(!phase.isEmpty());
    // The categories are those of the peak's phase: activations in forward / backward; in the optimizer
    // step (this preset's 16-bit gradient buffer makes the step's fp32 copies the peak) none.
    const auto categories = ranks[0].toObject().value("categories"_L1).toObject();
    QVERIFY(categories.contains("optimizer_states"_L1));
    QCOMPARE(categories.contains("activations"_L1), phase == u"forward"_s || phase == u"backward"_s);
    const auto choices = j.value("choices"_L1).toArray();
    QStringList labels;
    for (const auto& c : choices)
        labels << c.toObject().value("choice"_L1).toString();
    for (const auto& l : { u"[]"_s, u"moe_act"_s, u"mla_up_proj"_s, u"full:uniform:1"_s })
        QVERIFY2(labels.contains(l), qPrintable(l));
    // The recipe's own choice among them, with the same figure; none refused (no linear biases).
    for (const auto& c : choices) {
        if (c.toObject().value("choice"_L1).toString() == "moe_act"_L1)
            QCOMPARE(c.toObject().value("peak_allocated_bytes"_L1).toDouble(), peak);
        QVERIFY(c.toObject().value("refused_by"_L1).isNull());
    }
}

// Megatron-LM's flag defaults keep linear biases: `mlp` recompute never finishes a step there (RT30), and
// the list of every choice says so beside its estimate, in the table and in JSON.
void TestCliEstimate::refusedChoicesNameTheRule()
{
    const QStringList flags { u"--all-choices"_s, u"--mlm-args"_s, u"--num-layers"_s, u"4"_s,
        u"--hidden-size"_s, u"1024"_s, u"--num-attention-heads"_s, u"16"_s, u"--seq-length"_s, u"2048"_s,
        u"--micro-batch-size"_s, u"1"_s, u"--global-batch-size"_s, u"4"_s, u"--bf16"_s,
        u"--transformer-impl"_s, u"local"_s };
    const auto table = estimate(flags);
    QCOMPARE(table.code, 0);
    const QStringList lines = table.out.split(u'\n');
    const auto mlp = std::find_if(
        lines.begin(), lines.end(), [](const QString& l) { return l.trimmed().startsWith(u"mlp "_s); });
    QVERIFY2(mlp != lines.end(), qPrintable(table.out));
    QVERIFY2(mlp->endsWith(u"refused: RT30"_s), qPrintable(*mlp));
    QCOMPARE(table.out.count(u"refused: "_s), 1);
    const auto run = estimate(QStringList { u"--json"_s } + flags);
    QCOMPARE(run.code, 0);
    for (const auto& c : QJsonDocument::fromJson(run.out.toUtf8()).object().value("choices"_L1).toArray()) {
        const QJsonObject o = c.toObject();
        QCOMPARE(o.value("refused_by"_L1).toString(),
            o.value("choice"_L1).toString() == "mlp"_L1 ? u"RT30"_s : QString());
    }
}

void TestCliEstimate::tableListsHottestStageFirst()
{
    // PP 4 with 8 micro-batches: stage 0 holds 4 micro-batches in flight and is the hottest.
    const auto run = estimate({ u"--overrides"_s, u"model.num_layers=8"_s, u"model.hidden_size=1024"_s,
        u"model.num_attention_heads=16"_s, u"model.pipeline_model_parallel_size=4"_s,
        u"train.global_batch_size=8"_s, u"model.bf16=true"_s });
    QVERIFY2(run.code == 0 || run.code == 1, qPrintable(run.err));
    const auto lines = run.out.split(u'\n');
    int first = -1;
    for (const auto& l : lines) {
        if (l.startsWith("0 "_L1) || l.startsWith("1 "_L1) || l.startsWith("2 "_L1)
            || l.startsWith("3 "_L1)) {
            first = l.left(1).toInt();
            break;
        }
    }
    QCOMPARE(first, 0);
    QVERIFY(run.out.contains("4 micro-batch(es) in flight"_L1));
    QVERIFY(run.out.contains("assumes: "_L1));
}

void TestCliEstimate::inputForms_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::newRow("file") << QStringList { kMoonlight };
    QTest::newRow("worker layout") << QStringList { kMoonlight, u"--layout"_s, u"worker"_s };
    QTest::newRow("megatron-lm flags") << QStringList { u"--mlm-args"_s, u"--num-layers"_s, u"4"_s,
        u"--hidden-size"_s, u"512"_s, u"--num-attention-heads"_s, u"8"_s, u"--seq-length"_s, u"1024"_s,
        u"--max-position-embeddings"_s, u"1024"_s, u"--micro-batch-size"_s, u"1"_s, u"--bf16"_s };
}

void TestCliEstimate::inputForms()
{
    QFETCH(QStringList, args);
    const auto run = estimate(args << u"--json"_s);
    QVERIFY2(run.code == 0 || run.code == 1, qPrintable(run.err));
    const auto j = QJsonDocument::fromJson(run.out.toUtf8()).object();
    QVERIFY(j.value("peak_allocated_bytes"_L1).toDouble() > 0);
}

void TestCliEstimate::badArguments_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::newRow("no recipe") << QStringList {};
    QTest::newRow("unknown layout") << QStringList { kMoonlight, u"--layout"_s, u"tpu"_s };
    QTest::newRow("missing file") << QStringList { u"/nonexistent/recipe.json"_s };
    QTest::newRow("a recipe Bridge does not have") << QStringList { u"--recipe"_s, u"moonlight_16b"_s };
    QTest::newRow("a world the layout does not divide") << QStringList { u"--recipe"_s,
        u"moonlight_16b_pretrain_8gpu_h100_bf16_config"_s, u"--gpus"_s, u"3"_s };
    QTest::newRow("a number of GPUs that is none") << QStringList { kMoonlight, u"--gpus"_s, u"eight"_s };
    QTest::newRow("overrides alone, no shape")
        << QStringList { u"--overrides"_s, u"model.recompute_granularity=selective"_s };
}

void TestCliEstimate::badArguments()
{
    QFETCH(QStringList, args);
    QCOMPARE(estimate(args).code, 2);
}

// The guide's Moonlight study by its Bridge recipe's name, the user's overrides on top, on 8 GPUs: the job
// Bridge's setup() runs (DP 4), said in the notes, and estimated for every choice.
void TestCliEstimate::bridgeRecipeByName()
{
    const auto run = estimate({ u"--recipe"_s, u"moonlight_16b_pretrain_8gpu_h100_bf16_config"_s,
        u"--gpus=8"_s, u"--overrides"_s, u"train.global_batch_size=4"_s,
        u"model.recompute_modules=[moe_act]"_s, u"--json"_s, u"--all-choices"_s });
    QCOMPARE(run.code, 0);
    const auto j = QJsonDocument::fromJson(run.out.toUtf8()).object();
    QCOMPARE(j.value("input"_L1).toString(), u"recipe moonlight_16b_pretrain_8gpu_h100_bf16_config"_s);
    QCOMPARE(j.value("choice"_L1).toString(), u"moe_act"_s);
    const QStringList notes = j.value("recipe_notes"_L1).toVariant().toStringList();
    QVERIFY2(!notes.isEmpty() && notes.front().contains(u"on 8 GPUs: data-parallel size 4"_s),
        qPrintable(notes.join(u'\n')));
    QVERIFY(j.value("peak_allocated_bytes"_L1).toDouble() > 1e10);
    // An unknown name is refused with the nearest names.
    const auto typo = estimate({ u"--recipe"_s, u"moonlight_16b_pretrain_8gpu_h100_bf16_confg"_s });
    QCOMPARE(typo.code, 2);
    QVERIFY2(typo.err.contains(u"did you mean moonlight_16b_pretrain_8gpu_h100_bf16_config"_s),
        qPrintable(typo.err));
}

// Local CUDA graphs (Megatron-LM flags): the table says how much of the peak is the graphs' pool and what
// Megatron's `max allocated` reads; --json gives it as max_allocated_bytes, the peak less the forward's pool.
void TestCliEstimate::localCudaGraphsPool()
{
    const QStringList flags { u"--mlm-args"_s, u"--num-layers"_s, u"4"_s, u"--hidden-size"_s, u"1024"_s,
        u"--num-attention-heads"_s, u"16"_s, u"--seq-length"_s, u"2048"_s, u"--micro-batch-size"_s, u"1"_s,
        u"--global-batch-size"_s, u"4"_s, u"--bf16"_s, u"--cuda-graph-impl"_s, u"local"_s,
        u"--te-rng-tracker"_s };
    const auto table = estimate(flags);
    QVERIFY2(table.code == 0 || table.code == 1, qPrintable(table.err));
    QVERIFY2(table.out.contains("of which local CUDA graphs' pool: "_L1), qPrintable(table.out));
    const auto run = estimate(flags + QStringList { u"--json"_s });
    QVERIFY2(run.code == 0 || run.code == 1, qPrintable(run.err));
    const auto j = QJsonDocument::fromJson(run.out.toUtf8()).object();
    const double peak = j.value("peak_allocated_bytes"_L1).toDouble();
    const double counted = j.value("max_allocated_bytes"_L1).toDouble();
    QVERIFY(counted > 0 && counted < peak);
    const auto phases = j.value("ranks"_L1).toArray()[0].toObject().value("phases"_L1).toArray();
    QVERIFY(!phases.isEmpty());
    for (const auto& p : phases)
        QVERIFY(p.toObject().value("graph_pool_bytes"_L1).toDouble() > 0);
    // Without graphs the two figures are one.
    const auto eager = QJsonDocument::fromJson(
        estimate(flags.mid(0, flags.size() - 3) + QStringList { u"--json"_s }).out.toUtf8())
                           .object();
    QCOMPARE(
        eager.value("max_allocated_bytes"_L1).toDouble(), eager.value("peak_allocated_bytes"_L1).toDouble());
}

QTEST_GUILESS_MAIN(TestCliEstimate)
#include "tst_cli_estimate.moc"
