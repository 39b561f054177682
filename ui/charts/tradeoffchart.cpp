// SPDX-License-Identifier: Apache-2.0
// The trade-off scatter: step time against peak allocated, one point per module set (chartdata.h's
// TradeoffData), drawn over the QtCharts backend (qtchartsbackend.h).
#include <algorithm>
#include <cmath>
#include <functional>

#include <QElapsedTimer>
#include <QFontMetrics>
#include <QGraphicsSceneHoverEvent>
#include <QGraphicsSceneMouseEvent>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>

#include "charts/qtchartsbackend.h"

namespace rs::ui {

namespace {

const QColor kGroupColors[] = { QColor(0x1f, 0x77, 0xb4), QColor(0x2c, 0xa0, 0x2c), QColor(0x94, 0x67, 0xbd),
    QColor(0x8c, 0x56, 0x4b), QColor(0x17, 0xbe, 0xcf), QColor(0xbc, 0xbd, 0x22), QColor(0xe3, 0x77, 0xc2) };
// The [] control's fill where one series holds every comparison's controls: orange is in no group colour.
const QColor kControl(0xff, 0x7f, 0x0e);
// A plan's predicted points and front: a purple in no group's colour, hollow (not a measurement).
const QColor kPredicted(0x6a, 0x1b, 0x9a);

QColor groupColor(int i)
{
    return kGroupColors[i % int(std::size(kGroupColors))];
}

// Axis range with a margin, never empty.
std::pair<double, double> padded(double lo, double hi)
{
    if (!(hi > lo)) {
        const double m = std::max(1.0, std::abs(lo) * 0.05);
        return { lo - m, hi + m };
    }
    const double m = (hi - lo) * 0.08;
    return { lo - m, hi + m };
}

// The series' marker drawn once into an image (what a PointCloud paints at each point).
QImage markerImage(const QScatterSeries* s)
{
    const int size = int(s->markerSize());
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(s->pen());
    painter.setBrush(s->brush());
    const QRectF r(1, 1, size - 2, size - 2);
    if (s->markerShape() == QScatterSeries::MarkerShapeRectangle)
        painter.drawRect(r);
    else if (s->markerShape() == QScatterSeries::MarkerShapeTriangle)
        painter.drawPolygon(QPolygonF { QPointF(r.center().x(), r.top()), r.bottomRight(), r.bottomLeft() });
    else
        painter.drawEllipse(r);
    return image;
}

// Hundreds of points of one scatter series, painted by one item. QtCharts 6.4 makes a graphics item per
// point even for light markers, and places each again on every axis attach and layout: about 45 ms for
// 2000 points. The series stays in the chart, empty, for its legend entry and axes; this item paints its
// marker image at each point, shows the point's tooltip on hover and reports the point's run on click.
class PointCloud : public QGraphicsItem {
public:
    PointCloud(QChart* chart, QScatterSeries* series, QVector<QPointF> values, QVector<QString> tips,
        QVector<qint64> runs, std::function<void(qint64)> activated,
        std::function<void(const QString&)> hover)
        : QGraphicsItem(chart)
        , m_chart(chart)
        , m_series(series)
        , m_marker(markerImage(series))
        , m_values(std::move(values))
        , m_tips(std::move(tips))
        , m_runs(std::move(runs))
        , m_activated(std::move(activated))
        , m_hover(std::move(hover))
    {
        setAcceptHoverEvents(true);
        setFlag(QGraphicsItem::ItemClipsToShape);
        setZValue(9); // above QtCharts' series and grid, under the legend
        m_rect = chart->plotArea();
    }

