// SPDX-License-Identifier: Apache-2.0
// session::RunSession against the launcher's test double (fake_worker): a recipe with rule errors is refused
// before anything starts (nothing stored, the findings named); the [] control runs first and every
// candidate (and repeat) is linked to it; a stored matched control measured with the same settings is
// reused (the worker starts for the candidate only), and any change of recipe or launch settings runs the
// control again.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "core/comparison.h"
#include "session/run_session.h"
#include "storage/significance.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs;
using namespace rs::launch;
using namespace rs::session;

namespace {

Recipe tiny(const std::vector<std::string>& modules = { "core_attn" })
{
    Recipe r;
    r.name = "session-tiny";
    r.num_layers = 2;
    r.hidden_size = 64;
    r.num_attention_heads = 4;
    r.seq_length = 32;
    r.warmup_iters = 1;
    r.train_iters = 3;
    r.recompute_granularity = "selective";
    r.recompute_modules = modules;
    r.add_bias_linear = false; // mlp is a candidate: with biases Megatron cannot run it (RT30)
    return r;
}

SessionOptions fakeOptions()
{
    SessionOptions o;
    o.launch.workerPath = QStringLiteral(RS_FAKE_WORKER);
    o.provenance = u"tst_run_session"_s;
    return o;
}

// Runs one session to its end; the number of worker starts in *starts.
bool runToEnd(RunSession& session, const QVector<Recipe>& candidates, const SessionOptions& o, int* starts)
{
    QSignalSpy started(session.launcher(), &WorkerLauncher::started);
    QSignalSpy finished(&session, &RunSession::finished);
    if (!session.start(candidates, o))
        return false;
    if (!finished.wait(30000))
        return false;
    *starts = int(started.count());
    return true;
}

} // namespace

class TestRunSession : public QObject {
    Q_OBJECT
private slots:
    void refusesRuleErrorsBeforeAnythingStarts_data()
    {
        QTest::addColumn<QStringList>("modules");
        QTest::addColumn<QString>("rule");
        QTest::newRow("unknown label") << QStringList { u"bogus_label"_s } << u"R11"_s;
        QTest::newRow("a typo among good labels")
            << QStringList { u"core_attn"_s, u"core_atn"_s } << u"R11"_s;
    }

