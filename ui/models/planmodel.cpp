// SPDX-License-Identifier: Apache-2.0
#include "models/planmodel.h"

#include <algorithm>

#include <QBrush>
#include <QColor>
#include <QFont>
#include <QStringList>

#include "core/units.h"

namespace rs::ui {

namespace {

QString gb(int64_t bytes)
{
    return QString::fromStdString(formatGb(bytes, 2));
}

QString ms(double v)
{
    return QString::fromStdString(formatFixed(v, 1));
}

// "36.12 GB, 1043.2 ms, Δ +4.10 % (miss -1.30 pt)"; a failed run says how it failed.
QString measuredText(const PlanMeasurement& m)
{
    QStringList parts;
    if (m.outcome != storage::outcome::Pass)
        parts << m.outcome;
    if (m.peakGb)
        parts << QStringLiteral("%1 GB").arg(gb(gbToBytes(*m.peakGb)));
    if (m.stepMs)
        parts << QStringLiteral("%1 ms").arg(ms(*m.stepMs));
    if (m.deltaPct && m.missPts)
        parts << PlanModel::tr("Δ %1 (miss %2)")
                     .arg(QString::asprintf("%+.2f %%", *m.deltaPct),
                         QString::asprintf("%+.2f pt", *m.missPts));
    return parts.join(QStringLiteral(", "));
}

bool measurable(const PlanCandidate& c)
{
    return c.verdict != PlanVerdict::Invalid;
}

} // namespace

PlanModel::PlanModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void PlanModel::setPlan(const Plan& plan)
{
    beginResetModel();
    m_plan = plan;
    m_measured.clear();
    endResetModel();
    // The step headers carry "PROVISIONAL" with the plan's rates.
    emit headerDataChanged(Qt::Horizontal, StepColumn, DeltaColumn);
}

void PlanModel::setMeasurements(const QVector<std::optional<PlanMeasurement>>& measured)
{
    m_measured = measured;
    m_measured.resize(qsizetype(m_plan.candidates.size()));
    if (rowCount() > 0)
        emit dataChanged(index(0, MeasuredColumn), index(rowCount() - 1, MeasuredColumn));
}

const PlanMeasurement* PlanModel::measurementOf(int row) const
{
    return row >= 0 && row < m_measured.size() && m_measured[row] ? &*m_measured[row] : nullptr;
}

void PlanModel::clear()
{
    setPlan(Plan {});
}

int PlanModel::chosenRow() const
{
    return m_plan.chosen ? int(*m_plan.chosen) : -1;
}

bool PlanModel::hasStages() const
{
    for (const PlanCandidate& c : m_plan.candidates)
        if (c.rank_peaks.size() > 1)
            return true;
    return false;
}

int PlanModel::measuredCount() const
{
    return int(
        std::count_if(m_measured.begin(), m_measured.end(), [](const auto& m) { return m.has_value(); }));
}

int PlanModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_plan.candidates.size());
}

int PlanModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PlanModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const PlanCandidate& c = m_plan.candidates[size_t(index.row())];
    const bool chosen = m_plan.chosen && *m_plan.chosen == size_t(index.row());
    const int col = index.column();
    switch (role) {
    case Qt::DisplayRole:
        switch (col) {
        case ChoiceColumn:
            return QString::fromStdString(c.label);
        case PeakColumn:
            if (!measurable(c))
                return {};
            return c.rank_peaks.size() > 1 ? tr("%1 (stage %2)").arg(gb(c.peak_bytes)).arg(c.hottest_stage)
                                           : gb(c.peak_bytes);
        case StagePeaksColumn: {
            QStringList peaks;
            for (int64_t p : c.rank_peaks)
                peaks << gb(p);
            return peaks.join(QStringLiteral(" / "));
        }
        case StepColumn:
            return measurable(c) ? ms(c.step_ms) : QVariant();
        case MeasuredColumn:
            if (const PlanMeasurement* m = measurementOf(index.row()))
                return measuredText(*m);
            return {};
        case DeltaColumn:
            return measurable(c) ? QString::asprintf("%+.2f %%", c.delta_pct) : QVariant();
        case VerdictColumn:
            return QString::fromLatin1(planVerdictName(c.verdict));
        case ReasonColumn:
            return QString::fromStdString(c.reason);
        }
        return {};
    case SortRole:
        switch (col) {
        case PeakColumn:
        case StagePeaksColumn:
            return measurable(c) ? QVariant(qlonglong(c.peak_bytes)) : QVariant();
        case StepColumn:
            return measurable(c) ? QVariant(c.step_ms) : QVariant();
        case DeltaColumn:
            return measurable(c) ? QVariant(c.delta_pct) : QVariant();
        case MeasuredColumn: // by the miss where there is one, else by the measured step
            if (const PlanMeasurement* m = measurementOf(index.row()))
                return m->missPts ? QVariant(*m->missPts) : m->stepMs ? QVariant(*m->stepMs) : QVariant();
            return {};
        default:
            return data(index, Qt::DisplayRole);
        }
    case ChosenRole:
        return chosen;
    case MeasuredPeakGbRole:
    case MeasuredStepMsRole:
    case MeasuredDeltaPctRole:
    case MissPtsRole: {
        const PlanMeasurement* m = measurementOf(index.row());
        if (!m)
            return {};
        const std::optional<double> v = role == MeasuredPeakGbRole ? m->peakGb
            : role == MeasuredStepMsRole                           ? m->stepMs
            : role == MeasuredDeltaPctRole                         ? m->deltaPct
                                                                   : m->missPts;
        return v ? QVariant(*v) : QVariant();
    }
    case Qt::TextAlignmentRole:
        if (col == PeakColumn || col == StagePeaksColumn || col == StepColumn || col == DeltaColumn
            || col == MeasuredColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::FontRole:
        if (chosen) {
            QFont f;
            f.setBold(true);
            return f;
        }
        return {};
    case Qt::BackgroundRole:
        if (chosen)
            return QBrush(QColor(0xc8, 0xe6, 0xc9)); // the advisor's green, lightened
        return {};
    case Qt::ForegroundRole:
        if (c.verdict == PlanVerdict::Invalid || c.verdict == PlanVerdict::OverTarget)
            return QBrush(QColor(0x75, 0x75, 0x75));
        if (c.verdict == PlanVerdict::WithinError)
            return QBrush(QColor(0x8d, 0x5b, 0x00)); // amber: a measurement decides
        return {};
    case Qt::ToolTipRole: {
        QString tip = QString::fromStdString(c.reason);
        if (col == StagePeaksColumn && c.rank_peaks.size() > 1)
            tip = tr("Each pipeline stage's (rank's) estimated peak, stage 0 first.");
        if ((col == StepColumn || col == DeltaColumn) && measurable(c))
            tip = tr("Predicted from the rates of %1; replays %2 ms of the step.")
                      .arg(QString::fromStdString(m_plan.rates_source))
                      .arg(c.replay_ms, 0, 'f', 1);
        if (col == MeasuredColumn) {
            const PlanMeasurement* m = measurementOf(index.row());
            if (!m)
                return tr("Not measured: no stored run of this recipe and choice.");
            QStringList ids;
            for (qint64 id : m->runIds)
                ids << QString::number(id);
            tip = tr("Measured: run(s) %1 (mean).").arg(ids.join(QStringLiteral(", ")));
            if (m->deltaPct && m->missPts)
                tip += QLatin1Char(' ')
                    + tr("Predicted Δ %1 against the measured Δ %2: %3 percentage points off.")
                          .arg(QString::asprintf("%+.2f %%", c.delta_pct),
                              QString::asprintf("%+.2f %%", *m->deltaPct),
                              QString::asprintf("%+.2f", *m->missPts));
            else if (c.control)
                tip += QLatin1Char(' ') + tr("The [] control: every measured Δ is against it.");
            else if (m->stepMs)
                tip += QLatin1Char(' ') + tr("No Δ: the [] of this recipe is not measured.");
        }
        return tip.isEmpty() ? QVariant() : QVariant(tip);
    }
    default:
        return {};
    }
}

QVariant PlanModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    const QString provisional = m_plan.provisional ? tr(" (PROVISIONAL)") : QString();
    if (role == Qt::DisplayRole) {
        switch (section) {
        case ChoiceColumn:
            return tr("Recompute choice");
        case PeakColumn:
            return tr("Peak GB");
        case StagePeaksColumn:
            return tr("Per-stage peak GB");
        case StepColumn:
            return QString(tr("Step ms") + provisional);
        case DeltaColumn:
            return QString(tr("Δ vs []") + provisional);
        case VerdictColumn:
            return tr("Verdict");
        case MeasuredColumn:
            return tr("Measured");
        case ReasonColumn:
            return tr("Why");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case PeakColumn:
            return tr(
                "The estimated peak allocated of the hottest rank (Megatron's layout), and its pipeline "
                "stage where there are several.");
        case StepColumn:
        case DeltaColumn:
            return m_plan.provisional
                ? tr("Predicted from a PROVISIONAL rates record, not measured on your GPU: run "
                     "recompute-bench "
                     "--calibrate --out FILE and choose FILE.")
                : tr(
                    "Predicted by the step-time model from the rates record; communication is not modelled.");
        case MeasuredColumn:
            return tr(
                "A stored run of the same recipe and choice: its peak, its steady step and its Δ against "
                "the stored [] of the recipe, with the predicted Δ's miss in percentage points (predicted "
                "less measured; the predicted Δ is the choice's predicted difference over the measured [] "
                "step). Empty: not measured.");
        case VerdictColumn:
            return tr(
                "chosen: the cheapest predicted step that fits; within-error: the estimated peak is under "
                "the target but inside the estimate's error, a run says whether it fits; over-target: some "
                "rank's peak is over the target; invalid: a rule error.");
        }
    }
    return {};
}

} // namespace rs::ui
