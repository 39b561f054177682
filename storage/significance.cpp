// SPDX-License-Identifier: Apache-2.0
#include "storage/significance.h"

#include <algorithm>

#include "core/recompute_labels.h"
#include "core/step_stats.h"
#include "core/units.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

std::vector<double> steadyIterationTimes(const Store& store, qint64 runId)
{
    const QVector<IterationRow> rows = store.iterations(runId);
    std::optional<int> rank;
    for (const IterationRow& r : rows) {
        if (!rank || r.rank < *rank)
            rank = r.rank;
    }
    std::vector<double> out;
    for (const IterationRow& r : rows) {
        if (r.rank == rank && r.phase == u"steady"_s && r.stepMs)
            out.push_back(*r.stepMs);
    }
    return out;
}

std::optional<double> pooledIntervalHalfWidthPct(const Store& store, const QVector<qint64>& runs)
{
    std::vector<double> pooled;
    for (qint64 id : runs) {
        const std::vector<double> t = steadyIterationTimes(store, id);
        pooled.insert(pooled.end(), t.begin(), t.end());
    }
    const auto stats = stepStats(pooled);
    return stats ? stats->halfWidthPct() : std::nullopt;
}

std::vector<double> stepSamplesOf(const Store& store, const RunRecord& run)
{
    return stepSamples(steadyIterationTimes(store, run.id), run.steadyStepMs);
}

std::optional<TimeDelta> stepTimeDelta(
    const Store& store, const QVector<RunRecord>& runs, const QVector<RunRecord>& controls)
{
    std::vector<double> x, y;
    for (const RunRecord& r : runs) {
        const std::vector<double> t = stepSamplesOf(store, r);
        x.insert(x.end(), t.begin(), t.end());
    }
    for (const RunRecord& r : controls) {
        const std::vector<double> t = stepSamplesOf(store, r);
        y.insert(y.end(), t.begin(), t.end());
    }
    return timeDelta(x, y);
}

void fillStepTimeDeltas(
    const Store& store, QVector<ComparisonRow>& rows, const QVector<qint64>& moreControlRuns)
{
    const auto head
        = std::find_if(rows.begin(), rows.end(), [](const ComparisonRow& r) { return r.isControl; });
    if (head == rows.end())
        return;
    QVector<RunRecord> controls { head->run };
    for (qint64 id : moreControlRuns) {
        if (id == head->run.id)
            continue;
        if (const auto r = store.run(id))
            controls << *r;
    }
    for (ComparisonRow& row : rows) {
        // Only where the plain delta exists: matched, a step time on both sides.
        if (row.isControl || !row.timeVsControlPct)
            continue;
        const auto d = stepTimeDelta(store, { row.run }, controls);
        if (!d)
            continue;
        row.timeVsControlPct = d->pct;
        row.timeLowPct = d->low_pct;
        row.timeHighPct = d->high_pct;
        row.timeVerdict = d->low_pct ? QString::fromLatin1(significanceName(d->verdict)) : QString();
    }
}

RecomputeChoice storedChoice(const RunRecord& run)
{
    RecomputeChoice c;
    if (run.recomputeGranularity == u"full"_s) {
        c.granularity = "full";
        c.method = run.recomputeMethod.toStdString();
        c.num_layers = run.recomputeNumLayers.value_or(0);
        return c;
    }
    if (run.recomputeGranularity == u"selective"_s) {
        if (!run.recomputeModules)
            c.modules = { std::string(kDefaultRecomputeLabel) };
        else
            for (const QString& m : *run.recomputeModules)
                c.modules.push_back(m.toStdString());
    }
    return c;
}

namespace {

void addRun(ChoiceGroup& g, const std::vector<double>& t)
{
    g.times.insert(g.times.end(), t.begin(), t.end());
    if (const auto s = stepStats(t))
        g.runMedians.push_back(s->median_ms);
}

} // namespace

