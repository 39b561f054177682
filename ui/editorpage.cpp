// SPDX-License-Identifier: Apache-2.0
#include "editorpage.h"

#include <QFile>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "core/recipe_json.h"
#include "estimatepanel.h"
#include "findingspanel.h"
#include "models/recipediffmodel.h"
#include "planpanel.h"
#include "recipedocument.h"
#include "recipefields.h"
#include "recipeform.h"
#include "recipetextview.h"

namespace rs::ui {

EditorPage::EditorPage(RecipeDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
{
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* split = new QSplitter(Qt::Horizontal);
    layout->addWidget(split);

    m_form = new RecipeForm(document);
    m_form->setMinimumWidth(430);
    // A row of jumps to the form's groups: the recompute checklist is several screens down otherwise.
    auto* left = new QWidget;
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->setSpacing(2);
    auto* jumps = new QGridLayout;
    jumps->setSpacing(2);
    const QStringList groups = fieldGroups();
    for (int i = 0; i < groups.size(); ++i) {
        auto* jump = new QToolButton;
        jump->setText(groups[i]);
        jump->setAutoRaise(true);
        jump->setToolTip(tr("Show the %1 fields").arg(groups[i]));
        jump->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        connect(jump, &QToolButton::clicked, m_form, [this, g = groups[i]] { m_form->scrollToGroup(g); });
        jumps->addWidget(jump, i / 4, i % 4);
    }
    leftLayout->addLayout(jumps);
    leftLayout->addWidget(m_form, 1);
    split->addWidget(left);

    auto* right = new QSplitter(Qt::Vertical);
    m_findings = new FindingsPanel(document);
    right->addWidget(m_findings);
    right->addWidget(new EstimatePanel(document));

    m_tabs = new QTabWidget;
    m_overrides = new RecipeTextView(document, RecipeTextView::Syntax::BridgeOverrides);
    m_flags = new RecipeTextView(document, RecipeTextView::Syntax::MegatronFlags);
    m_json = new RecipeTextView(document, RecipeTextView::Syntax::Json);
    m_tabs->addTab(m_overrides, tr("Bridge overrides"));
    m_tabs->addTab(m_flags, tr("Megatron-LM flags"));
    m_tabs->addTab(m_json, tr("JSON"));

    auto* diffPage = new QWidget;
    auto* diffLayout = new QVBoxLayout(diffPage);
    diffLayout->setContentsMargins(0, 0, 0, 0);
    auto* controlRow = new QHBoxLayout;
    m_controlLabel = new QLabel;
    m_controlLabel->setWordWrap(true);
    controlRow->addWidget(m_controlLabel, 1);
    auto* pick = new QPushButton(tr("Control from file…"));
    auto* derived = new QPushButton(tr("Derived control"));
    derived->setToolTip(
        tr("The recipe itself with recompute_granularity=selective and recompute_modules=[]."));
    controlRow->addWidget(pick);
    controlRow->addWidget(derived);
    diffLayout->addLayout(controlRow);
    m_diffModel = new RecipeDiffModel(this);
    auto* diffView = new QTreeView;
    diffView->setRootIsDecorated(false);
    diffView->setModel(m_diffModel);
    diffView->header()->resizeSection(RecipeDiffModel::KeyColumn, 260);
    diffView->header()->resizeSection(RecipeDiffModel::ControlColumn, 200);
    diffLayout->addWidget(diffView, 1);
    m_tabs->addTab(diffPage, tr("Diff vs control"));
    m_plan = new PlanPanel(document);
    m_tabs->addTab(m_plan, tr("Plan"));
    m_tabs->setTabToolTip(m_tabs->count() - 1,
        tr("recompute plan: every recompute choice estimated and timed, the cheapest that fits the target"));
    right->addWidget(m_tabs);
    // A taller window grows the findings and the text tabs; the estimate keeps its few rows.
    right->setStretchFactor(0, 1);
    right->setStretchFactor(1, 1);
    right->setStretchFactor(2, 2);
    split->addWidget(right);
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 1);
    split->setSizes({ 560, 840 });

    connect(m_findings, &FindingsPanel::fieldActivated, m_form, &RecipeForm::focusField);
    connect(document, &RecipeDocument::recipeChanged, this, &EditorPage::refreshDiff);
    connect(document, &RecipeDocument::controlChanged, this, &EditorPage::refreshDiff);
    connect(pick, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Control recipe"), QString(), tr("Recipes (*.recipe.json *.json);;All files (*)"));
        if (path.isEmpty())
            return;
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly)) {
            m_controlLabel->setText(tr("Cannot open %1: %2").arg(path, file.errorString()));
            return;
        }
        try {
            m_document->setControl(recipeFromJsonText(file.readAll().toStdString(), path.toStdString()));
        } catch (const std::exception& e) {
            m_controlLabel->setText(QString::fromStdString(e.what()));
        }
    });
    connect(derived, &QPushButton::clicked, this, [this] { m_document->setControl(std::nullopt); });
    refreshDiff();
}

void EditorPage::refreshDiff()
{
    m_diffModel->setRecipes(m_document->control(), m_document->recipe());
    const int n = m_diffModel->rowCount();
    m_controlLabel->setText(
        (m_document->hasExplicitControl()
                ? tr("Control: %1.").arg(QString::fromStdString(m_document->control().name))
                : tr("Control: this recipe with recompute_granularity=selective, recompute_modules=[] "
                     "(the guide's matched no-recompute control)."))
        + QLatin1Char(' ') + tr("%n field(s) differ.", nullptr, n));
}

} // namespace rs::ui
