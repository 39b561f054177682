// SPDX-License-Identifier: Apache-2.0
// The recompute label checklist: every label any rules profile knows (plus any unknown one the recipe
// carries), checked when it is in recompute_modules, with whether it exists on the recipe's profile and
// whether it has any effect on this architecture (rs::recomputeLabelEffect). Checking a row emits
// modulesEdited with the new list; the document is the one that changes the recipe.
#pragma once

#include <vector>

#include <QAbstractTableModel>
#include <QStringList>

#include "core/recipe.h"
#include "core/rules.h"

namespace rs::ui {

class RecomputeLabelsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { LabelColumn, ProfileColumn, EffectColumn, ColumnCount };
    enum Role {
        ExistsRole = Qt::UserRole + 1, // bool: the label exists on the recipe's profile
        HasEffectRole, // bool
        ImplicitRole, // bool: checked only through Megatron's default (recompute_modules unset)
    };

    explicit RecomputeLabelsModel(QObject* parent = nullptr);

    void setRecipe(const Recipe& recipe);
    QStringList labels() const;
    // The list recompute_modules would hold after the checks shown (for an unset list, Megatron's default).
    QStringList checkedLabels() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

signals:
    void modulesEdited(const QStringList& modules);

private:
    struct Row {
        QString label;
        bool checked = false;
        LabelEffect effect;
    };
    std::vector<Row> m_rows;
    QStringList m_order; // recompute_modules in the recipe's order, so toggling keeps it
    bool m_implicit = false; // recompute_modules unset
    bool m_selective = false;
    QString m_profile;
};

} // namespace rs::ui
