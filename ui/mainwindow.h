// SPDX-License-Identifier: Apache-2.0
// Recompute Studio's main window: the recipe page, the runs and charts page, the launch page, and the
// file, preset and report actions around them. It wires pages to the document and the store; the pages
// themselves hold no state of their own beyond their views.
#pragma once

#include <memory>
#include <optional>

#include <QMainWindow>

class QMenu;
class QStackedWidget;
class QTabWidget;

namespace rs::storage {
class Store;
}

namespace rs::ui {

class EditorPage;
class RecipeDocument;
class LaunchPage;
class RunsPage;
class WelcomePage;
struct PastedCommand;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // storePath: the measurement database ("" for Store::defaultPath()). An empty store is seeded with the
    // guide's published measurements, so the first start shows something real.
    explicit MainWindow(const QString& storePath = QString(), QWidget* parent = nullptr);
    ~MainWindow() override;

    RecipeDocument* document() const { return m_document; }
    EditorPage* editorPage() const { return m_editor; }
    QTabWidget* pages() const { return m_pages; }
    RunsPage* runsPage() const { return m_runs; }
    LaunchPage* launchPage() const { return m_launch; }
    storage::Store* store() const { return m_store.get(); }

    // The first screen (welcome page): what to do first. Shown on the first start and from Help → Start
    // page; every step it offers leads to the pages (showPages).
    void showStartPage();
    void showPages();
    bool startPageShown() const;
    WelcomePage* startPage() const { return m_welcome; }
    // File → Paste command line…: a Megatron-LM or Bridge command line becomes a new untitled recipe with its
    // own front end and name, and the launch page's real job takes its launcher. False (status bar says why)
    // when it does not read.
    bool pasteCommandLine(const QString& text);

    bool openRecipe(const QString& path);
    // A preset becomes a new untitled document: Save then asks for a path.
    bool loadPreset(const QString& name);
    // A stored run's recipe as a new untitled document, on the launch page (the runs page's Re-run).
    bool rerun(qint64 runId);
    // Asks before unsaved changes are discarded (Save / Discard / Cancel); true when it may go on.
    bool maybeSave();
    bool save();

    // The window's first geometry on a screen whose available area is `available`: as large as the
    // layout wants (1600 x 1000 at most), never larger than the screen less a window frame, centred.
    static QRect initialGeometry(const QRect& available);
    // Recently opened or saved recipes, newest first (at most kMaxRecent), from QSettings.
    QStringList recentFiles() const;
    static constexpr int kMaxRecent = 8;
    // Where the compiled-in user guide is (qrc), and the `recompute` program next to this one, if found.
    static QString userGuideUrl();
    static QString cliProgram();
    // The help dialogs (user guide, at a heading or from its top; `recompute --help`).
    void showUserGuide(const QString& heading = QString());
    void showCliHelp();
    // The report of the runs the runs page shows (its filter applies), by the file's suffix.
    bool exportReport(const QString& path);
    // Stores a Megatron-LM / Bridge training log as a run (source "import") and shows it; 0 and *error on
    // failure.
    qint64 importLog(const QString& path, QString* error);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void askOpenRecipe();
    void newFromBridgeRecipe();
    void askPasteCommandLine();
    void applyPastedCommand(const PastedCommand& command);
    void importLogs();
    void updateTitle();
    bool saveAs();
    void addRecentFile(const QString& path);
    void refillRecentMenu();
    void restoreSettings();
    void saveSettings() const;

    void openStore(const QString& path);

    RecipeDocument* m_document;
    std::unique_ptr<storage::Store> m_store;
    QStackedWidget* m_stack;
    WelcomePage* m_welcome = nullptr;
    QTabWidget* m_pages;
    EditorPage* m_editor;
    RunsPage* m_runs;
    LaunchPage* m_launch;
    QMenu* m_recentMenu = nullptr;
    QString m_presetName; // the preset the untitled document came from ("" otherwise)
    std::optional<double> m_recipeTarget; // the recipe's memory_target_gb last seen
};

} // namespace rs::ui