    void plotAreaChanged()
    {
        prepareGeometryChange();
        m_rect = m_chart->plotArea();
        update();
    }
    QRectF boundingRect() const override { return m_rect; }
    void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override
    {
        painter->save();
        painter->setClipRect(m_rect);
        const qreal half = m_marker.width() / 2.0;
        for (const QPointF& v : m_values) {
            const QPointF at = m_chart->mapToPosition(v, m_series);
            painter->drawImage(
                QRectF(at.x() - half, at.y() - half, m_marker.width(), m_marker.height()), m_marker);
        }
        painter->restore();
    }

protected:
    void hoverMoveEvent(QGraphicsSceneHoverEvent* event) override
    {
        const int i = pointAt(event->pos());
        if (i == m_hovered)
            return;
        m_hovered = i;
        m_hover(i < 0 ? QString() : m_tips[i]);
    }
    void hoverLeaveEvent(QGraphicsSceneHoverEvent*) override
    {
        if (m_hovered >= 0)
            m_hover(QString());
        m_hovered = -1;
    }
    void mousePressEvent(QGraphicsSceneMouseEvent* event) override
    {
        m_pressed = pointAt(event->pos());
        if (m_pressed < 0)
            event->ignore();
    }
    void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override
    {
        if (m_pressed >= 0 && m_pressed == pointAt(event->pos()) && m_activated)
            m_activated(m_runs[m_pressed]);
        m_pressed = -1;
    }

private:
    // The topmost (last drawn) point whose marker covers pos, or -1.
    int pointAt(const QPointF& pos) const
    {
        if (!m_rect.contains(pos))
            return -1;
        const qreal half = m_marker.width() / 2.0;
        for (int i = int(m_values.size()) - 1; i >= 0; --i) {
            const QPointF at = m_chart->mapToPosition(m_values[i], m_series);
            if (std::abs(pos.x() - at.x()) <= half && std::abs(pos.y() - at.y()) <= half)
                return i;
        }
        return -1;
    }

    QChart* m_chart;
    QScatterSeries* m_series;
    QImage m_marker;
    QVector<QPointF> m_values;
    QVector<QString> m_tips;
    QVector<qint64> m_runs;
    std::function<void(qint64)> m_activated;
    std::function<void(const QString&)> m_hover;
    QRectF m_rect;
    int m_hovered = -1;
    int m_pressed = -1;
};

} // namespace

TradeoffChart::TradeoffChart(QWidget* parent)
    : ChartView(parent)
{
    setEmptyMessage(tr("No runs to compare."));
    m_backend->onCloudsMoved = [this] {
        for (QGraphicsItem* cloud : std::as_const(m_backend->clouds))
            static_cast<PointCloud*>(cloud)->plotAreaChanged();
        // A low plot (the runs page at 1366 x 768) cannot hold "Peak allocated (GB)" upright: QtCharts
        // would cut it to "Peak allocate...". The short title then, decided on the plot's height alone
        // (the title's width does not change it), so this settles at once.
        QValueAxis* y = m_backend->valueY;
        if (!y || m_data.yShortTitle.isEmpty())
            return;
        const bool fits = QFontMetrics(y->titleFont()).horizontalAdvance(m_data.yTitle) + 12
            <= m_backend->chart->plotArea().height();
        const QString& want = fits ? m_data.yTitle : m_data.yShortTitle;
        if (y->titleText() != want)
            y->setTitleText(want);
    };
}

void TradeoffChart::setData(const TradeoffData& data)
{
    QElapsedTimer timer;
    timer.start();
    m_data = data;
    auto& b = *m_backend;
    b.view->setUpdatesEnabled(false);
    b.clear();
    b.chart->setTitle(tr("Trade-off: replay cost against memory"));
    // Legend entries in their series' own marker (circle, square, triangle, dashed line): with QtCharts'
    // default square, module sets, control and front of one comparison all read as the same blue box.
    b.chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);

