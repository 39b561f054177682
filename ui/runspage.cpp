// SPDX-License-Identifier: Apache-2.0
#include "runspage.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHash>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSet>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "charts/chartview.h"
#include "models/peakattributionmodel.h"
#include "models/runsfilterproxy.h"
#include "models/runsmodel.h"
#include "storage/advice.h"
#include "storage/significance.h"
#include "storage/store.h"

namespace rs::ui {

RunsPage::RunsPage(storage::Store* store, QWidget* parent)
    : QWidget(parent)
    , m_store(store)
    , m_model(new RunsModel(this))
    , m_proxy(new RunsFilterProxy(this))
    , m_attributionModel(new PeakAttributionModel(this))
{
    m_proxy->setSourceModel(m_model);
    // Δ time (core's kStepDeltaName) from the steady iterations as the sweep and the reports read them.
    m_model->setStepSamplesSource([this](const storage::RunRecord& run) {
        return m_store && m_store->isOpen() ? storage::stepSamplesOf(*m_store, run)
                                            : stepSamples({}, run.steadyStepMs);
    });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);

    auto* filters = new QHBoxLayout;
    m_recipeFilter = new QLineEdit;
    m_recipeFilter->setPlaceholderText(tr("recipe or model"));
    m_recipeFilter->setClearButtonEnabled(true);
    m_moduleFilter = new QComboBox;
    m_moduleFilter->setMinimumContentsLength(12);
    m_moduleFilter->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_outcomeFilter = new QComboBox;
    m_hostFilter = new QComboBox;
    m_hostFilter->setMinimumContentsLength(10);
    m_hostFilter->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_comparison = new QComboBox;
    m_comparison->setToolTip(tr("The matched comparison the trade-off chart shows: a [] control and the runs "
                                "compared with it. Selecting a run switches to its comparison."));
    m_comparison->setMinimumContentsLength(24);
    m_comparison->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_axes = new QComboBox;
    m_axes->addItem(tr("absolute (ms, GB)"));
    m_axes->addItem(tr("Δ% vs control"));
    m_target = new QDoubleSpinBox;
    m_target->setRange(0.0, 10000.0);
    m_target->setDecimals(2); // 35.93 GB stays 35.93
    m_target->setSingleStep(0.5);
    m_target->setSpecialValueText(tr("none"));
    m_target->setSuffix(tr(" GB"));
    m_target->setToolTip(tr("Per-rank memory target drawn on the charts (the recipe's memory_target_gb); "
                            "with one, the advisor chooses among the comparison's runs."));
    auto* reloadButton = new QPushButton(tr("Reload"));
    filters->addWidget(new QLabel(tr("Filter:")));
    filters->addWidget(m_recipeFilter, 2);
    filters->addWidget(new QLabel(tr("module set")));
    filters->addWidget(m_moduleFilter, 1);
    filters->addWidget(new QLabel(tr("outcome")));
    filters->addWidget(m_outcomeFilter);
    filters->addWidget(new QLabel(tr("host")));
    filters->addWidget(m_hostFilter, 1);
    filters->addWidget(reloadButton);
    layout->addLayout(filters);

    m_banner = new QLabel;
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(QStringLiteral("background: #eef4fb; border: 1px solid #b6cde6; padding: 4px;"));
    layout->addWidget(m_banner);

