// SPDX-License-Identifier: Apache-2.0
// Import of real-format Megatron-LM and Megatron Bridge logs (tests/fixtures/logs/): each fixture's parsed
// values, the stored run, and the awkward cases (NaN loss dropped from the line, ranks interleaved and two
// reports on one line, a truncated last line, garbage between lines, Windows line endings, OOM tracebacks).
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include "storage/log_import.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {
QString fixture(const char* name)
{
    return QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/") + QLatin1String(name);
}

ParsedLog parseFixture(const char* name)
{
    QFile f(fixture(name));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read fixture %s", name);
    return parseTrainingLog(f.readAll());
}

qint64 mib(double mb)
{
    return qint64(std::llround(mb * 1024 * 1024));
}
} // namespace

class TestLogImport : public QObject {
    Q_OBJECT
private slots:
    void megatronLmSelective()
    {
        const ParsedLog log = parseFixture("mlm_selective_core_attn.log");
        QCOMPARE(log.format, u"megatron-lm"_s);
        QCOMPARE(log.arguments.value(u"recompute_granularity"_s), u"selective"_s);
        QCOMPARE(log.arguments.value(u"recompute_modules"_s), u"['core_attn']"_s);
        QCOMPARE(log.arguments.value(u"recompute_method"_s), u"None"_s);
        QCOMPARE(log.arguments.value(u"tensor_model_parallel_size"_s), u"2"_s);
        QCOMPARE(log.iterations.size(), 10);
        QCOMPARE(log.trainIters.value_or(0), 10);
        QCOMPARE(log.globalBatchSize.value_or(0), 8);
        QCOMPARE(log.iterations[0].loss.value_or(0), 10.54321);
        QCOMPARE(log.iterations[0].stepMs.value_or(0), 812.4);
        QCOMPARE(log.iterations[0].tflops.value_or(0), 43.1);
        QCOMPARE(log.memory.size(), 8); // four ranks, interleaved, after iterations 1 and 2
        const auto rank1 = std::find_if(log.memory.begin(), log.memory.end(),
            [](const MemoryReport& m) { return m.rank == 1 && m.afterIteration == 2; });
        QVERIFY(rank1 != log.memory.end());
        QCOMPARE(rank1->maxAllocated.value_or(0), mib(31164.75));
        QCOMPARE(rank1->allocated.value_or(0), mib(1301.25));
        QCOMPARE(rank1->maxReserved.value_or(0), mib(33536.0));
        QCOMPARE(log.theoreticalWeightOptimizerMb.value_or(0), 4512.25);
        QCOMPARE(log.theoreticalActivationMb.value_or(0), 2301.5);
        QCOMPARE(log.theoreticalTotalMb.value_or(0), 6813.75);
        QVERIFY(!log.oom);
        QVERIFY(!log.truncatedLastLine);
        QVERIFY(!log.lossDroppedSomewhere);
        QCOMPARE(log.skippedIterations, 0);
    }

    void oldMegatronLmWithNanAndGarbage()
    {
        const ParsedLog log = parseFixture("mlm_full_uniform_old.log");
        QCOMPARE(log.format, u"megatron-lm"_s);
        QCOMPARE(log.arguments.value(u"recompute_granularity"_s), u"full"_s);
        QVERIFY(log.truncatedLastLine); // iteration 8 was cut off mid-line
        QCOMPARE(log.iterations.size(), 7);
        QCOMPARE(log.iterations.last().iteration, 7);
        QVERIFY(!log.iterations[3].loss); // NaN: Megatron drops it from the line
        QCOMPARE(log.iterations[3].lossFinite.value_or(true), false);
        QCOMPARE(log.iterations[3].nanIterations.value_or(0), 1);
        QVERIFY(!log.iterations[3].tflops); // no --log-throughput
        QVERIFY(log.lossDroppedSomewhere);
        QCOMPARE(log.nanIterations, 1);
        QCOMPARE(log.skippedIterations, 1);
        QCOMPARE(log.memory.size(), 2);
        QCOMPARE(log.memory[0].maxAllocated.value_or(0), qint64(21474959360)); // 20480.1171875 MB unformatted
        QCOMPARE(log.memory[1].maxAllocated.value_or(0), qint64(22549102592));
        QCOMPARE(log.memory[0].allocated.value_or(0), mib(1323.32421875));
        QCOMPARE(log.theoreticalWeightOptimizerMb.value_or(0), 2256.12);
        QVERIFY(!log.theoreticalActivationMb);
        QVERIFY(log.ignoredLines >= 3); // the warning, the progress bar, the binary junk
    }

