// SPDX-License-Identifier: Apache-2.0
// Narrows the runs table by recipe (substring of the recipe or model name), module set (the guide's
// label), outcome (a stored outcome, or "failed" for every non-pass) and host; sorts numbers as numbers.
#pragma once

#include <QSortFilterProxyModel>

namespace rs::ui {

class RunsFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    static inline const QString kFailed = QStringLiteral("failed");

    explicit RunsFilterProxy(QObject* parent = nullptr);

    void setRecipeFilter(const QString& text);
    void setModuleSetFilter(const QString& label); // "" for any
    void setOutcomeFilter(const QString& outcome); // "" for any
    void setHostFilter(const QString& host); // "" for any

    QString recipeFilter() const { return m_recipe; }
    QString moduleSetFilter() const { return m_moduleSet; }
    QString outcomeFilter() const { return m_outcome; }
    QString hostFilter() const { return m_host; }

signals:
    void filterChanged();

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    void refilter();
    QString m_recipe;
    QString m_moduleSet;
    QString m_outcome;
    QString m_host;
};

} // namespace rs::ui
