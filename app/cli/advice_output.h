// SPDX-License-Identifier: Apache-2.0
// The advisor on a stored matched comparison, shared by `recompute advise` and `recompute sweep`: the
// candidates are read from the store's comparison rows (its match check decides "matched"), the choice
// is rs::adviseRecompute's, and the output is text for people or JSON for tools.
#pragma once

#include <optional>
#include <vector>

#include <QByteArray>
#include <QJsonObject>
#include <QVector>

#include "core/advisor.h"
#include "storage/store.h"

namespace rs::cli {

struct StoredAdvice {
    QVector<storage::ComparisonRow> rows; // the control's row first
    std::vector<AdviceCandidate> candidates; // one per row, in order
    Advice advice;
};

// Per-rank peaks from the store's rank peaks; a run without them (the guide's tables, some imports)
// contributes its stored peak as the max over ranks, or as its peak rank's when that is known.
StoredAdvice adviseOnComparison(
    const storage::Store& store, const QVector<storage::ComparisonRow>& rows, double targetGb);

// The memory target stored in a recipe JSON text (memory_target_gb), if any.
std::optional<double> recipeMemoryTarget(const QString& recipeJson);

// The Megatron Bridge overrides that select a run's recompute choice.
QString recomputeOverrides(const storage::RunRecord& run);

QByteArray adviceText(const StoredAdvice& a);
QJsonObject adviceJson(const StoredAdvice& a);

} // namespace rs::cli
