// SPDX-License-Identifier: Apache-2.0
#include "charts/chartdata.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QHash>

#include "core/estimator.h"
#include "core/plan.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/step_stats.h"
#include "storage/significance.h"

namespace rs::ui {

using storage::RunRecord;

namespace {

bool passed(const RunRecord& r)
{
    return r.outcome == storage::outcome::Pass;
}

QString groupName(const RunRecord& control)
{
    QString name = !control.model.isEmpty() ? control.model : control.recipeName;
    if (name.isEmpty())
        name = QStringLiteral("run %1").arg(control.id);
    return name;
}

// Stopped by the user or without a result: no verdict on the recipe (not an OOM, not an error).
bool stoppedRun(const RunRecord& r)
{
    return r.outcome == storage::outcome::Aborted || r.outcome == storage::outcome::Running;
}

QString failureText(const RunRecord& r)
{
    if (r.outcome == storage::outcome::Aborted && r.message.startsWith(QLatin1String("cancelled")))
        return QStringLiteral("cancelled");
    QString text = r.outcome;
    if (!r.failureStage.isEmpty())
        text += QStringLiteral(" in ") + r.failureStage;
    if (r.failureIteration)
        text += QStringLiteral(" (iteration %1)").arg(*r.failureIteration);
    return text;
}

// The mean steady step time (of the runs that passed) and mean peak allocated of runs pooled into one point;
// nullopt where none has one.
struct RunMeans {
    std::optional<double> stepMs;
    std::optional<double> peakGb;
};
RunMeans meansOf(const QVector<const RunRecord*>& runs)
{
    double ms = 0.0, gb = 0.0;
    int nMs = 0, nGb = 0;
    for (const RunRecord* r : runs) {
        if (r->steadyStepMs && passed(*r)) {
            ms += *r->steadyStepMs;
            ++nMs;
        }
        if (r->peakAllocated) {
            gb += double(*r->peakAllocated) / kBytesPerGb;
            ++nGb;
        }
    }
    RunMeans out;
    if (nMs)
        out.stepMs = ms / nMs;
    if (nGb)
        out.peakGb = gb / nGb;
    return out;
}

struct Accumulator {
    QVector<const RunRecord*> passing;
    QVector<const RunRecord*> failing;
};

// Runs' step samples pooled (each run's `samples`, or its stored step time alone): what a Δ is taken over.
std::vector<double> pooledSamples(const QVector<const RunRecord*>& runs, const StepSamplesOf& samples)
{
    std::vector<double> out;
    for (const RunRecord* r : runs) {
        const std::vector<double> t = samples ? samples(*r) : stepSamples({}, r->steadyStepMs);
        out.insert(out.end(), t.begin(), t.end());
    }
    return out;
}

} // namespace

TradeoffData buildTradeoff(const QVector<RunRecord>& runs, TradeoffAxis axis,
    std::optional<double> memoryTargetGb, const StepSamplesOf& samples)
{
    QVector<const RunRecord*> pointers;
    pointers.reserve(runs.size());
    for (const auto& r : runs)
        pointers << &r;
    return buildTradeoffFrom(pointers, axis, memoryTargetGb, samples);
}

TradeoffData buildTradeoffFrom(const QVector<const RunRecord*>& runs, TradeoffAxis axis,
    std::optional<double> memoryTargetGb, const StepSamplesOf& samples)
{
    const auto samplesOf
        = [&samples](const QVector<const RunRecord*>& rs) { return pooledSamples(rs, samples); };
    TradeoffData data;
    const bool delta = axis == TradeoffAxis::VersusControl;
    data.xTitle
        = delta ? QStringLiteral("Step time vs control (%)") : QStringLiteral("Steady step time (ms)");
    data.yTitle
        = delta ? QStringLiteral("Peak allocated vs control (%)") : QStringLiteral("Peak allocated (GB)");
    data.yShortTitle = delta ? QStringLiteral("Δ alloc. (%)") : QStringLiteral("GB");

    QHash<qint64, const RunRecord*> byId;
    byId.reserve(runs.size());
    for (const RunRecord* r : runs)
        byId.insert(r->id, r);

    // group key: the control run id (a control is its own group); ordered by first appearance
    std::vector<qint64> groupOrder;
    std::map<qint64, std::map<QString, Accumulator>> groups;
    QHash<qint64, int> linked; // runs linked to each control
    for (const RunRecord* run : runs) {
        const RunRecord& r = *run;
        // A run linked to a control joins its comparison, a repeated [] control too; an unlinked run (a
        // control itself) starts its own.
        const qint64 key = r.controlRunId ? *r.controlRunId : r.id;
        if (!groups.count(key))
            groupOrder.push_back(key);
        if (key != r.id)
            ++linked[key];
        auto& acc = groups[key][r.moduleSetLabel()];
        (passed(r) ? acc.passing : acc.failing).push_back(run);
    }

    // In absolute units the Δ is only said in the tooltips: a sweep of many comparisons does not read every
    // run's iterations for them (the Δ% axis does).
    const bool withDelta = delta || groupOrder.size() <= 6;
    for (qint64 key : groupOrder) {
        const RunRecord* found = byId.value(key, nullptr);
        // The group's head is its control when it recomputes nothing or others are compared with it (an
        // imported Megatron-LM log's "none" is as much a control as the explicit []).
        const RunRecord* control
            = found && (found->isNoRecompute() || linked.value(key) > 0) ? found : nullptr;
        const QString controlLabel = control ? control->moduleSetLabel() : QString();
        std::vector<double> controlSamples;
        if (control && passed(*control) && withDelta)
            controlSamples = samplesOf(groups[key][controlLabel].passing);
        // A group whose control is not among the runs (filtered out) is still drawn in absolute mode.
        const QString name = found ? groupName(*found) : QStringLiteral("control %1").arg(key);
        std::optional<double> controlMs;
        std::optional<double> controlGb;
        if (control && passed(*control) && control->steadyStepMs)
            controlMs = *control->steadyStepMs;
        if (control && control->peakAllocated)
            controlGb = double(*control->peakAllocated) / kBytesPerGb;
        // Repeats of the control: the reference is their mean, the same value the control's point shows.
        if (control && passed(*control)) {
            const RunMeans repeats = meansOf(groups[key][control->moduleSetLabel()].passing);
            if (repeats.stepMs)
                controlMs = repeats.stepMs;
            if (repeats.peakGb)
                controlGb = repeats.peakGb;
        }
        if (delta && (!controlMs || !controlGb))
            continue;
        const int groupIndex = int(data.groups.size());
        data.groups << name;
        for (const auto& [label, acc] : groups[key]) {
            const bool failed = acc.passing.isEmpty();
            const auto& use = failed ? acc.failing : acc.passing;
            qint64 newest = 0;
            bool allStopped = true;
            QVector<qint64> ids;
            for (const RunRecord* r : use) {
                allStopped &= stoppedRun(*r);
                ids << r->id;
                newest = std::max(newest, r->id);
            }
            const RunMeans means = meansOf(use);
            if (!means.peakGb)
                continue; // nothing measured to place it by
            const bool hasStep = means.stepMs.has_value();
            TradeoffPoint p;
            p.moduleSet = label;
            p.group = name;
            p.groupIndex = groupIndex;
            p.failed = failed;
            p.stopped = failed && allStopped;
            p.runIds = ids;
            p.groupKey = key;
            p.runCount = int(use.size());
            p.runId = newest;
            p.isControl = control && controlLabel == label && !failed;
            const double ms = means.stepMs.value_or(0.0);
            const double gb = *means.peakGb;
            if (hasStep && !p.isControl && !controlSamples.empty()) {
                if (const auto d = timeDelta(samplesOf(use), controlSamples))
                    p.timeDeltaPct = d->pct;
            } else if (hasStep && p.isControl) {
                p.timeDeltaPct = 0.0;
            }
            if (hasStep)
                p.x = delta ? p.timeDeltaPct : std::optional<double>(ms);
            if (delta && hasStep && !p.x)
                continue; // no Δ step time against the control: nothing to place it by
            p.y = delta ? (gb - *controlGb) / *controlGb * 100.0 : gb;
            p.outcome = failed ? failureText(*use.front()) : QStringLiteral("pass");
            const QString note = use.front()->peakNote.isEmpty()
                ? QString()
                : QStringLiteral(" (") + use.front()->peakNote + QLatin1Char(')');
            p.tooltip
                = QStringLiteral("<b>%1</b> — %2<br>%3<br>peak allocated %4 GB%5%6<br>%7 run(s)")
                      .arg(label.toHtmlEscaped(), name.toHtmlEscaped(),
                          p.stopped ? QStringLiteral("<span style='color:#666'>%1</span>").arg(p.outcome)
                              : p.failed
                              ? QStringLiteral("<span style='color:#c62828'>%1</span>").arg(p.outcome)
                              : p.outcome)
                      .arg(gb, 0, 'f', 3)
                      .arg(note.toHtmlEscaped())
                      .arg(hasStep ? QStringLiteral(", step %1 ms").arg(ms, 0, 'f', 1) : QString())
                      .arg(p.runCount);
            if (p.timeDeltaPct && !p.isControl)
                p.tooltip += QStringLiteral("<br>%1 %2%")
                                 .arg(QString::fromUtf8(kStepDeltaName))
                                 .arg(QString::asprintf("%+.2f", *p.timeDeltaPct));
            if (delta)
                p.tooltip += QStringLiteral("<br>Δ allocated %1%").arg(QString::asprintf("%+.2f", p.y));
            data.points << p;
        }
    }
    markParetoFront(&data.points);

    if (memoryTargetGb) {
        if (!delta) {
            data.memoryTarget = *memoryTargetGb;
        } else if (data.groups.size() == 1) {
            // One comparison: the target as a change against its control.
            for (const TradeoffPoint& p : std::as_const(data.points)) {
                const RunRecord* c = p.isControl ? byId.value(p.groupKey, nullptr) : nullptr;
                if (c && c->peakAllocated) {
                    const double gb = double(*c->peakAllocated) / kBytesPerGb;
                    data.memoryTarget = (*memoryTargetGb - gb) / gb * 100.0;
                    break;
                }
            }
        }
    }
    return data;
}

void markParetoFront(QVector<TradeoffPoint>* points)
{
    // Per comparison: a point is on the front when no other passing point of its comparison is at least as
    // good on both axes and better on one. Bucketed by comparison so a sweep of many stays linear in them.
    QHash<int, QVector<int>> byGroup;
    for (int i = 0; i < points->size(); ++i) {
        TradeoffPoint& p = (*points)[i];
        p.onFront = false;
        if (!p.failed && !p.predicted && p.x)
            byGroup[p.groupIndex] << i;
    }
    for (const QVector<int>& members : std::as_const(byGroup)) {
        for (int i : members) {
            TradeoffPoint& p = (*points)[i];
            bool dominated = false;
            for (int j : members) {
                const TradeoffPoint& q = (*points)[j];
                if (j != i && *q.x <= *p.x && q.y <= p.y && (*q.x < *p.x || q.y < p.y)) {
                    dominated = true;
                    break;
                }
            }
            p.onFront = !dominated;
        }
    }
}

QString plannedMatchKey(const Recipe& resolved, InputFormat format, const RecomputeChoice& choice)
{
    // The store keys a run by its resolved recipe (the worker's `recipe` event), less the recompute choice.
    const Recipe run = validate(candidateRecipe(resolved, choice), format).resolved;
    return storage::Store::recipeMatchKey(QString::fromStdString(recipeToJson(run).dump()));
}

bool measuresPlanned(const storage::RunRecord& r, const QString& matchKey, const RecomputeChoice& choice)
{
    return !r.recipeMatchKey.isEmpty() && r.recipeMatchKey == matchKey
        && storage::storedChoice(r).sameAs(choice);
}

QVector<std::optional<PlanMeasurement>> measurePlan(const Plan& plan, const QStringList& matchKeys,
    const QVector<const storage::RunRecord*>& runs, const StepSamplesOf& samples)
{
    const auto samplesOf
        = [&samples](const QVector<const RunRecord*>& rs) { return pooledSamples(rs, samples); };
    const size_t n = std::min(plan.candidates.size(), size_t(matchKeys.size()));
    QVector<std::optional<PlanMeasurement>> out(qsizetype(plan.candidates.size()));
    std::vector<Accumulator> of(n);
    for (const RunRecord* r : runs)
        for (size_t i = 0; i < n; ++i)
            if (measuresPlanned(*r, matchKeys[qsizetype(i)], plan.candidates[i].choice))
                (passed(*r) ? of[i].passing : of[i].failing).push_back(r);
    // The [] candidate (the plan's first) measured: the reference of every measured Δ.
    std::vector<double> controlSamples;
    const bool controlFirst = n > 0 && plan.candidates.front().control;
    if (controlFirst)
        controlSamples = samplesOf(of[0].passing);
    // The predicted Δ a measurement is held to: the choice's predicted difference from the model's own []
    // over the measured [] step (core/plan.h measured_control_ms: the model's [] lacks the host's time).
    const std::optional<StepStats> control = stepStats(controlSamples);
    for (size_t i = 0; i < n; ++i) {
        const bool failed = of[i].passing.isEmpty();
        const auto& use = failed ? of[i].failing : of[i].passing;
        if (use.isEmpty())
            continue;
        PlanMeasurement m;
        const RunRecord* newest = nullptr;
        for (const RunRecord* r : use) {
            m.runIds << r->id;
            if (!newest || r->id > newest->id)
                newest = r;
        }
        m.outcome = failed ? failureText(*newest) : QString(storage::outcome::Pass);
        const RunMeans means = meansOf(use);
        m.peakGb = means.peakGb;
        m.stepMs = means.stepMs;
        const PlanCandidate& c = plan.candidates[i];
        if (m.stepMs && !controlSamples.empty() && c.verdict != PlanVerdict::Invalid) {
            // The [] itself is the reference: no Δ of its own to miss.
            if (!(controlFirst && i == 0))
                if (const auto d = timeDelta(samplesOf(use), controlSamples); d && control) {
                    m.deltaPct = d->pct;
                    m.missPts = anchoredDeltaPct(plan, c, control->median_ms) - d->pct;
                }
        }
        out[qsizetype(i)] = m;
    }
    return out;
}

PlanOverlay planOverlay(const Plan& plan, const Recipe& resolved, InputFormat format)
{
    PlanOverlay out;
    out.recipeName = QString::fromStdString(resolved.name);
    out.ratesSource = QString::fromStdString(plan.rates_source);
    out.provisional = plan.provisional;
    if (!plan.candidates.empty() && plan.candidates.front().verdict != PlanVerdict::Invalid)
        out.controlPeakGb = double(plan.candidates.front().peak_bytes) / kBytesPerGb;
    for (size_t i : plan.front) {
        const PlanCandidate& c = plan.candidates[i];
        PlannedPoint p;
        p.moduleSet = QString::fromStdString(c.choice.label());
        p.choice = c.choice;
        p.matchKey = plannedMatchKey(resolved, format, c.choice);
        p.stepMs = c.step_ms;
        p.deltaPct = c.delta_pct;
        p.peakGb = double(c.peak_bytes) / kBytesPerGb;
        p.hottestStage = c.hottest_stage;
        p.isControl = c.control;
        p.chosen = plan.chosen && *plan.chosen == i;
        p.reason = QString::fromStdString(c.reason);
        out.front << p;
    }
    return out;
}

QString predictedSeriesName(bool provisional)
{
    return provisional ? QStringLiteral("predicted (PROVISIONAL rates)") : QStringLiteral("predicted");
}

void applyPlan(TradeoffData* data, const PlanOverlay& plan, const QVector<const storage::RunRecord*>& runs,
    TradeoffAxis axis)
{
    const bool delta = axis == TradeoffAxis::VersusControl;
    if (delta && !(plan.controlPeakGb && *plan.controlPeakGb > 0))
        return;
    QHash<qint64, int> pointOfRun;
    for (int i = 0; i < data->points.size(); ++i)
        for (qint64 id : std::as_const(data->points[i].runIds))
            pointOfRun.insert(id, i);
    data->provisionalPredictions = plan.provisional;
    const QString provisional
        = plan.provisional ? QStringLiteral(", PROVISIONAL rates: not a measurement") : QString();
    const auto predictionText = [&](const PlannedPoint& pp) {
        return QStringLiteral("predicted step %1 ms (%2 % against []), peak %3 GB on stage %4 (%5%6)")
            .arg(pp.stepMs, 0, 'f', 1)
            .arg(QString::asprintf("%+.2f", pp.deltaPct))
            .arg(pp.peakGb, 0, 'f', 2)
            .arg(pp.hottestStage)
            .arg(plan.ratesSource, provisional);
    };
    // The comparison the plan's recipe is measured in: the group of a run with one of its keys.
    std::optional<int> group;
    QVector<int> measuredAt(plan.front.size(), -1);
    for (const storage::RunRecord* r : runs) {
        for (int k = 0; k < plan.front.size(); ++k) {
            const PlannedPoint& pp = plan.front[k];
            if (r->recipeMatchKey.isEmpty() || r->recipeMatchKey != pp.matchKey)
                continue;
            const int at = pointOfRun.value(r->id, -1);
            if (at < 0)
                continue;
            if (!group)
                group = data->points[at].groupIndex;
            if (measuresPlanned(*r, pp.matchKey, pp.choice))
                measuredAt[k] = at;
        }
    }
    if (!group) {
        group = int(data->groups.size());
        data->groups << QStringLiteral("plan: %1")
                            .arg(plan.recipeName.isEmpty() ? QStringLiteral("this recipe") : plan.recipeName);
    }
    for (int k = 0; k < plan.front.size(); ++k) {
        const PlannedPoint& pp = plan.front[k];
        if (measuredAt[k] >= 0) {
            TradeoffPoint& m = data->points[measuredAt[k]];
            if (!m.onPlanFront)
                m.tooltip += QStringLiteral("<br>measured in place of the plan's ") + predictionText(pp);
            m.onPlanFront = true;
            continue;
        }
        TradeoffPoint p;
        p.moduleSet = pp.moduleSet;
        p.group = data->groups[*group];
        p.groupIndex = *group;
        p.predicted = true;
        p.onPlanFront = true;
        p.isControl = pp.isControl;
        p.outcome = QStringLiteral("predicted");
        p.timeDeltaPct = pp.deltaPct;
        p.x = delta ? pp.deltaPct : pp.stepMs;
        p.y = delta ? (pp.peakGb - *plan.controlPeakGb) / *plan.controlPeakGb * 100.0 : pp.peakGb;
        p.tooltip
            = QStringLiteral("<b>%1</b> — %2<br><i>%3</i>, not measured%4<br>%5")
                  .arg(pp.moduleSet.toHtmlEscaped(), p.group.toHtmlEscaped(),
                      predictionText(pp).toHtmlEscaped(),
                      pp.chosen ? QStringLiteral("<br>the plan's choice: the cheapest that fits") : QString(),
                      pp.reason.toHtmlEscaped());
        data->points << p;
    }
}

void applyAdvice(TradeoffData* data, const QHash<qint64, RunAdvice>& byRun)
{
    for (TradeoffPoint& p : data->points) {
        p.chosen = false;
        const RunAdvice* newest = nullptr;
        qint64 newestId = 0;
        for (qint64 id : std::as_const(p.runIds)) {
            const auto it = byRun.constFind(id);
            if (it == byRun.constEnd())
                continue;
            if (it->chosen)
                p.chosen = true;
            if (id > newestId) {
                newestId = id;
                newest = &*it;
            }
        }
        if (p.chosen)
            p.tooltip += QStringLiteral("<br><b style='color:#1b7f3b'>advisor: chosen</b>");
        else if (newest)
            p.tooltip += QStringLiteral("<br>advisor: %1 — %2")
                             .arg(newest->verdict.toHtmlEscaped(), newest->reasons.toHtmlEscaped());
    }
}

int NiceAxis::tickCount() const
{
    return step > 0 ? int(std::lround((max - min) / step)) + 1 : 2;
}

namespace {
// Heckbert's nice number: 1, 2, 5 or 10 times a power of ten, rounded or ceiled.
double niceNumber(double x, bool round)
{
    const double exponent = std::floor(std::log10(x));
    const double fraction = x / std::pow(10.0, exponent);
    double nice;
    if (round)
        nice = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
    else
        nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
    return nice * std::pow(10.0, exponent);
}
} // namespace

NiceAxis niceAxis(double lo, double hi, int maxTicks)
{
    if (!std::isfinite(lo) || !std::isfinite(hi))
        return {};
    if (hi < lo)
        std::swap(lo, hi);
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
        const double m = std::max(std::abs(lo) * 0.05, 1e-9);
        lo -= m;
        hi += m;
    }
    maxTicks = std::max(3, maxTicks);
    NiceAxis a;
    // The smallest 1-2-5 step that covers the range with at most maxTicks ticks.
    a.step = niceNumber((hi - lo) / (maxTicks - 1), false);
    for (;;) {
        a.min = std::floor(lo / a.step) * a.step;
        a.max = std::ceil(hi / a.step) * a.step;
        if (a.tickCount() <= maxTicks)
            break;
        a.step = niceNumber(a.step * 1.5, false);
    }
    // -0 reads badly on an axis
    if (std::abs(a.min) < a.step * 1e-9)
        a.min = 0.0;
    return a;
}

