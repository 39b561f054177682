// SPDX-License-Identifier: Apache-2.0
// The main window as a user meets it: it fits the screen (1366 x 768 with its frame), seeds an empty store
// with the guide's measurements, opens on a preset; a preset is an untitled document (Save asks for a
// path instead of overwriting the last file saved) and unsaved changes are asked about; what the user
// chose (window, recipe, chart axes, memory target, recent files) is there at the next start; Help has the
// guide, the measurement contract and the command line.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QCommandLinkButton>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTimer>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "editorpage.h"
#include "launchpage.h"
#include "mainwindow.h"
#include "models/runsmodel.h"
#include "presets.h"
#include "recipedocument.h"
#include "runspage.h"
#include "storage/store.h"
#include "welcomepage.h"

using namespace rs;
using namespace rs::ui;

namespace {

QByteArray readAll(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Answers the next modal dialog (a message box's button, or a file dialog's Cancel) once it is up, and
// says what it was.
struct DialogAnswer {
    QString seen; // the class of the dialog answered ("" when none came up)
    void answerNext(QMessageBox::StandardButton button)
    {
        QTimer::singleShot(0, qApp, [this, button] { poll(button, 0); });
    }
    void poll(QMessageBox::StandardButton button, int tries)
    {
        QWidget* modal = QApplication::activeModalWidget();
        if (auto* box = qobject_cast<QMessageBox*>(modal)) {
            seen = QStringLiteral("QMessageBox");
            box->button(button)->click();
        } else if (auto* files = qobject_cast<QFileDialog*>(modal)) {
            seen = QStringLiteral("QFileDialog");
            files->reject();
        } else if (tries < 100) {
            QTimer::singleShot(20, qApp, [this, button, tries] { poll(button, tries + 1); });
        }
    }
};

QAction* action(QWidget* window, const QString& name)
{
    return window->findChild<QAction*>(name);
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_settingsDir.isValid());
        // Never the user's own settings: QSettings of this process live in a temporary folder.
        QCoreApplication::setOrganizationName(QStringLiteral("recompute-studio-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_mainwindow"));
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
    }
    void init()
    {
        QSettings().clear();
        QVERIFY(m_dir.isValid());
    }

