// SPDX-License-Identifier: Apache-2.0
// File → New from Bridge recipe…: every text-LLM recipe function of Megatron Bridge (core/bridge_recipes.h)
// in a list that a search box filters, the GPUs the job is launched on, and what the chosen recipe is (its
// source, the GPUs its name states, its Hugging Face model, or why it cannot be taken). Accepting builds the
// job as Bridge's setup() would (bridgeJob) and hands it over as a Bridge-overrides recipe.
#pragma once

#include <optional>

#include <QDialog>

#include "core/bridge_recipes.h"

class QLabel;
class QLineEdit;
class QListView;
class QSpinBox;
class QSortFilterProxyModel;
class QStandardItemModel;
class QDialogButtonBox;

namespace rs::ui {

class BridgeRecipeDialog : public QDialog {
    Q_OBJECT
public:
    explicit BridgeRecipeDialog(QWidget* parent = nullptr);

    // The job of the chosen recipe on the chosen GPUs, once accepted.
    const std::optional<BridgeJob>& job() const { return m_job; }
    // For tests: pick a recipe by name, set the GPUs (0: the name's), as a user would.
    void setFilter(const QString& text);
    bool select(const QString& name);
    void setGpus(int gpus);
    QString selectedName() const;
    QString description() const;
    int visibleRecipes() const;

public Q_SLOTS:
    void accept() override;

private:
    void describe();

    QLineEdit* m_search;
    QListView* m_list;
    QStandardItemModel* m_model;
    QSortFilterProxyModel* m_filter;
    QSpinBox* m_gpus;
    QLabel* m_about;
    QDialogButtonBox* m_buttons;
    std::optional<BridgeJob> m_job;
};

} // namespace rs::ui
