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

    // With the recipe, a finding about unknown recompute labels (R11) gets a "did you mean" hint: the
    // nearest label the recipe's profile allows, for each label it does not (core_atn: core_attn).
    void setFindings(const std::vector<Finding>& findings, const Recipe* recipe = nullptr);
    // The hint of a row ("" when none).
    QString hint(int row) const;
    // "did you mean 'core_attn' for 'core_atn'?" for the labels of `recipe` its profile does not allow.
    static QString labelHint(const Recipe& recipe);
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
    QStringList m_hints; // one per finding
};

} // namespace rs::ui
