// SPDX-License-Identifier: Apache-2.0
// Recompute Studio's main window: the recipe page, the runs and charts page, the launch page, and the
// file, preset and report actions around them. It wires pages to the document and the store; the pages
// themselves hold no state of their own beyond their views.
#pragma once

#include <memory>

#include <QMainWindow>

class QTabWidget;

namespace rs::storage {
class Store;
}

namespace rs::ui {

class EditorPage;
class RecipeDocument;
class LaunchPage;
class RunsPage;

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

    bool openRecipe(const QString& path);
    bool loadPreset(const QString& name);
    // The report of the runs the runs page shows (its filter applies), by the file's suffix.
    bool exportReport(const QString& path);
    // Stores a Megatron-LM / Bridge training log as a run (source "import") and shows it; 0 and *error on
    // failure.
    qint64 importLog(const QString& path, QString* error);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void updateTitle();
    bool maybeSave();
    bool save();
    bool saveAs();

    void openStore(const QString& path);

    RecipeDocument* m_document;
    std::unique_ptr<storage::Store> m_store;
    QTabWidget* m_pages;
    EditorPage* m_editor;
    RunsPage* m_runs;
    LaunchPage* m_launch;
};

} // namespace rs::ui
