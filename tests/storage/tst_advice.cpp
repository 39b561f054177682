// SPDX-License-Identifier: Apache-2.0
// The advice on a stored comparison is decided by step-time significance (storage/significance.h), the one
// implementation `recompute advise`, `recompute sweep` and the studio's runs page share: the advisor alone
// takes the lowest stored step time that fits; where that choice is not significantly faster than a
// narrower boundary that also fits (their steady iterations overlap), the narrower is chosen (the guide's
// tie rule); where it is significantly faster it stays chosen; runs without steady iterations keep the
// advisor's choice by their stored step time. Stores are real SQLite files written through the store's API.
#include <QTemporaryDir>
#include <QTest>

#include "core/advisor.h"
#include "storage/advice.h"
#include "storage/significance.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs;
using namespace rs::storage;

namespace {

// A worker run of one small recipe: runs of it differ only in the recompute choice, so they match.
RunRecord workerRun(const QStringList& modules, double gb, double ms)
{
    RunRecord r;
    r.source = source::Worker;
    r.createdAt = QDateTime::currentDateTimeUtc();
    r.recipeName = u"tiny"_s;
    r.model = u"Tiny GPT"_s;
    r.numLayers = 4;
    r.hiddenSize = 256;
    r.seqLength = 512;
    r.microBatchSize = 1;
    r.precision = u"bf16"_s;
    r.device = u"cpu"_s;
    r.host = u"testhost"_s;
    r.profile = u"main"_s;
    r.recomputeGranularity = u"selective"_s;
    r.recomputeModules = modules;
    r.outcome = outcome::Pass;
    r.peakAllocated = qint64(gb * 1e9);
    r.steadyStepMs = ms;
    r.worldSize = 1;
    return r;
}

// Ten steady iterations around `ms` (a warm-up one before them, which never counts).
bool storeIterations(Store& store, qint64 runId, double ms, double spread)
{
    for (int i = 0; i <= 10; ++i) {
        IterationRow row;
        row.runId = runId;
        row.iteration = i + 1;
        row.phase = i == 0 ? u"warmup"_s : u"steady"_s;
        row.stepMs = i == 0 ? 5 * ms : ms + spread * ((i % 3) - 1);
        if (!store.insertIteration(row))
            return false;
    }
    return true;
}

} // namespace

