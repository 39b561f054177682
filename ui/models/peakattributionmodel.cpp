// SPDX-License-Identifier: Apache-2.0
#include "models/peakattributionmodel.h"

#include "core/units.h"

namespace rs::ui {

PeakAttributionModel::PeakAttributionModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void PeakAttributionModel::setAttribution(const PeakAttributionData& data)
{
    beginResetModel();
    m_data = data;
    endResetModel();
}

int PeakAttributionModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_data.bars.size());
}

int PeakAttributionModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : FirstCategoryColumn + int(peakCategories().size());
}

QVariant PeakAttributionModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= m_data.bars.size() || index.column() >= columnCount())
        return {};
    const PeakAttribution& a = m_data.bars[index.row()];
    const int category = index.column() - FirstCategoryColumn;
    const qint64 bytes = index.column() == TotalColumn ? a.total()
        : category >= 0                                ? a.category(peakCategories()[category])
                                                       : 0;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case RunColumn:
            return a.run;
        case SeriesColumn:
            return a.series;
        case PhaseColumn:
            return a.phase;
        default:
            return QString::fromStdString(formatGb(bytes));
        }
    case BytesRole:
        return index.column() >= TotalColumn ? QVariant(bytes) : QVariant();
    case Qt::ToolTipRole:
        if (index.column() > TotalColumn && a.total() > 0)
            return tr("%1 bytes, %2% of the peak")
                .arg(bytes)
                .arg(double(bytes) / double(a.total()) * 100.0, 0, 'f', 1);
        break;
    case Qt::TextAlignmentRole:
        if (index.column() >= TotalColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    }
    return {};
}

QVariant PeakAttributionModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= columnCount())
        return {};
    const int category = section - FirstCategoryColumn;
    if (role == CategoryRole)
        return category >= 0 ? QVariant(peakCategories()[category]) : QVariant();
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case RunColumn:
        return tr("Run");
    case SeriesColumn:
        return tr("Source");
    case PhaseColumn:
        return tr("Phase");
    case TotalColumn:
        return tr("Total GB");
    default:
        return tr("%1 GB").arg(peakCategories()[category]);
    }
}

QString PeakAttributionModel::dump() const
{
    QStringList lines;
    QStringList cells;
    for (int c = 0; c < columnCount(); ++c)
        cells << headerData(c, Qt::Horizontal).toString();
    lines << cells.join(QLatin1Char('\t'));
    for (int r = 0; r < rowCount(); ++r) {
        cells.clear();
        for (int c = 0; c < columnCount(); ++c)
            cells << index(r, c).data().toString();
        lines << cells.join(QLatin1Char('\t'));
    }
    if (m_data.memoryTargetGb)
        lines << tr("memory target\t%1 GB").arg(*m_data.memoryTargetGb, 0, 'f', 2);
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

} // namespace rs::ui
