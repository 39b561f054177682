// SPDX-License-Identifier: Apache-2.0
// A recompute plan (core/plan.h: every choice Megatron can express, estimated on every rank and timed by the
// step-time model) as a table: one row per choice in the plan's order (the [] control first), its hottest
// rank's peak and every stage's, its predicted step and Δ against [], its verdict and why. The recipe page's
// Plan tab shows it; the cheapest choice that fits is highlighted. Predictions only, and where the rates
// record is provisional the step-time headers say so.
#pragma once

#include <QAbstractTableModel>

#include "charts/chartdata.h"
#include "core/plan.h"

namespace rs::ui {

class PlanModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        ChoiceColumn,
        VerdictColumn, // chosen | fits | over-target | invalid | control
        PeakColumn, // the hottest rank's peak, GB (and its stage, with a pipeline)
        StepColumn, // predicted step, ms
        DeltaColumn, // against the [] control's predicted step, %
        MeasuredColumn, // a stored run of the choice: its peak, step and the predicted Δ's miss (points)
        StagePeaksColumn, // every pipeline stage's (rank's) peak, GB
        ReasonColumn,
        ColumnCount
    };
    enum Role {
        SortRole = Qt::UserRole + 1, // numbers as numbers (GB, ms, %); text otherwise
        ChosenRole, // bool: the cheapest predicted step that fits
        MeasuredPeakGbRole, // double: the measured peak, GB (invalid: not measured)
        MeasuredStepMsRole, // double: the measured steady step, ms
        MeasuredDeltaPctRole, // double: the measured Δ against the measured [], %
        MissPtsRole, // double: predicted Δ less measured Δ, percentage points
    };

    explicit PlanModel(QObject* parent = nullptr);

    // A new plan; its measurements are cleared until setMeasurements.
    void setPlan(const Plan& plan);
    // One entry per candidate of the plan (measurePlan); others are ignored, missing ones unmeasured.
    void setMeasurements(const QVector<std::optional<PlanMeasurement>>& measured);
    void clear();
    const Plan& plan() const { return m_plan; }
    bool hasPlan() const { return !m_plan.candidates.empty(); }
    // The row of the chosen candidate, -1 when none fits.
    int chosenRow() const;
    // More than one pipeline stage: the per-stage peaks say something the hottest's does not.
    bool hasStages() const;
    // How many candidates have a measurement (setMeasurements).
    int measuredCount() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const PlanMeasurement* measurementOf(int row) const;

    Plan m_plan;
    QVector<std::optional<PlanMeasurement>> m_measured;
};

} // namespace rs::ui
