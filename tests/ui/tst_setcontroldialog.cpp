// SPDX-License-Identifier: Apache-2.0
// The GUI's side of "imports compare themselves": several logs imported at once (importLogsWithProgress,
// what File > Import training logs… runs, with its QProgressDialog) form one comparison with no manual step,
// and "Set as control…" (SetControlDialog) gives any run a control, says what kind of control it is and
// whether the runs are matched with it.
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QTemporaryDir>
#include <QTest>
#include <QWidget>

#include "logimportdialog.h"
#include "setcontroldialog.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs;

namespace {
QStringList folderLogs(const QString& folder)
{
    QStringList out;
    const QDir dir(QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/") + folder);
    for (const QString& name : dir.entryList({ u"*.log"_s }, QDir::Files, QDir::Name))
        out << dir.filePath(name);
    return out;
}
} // namespace

class TestSetControlDialog : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QVERIFY(m_store.open(m_dir.filePath(u"ui.sqlite"_s)));
        QWidget window; // the progress dialog's parent, as the main window is
        const auto summary
            = ui::importLogsWithProgress(&m_store, folderLogs(u"mlm-tp2pp2-comparison"_s), &window);
        QVERIFY2(summary.errors.isEmpty(), qPrintable(summary.errors.join(u'\n')));
        QCOMPARE(summary.runIds.size(), 5);
        QCOMPARE(summary.linked, 4);
        QVERIFY(!summary.cancelled);
        for (qint64 id : summary.runIds) {
            const auto r = m_store.run(id);
            if (r->isNoRecompute())
                m_none = id;
            else if (r->moduleSetLabel() == u"core_attn")
                m_core = id;
            else if (r->moduleSetLabel().startsWith(u"full"_s))
                m_full = id;
        }
        QVERIFY(m_none && m_core && m_full);
        QCOMPARE(m_store.runsControlledBy(m_none).size(), 4);
        // Importing the same files again stores nothing new.
        const auto again
            = ui::importLogsWithProgress(&m_store, folderLogs(u"mlm-tp2pp2-comparison"_s), nullptr);
        QCOMPARE(again.runIds.size(), 5);
        QCOMPARE(m_store.runCount(), 5);
    }

    void offersMatchedRunsWithoutRecomputeFirst()
    {
        ui::SetControlDialog dialog(&m_store, { m_full });
        QCOMPARE(dialog.choices()->count(), 5); // "(no control)" and the four other runs
        QCOMPARE(dialog.choices()->itemData(1).toLongLong(), m_none);
        QCOMPARE(dialog.chosenControl(), m_none); // the current link
        QVERIFY2(dialog.verdict()->text().contains(u"Megatron's recompute_granularity None"_s),
            qPrintable(dialog.verdict()->text()));
        QVERIFY(dialog.verdict()->text().contains(u"matched"_s));
    }

    void setsAnyRunAsControl()
    {
        ui::SetControlDialog dialog(&m_store, { m_full });
        dialog.setChosenControl(m_core);
        QVERIFY(dialog.verdict()->text().contains(u"recompute core_attn, chosen as the control"_s));
        QString error;
        QVERIFY2(dialog.apply(&error), qPrintable(error));
        QCOMPARE(m_store.run(m_full)->controlRunId.value_or(0), m_core);
        // A loop is refused and nothing changes.
        ui::SetControlDialog loop(&m_store, { m_core });
        loop.setChosenControl(m_full);
        QVERIFY(!loop.apply(&error));
        QVERIFY(error.contains(u"loop"_s));
        QCOMPARE(m_store.run(m_core)->controlRunId.value_or(0), m_none);
        // "(no control)"
        ui::SetControlDialog none(&m_store, { m_full });
        none.setChosenControl(0);
        QVERIFY(none.apply(&error));
        QVERIFY(!m_store.run(m_full)->controlRunId);
    }

    void unmatchedControlIsSaid()
    {
        QVERIFY(ui::importLogsWithProgress(&m_store,
            { QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/mlm_full_uniform_old.log") }, nullptr)
                    .errors.isEmpty());
        const auto other = m_store.listRuns().first().id;
        ui::SetControlDialog dialog(&m_store, { m_full });
        const int i = dialog.choices()->findData(other);
        QVERIFY(i > 0);
        QVERIFY(dialog.choices()->itemText(i).contains(u"(not matched)"_s));
        QCOMPARE(i, dialog.choices()->count() - 1); // unmatched last
        dialog.setChosenControl(other);
        QVERIFY2(dialog.verdict()->text().contains(u"NOT MATCHED"_s), qPrintable(dialog.verdict()->text()));
    }

private:
    QTemporaryDir m_dir;
    storage::Store m_store;
    qint64 m_none = 0, m_core = 0, m_full = 0;
};

QTEST_MAIN(TestSetControlDialog)
#include "tst_setcontroldialog.moc"
