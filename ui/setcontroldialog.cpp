// SPDX-License-Identifier: Apache-2.0
#include "setcontroldialog.h"

#include <algorithm>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include "storage/store.h"

namespace rs::ui {

SetControlDialog::SetControlDialog(storage::Store* store, const QVector<qint64>& runIds, QWidget* parent)
    : QDialog(parent)
    , m_store(store)
    , m_runs(runIds)
    , m_choices(new QComboBox(this))
    , m_verdict(new QLabel(this))
{
    setWindowTitle(tr("Set as control"));
    m_choices->setObjectName(QStringLiteral("controlChoices"));
    m_verdict->setObjectName(QStringLiteral("controlVerdict"));
    m_verdict->setWordWrap(true);
    m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);

    QStringList names;
    std::optional<qint64> current;
    std::optional<storage::RunRecord> first;
    for (qint64 id : runIds) {
        names << QString::number(id);
        if (const auto r = store->run(id)) {
            if (!first)
                first = r;
            if (!current)
                current = r->controlRunId;
        }
    }
    // Candidates: every other run, matched first (runs without recompute first among them), newest first.
    struct Candidate {
        storage::RunRecord run;
        bool matched;
    };
    QVector<Candidate> candidates;
    for (const auto& r : store->listRuns()) {
        if (runIds.contains(r.id))
            continue;
        candidates.append({ r, first && storage::Store::matchCheck(*first, r).matched });
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        if (a.matched != b.matched)
            return a.matched;
        return a.run.isNoRecompute() && !b.run.isNoRecompute();
    });
    m_choices->addItem(tr("(no control)"), qint64(0));
    for (const auto& c : candidates) {
        QString text = tr("run %1 · %2 · %3 · %4")
                           .arg(c.run.id)
                           .arg(c.run.moduleSetLabel(), c.run.outcome, c.run.recipeName);
        if (!c.matched)
            text += tr(" (not matched)");
        m_choices->addItem(text, c.run.id);
    }
    setChosenControl(current.value_or(0));

    auto* form = new QFormLayout;
    form->addRow(tr("Runs"), new QLabel(names.join(QStringLiteral(", ")), this));
    form->addRow(tr("Control"), m_choices);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_verdict);
    layout->addWidget(buttons);
    connect(m_choices, &QComboBox::currentIndexChanged, this, &SetControlDialog::updateVerdict);
    updateVerdict();
}

qint64 SetControlDialog::chosenControl() const
{
    return m_choices->currentData().toLongLong();
}

void SetControlDialog::setChosenControl(qint64 controlRunId)
{
    const int i = m_choices->findData(controlRunId);
    m_choices->setCurrentIndex(i >= 0 ? i : 0);
}

void SetControlDialog::updateVerdict()
{
    const qint64 control = chosenControl();
    if (control == 0) {
        m_verdict->setText(tr("The runs are compared with nothing: the report lists them without deltas."));
        return;
    }
    const auto c = m_store->run(control);
    if (!c) {
        m_verdict->setText(tr("Run %1 is not in the store.").arg(control));
        return;
    }
    QStringList lines { tr("Control: %1.").arg(c->controlKindLabel()) };
    for (qint64 id : m_runs) {
        const auto check = m_store->matchCheck(id, control);
        lines << (check.matched ? tr("Run %1: matched.").arg(id)
                                : tr("Run %1: NOT MATCHED, the report shows no deltas: %2")
                                      .arg(id)
                                      .arg(check.reasons.join(QStringLiteral("; "))));
    }
    m_verdict->setText(lines.join(QLatin1Char('\n')));
}

bool SetControlDialog::apply(QString* error)
{
    const qint64 control = chosenControl();
    if (!m_store->beginWrite()) {
        if (error)
            *error = m_store->lastError();
        return false;
    }
    for (qint64 id : m_runs) {
        if (!m_store->linkControl(id, control ? std::optional<qint64>(control) : std::nullopt, error)) {
            m_store->rollbackWrite();
            return false;
        }
    }
    if (!m_store->commitWrite()) {
        if (error)
            *error = m_store->lastError();
        return false;
    }
    return true;
}

bool SetControlDialog::edit(storage::Store* store, const QVector<qint64>& runIds, QWidget* parent)
{
    if (runIds.isEmpty())
        return false;
    SetControlDialog dialog(store, runIds, parent);
    if (dialog.exec() != QDialog::Accepted)
        return false;
    QString error;
    if (!dialog.apply(&error)) {
        QMessageBox::warning(parent, tr("Set as control"), error);
        return false;
    }
    return true;
}

} // namespace rs::ui
