// SPDX-License-Identifier: Apache-2.0
// `recompute plan` as a user runs it: the guide's Moonlight job by name with the provisional H100 record (the
// cheapest that fits, the front, a reason for every other choice, JSON's shape), the refusals (no --rates, a
// record that does not read, a bad target), and --confirm with the real worker on a tiny CPU recipe and a CPU
// record that recompute-bench --calibrate writes: the [] control and the chosen choice measured and printed
// beside their predictions.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "../cli_process.h"

using namespace Qt::StringLiterals;

namespace {

const QString kRates = QStringLiteral(RS_SOURCE_DIR "/resources/calibration/h100-bf16-PROVISIONAL.json");

rs::test::CliRun plan(
    const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    return rs::test::runToEnd(
        QStringLiteral(RS_RECOMPUTE_EXE), QStringList { u"plan"_s } + args, 300000, env);
}

const QStringList kMoonlight = { u"--recipe"_s, u"moonlight_16b_pretrain_8gpu_h100_bf16_config"_s,
    u"--gpus"_s, u"8"_s, u"--overrides"_s, u"train.global_batch_size=4"_s };

} // namespace

class TestCliPlan : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void moonlightByName();
    void jsonShape();
    void shippedRecordByName();
    void stepTermByTerm();
    void refusals_data();
    void refusals();
    void confirmWithTheRealWorker();
    void withinTheMarginOnly();
};

void TestCliPlan::moonlightByName()
{
    const auto run = plan(kMoonlight + QStringList { u"--target-gb"_s, u"32"_s, u"--rates"_s, kRates });
    QVERIFY2(run.code == 0, qPrintable(run.out + run.err));
    QVERIFY(run.out.contains(u"PROVISIONAL"_s));
    QVERIFY(run.out.contains(u"cheapest that fits: "_s));
    QVERIFY(run.out.contains(u"Pareto front"_s));
    // 30.36-30.86 GB estimates sit inside the 5 % kept free under 32 GB: a measurement decides them.
    QVERIFY(run.out.contains(u"within-error"_s));
    QVERIFY(run.out.contains(u"a measurement says whether it fits"_s));
    QVERIFY(run.out.contains(u"dominated by "_s));
    QVERIFY(run.out.contains(u"communication is not modelled"_s));
    const auto tight = plan(kMoonlight + QStringList { u"--target-gb"_s, u"26"_s, u"--rates"_s, kRates });
    QVERIFY2(tight.code == 0, qPrintable(tight.out + tight.err));
    QVERIFY(tight.out.contains(u"does not fit: stage 0 needs"_s));
    QVERIFY(tight.out.contains(u"GB over the 26.000 GB target"_s));
}

void TestCliPlan::jsonShape()
{
    const auto run
        = plan(kMoonlight + QStringList { u"--target-gb"_s, u"32"_s, u"--rates"_s, kRates, u"--json"_s });
    QVERIFY2(run.code == 0, qPrintable(run.err));
    const auto j = QJsonDocument::fromJson(run.out.toUtf8()).object();
    QVERIFY(j.value("provisional"_L1).toBool());
    const QString chosen = j.value("chosen"_L1).toString();
    QVERIFY(!chosen.isEmpty());
    const auto cands = j.value("candidates"_L1).toArray();
    QVERIFY(cands.size() > 50); // 63 label sets and 54 full choices at Moonlight's 27 layers
    QCOMPARE(cands[0].toObject().value("choice"_L1).toString(), u"[]"_s);
    QVERIFY(cands[0].toObject().value("control"_L1).toBool());
    QVERIFY(!cands[1].toObject().value("control"_L1).toBool());
    double chosenMs = 0;
    for (const auto& c : cands)
        if (c.toObject().value("choice"_L1).toString() == chosen)
            chosenMs = c.toObject().value("step_ms"_L1).toDouble();
    QVERIFY(chosenMs > 0);
    for (const auto& v : cands) {
        const auto c = v.toObject();
        const QString verdict = c.value("verdict"_L1).toString();
        QVERIFY2(QStringList({ u"chosen"_s, u"fits"_s, u"within-error"_s, u"over-target"_s, u"invalid"_s })
                     .contains(verdict),
            qPrintable(verdict));
        const double peak = c.value("peak_allocated_bytes"_L1).toDouble();
        if (verdict == u"fits"_s) {
            QVERIFY(c.value("step_ms"_L1).toDouble() >= chosenMs);
            QVERIFY(peak <= 32e9 * 0.95);
        }
        if (verdict == u"within-error"_s)
            QVERIFY(peak > 32e9 * 0.95 && peak <= 32e9);
        if (verdict == u"over-target"_s)
            QVERIFY(peak > 32e9);
    }
    QVERIFY(j.value("front"_L1).toArray().size() >= 2);
    QVERIFY(j.value("measured_control_ms"_L1).isNull());
    // --control-ms anchors every step at the measured [] step: [] is it, the others it plus their difference.
    const auto anchored = plan(kMoonlight
        + QStringList {
            u"--target-gb"_s, u"32"_s, u"--rates"_s, kRates, u"--json"_s, u"--control-ms"_s, u"457"_s });
    QVERIFY2(anchored.code == 0, qPrintable(anchored.err));
    const auto a = QJsonDocument::fromJson(anchored.out.toUtf8()).object();
    QCOMPARE(a.value("measured_control_ms"_L1).toDouble(), 457.0);
    const auto ac = a.value("candidates"_L1).toArray();
    QCOMPARE(ac.size(), cands.size());
    QCOMPARE(ac[0].toObject().value("step_ms"_L1).toDouble(), 457.0);
    const double model0 = cands[0].toObject().value("step_ms"_L1).toDouble();
    for (qsizetype i = 0; i < ac.size(); ++i) {
        const auto x = ac[i].toObject(), y = cands[i].toObject();
        if (y.value("verdict"_L1).toString() == u"invalid"_s)
            continue;
        QCOMPARE(x.value("model_step_ms"_L1).toDouble(), y.value("step_ms"_L1).toDouble());
        QVERIFY(qAbs(x.value("step_ms"_L1).toDouble() - (457.0 + y.value("step_ms"_L1).toDouble() - model0))
            < 1e-6);
    }
    QCOMPARE(a.value("chosen"_L1).toString(), chosen);
}

