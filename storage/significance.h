// SPDX-License-Identifier: Apache-2.0
// Step-time significance on a stored comparison: the advisor (core/advisor.h) chose the lowest steady step
// time that fits; this re-decides among the choices that fit by core's chooseBySignificance over the stored
// steady iterations (repeats pooled): never on a difference inside the noise, ties to the narrower
// boundary (the guide's rule). storage/advice.h's adviseOnComparison applies it, so `recompute advise`,
// `recompute sweep` and the studio's runs page give the same advice for the same store.
#pragma once

#include <optional>
#include <vector>

#include <QString>
#include <QVector>

#include "core/comparison.h"
#include "core/step_stats.h"
#include "storage/advice.h"
#include "storage/store.h"

namespace rs::storage {

// The steady iteration times of a stored run (its lowest rank, iterations of phase "steady" with a step
// time), the samples of core's step_stats. One reading of "steady" for the session, the CLI and the studio.
std::vector<double> steadyIterationTimes(const Store& store, qint64 runId);
// The half-width of the 95 % interval of the median over `runs`' steady iterations pooled (core's
// stepStats), % of the median; nullopt while there is no interval. The repeat-until-narrow rule of both
// sessions (RunSession, JobSession).
std::optional<double> pooledIntervalHalfWidthPct(const Store& store, const QVector<qint64>& runs);

// One run's samples of the Δ step time (core's stepSamples): its steady iteration times, or its stored steady
// step time alone when it keeps none.
std::vector<double> stepSamplesOf(const Store& store, const RunRecord& run);
// Δ step time of `runs` (pooled) against `controls` (pooled): core's timeDelta on their stepSamplesOf, the
// one definition (kStepDeltaName). nullopt when either side has no sample.
std::optional<TimeDelta> stepTimeDelta(
    const Store& store, const QVector<RunRecord>& runs, const QVector<RunRecord>& controls);
// Rewrites every matched row's Δ step time (timeVsControlPct, its interval and verdict) with stepTimeDelta
// of the row's run against the control row's run (and `moreControlRuns`, repeats of the control).
void fillStepTimeDeltas(
    const Store& store, QVector<ComparisonRow>& rows, const QVector<qint64>& moreControlRuns = {});

// A stored run's recompute choice ("" granularity, Megatron's None, reads as [] like the explicit control;
// selective without recompute_modules as Megatron's default core_attn).
RecomputeChoice storedChoice(const RunRecord& run);

// The runs of one recompute choice in a comparison, repeats pooled.
struct ChoiceGroup {
    QString label;
    RecomputeChoice choice;
    QVector<int> rows; // indices into the comparison rows
    std::vector<double> times; // every steady iteration of every run
    bool isControl = false;
    std::vector<double> runMedians; // each run's own median (launchVerdict)
};

// The rows grouped by recompute choice, in order of first appearance (the control's first);
// `moreControlRuns` are further runs of the [] control, pooled with it.
QVector<ChoiceGroup> groupRows(
    const Store& store, const QVector<ComparisonRow>& rows, const QVector<qint64>& moreControlRuns = {});

// Re-decides `a` among the choices that fit by significance. The chosen row, the verdicts, their reasons
// and the summary are rewritten; nothing changes when nothing fits or no choice that fits has steady
// iterations (the advisor's choice by stored step time stands). Returns a note when the choice moved
// ("" otherwise).
QString applySignificance(StoredAdvice& a, const Store& store, const QVector<qint64>& moreControlRuns = {});

} // namespace rs::storage
