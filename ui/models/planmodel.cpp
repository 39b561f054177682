// SPDX-License-Identifier: Apache-2.0
#include "models/planmodel.h"

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
    endResetModel();
    // The step headers carry "PROVISIONAL" with the plan's rates.
    emit headerDataChanged(Qt::Horizontal, StepColumn, DeltaColumn);
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
            return measurable(c) ? QString::number(c.step_ms, 'f', 1) : QVariant();
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
        default:
            return data(index, Qt::DisplayRole);
        }
    case ChosenRole:
        return chosen;
    case Qt::TextAlignmentRole:
        if (col == PeakColumn || col == StagePeaksColumn || col == StepColumn || col == DeltaColumn)
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
        return {};
    case Qt::ToolTipRole: {
        QString tip = QString::fromStdString(c.reason);
        if (col == StagePeaksColumn && c.rank_peaks.size() > 1)
            tip = tr("Each pipeline stage's (rank's) estimated peak, stage 0 first.");
        if ((col == StepColumn || col == DeltaColumn) && measurable(c))
            tip = tr("Predicted from the rates of %1; replays %2 ms of the step.")
                      .arg(QString::fromStdString(m_plan.rates_source))
                      .arg(c.replay_ms, 0, 'f', 1);
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
        case VerdictColumn:
            return tr(
                "chosen: the cheapest predicted step that fits; over-target: some rank's peak is over the "
                "target less the estimate's error; invalid: a rule error.");
        }
    }
    return {};
}

} // namespace rs::ui
