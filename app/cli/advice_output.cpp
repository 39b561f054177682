// SPDX-License-Identifier: Apache-2.0
#include "advice_output.h"

#include <algorithm>

#include <QJsonArray>
#include <QJsonDocument>

#include "core/step_stats.h"
#include "core/units.h"
#include "storage/report.h"

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
    // For a terminal: a stored name or label (a shared store, `import --name`) cannot retitle it, recolour it
    // or add a line of its own; every piece that comes from the store goes through terminalText.
    using storage::terminalText;
    QString s;
    const Advice& adv = a.advice;
    if (!a.rows.isEmpty()) {
        const storage::RunRecord& control = a.rows.first().run;
        s += u"%1: control run %2 (%3), %4 candidate(s), target %5 GB per rank\n"_s
                 .arg(terminalText(control.recipeName.isEmpty() ? control.model : control.recipeName))
                 .arg(control.id)
                 .arg(terminalText(control.moduleSetLabel()))
                 .arg(a.rows.size())
                 .arg(QString::fromStdString(formatFixed(adv.target_gb, gbDecimalsFor(adv.target_gb))));
    }
    s += terminalText(QString::fromStdString(adv.summary)) + u"\n"_s;
    if (adv.chosen) {
        const QString overrides = recomputeOverrides(a.rows[int(*adv.chosen)].run);
        if (!overrides.isEmpty())
            s += u"  Megatron Bridge overrides: "_s + terminalText(overrides) + u"\n"_s;
    }
    if (!adv.peak_attribution.empty())
        s += u"  "_s + terminalText(QString::fromStdString(adv.peak_attribution)) + u"\n"_s;
    for (const auto& n : adv.notes)
        s += u"  note: "_s + terminalText(QString::fromStdString(n)) + u"\n"_s;
    int width = 10;
    for (const auto& c : a.candidates)
        width = std::max(width, int(c.label.size()));
    for (std::size_t i = 0; i < a.candidates.size(); ++i) {
        const CandidateVerdict& v = adv.verdicts[i];
        QString reasons;
        for (const auto& r : v.reasons)
            reasons += (reasons.isEmpty() ? QString() : u"; "_s) + QString::fromStdString(r);
        s += u"  run %1 %2  %3  %4\n"_s.arg(a.rows[int(i)].run.id, -4)
                 .arg(terminalText(QString::fromStdString(a.candidates[i].label)), -width)
                 .arg(QString::fromLatin1(verdictName(v.verdict)), -12)
                 .arg(terminalText(reasons));
    }
    return s.toUtf8();
}

QByteArray adviceWithSignificanceText(const StoredAdvice& a)
{
    QByteArray out = adviceText(a);
    if (!a.significanceNote.isEmpty())
        out += "  note: " + a.significanceNote.toUtf8() + "\n";
    return out;
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

QByteArray stepTimeTable(const storage::Store& store, const QVector<storage::ComparisonRow>& rows,
    const QVector<qint64>& moreControlRuns)
{
    const QVector<storage::ChoiceGroup> groups = storage::groupRows(store, rows, moreControlRuns);
    if (groups.isEmpty())
        return {};
    QString s
        = u"Steady step time: the median of the steady iterations (repeats pooled) with its 95 % "
          "order-statistic interval; Δ vs []: the Hodges-Lehmann shift with its Mann-Whitney interval\n"_s;
    int width = 10;
    for (const storage::ChoiceGroup& g : groups)
        width = std::max(width, int(g.label.size()));
    const storage::ChoiceGroup* control = groups.front().isControl ? &groups.front() : nullptr;
    std::vector<std::vector<double>> launches;
    for (const storage::ChoiceGroup& g : groups)
        launches.push_back(g.runMedians);
    const LaunchSpread spread = launchSpread(launches);
    for (const storage::ChoiceGroup& g : groups) {
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
                const Significance byLaunch = launchVerdict(*d, g.runMedians, control->runMedians, spread);
                if (byLaunch != d->verdict)
                    overlap = u" by iteration, but not beyond the spread between launches: not significant"_s;
            }
            line += u"  Δ vs []: "_s + (d ? QString::fromStdString(deltaText(*d)) + overlap : u"unknown"_s);
        }
        s += line + u"\n"_s;
    }
    return s.toUtf8();
}

} // namespace rs::cli