    void initialGeometryFitsTheScreen_data()
    {
        QTest::addColumn<QRect>("available");
        QTest::newRow("1366x768") << QRect(0, 0, 1366, 768);
        QTest::newRow("1366x768 under a 32 px panel") << QRect(0, 32, 1366, 736);
        QTest::newRow("1280x720") << QRect(0, 0, 1280, 720);
        QTest::newRow("1920x1080") << QRect(0, 0, 1920, 1080);
        QTest::newRow("2560x1440, second screen") << QRect(1920, 0, 2560, 1440);
    }
    void initialGeometryFitsTheScreen()
    {
        QFETCH(QRect, available);
        const QRect r = MainWindow::initialGeometry(available);
        // the window and a frame of 8 px a side and a 40 px title bar stay on the screen
        QVERIFY2(available.contains(r.adjusted(-8, -40, 8, 8)),
            qPrintable(QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())));
        QVERIFY(r.width() <= 1600 && r.height() <= 1000);
        // as large as the screen allows up to that
        QVERIFY(r.width() >= std::min(1600, available.width() - 16));
    }

    void firstStart()
    {
        MainWindow window(m_dir.filePath(QStringLiteral("first.sqlite")));
        // The layout fits a 1366 x 768 screen.
        const QSize minimum = window.minimumSizeHint();
        const QSize room = MainWindow::initialGeometry(QRect(0, 0, 1366, 768)).size();
        QVERIFY2(minimum.width() <= room.width() && minimum.height() <= room.height(),
            qPrintable(QStringLiteral("%1x%2 in %3x%4")
                           .arg(minimum.width())
                           .arg(minimum.height())
                           .arg(room.width())
                           .arg(room.height())));
        QCOMPARE(window.pages()->count(), 3);
        // the guide's sample: Moonlight 16B (6 rows) and Nemotron 3 Nano (6 rows), marked as such
        QVERIFY(window.store()->isOpen());
        const int runs = window.runsPage()->model()->rowCount();
        QCOMPARE(runs, 12);
        for (int row = 0; row < runs; ++row)
            QCOMPARE(window.runsPage()->model()->run(row)->source, QStringLiteral("guide"));
        // opened on a preset, not an empty recipe, untitled
        QVERIFY(window.document()->recipe().num_layers > 0);
        QVERIFY(!window.document()->isModified());
        QVERIFY(window.document()->filePath().isEmpty());
        const QString report = m_dir.filePath(QStringLiteral("report.md"));
        QVERIFY(window.exportReport(report));
        QVERIFY(QFileInfo(report).size() > 200);

        // a Megatron Bridge log imported from the File menu's action lands in the table, selected
        QString error;
        const qint64 imported = window.importLog(
            QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/bridge_moe_pass.log"), &error);
        QVERIFY2(imported > 0, qPrintable(error));
        QCOMPARE(window.runsPage()->model()->rowCount(), 13);
        QCOMPARE(window.runsPage()->selectedRunId(), imported);
        QCOMPARE(window.runsPage()->model()->runById(imported)->source, QStringLiteral("import"));
        QVERIFY(!window.importLog(m_dir.filePath(QStringLiteral("missing.log")), &error));
        QVERIFY(error.contains(QStringLiteral("missing.log")));
    }

    // The data loss of issue 11: save as a.recipe.json, New from preset, Ctrl+S overwrote a.recipe.json.
    void presetIsUntitledAndSaveAsksForAPath()
    {
        MainWindow window(m_dir.filePath(QStringLiteral("preset.sqlite")));
        window.show();
        const QStringList presets = presetNames();
        QVERIFY(presets.size() >= 2);
        const QString a = m_dir.filePath(QStringLiteral("a.recipe.json"));
        QString error;
        QVERIFY2(window.document()->save(a, &error), qPrintable(error));
        const QByteArray saved = readAll(a);
        QVERIFY(window.windowTitle().contains(QStringLiteral("a.recipe.json")));

        QVERIFY(window.loadPreset(presets.back()));
        QVERIFY(window.document()->filePath().isEmpty());
        QVERIFY(!window.document()->isModified());
        QVERIFY(!window.windowTitle().contains(QStringLiteral("a.recipe.json")));
        QVERIFY(window.windowTitle().contains(QStringLiteral("untitled")));

        // Save (Ctrl+S) asks for a path; cancelled, nothing is written
        QAction* save = action(&window, QStringLiteral("actionSave"));
        QVERIFY(save);
        QCOMPARE(save->shortcut(), QKeySequence(QKeySequence::Save));
        DialogAnswer answer;
        answer.answerNext(QMessageBox::Cancel);
        save->trigger();
        QCOMPARE(answer.seen, QStringLiteral("QFileDialog"));
        QCOMPARE(readAll(a), saved);
        QVERIFY(window.document()->filePath().isEmpty());
    }

    void unsavedChangesAreAskedAbout_data()
    {
        QTest::addColumn<int>("button");
        QTest::addColumn<bool>("replaced");
        QTest::newRow("cancel keeps the edit") << int(QMessageBox::Cancel) << false;
        QTest::newRow("discard takes the preset") << int(QMessageBox::Discard) << true;
    }
    void unsavedChangesAreAskedAbout()
    {
        QFETCH(int, button);
        QFETCH(bool, replaced);
        MainWindow window(m_dir.filePath(QStringLiteral("ask.sqlite")));
        window.show();
        QString error;
        QVERIFY(window.document()->setField("num_layers", 3, nullptr, &error));
        QVERIFY(window.document()->isModified());
        QMenu* presetMenu = nullptr;
        for (QMenu* m : window.menuBar()->findChildren<QMenu*>()) {
            if (m->title().contains(QStringLiteral("preset")))
                presetMenu = m;
        }
        QVERIFY(presetMenu && !presetMenu->actions().isEmpty());
        DialogAnswer answer;
        answer.answerNext(QMessageBox::StandardButton(button));
        presetMenu->actions().front()->trigger();
        QCOMPARE(answer.seen, QStringLiteral("QMessageBox"));
        QCOMPARE(window.document()->recipe().num_layers != 3, replaced);
        QCOMPARE(window.document()->isModified(), !replaced);
    }

    void choicesAreRememberedBetweenStarts()
    {
        const QString db = m_dir.filePath(QStringLiteral("remember.sqlite"));
        const QString recipe = m_dir.filePath(QStringLiteral("remembered.recipe.json"));
        QRect geometry;
        {
            MainWindow window(db);
            window.show();
            QString error;
            QVERIFY(window.document()->save(recipe, &error));
            window.runsPage()->axesBox()->setCurrentIndex(1);
            window.runsPage()->setMemoryTarget(35.93);
            window.setGeometry(QRect(20, 30, 700, 500));
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            geometry = window.geometry();
            QVERIFY(window.close());
        }
        MainWindow again(db);
        QCOMPARE(again.document()->filePath(), recipe);
        QCOMPARE(again.runsPage()->axesBox()->currentIndex(), 1);
        QCOMPARE(again.runsPage()->targetBox()->value(), 35.93);
        QCOMPARE(again.size(), geometry.size());
        QCOMPARE(again.recentFiles().value(0), QFileInfo(recipe).absoluteFilePath());
        auto* recent = again.findChild<QMenu*>(QStringLiteral("recentMenu"));
        QVERIFY(recent && recent->isEnabled());
        QVERIFY(recent->actions().front()->text().contains(QStringLiteral("remembered.recipe.json")));
    }

    // Issue 29 item 10: the memory target is remembered with the comparison it was set for, and the
    // filter and the chart's tab with it; a target set for a comparison no longer shown is not applied to
    // another.
    void targetIsRememberedWithItsComparison()
    {
        const QString db = m_dir.filePath(QStringLiteral("target.sqlite"));
        qint64 nemotron = 0;
        {
            MainWindow window(db);
            RunsPage* runs = window.runsPage();
            QVERIFY(runs->comparisonBox()->count() >= 3); // Moonlight, Nemotron, all shown runs
            runs->comparisonBox()->setCurrentIndex(1);
            nemotron = runs->comparisonBox()->currentData().toLongLong();
            runs->redrawTradeoff();
            runs->setMemoryTarget(12.5);
            runs->chartTabs()->setCurrentIndex(2);
            QVERIFY(window.close());
        }
        {
            MainWindow again(db);
            QCOMPARE(again.runsPage()->comparisonBox()->currentData().toLongLong(), nemotron);
            QCOMPARE(again.runsPage()->targetBox()->value(), 12.5);
            QCOMPARE(again.runsPage()->chartTabs()->currentIndex(), 2);
        }
        // The comparison is no longer stored: the target set for it stays off.
        QSettings().setValue(QStringLiteral("runs/comparison"), qint64(99999));
        MainWindow third(db);
        QCOMPARE(third.runsPage()->targetBox()->value(), 0.0);
    }

    // Issue 29: the first screen tells a newcomer the next step, and starts from the recipe that fits this
    // machine; every step leads to the pages, and a later start opens where the user was.
    void firstStartShowsTheStartPage()
    {
        {
            MainWindow window(m_dir.filePath(QStringLiteral("start.sqlite")));
            QVERIFY(window.startPageShown());
            WelcomePage* start = window.startPage();
            QVERIFY(start);
            QCOMPARE(start->defaultPreset(), defaultPresetFor(probeMachine()));
            for (QWidget* b :
                QList<QWidget*> { start->startButton(), start->openButton(), start->bridgeButton(),
                    start->pasteButton(), start->importButton(), start->guideButton() })
                QVERIFY(b && !b->isHidden());
            QVERIFY(start->startButton()->text().contains(presetTitle(start->defaultPreset())));
            // the pages already hold that recipe
            QCOMPARE(QString::fromStdString(window.document()->recipe().name),
                presetTitle(start->defaultPreset()));
            start->startButton()->click();
            QVERIFY(!window.startPageShown());
            QCOMPARE(window.pages()->currentWidget(), static_cast<QWidget*>(window.editorPage()));
            // Help → Start page brings it back; the guide's runs from it.
            action(&window, QStringLiteral("actionStartPage"))->trigger();
            QVERIFY(window.startPageShown());
            start->guideButton()->click();
            QVERIFY(!window.startPageShown());
            QCOMPARE(window.pages()->currentWidget(), static_cast<QWidget*>(window.runsPage()));
            QVERIFY(window.close());
        }
        MainWindow again(m_dir.filePath(QStringLiteral("start.sqlite")));
        QVERIFY(!again.startPageShown());
    }

    void defaultPresetFitsTheMachine_data()
    {
        QTest::addColumn<qint64>("gpuBytes"); // 0: no GPU
        QTest::newRow("no GPU") << qint64(0);
        QTest::newRow("a 2 GB GPU") << qint64(2000000000);
        QTest::newRow("an 80 GB H100") << qint64(85899345920);
        QTest::newRow("a 141 GB H200") << qint64(150323855360);
    }
    void defaultPresetFitsTheMachine()
    {
        QFETCH(qint64, gpuBytes);
        MachineInfo m;
        m.hostMemoryBytes = qint64(64) << 30;
        if (gpuBytes) {
            m.gpuMemoryBytes = gpuBytes;
            m.gpuName = QStringLiteral("a GPU");
        }
        QString why;
        const QString chosen = defaultPresetFor(m, &why);
        QVERIFY(presetNames().contains(chosen));
        QVERIFY(!why.isEmpty());
        if (!gpuBytes) {
            QCOMPARE(chosen, QStringLiteral("tiny-gpt-cpu")); // the CPU runs it in seconds
            return;
        }
        // It fits 90 % of the GPU, and no preset with a larger one-rank estimate does.
        auto peak = [](const QString& name) {
            return estimateMemory(validate(presetRecipe(name)).resolved, Layout::Worker).peak_bytes;
        };
        QVERIFY(double(peak(chosen)) <= 0.9 * double(gpuBytes) || chosen == QStringLiteral("tiny-gpt-cpu"));
        for (const QString& other : presetNames()) {
            if (peak(other) > peak(chosen))
                QVERIFY2(double(peak(other)) > 0.9 * double(gpuBytes), qPrintable(other));
        }
    }

    // Issue 29 item 7: a pasted command line is another job: its own name (never the recipe open before), its
    // front end's rules, and its launcher on the launch page for the real job; one that does not read
    // replaces nothing.
    void pastingACommandLineMakesANewJob_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("format"); // -1: refused
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("launcher");
        QTest::newRow("Megatron-LM line")
            << QStringLiteral(
                   "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \\\n"
                   "  --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 "
                   "--micro-batch-size 1 --global-batch-size 64 --bf16 --recompute-granularity selective")
            << int(InputFormat::MegatronFlags) << QStringLiteral("pretrain_gpt.py, 32 layers, hidden 4096")
            << QStringLiteral("torchrun --nproc-per-node 8 pretrain_gpt.py");
        QTest::newRow("Bridge recipe by name")
            << QStringLiteral("torchrun --nproc-per-node 8 scripts/training/run_recipe.py --recipe "
                              "llama3_8b_pretrain_config train.global_batch_size=16 "
                              "'model.recompute_modules=[core_attn]'")
            << int(InputFormat::BridgeOverrides) << QStringLiteral("llama3_8b_pretrain_2gpu_h100_bf16_config")
            << QStringLiteral("torchrun --nproc-per-node 8 scripts/training/run_recipe.py --recipe "
                              "llama3_8b_pretrain_config");
        QTest::newRow("a flag Megatron-LM does not have")
            << QStringLiteral("torchrun pretrain_gpt.py --num-layerz 32") << -1 << QString() << QString();
    }
    void pastingACommandLineMakesANewJob()
    {
        QFETCH(QString, text);
        QFETCH(int, format);
        QFETCH(QString, name);
        QFETCH(QString, launcher);
        MainWindow window(m_dir.filePath(QStringLiteral("paste.sqlite")));
        QVERIFY(action(&window, QStringLiteral("actionPasteCommandLine")));
        QVERIFY(window.loadPreset(QStringLiteral("moonlight-mla-moe")));
        const Recipe before = window.document()->recipe();
        QCOMPARE(window.pasteCommandLine(text), format >= 0);
        if (format < 0) {
            QVERIFY(window.document()->recipe() == before);
            QVERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("num-layerz")));
            return;
        }
        QCOMPARE(int(window.document()->inputFormat()), format);
        QCOMPARE(QString::fromStdString(window.document()->recipe().name), name);
        QVERIFY(window.document()->filePath().isEmpty());
        QCOMPARE(window.launchPage()->jobLauncherEdit()->text(), launcher);
        QCOMPARE(window.launchPage()->jobFrontEndBox()->currentData().toInt(), format);
        QCOMPARE(window.pages()->currentWidget(), static_cast<QWidget*>(window.editorPage()));
        QVERIFY(!window.startPageShown());
    }

    void recentFilesNewestFirstAndBounded()
    {
        MainWindow window(m_dir.filePath(QStringLiteral("recent.sqlite")));
        QString error;
        for (int i = 0; i < MainWindow::kMaxRecent + 3; ++i)
            QVERIFY(
                window.document()->save(m_dir.filePath(QStringLiteral("r%1.recipe.json").arg(i)), &error));
        QCOMPARE(window.recentFiles().size(), MainWindow::kMaxRecent);
        QVERIFY(window.recentFiles().front().endsWith(
            QStringLiteral("r%1.recipe.json").arg(MainWindow::kMaxRecent + 2)));
        // opening one again moves it to the top, once
        const QString first = m_dir.filePath(QStringLiteral("r%1.recipe.json").arg(MainWindow::kMaxRecent));
        QVERIFY(window.openRecipe(first));
        QCOMPARE(window.recentFiles().front(), QFileInfo(first).absoluteFilePath());
        QCOMPARE(window.recentFiles().count(QFileInfo(first).absoluteFilePath()), 1);
    }

    void helpHasTheGuideAndTheCommandLine()
    {
        MainWindow window(m_dir.filePath(QStringLiteral("help.sqlite")));
        window.show();
        auto* help = window.findChild<QMenu*>(QStringLiteral("helpMenu"));
        QVERIFY(help);
        QStringList texts;
        for (QAction* a : help->actions()) {
            if (!a->isSeparator())
                texts << a->text().remove(u'&');
        }
        QVERIFY2(texts.size() >= 5, qPrintable(texts.join(u'|')));
        QVERIFY(texts.contains(QStringLiteral("User guide")));
        QVERIFY(texts.contains(QStringLiteral("The measurement contract")));

        window.showUserGuide(QStringLiteral("The measurement contract"));
        auto* guide = window.findChild<QDialog*>(QStringLiteral("userGuide"));
        QVERIFY(guide);
        auto* browser = guide->findChild<QTextBrowser*>();
        QVERIFY(browser);
        const QString text = browser->toPlainText();
        QVERIFY2(text.contains(QStringLiteral("Runs and charts")), qPrintable(text.left(200)));
        QVERIFY(text.contains(QStringLiteral("The measurement contract")));
        // opened at the heading asked for
        QVERIFY(browser->textCursor().selectedText().contains(QStringLiteral("measurement contract")));
        // Issue 29 item 10: the screenshots fit the viewer's width.
        int images = 0;
        for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next()) {
            for (auto it = b.begin(); !it.atEnd(); ++it) {
                const QTextCharFormat f = it.fragment().charFormat();
                if (!f.isImageFormat())
                    continue;
                const QImage image
                    = browser->document()
                          ->resource(QTextDocument::ImageResource, QUrl(f.toImageFormat().name()))
                          .value<QImage>();
                QVERIFY2(!image.isNull(), qPrintable(f.toImageFormat().name()));
                QVERIFY2(image.width() <= browser->viewport()->width(),
                    qPrintable(QStringLiteral("%1: %2 px in %3")
                                   .arg(f.toImageFormat().name())
                                   .arg(image.width())
                                   .arg(browser->viewport()->width())));
                ++images;
            }
        }
        QVERIFY(images >= 3);

        window.showCliHelp();
        auto* cli = window.findChild<QDialog*>(QStringLiteral("cliHelp"));
        QVERIFY(cli);
        const QString cliText = cli->findChild<QPlainTextEdit*>(QStringLiteral("cliHelpText"))->toPlainText();
        QVERIFY2(cliText.contains(QStringLiteral("recompute")) && cliText.contains(QStringLiteral("--help")),
            qPrintable(cliText));
    }

    void rerunLoadsTheRunsRecipeUntitled()
    {
        MainWindow window(m_dir.filePath(QStringLiteral("rerun.sqlite")));
        const QString a = m_dir.filePath(QStringLiteral("b.recipe.json"));
        QString error;
        QVERIFY(window.document()->save(a, &error));
        rs::storage::RunRecord run;
        run.source = rs::storage::source::Worker;
        run.outcome = rs::storage::outcome::Pass;
        run.recipeName = QStringLiteral("stored");
        rs::Recipe recipe = presetRecipe(presetNames().front());
        recipe.name = "stored";
        recipe.num_layers = 5;
        run.recipeJson = QString::fromStdString(rs::recipeToJson(recipe).dump());
        const qint64 id = window.store()->insertRun(run);
        QVERIFY(id > 0);
        window.runsPage()->reload();
        QVERIFY(window.rerun(id));
        QCOMPARE(window.document()->recipe().num_layers, 5);
        QVERIFY(window.document()->filePath().isEmpty());
        QCOMPARE(window.pages()->currentWidget(), static_cast<QWidget*>(window.launchPage()));
    }

private:
    QTemporaryDir m_settingsDir;
    QTemporaryDir m_dir;
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
