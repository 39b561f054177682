// SPDX-License-Identifier: Apache-2.0
#include "findingspanel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "models/findingsmodel.h"
#include "recipedocument.h"

namespace rs::ui {

FindingsPanel::FindingsPanel(RecipeDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_model(new FindingsModel(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* top = new QHBoxLayout;
    m_summary = new QLabel;
    top->addWidget(m_summary, 1);
    top->addWidget(new QLabel(tr("Rules for:")));
    m_format = new QComboBox;
    m_format->addItem(tr("JSON recipe (MCore rules)"), int(InputFormat::Json));
    m_format->addItem(tr("Bridge overrides (+ %1)")
                          .arg(QString::fromStdString(frontEndRuleRange(InputFormat::BridgeOverrides))),
        int(InputFormat::BridgeOverrides));
    m_format->addItem(tr("Megatron-LM flags (+ %1)")
                          .arg(QString::fromStdString(frontEndRuleRange(InputFormat::MegatronFlags))),
        int(InputFormat::MegatronFlags));
    m_format->setToolTip(tr("The front-end rules depend on how the recipe reaches Megatron: Bridge's "
                            "overrides or Megatron-LM's argument parser."));
    top->addWidget(m_format);
    layout->addLayout(top);

    m_view = new QTableView;
    m_view->verticalHeader()->hide();
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    // Messages are Megatron's full sentences: wrap them rather than cut them.
    m_view->setWordWrap(true);
    m_view->setTextElideMode(Qt::ElideNone);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft);
    m_view->setAlternatingRowColors(true);
    m_view->setModel(m_model);
    m_view->horizontalHeader()->setSectionResizeMode(
        FindingsModel::SeverityColumn, QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(
        FindingsModel::RuleColumn, QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->resizeSection(FindingsModel::MessageColumn, 430);
    m_view->horizontalHeader()->resizeSection(FindingsModel::FixItColumn, 230);
    m_view->horizontalHeader()->resizeSection(FindingsModel::SourceColumn, 260);
    // The header, the scroll bar and about five wrapped lines of findings at any window size (at 1366x768 the
    // splitter's size hints alone left one and a half).
    m_view->setMinimumHeight(m_view->fontMetrics().height() * 8 + 2 * m_view->frameWidth());
    layout->addWidget(m_view, 1);

    m_details = new QLabel;
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_details->setMinimumHeight(m_details->fontMetrics().height() * 2);
    m_details->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    layout->addWidget(m_details);

    connect(m_format, &QComboBox::activated, this,
        [this](int i) { m_document->setInputFormat(InputFormat(m_format->itemData(i).toInt())); });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex& current) { showDetails(current.row()); });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& index) {
        const Finding* f = m_model->finding(index.row());
        if (f && !f->fields.empty())
            emit fieldActivated(f->fields.front());
    });
    connect(m_view, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const Finding* f = m_model->finding(index.row());
        if (f && !f->fields.empty())
            emit fieldActivated(f->fields.front());
    });
    connect(m_document, &RecipeDocument::recipeChanged, this, &FindingsPanel::refresh);
    connect(m_view->horizontalHeader(), &QHeaderView::sectionResized, this, [this](int section) {
        if (section == FindingsModel::MessageColumn)
            fitRows();
    });
    refresh();
}

