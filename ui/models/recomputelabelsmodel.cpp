// SPDX-License-Identifier: Apache-2.0
#include "models/recomputelabelsmodel.h"

#include <QColor>
#include <QFont>

namespace rs::ui {

RecomputeLabelsModel::RecomputeLabelsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

static QStringList knownLabels(const Recipe& recipe)
{
    // The recipe's own profile first (its order is the guide's), then labels only other profiles know.
    QStringList labels;
    auto add = [&](const std::vector<std::string>& v) {
        for (const auto& l : v) {
            const QString s = QString::fromStdString(l);
            if (!labels.contains(s))
                labels << s;
        }
    };
    add(allowedRecomputeModules(recipe.profile));
    for (Profile p : allProfiles())
        add(allowedRecomputeModules(p));
    if (recipe.recompute_modules)
        add(*recipe.recompute_modules);
    return labels;
}

void RecomputeLabelsModel::setRecipe(const Recipe& recipe)
{
    const QStringList labels = knownLabels(recipe);
    m_implicit = !recipe.recompute_modules.has_value();
    m_selective = recipe.recompute_granularity && *recipe.recompute_granularity == "selective";
    m_profile = QString::fromLatin1(profileName(recipe.profile));
    m_order.clear();
    // Megatron's default list when unset (R10).
    const std::vector<std::string> effective = effectiveRecomputeModules(recipe);
    for (const auto& l : effective)
        m_order << QString::fromStdString(l);

    std::vector<Row> rows;
    rows.reserve(std::size_t(labels.size()));
    for (const QString& label : labels) {
        Row row;
        row.label = label;
        row.checked = m_order.contains(label);
        row.effect = recomputeLabelEffect(recipe, label.toStdString());
        rows.push_back(row);
    }

    const bool sameRows = rows.size() == m_rows.size()
        && std::equal(rows.begin(), rows.end(), m_rows.begin(),
            [](const Row& a, const Row& b) { return a.label == b.label; });
    if (!sameRows) {
        beginResetModel();
        m_rows = std::move(rows);
        endResetModel();
        return;
    }
    m_rows = std::move(rows);
    if (!m_rows.empty())
        emit dataChanged(index(0, 0), index(int(m_rows.size()) - 1, ColumnCount - 1));
}

QStringList RecomputeLabelsModel::labels() const
{
    QStringList out;
    for (const auto& r : m_rows)
        out << r.label;
    return out;
}

QStringList RecomputeLabelsModel::checkedLabels() const
{
    return m_order;
}

int RecomputeLabelsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int RecomputeLabelsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RecomputeLabelsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_rows.size()))
        return {};
    const Row& row = m_rows[std::size_t(index.row())];
    const bool implicit = m_implicit && row.checked;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case LabelColumn:
            return implicit ? tr("%1 (default)").arg(row.label) : row.label;
        case ProfileColumn:
            return row.effect.exists ? tr("yes") : tr("not in %1").arg(m_profile);
        case EffectColumn:
            if (!row.effect.exists)
                return QString();
            if (row.effect.has_effect)
                return row.effect.reason.empty() ? tr("has effect")
                                                 : QString::fromStdString(row.effect.reason);
            return row.effect.reason.empty()
                ? tr("no effect")
                : tr("no effect: %1").arg(QString::fromStdString(row.effect.reason));
        }
        break;
    case Qt::CheckStateRole:
        if (index.column() == LabelColumn)
            return row.checked ? Qt::Checked : Qt::Unchecked;
        break;
    case Qt::ToolTipRole: {
        QString tip = row.label;
        if (!row.effect.exists)
            tip += tr(": not a label of the %1 profile; Megatron rejects it (R11).").arg(m_profile);
        else if (!row.effect.reason.empty())
            tip += QStringLiteral(": ") + QString::fromStdString(row.effect.reason);
        if (implicit)
            tip += tr("\nChecked through Megatron's default: recompute_modules is unset, which means "
                      "[\"core_attn\"].");
        if (!m_selective)
            tip += tr("\nLabels apply only under recompute_granularity=selective.");
        return tip;
    }
    case Qt::ForegroundRole:
        if (!row.effect.exists)
            return QColor(0xc6, 0x28, 0x28);
        if (!row.effect.has_effect || !m_selective)
            return QColor(0x80, 0x80, 0x80);
        break;
    case Qt::FontRole:
        if (implicit || !row.effect.exists) {
            QFont f;
            f.setItalic(true);
            return f;
        }
        break;
    case ExistsRole:
        return row.effect.exists;
    case HasEffectRole:
        return row.effect.has_effect;
    case ImplicitRole:
        return implicit;
    }
    return {};
}

bool RecomputeLabelsModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!index.isValid() || index.column() != LabelColumn || role != Qt::CheckStateRole)
        return false;
    Row& row = m_rows[std::size_t(index.row())];
    const bool on = value.toInt() == Qt::Checked;
    if (on == row.checked && !m_implicit)
        return false;
    row.checked = on;
    if (on && !m_order.contains(row.label))
        m_order << row.label;
    if (!on)
        m_order.removeAll(row.label);
    // The list is now explicit, even if it equals the default.
    m_implicit = false;
    emit dataChanged(this->index(0, 0), this->index(int(m_rows.size()) - 1, ColumnCount - 1));
    emit modulesEdited(m_order);
    return true;
}

Qt::ItemFlags RecomputeLabelsModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (index.column() == LabelColumn)
        f |= Qt::ItemIsUserCheckable;
    return f;
}

QVariant RecomputeLabelsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case LabelColumn:
        return tr("Label");
    case ProfileColumn:
        return tr("On profile");
    case EffectColumn:
        return tr("Effect on this model");
    }
    return {};
}

} // namespace rs::ui