    auto* split = new QSplitter(Qt::Vertical);
    m_table = new QTableView;
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(RunsModel::IdColumn, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    m_table->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_table, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QModelIndex index = m_table->indexAt(pos);
        if (!index.isValid())
            return;
        const qint64 id = index.data(RunsModel::RunIdRole).toLongLong();
        selectRun(id);
        QMenu* menu = contextMenuFor(id, this);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_table->viewport()->mapToGlobal(pos));
    });
    split->addWidget(m_table);

    m_chartTabs = new QTabWidget;
    m_tradeoff = new TradeoffChart;
    m_ranks = new RankBarsChart;
    m_lines = new MemoryLinesChart;
    m_attribution = new PeakAttributionChart;
    m_chartTabs->addTab(m_tradeoff, tr("Trade-off"));
    m_chartTabs->addTab(m_ranks, tr("Per-rank allocated vs reserved"));
    m_chartTabs->addTab(m_lines, tr("Per-iteration memory"));
    m_chartTabs->addTab(m_attribution, tr("What holds the peak"));
    m_chartTabs->setTabToolTip(3,
        tr("The selected run beside its [] control: the bytes live at the peak by category (parameters, "
           "main parameters, gradient buffer, optimizer states, activations, backward, workspace, other)."));
    auto* exportPng = new QPushButton(tr("Export PNG…"));
    auto* exportSvg = new QPushButton(tr("Export SVG…"));
    auto* corner = new QWidget;
    auto* cornerLayout = new QHBoxLayout(corner);
    cornerLayout->setContentsMargins(0, 0, 0, 0);
    cornerLayout->addWidget(exportPng);
    cornerLayout->addWidget(exportSvg);
    m_chartTabs->setCornerWidget(corner);
    // The chart's own controls sit with the charts, so the filter row stays narrow.
    auto* chartPane = new QWidget;
    auto* chartLayout = new QVBoxLayout(chartPane);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    auto* chartControls = new QHBoxLayout;
    chartControls->addWidget(new QLabel(tr("Trade-off of")));
    chartControls->addWidget(m_comparison, 2);
    chartControls->addWidget(new QLabel(tr("axes")));
    chartControls->addWidget(m_axes);
    chartControls->addWidget(new QLabel(tr("memory target")));
    chartControls->addWidget(m_target);
    chartControls->addStretch(1);
    chartLayout->addLayout(chartControls);
    m_advice = new QLabel;
    m_advice->setObjectName(QStringLiteral("advice"));
    m_advice->setWordWrap(true);
    m_advice->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_advice->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    // The advice runs to four lines with its notes: at 1366 x 768 it took the chart's height and QtCharts
    // cut the memory axis' labels to "…". It scrolls within three lines instead; the chart keeps its room.
    auto* adviceScroll = new QScrollArea;
    adviceScroll->setObjectName(QStringLiteral("adviceScroll"));
    adviceScroll->setWidget(m_advice);
    adviceScroll->setWidgetResizable(true);
    adviceScroll->setFrameShape(QFrame::NoFrame);
    adviceScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    adviceScroll->setMaximumHeight(fontMetrics().lineSpacing() * 3 + 6);
    adviceScroll->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Maximum);
    chartLayout->addWidget(adviceScroll);
    chartLayout->addWidget(m_chartTabs, 1);
    split->addWidget(chartPane);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    split->setSizes({ 300, 480 });
    layout->addWidget(split, 1);

    connect(m_recipeFilter, &QLineEdit::textChanged, m_proxy, &RunsFilterProxy::setRecipeFilter);
    connect(m_moduleFilter, &QComboBox::activated, this,
        [this](int i) { m_proxy->setModuleSetFilter(m_moduleFilter->itemData(i).toString()); });
    connect(m_outcomeFilter, &QComboBox::activated, this,
        [this](int i) { m_proxy->setOutcomeFilter(m_outcomeFilter->itemData(i).toString()); });
    connect(m_hostFilter, &QComboBox::activated, this,
        [this](int i) { m_proxy->setHostFilter(m_hostFilter->itemData(i).toString()); });
    connect(m_proxy, &RunsFilterProxy::filterChanged, this, &RunsPage::redrawTradeoff);
    connect(m_proxy, &RunsFilterProxy::filterChanged, this, &RunsPage::updateBanner);
    connect(m_axes, &QComboBox::activated, this, &RunsPage::redrawTradeoff);
    connect(m_comparison, &QComboBox::activated, this, &RunsPage::redrawTradeoff);
    connect(m_target, &QDoubleSpinBox::valueChanged, this, [this] {
        redrawTradeoff();
        showRun(selectedRunId());
    });
    connect(reloadButton, &QPushButton::clicked, this, &RunsPage::reload);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& current) {
            const qint64 id = current.isValid() ? current.data(RunsModel::RunIdRole).toLongLong() : 0;
            showComparisonOf(id);
            showRun(id);
            emit runSelected(id);
        });
    connect(m_tradeoff, &TradeoffChart::runActivated, this, &RunsPage::selectRun);
    connect(exportPng, &QPushButton::clicked, this, [this] {
        exportChart(static_cast<ChartView*>(m_chartTabs->currentWidget()), QStringLiteral("png"));
    });
    connect(exportSvg, &QPushButton::clicked, this, [this] {
        exportChart(static_cast<ChartView*>(m_chartTabs->currentWidget()), QStringLiteral("svg"));
    });
    reload();
}

