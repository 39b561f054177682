// SPDX-License-Identifier: Apache-2.0
// The live findings panel: each finding with severity, rule id, message and source, a fix-it button on
// the rows whose rule has one, the front-end rules to apply (JSON / Bridge overrides / Megatron-LM flags),
// and how long the last validation took. Selecting a finding asks the form to show its field.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QTableView;

namespace rs::ui {

class FindingsModel;
class RecipeDocument;

class FindingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit FindingsPanel(RecipeDocument* document, QWidget* parent = nullptr);

    FindingsModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    // Applies the fix-it of a row; false (and a message in the panel) when it has none or does not apply.
    bool applyFixIt(int row);

signals:
    void fieldActivated(const std::string& key);

private:
    void refresh();
    void showDetails(int row);
    void fitRows();

    RecipeDocument* m_document;
    FindingsModel* m_model;
    QTableView* m_view;
    QLabel* m_summary;
    QLabel* m_details;
    QComboBox* m_format;
};

} // namespace rs::ui
