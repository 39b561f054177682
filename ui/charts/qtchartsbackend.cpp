// SPDX-License-Identifier: Apache-2.0
// ChartView over QtCharts: the view, its empty message, tooltips, export and rendering (qtchartsbackend.h).
#include "charts/qtchartsbackend.h"

#include <cmath>

#include <QCoreApplication>
#include <QCursor>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QHelpEvent>
#include <QLegendMarker>
#include <QPainter>
#include <QSvgGenerator>
#include <QToolTip>

namespace rs::ui {

NiceAxis applyNiceAxis(QValueAxis* axis, double lo, double hi, std::optional<double> extendTo)
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

QString ChartView::emptyMessage() const
{
    return isEmpty() ? m_backend->empty->text() : QString();
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

} // namespace rs::ui