void RunsPage::reload()
{
    const qint64 selected = selectedRunId();
    m_model->setRuns(m_store && m_store->isOpen() ? m_store->listRuns() : QVector<storage::RunRecord> {});
    m_table->resizeColumnsToContents();
    m_table->horizontalHeader()->resizeSection(RunsModel::RecipeColumn,
        std::min(260, m_table->horizontalHeader()->sectionSize(RunsModel::RecipeColumn)));
    refillFilterChoices();
    ++m_generation;
    updateBanner();
    redrawTradeoff();
    if (selected)
        selectRun(selected);
    else
        showRun(0);
    emit reloaded();
}

void RunsPage::updateBanner()
{
    if (!m_store || !m_store->isOpen()) {
        m_banner->setText(
            tr("No measurement store is open: %1").arg(m_store ? m_store->lastError() : QString()));
        return;
    }
    // What the table shows (the filter applies), not the whole store.
    const int shown = m_proxy->rowCount();
    const int total = m_model->rowCount();
    int guide = 0;
    for (int row = 0; row < shown; ++row)
        guide += m_model->run(m_proxy->mapToSource(m_proxy->index(row, 0)).row())->source
            == storage::source::Guide;
    const QString count = shown == total ? tr("%n run(s)", nullptr, total)
                                         : tr("%1 of %n run(s) shown (filtered)", nullptr, total).arg(shown);
    if (guide > 0) {
        m_banner->setText(tr("%1; %2 of them <b>imported from the guide</b> (source “guide”): the published "
                             "matched H100 measurements for Moonlight 16B and Nemotron 3 Nano, not measured "
                             "on this machine. Store: %3")
                              .arg(count)
                              .arg(guide)
                              .arg(m_store->path().toHtmlEscaped()));
    } else {
        m_banner->setText(tr("%1 in %2").arg(count, m_store->path().toHtmlEscaped()));
    }
}

