// SPDX-License-Identifier: Apache-2.0
// The QtCharts backend behind chartview.h, private to ui/charts/: the chart view's state (QChartView, the
// chart rebuilt per redraw, point labels, the hovered tooltip) and the helpers every chart shares. Only the
// files of ui/charts/ include this header, and so QtCharts (deprecated since Qt 6.10): replacing the library
// means rewriting ui/charts/*.cpp only; chartview.h and chartdata.h stay as they are.
#pragma once

#include <functional>
#include <optional>

#include <QBarCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QColor>
#include <QCoreApplication>
#include <QGraphicsSimpleTextItem>
#include <QHash>
#include <QLabel>
#include <QLegend>
#include <QStackedLayout>
#include <QValueAxis>

#include "charts/chartview.h"

namespace rs::ui {

struct ChartView::Backend {
    QChartView* view = nullptr;
    QChart* chart = nullptr;
    QLabel* empty = nullptr;
    QStackedLayout* stack = nullptr;
    // Point labels drawn over the plot (QtCharts 6.4 has no per-point label text).
    struct PointLabel {
        QGraphicsSimpleTextItem* item;
        QPointF value;
        QAbstractSeries* series;
    };
    QVector<PointLabel> labels;
    // Scatter points drawn by one item per series (see PointCloud); children of the chart.
    QVector<QGraphicsItem*> clouds;
    std::function<void()> onCloudsMoved;

    // The tooltip of the point under the mouse. QGraphicsView answers the tooltip event that follows a
    // hover with the item's own (empty) tooltip and so hid ours at once: the viewport's tooltip event is
    // answered with this instead (ChartView::eventFilter).
    QString hoverTip;
    // Where each run's point is (its series and value), for the tests and for selecting a run's point.
    QHash<qint64, QPair<QAbstractSeries*, QPointF>> pointOfRun;

    QValueAxis* valueX = nullptr;
    QValueAxis* valueY = nullptr;
    QBarCategoryAxis* categoryX = nullptr;
    std::function<void()> onPlotAreaChanged;

    QValueAxis* xAxis()
    {
        valueX = new QValueAxis;
        chart->addAxis(valueX, Qt::AlignBottom);
        return valueX;
    }
    QValueAxis* yAxis()
    {
        valueY = new QValueAxis;
        chart->addAxis(valueY, Qt::AlignLeft);
        return valueY;
    }
    QBarCategoryAxis* categoryAxis()
    {
        categoryX = new QBarCategoryAxis;
        chart->addAxis(categoryX, Qt::AlignBottom);
        return categoryX;
    }

    QChart* makeChart()
    {
        auto* c = new QChart;
        c->setMargins(QMargins(6, 6, 6, 6));
        c->legend()->setAlignment(Qt::AlignBottom);
        QObject::connect(c, &QChart::plotAreaChanged, c, [this] {
            if (onPlotAreaChanged)
                onPlotAreaChanged();
        });
        return c;
    }

    // A fresh chart per redraw: QtCharts 6.4 leaves the graphics items of removed series and axes in the
    // scene (about 25-90 per redraw were counted), so removing series would slow every later redraw; a
    // deleted chart takes all of its items with it.
    void clear()
    {
        labels.clear(); // children of the old chart: deleted with it
        clouds.clear();
        pointOfRun.clear();
        hoverTip.clear();
        QChart* old = chart;
        chart = makeChart();
        view->setChart(chart);
        delete old;
        valueX = valueY = nullptr;
        categoryX = nullptr;
    }

    void placeLabels()
    {
        // Labels that would overlap an earlier one step upwards (a few times at most): close points of
        // one comparison (mla_up_proj vs mla_up_proj, mlp) stay readable.
        QVector<QRectF> placed;
        for (auto& l : labels) {
            const QPointF pos = chart->mapToPosition(l.value, l.series);
            const QRectF box = l.item->boundingRect();
            // Right of the point, unless that runs off the plot: then left of it.
            const bool flip = pos.x() + 7 + box.width() > chart->plotArea().right();
            QPointF at = pos + QPointF(flip ? -7 - box.width() : 7, -box.height() - 2);
            for (int tries = 0; tries < 4; ++tries) {
                const QRectF r(at, box.size());
                if (std::none_of(
                        placed.begin(), placed.end(), [&](const QRectF& p) { return p.intersects(r); }))
                    break;
                at.ry() -= box.height();
            }
            placed << QRectF(at, box.size());
            l.item->setPos(at);
            l.item->setVisible(chart->plotArea().contains(pos));
        }
    }

    // Renders the chart's scene, not the view: a view that was never shown has no usable viewport. A
    // hidden chart is laid out at `size` first so labels and ticks fit.
    void render(QPainter* painter, const QRectF& target, const QSize& size)
    {
        if (!view->isVisible() && chart->size() != QSizeF(size)) {
            chart->resize(size);
            QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
            placeLabels();
        }
        chart->scene()->render(painter, target, chart->sceneBoundingRect());
    }
};

// Shared by the charts: a failure's red (failed module sets, the memory target).
inline const QColor kFailed(0xc6, 0x28, 0x28);

// Round ticks (nice numbers) over [lo, hi]; the axis may reach further right (`extendTo`, the failed
// column) without a tick there. Labels carry as many decimals as the step needs.
NiceAxis applyNiceAxis(QValueAxis* axis, double lo, double hi, std::optional<double> extendTo = {});

} // namespace rs::ui
