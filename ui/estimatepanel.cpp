// SPDX-License-Identifier: Apache-2.0
#include "estimatepanel.h"

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "core/rules.h"
#include "core/units.h"
#include "recipedocument.h"

namespace rs::ui {
namespace {

struct Category {
    const char* key;
    const char* label;
    QColor color;
};

const Category kCategories[] = { { "parameters", "params", QColor(0x4e, 0x79, 0xa7) },
    { "main_parameters", "main", QColor(0x59, 0xa1, 0x4f) },
    { "gradients", "grads", QColor(0xf2, 0x8e, 0x2b) },
    { "optimizer_states", "states", QColor(0xb0, 0x7a, 0xa1) },
    { "activations", "acts", QColor(0xe1, 0x57, 0x59) },
    { "transient", "transient", QColor(0xed, 0xc9, 0x48) }, { "other", "other", QColor(0x9c, 0x75, 0x5f) } };

QString gb(int64_t bytes)
{
    return QString::fromStdString(formatGb(bytes, 2));
}

QStandardItem* figure(const QString& text)
{
    auto* item = new QStandardItem(text);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setEditable(false);
    return item;
}

QStandardItem* text(const QString& t)
{
    auto* item = new QStandardItem(t);
    item->setEditable(false);
    return item;
}

// The peak of the phases recompute acts on (forward and backward) on a rank.
int64_t activationPhasesPeak(const RankEstimate& r)
{
    int64_t peak = 0;
    for (const char* name : { "forward", "backward" }) {
        if (const PhaseEstimate* p = r.phase(name))
            peak = std::max(peak, p->peak_bytes);
    }
    return peak;
}

// Asks the splitter above for the rows it must show, not QAbstractScrollArea's fixed 192 px: a taller
// window goes to the findings and the text tabs, and a drag still gives this one more.
class CompactTableView : public QTableView {
public:
    QSize sizeHint() const override { return { QTableView::sizeHint().width(), minimumHeight() }; }
};

QTableView* tableOf(QStandardItemModel* model)
{
    auto* view = new CompactTableView;
    view->setModel(model);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    // Figures take their own width: nine columns of a phase fit the panel at 1366 px.
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view->horizontalHeader()->setStretchLastSection(false);
    view->setWordWrap(false);
    // The header and the three phases (forward, backward, optimizer) whatever the splitter above offers:
    // at 1366x768 the size hints alone left one.
    view->setMinimumHeight(view->horizontalHeader()->sizeHint().height()
        + 3 * view->verticalHeader()->defaultSectionSize() + 2 * view->frameWidth() + 8);
    return view;
}

} // namespace

EstimatePanel::EstimatePanel(RecipeDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_label(new QLabel(this))
    , m_barSpace(new QWidget(this))
    , m_tables(new QTabWidget(this))
    , m_phases(new QStandardItemModel(this))
    , m_choices(new QStandardItemModel(this))
    , m_choicesTimer(new QTimer(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_label->setWordWrap(true);
    layout->addWidget(m_label);
    m_barSpace->setFixedHeight(26); // the stacked bar is painted here
    layout->addWidget(m_barSpace);
    QStringList phaseHeads { tr("Phase"), tr("Peak GB") };
    for (const auto& c : kCategories)
        phaseHeads << QString::fromLatin1(c.label);
    m_phases->setHorizontalHeaderLabels(phaseHeads);
    m_choices->setHorizontalHeaderLabels({ tr("Recompute choice"), tr("Peak GB"), tr("Peak phase"),
        tr("Fwd/bwd peak GB"), tr("Δ fwd/bwd GB"), tr("Target") });
    m_choices->horizontalHeaderItem(3)->setToolTip(
        tr("The peak of the forward and backward phases on the hottest stage: what recompute changes, even "
           "when the optimizer phase holds the step's peak."));
    m_choices->horizontalHeaderItem(4)->setToolTip(tr("Against the recipe's own recompute choice."));
    m_tables->addTab(tableOf(m_phases), tr("Phases of the hottest stage"));
    m_tables->addTab(tableOf(m_choices), tr("Every recompute choice"));
    m_tables->setTabToolTip(1,
        tr("The estimate of every choice this model can take (recompute estimate "
           "--all-choices); the recipe's own is bold."));
    layout->addWidget(m_tables, 1);
    m_choicesTimer->setSingleShot(true);
    m_choicesTimer->setInterval(150); // one estimate per choice: after the typing stops
    connect(m_choicesTimer, &QTimer::timeout, this, &EstimatePanel::refreshChoices);
    connect(m_document, &RecipeDocument::recipeChanged, this, [this] { refresh(); });
    refresh();
}

QString EstimatePanel::summary() const
{
    if (m_estimate.ranks.empty())
        return m_estimate.not_estimated.empty()
            ? tr("Estimate: the recipe needs layers, hidden size and heads")
            : tr("Not estimated: %1").arg(QString::fromStdString(m_estimate.not_estimated));
    const auto& hot = m_estimate.ranks[static_cast<size_t>(m_estimate.hottest)];
    QString text
        = tr("Estimated peak %1 GB on stage %2 (%3, %4 layout)")
              .arg(QString::fromStdString(formatGb(m_estimate.peak_bytes, 2)))
              .arg(hot.stage)
              .arg(QString::fromStdString(hot.peak_phase), QLatin1String(layoutName(m_estimate.layout)));
    if (m_target)
        text += tr("; target %1 GB: %2")
                    .arg(QString::fromStdString(formatFixed(bytesToGb(*m_target), 1)))
                    .arg(static_cast<double>(m_estimate.peak_bytes) <= *m_target ? tr("fits") : tr("over"));
    if (hot.peak_phase != "forward" && hot.peak_phase != "backward")
        text += tr(". The %1 phase holds the peak: recompute moves the forward/backward peak (%2 GB), below.")
                    .arg(QString::fromStdString(hot.peak_phase), gb(activationPhasesPeak(hot)));
    return text;
}

void EstimatePanel::refresh()
{
    const Recipe& r = m_document->validation().resolved;
    m_target.reset();
    if (r.memory_target_gb)
        m_target = gbToBytes(*r.memory_target_gb);
    if (r.num_layers > 0 && r.hidden_size > 0 && r.num_attention_heads > 0)
        m_estimate = estimateMemory(r, Layout::Megatron);
    else
        m_estimate = MemoryEstimate {};
    m_label->setText(summary());
    m_phases->removeRows(0, m_phases->rowCount());
    if (!m_estimate.ranks.empty()) {
        const RankEstimate& hot = m_estimate.ranks[static_cast<size_t>(m_estimate.hottest)];
        for (const PhaseEstimate& p : hot.phases) {
            QList<QStandardItem*> row { text(QString::fromStdString(p.phase)), figure(gb(p.peak_bytes)) };
            for (const auto& c : kCategories)
                row << figure(gb(p.category(c.key)));
            if (p.phase == hot.peak_phase) {
                for (QStandardItem* item : row) {
                    QFont f = item->font();
                    f.setBold(true);
                    item->setFont(f);
                }
            }
            m_phases->appendRow(row);
        }
    }
    m_choicesTimer->start();
    update();
}

void EstimatePanel::refreshChoices()
{
    m_choicesTimer->stop();
    m_choices->removeRows(0, m_choices->rowCount());
    if (m_estimate.ranks.empty())
        return;
    const Recipe& r = m_document->validation().resolved;
    const int64_t ownActivations
        = activationPhasesPeak(m_estimate.ranks[static_cast<size_t>(m_estimate.hottest)]);
    const RecomputeChoice own = recipeChoice(r);
    for (const RecomputeChoice& c : recomputeChoices(r)) {
        const Validation v = validate(candidateRecipe(r, c));
        const MemoryEstimate e = estimateMemory(v.resolved, Layout::Megatron);
        if (e.ranks.empty())
            continue;
        // A choice the rules refuse (RT30: mlp with linear biases never finishes a step) fits nothing.
        const Finding* refusal = v.firstError();
        const RankEstimate& hot = e.ranks[static_cast<size_t>(e.hottest)];
        const int64_t act = activationPhasesPeak(hot);
        QList<QStandardItem*> row { text(QString::fromStdString(c.label())), figure(gb(e.peak_bytes)),
            text(QString::fromStdString(hot.peak_phase)), figure(gb(act)),
            figure(QString::fromStdString(
                (act >= ownActivations ? "+" : "") + formatGb(act - ownActivations, 2))),
            text(refusal        ? tr("refused (%1)").arg(QString::fromStdString(refusal->rule_id))
                    : !m_target ? QString()
                    : double(e.peak_bytes) <= *m_target ? tr("fits")
                                                        : tr("over")) };
        if (refusal)
            row.back()->setToolTip(QString::fromStdString(refusal->rule_id + ": " + refusal->message));
        if (c.sameAs(own)) {
            for (QStandardItem* item : row) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
            }
        }
        m_choices->appendRow(row);
    }
}

QRectF EstimatePanel::barRect() const
{
    const QRect space = m_barSpace->geometry();
    return QRectF(space.left() + 0.0, space.top() + 4.0, space.width() + 0.0, 18.0);
}

void EstimatePanel::paintEvent(QPaintEvent* event)
{
    QWidget::paintEvent(event);
    if (m_estimate.ranks.empty())
        return;
    const auto& peak = m_estimate.ranks[static_cast<size_t>(m_estimate.hottest)].peak();
    const double scale_max = std::max(static_cast<double>(peak.peak_bytes), m_target.value_or(0)) * 1.05;
    if (scale_max <= 0)
        return;
    QPainter p(this);
    const QRectF bar = barRect();
    double x = bar.left();
    for (const auto& c : kCategories) {
        const double w = bar.width() * static_cast<double>(peak.category(c.key)) / scale_max;
        if (w <= 0)
            continue;
        p.fillRect(QRectF(x, bar.top(), w, bar.height()), c.color);
        if (w > 40)
            p.drawText(QRectF(x, bar.top(), w, bar.height()), Qt::AlignCenter, QLatin1String(c.label));
        x += w;
    }
    if (m_target) {
        const double tx = bar.left() + bar.width() * *m_target / scale_max;
        p.setPen(QPen(Qt::black, 2, Qt::DashLine));
        p.drawLine(QPointF(tx, bar.top() - 4), QPointF(tx, bar.bottom() + 4));
    }
}

} // namespace rs::ui