void RunsPage::updateAdvice()
{
    const qint64 comparison = m_comparison->currentData().toLongLong();
    const double target = m_target->value();
    const QString key = QStringLiteral("%1/%2/%3").arg(comparison).arg(target, 0, 'f', 6).arg(m_generation);
    if (key == m_adviceKey)
        return;
    m_adviceKey = key;
    QHash<qint64, RunAdvice> byRun;
    if (!m_store || !m_store->isOpen() || m_model->rowCount() == 0) {
        m_advice->clear();
    } else if (!(target > 0)) {
        m_advice->setText(tr("<span style='color:gray'>Advisor: set a memory target to have the cheapest "
                             "recompute choice that fits it chosen (as <tt>recompute advise</tt>).</span>"));
    } else if (comparison <= 0) { // every comparison, or the plan's
        m_advice->setText(tr("<span style='color:gray'>Advisor: choose one comparison under “Trade-off of” "
                             "to have its recompute choice advised.</span>"));
    } else if (const auto a = storage::adviseOnControl(*m_store, comparison, target)) {
        for (std::size_t i = 0; i < a->candidates.size(); ++i) {
            const CandidateVerdict& v = a->advice.verdicts[i];
            RunAdvice r;
            r.verdict = QString::fromLatin1(verdictName(v.verdict));
            QStringList reasons;
            for (const auto& why : v.reasons)
                reasons << QString::fromStdString(why);
            r.reasons = reasons.join(QStringLiteral("; "));
            r.chosen = a->advice.chosen && *a->advice.chosen == i;
            byRun.insert(a->rows[int(i)].run.id, r);
        }
        QString text = tr("<b>Advisor</b> (control run %1, %2 GB per rank): %3")
                           .arg(comparison)
                           .arg(target, 0, 'f', 2)
                           .arg(QString::fromStdString(a->advice.summary).toHtmlEscaped());
        if (a->advice.chosen) {
            const QString overrides = storage::recomputeOverrides(a->rows[int(*a->advice.chosen)].run);
            if (!overrides.isEmpty())
                text += QStringLiteral("<br><span style='color:gray'>%1</span> <tt>%2</tt>")
                            .arg(tr("Megatron Bridge overrides:"), overrides.toHtmlEscaped());
        }
        if (!a->advice.peak_attribution.empty())
            text += QStringLiteral("<br>%1").arg(
                QString::fromStdString(a->advice.peak_attribution).toHtmlEscaped());
        // The advisor's notes, then why step-time significance moved the choice (as `recompute advise`).
        QStringList notes;
        for (const auto& note : a->advice.notes)
            notes << QString::fromStdString(note);
        if (!a->significanceNote.isEmpty())
            notes << a->significanceNote;
        for (const QString& note : notes)
            text += QStringLiteral("<br><span style='color:#b26a00'>%1</span>").arg(note.toHtmlEscaped());
        m_advice->setText(text);
    } else {
        m_advice->setText(tr("Advisor: control run %1 has no stored comparison.").arg(comparison));
    }
    m_model->setAdvice(byRun);
    // "over-target" and "not-matched" read whole; the reasons are in the tooltip.
    if (!byRun.isEmpty())
        m_table->resizeColumnToContents(RunsModel::AdviceColumn);
}

void RunsPage::showComparisonOf(qint64 runId)
{
    const storage::RunRecord* r = m_model->runById(runId);
    if (!r)
        return;
    const qint64 group = m_model->isComparisonControl(*r) || !r->controlRunId ? r->id : *r->controlRunId;
    const int i = m_comparison->findData(group);
    if (i >= 0 && i != m_comparison->currentIndex()) {
        m_comparison->setCurrentIndex(i);
        redrawTradeoff();
    }
}

