// SPDX-License-Identifier: Apache-2.0
// recompute-studio: the desktop application. Everything lives in rs_ui; this only starts it.
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QDoubleSpinBox>
#include <QFile>
#include <QIcon>
#include <QLineEdit>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>

#include "editorpage.h"
#include "launchpage.h"
#include "mainwindow.h"
#include "planpanel.h"
#include "recipedocument.h"
#include "recipeform.h"
#include "reportwriter.h"
#include "runspage.h"
#include "storage/store.h"

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("recompute-studio"));
    QApplication::setApplicationDisplayName(QStringLiteral("Recompute Studio"));
    QApplication::setApplicationVersion(QStringLiteral(RS_VERSION));
    QApplication::setOrganizationName(QStringLiteral("recompute-studio"));
    QApplication::setDesktopFileName(QStringLiteral("io.github.recompute_studio"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/recompute-studio.svg")));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Edit, validate, run and compare activation-recompute recipes"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("recipe"),
        QStringLiteral("A recipe file (*.recipe.json) to open."), QStringLiteral("[recipe]"));
    QCommandLineOption dbOption(QStringLiteral("db"),
        QStringLiteral("The measurement database (default: the per-user one)."), QStringLiteral("file"));
    parser.addOption(dbOption);
    // For the user guide's screenshots and smoke tests: show a page, save the window as PNG, quit.
    QCommandLineOption pageOption(QStringLiteral("page"),
        QStringLiteral("The page to show first (0, 1, 2, ...)."), QStringLiteral("index"));
    QCommandLineOption screenshotOption(QStringLiteral("screenshot"),
        QStringLiteral("Save a PNG of the window after start-up and quit."), QStringLiteral("file"));
    QCommandLineOption reportOption(QStringLiteral("export-report"),
        QStringLiteral(
            "Write the report of every stored run (.html, .pdf, .md, .csv, or .png for a preview of its "
            "first page) and quit."),
        QStringLiteral("file"));
    parser.addOption(pageOption);
    parser.addOption(screenshotOption);
    parser.addOption(reportOption);
    QCommandLineOption groupOption(QStringLiteral("show-group"),
        QStringLiteral("Scroll the recipe form to a group (\"Recompute\", ...)."), QStringLiteral("group"));
    parser.addOption(groupOption);
    QCommandLineOption launchOption(QStringLiteral("launch"),
        QStringLiteral("Run the opened recipe (after its [] control) on this host at start-up."));
    parser.addOption(launchOption);
    QCommandLineOption ranksOption(QStringLiteral("ranks"),
        QStringLiteral("Worker processes per launch (the launch page's Ranks)."), QStringLiteral("n"));
    parser.addOption(ranksOption);
    QCommandLineOption commandOption(QStringLiteral("command-line"),
        QStringLiteral("A file holding a Megatron-LM or Bridge command line: a new recipe from it, as File → "
                       "Paste command line… makes one."),
        QStringLiteral("file"));
    parser.addOption(commandOption);
    QCommandLineOption jobOption(QStringLiteral("job"),
        QStringLiteral(
            "With --launch: run the training command once per recompute choice (the launch page's "
            "\"my training command\"), e.g. --job \"core_attn full:uniform:1\"; \"\" for the default."),
        QStringLiteral("choices"));
    parser.addOption(jobOption);
    QCommandLineOption jobItersOption(QStringLiteral("job-iters"),
        QStringLiteral("With --job: the iterations of each run (the launch page's Iterations)."),
        QStringLiteral("n"));
    parser.addOption(jobItersOption);
    QCommandLineOption planOption(QStringLiteral("plan"),
        QStringLiteral(
            "Plan the opened recipe on the recipe page's Plan tab with this rates record "
            "(recompute-bench --calibrate writes one), or a record that comes with the studio by name "
            "(h200-bf16; 'provisional': the first provisional one)."),
        QStringLiteral("rates"));
    parser.addOption(planOption);
    QCommandLineOption planTargetOption(QStringLiteral("plan-target"),
        QStringLiteral("With --plan: the memory target per rank, GB (else the recipe's memory_target_gb)."),
        QStringLiteral("gb"));
    parser.addOption(planTargetOption);
    parser.process(app);

    rs::ui::MainWindow window(parser.value(dbOption));
    const QStringList files = parser.positionalArguments();
    if (!files.isEmpty() && window.openRecipe(files.front()))
        window.showPages(); // a recipe given is the next step taken: no start page
    if (parser.isSet(reportOption)) {
        const QString path = parser.value(reportOption);
        if (path.endsWith(QStringLiteral(".png"))) {
            rs::ui::ReportWriter writer(*window.store(), {});
            writer.setEditedRecipe(window.document()->recipe(), window.document()->validation());
            return writer.preview(1100, 1400).save(path, "PNG") ? 0 : 1;
        }
        return window.exportReport(path) ? 0 : 1;
    }
    if (parser.isSet(commandOption)) {
        QFile file(parser.value(commandOption));
        if (!file.open(QIODevice::ReadOnly) || !window.pasteCommandLine(QString::fromUtf8(file.readAll()))) {
            std::fprintf(stderr, "recompute-studio: --command-line %s does not read as a command line\n",
                qPrintable(parser.value(commandOption)));
            return 2;
        }
    }
    if (parser.isSet(jobOption)) {
        window.launchPage()->setRunKind(rs::ui::LaunchPage::RunKind::Job);
        window.launchPage()->jobChoicesEdit()->setText(parser.value(jobOption));
        if (parser.isSet(jobItersOption))
            window.launchPage()->jobItersBox()->setValue(parser.value(jobItersOption).toInt());
    }
    if (parser.isSet(pageOption)) {
        window.pages()->setCurrentIndex(parser.value(pageOption).toInt());
        window.showPages();
    }
    window.show();
    if (parser.isSet(groupOption))
        QTimer::singleShot(200, &window, [&window, group = parser.value(groupOption)] {
            window.editorPage()->form()->scrollToGroup(group);
        });
    // Runs the opened recipe (with its [] control) at start-up; with --screenshot, the picture is taken
    // when the launch is over.
    if (parser.isSet(ranksOption))
        window.launchPage()->ranksBox()->setValue(parser.value(ranksOption).toInt());
    const bool launch = parser.isSet(launchOption);
    if (launch) {
        window.pages()->setCurrentWidget(window.launchPage());
        window.showPages();
        QTimer::singleShot(0, window.launchPage(), &rs::ui::LaunchPage::start);
    }
    const bool plan = parser.isSet(planOption);
    if (plan) {
        rs::ui::PlanPanel* panel = window.editorPage()->planPanel();
        window.editorPage()->textTabs()->setCurrentWidget(panel);
        if (parser.isSet(planTargetOption))
            panel->targetBox()->setValue(parser.value(planTargetOption).toDouble());
        QString rates = parser.value(planOption);
        for (const auto& b : rs::ui::PlanPanel::bundledRates())
            if ((rates == QLatin1String("provisional") && b.provisional) || b.name == rates) {
                rates = b.path;
                break;
            }
        QString error;
        if (!panel->setRatesFile(rates, &error)) {
            std::fprintf(stderr, "recompute-studio: --plan: %s\n", qPrintable(error));
            return 2;
        }
    }
    if (parser.isSet(screenshotOption)) {
        const QString path = parser.value(screenshotOption);
        auto shoot = [&window, path] {
            const bool ok = window.grab().save(path, "PNG");
            QCoreApplication::exit(ok ? 0 : 1);
        };
        if (launch)
            QObject::connect(window.launchPage(), &rs::ui::LaunchPage::launchFinished, &window,
                [&window, shoot] { QTimer::singleShot(500, &window, shoot); });
        else if (plan)
            QObject::connect(
                window.editorPage()->planPanel(), &rs::ui::PlanPanel::planned, &window, [&window, shoot] {
                    window.runsPage()->showPlan(); // on the runs page: the plan's trade-off
                    QTimer::singleShot(500, &window, shoot);
                });
        else
            QTimer::singleShot(1500, &window, shoot);
    }
    return app.exec();
}
