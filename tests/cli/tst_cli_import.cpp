// SPDX-License-Identifier: Apache-2.0
// `recompute import`, `link`, `report` and `export` end to end: a folder of logs of one shape imports as one
// comparison with no manual step and the report shows its deltas; the user can give any run a control;
// progress goes to stderr; and what `export` and `report` write loads in pandas (Debian's python3-pandas,
// through tests/cli/check_export_pandas.py) with its dtypes and values as stored.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "storage/store.h"
#include "tests/cli_process.h"

using namespace Qt::StringLiterals;
using rs::test::runToEnd;

namespace {
const QString kFolder = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/mlm-tp2pp2-comparison");

rs::test::CliRun recompute(const QStringList& args)
{
    return runToEnd(QStringLiteral(RS_RECOMPUTE_EXE), args, 120000);
}

QStringList folderLogs()
{
    QStringList out;
    for (const QString& name : QDir(kFolder).entryList({ u"*.log"_s }, QDir::Files, QDir::Name))
        out << kFolder + u'/' + name;
    return out;
}

// Debian's python3 (the one python3-pandas installs into); $RS_PYTHON overrides.
QString python()
{
    const QString env = qEnvironmentVariable("RS_PYTHON");
    if (!env.isEmpty())
        return env;
    if (QFile::exists(u"/usr/bin/python3"_s))
        return u"/usr/bin/python3"_s;
    return QStandardPaths::findExecutable(u"python3"_s);
}
} // namespace

