// SPDX-License-Identifier: Apache-2.0
#include "advice_output.h"

#include <algorithm>

#include <QJsonArray>
#include <QJsonDocument>

#include "core/step_stats.h"
#include "core/units.h"
#include "launch/run_session.h"

using namespace Qt::StringLiterals;

namespace rs::cli {

namespace {

QJsonValue optionalNumber(const std::optional<double>& v)
{
    return v ? QJsonValue(*v) : QJsonValue();
}

QJsonObject candidateJson(const StoredAdvice& a, std::size_t i)
{
    const storage::RunRecord& run = a.rows[int(i)].run;
    const AdviceCandidate& c = a.candidates[i];
    const CandidateVerdict& v = a.advice.verdicts[i];
    QJsonArray reasons;
    for (const auto& r : v.reasons)
        reasons << QString::fromStdString(r);
    QJsonArray peaks;
    for (const auto& p : c.rank_peaks)
        peaks << QJsonObject { { u"rank"_s, p.rank < 0 ? QJsonValue() : QJsonValue(p.rank) },
            { u"peak_allocated_gb"_s, rs::bytesToGb(p.bytes) } };
    return QJsonObject {
        { u"run_id"_s, run.id },
        { u"module_set"_s, QString::fromStdString(c.label) },
        { u"is_control"_s, c.is_control },
        { u"matched"_s, c.matched },
        { u"outcome"_s, run.outcome },
        { u"failure_stage"_s, run.failureStage.isEmpty() ? QJsonValue() : QJsonValue(run.failureStage) },
        { u"failure_iteration"_s, run.failureIteration ? QJsonValue(*run.failureIteration) : QJsonValue() },
        { u"rank_peaks"_s, peaks },
        { u"peak_allocated_gb"_s,
            v.worst_peak_bytes ? QJsonValue(rs::bytesToGb(*v.worst_peak_bytes)) : QJsonValue() },
        { u"peak_rank"_s, v.worst_rank && *v.worst_rank >= 0 ? QJsonValue(*v.worst_rank) : QJsonValue() },
        { u"steady_step_ms"_s, optionalNumber(c.steady_step_ms) },
        { u"verdict"_s, QString::fromLatin1(verdictName(v.verdict)) },
        { u"reasons"_s, reasons },
        { u"over_target_gb"_s, optionalNumber(v.over_target_gb) },
        { u"slower_pct"_s, optionalNumber(v.slower_pct) },
        { u"recompute_overrides"_s, recomputeOverrides(run) },
    };
}

} // namespace

QByteArray adviceText(const StoredAdvice& a)
{
    QString s;
    const Advice& adv = a.advice;
    if (!a.rows.isEmpty()) {
        const storage::RunRecord& control = a.rows.first().run;
        s += u"%1: control run %2 (%3), %4 candidate(s), target %5 GB per rank\n"_s
                 .arg(control.recipeName.isEmpty() ? control.model : control.recipeName)
                 .arg(control.id)
                 .arg(control.moduleSetLabel())
                 .arg(a.rows.size())
                 .arg(adv.target_gb, 0, 'f', adv.target_gb < 1.0 ? 6 : 3);
    }
    s += QString::fromStdString(adv.summary) + u"\n"_s;
    if (adv.chosen) {
        const QString overrides = recomputeOverrides(a.rows[int(*adv.chosen)].run);
        if (!overrides.isEmpty())
            s += u"  Megatron Bridge overrides: "_s + overrides + u"\n"_s;
    }
    if (!adv.peak_attribution.empty())
        s += u"  "_s + QString::fromStdString(adv.peak_attribution) + u"\n"_s;
    for (const auto& n : adv.notes)
        s += u"  note: "_s + QString::fromStdString(n) + u"\n"_s;
    int width = 10;
    for (const auto& c : a.candidates)
        width = std::max(width, int(c.label.size()));
    for (std::size_t i = 0; i < a.candidates.size(); ++i) {
        const CandidateVerdict& v = adv.verdicts[i];
        QString reasons;
        for (const auto& r : v.reasons)
            reasons += (reasons.isEmpty() ? QString() : u"; "_s) + QString::fromStdString(r);
        s += u"  run %1 %2  %3  %4\n"_s.arg(a.rows[int(i)].run.id, -4)
                 .arg(QString::fromStdString(a.candidates[i].label), -width)
                 .arg(QString::fromLatin1(verdictName(v.verdict)), -12)
                 .arg(reasons);
    }
    return s.toUtf8();
}

QJsonObject adviceJson(const StoredAdvice& a)
{
    const Advice& adv = a.advice;
    QJsonArray candidates;
    for (std::size_t i = 0; i < a.candidates.size(); ++i)
        candidates << candidateJson(a, i);
    QJsonArray notes;
    for (const auto& n : adv.notes)
        notes << QString::fromStdString(n);
    QJsonObject o { { u"target_gb"_s, adv.target_gb }, { u"fits"_s, adv.chosen.has_value() },
        { u"summary"_s, QString::fromStdString(adv.summary) }, { u"notes"_s, notes },
        { u"candidates"_s, candidates } };
    if (!adv.peak_attribution.empty())
        o.insert(u"peak_attribution"_s, QString::fromStdString(adv.peak_attribution));
    if (!adv.attribution_label.empty())
        o.insert(u"attribution_label"_s, QString::fromStdString(adv.attribution_label));
    if (!a.rows.isEmpty()) {
        const storage::RunRecord& control = a.rows.first().run;
        o.insert(u"control_run_id"_s, control.id);
        o.insert(u"recipe_name"_s, control.recipeName);
        o.insert(u"model"_s, control.model);
    }
    o.insert(u"chosen"_s, adv.chosen ? QJsonValue(candidateJson(a, *adv.chosen)) : QJsonValue());
    o.insert(u"closest"_s, adv.closest ? QJsonValue(candidateJson(a, *adv.closest)) : QJsonValue());
    return o;
}

} // namespace rs::cli