    void bridgeOomWithWindowsLineEndings()
    {
        const ParsedLog log = parseFixture("bridge_moe_act_oom.log");
        QCOMPARE(log.format, u"megatron-bridge"_s);
        QVERIFY(log.arguments.isEmpty());
        QCOMPARE(log.iterations.size(), 1);
        QCOMPARE(log.iterations[0].stepMs.value_or(0), 2874.3);
        QCOMPARE(log.memory.size(), 2);
        QCOMPARE(log.memory[0].rank, 0);
        QCOMPARE(log.memory[0].maxAllocated.value_or(0), qint64(66297000000));
        QCOMPARE(log.memory[0].allocated.value_or(0), qint64(40123000000));
        QCOMPARE(log.memory[0].maxReserved.value_or(0), qint64(74000000000));
        QCOMPARE(log.memory[0].allocRetries.value_or(-1), 2);
        QCOMPARE(log.memory[1].maxAllocated.value_or(0), qint64(65900000000));
        QVERIFY(log.oom);
        QCOMPARE(log.oomIteration.value_or(0), 2);
        QCOMPARE(log.oomStage, u"forward"_s);
        QVERIFY2(log.oomMessage.startsWith(
                     u"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"_s),
            qPrintable(log.oomMessage));
        QVERIFY(!log.oomMessage.endsWith(u'\r'));
        QCOMPARE(log.theoreticalWeightOptimizerMb.value_or(0), 30712.5);
    }

    void bridgePassWithTwoReportsOnOneLine()
    {
        const ParsedLog log = parseFixture("bridge_moe_pass.log");
        QCOMPARE(log.format, u"megatron-bridge"_s);
        QCOMPARE(log.iterations.size(), 12);
        QCOMPARE(log.memory.size(), 4);
        QCOMPARE(log.memory[0].rank, 0);
        QCOMPARE(log.memory[0].maxAllocated.value_or(0), qint64(63900000000));
        QCOMPARE(log.memory[1].rank, 1);
        QCOMPARE(log.memory[1].maxAllocated.value_or(0), qint64(63500000000));
        QCOMPARE(log.memory[2].maxAllocated.value_or(0), qint64(64653000000)); // rank 0 after iteration 2
    }

