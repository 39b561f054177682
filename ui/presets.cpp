// SPDX-License-Identifier: Apache-2.0
#include "presets.h"

#include <QDir>
#include <QFile>

#include "core/recipe_json.h"

namespace rs::ui {

QStringList presetNames()
{
    QStringList names;
    const QStringList files
        = QDir(QStringLiteral(":/presets")).entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    for (const QString& f : files)
        names << f.chopped(5);
    return names;
}

Recipe presetRecipe(const QString& name)
{
    QFile file(QStringLiteral(":/presets/%1.json").arg(name));
    if (!file.open(QIODevice::ReadOnly))
        throw RecipeError("", name.toStdString(), "no such preset");
    return recipeFromJsonText(file.readAll().toStdString(), "preset " + name.toStdString());
}

QString presetTitle(const QString& name)
{
    try {
        const Recipe r = presetRecipe(name);
        if (!r.name.empty())
            return QString::fromStdString(r.name);
    } catch (const std::exception&) {
    }
    return name;
}

} // namespace rs::ui
