// SPDX-License-Identifier: Apache-2.0
// The first screen: what the studio does in one line, and the next step for a newcomer as buttons: start
// from the recipe that fits this machine, open a recipe file, a Megatron Bridge recipe by name, paste the
// command line already used, import training logs, or look at the guide's published measurements. Shown on
// the first start (and from Help → Start page); every step leads to the pages.
#pragma once

#include <optional>

#include <QString>
#include <QWidget>

class QCommandLinkButton;
class QLabel;

namespace rs::ui {

// What this machine offers a run: its GPUs' memory (nvidia-smi's, the smallest GPU; nullopt: no GPU found)
// and its host memory.
struct MachineInfo {
    std::optional<qint64> gpuMemoryBytes;
    QString gpuName;
    qint64 hostMemoryBytes = 0;
};
// Asks nvidia-smi (at most two seconds) and /proc/meminfo.
MachineInfo probeMachine();
// The preset to start from on `machine`: without a GPU the tiny CPU recipe (the worker runs it on a CPU in
// seconds); with one, the preset with the largest one-rank estimate (the worker's layout) that fits 90 % of
// the GPU's memory, else the tiny one. `why` says which and why, in a sentence.
QString defaultPresetFor(const MachineInfo& machine, QString* why = nullptr);

class WelcomePage : public QWidget {
    Q_OBJECT
public:
    explicit WelcomePage(const MachineInfo& machine, QWidget* parent = nullptr);

    QString defaultPreset() const { return m_preset; }
    QCommandLinkButton* startButton() const { return m_start; }
    QCommandLinkButton* openButton() const { return m_open; }
    QCommandLinkButton* bridgeButton() const { return m_bridge; }
    QCommandLinkButton* pasteButton() const { return m_paste; }
    QCommandLinkButton* importButton() const { return m_import; }
    QCommandLinkButton* guideButton() const { return m_guide; }

signals:
    void startFromPreset(const QString& name);
    void openRecipe();
    void bridgeRecipe();
    void pasteCommandLine();
    void importLogs();
    void showGuideRuns();

private:
    QString m_preset;
    QCommandLinkButton* m_start;
    QCommandLinkButton* m_open;
    QCommandLinkButton* m_bridge;
    QCommandLinkButton* m_paste;
    QCommandLinkButton* m_import;
    QCommandLinkButton* m_guide;
};

} // namespace rs::ui