QMenu* RunsPage::contextMenuFor(qint64 runId, QWidget* parent)
{
    auto* menu = new QMenu(parent);
    const storage::RunRecord* r = m_model->runById(runId);
    if (!r)
        return menu;
    const storage::RunRecord run = *r; // the model is reset by what the actions do
    menu->addAction(tr("Show its comparison on the chart"), this, [this, runId] { showComparisonOf(runId); })
        ->setObjectName(QStringLiteral("showComparison"));

    QMenu* compare = menu->addMenu(tr("Compare against the [] control"));
    compare->setObjectName(QStringLiteral("compareMenu"));
    QVector<const storage::RunRecord*> controls;
    for (const auto& c : m_model->runs()) {
        if (c.isNoRecompute() && m_model->isComparisonControl(c) && c.id != runId)
            controls << &c;
    }
    std::sort(controls.begin(), controls.end(), [](const auto* a, const auto* b) { return a->id > b->id; });
    int listed = 0;
    for (const storage::RunRecord* c : controls) {
        if (listed == 20)
            break;
        const storage::MatchCheck m = storage::Store::matchCheck(run, *c);
        const QString name = c->recipeName.isEmpty() ? c->model : c->recipeName;
        QAction* a = compare->addAction(m.matched ? tr("run %1: %2").arg(c->id).arg(name)
                                                  : tr("run %1: %2 (not matched)").arg(c->id).arg(name),
            this, [this, runId, id = c->id] { linkToControl(runId, id); });
        a->setCheckable(true);
        a->setChecked(run.controlRunId == c->id);
        a->setObjectName(QStringLiteral("compareWith%1").arg(c->id));
        if (!m.matched)
            a->setToolTip(m.reasons.join(QStringLiteral("\n")));
        ++listed;
    }
    compare->setToolTipsVisible(true);
    if (run.controlRunId) {
        compare->addSeparator();
        compare->addAction(tr("Unlink from control run %1").arg(*run.controlRunId), this,
            [this, runId] { linkToControl(runId, std::nullopt); });
    }
    compare->setEnabled(!compare->isEmpty());
    QAction* makeControlAction = menu->addAction(
        tr("Set as the control of its comparison"), this, [this, runId] { makeControl(runId); });
    makeControlAction->setObjectName(QStringLiteral("setAsControl"));
    makeControlAction->setEnabled(run.isExplicitControl() && run.controlRunId.has_value());
    makeControlAction->setToolTip(tr("A repeat of the [] control becomes the comparison's control."));
    menu->addSeparator();
    QAction* rerun = menu->addAction(
        tr("Re-run on the launch page"), this, [this, runId] { emit rerunRequested(runId); });
    rerun->setObjectName(QStringLiteral("rerun"));
    rerun->setEnabled(!run.recipeJson.isEmpty());
    if (run.recipeJson.isEmpty())
        rerun->setToolTip(tr("This run carries no full recipe (imported or from the guide)."));
    menu->addSeparator();
    menu->addAction(tr("Delete run %1…").arg(runId), this, [this, runId] { deleteRuns({ runId }); })
        ->setObjectName(QStringLiteral("delete"));
    menu->setToolTipsVisible(true);
    return menu;
}

int RunsPage::deleteRuns(const QVector<qint64>& runIds, bool ask)
{
    if (!m_store || runIds.isEmpty())
        return 0;
    if (ask) {
        int linked = 0;
        for (const auto& r : m_model->runs())
            linked += r.controlRunId && runIds.contains(*r.controlRunId);
        QString text = tr(
            "Delete %n run(s) and everything measured for them from the store?", nullptr, int(runIds.size()));
        if (linked)
            text += QLatin1Char(' ')
                + tr("%n other run(s) are compared against them and lose their control.", nullptr, linked);
        if (QMessageBox::question(
                this, tr("Delete runs"), text, QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel)
            != QMessageBox::Yes)
            return 0;
    }
    int deleted = 0;
    for (qint64 id : runIds)
        deleted += m_store->deleteRun(id);
    reload();
    return deleted;
}

bool RunsPage::linkToControl(qint64 runId, std::optional<qint64> controlRunId)
{
    if (!m_store || !m_store->setControl(runId, controlRunId))
        return false;
    reload();
    selectRun(runId);
    return true;
}

bool RunsPage::makeControl(qint64 runId)
{
    const storage::RunRecord* r = m_model->runById(runId);
    if (!m_store || !r || !r->isExplicitControl() || !r->controlRunId)
        return false;
    const qint64 old = *r->controlRunId;
    QVector<qint64> linked { old };
    for (const auto& other : m_model->runs()) {
        if (other.controlRunId == old && other.id != runId)
            linked << other.id;
    }
    bool ok = m_store->setControl(runId, std::nullopt);
    for (qint64 id : linked)
        ok &= m_store->setControl(id, runId);
    reload();
    showComparisonOf(runId);
    selectRun(runId);
    return ok;
}

