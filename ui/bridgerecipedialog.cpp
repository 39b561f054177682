// SPDX-License-Identifier: Apache-2.0
#include "bridgerecipedialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "core/recipe_json.h"

namespace rs::ui {

BridgeRecipeDialog::BridgeRecipeDialog(QWidget* parent)
    : QDialog(parent)
    , m_search(new QLineEdit(this))
    , m_list(new QListView(this))
    , m_model(new QStandardItemModel(this))
    , m_filter(new QSortFilterProxyModel(this))
    , m_gpus(new QSpinBox(this))
    , m_about(new QLabel(this))
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this))
{
    setWindowTitle(tr("New from Megatron Bridge recipe"));
    setObjectName(QStringLiteral("bridgeRecipeDialog"));
    for (const BridgeRecipeEntry& e : bridgeRecipes()) {
        if (e.kind != "text")
            continue; // vision, audio and diffusion recipes: no language-model job to estimate
        auto* item = new QStandardItem(QString::fromStdString(e.name));
        item->setEditable(false);
        m_model->appendRow(item);
    }
    m_filter->setSourceModel(m_model);
    m_filter->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_list->setModel(m_filter);
    m_list->setObjectName(QStringLiteral("bridgeRecipeList"));
    m_list->setUniformItemSizes(true);
    m_search->setPlaceholderText(tr("Search, e.g. llama3_8b, moonlight, qwen3 sft"));
    m_search->setClearButtonEnabled(true);
    m_search->setObjectName(QStringLiteral("bridgeRecipeSearch"));
    m_gpus->setRange(0, 1 << 20);
    m_gpus->setSpecialValueText(tr("as the name states"));
    m_gpus->setObjectName(QStringLiteral("bridgeRecipeGpus"));
    m_gpus->setToolTip(tr("The world size the job is launched on: the data-parallel size is the GPUs over "
                          "TP x PP x CP, as Bridge's setup() derives it"));
    m_about->setWordWrap(true);
    m_about->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_about->setObjectName(QStringLiteral("bridgeRecipeAbout"));
    m_about->setMinimumHeight(fontMetrics().lineSpacing() * 5);

    auto* form = new QFormLayout;
    form->addRow(tr("GPUs:"), m_gpus);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("%1 text-LLM recipes of Megatron Bridge %2")
                                     .arg(m_model->rowCount())
                                     .arg(QString::fromStdString(bridgeRecipeCommit().substr(0, 8))),
        this));
    layout->addWidget(m_search);
    layout->addWidget(m_list, 1);
    layout->addLayout(form);
    layout->addWidget(m_about);
    layout->addWidget(m_buttons);
    resize(640, 520);

    connect(m_search, &QLineEdit::textChanged, this, &BridgeRecipeDialog::setFilter);
    connect(m_list->selectionModel(), &QItemSelectionModel::currentChanged, this, [this] { describe(); });
    connect(m_gpus, &QSpinBox::valueChanged, this, [this] { describe(); });
    connect(m_list, &QListView::doubleClicked, this, &BridgeRecipeDialog::accept);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &BridgeRecipeDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    describe();
}

void BridgeRecipeDialog::setFilter(const QString& text)
{
    if (m_search->text() != text)
        m_search->setText(text);
    // Every word of the search in the name, in any order ("qwen3 sft").
    QString pattern;
    for (const QString& w : text.split(u' ', Qt::SkipEmptyParts))
        pattern += QStringLiteral("(?=.*%1)").arg(QRegularExpression::escape(w));
    m_filter->setFilterRegularExpression(
        QRegularExpression(pattern, QRegularExpression::CaseInsensitiveOption));
    if (!m_list->currentIndex().isValid() && m_filter->rowCount() > 0)
        m_list->setCurrentIndex(m_filter->index(0, 0));
    describe();
}

bool BridgeRecipeDialog::select(const QString& name)
{
    for (int row = 0; row < m_filter->rowCount(); ++row) {
        const QModelIndex i = m_filter->index(row, 0);
        if (i.data().toString() == name) {
            m_list->setCurrentIndex(i);
            return true;
        }
    }
    return false;
}

void BridgeRecipeDialog::setGpus(int gpus)
{
    m_gpus->setValue(gpus);
}

QString BridgeRecipeDialog::selectedName() const
{
    return m_list->currentIndex().isValid() ? m_list->currentIndex().data().toString() : QString();
}

QString BridgeRecipeDialog::description() const
{
    return m_about->text();
}

int BridgeRecipeDialog::visibleRecipes() const
{
    return m_filter->rowCount();
}

void BridgeRecipeDialog::describe()
{
    const QString name = selectedName();
    QPushButton* ok = m_buttons->button(QDialogButtonBox::Ok);
    if (name.isEmpty()) {
        m_about->setText(
            m_filter->rowCount() == 0 ? tr("No recipe matches the search.") : tr("Choose a recipe."));
        ok->setEnabled(false);
        return;
    }
    try {
        const BridgeJob job = bridgeJob(
            name.toStdString(), m_gpus->value() > 0 ? std::optional<int>(m_gpus->value()) : std::nullopt);
        QStringList lines;
        for (const std::string& n : job.notes)
            lines << QString::fromStdString(n);
        m_about->setText(lines.join(u'\n'));
        ok->setEnabled(true);
    } catch (const std::exception& e) {
        m_about->setText(QString::fromUtf8(e.what()));
        ok->setEnabled(false);
    }
}

void BridgeRecipeDialog::accept()
{
    const QString name = selectedName();
    if (name.isEmpty())
        return;
    try {
        m_job = bridgeJob(
            name.toStdString(), m_gpus->value() > 0 ? std::optional<int>(m_gpus->value()) : std::nullopt);
    } catch (const std::exception& e) {
        m_about->setText(QString::fromUtf8(e.what()));
        return; // nothing taken: the dialog stays, saying why
    }
    QDialog::accept();
}

} // namespace rs::ui
