// SPDX-License-Identifier: Apache-2.0
#include "recipedocument.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include "core/comparison.h"
#include "core/recipe_json.h"
#include "recipefields.h"

namespace rs::ui {

RecipeDocument::RecipeDocument(QObject* parent)
    : QObject(parent)
{
    revalidate();
}

void RecipeDocument::setInputFormat(InputFormat format)
{
    if (format == m_format)
        return;
    m_format = format;
    revalidate();
    emit recipeChanged(nullptr);
}

Recipe RecipeDocument::controlFor(const Recipe& recipe)
{
    // The one definition of the guide's [] control, shared with `recompute sweep` (same recipe hash).
    return controlRecipe(recipe);
}

Recipe RecipeDocument::control() const
{
    return m_control ? *m_control : controlFor(m_recipe);
}

void RecipeDocument::setControl(const std::optional<Recipe>& control)
{
    m_control = control;
    emit controlChanged();
}

void RecipeDocument::setModified(bool modified)
{
    if (modified == m_modified)
        return;
    m_modified = modified;
    emit modifiedChanged(modified);
}

bool RecipeDocument::load(const QString& path, QString* error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = tr("Cannot open %1: %2").arg(path, file.errorString());
        return false;
    }
    const QByteArray bytes = file.readAll();
    try {
        Recipe r = recipeFromJsonText(bytes.toStdString(), QFileInfo(path).fileName().toStdString());
        m_filePath = path;
        setRecipe(r, nullptr);
        setModified(false);
        emit filePathChanged(path);
        return true;
    } catch (const std::exception& e) {
        // RecipeError and nlohmann's parse errors both name the place.
        *error = QString::fromStdString(e.what());
        return false;
    }
}

bool RecipeDocument::save(const QString& path, QString* error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    const std::string text = recipeToJson(m_recipe).dump(2) + "\n";
    file.write(text.data(), qint64(text.size()));
    if (!file.commit()) {
        *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    m_filePath = path;
    setModified(false);
    emit filePathChanged(path);
    return true;
}

void RecipeDocument::resetUntitled(const Recipe& recipe)
{
    const bool hadPath = !m_filePath.isEmpty();
    m_filePath.clear();
    setRecipe(recipe, nullptr);
    setModified(false);
    if (hadPath)
        emit filePathChanged(m_filePath);
}

void RecipeDocument::setRecipe(const Recipe& recipe, QObject* origin)
{
    m_recipe = recipe;
    revalidate();
    setModified(true);
    emit recipeChanged(origin);
}

bool RecipeDocument::setField(
    const std::string& key, const nlohmann::json& value, QObject* origin, QString* error)
{
    nlohmann::json patch = nlohmann::json::object();
    patch[key] = value;
    return applyPatch(patch, origin, error);
}

bool RecipeDocument::applyPatch(const nlohmann::json& patch, QObject* origin, QString* error)
{
    nlohmann::json j = recipeToJson(m_recipe);
    applyRecipePatch(j, patch);
    try {
        Recipe r = recipeFromJson(j, "form");
        for (auto it = patch.begin(); it != patch.end(); ++it)
            markExplicit(r, it.key()); // a value the user (or a fix-it) set is written even at its default
        setRecipe(r, origin);
        return true;
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
}

bool RecipeDocument::applyFixIt(const FixIt& fixit, QString* error)
{
    return applyPatch(fixit.patch, nullptr, error);
}

void RecipeDocument::revalidate()
{
    QElapsedTimer timer;
    timer.start();
    m_validation = validate(m_recipe, m_format);
    m_lastValidationMicros = timer.nsecsElapsed() / 1000;
}

} // namespace rs::ui