namespace rs::cli {

std::vector<double> steadyIterationTimes(const storage::Store& store, qint64 runId)
{
    return launch::RunSession::steadyTimes(
        store, runId); // one reading of "steady" for the session and the CLI
}

RecomputeChoice storedChoice(const storage::RunRecord& run)
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
            c.modules = { "core_attn" };
        else
            for (const QString& m : *run.recomputeModules)
                c.modules.push_back(m.toStdString());
    }
    return c;
}

namespace {

struct ChoiceGroup {
    QString label;
    RecomputeChoice choice;
    QVector<int> rows; // indices into the comparison rows
    std::vector<double> times;
    bool isControl = false;
    std::vector<double> runMedians; // each run's own median (launchVerdict)
};

void addRun(ChoiceGroup& g, const std::vector<double>& t)
{
    g.times.insert(g.times.end(), t.begin(), t.end());
    if (const auto s = stepStats(t))
        g.runMedians.push_back(s->median_ms);
}

// The rows grouped by recompute choice, in order of first appearance (the control's first).
QVector<ChoiceGroup> groupRows(const storage::Store& store, const QVector<storage::ComparisonRow>& rows,
    const QVector<qint64>& moreControlRuns)
{
    QVector<ChoiceGroup> groups;
    for (int i = 0; i < rows.size(); ++i) {
        const storage::RunRecord& run = rows[i].run;
        const QString label = rows[i].isControl ? rows[i].run.moduleSetLabel() : run.moduleSetLabel();
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

} // namespace

QByteArray stepTimeTable(const storage::Store& store, const QVector<storage::ComparisonRow>& rows,
    const QVector<qint64>& moreControlRuns)
{
    const QVector<ChoiceGroup> groups = groupRows(store, rows, moreControlRuns);
    if (groups.isEmpty())
        return {};
    QString s
        = u"Steady step time: the median of the steady iterations (repeats pooled) with its 95 % "
          "order-statistic interval; Δ vs []: the Hodges-Lehmann shift with its Mann-Whitney interval\n"_s;
    int width = 10;
    for (const ChoiceGroup& g : groups)
        width = std::max(width, int(g.label.size()));
    const ChoiceGroup* control = groups.front().isControl ? &groups.front() : nullptr;
    for (const ChoiceGroup& g : groups) {
        const auto stats = stepStats(g.times);
        QString line = u"  %1  runs %2  "_s.arg(g.label, -width)
                           .arg(g.rows.size() + (g.isControl ? int(moreControlRuns.size()) : 0));
        line += stats ? QString::fromStdString(statsText(*stats)) : u"no steady step time"_s;
        if (g.isControl) {
            line += u"  (the control)"_s;
        } else if (control) {
            auto d = timeDelta(g.times, control->times);
            QString overlap;
            if (d) {
                const Significance byLaunch = launchVerdict(*d, g.runMedians, control->runMedians);
                if (byLaunch != d->verdict)
                    overlap = u" by iteration, but its launches overlap the control's: not significant"_s;
            }
            line += u"  Δ vs []: "_s + (d ? QString::fromStdString(deltaText(*d)) + overlap : u"unknown"_s);
        }
        s += line + u"\n"_s;
    }
    return s.toUtf8();
}

QString applySignificance(
    StoredAdvice& a, const storage::Store& store, const QVector<qint64>& moreControlRuns)
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
                    + (i != chosenRow && t == *sc.chosen ? std::string("a repeat of the chosen choice")
                                                         : sc.reasons[t]));
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

} // namespace rs::cli
