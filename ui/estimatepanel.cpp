// SPDX-License-Identifier: Apache-2.0
#include "estimatepanel.h"

#include <QLabel>
#include <QPainter>
#include <QVBoxLayout>

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

} // namespace

EstimatePanel::EstimatePanel(RecipeDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_label(new QLabel(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 30); // the bar is painted below the label
    m_label->setWordWrap(true);
    layout->addWidget(m_label);
    setMinimumHeight(70);
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
    update();
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
    const QRectF bar(4, height() - 26, width() - 8, 18);
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
