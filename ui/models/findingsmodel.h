// SPDX-License-Identifier: Apache-2.0
// The validator's findings for the recipe being edited: one row per finding, in Megatron's evaluation
// order. Fed whole by setFindings after every edit; the view never asks the rules engine itself.
#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "core/rules.h"

namespace rs::ui {

class FindingsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        SeverityColumn,
        RuleColumn,
        MessageColumn,
        FixItColumn,
        SourceColumn,
        FieldsColumn,
        ColumnCount
    };
    enum Role {
        SeverityRole = Qt::UserRole + 1, // rs::Severity as int
        HasFixItRole, // bool
        FieldsRole, // QStringList of recipe keys
    };

    explicit FindingsModel(QObject* parent = nullptr);

    void setFindings(const std::vector<Finding>& findings);
    const std::vector<Finding>& findings() const { return m_findings; }
    const Finding* finding(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString severityText(Severity severity);
    static QColor severityColor(Severity severity);

private:
    std::vector<Finding> m_findings;
};

} // namespace rs::ui