QVector<ChoiceGroup> groupRows(
    const Store& store, const QVector<ComparisonRow>& rows, const QVector<qint64>& moreControlRuns)
{
    QVector<ChoiceGroup> groups;
    for (int i = 0; i < rows.size(); ++i) {
        const RunRecord& run = rows[i].run;
        const QString label = run.moduleSetLabel();
        auto it = std::find_if(groups.begin(), groups.end(), [&](const ChoiceGroup& g) {
            return rows[i].isControl ? g.isControl : (!g.isControl && g.label == label);
        });
        if (it == groups.end()) {
            groups.push_back({ label, storedChoice(run), {}, {}, rows[i].isControl, {} });
            it = groups.end() - 1;
        }
        it->rows << i;
        addRun(*it, steadyIterationTimes(store, run.id));
    }
    if (!groups.isEmpty() && groups.front().isControl) {
        for (qint64 id : moreControlRuns)
            addRun(groups.front(), steadyIterationTimes(store, id));
    }
    return groups;
}

QString applySignificance(StoredAdvice& a, const Store& store, const QVector<qint64>& moreControlRuns)
{
    Advice& adv = a.advice;
    if (!adv.chosen)
        return {};
    const QVector<ChoiceGroup> groups = groupRows(store, a.rows, moreControlRuns);
    // A choice is in the running when every run of it fits (chosen or merely slower).
    std::vector<TimedChoice> timed;
    QVector<int> groupOf;
    for (int g = 0; g < groups.size(); ++g) {
        const bool fits = std::all_of(groups[g].rows.begin(), groups[g].rows.end(), [&](int i) {
            const Verdict v = adv.verdicts[std::size_t(i)].verdict;
            return v == Verdict::Chosen || v == Verdict::Slower;
        });
        if (!fits || groups[g].times.empty())
            continue;
        timed.push_back({ groups[g].choice, groups[g].times, groups[g].runMedians });
        groupOf << g;
    }
    if (timed.empty())
        return {};
    const SignificantChoice sc = chooseBySignificance(timed);
    if (!sc.chosen)
        return {};
    const ChoiceGroup& chosen = groups[groupOf[int(*sc.chosen)]];
    // The row of the chosen choice with the smallest worst peak stands for it.
    int chosenRow = chosen.rows.front();
    for (int i : chosen.rows) {
        if (adv.verdicts[std::size_t(i)].worst_peak_bytes
            < adv.verdicts[std::size_t(chosenRow)].worst_peak_bytes)
            chosenRow = i;
    }
    const QString before = QString::fromStdString(a.candidates[*adv.chosen].label);
    const auto chosenStats = stepStats(chosen.times);
    for (std::size_t t = 0; t < timed.size(); ++t) {
        const ChoiceGroup& g = groups[groupOf[int(t)]];
        const auto vsChosen = t == *sc.chosen ? std::nullopt : timeDelta(g.times, chosen.times);
        for (int i : g.rows) {
            CandidateVerdict& v = adv.verdicts[std::size_t(i)];
            // The advisor's "fits (...)" part stays; the time part is the significance's.
            std::string fits = v.reasons.empty() ? std::string() : v.reasons.front();
            if (const auto cut = fits.find(')'); cut != std::string::npos)
                fits = fits.substr(0, cut + 1);
            v.reasons.clear();
            if (i == chosenRow) {
                v.verdict = Verdict::Chosen;
                v.slower_pct.reset();
                v.reasons.push_back(fits + "; " + sc.reasons[t]);
            } else {
                v.verdict = Verdict::Slower;
                v.slower_pct = vsChosen ? std::optional(vsChosen->pct) : std::optional<double>(0.0);
                v.reasons.push_back(fits + "; "
                    + (t == *sc.chosen ? std::string("a repeat of the chosen choice") : sc.reasons[t]));
            }
        }
    }
    adv.chosen = std::size_t(chosenRow);
    const CandidateVerdict& cv = adv.verdicts[std::size_t(chosenRow)];
    const int dp = adv.target_gb < 1.0 ? 6 : 3;
    adv.summary = "use " + chosen.label.toStdString() + ": " + formatGb(cv.worst_peak_bytes, dp) + " GB on "
        + (cv.worst_rank.value_or(-1) < 0 ? std::string("max over ranks")
                                          : "rank " + std::to_string(*cv.worst_rank))
        + " fits the " + formatFixed(adv.target_gb, dp) + " GB target at " + statsText(*chosenStats)
        + " per step; " + sc.reasons[*sc.chosen];
    if (chosen.label != before)
        return u"the lowest single-run step time, %1, is not significantly faster than %2, the narrower "
               u"boundary: %2 is "
               "chosen (the guide's tie rule)"_s.arg(before, chosen.label);
    return {};
}

} // namespace rs::storage
