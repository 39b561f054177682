// SPDX-License-Identifier: Apache-2.0
// The advisor's output for `recompute advise` and `recompute sweep`: text for people or JSON for tools.
// The advice itself (candidates from the store's comparison rows, rs::adviseRecompute's choice re-decided
// by step-time significance) is storage/advice.h's and storage/significance.h's, shared with the studio.
#pragma once

#include <optional>
#include <vector>

#include <QByteArray>
#include <QJsonObject>
#include <QVector>

#include "core/advisor.h"
#include "core/comparison.h"
#include "storage/advice.h"
#include "storage/significance.h"
#include "storage/store.h"

namespace rs::cli {

// The GUI-free part lives in storage/advice.h and storage/significance.h (the studio's runs page uses
// it too).
using storage::adviseOnComparison;
using storage::recipeMemoryTarget;
using storage::recomputeOverrides;
using storage::steadyIterationTimes;
using storage::StoredAdvice;

QByteArray adviceText(const StoredAdvice& a);
// adviceText, then the significance note where there is one ("  note: ..."): what a sweep or a plan's
// confirmation prints after its measurements.
QByteArray adviceWithSignificanceText(const StoredAdvice& a);
QJsonObject adviceJson(const StoredAdvice& a);

// The sweep's sound comparison (issue 15): the comparison's runs grouped by recompute choice (repeats
// pooled; `moreControlRuns` are further runs of the [] control), each choice's steady step time as the
// median with its 95 % interval and its Δ time against the [] control with its interval and verdict
// (faster / slower / not significant). One line per choice, the control first.
QByteArray stepTimeTable(const storage::Store& store, const QVector<storage::ComparisonRow>& rows,
    const QVector<qint64>& moreControlRuns = {});

} // namespace rs::cli
