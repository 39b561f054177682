// SPDX-License-Identifier: Apache-2.0
// The stored runs: one row per run with the measurement contract's columns, the deltas against the run's
// matched control (only when Store::matchCheck says the two are comparable), and the estimator's prediction
// for the run's stored recipe beside the measured peak with its error (core/estimator.h). The columns are
// one table (kColumns in runsmodel.cpp: header, header tooltip, alignment); a new column is an enum value,
// a row of that table and its cells. Fed whole by setRuns; the filter proxy (runsfilterproxy.h) narrows it
// by recipe, module set, outcome and host.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <QAbstractTableModel>
#include <QHash>
#include <QSet>

#include "charts/chartdata.h"
#include "core/estimator.h"
#include "core/step_stats.h"
#include "storage/store.h"

namespace rs::ui {

class RunsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        IdColumn,
        RecipeColumn,
        ModelColumn,
        ModuleSetColumn,
        OutcomeColumn,
        // The advisor's verdict for the memory target (setAdvice), as `recompute advise`: early, so it is on
        // screen at 1366 px whatever the deltas' intervals take.
        AdviceColumn,
        RanksColumn, // ranks measured (world size), or the job's GPUs for imported and guide runs
        PeakAllocatedColumn,
        EstimateColumn, // the estimator's hottest-rank peak for the run's stored recipe (GB)
        EstimateErrorColumn, // (measured - estimate) / estimate, in percent
        StepTimeColumn,
        AllocatedDeltaColumn,
        TimeDeltaColumn,
        PeakReservedColumn,
        TflopsColumn,
        HostColumn,
        SourceColumn,
        CreatedColumn,
        ColumnCount
    };
    enum Role {
        SortRole = Qt::UserRole + 1, // numbers as numbers, for sorting
        RunIdRole,
        IsControlRole,
        OutcomeRole, // the stored outcome text
        ModuleSetRole,
        HostRole,
        ChosenRole, // bool: the advisor's choice
    };

    explicit RunsModel(QObject* parent = nullptr);

    void setRuns(const QVector<storage::RunRecord>& runs);
    const QVector<storage::RunRecord>& runs() const { return m_runs; }
    const storage::RunRecord* run(int row) const;
    const storage::RunRecord* runById(qint64 id) const;
    int rowOfRun(qint64 id) const;
    // (run - control) / control * 100 when the run has a matched control among the runs.
    std::optional<double> allocatedDeltaPct(int row) const;
    // Δ step time, the product's one definition (core's kStepDeltaName: the Hodges-Lehmann shift of the
    // steady iterations against the control's), in % of the control's median; only for a run matched with
    // its control, both with a step time.
    std::optional<double> timeDeltaPct(int row) const;
    // Where a run's step samples come from (the runs page: storage::stepSamplesOf, the store's steady
    // iterations or the stored step time), asked when first needed and kept until the next setRuns. Without
    // a source each run's stored steady step time is its one sample.
    void setStepSamplesSource(std::function<std::vector<double>(const storage::RunRecord&)> source);
    std::optional<TimeDelta> timeDeltaStats(int row) const;
    // A run's step samples from the source, asked once per run until the next setRuns.
    const std::vector<double>& stepSamplesOf(const storage::RunRecord& run) const;
    // The run heads a comparison: the explicit [] control, or a run other runs are compared against, or an
    // unlinked run that recomputes nothing (an imported Megatron-LM log's "none", Megatron's own control).
    bool isComparisonControl(const storage::RunRecord& run) const;
    // The estimator's prediction for the run's stored recipe under its own recompute choice, in the layout
    // that measured the run (storage::estimateLayoutOf, as the advisor), computed when first asked and kept
    // per recipe and layout; null when the run keeps no full recipe (imported and guide runs) or the recipe
    // cannot be estimated (estimateNote says why).
    const MemoryEstimate* estimate(int row) const;
    QString estimateNote(int row) const;
    // (measured peak allocated - estimate) / estimate * 100, for a passing run with both.
    std::optional<double> estimateErrorPct(int row) const;
    // The advisor's verdicts by run id (empty: no advice, no memory target or no comparison chosen).
    void setAdvice(const QHash<qint64, RunAdvice>& advice);
    const QHash<qint64, RunAdvice>& advice() const { return m_advice; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Delta {
        std::optional<double> allocated;
        std::optional<double> time;
        QString why; // why there is none, for the tooltip
    };
    struct Estimate {
        std::optional<MemoryEstimate> estimate;
        QString note; // why there is none
    };
    const Estimate& estimateEntry(int row) const;
    QVector<storage::RunRecord> m_runs;
    QSet<qint64> m_linkedTo; // runs some other run has as its control
    std::function<std::vector<double>(const storage::RunRecord&)> m_samplesSource;
    mutable QHash<qint64, std::vector<double>> m_steady;
    mutable QHash<int, std::optional<TimeDelta>> m_timeStats; // by row
    QVector<Delta> m_deltas;
    // By layout and recipe text (runs of one recipe share it); filled lazily, so 10,000 rows cost nothing
    // until shown.
    mutable QHash<QString, std::shared_ptr<const Estimate>> m_estimates;
    QHash<qint64, int> m_rowById;
    QHash<qint64, RunAdvice> m_advice;
};

} // namespace rs::ui
