// SPDX-License-Identifier: Apache-2.0
#include "mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QScreen>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "bridgerecipedialog.h"
#include "commandlinedialog.h"
#include "core/recipe_json.h"
#include "editorpage.h"
#include "launchpage.h"
#include "log.h"
#include "logimportdialog.h"
#include "planpanel.h"
#include "presets.h"
#include "recipedocument.h"
#include "recipeform.h"
#include "reportwriter.h"
#include "runspage.h"
#include "setcontroldialog.h"
#include "storage/log_import.h"
#include "storage/store.h"
#include "welcomepage.h"

// The user guide and its screenshots, compiled into rs_ui (ui/help.qrc); a static library's resources are
// registered by hand.
static void initHelpResources()
{
    static const bool once = [] {
        Q_INIT_RESOURCE(help);
        return true;
    }();
    (void)once;
}

namespace rs::ui {

namespace {
const QString kRecentKey = QStringLiteral("recentFiles");

// The user guide's viewer: its screenshots are taken at 1366 px; shown at that size they ran off a 1000 px
// dialog. Each image is scaled to the viewer's width (never up).
class GuideBrowser : public QTextBrowser {
public:
    QVariant loadResource(int type, const QUrl& name) override
    {
        QVariant v = QTextBrowser::loadResource(type, name);
        if (type != QTextDocument::ImageResource)
            return v;
        QImage image = v.value<QImage>();
        if (image.isNull())
            image.loadFromData(v.toByteArray());
        const int room = std::max(200, viewport()->width() - 24);
        if (!image.isNull() && image.width() > room)
            return image.scaledToWidth(room, Qt::SmoothTransformation);
        return image.isNull() ? v : QVariant(image);
    }
};
} // namespace

MainWindow::MainWindow(const QString& storePath, QWidget* parent)
    : QMainWindow(parent)
    , m_document(new RecipeDocument(this))
    , m_store(std::make_unique<storage::Store>())
{
    openStore(storePath.isEmpty() ? storage::Store::defaultPath() : storePath);
    m_pages = new QTabWidget;
    m_pages->setDocumentMode(true);
    m_editor = new EditorPage(m_document);
    m_pages->addTab(m_editor, tr("Recipe"));
    m_runs = new RunsPage(m_store.get());
    m_pages->addTab(m_runs, tr("Runs and charts"));
    m_launch = new LaunchPage(m_document, m_store.get());
    m_pages->addTab(m_launch, tr("Launch"));
    connect(m_launch, &LaunchPage::runStored, this, [this](qint64 runId) {
        m_runs->reload();
        m_runs->selectRun(runId);
    });
    connect(m_runs, &RunsPage::rerunRequested, this, &MainWindow::rerun);
    connect(m_editor->planPanel(), &PlanPanel::planned, m_runs, &RunsPage::setPlan);
    connect(m_editor->planPanel(), &PlanPanel::planCleared, m_runs, &RunsPage::clearPlan);
    // The plan's table shows what the store measured of it, anew whenever the runs page re-reads the store.
    m_editor->planPanel()->setStore(m_store.get());
    connect(m_runs, &RunsPage::reloaded, m_editor->planPanel(), &PlanPanel::remeasure);
    m_stack = new QStackedWidget;
    m_stack->addWidget(m_pages);
    setCentralWidget(m_stack);
    buildMenus();

    connect(m_document, &RecipeDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(m_document, &RecipeDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(m_document, &RecipeDocument::recipeChanged, this, [this] {
        updateTitle();
        statusBar()->showMessage(tr("Validated in %1 µs").arg(m_document->lastValidationMicros()));
    });
    // The runs page follows the recipe's memory target when the recipe changes it, and otherwise keeps
    // the one typed there (an edit of another field does not reset it).
    connect(m_document, &RecipeDocument::recipeChanged, this, [this] {
        const std::optional<double> target = m_document->recipe().memory_target_gb;
        if (target != m_recipeTarget && target)
            m_runs->setMemoryTarget(target);
        m_recipeTarget = target;
    });
    connect(m_document, &RecipeDocument::filePathChanged, this, [this](const QString& path) {
        if (!path.isEmpty()) {
            m_presetName.clear();
            addRecentFile(path);
        }
    });
    connect(m_editor->form(), &RecipeForm::editRejected, this,
        [this](const QString& message) { statusBar()->showMessage(message, 8000); });

    restoreSettings();
    updateTitle();
}

QRect MainWindow::initialGeometry(const QRect& available)
{
    // Room for a window manager's frame and title bar: the frame must fit too.
    const QSize frame(16, 48);
    const QSize room = available.size() - frame;
    const QSize size(std::min(1600, room.width()), std::min(1000, room.height()));
    QRect r(QPoint(0, 0), size);
    r.moveCenter(available.center());
    r.moveTop(std::max(available.top() + frame.height() - 8, r.top()));
    return r;
}

void MainWindow::restoreSettings()
{
    QSettings settings;
    const QByteArray geometry = settings.value(QStringLiteral("window/geometry")).toByteArray();
    if (geometry.isEmpty() || !restoreGeometry(geometry)) {
        const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
        const QRect available = s ? s->availableGeometry() : QRect(0, 0, 1400, 900);
        setGeometry(initialGeometry(available));
    }
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());

    // A first start (nothing remembered) opens on the start page, with the preset that fits this machine.
    const bool firstStart = !settings.contains(QStringLiteral("session/recipe"))
        && !settings.contains(QStringLiteral("session/preset"));
    // The last recipe: its file when it still opens, else the preset it came from, else the first preset.
    const QString last = settings.value(QStringLiteral("session/recipe")).toString();
    bool opened = false;
    if (!last.isEmpty() && QFileInfo::exists(last)) {
        QString error;
        opened = m_document->load(last, &error);
        if (!opened)
            statusBar()->showMessage(tr("The last recipe did not open: %1").arg(error), 10000);
    }
    if (!opened) {
        const QStringList presets = presetNames();
        const QString preset = settings.value(QStringLiteral("session/preset")).toString();
        if (presets.contains(preset))
            loadPreset(preset);
        else if (firstStart)
            showStartPage(); // its first button's preset is loaded, so the pages hold a recipe too
        else if (!presets.isEmpty())
            loadPreset(presets.front());
    }
    const int page = settings.value(QStringLiteral("window/page"), 0).toInt();
    if (page >= 0 && page < m_pages->count())
        m_pages->setCurrentIndex(page);
    const int axes = settings.value(QStringLiteral("runs/axes"), 0).toInt();
    if (axes >= 0 && axes < m_runs->axesBox()->count() && axes != m_runs->axesBox()->currentIndex()) {
        m_runs->axesBox()->setCurrentIndex(axes);
        m_runs->redrawTradeoff();
    }
    // The chart shows the comparison it showed, with the memory target set for that comparison (a target
    // belongs to the job it was set for), the filter and the chart's tab.
    const qint64 comparison = settings.value(QStringLiteral("runs/comparison"), -1).toLongLong();
    m_runs->restoreView(settings.value(QStringLiteral("runs/filter")).toString(), comparison,
        settings.value(QStringLiteral("runs/chartTab"), 0).toInt());
    if (settings.contains(QStringLiteral("runs/memoryTarget"))
        && comparison == m_runs->comparisonBox()->currentData().toLongLong()) {
        const double gb = settings.value(QStringLiteral("runs/memoryTarget")).toDouble();
        m_runs->setMemoryTarget(gb > 0 ? std::optional<double>(gb) : std::nullopt);
    }
    refillRecentMenu();
}

void MainWindow::saveSettings() const
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/page"), m_pages->currentIndex());
    settings.setValue(QStringLiteral("session/recipe"), m_document->filePath());
    settings.setValue(
        QStringLiteral("session/preset"), m_document->filePath().isEmpty() ? m_presetName : QString());
    settings.setValue(QStringLiteral("runs/axes"), m_runs->axesBox()->currentIndex());
    settings.setValue(QStringLiteral("runs/memoryTarget"), m_runs->targetBox()->value());
    settings.setValue(QStringLiteral("runs/comparison"), m_runs->comparisonBox()->currentData().toLongLong());
    settings.setValue(QStringLiteral("runs/chartTab"), m_runs->chartTabs()->currentIndex());
    settings.setValue(QStringLiteral("runs/filter"), m_runs->recipeFilterText());
}

QStringList MainWindow::recentFiles() const
{
    return QSettings().value(kRecentKey).toStringList();
}

void MainWindow::addRecentFile(const QString& path)
{
    QSettings settings;
    QStringList files = settings.value(kRecentKey).toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    files.removeAll(absolute);
    files.prepend(absolute);
    while (files.size() > kMaxRecent)
        files.removeLast();
    settings.setValue(kRecentKey, files);
    refillRecentMenu();
}

void MainWindow::refillRecentMenu()
{
    if (!m_recentMenu)
        return;
    m_recentMenu->clear();
    const QStringList files = recentFiles();
    for (int i = 0; i < files.size(); ++i) {
        const QString path = files[i];
        QAction* a = m_recentMenu->addAction(
            QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()), this, [this, path] {
                if (maybeSave())
                    openRecipe(path);
            });
        a->setToolTip(path);
        a->setStatusTip(path);
        a->setEnabled(QFileInfo::exists(path));
    }
    if (!files.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("&Clear the list"), this, [this] {
            QSettings().remove(kRecentKey);
            refillRecentMenu();
        });
    }
    m_recentMenu->setEnabled(!files.isEmpty());
}