// --rates NAME reads the record compiled in from resources/calibration: the same plan as its file gives.
void TestCliPlan::shippedRecordByName()
{
    const QStringList base = kMoonlight + QStringList { u"--target-gb"_s, u"32"_s, u"--rates"_s };
    const auto byName = plan(base + QStringList { u"h200-bf16"_s });
    QVERIFY2(byName.code == 0, qPrintable(byName.out + byName.err));
    QVERIFY(byName.out.contains(u"rates: NVIDIA H200, bf16"_s));
    QVERIFY(!byName.out.contains(u"PROVISIONAL"_s));
    const auto byFile
        = plan(base + QStringList { QStringLiteral(RS_SOURCE_DIR "/resources/calibration/h200-bf16.json") });
    QCOMPARE(byName.out, byFile.out);
}

// --terms prints the chosen choice's step term by term; --json has the same as step_terms, whose terms add
// up to the chosen candidate's predicted step.
void TestCliPlan::stepTermByTerm()
{
    const QStringList base
        = kMoonlight + QStringList { u"--target-gb"_s, u"32"_s, u"--rates"_s, u"h200-bf16"_s };
    const auto text = plan(base + QStringList { u"--terms"_s });
    QVERIFY2(text.code == 0, qPrintable(text.out + text.err));
    QVERIFY(text.out.contains(u", term by term (stage 0"_s));
    QVERIFY(text.out.contains(u"fused attention rate"_s)); // a term's source
    QVERIFY(!plan(base).out.contains(u"term by term"_s));
    const auto run = plan(base + QStringList { u"--json"_s });
    QCOMPARE(run.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(run.out.toUtf8()).object();
    const QJsonObject terms = j.value("step_terms"_L1).toObject();
    const QString chosen = j.value("chosen"_L1).toString();
    QVERIFY(!chosen.isEmpty());
    QCOMPARE(terms.value("choice"_L1).toString(), chosen);
    double chosenStep = 0;
    for (const QJsonValue c : j.value("candidates"_L1).toArray())
        if (c.toObject().value("choice"_L1).toString() == chosen)
            chosenStep = c.toObject().value("step_ms"_L1).toDouble();
    QVERIFY(chosenStep > 0);
    QCOMPARE(terms.value("step_ms"_L1).toDouble(), chosenStep);
    const QJsonObject slowest = terms.value("ranks"_L1).toArray().at(0).toObject();
    double sum = 0;
    for (const QJsonValue t : slowest.value("terms"_L1).toArray()) {
        QVERIFY(!t.toObject().value("source"_L1).toString().isEmpty());
        sum += t.toObject().value("ms"_L1).toDouble();
    }
    QVERIFY2(std::abs(sum - slowest.value("step_ms"_L1).toDouble()) < 1e-6 * sum,
        qPrintable(QString::number(sum)));
}

void TestCliPlan::refusals_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("says");
    QTest::newRow("no rates") << (kMoonlight + QStringList { u"--target-gb"_s, u"32"_s })
                              << u"--rates FILE|NAME is needed"_s;
    QTest::newRow("unknown shipped name") << (kMoonlight + QStringList { u"--rates"_s, u"h300-bf16"_s })
                                          << u"'h300-bf16' is neither a file nor a record shipped with the "
                                             "program (h100-bf16-PROVISIONAL, h100-bf16, h200-bf16)"_s;
    QTest::newRow("no such file") << (kMoonlight + QStringList { u"--rates"_s, u"/nonexistent/rates.json"_s })
                                  << u"--rates: file: cannot read"_s;
    QTest::newRow("not a record") << (kMoonlight
        + QStringList { u"--rates"_s,
            QStringLiteral(RS_SOURCE_DIR "/resources/presets/moonlight-mla-moe.json") })
                                  << u"--rates: kind: missing"_s;
    QTest::newRow("bad target") << (kMoonlight
        + QStringList { u"--rates"_s, kRates, u"--target-gb"_s, u"-3"_s })
                                << u"--target-gb"_s;
    QTest::newRow("bad confirm") << (kMoonlight
        + QStringList { u"--rates"_s, kRates, u"--confirm"_s, u"none"_s })
                                 << u"--confirm"_s;
    QTest::newRow("bad control step")
        << (kMoonlight + QStringList { u"--rates"_s, kRates, u"--control-ms"_s, u"0"_s })
        << u"--control-ms: '0' is not a step time (a positive number of milliseconds)"_s;
}