    double xmin = HUGE_VAL, xmax = -HUGE_VAL, ymin = HUGE_VAL, ymax = -HUGE_VAL;
    for (const auto& p : data.points) {
        if (p.x) {
            xmin = std::min(xmin, *p.x);
            xmax = std::max(xmax, *p.x);
        }
        ymin = std::min(ymin, p.y);
        ymax = std::max(ymax, p.y);
    }
    if (data.points.isEmpty()) {
        b.view->setUpdatesEnabled(true);
        setEmptyMessage(
            tr("No runs to compare: import or run a recipe with its [] control, or loosen the filter."));
        m_lastRebuildMicros = timer.nsecsElapsed() / 1000;
        return;
    }
    setEmptyMessage({});
    if (xmin > xmax) { // no point has a step time (every module set failed)
        xmin = 0.0;
        xmax = 1.0;
    }
    if (data.memoryTarget) {
        ymin = std::min(ymin, *data.memoryTarget);
        ymax = std::max(ymax, *data.memoryTarget);
    }
    auto [px0, px1] = padded(xmin, xmax);
    // Milliseconds and gigabytes are never below zero: a margin or a far target must not draw -20 GB.
    const bool absolute = !data.yTitle.endsWith(QLatin1String("(%)"));
    if (absolute)
        px0 = std::max(0.0, px0);
    // Failed module sets without a step time sit right of the last tick, in their own column.
    bool anyNoTime = false;
    for (const auto& p : data.points)
        anyNoTime |= !p.x;
    auto [py0, py1] = padded(ymin, ymax);
    if (absolute)
        py0 = std::max(0.0, py0);

    QValueAxis* axisX = b.xAxis();
    axisX->setTitleText(data.xTitle + (anyNoTime ? tr("   (right edge: failed, no step time)") : QString()));
    const NiceAxis nx = applyNiceAxis(axisX, px0, px1);
    const double noTimeX = nx.max + nx.step * 0.5;
    if (anyNoTime)
        applyNiceAxis(axisX, px0, px1, nx.max + nx.step * 0.85);
    QValueAxis* axisY = b.yAxis();
    axisY->setTitleText(data.yTitle);
    applyNiceAxis(axisY, py0, py1);

    auto attach = [&](QXYSeries* s) {
        b.chart->addSeries(s);
        s->attachAxis(axisX);
        s->attachAxis(axisY);
    };

    struct SeriesPoints {
        QVector<QPointF> values;
        QVector<QString> tips;
        QVector<qint64> runs;
    };
    auto hookTooltips = [this](QScatterSeries* s, const SeriesPoints& sp) {
        connect(s, &QScatterSeries::hovered, this, [this, s, sp](const QPointF& point, bool state) {
            if (!state) {
                showHoverTip(QString());
                return;
            }
            const auto pts = s->points();
            for (int i = 0; i < pts.size(); ++i) {
                if (pts[i] == point && i < sp.tips.size()) {
                    showHoverTip(sp.tips[i]);
                    return;
                }
            }
        });
        connect(s, &QScatterSeries::clicked, this, [this, s, sp](const QPointF& point) {
            const auto pts = s->points();
            for (int i = 0; i < pts.size(); ++i) {
                if (pts[i] == point && i < sp.runs.size()) {
                    if (sp.runs[i]) // a prediction has no run to show
                        emit runActivated(sp.runs[i]);
                    return;
                }
            }
        });
    };

