// SPDX-License-Identifier: Apache-2.0
// The recipe form: one editor per field of recipefields.h, grouped as a user thinks (model, parallelism,
// precision, attention backend, recompute, CUDA graphs, overlap, run settings), with the recompute labels
// as a checklist. Every edit goes to the RecipeDocument as one JSON key; every document change refreshes
// the editors and marks the fields the validator's findings point at.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include <QHash>
#include <QScrollArea>

#include "recipefields.h"

class QCheckBox;
class QGroupBox;
class QLabel;
class QTreeView;

namespace rs::ui {

class RecipeDocument;
class RecomputeLabelsModel;

class RecipeForm : public QScrollArea {
    Q_OBJECT
public:
    explicit RecipeForm(RecipeDocument* document, QWidget* parent = nullptr);

    // The editor of a recipe key (tests and the findings panel use it), or nullptr.
    QWidget* editor(const std::string& key) const;
    // The finding severity a field is marked with ("error", "warning", "note", "adjustment" or "").
    QString marking(const std::string& key) const;
    RecomputeLabelsModel* labelsModel() const { return m_labelsModel; }
    QCheckBox* modulesUnsetBox() const { return m_modulesUnset; }
    // The message of the last edit the recipe reader refused ("" after an accepted one).
    QString lastError() const { return m_lastError; }

public slots:
    // Scrolls to the field and gives it focus.
    void focusField(const std::string& key);
    // Scrolls so the group's box starts at the top.
    void scrollToGroup(const QString& group);

signals:
    void editRejected(const QString& message);

private:
    void build();
    QWidget* makeEditor(const FieldSpec& spec);
    QWidget* makeModulesEditor();
    void commit(const std::string& key, const nlohmann::json& value);
    void refresh(QObject* origin);
    void setEditorValue(const FieldSpec& spec, QWidget* editor, const nlohmann::json& value);
    void applyMarkings();

    RecipeDocument* m_document;
    RecomputeLabelsModel* m_labelsModel = nullptr;
    QCheckBox* m_modulesUnset = nullptr;
    QTreeView* m_labelsView = nullptr;
    QLabel* m_errorLabel = nullptr;
    std::map<std::string, QWidget*> m_editors;
    std::map<std::string, QLabel*> m_labels;
    std::map<std::string, QString> m_markings;
    QHash<QString, QGroupBox*> m_groups;
    std::string m_editingKey;
    QString m_lastError;
};

} // namespace rs::ui
