// SPDX-License-Identifier: Apache-2.0
#include "mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>

#include "editorpage.h"
#include "launchpage.h"
#include "logimportdialog.h"
#include "presets.h"
#include "recipedocument.h"
#include "recipeform.h"
#include "reportwriter.h"
#include "runspage.h"
#include "setcontroldialog.h"
#include "storage/log_import.h"
#include "storage/store.h"

namespace rs::ui {

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
    setCentralWidget(m_pages);
    buildMenus();

    connect(m_document, &RecipeDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(m_document, &RecipeDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(m_document, &RecipeDocument::recipeChanged, this, [this] {
        updateTitle();
        statusBar()->showMessage(tr("Validated in %1 µs").arg(m_document->lastValidationMicros()));
    });
    connect(m_document, &RecipeDocument::recipeChanged, this,
        [this] { m_runs->setMemoryTarget(m_document->recipe().memory_target_gb); });
    connect(m_editor->form(), &RecipeForm::editRejected, this,
        [this](const QString& message) { statusBar()->showMessage(message, 8000); });

    const QStringList presets = presetNames();
    if (!presets.isEmpty())
        loadPreset(presets.front());
    resize(1400, 900);
    updateTitle();
}

MainWindow::~MainWindow() = default;

void MainWindow::openStore(const QString& path)
{
    QString error;
    if (!m_store->open(path, &error)) {
        statusBar()->showMessage(tr("Cannot open the measurement store %1: %2").arg(path, error));
        return;
    }
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
    file->addAction(tr("&New recipe"), QKeySequence::New, this, [this] {
        if (!maybeSave())
            return;
        m_document->setRecipe(Recipe {});
        m_document->setModified(false);
    });
    QMenu* presets = file->addMenu(tr("New from &preset"));
    for (const QString& name : presetNames()) {
        presets->addAction(presetTitle(name), this, [this, name] {
            if (maybeSave())
                loadPreset(name);
        });
    }
    presets->setEnabled(!presets->isEmpty());
    file->addAction(tr("&Open recipe…"), QKeySequence::Open, this, [this] {
        if (!maybeSave())
            return;
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open recipe"), QString(), tr("Recipes (*.recipe.json *.json);;All files (*)"));
        if (!path.isEmpty())
            openRecipe(path);
    });
    file->addAction(tr("&Save"), QKeySequence::Save, this, [this] { save(); });
    file->addAction(tr("Save &as…"), QKeySequence::SaveAs, this, [this] { saveAs(); });
    file->addSeparator();
    file->addAction(tr("&Import training logs…"), this, [this] {
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
        }
        statusBar()->showMessage(imported.lines.join(QStringLiteral("; ")), 15000);
        if (!imported.errors.isEmpty())
            QMessageBox::warning(
                this, tr("Import training logs"), imported.errors.join(QStringLiteral("\n")));
    });
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

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Recompute Studio"), this, [this] {
        QMessageBox::about(this, tr("About Recompute Studio"),
            tr("<b>Recompute Studio %1</b><p>Edit activation-recompute recipes for Megatron Core and "
               "Megatron "
               "Bridge with live validation, run matched measurements, and compare them.</p>")
                .arg(QStringLiteral(RS_VERSION)));
    });
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
    statusBar()->showMessage(result.duplicate
            ? tr("%1 was imported before, as run %2").arg(path).arg(result.runId)
            : tr("Imported %1 as run %2").arg(path).arg(result.runId),
        8000);
    return result.runId;
}

bool MainWindow::exportReport(const QString& path)
{
    ReportWriter writer(*m_store, m_runs->visibleRunIds());
    writer.setEditedRecipe(m_document->recipe(), m_document->validation());
    QString error;
    if (!writer.write(path, &error)) {
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

bool MainWindow::loadPreset(const QString& name)
{
    try {
        m_document->setRecipe(presetRecipe(name));
        m_document->setModified(false);
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
    QString path = QFileDialog::getSaveFileName(
        this, tr("Save recipe"), m_document->filePath(), tr("Recipes (*.recipe.json);;JSON (*.json)"));
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
    if (maybeSave())
        event->accept();
    else
        event->ignore();
}

} // namespace rs::ui
