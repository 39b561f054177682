// SPDX-License-Identifier: Apache-2.0
// The one place QtCharts is used. Everything it draws comes from chartdata.h values; replacing the
// library (Qt Graphs, once it has widgets) means rewriting this file only.
#include <cmath>
#include <functional>

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCoreApplication>
#include <QCursor>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QGraphicsSceneHoverEvent>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsSimpleTextItem>
#include <QHash>
#include <QHelpEvent>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>
#include <QStackedLayout>
#include <QSvgGenerator>
#include <QToolTip>
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

ChartView::ChartView(QWidget* parent)
    : QWidget(parent)
    , m_backend(std::make_unique<Backend>())
{
    auto& b = *m_backend;
    b.chart = b.makeChart();
    b.view = new QChartView(b.chart);
    b.view->setRenderHint(QPainter::Antialiasing);
    // Every redraw replaces all items: a BSP index would be rebuilt each time for nothing.
    b.view->scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
    b.view->setMinimumSize(300, 200);
    b.empty = new QLabel;
    b.empty->setAlignment(Qt::AlignCenter);
    b.empty->setWordWrap(true);
    b.empty->setStyleSheet(QStringLiteral("color: gray;"));
    b.stack = new QStackedLayout(this);
    b.stack->setContentsMargins(0, 0, 0, 0);
    b.stack->addWidget(b.view);
    b.stack->addWidget(b.empty);
    b.view->viewport()->installEventFilter(this);
    b.onPlotAreaChanged = [this] {
        m_backend->placeLabels();
        if (m_backend->onCloudsMoved)
            m_backend->onCloudsMoved();
    };
}

ChartView::~ChartView() = default;

bool ChartView::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_backend->view->viewport() && event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        if (m_backend->hoverTip.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), m_backend->hoverTip, m_backend->view->viewport());
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

void ChartView::showHoverTip(const QString& tip)
{
    m_backend->hoverTip = tip;
    if (tip.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(QCursor::pos(), tip, m_backend->view->viewport());
}

QString ChartView::hoverTip() const
{
    return m_backend->hoverTip;
}

QWidget* ChartView::viewport() const
{
    return m_backend->view->viewport();
}

QStringList ChartView::legendNames() const
{
    QStringList names;
    for (QLegendMarker* m : m_backend->chart->legend()->markers()) {
        if (!m->label().isEmpty() && !names.contains(m->label()))
            names << m->label();
    }
    return names;
}

QVector<double> ChartView::axisTicks(Qt::Orientation orientation) const
{
    const QValueAxis* axis = orientation == Qt::Horizontal ? m_backend->valueX : m_backend->valueY;
    QVector<double> ticks;
    if (!axis)
        return ticks;
    if (axis->tickType() == QValueAxis::TicksDynamic) {
        const double step = axis->tickInterval();
        double t = axis->tickAnchor() + std::ceil((axis->min() - axis->tickAnchor()) / step - 1e-9) * step;
        for (; t <= axis->max() + step * 1e-9 && ticks.size() < 100; t += step)
            ticks << t;
    } else {
        const int n = axis->tickCount();
        for (int i = 0; i < n; ++i)
            ticks << axis->min() + (axis->max() - axis->min()) * i / std::max(1, n - 1);
    }
    return ticks;
}

QPoint ChartView::viewPositionOfRun(qint64 runId) const
{
    const auto it = m_backend->pointOfRun.constFind(runId);
    if (it == m_backend->pointOfRun.constEnd())
        return QPoint(-1, -1);
    const QPointF scene
        = m_backend->chart->mapToScene(m_backend->chart->mapToPosition(it->second, it->first));
    return m_backend->view->mapFromScene(scene);
}

bool ChartView::event(QEvent* event)
{
    // QChartView changes its minimum size whenever axes or legend change, which would lay out every
    // ancestor again (the runs page's 10,000-row table included) on each redraw. A chart fills whatever
    // room it is given, so the request stops here: the chart is laid out in place.
    if (event->type() == QEvent::LayoutRequest) {
        m_backend->stack->setGeometry(rect());
        return true;
    }
    return QWidget::event(event);
}

QSize ChartView::sizeHint() const
{
    return QSize(800, 450);
}

QSize ChartView::minimumSizeHint() const
{
    return QSize(300, 200);
}

void ChartView::setEmptyMessage(const QString& message)
{
    // setText relayouts every parent (the label wraps): only when it changes, or a redraw inside the runs
    // page would lay out its 10,000-row table again.
    if (m_backend->empty->text() != message)
        m_backend->empty->setText(message);
    m_backend->stack->setCurrentWidget(
        message.isEmpty() ? static_cast<QWidget*>(m_backend->view) : m_backend->empty);
}

bool ChartView::isEmpty() const
{
    return m_backend->stack->currentWidget() == m_backend->empty;
}

void ChartView::renderTo(QPainter* painter, const QRectF& target, const QSize& size) const
{
    m_backend->render(painter, target, size);
}

QImage ChartView::toImage(const QSize& size) const
{
    const QSize s = m_backend->view->isVisible() ? m_backend->chart->size().toSize() : size;
    QImage image(s * 2, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(2.0);
    image.fill(Qt::white);
    QPainter painter(&image);
    m_backend->render(&painter, QRectF(QPointF(0, 0), QSizeF(s)), size);
    return image;
}

bool ChartView::exportImage(const QString& path, QString* error, const QSize& size) const
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("svg")) {
        const QSize s = m_backend->view->isVisible() ? m_backend->chart->size().toSize() : size;
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(s);
        svg.setViewBox(QRect(QPoint(0, 0), s));
        svg.setTitle(m_backend->chart->title());
        svg.setDescription(QStringLiteral("Recompute Studio chart"));
        QPainter painter;
        if (!painter.begin(&svg)) {
            *error = tr("Cannot write %1").arg(path);
            return false;
        }
        m_backend->render(&painter, QRectF(QPointF(0, 0), QSizeF(s)), size);
        painter.end();
        return QFileInfo::exists(path) || (*error = tr("Cannot write %1").arg(path), false);
    }
    if (suffix == QLatin1String("png")) {
        if (!toImage(size).save(path, "PNG")) {
            *error = tr("Cannot write %1").arg(path);
            return false;
        }
        return true;
    }
    *error = tr("%1: unknown image type '%2'; use .png or .svg").arg(path, suffix);
    return false;
}

