// SPDX-License-Identifier: Apache-2.0
// Import of real-format Megatron-LM and Megatron Bridge logs (tests/fixtures/logs/): each fixture's parsed
// values, the stored run, and the awkward cases (NaN loss dropped from the line, ranks interleaved and two
// reports on one line, a truncated last line, garbage between lines, Windows line endings, OOM tracebacks).
#include <climits>

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include "storage/log_import.h"
#include "storage/report.h"
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

QByteArray readFixture(const QString& name)
{
    QFile f(fixture(name.toUtf8().constData()));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read fixture %s", qPrintable(name));
    return f.readAll();
}

QString writeTemp(const QTemporaryDir& dir, const QString& name, const QByteArray& text)
{
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
        qFatal("cannot write %s", qPrintable(path));
    return path;
}
} // namespace

class TestLogImport : public QObject {
    Q_OBJECT
private slots:
    // Issue 30: a stored name reaches the terminal as text: an escape sequence (retitle, recolour) or a line
    // break (a forged report row) is shown as U+FFFD, the report's cells and title through it.
    void namesReachTheTerminalAsText()
    {
        const QString evil = u"moe\x1b]0;owned\x07\n| []   | 99.999 |"_s;
        const QString shown = terminalText(evil);
        QVERIFY(!shown.contains(QChar(0x1b)) && !shown.contains(u'\n') && !shown.contains(QChar(0x07)));
        QCOMPARE(shown.count(QChar(0xfffd)), 3);
        QVERIFY(shown.startsWith(u"moe"_s) && shown.endsWith(u"99.999 |"_s));
        QCOMPARE(terminalText(u"moonlight_16b (TP 2)"_s), u"moonlight_16b (TP 2)"_s);
    }

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
        // One rank of a layout under --fake-process-group (megatron-lm-te-ranks): the loss is NaN (every
        // collective skipped), which is no failure; rank 2 prints no arguments, so its recompute settings
        // come from the job's command line.
        QTest::newRow("fake process group, rank 0")
            << u"megatron-lm-te-ranks/layout-tp2sp-pp2-mlp.log"_s << QStringList() << outcome::Pass << 0
            << QString() << u"mlp"_s << qint64(10186548838);
        QTest::newRow("fake process group, rank 2: settings from the command line")
            << u"megatron-lm-te-ranks/layout-tp2sp-pp2-none-rank2.log"_s << QStringList() << outcome::Pass
            << 0 << QString() << u"none"_s << qint64(10789637325);
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

