// SPDX-License-Identifier: Apache-2.0
// A recipe against its control, field by field: one row per recipe key whose value differs (nested Bridge
// keys dotted), with both values as JSON text. The editor's diff tab and the reports both read it.
#pragma once

#include <string>
#include <vector>

#include <QAbstractTableModel>

#include "core/recipe.h"

namespace rs::ui {

struct FieldDifference {
    std::string key;
    std::string control; // JSON text
    std::string recipe; // JSON text
};

// The keys whose values differ, in recipe JSON order; "name" is left out (a control's name always differs).
std::vector<FieldDifference> diffRecipes(const Recipe& control, const Recipe& recipe);

class RecipeDiffModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { KeyColumn, ControlColumn, RecipeColumn, ColumnCount };

    explicit RecipeDiffModel(QObject* parent = nullptr);

    void setRecipes(const Recipe& control, const Recipe& recipe);
    const std::vector<FieldDifference>& differences() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<FieldDifference> m_rows;
};

} // namespace rs::ui
