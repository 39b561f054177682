// SPDX-License-Identifier: Apache-2.0
// The preset recipes compiled into the program (resources/presets/*.json, under :/presets).
#pragma once

#include <QString>
#include <QStringList>

#include "core/recipe.h"

namespace rs::ui {

// File names without ".json", sorted.
QStringList presetNames();
// Throws RecipeError (naming the preset) when the file does not read as a recipe.
Recipe presetRecipe(const QString& name);
// The preset's display title: its recipe name, or the file name when it has none.
QString presetTitle(const QString& name);

} // namespace rs::ui
