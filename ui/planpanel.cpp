// SPDX-License-Identifier: Apache-2.0
#include "planpanel.h"

#include <algorithm>

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include "core/advisor.h"
#include "core/plan.h"
#include "core/units.h"
#include "log.h"
#include "models/planmodel.h"
#include "recipedocument.h"
#include "shipped_calibrations.h"
#include "storage/significance.h"
#include "storage/store.h"

namespace rs::ui {

const QString PlanPanel::kRatesSetting = QStringLiteral("plan/ratesFile");

namespace {

struct PlanResult {
    Plan plan;
    PlanOverlay overlay;
    QStringList matchKeys; // each candidate's, for its measurement
};

} // namespace

QVector<PlanPanel::BundledRates> PlanPanel::bundledRates()
{
    QVector<BundledRates> out;
    QStringList skipped;
    for (const ShippedCalibration& c : shippedCalibrations(&skipped))
        out << BundledRates { c.name, c.path, ratesLabel(c.rates), c.rates.provisional };
    for (const QString& problem : skipped)
        qCWarning(lcUi) << "bundled rates record skipped:" << problem;
    std::stable_sort(out.begin(), out.end(),
        [](const BundledRates& a, const BundledRates& b) { return !a.provisional && b.provisional; });
    return out;
}

QString PlanPanel::ratesLabel(const CalibrationRates& rates)
{
    QString label = QStringLiteral("%1, %2").arg(
        QString::fromStdString(rates.device), QString::fromStdString(rates.dtype));
    if (rates.provisional)
        return label + tr(", PROVISIONAL (not measured)");
    // The date of ISO 8601's "2026-12-06T20:48:40Z".
    const QString at = QString::fromStdString(rates.measured_at).section(QLatin1Char('T'), 0, 0);
    return at.isEmpty() ? label : label + tr(", measured %1").arg(at);
}

PlanPanel::PlanPanel(RecipeDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_target(new QDoubleSpinBox)
    , m_ratesBox(new QComboBox)
    , m_status(new QLabel)
    , m_model(new PlanModel(this))
    , m_table(new QTableView)
    , m_why(new QLabel)
    , m_replan(new QTimer(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* grid = new QGridLayout;
    grid->addWidget(new QLabel(tr("Memory target per rank")), 0, 0);
    m_target->setRange(0.0, 10000.0);
    m_target->setDecimals(1);
    m_target->setSuffix(tr(" GB"));
    m_target->setSpecialValueText(tr("none"));
    m_target->setToolTip(tr("What every rank may use (the recipe's memory_target_gb until changed here). The "
                            "plan keeps the estimate's error free below it. none: rank every valid choice."));
    grid->addWidget(m_target, 0, 1);
    auto* planButton = new QPushButton(tr("Plan"));
    planButton->setToolTip(tr("recompute plan: every choice Megatron can express, estimated and timed"));
    grid->addWidget(planButton, 0, 3);
    grid->addWidget(new QLabel(tr("Rates record")), 1, 0);
    // The bundled records, then the file chosen; the record's source in the tooltip.
    for (const BundledRates& b : bundledRates())
        m_ratesBox->addItem(b.label, b.path);
    m_bundledCount = m_ratesBox->count();
    m_ratesBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    grid->addWidget(m_ratesBox, 1, 1, 1, 2);
    auto* choose = new QPushButton(tr("Choose file…"));
    choose->setToolTip(tr("A record of your GPU: recompute-bench --calibrate --out FILE writes one."));
    grid->addWidget(choose, 1, 3);
    grid->setColumnStretch(2, 1);
    layout->addLayout(grid);
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::RichText);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);

    auto* sorted = new QSortFilterProxyModel(this);
    sorted->setSourceModel(m_model);
    sorted->setSortRole(PlanModel::SortRole);
    m_table->setModel(sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(-1, Qt::AscendingOrder); // the plan's order until a header is clicked
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_table, 1);
    // The selected choice's reason in full: the Why column is cut at 1366 px.
    m_why->setWordWrap(true);
    m_why->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_why);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this, sorted](const QModelIndex& current) {
            const QModelIndex at = sorted->mapToSource(current);
            m_why->setText(at.isValid() ? QStringLiteral("%1: %2").arg(
                               m_model->index(at.row(), PlanModel::ChoiceColumn).data().toString(),
                               m_model->index(at.row(), PlanModel::ReasonColumn).data().toString())
                                        : QString());
        });
    connect(m_model, &QAbstractItemModel::modelReset, m_why, &QLabel::clear);

    m_replan->setSingleShot(true);
    m_replan->setInterval(300); // after the typing stops
    connect(m_replan, &QTimer::timeout, this, &PlanPanel::plan);
    connect(planButton, &QPushButton::clicked, this, &PlanPanel::plan);
    connect(choose, &QPushButton::clicked, this, &PlanPanel::chooseRates);
    connect(m_ratesBox, &QComboBox::activated, this, [this](int i) {
        const QString path = m_ratesBox->itemData(i).toString();
        if (path != m_ratesFile && !setRatesFile(path))
            showRatesChoice(); // back to the record in use
    });
    connect(m_target, &QDoubleSpinBox::valueChanged, this, &PlanPanel::scheduleReplan);
    // The box follows the recipe's target when the recipe changes it, and keeps one typed here otherwise.
    connect(m_document, &RecipeDocument::recipeChanged, this, [this] {
        const std::optional<double> target = m_document->recipe().memory_target_gb;
        if (target != m_recipeTarget) {
            m_recipeTarget = target;
            const QSignalBlocker block(m_target);
            m_target->setValue(target.value_or(0.0));
        }
        scheduleReplan();
    });
    m_recipeTarget = m_document->recipe().memory_target_gb;
    m_target->setValue(m_recipeTarget.value_or(0.0));

    // The remembered record where it is still there, else the first bundled one (a measured one first).
    QString start = QSettings().value(kRatesSetting).toString();
    if (start.isEmpty() || !QFileInfo::exists(start))
        start = m_ratesBox->count() > 0 ? m_ratesBox->itemData(0).toString() : QString();
    if (start.isEmpty() || !setRatesFile(start))
        showStatus();
    showRatesChoice();
}

