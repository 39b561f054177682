// SPDX-License-Identifier: Apache-2.0
// The per-rank bars: peak allocated against peak reserved (chartdata.h's RankBar), over the QtCharts backend.
#include <QBarSeries>
#include <QBarSet>

#include "charts/qtchartsbackend.h"

namespace rs::ui {

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

} // namespace rs::ui
