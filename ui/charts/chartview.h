// SPDX-License-Identifier: Apache-2.0
// Our chart interface. The charts are fed the plain values of chartdata.h and can be exported as PNG
// or SVG or painted into a report; which library draws them is private to ui/charts/*.cpp (one file per
// chart over the backend of qtchartsbackend.h/.cpp), the only files that include QtCharts (deprecated since
// Qt 6.10, so it must stay replaceable).
#pragma once

#include <memory>

#include <QWidget>

#include "charts/chartdata.h"

class QPainter;

namespace rs::ui {

class ChartView : public QWidget {
    Q_OBJECT
public:
    ~ChartView() override;

    // By the file's suffix: .png or .svg. False with a message naming the file on failure.
    bool exportImage(const QString& path, QString* error, const QSize& size = QSize(1200, 700)) const;
    // Paints the chart into `target` (reports, PDF pages).
    void renderTo(QPainter* painter, const QRectF& target, const QSize& size = QSize(1200, 700)) const;
    QImage toImage(const QSize& size = QSize(1200, 700)) const;
    // Shown in place of the plot when there is nothing to draw ("No runs match the filter").
    void setEmptyMessage(const QString& message);
    bool isEmpty() const;
    QString emptyMessage() const; // what is shown in place of the plot ("" when the plot is shown)

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    // What a user sees, for tests: the legend's entries, an axis' tick values, the tooltip of the point
    // under the mouse, the plot's viewport and where a run's point is drawn in it ((-1, -1): not drawn).
    QStringList legendNames() const;
    QVector<double> axisTicks(Qt::Orientation orientation) const;
    QString hoverTip() const;
    QWidget* viewport() const;
    QPoint viewPositionOfRun(qint64 runId) const;

protected:
    explicit ChartView(QWidget* parent);
    bool event(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    // Shows (or, with "", hides) the hovered point's tooltip and keeps it for the view's tooltip event.
    void showHoverTip(const QString& tip);
    struct Backend;
    std::unique_ptr<Backend> m_backend;
};

// Step time against peak allocated, one point per module set; control marked, Pareto front drawn,
// failed module sets hollow and red, the memory target a dashed line; a plan's predictions (applyPlan) hollow
// purple pentagons on a dotted front, under the legend entry "predicted".
class TradeoffChart : public ChartView {
    Q_OBJECT
public:
    explicit TradeoffChart(QWidget* parent = nullptr);
    void setData(const TradeoffData& data);
    const TradeoffData& data() const { return m_data; }
    // Wall time of the last setData, in microseconds (what the GUI benchmark reports besides its own timing).
    qint64 lastRebuildMicros() const { return m_lastRebuildMicros; }

signals:
    void runActivated(qint64 runId);

private:
    TradeoffData m_data;
    qint64 m_lastRebuildMicros = 0;
};

// Per-rank peak allocated against peak reserved: the fragmentation view.
class RankBarsChart : public ChartView {
    Q_OBJECT
public:
    explicit RankBarsChart(QWidget* parent = nullptr);
    void setData(const QString& title, const QVector<RankBar>& bars);
};

// Per-iteration memory by phase (also the launch page's live curve).
class MemoryLinesChart : public ChartView {
    Q_OBJECT
public:
    explicit MemoryLinesChart(QWidget* parent = nullptr);
    void setData(
        const QString& title, const QVector<IterationLine>& lines, std::optional<double> targetGb = {});
};

// What holds the peak: one stacked horizontal bar per run and source (measured, estimate), the
// categories of docs/stream.md's peak_attribution in GB, the memory target as a vertical line.
class PeakAttributionChart : public ChartView {
    Q_OBJECT
public:
    explicit PeakAttributionChart(QWidget* parent = nullptr);
    void setData(const PeakAttributionData& data);
    const PeakAttributionData& data() const { return m_data; }

private:
    PeakAttributionData m_data;
};

} // namespace rs::ui
