// SPDX-License-Identifier: Apache-2.0
// Control links: which stored run is the control another is compared with. Imports link themselves (a batch
// of logs of one shape becomes one comparison against its run without recompute, in whatever order the
// files come); the user can give any run a control (`recompute link`, the runs page's "Set as control…").
#include <algorithm>

#include <QSqlQuery>

#include "storage/store.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

bool RunRecord::isNoRecompute() const
{
    return recomputeGranularity.isEmpty() || isExplicitControl();
}

QString RunRecord::controlKind() const
{
    if (isExplicitControl())
        return u"explicit-[]"_s;
    if (recomputeGranularity.isEmpty())
        return u"megatron-none"_s;
    return u"recompute"_s;
}

QString RunRecord::controlKindLabel() const
{
    if (isExplicitControl())
        return u"the explicit [] (selective, recompute_modules=[])"_s;
    if (recomputeGranularity.isEmpty())
        return u"no recompute (Megatron's recompute_granularity None, not the explicit [])"_s;
    return u"recompute %1, chosen as the control"_s.arg(moduleSetLabel());
}

namespace {
// Fields that are unknown on both sides compare equal; linking without being asked needs the shape itself.
bool shapeKnown(const RunRecord& r)
{
    return r.numLayers && r.hiddenSize && r.numAttentionHeads && r.seqLength;
}

bool linkable(const RunRecord& r)
{
    return r.outcome != outcome::Running && shapeKnown(r);
}
} // namespace

std::optional<qint64> Store::findNoRecomputeControlFor(qint64 runId) const
{
    const auto subject = run(runId);
    if (!subject || !linkable(*subject))
        return std::nullopt;
    std::optional<qint64> megatronNone;
    for (const RunRecord& candidate : listRuns()) { // newest first
        if (candidate.id == runId || !candidate.isNoRecompute() || !linkable(candidate))
            continue;
        if (!matchCheck(*subject, candidate).matched)
            continue;
        if (candidate.isExplicitControl())
            return candidate.id;
        if (!megatronNone)
            megatronNone = candidate.id;
    }
    return megatronNone;
}

Store::AutoLink Store::autoLinkControl(qint64 runId)
{
    AutoLink out;
    const auto subject = run(runId);
    if (!subject || !linkable(*subject))
        return out;
    if (!subject->controlRunId && !subject->isNoRecompute()) {
        out.control = findNoRecomputeControlFor(runId);
        if (out.control && !setControl(runId, out.control))
            out.control.reset();
    } else if (subject->controlRunId) {
        out.control = subject->controlRunId;
    }
    if (subject->isNoRecompute()) {
        for (const RunRecord& other : listRuns()) {
            if (other.id == runId || other.controlRunId || other.isNoRecompute() || !linkable(other))
                continue;
            if (!matchCheck(other, *subject).matched)
                continue;
            // An explicit [] of the same shape is preferred to Megatron's None (findNoRecomputeControlFor);
            // the run just stored is the newest, so an explicit [] is always the best.
            if (!subject->isExplicitControl() && findNoRecomputeControlFor(other.id) != runId)
                continue;
            if (setControl(other.id, runId))
                out.linked << other.id;
        }
        std::sort(out.linked.begin(), out.linked.end());
    }
    return out;
}

bool Store::linkControl(qint64 runId, std::optional<qint64> controlRunId, QString* error)
{
    auto fail = [&](const QString& text) {
        if (error)
            *error = text;
        return false;
    };
    if (!run(runId))
        return fail(u"run %1 is not in %2"_s.arg(runId).arg(path()));
    if (controlRunId) {
        if (*controlRunId == runId)
            return fail(u"run %1 cannot be its own control"_s.arg(runId));
        // Follow the control's own chain: it must not lead back to the run.
        std::optional<qint64> at = controlRunId;
        QVector<qint64> seen;
        while (at) {
            const auto r = run(*at);
            if (!r)
                return fail(u"run %1 is not in %2"_s.arg(*at).arg(path()));
            if (r->id == runId)
                return fail(
                    u"run %1 is (through its controls) the control of run %2: a loop"_s.arg(runId).arg(
                        *controlRunId));
            if (seen.contains(r->id))
                break;
            seen << r->id;
            at = r->controlRunId;
        }
    }
    if (!setControl(runId, controlRunId))
        return fail(lastError().isEmpty() ? u"run %1 could not be updated"_s.arg(runId) : lastError());
    return true;
}

QVector<qint64> Store::runsControlledBy(qint64 controlRunId) const
{
    QVector<qint64> ids;
    QSqlQuery q(database());
    q.prepare(u"SELECT id FROM runs WHERE control_run_id=? ORDER BY id"_s);
    q.addBindValue(controlRunId);
    if (q.exec()) {
        while (q.next())
            ids << q.value(0).toLongLong();
    }
    return ids;
}

} // namespace rs::storage