    void importStoresTheRun()
    {
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"import.sqlite"_s)));
        const auto r = importTrainingLog(&store, fixture("mlm_selective_core_attn.log"));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QVERIFY(!r.duplicate);
        const auto run = store.run(r.runId);
        QVERIFY(run);
        QCOMPARE(run->source, source::Import);
        QCOMPARE(run->importFormat, u"megatron-lm"_s);
        QCOMPARE(run->importSha256.size(), 64);
        QCOMPARE(run->outcome, outcome::Pass);
        QCOMPARE(run->moduleSetLabel(), u"core_attn"_s);
        QCOMPARE(run->recomputeGranularity, u"selective"_s);
        QCOMPARE(run->precision, u"bf16"_s);
        QCOMPARE(run->attentionBackend, u"fused"_s);
        QCOMPARE(run->tensorModelParallelSize.value_or(0), 2);
        QCOMPARE(run->pipelineModelParallelSize.value_or(0), 2);
        QCOMPARE(run->sequenceParallel.value_or(false), true);
        QCOMPARE(run->seqLength.value_or(0), 4096);
        QCOMPARE(run->globalBatchSize.value_or(0), 8);
        QCOMPARE(run->worldSize.value_or(0), 8);
        QVERIFY(!run->numMoeExperts); // printed as None
        QCOMPARE(run->numQueryGroups.value_or(0), 16); // no GQA: one group per head
        QCOMPARE(run->peakAllocated.value_or(0), mib(31164.75));
        QCOMPARE(run->peakRank.value_or(-1), 1);
        QCOMPARE(run->peakNote, u"after iteration 2"_s);
        QCOMPARE(qRound(run->steadyStepMs.value_or(0) * 100), 45690); // mean of iterations 6-10
        QCOMPARE(qRound(run->modelTflops.value_or(0) * 100), 7666);
        QCOMPARE(run->lossFinite.value_or(false), true);
        QCOMPARE(run->theoreticalTotalMb.value_or(0), 6813.75);
        QCOMPARE(store.iterations(r.runId).size(), 10);
        QCOMPARE(store.iterations(r.runId).at(6).phase, u"steady"_s);
        QCOMPARE(store.memoryReports(r.runId).size(), 8);
        QCOMPARE(store.rankPeaks(r.runId).size(), 4);

        // The same bytes again: no second run.
        const auto again = importTrainingLog(&store, fixture("mlm_selective_core_attn.log"));
        QVERIFY(again.duplicate);
        QCOMPARE(again.runId, r.runId);
        QCOMPARE(store.runCount(), 1);
    }

    void importOutcomes_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("overrides");
        QTest::addColumn<QString>("expectedOutcome");
        QTest::addColumn<int>("failureIteration");
        QTest::addColumn<QString>("failureStage");
        QTest::addColumn<QString>("moduleSet");
        QTest::addColumn<qint64>("peak");
        QTest::newRow("old full uniform, NaN")
            << u"mlm_full_uniform_old.log"_s << QStringList() << outcome::Nonfinite << 4 << QString()
            << u"full uniform 1"_s << qint64(22549102592);
        QTest::newRow("bridge OOM, recompute from --overrides")
            << u"bridge_moe_act_oom.log"_s
            << QStringList { u"model.recompute_granularity=selective"_s,
                   u"model.recompute_modules=[moe_act]"_s }
            << outcome::Oom << 2 << u"forward"_s << u"moe_act"_s << qint64(66297000000);
        QTest::newRow("bridge pass") << u"bridge_moe_pass.log"_s
                                     << QStringList { u"model.recompute_granularity=selective"_s,
                                            u"'model.recompute_modules=[moe]'"_s }
                                     << outcome::Pass << 0 << QString() << u"moe"_s << qint64(64653000000);
        QTest::newRow("bridge, no recompute settings")
            << u"bridge_moe_pass.log"_s << QStringList() << outcome::Pass << 0 << QString() << u"unknown"_s
            << qint64(64653000000);
    }

    void importOutcomes()
    {
        QFETCH(QString, file);
        QFETCH(QStringList, overrides);
        QFETCH(QString, expectedOutcome);
        QFETCH(int, failureIteration);
        QFETCH(QString, failureStage);
        QFETCH(QString, moduleSet);
        QFETCH(qint64, peak);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"outcomes.sqlite"_s)));
        ImportOptions options;
        options.overrides = overrides;
        const auto r = importTrainingLog(
            &store, QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/") + file, options);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const auto run = store.run(r.runId);
        QCOMPARE(run->outcome, expectedOutcome);
        QCOMPARE(run->failureIteration.value_or(0), failureIteration);
        QCOMPARE(run->failureStage, failureStage);
        QCOMPARE(run->moduleSetLabel(), moduleSet);
        QCOMPARE(run->peakAllocated.value_or(0), peak);
        QCOMPARE(run->overrides, overrides);
    }

    void bridgePassSteadyState()
    {
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"steady.sqlite"_s)));
        const auto r = importTrainingLog(&store, fixture("bridge_moe_pass.log"));
        const auto run = store.run(r.runId);
        QCOMPARE(
            qRound(run->steadyStepMs.value_or(0) * 100), 65725); // iterations 7-12, as the guide's window
        QCOMPARE(qRound(run->modelTflops.value_or(0) * 100), 27795);
        QCOMPARE(run->peakNote, u"after iteration 2"_s);
        QCOMPARE(run->peakRank.value_or(-1), 0);
        QVERIFY(run->precision.isEmpty()); // the log does not say
    }

    void refusesWhatIsNotALog()
    {
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"notalog.sqlite"_s)));
        const QString path = dir.filePath(u"notes.txt"_s);
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("hello\nworld\n");
        f.close();
        const auto r = importTrainingLog(&store, path);
        QVERIFY(r.error.contains(u"not a Megatron-LM or Megatron Bridge training log"_s));
        QCOMPARE(importTrainingLog(&store, dir.filePath(u"missing.log"_s)).error.isEmpty(), false);
        ImportOptions bad;
        bad.overrides = { u"model.recompute_modulez=[moe]"_s };
        const auto e = importTrainingLog(&store, fixture("bridge_moe_pass.log"), bad);
        QVERIFY2(e.error.contains(u"recompute_modulez"_s), qPrintable(e.error));
        QCOMPARE(store.runCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestLogImport)
#include "tst_log_import.moc"