PlanPanel::~PlanPanel()
{
    if (m_thread) {
        m_thread->wait();
        delete m_thread;
    }
}

bool PlanPanel::setRatesFile(const QString& path, QString* error)
{
    QString problem;
    std::optional<CalibrationRates> rates = readCalibrationAt(path, &problem);
    if (!rates) {
        if (error)
            *error = problem;
        m_problem = problem;
        showStatus();
        return false;
    }
    m_rates = std::move(rates);
    m_ratesFile = path;
    QSettings().setValue(kRatesSetting, path);
    showRatesChoice();
    m_problem.clear();
    plan();
    return true;
}

void PlanPanel::showRatesChoice()
{
    // A file of the user's is the entry after the bundled ones (one at a time).
    while (m_ratesBox->count() > m_bundledCount)
        m_ratesBox->removeItem(m_ratesBox->count() - 1);
    if (!m_rates) {
        m_ratesBox->setCurrentIndex(-1);
        m_ratesBox->setPlaceholderText(tr("none: recompute-bench --calibrate --out FILE writes one"));
        return;
    }
    int at = m_ratesBox->findData(m_ratesFile);
    if (at < 0) {
        m_ratesBox->addItem(
            QStringLiteral("%1 (%2)").arg(QFileInfo(m_ratesFile).fileName(), ratesLabel(*m_rates)),
            m_ratesFile);
        at = m_ratesBox->count() - 1;
        m_ratesBox->setItemData(at, QDir::toNativeSeparators(m_ratesFile), Qt::ToolTipRole);
    }
    const QSignalBlocker block(m_ratesBox);
    m_ratesBox->setCurrentIndex(at);
    m_ratesBox->setToolTip(QString::fromStdString(m_rates->source));
}

void PlanPanel::setStore(storage::Store* store)
{
    m_store = store;
    remeasure();
}