    // Hostile logs (issue 16): a value out of range is refused and noted, never wrapped, zeroed or stored
    // as -9.2e18. Each row edits one real-format log (the TP2 PP2 core_attn fixture).
    void hostileValuesRefused_data()
    {
        QTest::addColumn<QByteArray>("from");
        QTest::addColumn<QByteArray>("to");
        QTest::addColumn<bool>("everywhere");
        QTest::addColumn<QString>("note");
        QTest::addColumn<qint64>("peak"); // -1: no peak
        QTest::addColumn<int>("numLayers"); // -1: unknown
        QTest::addColumn<int>("skipped"); // -1: not stored
        QTest::addColumn<int>("iterations");
        const qint64 peak = mib(31164.75);
        QTest::newRow("skipped counters summing past 2^31")
            << QByteArray("number of skipped iterations:   0")
            << QByteArray("number of skipped iterations: 2147483647") << true << u"does not fit an int"_s
            << peak << 8 << -1 << 10;
        QTest::newRow("a counter too big for an int")
            << QByteArray("number of skipped iterations:   0")
            << QByteArray("number of skipped iterations: 99999999999") << false
            << u"skipped-iterations counter refused"_s << peak << 8 << 0 << 10;
        QTest::newRow("max allocated nan")
            << QByteArray("max allocated: 31164.75") << QByteArray("max allocated: nan") << false
            << u"memory figure refused"_s << mib(31144.25) << 8 << 0 << 10;
        QTest::newRow("max allocated inf")
            << QByteArray("max allocated: 31164.75") << QByteArray("max allocated: inf") << false
            << u"memory figure refused"_s << mib(31144.25) << 8 << 0 << 10;
        QTest::newRow("max allocated 1e30")
            << QByteArray("max allocated: 31164.75") << QByteArray("max allocated: 1e30") << false
            << u"memory figure refused"_s << mib(31144.25) << 8 << 0 << 10;
        QTest::newRow("max allocated negative")
            << QByteArray("max allocated: 31164.75") << QByteArray("max allocated: -31164.75") << false
            << u"memory figure refused"_s << mib(31144.25) << 8 << 0 << 10;
        QTest::newRow("rank too big for an int")
            << QByteArray("[Rank 1] (after 2 iterations)")
            << QByteArray("[Rank 99999999999] (after 2 iterations)") << false << u"memory line refused"_s
            << mib(31144.25) << 8 << 0 << 10;
        QTest::newRow("iteration too big for an int")
            << QByteArray("iteration       10/      10") << QByteArray("iteration 99999999999/      10")
            << false << u"iteration line refused"_s << peak << 8 << 0 << 9;
        QTest::newRow("num_layers too big for an int")
            << QByteArray("num_layers ...................................... 8")
            << QByteArray("num_layers ...................................... 99999999999") << false
            << u"num_layers = 99999999999 refused"_s << peak << -1 << 0 << 10;
        QTest::newRow("num_layers zero") << QByteArray("num_layers ...................................... 8")
                                         << QByteArray("num_layers ...................................... 0")
                                         << false << u"num_layers = 0 refused"_s << peak << -1 << 0 << 10;
        QTest::newRow("negative world size")
            << QByteArray("world_size ...................................... 8")
            << QByteArray("world_size ...................................... -8") << false
            << u"world_size = -8 refused"_s << peak << 8 << 0 << 10;
        // Issue 30: a step time that is none, a broken memory line, a total of 0, reserved below allocated.
        QTest::newRow("negative step time") << QByteArray("elapsed time per iteration (ms): 812.4")
                                            << QByteArray("elapsed time per iteration (ms): -812.4") << false
                                            << u"step time refused"_s << peak << 8 << 0 << 10;
        QTest::newRow("step time 2^63") << QByteArray("elapsed time per iteration (ms): 812.4")
                                        << QByteArray("elapsed time per iteration (ms): 9223372036854775808")
                                        << false << u"step time refused"_s << peak << 8 << 0 << 10;
        QTest::newRow("a broken byte in the peak's memory line")
            << QByteArray("max allocated: 31164.75")
            << QByteArray("max allocat\x01"
                          "ed: 31164.75")
            << false << u"memory line refused"_s << mib(31144.25) << 8 << 0 << 10;
        QTest::newRow("a total of 0 iterations")
            << QByteArray("iteration       10/      10") << QByteArray("iteration       10/       0") << false
            << u"iteration line refused (iteration 10 of 0"_s << peak << 8 << 0 << 9;
        QTest::newRow("max reserved below max allocated")
            << QByteArray("max reserved: 33536.00") << QByteArray("max reserved: 3353.60") << false
            << u"max reserved below max allocated refused"_s << peak << 8 << 0 << 10;
        QTest::newRow("unknown granularity")
            << QByteArray("recompute_granularity ........................... selective")
            << QByteArray("recompute_granularity ........................... partial") << false
            << u"recompute_granularity = \"partial\" refused"_s << peak << 8 << 0 << 10;
    }

