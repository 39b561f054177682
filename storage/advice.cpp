// SPDX-License-Identifier: Apache-2.0
#include "storage/advice.h"

#include <algorithm>

#include <QJsonDocument>
#include <QJsonObject>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "storage/report.h"
#include "storage/significance.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

namespace {

// The estimator's hottest-rank peak for a stored run's recipe (its own recompute choice), in the layout
// that measured it: an imported Megatron log is Megatron's, a run of our worker the worker's. None when the
// run has no recipe or the recipe does not read.
void fillEstimate(const RunRecord& run, AdviceCandidate& c)
{
    if (run.recipeJson.isEmpty())
        return;
    try {
        const Recipe r = validate(recipeFromJsonText(run.recipeJson.toStdString(), "stored recipe")).resolved;
        const MemoryEstimate e
            = estimateMemory(r, run.importFormat.isEmpty() ? Layout::Worker : Layout::Megatron);
        if (!e.ranks.empty()) {
            c.estimated_peak_bytes = e.peak_bytes;
            c.estimated_stage = e.ranks[static_cast<std::size_t>(e.hottest)].stage;
        }
    } catch (const std::exception&) {
        // no estimate: the advice stands on the measurements alone
    }
}

// The measured attribution at the phase of the run's peak (rank 0, as the store keeps it by default), with
// the activations summed by region over layers.
void fillAttribution(const Store& store, const RunRecord& run, AdviceCandidate& c)
{
    const QVector<PeakAttributionRow> rows = store.peakAttribution(run.id);
    const PeakAttributionRow* p = Store::peakPhaseOf(rows);
    if (!p)
        return;
    PeakAttributionBytes a;
    a.phase = p->phase.toStdString();
    a.peak_bytes = p->peakAllocated.value_or(p->attributed.value_or(0));
    for (const auto& cat : p->categories)
        a.categories.emplace_back(cat.first.toStdString(), cat.second);
    for (const ActivationShare& share : p->activations) {
        const std::string region = share.region.toStdString();
        auto it = std::find_if(
            a.regions.begin(), a.regions.end(), [&](const auto& r) { return r.first == region; });
        if (it == a.regions.end())
            a.regions.emplace_back(region, share.bytes);
        else
            it->second += share.bytes;
    }
    c.peak_attribution = std::move(a);
}

} // namespace

StoredAdvice adviseOnComparison(const Store& store, const QVector<ComparisonRow>& rows, double targetGb,
    const QVector<qint64>& moreControlRuns)
{
    StoredAdvice out;
    out.rows = rows;
    for (const ComparisonRow& row : rows) {
        const RunRecord& run = row.run;
        AdviceCandidate c;
        c.run_id = run.id;
        c.label = run.moduleSetLabel().toStdString();
        c.outcome = run.outcome.toStdString();
        c.failure_stage = run.failureStage.toStdString();
        c.failure_iteration = run.failureIteration;
        for (const RankPeak& p : store.rankPeaks(run.id)) {
            if (p.peakAllocated)
                c.rank_peaks.push_back({ p.rank, *p.peakAllocated });
        }
        if (c.rank_peaks.empty() && run.peakAllocated)
            c.rank_peaks.push_back({ run.peakRank.value_or(-1), *run.peakAllocated });
        c.ranks_expected = run.worldSize ? run.worldSize : run.gpuCount;
        c.steady_step_ms = run.steadyStepMs;
        c.worker_on_moe = run.source == source::Worker && run.numMoeExperts.value_or(0) > 0;
        c.matched = row.isControl || row.match.matched;
        for (const QString& r : row.match.reasons)
            c.unmatched_reasons.push_back(r.toStdString());
        c.is_control = row.isControl && run.isExplicitControl();
        fillEstimate(run, c);
        fillAttribution(store, run, c);
        out.candidates.push_back(std::move(c));
    }
    out.advice = adviseRecompute(out.candidates, targetGb);
    out.significanceNote = applySignificance(out, store, moreControlRuns);
    return out;
}

std::optional<StoredAdvice> adviseOnControl(
    const Store& store, qint64 controlRunId, double targetGb, const QVector<qint64>& moreControlRuns)
{
    if (controlRunId <= 0 || !(targetGb > 0))
        return std::nullopt;
    const QVector<ReportTable> tables = buildReport(store, controlRunId, {});
    if (tables.isEmpty() || !tables.first().control || tables.first().rows.isEmpty())
        return std::nullopt;
    return adviseOnComparison(store, tables.first().rows, targetGb, moreControlRuns);
}

std::optional<double> recipeMemoryTarget(const QString& recipeJson)
{
    if (recipeJson.isEmpty())
        return std::nullopt;
    const QJsonValue v = QJsonDocument::fromJson(recipeJson.toUtf8()).object().value(u"memory_target_gb"_s);
    if (!v.isDouble() || v.toDouble() <= 0)
        return std::nullopt;
    return v.toDouble();
}

QString recomputeOverrides(const RunRecord& run)
{
    if (run.recomputeGranularity == u"full") {
        QString s = u"model.recompute_granularity=full"_s;
        if (!run.recomputeMethod.isEmpty())
            s += u" model.recompute_method="_s + run.recomputeMethod;
        if (run.recomputeNumLayers)
            s += u" model.recompute_num_layers="_s + QString::number(*run.recomputeNumLayers);
        return s;
    }
    // The [] control recomputes nothing: Megatron's default, no recompute at all, is what to set.
    if (run.isExplicitControl())
        return u"model.recompute_granularity=null"_s;
    if (run.recomputeGranularity == u"selective" && run.recomputeModules)
        return u"model.recompute_granularity=selective model.recompute_modules=["_s
            + run.recomputeModules->join(u","_s) + u"]"_s;
    return {};
}

} // namespace rs::storage