QString MainWindow::userGuideUrl()
{
    initHelpResources();
    return QStringLiteral("qrc:/help/user-guide.md");
}

QString MainWindow::cliProgram()
{
    // Installed side by side; in the build tree app/studio and app/cli are siblings.
    const QString dir = QCoreApplication::applicationDirPath();
    const QStringList candidates { dir + QStringLiteral("/recompute"),
        dir + QStringLiteral("/../cli/recompute") };
    for (const QString& candidate : candidates) {
        if (QFileInfo(candidate).isExecutable())
            return QFileInfo(candidate).canonicalFilePath();
    }
    return QStandardPaths::findExecutable(QStringLiteral("recompute"));
}

void MainWindow::showUserGuide(const QString& heading)
{
    auto* dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setObjectName(QStringLiteral("userGuide"));
    dialog->setWindowTitle(tr("Recompute Studio user guide"));
    auto* layout = new QVBoxLayout(dialog);
    auto* browser = new GuideBrowser;
    browser->setOpenExternalLinks(true);
    layout->addWidget(browser);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog->resize(std::min(1000, width() - 40), std::min(800, height() - 40));
    dialog->layout()->activate(); // the viewer's width is known before the images are scaled to it
    browser->setSource(QUrl(userGuideUrl()), QTextDocument::MarkdownResource);
    if (!heading.isEmpty() && browser->find(heading)) {
        // The heading at the top of the view, not at its bottom edge.
        browser->moveCursor(QTextCursor::End);
        browser->find(heading, QTextDocument::FindBackward);
    }
    dialog->show();
}