    // Many comparisons at once (a sweep): one series per kind instead of per comparison, no fronts and no
    // labels. QtCharts' cost grows with the number of series and legend markers, not with points.
    const bool manyGroups = data.groups.size() > 6;
    SeriesPoints chosenPoints; // the advisor's choice, ringed over its point (and answering as it does)
    // A plan's predictions (applyPlan): one hollow series across comparisons, and the plan's front through
    // them and the measurements that took their places.
    auto* predicted = new QScatterSeries;
    predicted->setName(predictedSeriesName(data.provisionalPredictions));
    predicted->setMarkerShape(QScatterSeries::MarkerShapePentagon);
    predicted->setMarkerSize(15);
    predicted->setColor(QColor(255, 255, 255, 0));
    QPen predictedPen(kPredicted);
    predictedPen.setWidthF(2.0);
    predicted->setPen(predictedPen);
    predicted->setBorderColor(kPredicted);
    SeriesPoints predictedPoints;
    QVector<QPointF> planFront;
    const bool labelPoints = data.points.size() <= 60;
    const int seriesGroups = manyGroups ? 1 : int(data.groups.size());
    for (int g = 0; g < seriesGroups; ++g) {
        const QColor color = groupColor(g);
        auto* pass = new QScatterSeries;
        const bool named = data.groups.size() > 1 && !manyGroups; // series carry their comparison's name
        pass->setName(named  ? data.groups[g]
                : manyGroups ? tr("module sets (%n comparisons)", nullptr, int(data.groups.size()))
                             : tr("module sets"));
        pass->setMarkerSize(11);
        pass->setColor(color);
        pass->setBorderColor(color.darker(130));
        SeriesPoints passPoints;
        auto* control = new QScatterSeries;
        control->setName(tr("control []") + (named ? QStringLiteral(" — ") + data.groups[g] : QString()));
        control->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        control->setMarkerSize(15);
        // Named per comparison, a control keeps its comparison's colour; otherwise it gets its own.
        control->setColor(named ? color : kControl);
        control->setBorderColor(Qt::black);
        QPen controlPen(Qt::black);
        controlPen.setWidthF(2.0);
        control->setPen(controlPen);
        SeriesPoints controlPoints;
        auto* failed = new QScatterSeries;
        failed->setName(
            tr("failed (OOM / error)") + (named ? QStringLiteral(" — ") + data.groups[g] : QString()));
        failed->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
        failed->setMarkerSize(14);
        failed->setColor(QColor(255, 255, 255, 0));
        QPen failedPen(kFailed);
        failedPen.setWidthF(2.0);
        failed->setPen(failedPen);
        failed->setBorderColor(kFailed);
        SeriesPoints failedPoints;
        // Cancelled or stopped without a result: not a failure of the recipe, so not drawn as one.
        auto* stopped = new QScatterSeries;
        stopped->setName(tr("stopped (cancelled / no result)")
            + (named ? QStringLiteral(" — ") + data.groups[g] : QString()));
        stopped->setMarkerShape(QScatterSeries::MarkerShapeCircle);
        stopped->setMarkerSize(12);
        stopped->setColor(QColor(255, 255, 255, 0));
        QPen stoppedPen(QColor(0x80, 0x80, 0x80));
        stoppedPen.setWidthF(2.0);
        stoppedPen.setStyle(Qt::DotLine);
        stopped->setPen(stoppedPen);
        stopped->setBorderColor(QColor(0x80, 0x80, 0x80));
        SeriesPoints stoppedPoints;
        QVector<QPointF> front;

        for (const auto& p : data.points) {
            if (!manyGroups && p.groupIndex != g)
                continue;
            const QPointF at(p.x ? *p.x : noTimeX, p.y);
            QScatterSeries* into = p.predicted ? predicted
                : p.stopped                    ? stopped
                : p.failed                     ? failed
                : p.isControl                  ? control
                                               : pass;
            SeriesPoints& sp = p.predicted ? predictedPoints
                : p.stopped                ? stoppedPoints
                : p.failed                 ? failedPoints
                : p.isControl              ? controlPoints
                                           : passPoints;
            for (qint64 id : p.runIds)
                b.pointOfRun.insert(id, { into, at });
            if (p.chosen) {
                chosenPoints.values << at;
                chosenPoints.tips << p.tooltip;
                chosenPoints.runs << p.runId;
            }
            sp.values << at;
            sp.tips << p.tooltip;
            sp.runs << p.runId;
            if (p.onFront && !manyGroups)
                front << at;
            if (p.onPlanFront)
                planFront << at;
            if (labelPoints) {
                auto* item = new QGraphicsSimpleTextItem(p.moduleSet, b.chart);
                item->setBrush(p.stopped ? QColor(0x70, 0x70, 0x70)
                        : p.failed       ? kFailed
                                         : QColor(0x30, 0x30, 0x30));
                QFont f = item->font();
                f.setPointSizeF(f.pointSizeF() * 0.9);
                item->setFont(f);
                item->setZValue(10);
                b.labels.push_back({ item, at, into });
            }
        }
        std::sort(
            front.begin(), front.end(), [](const QPointF& a, const QPointF& c) { return a.x() < c.x(); });
        if (front.size() > 1) {
            auto* line = new QLineSeries;
            line->setName(manyGroups
                    ? QString()
                    : tr("Pareto front") + (named ? QStringLiteral(" — ") + data.groups[g] : QString()));
            QPen pen(color);
            pen.setStyle(Qt::DashLine);
            pen.setWidthF(1.5);
            line->setPen(pen);
            line->append(front);
            attach(line);
        }
        const std::pair<QScatterSeries*, const SeriesPoints*> made[] = { { pass, &passPoints },
            { control, &controlPoints }, { failed, &failedPoints }, { stopped, &stoppedPoints } };
        for (const auto& [s, sp] : made) {
            if (sp->values.isEmpty()) {
                delete s;
                continue;
            }
            // Hundreds of points: painted by one item of ours, not one QtCharts graphics item each.
            if (sp->values.size() > 200) {
                attach(s);
                b.clouds << new PointCloud(
                    b.chart, s, sp->values, sp->tips, sp->runs,
                    [this](qint64 run) { emit runActivated(run); },
                    [this](const QString& tip) { showHoverTip(tip); });
                continue;
            }
            s->append(sp->values);
            attach(s);
            hookTooltips(s, *sp);
        }
    }
    if (!predictedPoints.values.isEmpty()) {
        // The plan's front by peak (its order: one choice per memory level), through predictions and the
        // measurements that replaced them; unnamed, so the legend shows the points' entry alone.
        std::sort(planFront.begin(), planFront.end(),
            [](const QPointF& a, const QPointF& c) { return a.y() < c.y(); });
        if (planFront.size() > 1) {
            auto* line = new QLineSeries;
            QPen pen(kPredicted);
            pen.setStyle(Qt::DotLine);
            pen.setWidthF(1.5);
            line->setPen(pen);
            line->append(planFront);
            attach(line);
        }
        predicted->append(predictedPoints.values);
        attach(predicted);
        hookTooltips(predicted, predictedPoints);
    } else {
        delete predicted;
    }
    if (!chosenPoints.values.isEmpty()) {
        auto* chosen = new QScatterSeries;
        chosen->setName(tr("advisor's choice"));
        chosen->setMarkerShape(QScatterSeries::MarkerShapeCircle);
        chosen->setMarkerSize(24);
        chosen->setColor(QColor(255, 255, 255, 0));
        QPen pen(QColor(0x1b, 0x7f, 0x3b));
        pen.setWidthF(3.0);
        chosen->setPen(pen);
        chosen->setBorderColor(pen.color());
        chosen->append(chosenPoints.values);
        attach(chosen);
        // The ring lies over its point: hovering or clicking it is hovering or clicking the point.
        hookTooltips(chosen, chosenPoints);
    }
    if (data.memoryTarget) {
        auto* target = new QLineSeries;
        target->setName(tr("memory target %1%2")
                            .arg(*data.memoryTarget, 0, 'f', 2)
                            .arg(data.yTitle.endsWith(QLatin1String("(%)")) ? QStringLiteral("%")
                                                                            : QStringLiteral(" GB")));
        QPen pen(kFailed);
        pen.setStyle(Qt::DashDotLine);
        pen.setWidthF(1.5);
        target->setPen(pen);
        target->append(axisX->min(), *data.memoryTarget);
        target->append(axisX->max(), *data.memoryTarget);
        attach(target);
    }
    // Unnamed series (many groups' fronts) stay out of the legend.
    for (QLegendMarker* m : b.chart->legend()->markers())
        m->setVisible(!m->label().isEmpty());
    b.chart->legend()->setVisible(true);
    b.view->setUpdatesEnabled(true);
    b.placeLabels();
    m_lastRebuildMicros = timer.nsecsElapsed() / 1000;
}

} // namespace rs::ui
