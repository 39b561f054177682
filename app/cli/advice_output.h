// SPDX-License-Identifier: Apache-2.0
// The advisor's output for `recompute advise` and `recompute sweep`: text for people or JSON for tools.
// The advice itself (candidates from the store's comparison rows, rs::adviseRecompute's choice) is
// storage/advice.h's, shared with the studio.
#pragma once

#include <optional>
#include <vector>

#include <QByteArray>
#include <QJsonObject>
#include <QVector>

#include "core/advisor.h"
#include "core/comparison.h"
#include "storage/advice.h"
#include "storage/store.h"

namespace rs::cli {

// The GUI-free part lives in storage/advice.h (the studio's runs page uses it too).
using storage::adviseOnComparison;
using storage::recipeMemoryTarget;
using storage::recomputeOverrides;
using storage::StoredAdvice;

QByteArray adviceText(const StoredAdvice& a);
QJsonObject adviceJson(const StoredAdvice& a);

// The steady iteration times of a stored run (its lowest rank, iterations of phase "steady" with a step
// time), the samples of core's step_stats.
std::vector<double> steadyIterationTimes(const storage::Store& store, qint64 runId);
// A stored run's recompute choice ("" granularity, Megatron's None, reads as [] like the explicit control;
// selective without recompute_modules as Megatron's default core_attn).
RecomputeChoice storedChoice(const storage::RunRecord& run);

// The sweep's sound comparison (issue 15): the comparison's runs grouped by recompute choice (repeats
// pooled; `moreControlRuns` are further runs of the [] control), each choice's steady step time as the
// median with its 95 % interval and its Δ time against the [] control with its interval and verdict
// (faster / slower / not significant). One line per choice, the control first.
QByteArray stepTimeTable(const storage::Store& store, const QVector<storage::ComparisonRow>& rows,
    const QVector<qint64>& moreControlRuns = {});

// The advisor chose the lowest steady step time that fits; this re-decides among the choices that fit by
// significance (core's chooseBySignificance): never on a difference inside the noise, ties to the narrower
// boundary. The chosen row, the verdicts, their reasons and the summary are rewritten; nothing changes
// when nothing fits. Returns a note when the choice moved ("" otherwise).
QString applySignificance(
    StoredAdvice& a, const storage::Store& store, const QVector<qint64>& moreControlRuns = {});

} // namespace rs::cli
