// SPDX-License-Identifier: Apache-2.0
// "Set as control…": gives one or more stored runs a control (the run the report and the runs page compare
// them with), or takes it away. Every other stored run can be picked; the matched ones (same shape, only the
// recompute choice differing) come first, the runs without recompute first among them, and the dialog says
// what kind of control the choice is (the explicit [], Megatron's recompute_granularity None, or a run that
// recomputes something) and, for an unmatched one, why the report will show no deltas.
#pragma once

#include <QDialog>
#include <QVector>

class QComboBox;
class QLabel;

namespace rs::storage {
class Store;
}

namespace rs::ui {

class SetControlDialog : public QDialog {
    Q_OBJECT
public:
    SetControlDialog(storage::Store* store, const QVector<qint64>& runIds, QWidget* parent = nullptr);

    // The control chosen: 0 for "no control".
    qint64 chosenControl() const;
    void setChosenControl(qint64 controlRunId); // 0: no control
    QComboBox* choices() const { return m_choices; }
    QLabel* verdict() const { return m_verdict; }
    // Stores the choice for every run (Store::linkControl); false, with *error, when the store refused it.
    bool apply(QString* error = nullptr);

    // Opens the dialog for `runIds` and applies it when accepted; returns whether a link changed.
    static bool edit(storage::Store* store, const QVector<qint64>& runIds, QWidget* parent);

private:
    void updateVerdict();

    storage::Store* m_store;
    QVector<qint64> m_runs;
    QComboBox* m_choices;
    QLabel* m_verdict;
};

} // namespace rs::ui
