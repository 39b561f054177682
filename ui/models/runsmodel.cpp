// SPDX-License-Identifier: Apache-2.0
#include "models/runsmodel.h"

#include <QColor>
#include <QFont>

#include "charts/chartdata.h"
#include "core/comparison.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/units.h"
#include "storage/advice.h"

namespace rs::ui {

using storage::RunRecord;

namespace {

// The columns, in RunsModel::Column order: the header, its tooltip (may be empty) and whether the cells are
// figures (right-aligned). headerData and the alignment read this table only.
struct ColumnSpec {
    RunsModel::Column column;
    const char* header;
    const char* tooltip;
    bool figure;
};

constexpr ColumnSpec kColumns[] = {
    { RunsModel::IdColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Run"), nullptr, true },
    { RunsModel::RecipeColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Recipe"), nullptr, false },
    { RunsModel::ModelColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Model"), nullptr, false },
    { RunsModel::ModuleSetColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Module set"), nullptr, false },
    { RunsModel::OutcomeColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Outcome"), nullptr, false },
    { RunsModel::AdviceColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Advice"),
        QT_TRANSLATE_NOOP("rs::ui::RunsModel",
            "The advisor's verdict for the memory target on the comparison the chart shows "
            "(recompute advise): the chosen run, or why each other was not chosen."),
        false },
    { RunsModel::RanksColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Ranks"),
        QT_TRANSLATE_NOOP(
            "rs::ui::RunsModel", "Ranks measured (the world size), or the GPUs of an imported or guide job."),
        true },
    { RunsModel::PeakAllocatedColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Peak alloc. GB"),
        QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Peak allocated, max over ranks (GB = 10⁹ bytes)."), true },
    { RunsModel::EstimateColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Estimate GB"),
        QT_TRANSLATE_NOOP("rs::ui::RunsModel",
            "The estimator's peak allocated of the hottest rank for the run's recipe and recompute choice, "
            "before any run, in the layout that measured it (the worker's for a worker run, Megatron's for a "
            "real job; the advisor uses the same). Only runs that keep their full recipe have one."),
        true },
    { RunsModel::EstimateErrorColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Est. error"),
        QT_TRANSLATE_NOOP("rs::ui::RunsModel",
            "(measured − estimate) / estimate of peak allocated, in percent: positive when the run needed "
            "more than estimated. Passing runs only."),
        true },
    { RunsModel::StepTimeColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Step ms"), nullptr, true },
    { RunsModel::AllocatedDeltaColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Δ alloc."),
        QT_TRANSLATE_NOOP("rs::ui::RunsModel",
            "Peak allocated against the matched [] control, in percent (lower is better)."),
        true },
    // The header and tooltip are core's name and definition of the one Δ step time (kStepDeltaName).
    { RunsModel::TimeDeltaColumn, kStepDeltaName, kStepDeltaDefinition, true },
    { RunsModel::PeakReservedColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Peak resv. GB"), nullptr, true },
    { RunsModel::TflopsColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "TFLOP/s"), nullptr, true },
    { RunsModel::HostColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Host"), nullptr, false },
    { RunsModel::SourceColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Source"), nullptr, false },
    { RunsModel::CreatedColumn, QT_TRANSLATE_NOOP("rs::ui::RunsModel", "Created"), nullptr, false },
};
static_assert(std::size(kColumns) == RunsModel::ColumnCount, "one kColumns row per RunsModel::Column");

constexpr bool columnsInOrder()
{
    for (int i = 0; i < int(std::size(kColumns)); ++i)
        if (kColumns[i].column != i)
            return false;
    return true;
}
static_assert(columnsInOrder(), "kColumns is in RunsModel::Column order");

} // namespace

RunsModel::RunsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void RunsModel::setRuns(const QVector<RunRecord>& runs)
{
    beginResetModel();
    m_runs = runs;
    m_rowById.clear();
    m_rowById.reserve(m_runs.size());
    for (int i = 0; i < m_runs.size(); ++i)
        m_rowById.insert(m_runs[i].id, i);
    m_deltas.clear();
    m_deltas.resize(m_runs.size());
    m_estimates.clear();
    m_steady.clear();
    m_timeStats.clear();
    m_linkedTo.clear();
    for (const RunRecord& r : m_runs) {
        if (r.controlRunId && *r.controlRunId != r.id)
            m_linkedTo.insert(*r.controlRunId);
    }
    for (int i = 0; i < m_runs.size(); ++i) {
        const RunRecord& r = m_runs[i];
        Delta& d = m_deltas[i];
        if (isComparisonControl(r)) {
            d.why = tr("this run is the control of its comparison");
            continue;
        }
        if (!r.controlRunId) {
            d.why = tr("no matched control stored for this run");
            continue;
        }
        const RunRecord* c = runById(*r.controlRunId);
        if (!c) {
            d.why = tr("its control (run %1) is not loaded").arg(*r.controlRunId);
            continue;
        }
        const storage::MatchCheck m = storage::Store::matchCheck(r, *c);
        if (!m.matched) {
            d.why = tr("not matched with run %1: %2").arg(c->id).arg(m.reasons.join(QStringLiteral("; ")));
            continue;
        }
        // The guide's deltas, as the store's comparison and the reports compute them (core/comparison.h).
        const ControlDeltas deltas = deltasAgainstControl(storage::measuredRun(r), storage::measuredRun(*c));
        d.allocated = deltas.allocated_pct;
        d.time = deltas.time_pct;
        if (!deltas.notes.empty())
            d.why = QString::fromStdString(deltas.notes.front());
        else if (!d.allocated && !d.time)
            d.why = tr("the control (run %1) has no comparable measurement").arg(c->id);
    }
    endResetModel();
}

const RunRecord* RunsModel::run(int row) const
{
    return row >= 0 && row < m_runs.size() ? &m_runs[row] : nullptr;
}

const RunRecord* RunsModel::runById(qint64 id) const
{
    const int row = m_rowById.value(id, -1);
    return run(row);
}

int RunsModel::rowOfRun(qint64 id) const
{
    return m_rowById.value(id, -1);
}

std::optional<double> RunsModel::allocatedDeltaPct(int row) const
{
    return row >= 0 && row < m_deltas.size() ? m_deltas[row].allocated : std::nullopt;
}

bool RunsModel::isComparisonControl(const RunRecord& r) const
{
    if (r.isExplicitControl())
        return true;
    return !r.controlRunId && (r.isNoRecompute() || m_linkedTo.contains(r.id));
}

void RunsModel::setStepSamplesSource(std::function<std::vector<double>(const RunRecord&)> source)
{
    m_samplesSource = std::move(source);
    m_steady.clear();
    m_timeStats.clear();
    if (!m_runs.isEmpty())
        emit dataChanged(index(0, TimeDeltaColumn), index(int(m_runs.size()) - 1, TimeDeltaColumn));
}

const std::vector<double>& RunsModel::stepSamplesOf(const RunRecord& r) const
{
    auto it = m_steady.find(r.id);
    if (it == m_steady.end())
        it = m_steady.insert(
            r.id, m_samplesSource ? m_samplesSource(r) : rs::stepSamples({}, r.steadyStepMs));
    return *it;
}

std::optional<double> RunsModel::timeDeltaPct(int row) const
{
    const auto d = timeDeltaStats(row);
    return d ? std::optional<double>(d->pct) : std::nullopt;
}

std::optional<TimeDelta> RunsModel::timeDeltaStats(int row) const
{
    // Only for a matched control, both with a step time.
    if (row < 0 || row >= m_deltas.size() || !m_deltas[row].time)
        return std::nullopt;
    if (const auto it = m_timeStats.constFind(row); it != m_timeStats.constEnd())
        return *it;
    const RunRecord* r = run(row);
    const RunRecord* c = r && r->controlRunId ? runById(*r->controlRunId) : nullptr;
    std::optional<TimeDelta> d;
    if (r && c)
        d = timeDelta(stepSamplesOf(*r), stepSamplesOf(*c));
    m_timeStats.insert(row, d);
    return d;
}

const RunsModel::Estimate& RunsModel::estimateEntry(int row) const
{
    static const Estimate kNone { std::nullopt, tr("no such run") };
    const RunRecord* r = run(row);
    if (!r)
        return kNone;
    if (r->recipeJson.isEmpty()) {
        static const Estimate kNoRecipe { std::nullopt,
            tr("the run keeps no full recipe (imported or from the guide): nothing to estimate") };
        return kNoRecipe;
    }
    const Layout layout = storage::estimateLayoutOf(*r);
    auto& slot = m_estimates[QString::fromLatin1(layoutName(layout)) + QLatin1Char('\n') + r->recipeJson];
    if (!slot) {
        auto e = std::make_shared<Estimate>();
        try {
            const Recipe resolved = validate(recipeFromJsonText(r->recipeJson.toStdString())).resolved;
            // In the layout that measured the run, as the advisor estimates it (storage/advice.h).
            MemoryEstimate m = estimateMemory(resolved, layout);
            if (m.not_estimated.empty())
                e->estimate = std::move(m);
            else
                e->note = QString::fromStdString(m.not_estimated);
        } catch (const std::exception& ex) {
            e->note = tr("the stored recipe cannot be read: %1").arg(QString::fromStdString(ex.what()));
        }
        slot = std::move(e);
    }
    return *slot;
}

const MemoryEstimate* RunsModel::estimate(int row) const
{
    const Estimate& e = estimateEntry(row);
    return e.estimate ? &*e.estimate : nullptr;
}

QString RunsModel::estimateNote(int row) const
{
    return estimateEntry(row).note;
}

std::optional<double> RunsModel::estimateErrorPct(int row) const
{
    const RunRecord* r = run(row);
    const MemoryEstimate* e
        = r && r->outcome == storage::outcome::Pass && r->peakAllocated ? estimate(row) : nullptr;
    if (!e || e->peak_bytes <= 0)
        return std::nullopt;
    return (double(*r->peakAllocated) - double(e->peak_bytes)) / double(e->peak_bytes) * 100.0;
}

void RunsModel::setAdvice(const QHash<qint64, RunAdvice>& advice)
{
    if (advice.isEmpty() && m_advice.isEmpty())
        return;
    m_advice = advice;
    // The chosen run's whole row is marked, so every cell may change.
    if (!m_runs.isEmpty())
        emit dataChanged(index(0, 0), index(int(m_runs.size()) - 1, ColumnCount - 1));
}

// The model's name where the run has one (the guide's), else its stored shape, so the column never reads
// empty for a run of the worker or an imported log: "32 layers, hidden 4096, 64 experts".
static QString modelText(const RunRecord& r)
{
    if (!r.model.isEmpty() || !r.numLayers || !r.hiddenSize)
        return r.model;
    QString text = RunsModel::tr("%1 layers, hidden %2").arg(*r.numLayers).arg(*r.hiddenSize);
    if (r.numMoeExperts.value_or(0) > 0)
        text += RunsModel::tr(", %n experts", nullptr, *r.numMoeExperts);
    return text;
}

static std::optional<int> ranksOf(const RunRecord& r)
{
    return r.worldSize ? r.worldSize : r.gpuCount;
}

static bool cancelled(const RunRecord& r)
{
    return r.outcome == storage::outcome::Aborted && r.message.startsWith(QLatin1String("cancelled"));
}

int RunsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_runs.size());
}

int RunsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

static QString gb(const std::optional<qint64>& bytes)
{
    // Three significant figures at least: a tiny CPU run's 0.0483 GB, not 0.048.
    return QString::fromStdString(formatGbPrecise(bytes));
}

static QString pct(const std::optional<double>& v)
{
    return v ? QString::asprintf("%+.2f%%", *v) : QString();
}

QVariant RunsModel::data(const QModelIndex& index, int role) const
{
    const RunRecord* r = index.isValid() ? run(index.row()) : nullptr;
    if (!r)
        return {};
    const Delta& d = m_deltas[index.row()];
    const bool control = isComparisonControl(*r);
    const auto adviceIt = m_advice.constFind(r->id);
    const RunAdvice* advice = adviceIt == m_advice.constEnd() ? nullptr : &*adviceIt;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case IdColumn:
            return r->id;
        case RecipeColumn:
            return r->recipeName;
        case ModelColumn:
            return modelText(*r);
        case ModuleSetColumn:
            return r->moduleSetLabel();
        case OutcomeColumn: {
            QString text = r->outcome;
            if (cancelled(*r))
                text += tr(" (cancelled)");
            else if (!r->failureStage.isEmpty())
                text += QStringLiteral(" (") + r->failureStage + QLatin1Char(')');
            return text;
        }
        case RanksColumn:
            return ranksOf(*r) ? QVariant(*ranksOf(*r)) : QVariant(QString());
        case AdviceColumn:
            return advice ? (advice->chosen ? tr("✔ chosen") : advice->verdict) : QString();
        case PeakAllocatedColumn:
            return gb(r->peakAllocated);
        case EstimateColumn: {
            const MemoryEstimate* e = estimate(index.row());
            return e ? gb(e->peak_bytes) : QString();
        }
        case EstimateErrorColumn: {
            const auto err = estimateErrorPct(index.row());
            return err ? QString::asprintf("%+.1f%%", *err) : QString();
        }
        case PeakReservedColumn:
            return gb(r->peakReserved);
        case StepTimeColumn:
            return r->steadyStepMs ? QString::number(*r->steadyStepMs, 'f', 2) : QString();
        case AllocatedDeltaColumn:
            return control ? tr("control") : pct(d.allocated);
        case TimeDeltaColumn: {
            if (control)
                return tr("control");
            const auto stats = timeDeltaStats(index.row());
            return stats ? QString::fromStdString(deltaCell(*stats)) : QString();
        }
        case TflopsColumn:
            return r->modelTflops ? QString::number(*r->modelTflops, 'f', 2) : QString();
        case HostColumn:
            return r->host.isEmpty() ? r->device : r->host;
        case SourceColumn:
            return r->source;
        case CreatedColumn:
            return r->createdAt.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
        }
        break;
    case SortRole:
        switch (index.column()) {
        case IdColumn:
            return r->id;
        case PeakAllocatedColumn:
            return r->peakAllocated ? QVariant(*r->peakAllocated) : QVariant(-1LL);
        case EstimateColumn: {
            const MemoryEstimate* e = estimate(index.row());
            return e ? QVariant(qint64(e->peak_bytes)) : QVariant(-1LL);
        }
        case EstimateErrorColumn:
            return estimateErrorPct(index.row()).value_or(-1e9);
        case PeakReservedColumn:
            return r->peakReserved ? QVariant(*r->peakReserved) : QVariant(-1LL);
        case StepTimeColumn:
            return r->steadyStepMs ? *r->steadyStepMs : -1.0;
        case RanksColumn:
            return ranksOf(*r).value_or(0);
        case AdviceColumn:
            // the chosen run first, then by verdict
            return advice ? (advice->chosen ? QStringLiteral("0") : QStringLiteral("1") + advice->verdict)
                          : QStringLiteral("2");
        case AllocatedDeltaColumn:
            return d.allocated ? *d.allocated : -1e9;
        case TimeDeltaColumn:
            if (const auto stats = timeDeltaStats(index.row()))
                return stats->pct;
            return -1e9;
        case TflopsColumn:
            return r->modelTflops ? *r->modelTflops : -1.0;
        case CreatedColumn:
            return r->createdAt;
        default:
            return data(index, Qt::DisplayRole);
        }
    case Qt::ToolTipRole:
        if (index.column() == AllocatedDeltaColumn || index.column() == TimeDeltaColumn) {
            if (control)
                return r->isExplicitControl()
                    ? tr("This run is the explicit no-recompute control ([]).")
                    : tr("This run is the control of its comparison (%1).").arg(r->controlKindLabel());
            const bool has
                = index.column() == AllocatedDeltaColumn ? d.allocated.has_value() : d.time.has_value();
            if (!has && !d.why.isEmpty())
                return tr("No delta: %1").arg(d.why);
            if (index.column() == TimeDeltaColumn) {
                if (const auto stats = timeDeltaStats(index.row()))
                    return tr("%1 against control run %2: %3%4\n%5")
                        .arg(QString::fromUtf8(kStepDeltaName))
                        .arg(r->controlRunId ? *r->controlRunId : 0)
                        .arg(QString::fromStdString(deltaText(*stats)),
                            stats->low_pct && stats->verdict == Significance::NotSignificant
                                ? tr("; a difference inside the noise, which recompute sweep and recompute "
                                     "advise never choose on")
                                : QString(),
                            QString::fromUtf8(kStepDeltaDefinition));
            }
            return tr("Against control run %1").arg(r->controlRunId ? *r->controlRunId : 0);
        }
        if (index.column() == EstimateColumn || index.column() == EstimateErrorColumn) {
            const MemoryEstimate* e = estimate(index.row());
            if (!e)
                return tr("No estimate: %1").arg(estimateNote(index.row()));
            const RankEstimate& hot = e->ranks[size_t(e->hottest)];
            QString tip = tr("Estimated %1 on stage %2 (%3), in its %4 phase; %5 layout")
                              .arg(QString::fromStdString(formatGbUnit(e->peak_bytes)))
                              .arg(hot.stage)
                              .arg(QString::fromStdString(hot.scope), QString::fromStdString(hot.peak_phase),
                                  QString::fromLatin1(layoutName(e->layout)));
            if (index.column() == EstimateErrorColumn && !estimateErrorPct(index.row()))
                tip += QLatin1Char('\n')
                    + (r->outcome != storage::outcome::Pass ? tr("No error: the run did not pass.")
                                                            : tr("No error: no measured peak."));
            else if (index.column() == EstimateErrorColumn)
                tip += QLatin1Char('\n')
                    + tr("Measured %1").arg(QString::fromStdString(formatGbUnit(r->peakAllocated)));
            return tip;
        }
        if (index.column() == OutcomeColumn && !r->message.isEmpty())
            return r->message;
        if (index.column() == AdviceColumn && advice)
            return advice->chosen ? tr("The advisor's choice: the lowest steady step time whose every rank "
                                       "fits the memory target.")
                                  : advice->reasons;
        if (index.column() == RanksColumn)
            return r->worldSize ? tr("%n rank(s) measured (world size)", nullptr, *r->worldSize)
                : r->gpuCount   ? tr("the job had %n GPU(s); the peak is its hottest or reported rank's",
                        nullptr, *r->gpuCount)
                                : QVariant();
        if (index.column() == SourceColumn && !r->provenance.isEmpty())
            return r->provenance;
        if (index.column() == PeakAllocatedColumn && !r->peakNote.isEmpty())
            return r->peakNote;
        if (index.column() == StepTimeColumn && !r->steadyWindow.isEmpty())
            return r->steadyWindow;
        break;
    case Qt::BackgroundRole:
        if (advice && advice->chosen)
            return QColor(0xd8, 0xf0, 0xdc);
        break;
    case Qt::ForegroundRole:
        if (index.column() == OutcomeColumn && cancelled(*r))
            return QColor(0x70, 0x70, 0x70);
        if (index.column() == OutcomeColumn && r->outcome != storage::outcome::Pass)
            return QColor(0xc6, 0x28, 0x28);
        if (index.column() == AdviceColumn && advice)
            return advice->chosen ? QColor(0x1b, 0x7f, 0x3b) : QColor(0x60, 0x60, 0x60);
        if ((index.column() == AllocatedDeltaColumn && d.allocated)
            || (index.column() == TimeDeltaColumn && d.time)) {
            const auto stats = timeDeltaStats(index.row());
            if (index.column() == TimeDeltaColumn) {
                if (!stats || (stats->low_pct && stats->verdict == Significance::NotSignificant))
                    return QColor(0x70, 0x70, 0x70);
            }
            const double v = index.column() == AllocatedDeltaColumn ? *d.allocated : stats->pct;
            // lower is better for both
            return v < 0 ? QColor(0x2e, 0x7d, 0x32) : v > 0 ? QColor(0xb2, 0x6a, 0x00) : QVariant();
        }
        if (index.column() == EstimateErrorColumn) {
            // within the estimator's goal (±5 %) or not
            const auto err = estimateErrorPct(index.row());
            if (err)
                return std::abs(*err) <= 5.0 ? QColor(0x2e, 0x7d, 0x32) : QColor(0xb2, 0x6a, 0x00);
        }
        break;
    case Qt::FontRole:
        if (control || (advice && advice->chosen)) {
            QFont f;
            f.setBold(true);
            return f;
        }
        break;
    case Qt::TextAlignmentRole:
        if (kColumns[index.column()].figure)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case RunIdRole:
        return r->id;
    case IsControlRole:
        return control;
    case OutcomeRole:
        return r->outcome;
    case ModuleSetRole:
        return r->moduleSetLabel();
    case HostRole:
        return r->host.isEmpty() ? r->device : r->host;
    case ChosenRole:
        return advice && advice->chosen;
    }
    return {};
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    const ColumnSpec& c = kColumns[section];
    if (role == Qt::DisplayRole)
        return tr(c.header);
    if (role == Qt::ToolTipRole && c.tooltip)
        return tr(c.tooltip);
    return {};
}

} // namespace rs::ui
