// SPDX-License-Identifier: Apache-2.0
// The runs page: the stored runs as a sortable, filterable table with deltas against each run's matched
// control and beside the estimator's prediction, and the charts of what is shown (the trade-off scatter of
// the filtered runs; per-rank bars, per-iteration memory and what holds the peak of the selected run beside
// its control), each exportable as PNG or SVG. A recompute plan from the recipe page is drawn on the
// trade-off as predictions, each replaced by its measurement once stored (chartdata.h's applyPlan).
#pragma once

#include <optional>

#include <QWidget>

#include "charts/chartdata.h"

class QComboBox;
class QMenu;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QTabWidget;
class QTableView;

namespace rs::storage {
class Store;
}

namespace rs::ui {

class MemoryLinesChart;
class PeakAttributionChart;
class PeakAttributionModel;
struct PeakAttributionData;
class RankBarsChart;
class RunsFilterProxy;
class RunsModel;
class TradeoffChart;
class ChartView;

class RunsPage : public QWidget {
    Q_OBJECT
public:
    RunsPage(storage::Store* store, QWidget* parent = nullptr);
    // The comparison box's value for the plan's entry (0 is every comparison, a run id one comparison).
    static constexpr qint64 kPlanComparison = -1;

    RunsModel* model() const { return m_model; }
    RunsFilterProxy* proxy() const { return m_proxy; }
    QTableView* table() const { return m_table; }
    TradeoffChart* tradeoffChart() const { return m_tradeoff; }
    const std::optional<PlanOverlay>& plan() const { return m_plan; }
    RankBarsChart* rankChart() const { return m_ranks; }
    MemoryLinesChart* linesChart() const { return m_lines; }
    PeakAttributionChart* attributionChart() const { return m_attribution; }
    PeakAttributionModel* attributionModel() const { return m_attributionModel; }
    // What holds the peak of a run and of its matched control (when it has one): the
    // estimate of the run's stored recipe (series "estimate"), each followed by the measured attribution the
    // store keeps (the stream's peak_attribution, rank 0, at the phase of the run's peak; series "measured").
    PeakAttributionData attributionOf(qint64 runId) const;
    QTabWidget* chartTabs() const { return m_chartTabs; }
    QComboBox* axesBox() const { return m_axes; }
    QComboBox* comparisonBox() const { return m_comparison; }
    QDoubleSpinBox* targetBox() const { return m_target; }
    QLabel* banner() const { return m_banner; }
    // The advisor's line for the comparison the chart shows and the memory target.
    QLabel* adviceLabel() const { return m_advice; }
    // The table's context menu for a run (the caller owns it): show its comparison, compare it against
    // another [] control, make it its comparison's control, re-run it, delete it.
    QMenu* contextMenuFor(qint64 runId, QWidget* parent = nullptr);
    // Deletes runs from the store (asking first when `ask`); the number deleted.
    int deleteRuns(const QVector<qint64>& runIds, bool ask = true);
    // Links a run to a [] control (nullopt: unlinks it) and re-reads the store.
    bool linkToControl(qint64 runId, std::optional<qint64> controlRunId);
    // Makes a repeat of a [] control the control of its comparison: every run linked to the old control,
    // and the old control itself, is linked to it.
    bool makeControl(qint64 runId);
    void showComparisonOf(qint64 runId);
    // What the page showed, restored between starts: the recipe filter, the comparison (its control's run
    // id; 0: all shown runs; one no longer stored leaves the first) and the chart's tab.
    void restoreView(const QString& recipeFilter, qint64 comparison, int chartTab);
    QString recipeFilterText() const;
    // The runs the filter lets through, in table order.
    QVector<qint64> visibleRunIds() const;
    qint64 selectedRunId() const;

public slots:
    // Re-reads the store.
    void reload();
    void setMemoryTarget(std::optional<double> gb);
    void selectRun(qint64 runId);
    void redrawTradeoff();
    // A recompute plan's front (the recipe page's Plan tab), drawn on the trade-off chart as predictions
    // until measured; clearPlan takes it off.
    void setPlan(const rs::ui::PlanOverlay& plan);
    void clearPlan();
    // Shows the plan's entry under "Trade-off of": its recipe's runs and the plan's front.
    void showPlan();

signals:
    void runSelected(qint64 runId);
    // "Re-run" from the context menu: the run's stored recipe is to go to the launch page.
    void rerunRequested(qint64 runId);
    // The store was re-read (reload): what else shows its runs may look again.
    void reloaded();

private:
    void showRun(qint64 runId);
    void updateBanner();
    void updateAdvice();
    void refillFilterChoices();
    void exportChart(ChartView* chart, const QString& suffix);

    storage::Store* m_store;
    RunsModel* m_model;
    RunsFilterProxy* m_proxy;
    QTableView* m_table;
    QLineEdit* m_recipeFilter;
    QComboBox* m_moduleFilter;
    QComboBox* m_outcomeFilter;
    QComboBox* m_hostFilter;
    QComboBox* m_axes;
    QComboBox* m_comparison; // which matched comparison the trade-off shows (control run id; 0: all)
    QDoubleSpinBox* m_target;
    QLabel* m_banner;
    QLabel* m_advice;
    QString m_adviceKey; // comparison, target and store generation the advice was computed for
    int m_generation = 0;
    QTabWidget* m_chartTabs;
    TradeoffChart* m_tradeoff;
    RankBarsChart* m_ranks;
    MemoryLinesChart* m_lines;
    PeakAttributionChart* m_attribution;
    PeakAttributionModel* m_attributionModel;
    std::optional<PlanOverlay> m_plan;
};

} // namespace rs::ui
