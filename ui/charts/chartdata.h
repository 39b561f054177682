// SPDX-License-Identifier: Apache-2.0
// What the charts draw, as plain values, and the arithmetic that builds them from stored runs: the
// trade-off points (one per module set within a matched comparison), the Pareto front, the per-rank
// allocated/reserved bars, the per-iteration memory lines and what holds the peak. No QtCharts here, so this
// is what the tests check and what a replacement chart library would be fed.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <QColor>
#include <QHash>
#include <QPointF>
#include <QString>
#include <QVector>

#include "core/comparison.h"
#include "core/units.h"
#include "storage/store.h"

namespace rs {
struct MemoryEstimate;
struct Plan;
} // namespace rs

namespace rs::ui {

enum class TradeoffAxis {
    Absolute, // step time (ms) on x, peak allocated (GB) on y
    VersusControl, // Δ% against the matched control on both
};

struct TradeoffPoint {
    QString moduleSet; // the guide's label: "[]", "moe_act", "layernorm, moe_act", "full uniform 1"
    QString group; // the comparison it belongs to: the control's recipe/model name
    int groupIndex = 0;
    std::optional<double> x; // empty: no steady step time (a failed run)
    std::optional<double> timeDeltaPct; // Δ step time against the control (kStepDeltaName); nullopt: none
    double y = 0.0;
    bool isControl = false;
    bool failed = false; // no run of this module set passed
    bool stopped = false; // failed, and every run of it was stopped (cancelled, no result): no verdict
    bool chosen = false; // the advisor's choice for the memory target (applyAdvice)
    bool onFront = false; // on its group's Pareto front (lower is better on both axes)
    bool predicted = false; // a plan's prediction (applyPlan), not a measurement: no run behind it
    bool onPlanFront = false; // on the plan's front: predicted, or the measurement that took its place
    int runCount = 0; // runs averaged into the point
    qint64 runId = 0; // the newest run of the point
    QVector<qint64> runIds; // every run of the point
    qint64 groupKey = 0; // the comparison's control run id
    QString outcome; // "pass", or the failure ("oom in forward")
    QString tooltip;
};

struct TradeoffData {
    QString xTitle;
    QString yTitle;
    QString yShortTitle; // what the y axis says when yTitle does not fit the plot's height ("GB")
    QStringList groups;
    QVector<TradeoffPoint> points;
    std::optional<double> memoryTarget; // in y's units; empty: none to draw
    bool provisionalPredictions = false; // its predicted points come from a provisional rates record
};

// A run's step samples (core's stepSamples: its steady iteration times, or its stored step time alone).
using StepSamplesOf = std::function<std::vector<double>(const storage::RunRecord&)>;

// Groups runs by matched comparison (a run's stored control, or the run itself when it is a control) and
// module set; a point is the mean of its passing runs (or, when none passed, of its failed runs' peaks).
// Its Δ step time is the product's one (core's kStepDeltaName): the Hodges-Lehmann shift of its runs'
// samples (pooled) against the control's, from `samples` (without it, each run's stored step time). In
// VersusControl mode it is the point's x, and only groups with a passing control with a step time are drawn.
// A comparison's control is the run the others link to, or a run that recomputes nothing ([] or Megatron's
// None); it is drawn as the control.
TradeoffData buildTradeoff(const QVector<storage::RunRecord>& runs, TradeoffAxis axis,
    std::optional<double> memoryTargetGb = std::nullopt, const StepSamplesOf& samples = {});
// The same over runs held elsewhere (the runs page's model): no copy of 10,000 records per redraw.
TradeoffData buildTradeoffFrom(const QVector<const storage::RunRecord*>& runs, TradeoffAxis axis,
    std::optional<double> memoryTargetGb = std::nullopt, const StepSamplesOf& samples = {});
// Marks onFront: the points of each group not dominated by another passing point of the group.
void markParetoFront(QVector<TradeoffPoint>* points);

// The advisor's verdict on one run (storage/advice.h, as `recompute advise` prints it).
struct RunAdvice {
    QString verdict; // "chosen", "over-target", "slower", ...
    QString reasons; // every reason, "; "-joined
    bool chosen = false;
};
// Marks the point holding the chosen run and adds each point's verdict (its newest run's) to its tooltip.
void applyAdvice(TradeoffData* data, const QHash<qint64, RunAdvice>& byRun);

// A recompute plan's front (core/plan.h) as the trade-off chart draws it: predictions, each of which gives
// way to a stored measurement of the same recipe and choice.
struct PlannedPoint {
    QString moduleSet; // RecomputeChoice::label(): the runs' moduleSetLabel() spelling
    RecomputeChoice choice;
    // Store::recipeMatchKey of the choice's resolved recipe: what the store matches recipes by, less the
    // recompute choice (a stored run of this choice has this key and storedChoice() == choice).
    QString matchKey;
    double stepMs = 0.0; // predicted
    double deltaPct = 0.0; // against the plan's [] (predicted)
    double peakGb = 0.0; // the hottest rank's estimated peak
    int hottestStage = 0;
    bool isControl = false;
    bool chosen = false; // the cheapest predicted step that fits
    QString reason;
};
struct PlanOverlay {
    QString recipeName;
    QString ratesSource; // the calibration's device and dtype (", PROVISIONAL" when so)
    bool provisional = false; // from a provisional rates record: said in the legend and every tooltip
    std::optional<double> controlPeakGb; // the plan's [] (the Δ% axes' reference)
    QVector<PlannedPoint> front; // the plan's Pareto front, by peak
};
// The key a stored run of `choice` of `resolved` (read as `format`) has: Store::recipeMatchKey of the recipe
// the worker would run for it, resolved as the plan resolved it.
QString plannedMatchKey(const Recipe& resolved, InputFormat format, const RecomputeChoice& choice);
// Whether stored run `r` measures the planned `choice` whose recipe has `matchKey`: the same key and the same
// choice (storedChoice). A failed run too. The one test of "measured" for the chart and the plan's table.
bool measuresPlanned(const storage::RunRecord& r, const QString& matchKey, const RecomputeChoice& choice);

// A plan's candidate as the store has measured it: its runs pooled as the trade-off pools a point's.
struct PlanMeasurement {
    QVector<qint64> runIds; // the passing runs (every failed one when none passed)
    QString outcome; // "pass", or the newest failure ("oom in forward")
    std::optional<double> peakGb; // mean peak allocated of those runs
    std::optional<double> stepMs; // mean steady step time of the passing runs
    // Δ step time against the measured [] of the same recipe (core's timeDelta, kStepDeltaName), and the
    // prediction's miss: predicted Δ (the predicted difference from the model's [] over the measured []'s
    // median step, as core/plan.h anchors it) less measured Δ, in percentage points. nullopt: no measured []
    // (or no step time on either side).
    std::optional<double> deltaPct;
    std::optional<double> missPts;
};
// For each of `plan`'s candidates (`matchKeys[i]`: plannedMatchKey of candidate i), its measurement among
// `runs` (measuresPlanned), or nullopt. The Δ is each run's `samples` (without it, the stored step time)
// pooled against the [] candidate's.
QVector<std::optional<PlanMeasurement>> measurePlan(const Plan& plan, const QStringList& matchKeys,
    const QVector<const storage::RunRecord*>& runs, const StepSamplesOf& samples = {});

// The front of `plan`, made for `resolved` (validate(...).resolved) read as `format` (what planRecompute was
// given), each choice keyed as the store keys its runs.
PlanOverlay planOverlay(const Plan& plan, const Recipe& resolved, InputFormat format);
// The legend's name of the predicted points: "predicted", or "predicted (PROVISIONAL rates)".
QString predictedSeriesName(bool provisional);
// Adds the plan's front to `data`: a point of the plan measured among `runs` (same match key, same choice;
// a failed run too) keeps its measured point, marked onPlanFront with the prediction in its tooltip; every
// other becomes a predicted point, in the comparison of its recipe's runs or, with none among `runs`, in a
// group of its own ("plan: NAME"). Absolute axes: predicted ms and GB; Δ%: against the plan's own [].
void applyPlan(TradeoffData* data, const PlanOverlay& plan, const QVector<const storage::RunRecord*>& runs,
    TradeoffAxis axis);

// Axis bounds and tick step at round values ("nice numbers": steps of 1, 2 or 5 times a power of ten)
// covering [lo, hi] with at most maxTicks ticks: 2077..2199 becomes 2060..2200 by 20, not 2077/2138/2199.
struct NiceAxis {
    double min = 0.0;
    double max = 1.0;
    double step = 0.2;
    int tickCount() const;
};
NiceAxis niceAxis(double lo, double hi, int maxTicks = 7);

struct RankBar {
    int rank = 0;
    double allocatedGb = 0.0;
    double reservedGb = 0.0;
    QString peakPhase;
};
QVector<RankBar> buildRankBars(const QVector<storage::RankPeak>& peaks);

struct IterationLine {
    QString name; // "forward peak allocated", ...
    QColor color;
    bool dashed = false; // reserved lines are dashed
    QVector<QPointF> points; // (iteration, GB)
};
// One line per phase (forward, backward, optimizer) for allocated (solid) and reserved (dashed), plus
// "allocated after step" where present. Rows of several ranks: rank `rank` only.
QVector<IterationLine> buildIterationLines(const QVector<storage::IterationRow>& rows, int rank = 0);
// The same from a training log's memory lines (Megatron's per-rank report after each logged iteration):
// max allocated and allocated (solid), max reserved (dashed), rank `rank` only.
QVector<IterationLine> buildMemoryReportLines(const QVector<storage::MemoryReport>& reports, int rank = 0);

// What holds the peak (docs/stream.md, `peak_attribution`): the live bytes by category at one phase's peak
// of one run, measured (the stream's attribution) or estimated (core/estimator.h). One bar per run and
// source; the runs page shows the selected run beside its control.
struct PeakAttribution {
    QString run; // the bar's label: "run 7: core_attn", "run 3: [] (control)"
    qint64 runId = 0;
    QString series; // where the bytes come from: "estimate", "measured"
    QString phase; // the phase whose peak it is: forward | backward | optimizer | optimizer-init
    // category → live bytes at the peak; the categories are peakCategories() (a missing one is 0, one not
    // among them counts as "other")
    QHash<QString, qint64> bytes;
    qint64 category(const QString& name) const;
    qint64 total() const;
};
struct PeakAttributionData {
    QString title;
    QVector<PeakAttribution> bars; // top to bottom
    std::optional<double> memoryTargetGb;
};
// The stream's categories, in its order (the bars' stacking order): parameters, main_parameters,
// gradient_buffer, optimizer_states, activations, backward, workspace, other.
const QStringList& peakCategories();
// The estimate's hottest rank at its peak phase, labelled series "estimate". The estimator's categories
// become the stream's: gradients → gradient_buffer (the worker layout's autograd gradients in backward and
// the optimizer step → backward), transient → activations in forward (logits, a layer's temporaries),
// backward in backward (replay, gradients in flight), workspace in the optimizer phases.
PeakAttribution peakAttributionFromEstimate(const QString& run, qint64 runId, const MemoryEstimate& e);

using rs::kBytesPerGb; // decimal GB, as the guide reports them (core/units.h)

} // namespace rs::ui
