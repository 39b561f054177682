// SPDX-License-Identifier: Apache-2.0
// The advisor (core/advisor.h) on a stored matched comparison: its candidates read from the store's
// comparison rows (the store's match check decides "matched", rank peaks from the stored per-rank peaks),
// then re-decided by step-time significance over the stored steady iterations (storage/significance.h).
// One piece for `recompute advise` / `recompute sweep` (their text and JSON are app/cli/advice_output.h)
// and the studio's runs page.
#pragma once

#include <optional>
#include <vector>

#include <QString>
#include <QVector>

#include "core/advisor.h"
#include "core/estimator.h"
#include "storage/store.h"

namespace rs::storage {

struct StoredAdvice {
    QVector<ComparisonRow> rows; // the control's row first
    std::vector<AdviceCandidate> candidates; // one per row, in order
    Advice advice; // significance applied
    // Why significance moved the choice off the advisor's lowest step time ("" when it did not).
    QString significanceNote;
};

// Per-rank peaks from the store's rank peaks; a run without them (the guide's tables, some imports)
// contributes its stored peak as the max over ranks, or as its peak rank's when that is known. Among the
// choices that fit, a step time inside the noise never decides; ties go to the narrower boundary
// (applySignificance). `moreControlRuns` are further runs of the [] control (a sweep's repeats), pooled with
// it.
StoredAdvice adviseOnComparison(const Store& store, const QVector<ComparisonRow>& rows, double targetGb,
    const QVector<qint64>& moreControlRuns = {});
// The comparison of the [] control `controlRunId` (it and every run linked to it, as
// `recompute advise --control`): empty when the store has no such comparison. targetGb > 0.
std::optional<StoredAdvice> adviseOnControl(
    const Store& store, qint64 controlRunId, double targetGb, const QVector<qint64>& moreControlRuns = {});

// The layout a stored run's estimate is made in: the one that measured it (an imported Megatron log is
// Megatron's, a run of our worker the worker's). The runs table and the advisor both estimate in it.
Layout estimateLayoutOf(const RunRecord& run);

// The memory target stored in a recipe JSON text (memory_target_gb), if any.
std::optional<double> recipeMemoryTarget(const QString& recipeJson);

// The Megatron Bridge overrides that select a run's recompute choice.
QString recomputeOverrides(const RunRecord& run);

} // namespace rs::storage
