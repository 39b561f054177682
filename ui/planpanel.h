// SPDX-License-Identifier: Apache-2.0
// The recipe page's Plan tab: `recompute plan` in the window. A memory target per rank (the recipe's
// memory_target_gb until changed here) and a rates record (the device's calibration, `recompute-bench
// --calibrate --out FILE`; the last one chosen is remembered), then core's planRecompute off the GUI thread
// (every choice is validated, estimated on every rank and timed: ~20 ms for Moonlight's 118 choices in a
// release build, far more under the sanitizers), shown through PlanModel with the cheapest choice that fits
// highlighted. The records compiled into the resources (resources/calibration/*.json, found at run time) are
// offered beside the file chooser, each named from its own device, dtype and date; without a remembered
// choice a measured one is taken before a provisional one, whose figures are labelled PROVISIONAL wherever
// they are shown (the summary, the record's name, the table's headers, the chart's legend and tooltips).
// With a store (setStore), each candidate measured there (a run of the same recipe and choice, chartdata's
// measurePlan) shows its measurement beside the prediction. Each plan is handed on (`planned`) for the runs
// page's trade-off chart.
#pragma once

#include <memory>
#include <optional>

#include <QVector>
#include <QWidget>

#include "charts/chartdata.h"
#include "core/calibration.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QTableView;
class QThread;
class QTimer;

namespace rs::storage {
class Store;
}

namespace rs::ui {

class PlanModel;
class RecipeDocument;

class PlanPanel : public QWidget {
    Q_OBJECT
public:
    // Where the last rates record chosen is remembered (QSettings): a file, or a bundled record's path.
    static const QString kRatesSetting;
    // A rates record compiled into the resources.
    struct BundledRates {
        QString name; // "h200-bf16" (shipped_calibrations.h)
        QString path; // ":/calibration/h200-bf16.json"
        QString label; // ratesLabel of the record
        bool provisional = false;
    };
    // Every record under :/calibration/ that reads as one, measured ones first (then by path).
    static QVector<BundledRates> bundledRates();
    // What a record is called wherever it is offered or named: "NVIDIA H200, bf16, measured 2026-12-06", or
    // "NVIDIA H100 80GB HBM3, bf16, PROVISIONAL (not measured)".
    static QString ratesLabel(const CalibrationRates& rates);

    explicit PlanPanel(RecipeDocument* document, QWidget* parent = nullptr);
    ~PlanPanel() override;

    // Reads a rates record (a file, or a bundled record's path); false with the field and the reason in
    // `error` (and on the panel). A record read is remembered and plans at once.
    bool setRatesFile(const QString& path, QString* error = nullptr);
    const std::optional<CalibrationRates>& rates() const { return m_rates; }
    QString ratesFile() const { return m_ratesFile; }
    // Plans now (off the GUI thread); the table fills when it is done (planned).
    void plan();
    bool isPlanning() const { return m_thread != nullptr; }
    // Where measurements of the plan's choices are looked up (nullptr: none); not owned.
    void setStore(storage::Store* store);
    // Looks the plan's choices up in the store again (after runs were stored).
    void remeasure();

    PlanModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QDoubleSpinBox* targetBox() const { return m_target; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* whyLabel() const { return m_why; }
    // The bundled records, and the file chosen (when it is one): choosing an entry reads it.
    QComboBox* ratesBox() const { return m_ratesBox; }

signals:
    // A plan is shown: its front for the trade-off chart.
    void planned(const rs::ui::PlanOverlay& overlay);
    // The plan no longer stands (no rates, a recipe with rule errors).
    void planCleared();

private:
    void showStatus();
    void chooseRates();
    void scheduleReplan();
    void showRatesChoice();

    RecipeDocument* m_document;
    std::optional<CalibrationRates> m_rates;
    QString m_ratesFile;
    QString m_problem; // why there is no plan (shown instead of the summary)
    std::optional<double> m_recipeTarget; // the recipe's memory_target_gb the box last followed
    QDoubleSpinBox* m_target;
    QComboBox* m_ratesBox;
    int m_bundledCount = 0; // the box's first entries; a file chosen is the one after them
    storage::Store* m_store = nullptr;
    QStringList m_matchKeys; // plannedMatchKey of each of the plan's candidates
    QLabel* m_status;
    PlanModel* m_model;
    QTableView* m_table;
    QLabel* m_why; // the selected row's reason
    QTimer* m_replan;
    QThread* m_thread = nullptr;
    bool m_again = false; // the recipe changed while planning: plan again when done
};

} // namespace rs::ui