class TestAdvice : public QObject {
    Q_OBJECT

private slots:
    // The [] control (2.0 GB) is over the 1.8 GB target; core_attn (1.5 GB) and moe_act (1.6 GB, the
    // narrower boundary) fit. core_attn has the lower stored step time, so the advisor alone takes it.
    void significanceDecidesAmongTheChoicesThatFit_data()
    {
        QTest::addColumn<double>("coreAttnMs");
        QTest::addColumn<double>("moeActMs");
        QTest::addColumn<double>("spread"); // of the steady iterations; < 0: none stored
        QTest::addColumn<int>("moeActRepeats");
        QTest::addColumn<QString>("chosen");
        QTest::addColumn<bool>("moved");
        QTest::newRow("not significantly faster: the narrower moe_act")
            << 100.0 << 101.0 << 5.0 << 1 << u"moe_act"_s << true;
        QTest::newRow("not significantly faster, moe_act repeated: moe_act")
            << 100.0 << 101.0 << 5.0 << 2 << u"moe_act"_s << true;
        QTest::newRow("significantly faster: core_attn")
            << 80.0 << 101.0 << 0.5 << 1 << u"core_attn"_s << false;
        QTest::newRow("no steady iterations: the advisor's core_attn")
            << 100.0 << 101.0 << -1.0 << 1 << u"core_attn"_s << false;
    }
    void significanceDecidesAmongTheChoicesThatFit()
    {
        QFETCH(double, coreAttnMs);
        QFETCH(double, moeActMs);
        QFETCH(double, spread);
        QFETCH(int, moeActRepeats);
        QFETCH(QString, chosen);
        QFETCH(bool, moved);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Store store;
        QString error;
        QVERIFY2(store.open(dir.filePath(u"advice.sqlite"_s), &error), qPrintable(error));
        const qint64 control = store.insertRun(workerRun({}, 2.0, 120.0));
        QVERIFY(control > 0);
        QVector<std::pair<qint64, double>> runs { { control, 120.0 } };
        RunRecord coreAttn = workerRun({ u"core_attn"_s }, 1.5, coreAttnMs);
        coreAttn.controlRunId = control;
        runs.push_back({ store.insertRun(coreAttn), coreAttnMs });
        for (int i = 0; i < moeActRepeats; ++i) {
            RunRecord moeAct = workerRun({ u"moe_act"_s }, 1.6, moeActMs);
            moeAct.controlRunId = control;
            runs.push_back({ store.insertRun(moeAct), moeActMs });
        }
        if (spread >= 0) {
            for (const auto& [id, ms] : runs)
                QVERIFY(storeIterations(store, id, ms, spread));
        }

        const auto a = adviseOnControl(store, control, 1.8);
        QVERIFY(a);
        QCOMPARE(a->rows.size(), 2 + moeActRepeats);
        QCOMPARE(a->candidates.size(), std::size_t(a->rows.size()));
        for (const ComparisonRow& row : a->rows)
            QVERIFY2(row.isControl || row.match.matched, qPrintable(row.match.reasons.join(u"; "_s)));
        // The advisor alone: the lowest stored step time that fits, core_attn.
        const Advice plain = adviseRecompute(a->candidates, 1.8);
        QVERIFY(plain.chosen);
        QCOMPARE(QString::fromStdString(a->candidates[*plain.chosen].label), u"core_attn"_s);

        QVERIFY(a->advice.chosen);
        const std::size_t c = *a->advice.chosen;
        QCOMPARE(QString::fromStdString(a->candidates[c].label), chosen);
        QCOMPARE(a->advice.verdicts[c].verdict, Verdict::Chosen);
        QVERIFY2(QString::fromStdString(a->advice.summary).startsWith(u"use "_s + chosen + u": "_s),
            a->advice.summary.c_str());
        QCOMPARE(!a->significanceNote.isEmpty(), moved);
        if (moved) {
            QVERIFY2(a->significanceNote.contains(
                         u"core_attn, is not significantly faster than moe_act, the narrower boundary"_s),
                qPrintable(a->significanceNote));
            QVERIFY2(a->advice.verdicts[c].reasons.front().find("the guide's tie rule") != std::string::npos,
                a->advice.verdicts[c].reasons.front().c_str());
        }
        // Exactly one chosen; every other run that fits is "slower" with its reason, the control over target.
        int chosenCount = 0;
        for (std::size_t i = 0; i < a->candidates.size(); ++i) {
            const CandidateVerdict& v = a->advice.verdicts[i];
            chosenCount += v.verdict == Verdict::Chosen;
            QVERIFY(!v.reasons.empty());
            if (a->rows[int(i)].isControl)
                QCOMPARE(v.verdict, Verdict::OverTarget);
            else if (i != c)
                QCOMPARE(v.verdict, Verdict::Slower);
        }
        QCOMPARE(chosenCount, 1);
        // adviseOnComparison on the same rows is the same advice.
        const StoredAdvice again = adviseOnComparison(store, a->rows, 1.8);
        QCOMPARE(again.advice.chosen, a->advice.chosen);
        QCOMPARE(again.advice.summary, a->advice.summary);
        QCOMPARE(again.significanceNote, a->significanceNote);
    }

    // Further runs of the [] control (a sweep's repeats, not linked to it) pool with it when given. Here the
    // control fits too and its own launch is significantly slower than core_attn; a repeat of it as fast
    // as core_attn makes the launches overlap, so [] (nothing replayed, the narrowest) ties and is chosen.
    void moreControlRunsPoolWithTheControl_data()
    {
        QTest::addColumn<bool>("passRepeat");
        QTest::addColumn<QString>("chosen");
        QTest::newRow("repeat pooled: []") << true << u"[]"_s;
        QTest::newRow("repeat not given: core_attn") << false << u"core_attn"_s;
    }
    void moreControlRunsPoolWithTheControl()
    {
        QFETCH(bool, passRepeat);
        QFETCH(QString, chosen);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Store store;
        QVERIFY(store.open(dir.filePath(u"advice.sqlite"_s)));
        const qint64 control = store.insertRun(workerRun({}, 1.7, 110.0));
        RunRecord coreAttn = workerRun({ u"core_attn"_s }, 1.5, 100.0);
        coreAttn.controlRunId = control;
        const qint64 candidate = store.insertRun(coreAttn);
        const qint64 repeat = store.insertRun(workerRun({}, 1.7, 99.0));
        QVERIFY(storeIterations(store, control, 110.0, 0.5));
        QVERIFY(storeIterations(store, candidate, 100.0, 0.5));
        QVERIFY(storeIterations(store, repeat, 99.0, 0.5));
        const auto a = adviseOnControl(
            store, control, 1.8, passRepeat ? QVector<qint64> { repeat } : QVector<qint64> {});
        QVERIFY(a && a->advice.chosen);
        QCOMPARE(a->rows.size(), 2); // the repeat is not linked: only the pooling brings it in
        QCOMPARE(QString::fromStdString(a->candidates[*a->advice.chosen].label), chosen);
        QCOMPARE(a->significanceNote.isEmpty(), !passRepeat);
    }
};

QTEST_GUILESS_MAIN(TestAdvice)
#include "tst_advice.moc"
