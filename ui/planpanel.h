// SPDX-License-Identifier: Apache-2.0
// The recipe page's Plan tab: `recompute plan` in the window. A memory target per rank (the recipe's
// memory_target_gb until changed here) and a rates record (the device's calibration, `recompute-bench
// --calibrate --out FILE`; the last one chosen is remembered), then core's planRecompute off the GUI thread
// (every choice is validated, estimated on every rank and timed: ~20 ms for Moonlight's 118 choices in a
// release build, far more under the sanitizers), shown through PlanModel with the cheapest choice that fits
// highlighted. Without a record, step times cannot be predicted: the panel says how to measure one and offers
// the provisional H100 record shipped in the resources, whose figures are labelled PROVISIONAL wherever they
// are shown (the summary, the table's headers, the chart's legend and tooltips). Each plan is handed on
// (`planned`) for the runs page's trade-off chart.
#pragma once

#include <memory>
#include <optional>

#include <QWidget>

#include "charts/chartdata.h"
#include "core/calibration.h"

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;
class QThread;
class QTimer;

namespace rs::ui {

class PlanModel;
class RecipeDocument;

class PlanPanel : public QWidget {
    Q_OBJECT
public:
    // The provisional H100 bf16 record compiled into the resources (not a measurement).
    static const QString kProvisionalRates;
    // Where the last rates file chosen is remembered (QSettings).
    static const QString kRatesSetting;

    explicit PlanPanel(RecipeDocument* document, QWidget* parent = nullptr);
    ~PlanPanel() override;

    // Reads a rates record (a file, or kProvisionalRates); false with the field and the reason in `error`
    // (and on the panel). A record read is remembered and plans at once.
    bool setRatesFile(const QString& path, QString* error = nullptr);
    const std::optional<CalibrationRates>& rates() const { return m_rates; }
    QString ratesFile() const { return m_ratesFile; }
    // Plans now (off the GUI thread); the table fills when it is done (planned).
    void plan();
    bool isPlanning() const { return m_thread != nullptr; }

    PlanModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QDoubleSpinBox* targetBox() const { return m_target; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* whyLabel() const { return m_why; }
    QPushButton* provisionalButton() const { return m_provisional; }

signals:
    // A plan is shown: its front for the trade-off chart.
    void planned(const rs::ui::PlanOverlay& overlay);
    // The plan no longer stands (no rates, a recipe with rule errors).
    void planCleared();

private:
    void showStatus();
    void chooseRates();
    void scheduleReplan();

    RecipeDocument* m_document;
    std::optional<CalibrationRates> m_rates;
    QString m_ratesFile;
    QString m_problem; // why there is no plan (shown instead of the summary)
    std::optional<double> m_recipeTarget; // the recipe's memory_target_gb the box last followed
    QDoubleSpinBox* m_target;
    QLineEdit* m_ratesEdit;
    QPushButton* m_provisional;
    QLabel* m_status;
    PlanModel* m_model;
    QTableView* m_table;
    QLabel* m_why; // the selected row's reason
    QTimer* m_replan;
    QThread* m_thread = nullptr;
    bool m_again = false; // the recipe changed while planning: plan again when done
};

} // namespace rs::ui