// ---------------------------------------------------------------------------------------------------

namespace {

const QColor kGroupColors[] = { QColor(0x1f, 0x77, 0xb4), QColor(0x2c, 0xa0, 0x2c), QColor(0x94, 0x67, 0xbd),
    QColor(0x8c, 0x56, 0x4b), QColor(0x17, 0xbe, 0xcf), QColor(0xbc, 0xbd, 0x22), QColor(0xe3, 0x77, 0xc2) };
const QColor kFailed(0xc6, 0x28, 0x28);
// The [] control's fill where one series holds every comparison's controls: orange is in no group colour.
const QColor kControl(0xff, 0x7f, 0x0e);

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

// Round ticks (nice numbers) over [lo, hi]; the axis may reach further right (`extendTo`, the failed
// column) without a tick there. Labels carry as many decimals as the step needs.
NiceAxis applyNiceAxis(QValueAxis* axis, double lo, double hi, std::optional<double> extendTo = {})
{
    const NiceAxis n = niceAxis(lo, hi);
    axis->setRange(n.min, extendTo ? std::max(n.max, *extendTo) : n.max);
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(n.min);
    axis->setTickInterval(n.step);
    const int decimals = std::clamp(int(-std::floor(std::log10(n.step) + 1e-9)), 0, 6);
    axis->setLabelFormat(QStringLiteral("%.%1f").arg(decimals));
    return n;
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
    const auto [px0, px1] = padded(xmin, xmax);
    // Failed module sets without a step time sit right of the last tick, in their own column.
    bool anyNoTime = false;
    for (const auto& p : data.points)
        anyNoTime |= !p.x;
    const auto [py0, py1] = padded(ymin, ymax);

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
                    emit runActivated(sp.runs[i]);
                    return;
                }
            }
        });
    };

    // Many comparisons at once (a sweep): one series per kind instead of per comparison, no fronts and no
    // labels. QtCharts' cost grows with the number of series and legend markers, not with points.
    const bool manyGroups = data.groups.size() > 6;
    QVector<QPointF> chosenAt; // the advisor's choice, ringed over its point
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
            QScatterSeries* into = p.stopped ? stopped : p.failed ? failed : p.isControl ? control : pass;
            SeriesPoints& sp = p.stopped ? stoppedPoints
                : p.failed               ? failedPoints
                : p.isControl            ? controlPoints
                                         : passPoints;
            for (qint64 id : p.runIds)
                b.pointOfRun.insert(id, { into, at });
            if (p.chosen)
                chosenAt << at;
            sp.values << at;
            sp.tips << p.tooltip;
            sp.runs << p.runId;
            if (p.onFront && !manyGroups)
                front << at;
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
    if (!chosenAt.isEmpty()) {
        auto* chosen = new QScatterSeries;
        chosen->setName(tr("advisor's choice"));
        chosen->setMarkerShape(QScatterSeries::MarkerShapeCircle);
        chosen->setMarkerSize(24);
        chosen->setColor(QColor(255, 255, 255, 0));
        QPen pen(QColor(0x1b, 0x7f, 0x3b));
        pen.setWidthF(3.0);
        chosen->setPen(pen);
        chosen->setBorderColor(pen.color());
        chosen->append(chosenAt);
        attach(chosen);
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

// ---------------------------------------------------------------------------------------------------

RankBarsChart::RankBarsChart(QWidget* parent)
    : ChartView(parent)
{
    setEmptyMessage(tr("Select a run to see its per-rank peaks."));
}

void RankBarsChart::setData(const QString& title, const QVector<RankBar>& bars)
{
    auto& b = *m_backend;
    b.clear();
    if (bars.isEmpty()) {
        setEmptyMessage(tr("No per-rank peaks stored for this run."));
        return;
    }
    setEmptyMessage({});
    b.chart->setTitle(title);
    auto* allocated = new QBarSet(tr("peak allocated"));
    allocated->setColor(QColor(0x1f, 0x77, 0xb4));
    auto* reserved = new QBarSet(tr("peak reserved"));
    reserved->setColor(QColor(0xff, 0x7f, 0x0e));
    QStringList categories;
    double ymax = 0.0;
    for (const auto& bar : bars) {
        *allocated << bar.allocatedGb;
        *reserved << bar.reservedGb;
        categories << (bar.peakPhase.isEmpty() ? tr("rank %1").arg(bar.rank)
                                               : tr("rank %1\n(%2)").arg(bar.rank).arg(bar.peakPhase));
        ymax = std::max({ ymax, bar.allocatedGb, bar.reservedGb });
    }
    auto* series = new QBarSeries;
    series->append(allocated);
    series->append(reserved);
    b.chart->addSeries(series);
    QBarCategoryAxis* axisX = b.categoryAxis();
    axisX->append(categories);
    QValueAxis* axisY = b.yAxis();
    axisY->setTitleText(tr("GB"));
    applyNiceAxis(axisY, 0.0, ymax * 1.05 + 1e-9);
    series->attachAxis(axisX);
    series->attachAxis(axisY);
    connect(series, &QBarSeries::hovered, this, [this, bars](bool status, int index, QBarSet* set) {
        if (!status || index < 0 || index >= bars.size()) {
            showHoverTip(QString());
            return;
        }
        const RankBar& bar = bars[index];
        showHoverTip(QStringLiteral("rank %1 — %2: %3 GB<br>reserved − allocated: %4 GB")
                         .arg(bar.rank)
                         .arg(set->label())
                         .arg(set->at(index), 0, 'f', 3)
                         .arg(bar.reservedGb - bar.allocatedGb, 0, 'f', 3));
    });
}

// ---------------------------------------------------------------------------------------------------

MemoryLinesChart::MemoryLinesChart(QWidget* parent)
    : ChartView(parent)
{
    setEmptyMessage(tr("Select a run to see its per-iteration memory."));
}

void MemoryLinesChart::setData(
    const QString& title, const QVector<IterationLine>& lines, std::optional<double> targetGb)
{
    auto& b = *m_backend;
    b.clear();
    if (lines.isEmpty()) {
        setEmptyMessage(
            tr("No per-iteration memory for this run (runs imported from the guide carry peaks only)."));
        return;
    }
    setEmptyMessage({});
    b.chart->setTitle(title);
    double xmax = 1.0, ymax = 0.0;
    for (const auto& l : lines) {
        for (const QPointF& p : l.points) {
            xmax = std::max(xmax, p.x());
            ymax = std::max(ymax, p.y());
        }
    }
    if (targetGb)
        ymax = std::max(ymax, *targetGb);
    // GB like every other figure of the product (small CPU runs get more decimals, not another unit).
    const QString unit = tr("GB");
    QValueAxis* axisX = b.xAxis();
    axisX->setTitleText(tr("iteration"));
    axisX->setRange(0.5, xmax + 0.5);
    axisX->setLabelFormat(QStringLiteral("%d"));
    axisX->setTickType(QValueAxis::TicksDynamic);
    axisX->setTickAnchor(1.0);
    axisX->setTickInterval(std::max(1.0, std::ceil(xmax / 10.0)));
    QValueAxis* axisY = b.yAxis();
    axisY->setTitleText(unit);
    applyNiceAxis(axisY, 0.0, ymax * 1.05 + 1e-9);
    for (const auto& l : lines) {
        auto* s = new QLineSeries;
        s->setName(l.name);
        QPen pen(l.color);
        pen.setWidthF(2.0);
        if (l.dashed)
            pen.setStyle(Qt::DashLine);
        s->setPen(pen);
        s->setPointsVisible(l.points.size() <= 40);
        s->append(l.points);
        b.chart->addSeries(s);
        s->attachAxis(axisX);
        s->attachAxis(axisY);
        const QString name = l.name;
        connect(s, &QLineSeries::hovered, this, [this, name, unit](const QPointF& p, bool state) {
            showHoverTip(state ? QStringLiteral("%1<br>iteration %2: %3 %4")
                                     .arg(name)
                                     .arg(std::lround(p.x()))
                                     .arg(p.y(), 0, 'f', 3)
                                     .arg(unit)
                               : QString());
        });
    }
    if (targetGb) {
        auto* target = new QLineSeries;
        target->setName(tr("memory target"));
        QPen pen(kFailed);
        pen.setStyle(Qt::DashDotLine);
        target->setPen(pen);
        target->append(0.5, *targetGb);
        target->append(xmax + 0.5, *targetGb);
        b.chart->addSeries(target);
        target->attachAxis(axisX);
        target->attachAxis(axisY);
    }
}

} // namespace rs::ui