class TestCliImport : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(u"cli.sqlite"_s);
        // Several files at once, in reverse: three come before their control and are linked when it comes.
        QStringList logs = folderLogs();
        std::reverse(logs.begin(), logs.end());
        const auto r = recompute(QStringList { u"import"_s, u"--db"_s, m_db, u"--no-progress"_s } + logs);
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        QVERIFY2(r.out.contains(u"the control of 3 run(s) of the same shape"_s), qPrintable(r.out));
        QVERIFY(r.err.isEmpty());
        QVERIFY(m_store.open(m_db));
        for (const auto& run : m_store.listRuns()) {
            if (run.isNoRecompute())
                m_control = run.id;
        }
        QVERIFY(m_control > 0);
    }

    void reportShowsTheDeltas()
    {
        const auto r = recompute({ u"report"_s, u"--db"_s, m_db, u"--format"_s, u"json"_s, u"--strict"_s });
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QJsonArray tables = QJsonDocument::fromJson(r.out.toUtf8()).array();
        QCOMPARE(tables.size(), 1);
        QCOMPARE(tables[0][u"control_run_id"_s].toInteger(), m_control);
        QCOMPARE(tables[0][u"control_kind"_s].toString(), u"megatron-none"_s);
        const QJsonArray rows = tables[0][u"rows"_s].toArray();
        QCOMPARE(rows.size(), 5);
        int deltas = 0;
        for (const auto& row : rows) {
            if (row[u"outcome"_s] == u"pass"_s && !row[u"is_control"_s].toBool()) {
                QVERIFY(row[u"allocated_vs_control_pct"_s].isDouble());
                QVERIFY(row[u"time_vs_control_pct"_s].isDouble());
                ++deltas;
            }
        }
        QCOMPARE(deltas, 3);
        const auto md = recompute({ u"report"_s, u"--db"_s, m_db });
        QVERIFY(md.out.contains(u"| Allocated vs None | Time vs None (HL) |"_s));
        QVERIFY(md.out.contains(u"Megatron's recompute_granularity None, not the explicit []"_s));
    }

    void linkGivesAnyRunAControl()
    {
        const auto runs = m_store.listRuns();
        qint64 core = 0, full = 0;
        for (const auto& run : runs) {
            if (run.moduleSetLabel() == u"core_attn")
                core = run.id;
            if (run.moduleSetLabel().startsWith(u"full"_s))
                full = run.id;
        }
        QVERIFY(core && full);
        const QString id = QString::number(full), control = QString::number(core);
        auto r = recompute({ u"link"_s, u"--db"_s, m_db, id, u"--control"_s, control });
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(u"run %1: control run %2 (recompute core_attn, chosen as the control)"_s.arg(
                     id, control)),
            qPrintable(r.out));
        auto report = recompute({ u"report"_s, u"--db"_s, m_db, u"--control"_s, control });
        QVERIFY(report.out.contains(u"Allocated vs control"_s));
        r = recompute({ u"link"_s, u"--db"_s, m_db, control, u"--control"_s, id });
        QCOMPARE(r.code, 2); // a loop
        QVERIFY(r.err.contains(u"loop"_s));
        r = recompute({ u"link"_s, u"--db"_s, m_db, id, u"--control"_s, id });
        QCOMPARE(r.code, 2);
        r = recompute({ u"link"_s, u"--db"_s, m_db, id, u"--control"_s, u"987"_s });
        QCOMPARE(r.code, 2);
        r = recompute({ u"link"_s, u"--db"_s, m_db, id });
        QCOMPARE(r.code, 2);
        r = recompute({ u"link"_s, u"--db"_s, m_db, id, u"--control"_s, u"none"_s });
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = recompute({ u"link"_s, u"--db"_s, m_db, u"--auto"_s, id });
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(u"control run %1"_s.arg(m_control)), qPrintable(r.out));
    }

    void importOptions()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"options.sqlite"_s);
        const QString log = kFolder + u"/selective_core_attn.log"_s;
        auto r = recompute({ u"import"_s, u"--db"_s, db, u"--control"_s, u"5"_s, log });
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(u"--control: run 5 is not in"_s), qPrintable(r.err));
        r = recompute({ u"import"_s, u"--db"_s, db, u"--progress"_s, log, kFolder + u"/none.log"_s });
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(u"[2/2]"_s) && r.err.contains(u"100%"_s), qPrintable(r.err));
        QVERIFY(r.out.contains(u"the control of 1 run(s)"_s));
        r = recompute({ u"import"_s, u"--db"_s, db, u"--control"_s, u"1"_s, u"--no-link"_s, log });
        QCOMPARE(r.code, 2);
        // Two runs in one file: refused, named, nothing stored.
        QByteArray two;
        const QStringList parts { kFolder + u"/none.log"_s, kFolder + u"/full_uniform_1.log"_s };
        for (const QString& f : parts) {
            QFile in(f);
            QVERIFY(in.open(QIODevice::ReadOnly));
            two += in.readAll();
        }
        const QString twoPath = dir.filePath(u"two.log"_s);
        QFile out(twoPath);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(two);
        out.close();
        r = recompute({ u"import"_s, u"--db"_s, db, twoPath });
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(u"holds two runs"_s), qPrintable(r.err));
    }

    // Issue 30: a run the store does not have is a refusal that writes nothing (the last export stays), and
    // a symbolic link at an export's name is replaced, never written through.
    void exportRefusesMissingRunsAndLinks()
    {
        QTemporaryDir out;
        QCOMPARE(recompute({ u"export"_s, u"--db"_s, m_db, u"--out"_s, out.path() }).code, 0);
        QFile before(out.filePath(u"runs.csv"_s));
        QVERIFY(before.open(QIODevice::ReadOnly));
        const QByteArray kept = before.readAll();
        before.close();
        QVERIFY(!kept.isEmpty());
        const auto missing = recompute({ u"export"_s, u"--db"_s, m_db, u"--out"_s, out.path(), u"999"_s });
        QCOMPARE(missing.code, 2);
        QVERIFY2(missing.err.contains(u"run 999 is not in"_s), qPrintable(missing.err));
        QVERIFY(before.open(QIODevice::ReadOnly));
        QCOMPARE(before.readAll(), kept);
        before.close();

        QTemporaryDir elsewhere;
        const QString victim = elsewhere.filePath(u"victim.txt"_s);
        {
            QFile v(victim);
            QVERIFY(v.open(QIODevice::WriteOnly));
            v.write("keep me");
        }
        QVERIFY(QFile::remove(out.filePath(u"runs.csv"_s)));
        QVERIFY(QFile::link(victim, out.filePath(u"runs.csv"_s)));
        QVERIFY(QFile::remove(out.filePath(u"runs.json"_s)));
        QVERIFY(QFile::link(elsewhere.filePath(u"dangling.json"_s), out.filePath(u"runs.json"_s)));
        QCOMPARE(recompute({ u"export"_s, u"--db"_s, m_db, u"--out"_s, out.path() }).code, 0);
        QFile v(victim);
        QVERIFY(v.open(QIODevice::ReadOnly));
        QCOMPARE(v.readAll(), QByteArray("keep me"));
        QVERIFY(!QFileInfo(out.filePath(u"runs.csv"_s)).isSymLink());
        QVERIFY(!QFileInfo::exists(elsewhere.filePath(u"dangling.json"_s)));
    }

    void exportsReadInPandasAsTheyAre()
    {
        const QString py = python();
        if (py.isEmpty() || rs::test::runToEnd(py, { u"-c"_s, u"import pandas"_s }, 60000).code != 0)
            QSKIP("python3-pandas is not installed (scripts/setup.sh installs it)");
        QTemporaryDir out;
        auto r = recompute({ u"export"_s, u"--db"_s, m_db, u"--out"_s, out.path() });
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(r.out.split(u'\n', Qt::SkipEmptyParts).size(), 15);
        const QString csv = out.filePath(u"report.csv"_s), json = out.filePath(u"report.json"_s);
        QCOMPARE(
            recompute({ u"report"_s, u"--db"_s, m_db, u"--format"_s, u"csv"_s, u"--out"_s, csv }).code, 0);
        QCOMPARE(
            recompute({ u"report"_s, u"--db"_s, m_db, u"--format"_s, u"json"_s, u"--out"_s, json }).code, 0);

        // What the store holds, for the script to find in pandas.
        QJsonArray runs, report;
        for (const auto& run : m_store.listRuns()) {
            QJsonObject o { { u"id"_s, run.id }, { u"num_layers"_s, *run.numLayers },
                { u"sequence_parallel"_s, *run.sequenceParallel }, { u"outcome"_s, run.outcome },
                { u"recompute_modules"_s,
                    run.recomputeModules ? QJsonValue(QJsonArray::fromStringList(*run.recomputeModules))
                                         : QJsonValue() },
                { u"peak_allocated_bytes"_s, *run.peakAllocated } };
            if (run.steadyStepMs)
                o.insert(u"steady_step_ms"_s, *run.steadyStepMs);
            o.insert(u"failure_iteration"_s,
                run.failureIteration ? QJsonValue(*run.failureIteration) : QJsonValue());
            o.insert(u"loss_finite"_s, run.lossFinite ? QJsonValue(*run.lossFinite) : QJsonValue());
            runs.append(o);
            report.append(
                QJsonObject { { u"run_id"_s, run.id }, { u"peak_allocated_bytes"_s, *run.peakAllocated },
                    { u"is_control"_s, run.id == m_control } });
        }
        const QJsonObject expected { { u"runs"_s, runs }, { u"report"_s, report } };
        const QString expectedPath = out.filePath(u"expected.json"_s);
        QFile e(expectedPath);
        QVERIFY(e.open(QIODevice::WriteOnly));
        e.write(QJsonDocument(expected).toJson());
        e.close();
        // The shortest round-trip text is there to be seen: 424.9, not 424.89999999999998.
        QFile runsCsv(out.filePath(u"runs.csv"_s));
        QVERIFY(runsCsv.open(QIODevice::ReadOnly));
        const QByteArray text = runsCsv.readAll();
        QVERIFY(!text.contains("99999999"));
        QVERIFY(text.contains(",true,") && !text.contains(".0,"));

        const auto check = runToEnd(py,
            { QStringLiteral(RS_SOURCE_DIR "/tests/cli/check_export_pandas.py"), out.path(), csv, json,
                expectedPath },
            120000);
        QVERIFY2(check.code == 0, qPrintable(check.out + check.err));
        QVERIFY(check.out.contains(u"read as they are"_s));
    }

private:
    QTemporaryDir m_dir;
    QString m_db;
    rs::storage::Store m_store;
    qint64 m_control = 0;
};

QTEST_GUILESS_MAIN(TestCliImport)
#include "tst_cli_import.moc"