void PlanPanel::remeasure()
{
    if (!m_model->hasPlan())
        return;
    QVector<storage::RunRecord> runs;
    if (m_store && m_store->isOpen() && !m_matchKeys.isEmpty()) {
        storage::RunFilter filter;
        for (const QString& key : std::as_const(m_matchKeys))
            if (!filter.recipeMatchKeys.contains(key))
                filter.recipeMatchKeys << key;
        runs = m_store->listRuns(filter);
    }
    QVector<const storage::RunRecord*> pointers;
    for (const auto& r : runs)
        pointers << &r;
    m_model->setMeasurements(measurePlan(m_model->plan(), m_matchKeys, pointers,
        [this](const storage::RunRecord& r) { return storage::stepSamplesOf(*m_store, r); }));
    // An empty column says nothing: shown once a choice is measured (the summary says how to get there).
    m_table->setColumnHidden(PlanModel::MeasuredColumn, m_model->measuredCount() == 0);
    showStatus();
}

void PlanPanel::chooseRates()
{
    const QString start
        = m_ratesFile.startsWith(QLatin1Char(':')) ? QString() : QFileInfo(m_ratesFile).path();
    const QString path = QFileDialog::getOpenFileName(this, tr("Rates record (recompute-bench --calibrate)"),
        start, tr("Rates records (*.json);;All files (*)"));
    if (!path.isEmpty())
        setRatesFile(path);
}

void PlanPanel::scheduleReplan()
{
    if (m_rates)
        m_replan->start();
}

void PlanPanel::plan()
{
    m_replan->stop();
    if (!m_rates) {
        showStatus();
        return;
    }
    if (m_thread) { // one plan at a time: the newest recipe is planned when this one is done
        m_again = true;
        return;
    }
    const Validation& v = m_document->validation();
    if (v.hasErrors()) {
        m_problem = tr("The recipe has rule errors (see Findings): Megatron would refuse it, so nothing is "
                       "planned.");
        m_model->clear();
        emit planCleared();
        showStatus();
        return;
    }
    const Recipe resolved = v.resolved;
    if (resolved.num_layers <= 0 || resolved.hidden_size <= 0 || resolved.num_attention_heads <= 0) {
        m_problem = tr("The plan needs the model's layers, hidden size and heads.");
        m_model->clear();
        emit planCleared();
        showStatus();
        return;
    }
    const InputFormat format = m_document->inputFormat();
    const CalibrationRates rates = *m_rates;
    const double t = m_target->value();
    const std::optional<double> target = t > 0.0 ? std::optional<double>(t) : std::nullopt;
    auto result = std::make_shared<PlanResult>();
    m_problem.clear();
    m_status->setText(tr("Planning…"));
    // The same call as `recompute plan` (app/cli/verb_plan.cpp): the estimate's error kept free below a
    // target.
    m_thread = QThread::create([result, resolved, format, rates, target] {
        result->plan = planRecompute(resolved, format, rates, target, target ? kEstimateErrorFraction : 0.0);
        result->overlay = planOverlay(result->plan, resolved, format);
        for (const PlanCandidate& c : result->plan.candidates)
            result->matchKeys << plannedMatchKey(resolved, format, c.choice);
    });
    connect(m_thread, &QThread::finished, this, [this, result] {
        m_thread->deleteLater();
        m_thread = nullptr;
        if (m_again) {
            m_again = false;
            plan();
            return;
        }
        if (result->plan.candidates.empty()
            || result->plan.candidates.front().verdict == PlanVerdict::Invalid) {
            m_problem = result->plan.candidates.empty()
                ? tr("No choice to plan.")
                : QString::fromStdString(result->plan.candidates.front().reason);
            m_model->clear();
            emit planCleared();
            showStatus();
            return;
        }
        m_model->setPlan(result->plan);
        m_matchKeys = result->matchKeys;
        remeasure();
        m_table->setColumnHidden(PlanModel::StagePeaksColumn, !m_model->hasStages());
        // The answer in view and selected (its reason below), wherever the sort put it; once laid out.
        QTimer::singleShot(0, this, [this] {
            const int row = m_model->chosenRow();
            if (row < 0)
                return;
            const QModelIndex at = static_cast<QSortFilterProxyModel*>(m_table->model())
                                       ->mapFromSource(m_model->index(row, 0));
            m_table->selectRow(at.row());
            m_table->scrollTo(at, QAbstractItemView::PositionAtCenter);
        });
        qCDebug(lcUi) << "planned" << result->plan.candidates.size() << "choices";
        showStatus();
        emit planned(result->overlay);
    });
    m_thread->start();
}

