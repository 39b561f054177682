// SPDX-License-Identifier: Apache-2.0
#include "models/recipediffmodel.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/recipe_json.h"

namespace rs::ui {

namespace {

void flatten(const nlohmann::json& j, const std::string& prefix,
    std::vector<std::pair<std::string, nlohmann::json>>* out)
{
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it.value().is_object())
            flatten(it.value(), key, out);
        else
            out->emplace_back(key, it.value());
    }
}

} // namespace

std::vector<FieldDifference> diffRecipes(const Recipe& control, const Recipe& recipe)
{
    std::vector<std::pair<std::string, nlohmann::json>> a;
    std::vector<std::pair<std::string, nlohmann::json>> b;
    flatten(recipeToJson(control), {}, &a);
    flatten(recipeToJson(recipe), {}, &b);
    std::vector<FieldDifference> out;
    // Entries, not structured bindings: a lambda cannot capture a binding before C++20 (clang says so).
    for (const auto& entry : b) {
        const std::string& key = entry.first;
        const nlohmann::json& value = entry.second;
        if (key == "name")
            continue;
        auto it = std::find_if(a.begin(), a.end(), [&](const auto& p) { return p.first == key; });
        const nlohmann::json other = it == a.end() ? nlohmann::json(nullptr) : it->second;
        if (other != value)
            out.push_back({ key, other.dump(), value.dump() });
    }
    for (const auto& entry : a) {
        const std::string& key = entry.first;
        const nlohmann::json& value = entry.second;
        if (key == "name")
            continue;
        auto it = std::find_if(b.begin(), b.end(), [&](const auto& p) { return p.first == key; });
        if (it == b.end())
            out.push_back({ key, value.dump(), "null" });
    }
    return out;
}

RecipeDiffModel::RecipeDiffModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void RecipeDiffModel::setRecipes(const Recipe& control, const Recipe& recipe)
{
    beginResetModel();
    m_rows = diffRecipes(control, recipe);
    endResetModel();
}

int RecipeDiffModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int RecipeDiffModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RecipeDiffModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_rows.size()))
        return {};
    const auto& row = m_rows[std::size_t(index.row())];
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
        switch (index.column()) {
        case KeyColumn:
            return QString::fromStdString(row.key);
        case ControlColumn:
            return QString::fromStdString(row.control);
        case RecipeColumn:
            return QString::fromStdString(row.recipe);
        }
    }
    return {};
}

QVariant RecipeDiffModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case KeyColumn:
        return tr("Field");
    case ControlColumn:
        return tr("Control");
    case RecipeColumn:
        return tr("This recipe");
    }
    return {};
}

} // namespace rs::ui
