// SPDX-License-Identifier: Apache-2.0
// The recipe page's live memory estimate (core/estimator.h): the hottest stage's predicted peak, its
// categories as one stacked bar, and the recipe's memory target as a line across it. Re-estimated on every
// change of the document.
#pragma once

#include <QWidget>

#include "core/estimator.h"

class QLabel;

namespace rs::ui {

class RecipeDocument;

class EstimatePanel : public QWidget {
    Q_OBJECT

public:
    explicit EstimatePanel(RecipeDocument* document, QWidget* parent = nullptr);
    const MemoryEstimate& estimate() const { return m_estimate; }
    QString summary() const; // the text shown above the bar

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    void refresh();

    RecipeDocument* m_document;
    MemoryEstimate m_estimate;
    std::optional<double> m_target; // bytes
    QLabel* m_label;
};

} // namespace rs::ui
