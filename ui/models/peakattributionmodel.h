// SPDX-License-Identifier: Apache-2.0
// What holds the peak as a table: one row per bar of chartdata.h's PeakAttributionData (a run and where its
// figures come from: "measured" or "estimate"), the phase, the total and one column per category of
// peakCategories() in GB (core/units' formatGb). Fed the same struct as the chart, so a measured attribution
// from the store and an estimate look alike; the tests dump it, the runs page shows it beside the chart.
#pragma once

#include <QAbstractTableModel>

#include "charts/chartdata.h"

namespace rs::ui {

class PeakAttributionModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { RunColumn, SeriesColumn, PhaseColumn, TotalColumn, FirstCategoryColumn };
    enum Role {
        BytesRole = Qt::UserRole + 1, // the cell's bytes (qint64), for the total and category columns
        CategoryRole, // the category key ("gradient_buffer") of a category column's header
    };

    explicit PeakAttributionModel(QObject* parent = nullptr);

    void setAttribution(const PeakAttributionData& data);
    const PeakAttributionData& attribution() const { return m_data; }
    // The table as text, one line per row (header first), cells tab-separated: what the tests compare.
    QString dump() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    PeakAttributionData m_data;
};

} // namespace rs::ui
