// SPDX-License-Identifier: Apache-2.0
// The recipe page's live memory estimate (core/estimator.h), re-estimated on every change of the document:
// the hottest stage's predicted peak, its categories as one stacked bar with the recipe's memory target as a
// line across it; below, that stage's phases by category (where the peak is: recompute changes the forward
// and backward peaks, not the optimizer's), and every recompute choice the model can take with its peak and
// its forward / backward peak (the figure recompute moves), as `recompute estimate --all-choices` prints.
#pragma once

#include <QWidget>

#include "core/estimator.h"

class QLabel;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QTimer;

namespace rs::ui {

class RecipeDocument;

class EstimatePanel : public QWidget {
    Q_OBJECT

public:
    explicit EstimatePanel(RecipeDocument* document, QWidget* parent = nullptr);
    const MemoryEstimate& estimate() const { return m_estimate; }
    QString summary() const; // the text shown above the bar
    // The hottest stage's phases (rows) by category (columns: phase, peak GB, then the categories).
    QStandardItemModel* phasesModel() const { return m_phases; }
    // Every recompute choice (rows: choice, peak GB, peak phase, forward/backward peak GB, Δ of that against
    // the recipe's own choice, fits the target). Filled a moment after the last edit (it estimates each).
    QStandardItemModel* choicesModel() const { return m_choices; }
    QTabWidget* tables() const { return m_tables; }
    // Fills the choices table now (what the timer does after an edit).
    void refreshChoices();

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    void refresh();
    QRectF barRect() const;

    RecipeDocument* m_document;
    MemoryEstimate m_estimate;
    std::optional<double> m_target; // bytes
    QLabel* m_label;
    QWidget* m_barSpace;
    QTabWidget* m_tables;
    QStandardItemModel* m_phases;
    QStandardItemModel* m_choices;
    QTimer* m_choicesTimer;
};

} // namespace rs::ui