void MainWindow::showCliHelp()
{
    const QString program = cliProgram();
    QString text;
    if (program.isEmpty()) {
        text = tr("The command-line program `recompute` was not found next to this program or on PATH.\n"
                  "It is installed with Recompute Studio; `recompute --help` lists its verbs and "
                  "`recompute <verb> --help` explains each.");
    } else {
        QProcess process;
        process.start(program, { QStringLiteral("--help") });
        if (process.waitForFinished(5000))
            text = QString::fromUtf8(process.readAllStandardOutput() + process.readAllStandardError());
        if (text.isEmpty())
            text = tr("%1 --help gave no output.").arg(program);
        text = tr("$ %1 --help\n").arg(QFileInfo(program).fileName()) + text
            + tr("\nEach verb explains itself: recompute advise --help, recompute run --help, …\n"
                 "The program: %1\n")
                  .arg(program);
    }
    auto* dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setObjectName(QStringLiteral("cliHelp"));
    dialog->setWindowTitle(tr("The command line: recompute --help"));
    auto* layout = new QVBoxLayout(dialog);
    auto* view = new QPlainTextEdit(text);
    view->setObjectName(QStringLiteral("cliHelpText"));
    view->setReadOnly(true);
    view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    view->setLineWrapMode(QPlainTextEdit::NoWrap);
    layout->addWidget(view);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog->resize(std::min(900, width() - 40), std::min(600, height() - 40));
    dialog->show();
}

