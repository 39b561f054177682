// SPDX-License-Identifier: Apache-2.0
// What holds the peak: stacked horizontal bars of chartdata.h's PeakAttribution (one per run and source),
// the memory target as a vertical line, over the QtCharts backend (qtchartsbackend.h).
#include <QBarSet>
#include <QHorizontalStackedBarSeries>
#include <QLegendMarker>
#include <QLineSeries>

#include "charts/qtchartsbackend.h"

namespace rs::ui {

namespace {

// One colour per category of peakCategories(), in its order (the recipe page's estimate bar's palette).
const QColor kCategoryColors[] = { QColor(0x4e, 0x79, 0xa7), QColor(0x59, 0xa1, 0x4f),
    QColor(0xf2, 0x8e, 0x2b), QColor(0xb0, 0x7a, 0xa1), QColor(0xe1, 0x57, 0x59), QColor(0xed, 0xc9, 0x48),
    QColor(0x76, 0xb7, 0xb2), QColor(0x9c, 0x75, 0x5f) };

QString categoryLabel(const QString& key)
{
    return QString(key).replace(QLatin1Char('_'), QLatin1Char(' '));
}

QString barLabel(const PeakAttribution& a)
{
    QString label = a.run + QLatin1Char('\n') + a.series;
    if (!a.phase.isEmpty())
        label += QStringLiteral(", ") + a.phase;
    return label;
}

} // namespace

PeakAttributionChart::PeakAttributionChart(QWidget* parent)
    : ChartView(parent)
{
    setEmptyMessage(tr("Select a run to see what holds its peak."));
}

void PeakAttributionChart::setData(const PeakAttributionData& data)
{
    m_data = data;
    auto& b = *m_backend;
    b.clear();
    if (data.bars.isEmpty()) {
        setEmptyMessage(tr("Nothing to attribute: the run keeps no full recipe to estimate and no measured "
                           "attribution is stored."));
        return;
    }
    setEmptyMessage({});
    b.chart->setTitle(data.title);
    const QStringList& categories = peakCategories();
    // QtCharts draws the first category at the bottom: the bars go in reversed, so the first is on top.
    QVector<PeakAttribution> bars(data.bars.rbegin(), data.bars.rend());
    auto* series = new QHorizontalStackedBarSeries;
    double xmax = 0.0;
    for (const auto& a : bars)
        xmax = std::max(xmax, double(a.total()) / kBytesPerGb);
    for (int c = 0; c < categories.size(); ++c) {
        bool any = false;
        for (const auto& a : bars)
            any |= a.category(categories[c]) != 0;
        if (!any)
            continue;
        auto* set = new QBarSet(categoryLabel(categories[c]));
        set->setColor(kCategoryColors[c % int(std::size(kCategoryColors))]);
        set->setBorderColor(Qt::white);
        for (const auto& a : bars)
            *set << double(a.category(categories[c])) / kBytesPerGb;
        series->append(set);
    }
    series->setBarWidth(0.6);
    b.chart->addSeries(series);
    QStringList labels;
    for (const auto& a : bars)
        labels << barLabel(a);
    b.categoryX = new QBarCategoryAxis;
    b.categoryX->append(labels);
    b.chart->addAxis(b.categoryX, Qt::AlignLeft);
    QValueAxis* axisX = b.xAxis();
    axisX->setTitleText(tr("GB at the phase's peak"));
    if (data.memoryTargetGb)
        xmax = std::max(xmax, *data.memoryTargetGb);
    applyNiceAxis(axisX, 0.0, xmax * 1.05 + 1e-9);
    series->attachAxis(b.categoryX);
    series->attachAxis(axisX);
    connect(series, &QHorizontalStackedBarSeries::hovered, this,
        [this, bars](bool status, int index, QBarSet* set) {
            if (!status || index < 0 || index >= bars.size()) {
                showHoverTip(QString());
                return;
            }
            const PeakAttribution& a = bars[index];
            const double gb = set->at(index);
            const double total = double(a.total()) / kBytesPerGb;
            showHoverTip(QStringLiteral("%1 (%2, %3)<br>%4: %5 GB of %6 GB (%7%)")
                             .arg(a.run.toHtmlEscaped(), a.series, a.phase, set->label())
                             .arg(gb, 0, 'f', 3)
                             .arg(total, 0, 'f', 3)
                             .arg(total > 0 ? gb / total * 100.0 : 0.0, 0, 'f', 1));
        });
    if (data.memoryTargetGb) {
        // A vertical line over the bars: a value axis of its own (0..1, hidden) spans the plot's height.
        auto* span = new QValueAxis;
        span->setRange(0.0, 1.0);
        span->setVisible(false);
        b.chart->addAxis(span, Qt::AlignRight);
        auto* target = new QLineSeries;
        target->setName(tr("memory target %1 GB").arg(*data.memoryTargetGb, 0, 'f', 2));
        QPen pen(kFailed);
        pen.setStyle(Qt::DashDotLine);
        pen.setWidthF(2.0);
        target->setPen(pen);
        target->append(*data.memoryTargetGb, 0.0);
        target->append(*data.memoryTargetGb, 1.0);
        b.chart->addSeries(target);
        target->attachAxis(axisX);
        target->attachAxis(span);
    }
    b.chart->legend()->setVisible(true);
}

} // namespace rs::ui