    void hostileValuesRefused()
    {
        QFETCH(QByteArray, from);
        QFETCH(QByteArray, to);
        QFETCH(bool, everywhere);
        QFETCH(QString, note);
        QFETCH(qint64, peak);
        QFETCH(int, numLayers);
        QFETCH(int, skipped);
        QFETCH(int, iterations);
        QByteArray text = readFixture(u"mlm-tp2pp2-comparison/selective_core_attn.log"_s);
        QVERIFY(text.contains(from));
        if (everywhere)
            text.replace(from, to);
        else
            text.replace(text.indexOf(from), from.size(), to);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"hostile.sqlite"_s)));
        const auto r = importTrainingLog(&store, writeTemp(dir, u"hostile.log"_s, text));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const auto run = store.run(r.runId);
        QVERIFY2(run->notes.contains(note), qPrintable(run->notes));
        QCOMPARE(run->peakAllocated.value_or(-1), peak);
        QCOMPARE(run->numLayers.value_or(-1), numLayers);
        QCOMPARE(run->skippedIterations.value_or(-1), skipped);
        const auto rows = store.iterations(r.runId);
        QCOMPARE(rows.size(), iterations);
        for (const auto& it : rows) {
            QVERIFY(it.iteration >= 1 && it.iteration <= 10);
            QVERIFY(it.skippedIterations.value_or(0) >= 0);
        }
        for (const auto& m : store.memoryReports(r.runId)) {
            QVERIFY(m.rank >= 0 && m.rank < 8);
            QVERIFY(m.maxAllocated.value_or(0) >= 0 && m.maxAllocated.value_or(0) < (qint64(1) << 50));
        }
        for (const auto& p : store.rankPeaks(r.runId))
            QVERIFY(p.peakAllocated.value_or(0) >= 0);
        if (run->worldSize)
            QVERIFY(*run->worldSize > 0);
        if (note.startsWith(u"recompute_granularity"_s))
            QCOMPARE(run->moduleSetLabel(), u"unknown"_s);
    }

    void bridgeGigabytesNotFinite()
    {
        QByteArray text = readFixture(u"bridge_moe_pass.log"_s);
        text.replace("mem-max-allocated-gigabytes: 64.653", "mem-max-allocated-gigabytes: nan");
        text.replace("mem-max-allocated-gigabytes: 64.2", "mem-max-allocated-gigabytes: 1e400");
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"gb.sqlite"_s)));
        const auto r = importTrainingLog(&store, writeTemp(dir, u"gb.log"_s, text));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const auto run = store.run(r.runId);
        QCOMPARE(run->peakAllocated.value_or(0), qint64(63900000000)); // the reports that remain
        QVERIFY2(
            run->notes.contains(u"memory figure refused (not finite, negative or above 1 PiB): 2 time(s)"_s),
            qPrintable(run->notes));
    }

    void duplicatedLinesCountedOnce()
    {
        // Every line twice in a row (a log written by two `tee`s), and the whole log appended to itself.
        const QByteArray base = readFixture(u"mlm_full_uniform_old.log"_s);
        QByteArray doubled;
        for (const QByteArray& line : base.split('\n')) {
            if (line.isEmpty())
                continue;
            doubled += line + '\n' + line + '\n';
        }
        const QByteArray twice = readFixture(u"mlm-tp2pp2-comparison/none.log"_s).repeated(2);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"dup.sqlite"_s)));
        const auto a = importTrainingLog(&store, writeTemp(dir, u"doubled.log"_s, doubled));
        QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
        const auto run = store.run(a.runId);
        QCOMPARE(run->skippedIterations.value_or(-1), 1); // not 2
        QCOMPARE(run->nanIterations.value_or(-1), 1);
        QCOMPARE(store.iterations(a.runId).size(), 7);
        QVERIFY2(run->notes.contains(u"duplicated line(s) counted once"_s), qPrintable(run->notes));
        const auto b = importTrainingLog(&store, writeTemp(dir, u"twice.log"_s, twice));
        QVERIFY2(b.error.isEmpty(), qPrintable(b.error));
        QCOMPARE(store.iterations(b.runId).size(), 10);
        QCOMPARE(store.memoryReports(b.runId).size(), 8);
        QCOMPARE(store.run(b.runId)->skippedIterations.value_or(-1), 0);
    }

    void twoRunsInOneFileRefused_data()
    {
        QTest::addColumn<QString>("how");
        QTest::newRow("interleaved line by line") << u"interleave"_s;
        QTest::newRow("a restart appended") << u"append"_s;
        QTest::newRow("memory lines of another run") << u"memory"_s;
    }

    void twoRunsInOneFileRefused()
    {
        QFETCH(QString, how);
        const QList<QByteArray> a = readFixture(u"mlm-tp2pp2-comparison/none.log"_s).split('\n');
        const QList<QByteArray> b = readFixture(u"mlm-tp2pp2-comparison/full_uniform_1.log"_s).split('\n');
        QByteArray text;
        if (how == u"interleave") {
            for (qsizetype i = 0; i < std::max(a.size(), b.size()); ++i) {
                if (i < a.size() && !a[i].isEmpty())
                    text += a[i] + '\n';
                if (i < b.size() && !b[i].isEmpty())
                    text += b[i] + '\n';
            }
        } else if (how == u"append") {
            text = a.join('\n') + b.join('\n');
        } else {
            text = a.join('\n');
            for (const QByteArray& line : b)
                if (line.contains("memory (MB)"))
                    text += line + '\n';
        }
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"two.sqlite"_s)));
        const auto r = importTrainingLog(&store, writeTemp(dir, u"two.log"_s, text));
        QVERIFY2(r.error.contains(u"holds two runs"_s), qPrintable(r.error));
        QVERIFY2(r.error.contains(u"printed twice with other values"_s) || r.error.contains(u"arguments"_s),
            qPrintable(r.error));
        QCOMPARE(store.runCount(), 0);
    }

    // Every OOM form Megatron-LM and Bridge runs print ends as `oom` with its iteration, not `aborted`.
    void everyOomForm_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("message");
        QTest::newRow("torch.OutOfMemoryError")
            << u"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."_s
            << u"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."_s;
        QTest::newRow("torch.cuda.OutOfMemoryError")
            << u"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"_s
            << u"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"_s;
        QTest::newRow("RuntimeError: CUDA out of memory (old torch)")
            << u"RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB"_s
            << u"RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB"_s;
        QTest::newRow("RuntimeError: CUDA error: out of memory")
            << u"0: RuntimeError: CUDA error: out of memory"_s
            << u"RuntimeError: CUDA error: out of memory"_s;
        QTest::newRow("Transformer Engine CUDA Error")
            << u"RuntimeError: /opt/transformer_engine/common/gemm/cublaslt_gemm.cu:420 in function "
               "cublas_gemm: CUDA Error: out of memory"_s
            << u"RuntimeError: /opt/transformer_engine/common/gemm/cublaslt_gemm.cu:420 in function "
               "cublas_gemm: CUDA Error: out of memory"_s;
        QTest::newRow("NCCL Cuda failure")
            << u"[rank3]: Cuda failure 'out of memory'"_s << u"Cuda failure 'out of memory'"_s;
        QTest::newRow("NCCL WARN calloc")
            << u"node1:123:456 [3] include/alloc.h:48 NCCL WARN Failed to CUDA calloc 6291456 bytes"_s
            << u"node1:123:456 [3] include/alloc.h:48 NCCL WARN Failed to CUDA calloc 6291456 bytes"_s;
        QTest::newRow("NCCL WARN Cuda failure 2")
            << u"node1:1:2 [0] NCCL WARN Cuda failure 2 'out of memory'"_s
            << u"node1:1:2 [0] NCCL WARN Cuda failure 2 'out of memory'"_s;
        QTest::newRow("cuBLAS handle")
            << u"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"_s
            << u"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"_s;
        QTest::newRow("cuDNN") << u"RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED"_s
                               << u"RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED"_s;
        QTest::newRow("c10::OutOfMemoryError")
            << u"terminate called after throwing an instance of 'c10::OutOfMemoryError'"_s
            << u"terminate called after throwing an instance of 'c10::OutOfMemoryError'"_s;
    }

    void everyOomForm()
    {
        QFETCH(QString, line);
        QFETCH(QString, message);
        // The TP2 PP2 log up to iteration 3, then a traceback ending in the form.
        QByteArray text;
        for (const QByteArray& l :
            readFixture(u"mlm-tp2pp2-comparison/selective_core_attn.log"_s).split('\n')) {
            if (l.contains("iteration        4/"))
                break;
            text += l + '\n';
        }
        text
            += "[rank0]: Traceback (most recent call last):\n"
               "[rank0]:   File \"/opt/megatron-lm/megatron/core/pipeline_parallel/schedules.py\", line 420, "
               "in backward_step\n";
        text += line.toUtf8() + '\n';
        const ParsedLog log = parseTrainingLog(text);
        QVERIFY(log.oom);
        QCOMPARE(log.oomIteration.value_or(0), 4);
        QCOMPARE(log.oomMessage, message);
        QCOMPARE(log.oomStage, u"backward"_s);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"oom.sqlite"_s)));
        const auto r = importTrainingLog(&store, writeTemp(dir, u"oom.log"_s, text));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(store.run(r.runId)->outcome, outcome::Oom);
        QCOMPARE(store.run(r.runId)->failureIteration.value_or(0), 4);
    }

    void notAnOom()
    {
        const ParsedLog log
            = parseTrainingLog("WARNING: to avoid running out of memory, lower the micro-batch size\n"
                               " [2026-11-29 10:00:01.123457] iteration        1/       1 | elapsed time per "
                               "iteration (ms): 1.0 | "
                               "global batch size:     8 | lm loss: 1.000000E+01 | loss scale: 1.0 | number "
                               "of skipped iterations:   "
                               "0 | number of nan iterations:   0 |\n");
        QVERIFY(!log.oom);
        QCOMPARE(log.iterations.size(), 1);
    }

    void bridgeConfigurationSummary()
    {
        const ParsedLog log = parseFixture("bridge-summary-comparison/moe_act.log");
        QVERIFY(log.bridgeSummary);
        QCOMPARE(log.format, u"megatron-bridge"_s);
        QCOMPARE(log.bridgeConfig.value(u"model.recompute_granularity"_s), u"'selective'"_s);
        QCOMPARE(log.bridgeConfig.value(u"model.recompute_modules"_s), u"['moe_act']"_s);
        QCOMPARE(log.bridgeConfig.value(u"train.global_batch_size"_s), u"16"_s);
        QCOMPARE(log.bridgeConfig.value(u"dataset.seq_length"_s), u"4096"_s);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"summary.sqlite"_s)));
        const auto r = importTrainingLog(&store, fixture("bridge-summary-comparison/moe_act.log"));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const auto run = store.run(r.runId);
        QCOMPARE(run->moduleSetLabel(), u"moe_act"_s);
        QCOMPARE(run->numLayers.value_or(0), 27);
        QCOMPARE(run->hiddenSize.value_or(0), 2048);
        QCOMPARE(run->numMoeExperts.value_or(0), 64);
        QCOMPARE(run->moeRouterTopk.value_or(0), 6);
        QCOMPARE(run->seqLength.value_or(0), 4096);
        QCOMPARE(run->microBatchSize.value_or(0), 1);
        QCOMPARE(run->tensorModelParallelSize.value_or(0), 2);
        QCOMPARE(run->pipelineModelParallelSize.value_or(0), 1); // not listed: Megatron Core's default
        QCOMPARE(run->expertModelParallelSize.value_or(0), 8);
        QCOMPARE(run->sequenceParallel.value_or(false), true);
        QCOMPARE(run->precision, u"bf16"_s);
        QCOMPARE(run->attentionBackend, u"fused"_s);
        // Without recompute_granularity in [model]: Megatron Core's None, whatever recompute_modules says.
        const auto none = importTrainingLog(&store, fixture("bridge-summary-comparison/none.log"));
        const auto noneRun = store.run(none.runId);
        QCOMPARE(noneRun->moduleSetLabel(), u"none"_s);
        QVERIFY(!noneRun->recomputeModules);
        QCOMPARE(noneRun->controlKind(), u"megatron-none"_s);
        QCOMPARE(none.runsLinkedToIt, 1);
    }

    // The import's time is linear in the size of the log (the earlier version was quadratic: a 100 MB log
    // took minutes, and 16x the lines took ~100x the time): 16x the lines may take at most 40x the time,
    // room enough for a loaded machine. Each size is timed twice and the faster kept.
    void linearTime()
    {
        auto make = [](int steps) {
            QByteArray out;
            for (int i = 1; i <= steps; ++i)
                out += " [2026-11-29 10:00:01.123457] iteration "
                    + QByteArray::number(i).rightJustified(8, ' ') + "/"
                    + QByteArray::number(steps).rightJustified(8, ' ')
                    + " | consumed samples: 8 | elapsed time per iteration (ms): 455.0 | global batch size:  "
                      "   8 "
                      "| lm loss: 1.021000E+01 | loss scale: 1.0 | number of skipped iterations:   0 | "
                      "number of "
                      "nan iterations:   0 |\n";
            return out;
        };
        const QByteArray small = make(4000), large = make(64000);
        auto fastest = [](const QByteArray& text, qsizetype expected) {
            qint64 best = LLONG_MAX;
            for (int i = 0; i < 2; ++i) {
                QElapsedTimer t;
                t.start();
                if (parseTrainingLog(text).iterations.size() != expected)
                    return qint64(-1);
                best = std::min(best, t.nsecsElapsed());
            }
            return best;
        };
        const qint64 a = fastest(small, 4000);
        const qint64 b = fastest(large, 64000);
        QVERIFY(a > 0 && b > 0);
        QVERIFY2(
            b < 40 * a, qPrintable(u"%1 ms for 64000 lines vs %2 ms for 4000"_s.arg(b / 1e6).arg(a / 1e6)));
        qint64 reports = 0;
        parseTrainingLog(large, [&](qint64, qint64) {
            ++reports;
            return true;
        });
        QVERIFY(reports >= 2); // about every MiB, and at the end
        const ParsedLog cancelled = parseTrainingLog(large, [](qint64 done, qint64) { return done == 0; });
        QVERIFY(cancelled.cancelled);
    }
};

QTEST_GUILESS_MAIN(TestLogImport)
#include "tst_log_import.moc"