void FindingsPanel::refresh()
{
    const Validation& v = m_document->validation();
    m_model->setFindings(v.findings, &m_document->recipe());
    m_format->setCurrentIndex(m_format->findData(int(m_document->inputFormat())));
    int counts[4] = {};
    for (const auto& f : v.findings)
        counts[int(f.severity)]++;
    QStringList parts;
    if (counts[int(Severity::Error)])
        parts << QStringLiteral("<span style='color:#c62828'>%1</span>")
                     .arg(tr("%n error(s)", nullptr, counts[int(Severity::Error)]));
    if (counts[int(Severity::Warning)])
        parts << QStringLiteral("<span style='color:#b26a00'>%1</span>")
                     .arg(tr("%n warning(s)", nullptr, counts[int(Severity::Warning)]));
    if (counts[int(Severity::Note)])
        parts << tr("%n note(s)", nullptr, counts[int(Severity::Note)]);
    if (counts[int(Severity::Adjustment)])
        parts << tr("%n adjustment(s)", nullptr, counts[int(Severity::Adjustment)]);
    const QString what = parts.isEmpty() ? tr("No findings: Megatron accepts this recipe.")
                                         : parts.join(QStringLiteral(", "));
    m_summary->setText(QStringLiteral("<b>%1</b> &nbsp; <span style='color:gray'>%2</span>")
                           .arg(what, tr("validated in %1 µs").arg(m_document->lastValidationMicros())));

    // One fix-it button per row that has one; the model resets on every edit, so they are made anew.
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const Finding* f = m_model->finding(row);
        if (!f->fixit)
            continue;
        auto* button = new QToolButton;
        const QString description = QString::fromStdString(f->fixit->description);
        const int width = m_view->horizontalHeader()->sectionSize(FindingsModel::FixItColumn) - 12;
        button->setText(
            button->fontMetrics().elidedText(tr("Fix: %1").arg(description), Qt::ElideRight, width));
        button->setToolTip(
            tr("Apply the fix-it: %1\n%2").arg(description, QString::fromStdString(f->fixit->patch.dump())));
        button->setAutoRaise(false);
        button->setObjectName(QStringLiteral("fixit-%1").arg(QString::fromStdString(f->rule_id)));
        connect(button, &QToolButton::clicked, this, [this, row] { applyFixIt(row); });
        m_view->setIndexWidget(m_model->index(row, FindingsModel::FixItColumn), button);
    }
    fitRows();
    showDetails(-1);
}

void FindingsPanel::fitRows()
{
    // Row heights follow the message alone; a long source reference scrolls sideways instead.
    const int width = m_view->horizontalHeader()->sectionSize(FindingsModel::MessageColumn) - 8;
    const QFontMetrics fm = m_view->fontMetrics();
    const int minimum = std::max(fm.height() + 8, 28);
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const QString text = m_model->index(row, FindingsModel::MessageColumn).data().toString();
        const int h
            = fm.boundingRect(QRect(0, 0, std::max(50, width), 10000), Qt::TextWordWrap, text).height() + 8;
        m_view->verticalHeader()->resizeSection(row, std::max(minimum, h));
    }
}

bool FindingsPanel::applyFixIt(int row)
{
    const Finding* f = m_model->finding(row);
    if (!f || !f->fixit)
        return false;
    const FixIt fixit = *f->fixit; // the model is reset while it applies
    const QString rule = QString::fromStdString(f->rule_id);
    QString error;
    if (!m_document->applyFixIt(fixit, &error)) {
        m_details->setText(tr("The fix-it of %1 did not apply: %2").arg(rule, error));
        return false;
    }
    m_details->setText(
        tr("Applied the fix-it of %1: %2").arg(rule, QString::fromStdString(fixit.description)));
    return true;
}

void FindingsPanel::showDetails(int row)
{
    const Finding* f = m_model->finding(row);
    if (!f) {
        m_details->setText(m_model->rowCount()
                ? tr("Select a finding to see it in full; click it to go to its field.")
                : QString());
        return;
    }
    QString text = QStringLiteral("<b>%1</b> (%2) %3")
                       .arg(QString::fromStdString(f->rule_id), FindingsModel::severityText(f->severity),
                           QString::fromStdString(f->message).toHtmlEscaped());
    if (!m_model->hint(row).isEmpty())
        text += QStringLiteral("<br><b>%1</b>").arg(m_model->hint(row).toHtmlEscaped());
    if (!f->source.empty())
        text += QStringLiteral("<br><span style='color:gray'>%1</span>")
                    .arg(QString::fromStdString(f->source).toHtmlEscaped());
    m_details->setText(text);
}

} // namespace rs::ui