void RunsPage::refillFilterChoices()
{
    auto refill = [](QComboBox* box, QStringList values, const QString& anyText, const QString& keep) {
        values.removeDuplicates();
        values.sort();
        box->clear();
        box->addItem(anyText, QString());
        for (const QString& v : values)
            box->addItem(v, v);
        const int i = box->findData(keep);
        box->setCurrentIndex(i < 0 ? 0 : i);
    };
    QStringList modules, outcomes, hosts;
    for (const auto& r : m_model->runs()) {
        modules << r.moduleSetLabel();
        outcomes << r.outcome;
        hosts << (r.host.isEmpty() ? r.device : r.host);
    }
    refill(m_moduleFilter, modules, tr("any"), m_proxy->moduleSetFilter());
    refill(m_outcomeFilter, outcomes, tr("any"), m_proxy->outcomeFilter());
    m_outcomeFilter->insertItem(1, tr("failed (not pass)"), RunsFilterProxy::kFailed);
    if (m_proxy->outcomeFilter() == RunsFilterProxy::kFailed)
        m_outcomeFilter->setCurrentIndex(1);
    hosts.removeAll(QString());
    refill(m_hostFilter, hosts, tr("any"), m_proxy->hostFilter());

    const bool first = m_comparison->count() == 0; // first fill: the first comparison, not "all"
    const qint64 keep = m_comparison->currentData().toLongLong();
    m_comparison->clear();
    QVector<const storage::RunRecord*> controls;
    QHash<qint64, int> linkedCount;
    for (const auto& other : m_model->runs()) {
        if (other.controlRunId)
            linkedCount[*other.controlRunId]++;
    }
    for (const auto& r : m_model->runs()) {
        // A control that did not pass anchors nothing (a refused [] control: no candidate ran against it),
        // unless runs were compared with it.
        if (m_model->isComparisonControl(r)
            && (r.outcome == storage::outcome::Pass || linkedCount.value(r.id)))
            controls << &r;
    }
    // Oldest first: the store lists newest first, but the guide's Moonlight table comes first.
    std::sort(controls.begin(), controls.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
    for (const storage::RunRecord* c : controls) {
        const storage::RunRecord& r = *c;
        const int linked = linkedCount.value(r.id);
        const QString name = r.model.isEmpty() ? r.recipeName : r.model;
        m_comparison->addItem(tr("%1 (run %2, %n compared)", nullptr, linked).arg(name).arg(r.id), r.id);
    }
    if (m_plan)
        m_comparison->addItem(tr("plan of %1: predicted front and its measurements")
                                  .arg(m_plan->recipeName.isEmpty() ? tr("the recipe") : m_plan->recipeName),
            kPlanComparison);
    m_comparison->addItem(tr("all shown runs"), qint64(0));
    const int i = m_comparison->findData(keep);
    m_comparison->setCurrentIndex(first || i < 0 ? 0 : i);
}

void RunsPage::restoreView(const QString& recipeFilter, qint64 comparison, int chartTab)
{
    m_recipeFilter->setText(recipeFilter);
    if (const int i = m_comparison->findData(comparison); i >= 0 && comparison >= 0) {
        m_comparison->setCurrentIndex(i);
        redrawTradeoff();
    }
    if (chartTab >= 0 && chartTab < m_chartTabs->count())
        m_chartTabs->setCurrentIndex(chartTab);
}

QString RunsPage::recipeFilterText() const
{
    return m_recipeFilter->text();
}

QVector<qint64> RunsPage::visibleRunIds() const
{
    QVector<qint64> ids;
    ids.reserve(m_proxy->rowCount());
    for (int row = 0; row < m_proxy->rowCount(); ++row)
        ids << m_proxy->index(row, 0).data(RunsModel::RunIdRole).toLongLong();
    return ids;
}

qint64 RunsPage::selectedRunId() const
{
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    return current.isValid() ? current.data(RunsModel::RunIdRole).toLongLong() : 0;
}

void RunsPage::selectRun(qint64 runId)
{
    const int sourceRow = m_model->rowOfRun(runId);
    if (sourceRow < 0)
        return;
    const QModelIndex index = m_proxy->mapFromSource(m_model->index(sourceRow, 0));
    if (!index.isValid())
        return;
    m_table->selectionModel()->setCurrentIndex(
        index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_table->scrollTo(index);
}

void RunsPage::setMemoryTarget(std::optional<double> gb)
{
    m_target->setValue(gb ? *gb : 0.0);
}

void RunsPage::redrawTradeoff()
{
    // Pointers into the model: copying 10,000 RunRecords per redraw cost about 10 ms.
    QVector<const storage::RunRecord*> runs;
    runs.reserve(m_proxy->rowCount());
    QSet<qint64> shown;
    const qint64 comparison = m_comparison->currentData().toLongLong();
    const auto ofPlan = [this](const storage::RunRecord* r) {
        if (!m_plan || r->recipeMatchKey.isEmpty())
            return false;
        for (const PlannedPoint& p : std::as_const(m_plan->front))
            if (r->recipeMatchKey == p.matchKey)
                return true;
        return false;
    };
    for (int row = 0; row < m_proxy->rowCount(); ++row) {
        const storage::RunRecord* r = m_model->run(m_proxy->mapToSource(m_proxy->index(row, 0)).row());
        if (comparison == kPlanComparison ? !ofPlan(r)
                : comparison              ? r->id != comparison && r->controlRunId.value_or(0) != comparison
                                          : false)
            continue;
        runs << r;
        shown.insert(r->id);
    }
    // A filtered-out control still anchors its comparison (Δ% needs it).
    const qsizetype filtered = runs.size();
    for (qsizetype i = 0; i < filtered; ++i) {
        const storage::RunRecord* r = runs[i];
        if (r->controlRunId && !shown.contains(*r->controlRunId)) {
            if (const auto* c = m_model->runById(*r->controlRunId)) {
                runs << c;
                shown.insert(c->id);
            }
        }
    }
    const auto axis = m_axes->currentIndex() == 1 ? TradeoffAxis::VersusControl : TradeoffAxis::Absolute;
    const double target = m_target->value();
    updateAdvice();
    TradeoffData data
        = buildTradeoffFrom(runs, axis, target > 0.0 ? std::optional<double>(target) : std::nullopt,
            [this](const storage::RunRecord& r) { return m_model->stepSamplesOf(r); });
    applyAdvice(&data, m_model->advice());
    // The plan's predictions join the chart where it shows the plan, every comparison or the plan's recipe's.
    if (m_plan && (comparison <= 0 || std::any_of(runs.begin(), runs.end(), ofPlan)))
        applyPlan(&data, *m_plan, runs, axis);
    m_tradeoff->setData(data);
}

void RunsPage::setPlan(const PlanOverlay& plan)
{
    m_plan = plan;
    refillFilterChoices(); // the plan's entry under "Trade-off of", named after its recipe
    redrawTradeoff();
}

void RunsPage::clearPlan()
{
    if (!m_plan)
        return;
    m_plan.reset();
    refillFilterChoices();
    redrawTradeoff();
}

void RunsPage::showPlan()
{
    if (const int i = m_comparison->findData(kPlanComparison); i >= 0) {
        m_comparison->setCurrentIndex(i);
        redrawTradeoff();
    }
}

void RunsPage::showRun(qint64 runId)
{
    const storage::RunRecord* r = runId ? m_model->runById(runId) : nullptr;
    if (!r || !m_store) {
        m_ranks->setData(QString(), {});
        m_ranks->setEmptyMessage(tr("Select a run to see its per-rank peaks."));
        m_lines->setData(QString(), {});
        m_lines->setEmptyMessage(tr("Select a run to see its per-iteration memory."));
        m_attributionModel->setAttribution({});
        m_attribution->setData({});
        m_attribution->setEmptyMessage(tr("Select a run to see what holds its peak."));
        return;
    }
    const QString title = tr("Run %1: %2, %3")
                              .arg(r->id)
                              .arg(r->recipeName.isEmpty() ? r->model : r->recipeName, r->moduleSetLabel());
    QVector<RankBar> bars = buildRankBars(m_store->rankPeaks(runId));
    if (bars.isEmpty() && (r->peakAllocated || r->peakReserved)) {
        // Imported and guide runs keep one peak (the hottest or reported rank): show it as that rank's bar.
        RankBar b;
        b.rank = r->peakRank.value_or(0);
        b.allocatedGb = r->peakAllocated ? double(*r->peakAllocated) / kBytesPerGb : 0.0;
        b.reservedGb = r->peakReserved ? double(*r->peakReserved) / kBytesPerGb : 0.0;
        bars << b;
    }
    m_ranks->setData(title, bars);
    const double target = m_target->value();
    m_lines->setData(title, buildIterationLines(m_store->iterations(runId), r->peakRank.value_or(0)),
        target > 0.0 ? std::optional<double>(target) : std::nullopt);
    const PeakAttributionData attribution = attributionOf(runId);
    m_attributionModel->setAttribution(attribution);
    m_attribution->setData(attribution);
    if (attribution.bars.isEmpty())
        m_attribution->setEmptyMessage(tr("Nothing to show for run %1: %2.")
                                           .arg(runId)
                                           .arg(m_model->estimateNote(m_model->rowOfRun(runId))));
}

PeakAttributionData RunsPage::attributionOf(qint64 runId) const
{
    PeakAttributionData data;
    const storage::RunRecord* r = m_model->runById(runId);
    if (!r)
        return data;
    const double target = m_target->value();
    if (target > 0.0)
        data.memoryTargetGb = target;
    const storage::RunRecord* control
        = r->controlRunId && *r->controlRunId != r->id ? m_model->runById(*r->controlRunId) : nullptr;
    // The measured attribution at the phase of each run's peak (rank 0), from the store.
    QHash<qint64, QVector<storage::PeakAttributionRow>> measured;
    if (m_store && m_store->isOpen()) {
        QVector<qint64> ids { r->id };
        if (control)
            ids << control->id;
        measured = m_store->peakAttributions(ids);
    }
    auto add = [&](const storage::RunRecord& run, bool isControl) {
        const QString name = isControl || run.isExplicitControl()
            ? tr("run %1: %2 (control)").arg(run.id).arg(run.moduleSetLabel())
            : tr("run %1: %2").arg(run.id).arg(run.moduleSetLabel());
        if (const MemoryEstimate* e = m_model->estimate(m_model->rowOfRun(run.id)))
            data.bars << peakAttributionFromEstimate(name, run.id, *e);
        const auto rows = measured.constFind(run.id);
        if (rows == measured.constEnd())
            return;
        if (const storage::PeakAttributionRow* p = storage::Store::peakPhaseOf(*rows)) {
            PeakAttribution bar;
            bar.run = name;
            bar.runId = run.id;
            bar.series = QStringLiteral("measured");
            bar.phase = p->phase;
            for (const auto& c : p->categories)
                bar.bytes[c.first] += c.second;
            data.bars << bar;
        }
    };
    add(*r, false);
    if (control)
        add(*control, true);
    const QString name = r->recipeName.isEmpty() ? r->model : r->recipeName;
    data.title = control ? tr("What holds the peak: %1, run %2 beside its control (run %3)")
                               .arg(name)
                               .arg(r->id)
                               .arg(control->id)
                         : tr("What holds the peak: %1, run %2").arg(name).arg(r->id);
    return data;
}

void RunsPage::exportChart(ChartView* chart, const QString& suffix)
{
    if (!chart)
        return;
    const QString filter = suffix == QLatin1String("png") ? tr("PNG image (*.png)") : tr("SVG image (*.svg)");
    QString path
        = QFileDialog::getSaveFileName(this, tr("Export chart"), QStringLiteral("chart.") + suffix, filter);
    if (path.isEmpty())
        return;
    if (!path.endsWith(QLatin1Char('.') + suffix))
        path += QLatin1Char('.') + suffix;
    QString error;
    if (!chart->exportImage(path, &error))
        QMessageBox::warning(this, tr("Export chart"), error);
}

} // namespace rs::ui
