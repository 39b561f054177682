// SPDX-License-Identifier: Apache-2.0
// The recipe page: the form on the left; on the right the live findings above the recipe as Bridge
// overrides, Megatron-LM flags, JSON, its diff against the control, and its recompute plan (planpanel.h).
#pragma once

#include <QWidget>

class QLabel;
class QTabWidget;

namespace rs::ui {

class FindingsPanel;
class PlanPanel;
class RecipeDiffModel;
class RecipeDocument;
class RecipeForm;
class RecipeTextView;

class EditorPage : public QWidget {
    Q_OBJECT
public:
    explicit EditorPage(RecipeDocument* document, QWidget* parent = nullptr);

    RecipeForm* form() const { return m_form; }
    FindingsPanel* findings() const { return m_findings; }
    RecipeTextView* overridesView() const { return m_overrides; }
    RecipeTextView* flagsView() const { return m_flags; }
    RecipeTextView* jsonView() const { return m_json; }
    RecipeDiffModel* diffModel() const { return m_diffModel; }
    QTabWidget* textTabs() const { return m_tabs; }
    PlanPanel* planPanel() const { return m_plan; }

private:
    void refreshDiff();

    RecipeDocument* m_document;
    RecipeForm* m_form;
    FindingsPanel* m_findings;
    RecipeTextView* m_overrides;
    RecipeTextView* m_flags;
    RecipeTextView* m_json;
    RecipeDiffModel* m_diffModel;
    QLabel* m_controlLabel;
    QTabWidget* m_tabs;
    PlanPanel* m_plan;
};

} // namespace rs::ui
