// SPDX-License-Identifier: Apache-2.0
// The per-iteration memory lines by phase (chartdata.h's IterationLine), over the QtCharts backend; also the
// launch page's live curve.
#include <cmath>

#include <QLineSeries>

#include "charts/qtchartsbackend.h"

namespace rs::ui {

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
    // Up to eleven lines (three phases allocated and reserved, after the step, the control's pale copies):
    // in one row under the plot QtCharts cuts every name to "forward peak ..." at 1366 px, so more than
    // four go to the right, one per line, whole.
    if (lines.size() + (targetGb ? 1 : 0) > 4)
        b.chart->legend()->setAlignment(Qt::AlignRight);
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