void TestCliPlan::refusals()
{
    QFETCH(QStringList, args);
    QFETCH(QString, says);
    const auto run = plan(args);
    QCOMPARE(run.code, 2);
    QVERIFY2(run.err.contains(says), qPrintable(run.err));
    QVERIFY(run.out.isEmpty());
}

void TestCliPlan::confirmWithTheRealWorker()
{
#ifndef RS_REAL_WORKER
    QSKIP("this build has no recompute-bench");
#else
    QTemporaryDir dir;
    const QString rates = dir.filePath(u"cpu.json"_s);
    const auto cal = rs::test::runToEnd(QStringLiteral(RS_REAL_WORKER),
        { u"--calibrate"_s, u"--device"_s, u"cpu"_s, u"--dtype"_s, u"fp32"_s, u"--quick"_s, u"--out"_s,
            rates },
        120000);
    QVERIFY2(cal.code == 0, qPrintable(cal.err));
    const QJsonObject recipe { { u"name"_s, u"plan-tiny"_s }, { u"num_layers"_s, 2 },
        { u"hidden_size"_s, 64 }, { u"num_attention_heads"_s, 4 }, { u"seq_length"_s, 32 },
        { u"micro_batch_size"_s, 1 }, { u"global_batch_size"_s, 1 }, { u"vocab_size"_s, 256 } };
    const QString path = dir.filePath(u"tiny.json"_s);
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(recipe).toJson());
    f.close();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"RS_WORKER"_s, QStringLiteral(RS_REAL_WORKER));
    const auto run = plan({ path, u"--rates"_s, rates, u"--target-gb"_s, u"100"_s, u"--confirm"_s, u"1"_s,
                              u"--db"_s, dir.filePath(u"plan.sqlite"_s), u"--device"_s, u"cpu"_s,
                              u"--warmup"_s, u"1"_s, u"--iters"_s, u"2"_s },
        env);
    QVERIFY2(run.code == 0, qPrintable(run.out + run.err));
    QVERIFY(run.out.contains(u"prediction against measurement"_s));
    // The [] control and the chosen one, each with a measured step (a number, not "-").
    const auto lines = run.out.split(u'\n');
    const qsizetype at = lines.indexOf(QRegularExpression(u"^prediction against measurement.*"_s));
    QVERIFY(at >= 0);
    QVERIFY(lines.size() > at + 3);
    // choice, est. GB, meas. GB, predicted ms, measured ms, ...
    for (int i = 2; i <= 3; ++i) {
        const QStringList cols = lines[at + i].simplified().split(u' ');
        QVERIFY2(cols.size() >= 5, qPrintable(lines[at + i]));
        bool ok = false, okPeak = false;
        QVERIFY2(cols[4].toDouble(&ok) > 0 && ok, qPrintable(lines[at + i]));
        QVERIFY2(cols[2].toDouble(&okPeak) > 0 && okPeak, qPrintable(lines[at + i]));
    }
#endif
}

// Nothing fits with the margin but some choices are estimated inside it: the plan names them and the
// cheapest, for --confirm to measure (the H100 sweep's dense local job at 12 GB: full block 7, 11.762 GB
// estimated, 11.778 real, which fits). With nothing inside the margin either, it says nothing fits.
void TestCliPlan::withinTheMarginOnly()
{
    QFile log(
        QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-dlocal/a/time-dlocal-none.log"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QStringList job
        = QString::fromUtf8(log.readLine()).remove(u"# command: "_s).simplified().split(u' ');
    const QStringList args { u"--rates"_s, u"h100-bf16"_s, u"--target-gb"_s };
    const auto margin = plan(args + QStringList { u"12"_s, u"--mlm-args"_s } + job);
    QCOMPARE(margin.code, 1);
    QVERIFY2(
        margin.out.contains(u"nothing fits with the margin; 3 within the estimate's error of the target, the "
                            "cheapest predicted full:block:7"_s),
        qPrintable(margin.out));
    const auto none = plan(args + QStringList { u"5"_s, u"--mlm-args"_s } + job);
    QCOMPARE(none.code, 1);
    QVERIFY2(none.out.contains(u"nothing fits the target on every rank"_s), qPrintable(none.out));
}

QTEST_GUILESS_MAIN(TestCliPlan)
#include "tst_cli_plan.moc"
