// SPDX-License-Identifier: Apache-2.0
#include "models/runsfilterproxy.h"

#include "models/runsmodel.h"

namespace rs::ui {

RunsFilterProxy::RunsFilterProxy(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(RunsModel::SortRole);
    setDynamicSortFilter(true);
}

void RunsFilterProxy::refilter()
{
    // Qt 6.4 has no begin/endFilterChange; invalidateFilter is the supported call there.
    invalidateFilter();
    emit filterChanged();
}

void RunsFilterProxy::setRecipeFilter(const QString& text)
{
    if (text == m_recipe)
        return;
    m_recipe = text;
    refilter();
}

void RunsFilterProxy::setModuleSetFilter(const QString& label)
{
    if (label == m_moduleSet)
        return;
    m_moduleSet = label;
    refilter();
}

void RunsFilterProxy::setOutcomeFilter(const QString& outcome)
{
    if (outcome == m_outcome)
        return;
    m_outcome = outcome;
    refilter();
}

void RunsFilterProxy::setHostFilter(const QString& host)
{
    if (host == m_host)
        return;
    m_host = host;
    refilter();
}

bool RunsFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    const QAbstractItemModel* m = sourceModel();
    auto cell
        = [&](int column, int role) { return m->data(m->index(sourceRow, column, sourceParent), role); };
    if (!m_recipe.isEmpty()) {
        const QString recipe = cell(RunsModel::RecipeColumn, Qt::DisplayRole).toString();
        const QString model = cell(RunsModel::ModelColumn, Qt::DisplayRole).toString();
        if (!recipe.contains(m_recipe, Qt::CaseInsensitive) && !model.contains(m_recipe, Qt::CaseInsensitive))
            return false;
    }
    if (!m_moduleSet.isEmpty() && cell(0, RunsModel::ModuleSetRole).toString() != m_moduleSet)
        return false;
    if (!m_outcome.isEmpty()) {
        const QString outcome = cell(0, RunsModel::OutcomeRole).toString();
        if (m_outcome == kFailed ? outcome == QLatin1String("pass") : outcome != m_outcome)
            return false;
    }
    if (!m_host.isEmpty() && cell(0, RunsModel::HostRole).toString() != m_host)
        return false;
    return true;
}

} // namespace rs::ui