MainWindow::~MainWindow() = default;

void MainWindow::openStore(const QString& path)
{
    QString error;
    if (!m_store->open(path, &error)) {
        statusBar()->showMessage(tr("Cannot open the measurement store %1: %2").arg(path, error));
        return;
    }
    qCDebug(lcUi) << "measurement store" << path << "with" << m_store->runCount() << "runs";
    if (m_store->runCount() > 0)
        return;
    // First start: the guide's published matched measurements, compiled in from resources/sample/.
    QString sample = storage::Store::guideSamplePath();
    QTemporaryDir dir;
    const QString compiled = QStringLiteral(":/sample/guide-measurements.json");
    if (QFile::exists(compiled) && dir.isValid()) {
        const QString copy = dir.filePath(QStringLiteral("guide-measurements.json"));
        if (QFile::copy(compiled, copy))
            sample = copy;
    }
    const int added = m_store->seedGuideSample(sample, &error);
    if (added < 0)
        statusBar()->showMessage(tr("The guide's sample measurements were not loaded: %1").arg(error), 15000);
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New recipe"), QKeySequence::New, this,
            [this] {
                if (!maybeSave())
                    return;
                m_presetName.clear();
                m_document->resetUntitled(Recipe {});
                showPages();
            })
        ->setObjectName(QStringLiteral("actionNew"));
    QMenu* presets = file->addMenu(tr("New from &preset"));
    for (const QString& name : presetNames()) {
        presets->addAction(presetTitle(name), this, [this, name] {
            if (maybeSave() && loadPreset(name))
                showPages();
        });
    }
    presets->setEnabled(!presets->isEmpty());
    file->addAction(tr("New from &Bridge recipe…"), this, &MainWindow::newFromBridgeRecipe)
        ->setObjectName(QStringLiteral("actionNewFromBridge"));
    file->addAction(tr("Paste &command line…"), this, &MainWindow::askPasteCommandLine)
        ->setObjectName(QStringLiteral("actionPasteCommandLine"));
    file->addAction(tr("&Open recipe…"), QKeySequence::Open, this, &MainWindow::askOpenRecipe);
    m_recentMenu = file->addMenu(tr("Open &recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    file->addAction(tr("&Save"), QKeySequence::Save, this, [this] { save(); })
        ->setObjectName(QStringLiteral("actionSave"));
    file->addAction(tr("Save &as…"), QKeySequence::SaveAs, this, [this] { saveAs(); });
    file->addSeparator();
    file->addAction(tr("&Import training logs…"), this, &MainWindow::importLogs)
        ->setObjectName(QStringLiteral("actionImportLogs"));
    file->addAction(tr("Set &control of the selected run…"), this, [this] {
        if (SetControlDialog::edit(m_store.get(), { m_runs->selectedRunId() }, this))
            m_runs->reload();
    });
    file->addAction(tr("Export &report…"), this, [this] {
        const QString path
            = QFileDialog::getSaveFileName(this, tr("Export report"), QStringLiteral("recompute-report.html"),
                tr("HTML (*.html);;PDF (*.pdf);;Markdown (*.md);;CSV (*.csv)"));
        if (!path.isEmpty())
            exportReport(path);
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    // The text being edited (a recipe view, a filter box): the standard editing actions act on the focused
    // widget, so Undo takes back what a regeneration of the recipe text replaced.
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->setObjectName(QStringLiteral("editMenu"));
    const auto onFocused = [edit, this](const QString& text, QKeySequence::StandardKey key, const char* slot,
                               const QString& objectName) {
        QAction* a = edit->addAction(text, this, [slot] {
            if (QWidget* w = QApplication::focusWidget())
                QMetaObject::invokeMethod(w, slot);
        });
        a->setShortcut(key);
        a->setShortcutContext(Qt::WidgetShortcut); // the focused editor handles the key itself
        a->setObjectName(objectName);
    };
    onFocused(tr("&Undo"), QKeySequence::Undo, "undo", QStringLiteral("actionUndo"));
    onFocused(tr("&Redo"), QKeySequence::Redo, "redo", QStringLiteral("actionRedo"));
    edit->addSeparator();
    onFocused(tr("Cu&t"), QKeySequence::Cut, "cut", QStringLiteral("actionCut"));
    onFocused(tr("&Copy"), QKeySequence::Copy, "copy", QStringLiteral("actionCopy"));
    onFocused(tr("&Paste"), QKeySequence::Paste, "paste", QStringLiteral("actionPaste"));
    onFocused(tr("Select &all"), QKeySequence::SelectAll, "selectAll", QStringLiteral("actionSelectAll"));

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->setObjectName(QStringLiteral("helpMenu"));
    help->addAction(tr("&Start page"), this, &MainWindow::showStartPage)
        ->setObjectName(QStringLiteral("actionStartPage"));
    help->addAction(tr("&User guide"), QKeySequence::HelpContents, this, [this] { showUserGuide(); });
    help->addAction(tr("The &measurement contract"), this,
        [this] { showUserGuide(QStringLiteral("The measurement contract")); });
    help->addAction(tr("Choosing a recipe with the &advisor"), this,
        [this] { showUserGuide(QStringLiteral("The advisor")); });
    help->addAction(tr("The &command line (recompute --help)"), this, [this] { showCliHelp(); });
    help->addSeparator();
    help->addAction(tr("&About Recompute Studio"), this, [this] {
        QMessageBox::about(this, tr("About Recompute Studio"),
            tr("<b>Recompute Studio %1</b><p>Edit activation-recompute recipes for Megatron Core and "
               "Megatron "
               "Bridge with live validation, run matched measurements, and compare them.</p>")
                .arg(QStringLiteral(RS_VERSION)));
    });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::showStartPage()
{
    if (!m_welcome) {
        m_welcome = new WelcomePage(probeMachine());
        m_stack->addWidget(m_welcome);
        connect(m_welcome, &WelcomePage::startFromPreset, this, [this](const QString& name) {
            if (maybeSave() && loadPreset(name)) {
                m_pages->setCurrentWidget(m_editor);
                showPages();
            }
        });
        connect(m_welcome, &WelcomePage::openRecipe, this, &MainWindow::askOpenRecipe);
        connect(m_welcome, &WelcomePage::bridgeRecipe, this, &MainWindow::newFromBridgeRecipe);
        connect(m_welcome, &WelcomePage::pasteCommandLine, this, &MainWindow::askPasteCommandLine);
        connect(m_welcome, &WelcomePage::importLogs, this, &MainWindow::importLogs);
        connect(m_welcome, &WelcomePage::showGuideRuns, this, [this] {
            m_pages->setCurrentWidget(m_runs);
            showPages();
        });
    }
    // The pages hold a recipe whatever is chosen: the one that fits this machine until then.
    if (m_document->recipe().num_layers == 0 && m_document->filePath().isEmpty() && !m_document->isModified())
        loadPreset(m_welcome->defaultPreset());
    m_stack->setCurrentWidget(m_welcome);
}

void MainWindow::showPages()
{
    m_stack->setCurrentWidget(m_pages);
}

bool MainWindow::startPageShown() const
{
    return m_welcome && m_stack->currentWidget() == m_welcome;
}

void MainWindow::askOpenRecipe()
{
    if (!maybeSave())
        return;
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open recipe"), QString(), tr("Recipes (*.recipe.json *.json);;All files (*)"));
    if (!path.isEmpty() && openRecipe(path)) {
        m_pages->setCurrentWidget(m_editor);
        showPages();
    }
}

void MainWindow::newFromBridgeRecipe()
{
    if (!maybeSave())
        return;
    BridgeRecipeDialog dialog(this);
    if (dialog.exec() != QDialog::Accepted || !dialog.job())
        return;
    m_presetName.clear();
    m_document->resetUntitled(dialog.job()->recipe);
    m_document->setInputFormat(InputFormat::BridgeOverrides);
    QStringList notes;
    for (const std::string& n : dialog.job()->notes)
        notes << QString::fromStdString(n);
    statusBar()->showMessage(notes.join(u"; "), 20000);
    m_pages->setCurrentWidget(m_editor);
    showPages();
}

void MainWindow::askPasteCommandLine()
{
    if (!maybeSave())
        return;
    CommandLineDialog dialog(this);
    // What is on the clipboard, when it reads as a command: most users come with it copied.
    const QString clip = QApplication::clipboard()->text();
    QString ignored;
    if (!clip.trimmed().isEmpty() && CommandLineDialog::read(clip, &ignored))
        dialog.setText(clip);
    if (dialog.exec() != QDialog::Accepted || !dialog.command())
        return;
    applyPastedCommand(*dialog.command());
}

bool MainWindow::pasteCommandLine(const QString& text)
{
    QString error;
    const std::optional<PastedCommand> command = CommandLineDialog::read(text, &error);
    if (!command) {
        statusBar()->showMessage(tr("The command line does not read: %1").arg(error), 15000);
        return false;
    }
    applyPastedCommand(*command);
    return true;
}

void MainWindow::applyPastedCommand(const PastedCommand& pasted)
{
    const PastedCommand* command = &pasted;
    Recipe recipe = command->input.recipe;
    // Another job: its own name, never the recipe that was open before.
    recipe.name = CommandLineDialog::jobName(*command).toStdString();
    m_presetName.clear();
    m_document->resetUntitled(recipe);
    m_document->setInputFormat(command->input.format);
    m_launch->setJobCommand(command->input.format, command->launcher.join(QLatin1Char(' ')));
    QStringList notes { tr("Pasted: %1").arg(command->summary) };
    if (!command->input.note.empty())
        notes << QString::fromStdString(command->input.note);
    for (const std::string& n : command->input.setup_notes)
        notes << QString::fromStdString(n);
    statusBar()->showMessage(notes.join(QStringLiteral("; ")), 20000);
    m_pages->setCurrentWidget(m_editor);
    showPages();
}

void MainWindow::importLogs()
{
    // Several at once (the logs of one shape compare themselves), with progress (ui/logimportdialog).
    const QStringList paths
        = QFileDialog::getOpenFileNames(this, tr("Import Megatron-LM or Megatron Bridge training logs"),
            QString(), tr("Logs (*.log *.txt *.out);;All files (*)"));
    if (paths.isEmpty())
        return;
    const LogImportSummary imported = importLogsWithProgress(m_store.get(), paths, this);
    m_runs->reload();
    if (!imported.runIds.isEmpty()) {
        m_runs->selectRun(imported.runIds.last());
        m_pages->setCurrentWidget(m_runs);
        showPages();
    }
    statusBar()->showMessage(imported.lines.join(QStringLiteral("; ")), 15000);
    if (!imported.errors.isEmpty())
        QMessageBox::warning(this, tr("Import training logs"), imported.errors.join(QStringLiteral("\n")));
}

qint64 MainWindow::importLog(const QString& path, QString* error)
{
    const storage::ImportResult result = storage::importTrainingLog(m_store.get(), path);
    if (!result.runId) {
        *error = result.error.isEmpty() ? tr("%1: nothing could be imported").arg(path) : result.error;
        return 0;
    }
    m_runs->reload();
    m_runs->selectRun(result.runId);
    m_pages->setCurrentWidget(m_runs);
    showPages();
    statusBar()->showMessage(result.duplicate
            ? tr("%1 was imported before, as run %2").arg(path).arg(result.runId)
            : tr("Imported %1 as run %2").arg(path).arg(result.runId),
        8000);
    return result.runId;
}

bool MainWindow::exportReport(const QString& path)
{
    // Laying a PDF out takes a moment: the window says so rather than looking frozen.
    statusBar()->showMessage(tr("Writing %1…").arg(QFileInfo(path).fileName()));
    QApplication::setOverrideCursor(Qt::WaitCursor);
    auto restore = qScopeGuard([] { QApplication::restoreOverrideCursor(); });
    QCoreApplication::processEvents(QEventLoop::ExcludeUserInputEvents);
    ReportWriter writer(*m_store, m_runs->visibleRunIds());
    writer.setEditedRecipe(m_document->recipe(), m_document->validation());
    QString error;
    const bool written = writer.write(path, &error);
    restore.dismiss();
    QApplication::restoreOverrideCursor();
    if (!written) {
        QMessageBox::warning(this, tr("Export report"), error);
        return false;
    }
    statusBar()->showMessage(
        tr("Report written to %1 (%n comparison(s))", nullptr, int(writer.tables().size())).arg(path), 8000);
    return true;
}

bool MainWindow::openRecipe(const QString& path)
{
    QString error;
    if (!m_document->load(path, &error)) {
        QMessageBox::warning(this, tr("Open recipe"), error);
        return false;
    }
    return true;
}

bool MainWindow::rerun(qint64 runId)
{
    const std::optional<storage::RunRecord> run = m_store->run(runId);
    if (!run || run->recipeJson.isEmpty()) {
        statusBar()->showMessage(tr("Run %1 carries no full recipe to run again.").arg(runId), 8000);
        return false;
    }
    Recipe recipe;
    try {
        recipe = recipeFromJsonText(run->recipeJson.toStdString(), "run " + std::to_string(runId));
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 10000);
        return false;
    }
    if (!maybeSave())
        return false;
    m_presetName.clear();
    m_document->resetUntitled(recipe);
    m_pages->setCurrentWidget(m_launch);
    showPages();
    statusBar()->showMessage(
        tr("Run %1's recipe is loaded (untitled): Run measures it again.").arg(runId), 10000);
    return true;
}

bool MainWindow::loadPreset(const QString& name)
{
    try {
        m_document->resetUntitled(presetRecipe(name));
        m_presetName = name;
        statusBar()->showMessage(tr("Preset %1").arg(presetTitle(name)), 5000);
        return true;
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 10000);
        return false;
    }
}

void MainWindow::updateTitle()
{
    const QString file
        = m_document->filePath().isEmpty() ? tr("untitled") : QFileInfo(m_document->filePath()).fileName();
    const QString name = QString::fromStdString(m_document->recipe().name);
    setWindowTitle((name.isEmpty() ? file : name + QStringLiteral(" — ") + file)
        + QStringLiteral("[*] — Recompute Studio"));
    setWindowModified(m_document->isModified());
}

bool MainWindow::save()
{
    if (m_document->filePath().isEmpty())
        return saveAs();
    QString error;
    if (!m_document->save(m_document->filePath(), &error)) {
        QMessageBox::warning(this, tr("Save recipe"), error);
        return false;
    }
    return true;
}

bool MainWindow::saveAs()
{
    QString suggested = m_document->filePath();
    if (suggested.isEmpty()) {
        // An untitled recipe (new, or from a preset): its name, beside the last recipe used.
        QString name = QString::fromStdString(m_document->recipe().name).trimmed();
        name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
        const QStringList recent = recentFiles();
        const QString dir = recent.isEmpty() ? QDir::homePath() : QFileInfo(recent.front()).absolutePath();
        suggested = QDir(dir).filePath(
            (name.isEmpty() ? QStringLiteral("untitled") : name) + QStringLiteral(".recipe.json"));
    }
    QString path = QFileDialog::getSaveFileName(
        this, tr("Save recipe"), suggested, tr("Recipes (*.recipe.json);;JSON (*.json)"));
    if (path.isEmpty())
        return false;
    if (!path.endsWith(QStringLiteral(".json")))
        path += QStringLiteral(".recipe.json");
    QString error;
    if (!m_document->save(path, &error)) {
        QMessageBox::warning(this, tr("Save recipe"), error);
        return false;
    }
    return true;
}

bool MainWindow::maybeSave()
{
    if (!m_document->isModified())
        return true;
    const auto answer
        = QMessageBox::question(this, tr("Unsaved recipe"), tr("Save the changes to the recipe first?"),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (answer == QMessageBox::Cancel)
        return false;
    return answer == QMessageBox::Discard || save();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (maybeSave()) {
        saveSettings();
        event->accept();
    } else {
        event->ignore();
    }
}

} // namespace rs::ui