    void refusesRuleErrorsBeforeAnythingStarts()
    {
        QFETCH(QStringList, modules);
        QFETCH(QString, rule);
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"refuse.sqlite"_s)));
        std::vector<std::string> m;
        for (const QString& s : modules)
            m.push_back(s.toStdString());
        RunSession session(&store);
        QSignalSpy started(session.launcher(), &WorkerLauncher::started);
        QSignalSpy finished(&session, &RunSession::finished);
        QVERIFY(!session.start({ tiny(m) }, fakeOptions()));
        QVERIFY2(session.refusal().contains(u"rule errors"_s) && session.refusal().contains(rule),
            qPrintable(session.refusal()));
        QVERIFY(!session.isRunning());
        QTest::qWait(100);
        QCOMPARE(started.count(), 0);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(store.runCount(), 0);
        // The CLI and the page say the same findings.
        QVERIFY(!RunSession::ruleErrors({ tiny(m) }, InputFormat::Json).isEmpty());
    }

    // Issue 30: a host ssh could not use (or would read as an option) is refused before any run row exists.
    void refusesABadHostBeforeAnyRow_data()
    {
        QTest::addColumn<QString>("host");
        QTest::newRow("a blank in it") << u"bad host"_s;
        QTest::newRow("an option") << u"-oProxyCommand=touch /tmp/rs-owned"_s;
    }

    void refusesABadHostBeforeAnyRow()
    {
        QFETCH(QString, host);
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"host.sqlite"_s)));
        RunSession session(&store);
        SessionOptions o = fakeOptions();
        o.launch.sshHost = host;
        QVERIFY(!session.start({ tiny({ "core_attn" }) }, o));
        QVERIFY2(session.refusal().contains(u"--host '"_s), qPrintable(session.refusal()));
        QCOMPARE(store.runCount(), 0);
    }

    void controlFirstThenEveryRepeatLinkedToIt()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"repeats.sqlite"_s)));
        RunSession session(&store);
        SessionOptions o = fakeOptions();
        o.repeats = 2;
        int starts = 0;
        QVERIFY(runToEnd(session, { tiny({ "core_attn" }), tiny({ "mlp" }) }, o, &starts));
        QCOMPARE(starts, 6); // two rounds: the control, then each candidate
        QCOMPARE(session.jobs().size(), 6);
        QStringList order;
        for (const SessionJob& j : session.jobs())
            order << u"%1 %2/%3"_s.arg(j.label).arg(j.repeat).arg(j.repeats);
        QCOMPARE(order,
            (QStringList { u"[] 1/2"_s, u"core_attn 1/2"_s, u"mlp 1/2"_s, u"[] 2/2"_s, u"core_attn 2/2"_s,
                u"mlp 2/2"_s }));
        QVERIFY(!session.controlReused());
        const auto control = store.run(session.jobs().front().runId);
        QVERIFY(control && control->isExplicitControl());
        QCOMPARE(session.controlRunId().value_or(0), control->id);
        // The control's second run is a [] control of its own, linked to none; it pools with the first.
        const auto secondControl = store.run(session.jobs()[3].runId);
        QVERIFY(secondControl && secondControl->isExplicitControl() && secondControl->id != control->id);
        QVERIFY(!secondControl->controlRunId);
        QVERIFY2(
            secondControl->provenance.contains(u"(repeat 2 of 2)"_s), qPrintable(secondControl->provenance));
        QCOMPARE(session.candidateRuns().size(), 4);
        for (qint64 id : session.candidateRuns()) {
            const auto r = store.run(id);
            QVERIFY(r);
            QCOMPARE(r->outcome, storage::outcome::Pass);
            QCOMPARE(r->controlRunId.value_or(0), control->id);
            QVERIFY2(r->provenance.contains(u"launch: worker "_s), qPrintable(r->provenance));
        }
        QVERIFY(store.run(session.candidateRuns()[0])->provenance.contains(u"(repeat 1 of 2)"_s));
        QVERIFY(store.run(session.candidateRuns()[2])->provenance.contains(u"(repeat 2 of 2)"_s));
    }

    // Repeats until narrow (issue 15): the fake worker's steady times are 102 and 103 ms in every run, so
    // the median's interval is [102, 103] (+-0.49 %) however often it runs: within a 2 % target after one
    // run, never within 0.2 % (every choice, the control too, runs up to the cap).
    void repeatsUntilTheIntervalIsNarrow_data()
    {
        QTest::addColumn<double>("targetPct");
        QTest::addColumn<int>("repeatsMax");
        QTest::addColumn<int>("runsEach");
        QTest::addColumn<QString>("said");
        QTest::newRow("2 %: one run each") << 2.0 << 4 << 1 << u"within the 2 % target"_s;
        QTest::newRow("0.2 %: up to the cap of 3") << 0.2 << 3 << 3 << u"the cap of 3 runs is reached"_s;
    }
    void repeatsUntilTheIntervalIsNarrow()
    {
        QFETCH(double, targetPct);
        QFETCH(int, repeatsMax);
        QFETCH(int, runsEach);
        QFETCH(QString, said);
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"narrow.sqlite"_s)));
        RunSession session(&store);
        QStringList messages;
        connect(&session, &RunSession::message, this, [&](const QString& m) { messages << m; });
        SessionOptions o = fakeOptions();
        o.repeatsMax = repeatsMax;
        o.intervalTargetPct = targetPct;
        int starts = 0;
        QVERIFY(runToEnd(session, { tiny({ "core_attn" }), tiny({ "mlp" }) }, o, &starts));
        QCOMPARE(starts, 3 * runsEach);
        QCOMPARE(session.candidateRuns().size(), 2 * runsEach);
        int controls = 0;
        for (const SessionJob& j : session.jobs()) {
            controls += j.isControl ? 1 : 0;
            if (!j.isControl)
                QCOMPARE(store.run(j.runId)->controlRunId.value_or(0), session.controlRunId().value_or(-1));
        }
        QCOMPARE(controls, runsEach);
        QCOMPARE(rs::storage::steadyIterationTimes(store, session.candidateRuns().front()),
            (std::vector<double> { 102, 103 }));
        QVERIFY2(messages.filter(said).size() == 3, qPrintable(messages.join(u"\n"_s)));
    }

    // A candidate stored before with the same recipe and launch settings is taken, not run again.
    void reusesStoredCandidates()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"reuse.sqlite"_s)));
        SessionOptions o = fakeOptions();
        o.reuseCandidates = true;
        int starts = 0;
        QVector<qint64> first;
        {
            RunSession session(&store);
            QVERIFY(runToEnd(session, { tiny({ "core_attn" }), tiny({ "mlp" }) }, o, &starts));
            QCOMPARE(starts, 3);
            first = session.candidateRuns();
        }
        RunSession again(&store);
        QVERIFY(
            runToEnd(again, { tiny({ "core_attn" }), tiny({ "mlp" }), tiny({ "layernorm" }) }, o, &starts));
        QCOMPARE(starts, 1); // only layernorm is new; the control is reused too
        QVERIFY(again.controlReused());
        QCOMPARE(again.candidateRuns().mid(0, 2), first);
        // The reused control, then the two reused candidates, then the new one.
        QVERIFY(again.jobs()[0].isControl && again.jobs()[0].reused);
        QVERIFY(again.jobs()[1].reused && again.jobs()[2].reused && !again.jobs()[3].reused);
        QCOMPARE(again.storedRuns().size(), 1);
        // Other launch settings: run again.
        o.launch.extraArguments = QStringList { u"--delay-ms"_s, u"1"_s };
        RunSession other(&store);
        QVERIFY(runToEnd(other, { tiny({ "core_attn" }) }, o, &starts));
        QCOMPARE(starts, 2);
    }

    // A candidate that is the [] control itself runs once, as the control.
    void theControlAsACandidateRunsOnce()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"self.sqlite"_s)));
        RunSession session(&store);
        int starts = 0;
        QVERIFY(runToEnd(session, { controlRecipe(tiny()) }, fakeOptions(), &starts));
        QCOMPARE(starts, 1);
        QCOMPARE(session.storedRuns().size(), 1);
        QVERIFY(session.candidateRuns().isEmpty());
    }

    void reusesAStoredMatchedControl_data()
    {
        QTest::addColumn<QString>("change");
        QTest::addColumn<bool>("reused");
        QTest::newRow("same recipe, same settings") << QString() << true;
        QTest::newRow("another candidate of the same recipe") << u"candidate"_s << true;
        QTest::newRow("reuse switched off") << u"no-reuse"_s << false;
        QTest::newRow("another run length") << u"iters"_s << false;
        QTest::newRow("other worker arguments") << u"arguments"_s << false;
        QTest::newRow("two ranks") << u"ranks"_s << false;
    }

    void reusesAStoredMatchedControl()
    {
        QFETCH(QString, change);
        QFETCH(bool, reused);
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"reuse.sqlite"_s)));
        qint64 firstControl = 0;
        {
            RunSession first(&store);
            int starts = 0;
            QVERIFY(runToEnd(first, { tiny() }, fakeOptions(), &starts));
            QCOMPARE(starts, 2);
            firstControl = first.controlRunId().value_or(0);
            QVERIFY(firstControl > 0);
        }
        Recipe candidate = tiny();
        SessionOptions o = fakeOptions();
        if (change == u"candidate")
            candidate = candidateRecipe(candidate, parseRecomputeChoice("full:uniform:1"));
        else if (change == u"no-reuse")
            o.reuseControl = false;
        else if (change == u"iters")
            candidate.train_iters = 4;
        else if (change == u"arguments")
            o.launch.extraArguments = QStringList { u"--delay-ms"_s, u"1"_s };
        else if (change == u"ranks")
            o.launch.ranks = 2;

        RunSession second(&store);
        QSignalSpy messages(&second, &RunSession::message);
        int starts = 0;
        QVERIFY(runToEnd(second, { candidate }, o, &starts));
        QCOMPARE(second.controlReused(), reused);
        QCOMPARE(starts, reused ? 1 : 2);
        QCOMPARE(second.storedRuns().size(), reused ? 1 : 2);
        const auto run = store.run(second.candidateRuns().value(0));
        QVERIFY(run);
        if (reused) {
            QCOMPARE(second.controlRunId().value_or(0), firstControl);
            QCOMPARE(run->controlRunId.value_or(0), firstControl);
            QVERIFY(second.reusedControlDate().isValid());
            bool said = false;
            for (const auto& m : messages)
                said |= m.at(0).toString().contains(u"reusing stored run %1 of "_s.arg(firstControl));
            QVERIFY(said);
        } else {
            QVERIFY(second.controlRunId().value_or(firstControl) != firstControl);
        }
    }

    // A worker that cannot be found: said, an aborted run names why, nothing further starts.
    void unstartableWorkerStopsTheSession()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"nostart.sqlite"_s)));
        RunSession session(&store);
        SessionOptions o = fakeOptions();
        o.launch.workerPath = dir.filePath(u"no-such-worker"_s);
        QSignalSpy finished(&session, &RunSession::finished);
        QVERIFY(session.start({ tiny() }, o));
        QVERIFY(finished.wait(20000));
        QVERIFY(session.storedRuns().size() <= 1); // the control ends aborted; the candidate never starts
        QCOMPARE(store.run(session.storedRuns().value(0))->outcome, storage::outcome::Aborted);
    }

    void cancelRunsNothingFurther()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(u"cancel.sqlite"_s)));
        RunSession session(&store);
        SessionOptions o = fakeOptions();
        o.launch.extraArguments = QStringList { u"--delay-ms"_s, u"50"_s };
        Recipe r = tiny();
        r.train_iters = 200;
        QSignalSpy finished(&session, &RunSession::finished);
        QSignalSpy iterations(&session, &RunSession::iteration);
        QVERIFY(session.start({ r }, o));
        QTRY_VERIFY_WITH_TIMEOUT(iterations.count() >= 2, 20000);
        session.cancel(200);
        QVERIFY(finished.wait(20000));
        QVERIFY(session.cancelled());
        QCOMPARE(session.storedRuns().size(), 1); // the control, aborted; no candidate
        const auto control = store.run(session.storedRuns().front());
        QCOMPARE(control->outcome, storage::outcome::Aborted);
        QVERIFY(store.iterations(control->id).size() >= 2);
    }
};

QTEST_GUILESS_MAIN(TestRunSession)
#include "tst_run_session.moc"