void PlanPanel::showStatus()
{
    if (!m_rates) {
        m_status->setText((m_problem.isEmpty() ? QString()
                                               : QStringLiteral("<span style='color:#c62828'>%1</span><br>")
                                                     .arg(m_problem.toHtmlEscaped()))
            + tr(
                "Step times need a rates record measured on your GPU: <code>recompute-bench --calibrate "
                "--out FILE</code> writes one; choose it above, or one of the records that come with the "
                "studio (a <b>PROVISIONAL</b> one is not a measurement: every step time it gives says so)."));
        return;
    }
    if (!m_problem.isEmpty()) {
        m_status->setText(
            QStringLiteral("<span style='color:#c62828'>%1</span>").arg(m_problem.toHtmlEscaped()));
        return;
    }
    const Plan& p = m_model->plan();
    if (!m_model->hasPlan()) {
        m_status->clear();
        return;
    }
    int dropped = 0, withinError = 0;
    for (const PlanCandidate& c : p.candidates) {
        dropped += c.verdict == PlanVerdict::Invalid || c.verdict == PlanVerdict::OverTarget;
        withinError += c.verdict == PlanVerdict::WithinError;
    }
    QString text;
    if (p.chosen) {
        const PlanCandidate& c = p.candidates[*p.chosen];
        text = tr("Cheapest that fits: <b>%1</b>, %2 ms predicted (%3 against []), peak %4 GB on stage %5.")
                   .arg(QString::fromStdString(c.label).toHtmlEscaped())
                   .arg(c.step_ms, 0, 'f', 1)
                   .arg(QString::asprintf("%+.2f %%", c.delta_pct))
                   .arg(QString::fromStdString(formatGb(c.peak_bytes, 2)))
                   .arg(c.hottest_stage);
    } else if (p.target_gb && withinError > 0) {
        // Only a run can say whether those inside the margin fit: not a red "nothing".
        text = tr("No choice fits %1 GB on every rank with the %2 % kept free for the estimate's error.")
                   .arg(*p.target_gb, 0, 'f', 1)
                   .arg(int(p.margin * 100 + 0.5));
    } else if (p.target_gb) {
        text = tr("<span style='color:#c62828'>No choice fits %1 GB on every rank.</span>")
                   .arg(*p.target_gb, 0, 'f', 1);
    } else {
        text = tr("No target: every valid choice ranked.");
    }
    text += QLatin1Char(' ')
        + tr("%n choice(s) planned, %1 on the front, %2 dropped.", nullptr, int(p.candidates.size()))
              .arg(p.front.size())
              .arg(dropped);
    if (withinError > 0)
        text += QLatin1Char(' ')
            + tr("%n within the estimate's error of the target: a run of one says whether it fits.", nullptr,
                withinError);
    if (m_store) {
        const int measured = m_model->measuredCount();
        text += QLatin1Char(' ')
            + (measured > 0 ? tr("%n of them measured in the store (the Measured column).", nullptr, measured)
                            : tr("None of them measured in the store yet: a run of one (Launch) shows "
                                 "beside its prediction."));
    }
    if (p.provisional)
        text += QStringLiteral("<br><span style='color:#c62828'><b>%1</b></span>")
                    .arg(tr(
                        "PROVISIONAL rates (%1): predictions from a record not measured on this device, not "
                        "measurements. Measure one: recompute-bench --calibrate --out FILE.")
                             .arg(QString::fromStdString(p.rates_source).toHtmlEscaped()));
    else
        text += QStringLiteral("<br>")
            + tr("Predicted, not measured (rates: %1); communication is not modelled.")
                  .arg(QString::fromStdString(p.rates_source).toHtmlEscaped());
    m_status->setText(text);
}

} // namespace rs::ui