QVector<RankBar> buildRankBars(const QVector<storage::RankPeak>& peaks)
{
    QVector<RankBar> bars;
    for (const auto& p : peaks) {
        RankBar b;
        b.rank = p.rank;
        b.allocatedGb = p.peakAllocated ? double(*p.peakAllocated) / kBytesPerGb : 0.0;
        b.reservedGb = p.peakReserved ? double(*p.peakReserved) / kBytesPerGb : 0.0;
        b.peakPhase = p.peakPhase;
        bars << b;
    }
    std::sort(bars.begin(), bars.end(), [](const RankBar& a, const RankBar& b) { return a.rank < b.rank; });
    return bars;
}

QVector<IterationLine> buildMemoryReportLines(const QVector<storage::MemoryReport>& reports, int rank)
{
    struct Spec {
        const char* name;
        QColor color;
        bool dashed;
        std::optional<qint64> storage::MemoryReport::*member;
    };
    const Spec specs[] = {
        { "max allocated", QColor(0xd6, 0x27, 0x28), false, &storage::MemoryReport::maxAllocated },
        { "allocated after step", QColor(0x7f, 0x7f, 0x7f), false, &storage::MemoryReport::allocated },
        { "max reserved", QColor(0xf0, 0x9a, 0x9a), true, &storage::MemoryReport::maxReserved },
    };
    QVector<IterationLine> lines;
    for (const auto& s : specs) {
        IterationLine line;
        line.name = QString::fromLatin1(s.name);
        line.color = s.color;
        line.dashed = s.dashed;
        for (const auto& m : reports) {
            if (m.rank == rank && m.*(s.member))
                line.points << QPointF(m.afterIteration, double(*(m.*(s.member))) / kBytesPerGb);
        }
        if (!line.points.isEmpty()) {
            std::sort(line.points.begin(), line.points.end(),
                [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
            lines << line;
        }
    }
    return lines;
}

QVector<IterationLine> buildIterationLines(const QVector<storage::IterationRow>& rows, int rank)
{
    struct Spec {
        const char* name;
        QColor color;
        bool dashed;
        std::optional<qint64> storage::IterationRow::*member;
    };
    const Spec specs[] = {
        { "forward peak allocated", QColor(0x1f, 0x77, 0xb4), false,
            &storage::IterationRow::forwardPeakAllocated },
        { "backward peak allocated", QColor(0xd6, 0x27, 0x28), false,
            &storage::IterationRow::backwardPeakAllocated },
        { "optimizer peak allocated", QColor(0x2c, 0xa0, 0x2c), false,
            &storage::IterationRow::optimizerPeakAllocated },
        { "forward peak reserved", QColor(0x9e, 0xc9, 0xe8), true,
            &storage::IterationRow::forwardPeakReserved },
        { "backward peak reserved", QColor(0xf0, 0x9a, 0x9a), true,
            &storage::IterationRow::backwardPeakReserved },
        { "optimizer peak reserved", QColor(0x98, 0xdf, 0x8a), true,
            &storage::IterationRow::optimizerPeakReserved },
        { "allocated after step", QColor(0x7f, 0x7f, 0x7f), false, &storage::IterationRow::allocatedAfter },
    };
    QVector<IterationLine> lines;
    for (const auto& s : specs) {
        IterationLine line;
        line.name = QString::fromLatin1(s.name);
        line.color = s.color;
        line.dashed = s.dashed;
        for (const auto& row : rows) {
            if (row.rank != rank)
                continue;
            const auto& v = row.*(s.member);
            if (v)
                line.points << QPointF(row.iteration, double(*v) / kBytesPerGb);
        }
        if (!line.points.isEmpty()) {
            std::sort(line.points.begin(), line.points.end(),
                [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
            lines << line;
        }
    }
    return lines;
}

const QStringList& peakCategories()
{
    static const QStringList k { QStringLiteral("parameters"), QStringLiteral("main_parameters"),
        QStringLiteral("gradient_buffer"), QStringLiteral("optimizer_states"), QStringLiteral("activations"),
        QStringLiteral("backward"), QStringLiteral("workspace"), QStringLiteral("other") };
    return k;
}

qint64 PeakAttribution::category(const QString& name) const
{
    qint64 v = bytes.value(name);
    if (name == QLatin1String("other")) {
        for (auto it = bytes.begin(); it != bytes.end(); ++it)
            if (!peakCategories().contains(it.key()))
                v += it.value();
    }
    return v;
}

qint64 PeakAttribution::total() const
{
    qint64 sum = 0;
    for (qint64 v : bytes)
        sum += v;
    return sum;
}

PeakAttribution peakAttributionFromEstimate(const QString& run, qint64 runId, const MemoryEstimate& e)
{
    PeakAttribution a;
    a.run = run;
    a.runId = runId;
    a.series = QStringLiteral("estimate");
    if (e.ranks.empty())
        return a;
    const PhaseEstimate& peak = e.ranks[size_t(e.hottest)].peak();
    a.phase = QString::fromStdString(peak.phase);
    const bool forward = peak.phase == "forward";
    const bool backward = peak.phase == "backward";
    for (const MemoryTerm& t : peak.terms) {
        QString c = QString::fromStdString(t.category);
        if (c == QLatin1String("gradients"))
            c = t.name.rfind("parameter gradients", 0) == 0 ? QStringLiteral("backward")
                                                            : QStringLiteral("gradient_buffer");
        else if (c == QLatin1String("transient"))
            c = forward    ? QStringLiteral("activations")
                : backward ? QStringLiteral("backward")
                           : QStringLiteral("workspace");
        else if (!peakCategories().contains(c))
            c = QStringLiteral("other");
        a.bytes[c] += t.bytes;
    }
    return a;
}

} // namespace rs::ui
