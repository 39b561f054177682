// SPDX-License-Identifier: Apache-2.0
// `recompute advise` on the guide's sample data: the product must reach the guide's own conclusions
// (Moonlight 16B at 36 GB: moe_act; Nemotron 3 Nano at 65 GB: moe, at 64 GB: moe, layernorm; OOM rows are
// not passes), exit 1 when nothing fits, refuse an unmatched run, and exit 2 on unusable input.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "storage/store.h"
#include "tests/cli_process.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {

using Cli = rs::test::CliRun;

Cli recompute(const QStringList& args)
{
    return rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE_EXE), QStringList { u"advise"_s } + args, 30000);
}

} // namespace

class TestCliAdvise : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_db;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(u"guide.sqlite"_s);
        Store store;
        QString error;
        QVERIFY2(store.open(m_db, &error), qPrintable(error));
        QCOMPARE(store.seedGuideSample(
                     QStringLiteral(RS_SOURCE_DIR "/resources/sample/guide-measurements.json"), &error),
            12);
        // Runs 1-6: Moonlight 16B (control 1); 7-12: Nemotron 3 Nano (control 7).
        QCOMPARE(store.run(1)->model, u"Moonlight 16B"_s);
        QVERIFY(store.run(1)->isExplicitControl());
        QVERIFY(store.run(7)->isExplicitControl());
    }

    void guideConclusions_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("chosen"); // module set; "" when nothing fits
        QTest::addColumn<QString>("closest"); // module set when nothing fits
        QTest::addColumn<QStringList>("verdicts"); // "module set=verdict"
        QTest::addColumn<QString>("summary");

        QTest::newRow("Moonlight 36 GB: moe_act")
            << QStringList { u"--control"_s, u"1"_s, u"--target-gb"_s, u"36.0"_s } << 0 << u"moe_act"_s
            << QString()
            << QStringList { u"[]=over-target"_s, u"core_attn=over-target"_s, u"mla_up_proj=slower"_s,
                   u"mla_up_proj, mlp=slower"_s, u"moe_act=chosen"_s, u"layernorm, moe_act=slower"_s }
            << u"use moe_act: 35.941 GB"_s;
        QTest::newRow("Moonlight by recipe name")
            << QStringList { u"--recipe-name"_s, u"moonlight"_s, u"--target-gb"_s, u"36"_s } << 0
            << u"moe_act"_s << QString() << QStringList { u"mla_up_proj=slower"_s }
            << u"at 466.26 ms per step"_s;
        QTest::newRow("Nemotron 65 GB: moe")
            << QStringList { u"--recipe-name"_s, u"Nemotron 3 Nano"_s, u"--target-gb"_s, u"65"_s } << 0
            << u"moe"_s << QString()
            << QStringList { u"[]=not-passed"_s, u"core_attn=not-passed"_s, u"moe_act=not-passed"_s,
                   u"layernorm, moe_act=not-passed"_s, u"moe=chosen"_s, u"moe, layernorm=slower"_s }
            << u"use moe: 64.653 GB on rank 0"_s;
        QTest::newRow("Nemotron 64 GB: moe, layernorm")
            << QStringList { u"--control"_s, u"7"_s, u"--target-gb"_s, u"64"_s } << 0 << u"moe, layernorm"_s
            << QString() << QStringList { u"moe=over-target"_s, u"moe_act=not-passed"_s }
            << u"use moe, layernorm: 63.639 GB on rank 0"_s;
        QTest::newRow("Nemotron 60 GB: nothing fits")
            << QStringList { u"--control"_s, u"7"_s, u"--target-gb"_s, u"60"_s } << 1 << QString()
            << u"moe, layernorm"_s << QStringList { u"moe=over-target"_s, u"moe, layernorm=over-target"_s }
            << u"nothing fits the 60.000 GB target; closest: moe, layernorm (63.639 GB on rank 0, 3.639 GB over)"_s;
        QTest::newRow("a candidate named as --control: its control's comparison")
            << QStringList { u"--control"_s, u"5"_s, u"--target-gb"_s, u"36"_s } << 0 << u"moe_act"_s
            << QString() << QStringList { u"[]=over-target"_s } << u"use moe_act"_s;
        QTest::newRow("no selection: the newest comparison (Nemotron)") << QStringList { u"--target-gb"_s,
            u"65"_s } << 0 << u"moe"_s << QString() << QStringList {} << u"use moe"_s;
    }

    void guideConclusions()
    {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, chosen);
        QFETCH(QString, closest);
        QFETCH(QStringList, verdicts);
        QFETCH(QString, summary);

        const Cli json = recompute(QStringList { u"--db"_s, m_db, u"--format"_s, u"json"_s } + args);
        QVERIFY2(json.code == code, qPrintable(json.out + json.err));
        const QJsonObject o = QJsonDocument::fromJson(json.out.toUtf8()).object();
        QCOMPARE(o.value(u"fits"_s).toBool(), !chosen.isEmpty());
        QCOMPARE(o.value(u"chosen"_s).toObject().value(u"module_set"_s).toString(), chosen);
        QCOMPARE(o.value(u"closest"_s).toObject().value(u"module_set"_s).toString(), closest);
        QVERIFY2(
            o.value(u"summary"_s).toString().contains(summary), qPrintable(o.value(u"summary"_s).toString()));
        QHash<QString, QString> verdictOf;
        for (const QJsonValue& c : o.value(u"candidates"_s).toArray()) {
            const QJsonObject co = c.toObject();
            verdictOf.insert(co.value(u"module_set"_s).toString(), co.value(u"verdict"_s).toString());
            QVERIFY(!co.value(u"reasons"_s).toArray().isEmpty());
        }
        QCOMPARE(verdictOf.size(), 6);
        for (const QString& v : verdicts) {
            const auto parts = v.split(u'=');
            QCOMPARE(verdictOf.value(parts[0]), parts[1]);
        }

        // The text form says the same, with every candidate on a line.
        const Cli text = recompute(QStringList { u"--db"_s, m_db } + args);
        QCOMPARE(text.code, code);
        QVERIFY2(text.out.contains(summary), qPrintable(text.out));
        QCOMPARE(text.out.count(u"\n  run "_s), 6);
    }

    void textExplainsEachRejection()
    {
        const Cli c = recompute({ u"--db"_s, m_db, u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s });
        QCOMPARE(c.code, 0);
        QVERIFY2(c.out.contains(u"Megatron Bridge overrides: model.recompute_granularity=selective "
                                "model.recompute_modules=[moe_act]"_s),
            qPrintable(c.out));
        QVERIFY(c.out.contains(u"over the 36.000 GB target on max over ranks by 0.618 GB (36.618 GB)"_s));
        QVERIFY(
            c.out.contains(u"fits (35.902 GB on max over ranks, 0.098 GB under the target) but slower than "
                           "moe_act by 3.14% (480.89 vs 466.26 ms)"_s));
        const Cli n = recompute({ u"--db"_s, m_db, u"--control"_s, u"7"_s, u"--target-gb"_s, u"65"_s });
        QVERIFY(n.out.contains(u"did not pass: oom in forward at iteration 2"_s));
        QVERIFY(n.out.contains(u"did not pass: oom at iteration 1"_s));
        QVERIFY(n.out.contains(u"note: the peak of moe is known for rank(s) 0 of 16 only"_s));
        const Cli candidate
            = recompute({ u"--db"_s, m_db, u"--control"_s, u"5"_s, u"--target-gb"_s, u"36"_s });
        QVERIFY2(candidate.err.contains(u"run 5 is a candidate linked to the [] control run 1"_s),
            qPrintable(candidate.err));
        QVERIFY(candidate.out.startsWith(u"Moonlight 16B: control run 1 ([]), 6 candidate(s)"_s));
        // Without a selection the newest comparison is used, and the other one is named.
        const Cli d = recompute({ u"--db"_s, m_db, u"--target-gb"_s, u"65"_s });
        QVERIFY2(d.err.contains(u"control run 7); other controls: 1 (Moonlight 16B)"_s), qPrintable(d.err));
    }

    // The guide's step 3 on the control's stored attribution: the line, and the label to try first.
    void attributesTheControlsPeak()
    {
        const QString db = m_dir.filePath(u"attributed.sqlite"_s);
        Store store;
        QString error;
        QVERIFY2(store.open(db, &error), qPrintable(error));
        QCOMPARE(store.seedGuideSample(
                     QStringLiteral(RS_SOURCE_DIR "/resources/sample/guide-measurements.json"), &error),
            12);
        PeakAttributionRow row;
        row.runId = 1;
        row.phase = u"forward"_s;
        row.peakAllocated = 36'618'000'000;
        row.attributed = 36'618'000'000;
        row.categories = { { u"parameters"_s, 6'000'000'000 }, { u"gradient_buffer"_s, 6'000'000'000 },
            { u"optimizer_states"_s, 12'000'000'000 }, { u"activations"_s, 12'618'000'000 } };
        row.activations = { { 0, u"moe_act"_s, 5'000'000'000 }, { 1, u"moe_act"_s, 4'000'000'000 },
            { 0, u"core_attn"_s, 3'618'000'000 } };
        QVERIFY(store.insertPeakAttribution(row));
        store.close();
        const Cli c = recompute({ u"--db"_s, db, u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s });
        QCOMPARE(c.code, 0);
        QVERIFY2(c.out.contains(u"  the peak (forward, 36.618 GB) is held by: activations 12.618 GB (largest "
                                "region moe_act: 9.000 GB), optimizer states 12.000 GB, parameters 6.000 GB, "
                                "gradient buffer 6.000 GB; try moe_act first: its region holds the most "
                                "activations\n"_s),
            qPrintable(c.out));
        const Cli j = recompute(
            { u"--db"_s, db, u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s, u"--format"_s, u"json"_s });
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o.value(u"attribution_label"_s).toString(), u"moe_act"_s);
        QVERIFY(o.value(u"peak_attribution"_s).toString().startsWith(u"the peak (forward"_s));
        // Without a stored attribution, no line.
        const Cli plain = recompute({ u"--db"_s, m_db, u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s });
        QVERIFY(!plain.out.contains(u"is held by"_s));
    }

    void unmatchedRunIsNotCompared()
    {
        // A faster, smaller run at another sequence length, linked to the Moonlight control: the store's
        // match check refuses it and the advisor says why.
        QTemporaryDir dir;
        const QString db = dir.filePath(u"unmatched.sqlite"_s);
        QVERIFY(QFile::copy(m_db, db));
        {
            Store store;
            QVERIFY(store.open(db));
            RunRecord r = *store.run(2);
            r.seqLength = 8192;
            r.peakAllocated = qint64(30e9);
            r.steadyStepMs = 300.0;
            const qint64 id = store.insertRun(r);
            QVERIFY(id > 0);
            QVERIFY(store.setControl(id, 1));
        }
        const Cli c = recompute(
            { u"--db"_s, db, u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s, u"--format"_s, u"json"_s });
        QCOMPARE(c.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(c.out.toUtf8()).object();
        QCOMPARE(o.value(u"chosen"_s).toObject().value(u"module_set"_s).toString(), u"moe_act"_s);
        const QJsonArray candidates = o.value(u"candidates"_s).toArray();
        QCOMPARE(candidates.size(), 7);
        const QJsonObject last = candidates.last().toObject();
        QCOMPARE(last.value(u"verdict"_s).toString(), u"not-matched"_s);
        QCOMPARE(last.value(u"matched"_s).toBool(), false);
        QVERIFY2(last.value(u"reasons"_s).toArray()[0].toString().contains(u"seq_length: 8192 vs 4096"_s),
            qPrintable(last.value(u"reasons"_s).toArray()[0].toString()));
    }

    // Stored steady iterations decide as in the sweep: mla_up_proj has the lowest stored step time, but where
    // its iterations overlap moe_act's the difference is not significant and moe_act, the narrower
    // boundary, is chosen (the guide's tie rule); where they are clearly apart mla_up_proj stays chosen.
    void differenceInsideTheNoiseIsNotChosenOn_data()
    {
        QTest::addColumn<double>("mlaMs");
        QTest::addColumn<double>("spread");
        QTest::addColumn<QString>("chosen");
        QTest::addColumn<bool>("moved");
        QTest::newRow("overlapping: moe_act") << 462.0 << 15.0 << u"moe_act"_s << true;
        QTest::newRow("apart: mla_up_proj") << 400.0 << 2.0 << u"mla_up_proj"_s << false;
    }
    void differenceInsideTheNoiseIsNotChosenOn()
    {
        QFETCH(double, mlaMs);
        QFETCH(double, spread);
        QFETCH(QString, chosen);
        QFETCH(bool, moved);
        QTemporaryDir dir;
        const QString db = dir.filePath(u"noise.sqlite"_s);
        QVERIFY(QFile::copy(m_db, db));
        {
            Store store;
            QVERIFY(store.open(db));
            // Run 3: mla_up_proj, run 5: moe_act (both fit 36 GB); 12 steady iterations each, alternating
            // around their medians.
            RunRecord mla = *store.run(3);
            QCOMPARE(mla.moduleSetLabel(), u"mla_up_proj"_s);
            QCOMPARE(store.run(5)->moduleSetLabel(), u"moe_act"_s);
            mla.steadyStepMs = mlaMs;
            QVERIFY(store.updateRun(mla));
            const std::pair<qint64, double> runs[] = { { 3, mlaMs }, { 5, 466.0 } };
            for (const auto& [id, ms] : runs) {
                for (int i = 1; i <= 12; ++i) {
                    IterationRow row;
                    row.runId = id;
                    row.iteration = i;
                    row.phase = u"steady"_s;
                    row.stepMs = ms + spread * ((i % 4) - 1.5) / 1.5;
                    QVERIFY(store.insertIteration(row));
                }
            }
        }
        for (const QString& format : { u"text"_s, u"json"_s }) {
            const Cli c = recompute(
                { u"--db"_s, db, u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s, u"--format"_s, format });
            QVERIFY2(c.code == 0, qPrintable(c.out + c.err));
            const QString note = u"the lowest single-run step time, mla_up_proj, is not significantly faster "
                                 "than moe_act, the narrower boundary"_s;
            if (format == u"text"_s) {
                QVERIFY2(
                    c.out.contains(u"\nuse "_s + chosen + u": "_s) || c.out.startsWith(u"use "_s + chosen),
                    qPrintable(c.out));
                QCOMPARE(c.out.contains(note), moved);
                QVERIFY2(c.out.contains(u"not significant"_s) == moved, qPrintable(c.out));
            } else {
                const QJsonObject o = QJsonDocument::fromJson(c.out.toUtf8()).object();
                QCOMPARE(o.value(u"chosen"_s).toObject().value(u"module_set"_s).toString(), chosen);
                bool noted = false;
                for (const QJsonValue& n : o.value(u"notes"_s).toArray())
                    noted = noted || n.toString().contains(note);
                QCOMPARE(noted, moved);
            }
        }
    }

    void unusableInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("zero target") << QStringList { u"--control"_s, u"1"_s, u"--target-gb"_s, u"0"_s }
                                     << u"--target-gb: '0' is not a per-rank memory target"_s;
        QTest::newRow("text target") << QStringList { u"--target-gb"_s, u"lots"_s }
                                     << u"--target-gb: 'lots'"_s;
        QTest::newRow("no target") << QStringList { u"--control"_s, u"1"_s } << u"--target-gb is needed"_s;
        QTest::newRow("missing control") << QStringList { u"--control"_s, u"99"_s, u"--target-gb"_s, u"36"_s }
                                         << u"--control: run 99 is not in"_s;
        QTest::newRow("bad control") << QStringList { u"--control"_s, u"x"_s, u"--target-gb"_s, u"36"_s }
                                     << u"--control: 'x' is not a run id"_s;
        QTest::newRow("both selections") << QStringList { u"--control"_s, u"1"_s, u"--recipe-name"_s, u"M"_s,
            u"--target-gb"_s, u"36"_s } << u"not both"_s;
        QTest::newRow("unknown name") << QStringList { u"--recipe-name"_s, u"Llama"_s, u"--target-gb"_s,
            u"36"_s } << u"no stored run's recipe name contains 'Llama'"_s;
        QTest::newRow("bad format") << QStringList { u"--target-gb"_s, u"36"_s, u"--format"_s, u"xml"_s }
                                    << u"--format: 'xml' is not one of text, json"_s;
        QTest::newRow("unknown option")
            << QStringList { u"--target"_s, u"36"_s } << u"unknown argument --target"_s;
    }

    void unusableInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        const Cli c = recompute(QStringList { u"--db"_s, m_db } + args);
        QCOMPARE(c.code, 2);
        QVERIFY2(c.err.contains(mentions), qPrintable(c.err));
    }

    void emptyStoreHasNothingToAdvise()
    {
        QTemporaryDir dir;
        const Cli c = recompute({ u"--db"_s, dir.filePath(u"empty.sqlite"_s), u"--target-gb"_s, u"36"_s });
        QCOMPARE(c.code, 2);
        QVERIFY2(c.err.contains(u"no matched comparison"_s), qPrintable(c.err));
    }
};

QTEST_GUILESS_MAIN(TestCliAdvise)
#include "tst_cli_advise.moc"
