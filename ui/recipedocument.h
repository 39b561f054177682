// SPDX-License-Identifier: Apache-2.0
// The recipe being edited: the one value every editor view (form, label checklist, override and flag
// text, diff) reads and writes. Every change re-runs the rules engine before recipeChanged is emitted, so
// a view that reacts to the signal always sees findings that belong to the recipe it shows.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QString>

#include "core/recipe.h"
#include "core/rules.h"

namespace rs::ui {

class RecipeDocument : public QObject {
    Q_OBJECT
public:
    explicit RecipeDocument(QObject* parent = nullptr);

    const Recipe& recipe() const { return m_recipe; }
    const Validation& validation() const { return m_validation; }
    // Which front-end rules apply (M for flags, B for overrides: frontEndRuleRange; MCore only for JSON).
    InputFormat inputFormat() const { return m_format; }
    void setInputFormat(InputFormat format);

    // The matched control the recipe is compared with: one set explicitly, or else the recipe itself with
    // the explicit no-recompute control (selective, recompute_modules=[]), which is what the guide asks for.
    Recipe control() const;
    bool hasExplicitControl() const { return m_control.has_value(); }
    void setControl(const std::optional<Recipe>& control);

    QString filePath() const { return m_filePath; }
    bool isModified() const { return m_modified; }
    void setModified(bool modified);
    // Microseconds the last validate() call took (shown in the status bar; the benchmark measures more).
    qint64 lastValidationMicros() const { return m_lastValidationMicros; }

    // Reading and writing recipe files. Errors name the file and the field.
    bool load(const QString& path, QString* error);
    bool save(const QString& path, QString* error);

    // A new, untitled and unmodified document holding `recipe` (File → New, a preset): it has no file, so
    // Save asks for a path instead of overwriting the last file saved.
    void resetUntitled(const Recipe& recipe);
    // Replaces the recipe; `origin` is the view that made the change (it need not refresh itself).
    void setRecipe(const Recipe& recipe, QObject* origin = nullptr);
    // Sets one (possibly dotted) JSON key. On a value the recipe reader rejects, returns false with the
    // reader's message and leaves the recipe as it was.
    bool setField(const std::string& key, const nlohmann::json& value, QObject* origin, QString* error);
    // Merges a patch (a fix-it's) into the recipe; false with the reader's message when it does not apply.
    bool applyPatch(const nlohmann::json& patch, QObject* origin, QString* error);
    bool applyFixIt(const FixIt& fixit, QString* error);

    // The explicit [] control of a recipe: rs::controlRecipe (core/comparison.h), the same as the CLI's.
    static Recipe controlFor(const Recipe& recipe);

signals:
    // After every change; findings are already up to date.
    void recipeChanged(QObject* origin);
    void controlChanged();
    void modifiedChanged(bool modified);
    void filePathChanged(const QString& path);

private:
    void revalidate();

    Recipe m_recipe;
    Validation m_validation;
    InputFormat m_format = InputFormat::Json;
    std::optional<Recipe> m_control;
    QString m_filePath;
    bool m_modified = false;
    qint64 m_lastValidationMicros = 0;
};

} // namespace rs::ui
