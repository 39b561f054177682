// SPDX-License-Identifier: Apache-2.0
#include "recipeform.h"

#include <array>
#include <climits>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QSet>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyle>
#include <QTreeView>
#include <QVBoxLayout>

#include "core/mixed_precision.h"
#include "core/recipe_json.h"
#include "models/recomputelabelsmodel.h"
#include "recipedocument.h"

namespace rs::ui {

namespace {

const char* kMarkProperty = "rsFinding";
constexpr int kNone = INT_MIN; // the spin box value that reads "None"

QStringList choicesFor(const FieldSpec& spec)
{
    QStringList out;
    if (const auto* allowed = allowedValues(spec.key)) {
        for (const auto& v : *allowed)
            out << QString::fromStdString(v);
    }
    if (out.isEmpty() && std::string(spec.key) == "mixed_precision") {
        for (const auto& mp : mixedPrecisionRecipes())
            out << QString::fromLatin1(mp.name);
    }
    if (out.isEmpty()) {
        for (const char* c : spec.choices)
            out << QString::fromLatin1(c);
    }
    return out;
}

// "a, b" -> ["a","b"]; "" -> null (unset) for optional lists, [] otherwise; "[]" -> [].
nlohmann::json parseTextList(QString text, bool optional)
{
    text = text.trimmed();
    if (text.isEmpty() || text == QLatin1String("None") || text == QLatin1String("null"))
        return optional ? nlohmann::json(nullptr) : nlohmann::json::array();
    if (text.startsWith(QLatin1Char('[')) && text.endsWith(QLatin1Char(']')))
        text = text.mid(1, text.size() - 2);
    nlohmann::json list = nlohmann::json::array();
    for (QString item : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        item = item.trimmed();
        if (item.size() >= 2 && (item.startsWith(QLatin1Char('\'')) || item.startsWith(QLatin1Char('"'))))
            item = item.mid(1, item.size() - 2);
        if (!item.isEmpty())
            list.push_back(item.toStdString());
    }
    return list;
}

QString textListToString(const nlohmann::json& value)
{
    if (value.is_null())
        return {};
    if (!value.is_array())
        return QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump());
    if (value.empty())
        return QStringLiteral("[]");
    QStringList parts;
    for (const auto& v : value)
        parts << QString::fromStdString(v.is_string() ? v.get<std::string>() : v.dump());
    return parts.join(QStringLiteral(", "));
}

} // namespace

RecipeForm::RecipeForm(RecipeDocument* document, QWidget* parent)
    : QScrollArea(parent)
    , m_document(document)
{
    setWidgetResizable(true);
    setFrameShape(QFrame::NoFrame);
    build();
    connect(m_document, &RecipeDocument::recipeChanged, this, &RecipeForm::refresh);
    refresh(nullptr);
}

QWidget* RecipeForm::editor(const std::string& key) const
{
    auto it = m_editors.find(key);
    return it == m_editors.end() ? nullptr : it->second;
}

QString RecipeForm::marking(const std::string& key) const
{
    auto it = m_markings.find(key);
    return it == m_markings.end() ? QString() : it->second;
}

void RecipeForm::build()
{
    auto* content = new QWidget;
    auto* outer = new QVBoxLayout(content);
    outer->setContentsMargins(4, 4, 4, 4);
    // Marked fields: the property is set per widget; the sheet lives on the form so a field restyles
    // without touching its neighbours.
    content->setStyleSheet(QStringLiteral(
        "QLabel[rsFinding=\"error\"] { color: #c62828; font-weight: bold; }"
        "QLabel[rsFinding=\"warning\"] { color: #b26a00; font-weight: bold; }"
        "QLabel[rsFinding=\"note\"] { color: #1e5aa8; font-weight: bold; }"
        "QLabel[rsFinding=\"adjustment\"] { color: #5f5f5f; font-weight: bold; }"
        "QSpinBox[rsFinding=\"error\"], QDoubleSpinBox[rsFinding=\"error\"], QLineEdit[rsFinding=\"error\"],"
        " QComboBox[rsFinding=\"error\"], QCheckBox[rsFinding=\"error\"] { background: #fde2e2; }"
        "QSpinBox[rsFinding=\"warning\"], QDoubleSpinBox[rsFinding=\"warning\"], "
        "QLineEdit[rsFinding=\"warning\"],"
        " QComboBox[rsFinding=\"warning\"], QCheckBox[rsFinding=\"warning\"] { background: #fff1d6; }"
        "QTreeView[rsFinding=\"error\"] { border: 2px solid #c62828; }"
        "QTreeView[rsFinding=\"warning\"] { border: 2px solid #b26a00; }"));

    m_errorLabel = new QLabel;
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setStyleSheet(QStringLiteral("color: #c62828;"));
    m_errorLabel->hide();
    outer->addWidget(m_errorLabel);

    for (const QString& group : fieldGroups()) {
        auto* box = new QGroupBox(group);
        box->setObjectName(group);
        auto* form = new QFormLayout(box);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setLabelAlignment(Qt::AlignRight);
        QString section;
        for (const auto& spec : recipeFields()) {
            if (QString::fromLatin1(spec.group) != group)
                continue;
            const QString s = QString::fromLatin1(spec.section);
            if (s != section) {
                section = s;
                if (!s.isEmpty()) {
                    auto* heading = new QLabel(QStringLiteral("<b>%1</b>").arg(s.toHtmlEscaped()));
                    form->addRow(heading);
                }
            }
            QWidget* w = spec.kind == FieldKind::RecomputeModules ? makeModulesEditor() : makeEditor(spec);
            w->setToolTip(QString::fromLatin1(spec.tip));
            auto* label = new QLabel(QString::fromLatin1(spec.label));
            label->setToolTip(QString::fromLatin1(spec.tip));
            label->setBuddy(w);
            if (spec.kind == FieldKind::RecomputeModules) {
                // The checklist spans the form's width: its "effect on this model" column is the point.
                form->addRow(label);
                form->addRow(w);
            } else {
                form->addRow(label, w);
            }
            m_editors[spec.key] = w;
            m_labels[spec.key] = label;
        }
        m_groups.insert(group, box);
        outer->addWidget(box);
    }
    outer->addStretch(1);
    setWidget(content);
}

QWidget* RecipeForm::makeEditor(const FieldSpec& spec)
{
    const std::string key = spec.key;
    switch (spec.kind) {
    case FieldKind::Int:
    case FieldKind::OptionalInt: {
        auto* box = new QSpinBox;
        const bool optional = spec.kind == FieldKind::OptionalInt;
        box->setRange(optional ? kNone : -1000000, 1000000000);
        if (optional)
            box->setSpecialValueText(tr("None"));
        box->setAccelerated(true);
        connect(box, &QSpinBox::valueChanged, this, [this, key, optional](int v) {
            commit(key, optional && v == kNone ? nlohmann::json(nullptr) : nlohmann::json(v));
        });
        return box;
    }
    case FieldKind::Double:
    case FieldKind::OptionalDouble: {
        auto* box = new QDoubleSpinBox;
        const bool optional = spec.kind == FieldKind::OptionalDouble;
        box->setDecimals(3);
        box->setSingleStep(optional ? 1.0 : 0.05);
        box->setRange(optional ? -1.0 : 0.0, 1.0e6);
        if (optional)
            box->setSpecialValueText(tr("None"));
        connect(box, &QDoubleSpinBox::valueChanged, this, [this, key, optional](double v) {
            commit(key, optional && v < 0.0 ? nlohmann::json(nullptr) : nlohmann::json(v));
        });
        return box;
    }
    case FieldKind::Bool: {
        auto* box = new QCheckBox;
        connect(box, &QCheckBox::toggled, this, [this, key](bool on) { commit(key, on); });
        return box;
    }
    case FieldKind::Choice:
    case FieldKind::OptionalChoice: {
        auto* box = new QComboBox;
        if (spec.kind == FieldKind::OptionalChoice)
            box->addItem(tr("None"), QVariant());
        for (const QString& c : choicesFor(spec))
            box->addItem(c, c);
        connect(box, &QComboBox::activated, this, [this, key, box](int i) {
            const QVariant v = box->itemData(i);
            commit(key, v.isValid() ? nlohmann::json(v.toString().toStdString()) : nlohmann::json(nullptr));
        });
        return box;
    }
    case FieldKind::Profile: {
        auto* box = new QComboBox;
        for (Profile p : allProfiles())
            box->addItem(QString::fromLatin1(profileName(p)), QString::fromLatin1(profileName(p)));
        connect(box, &QComboBox::activated, this,
            [this, key, box](int i) { commit(key, box->itemData(i).toString().toStdString()); });
        return box;
    }
    case FieldKind::Text:
    case FieldKind::OptionalText: {
        auto* edit = new QLineEdit;
        const bool optional = spec.kind == FieldKind::OptionalText;
        if (optional)
            edit->setPlaceholderText(tr("None"));
        connect(edit, &QLineEdit::textEdited, this, [this, key, optional](const QString& t) {
            commit(key,
                optional && t.trimmed().isEmpty() ? nlohmann::json(nullptr)
                                                  : nlohmann::json(t.toStdString()));
        });
        return edit;
    }
    case FieldKind::TextList:
    case FieldKind::OptionalTextList: {
        auto* edit = new QLineEdit;
        const bool optional = spec.kind == FieldKind::OptionalTextList;
        edit->setPlaceholderText(optional ? tr("None (write [] for an empty list)") : tr("[]"));
        connect(edit, &QLineEdit::textEdited, this,
            [this, key, optional](const QString& t) { commit(key, parseTextList(t, optional)); });
        return edit;
    }
    case FieldKind::IntList: {
        auto* edit = new QLineEdit;
        edit->setPlaceholderText(tr("1, or a 0/1 list per layer: [0,1,1,...]"));
        connect(edit, &QLineEdit::textEdited, this, [this, key](const QString& t) {
            QString text = t.trimmed();
            if (text.startsWith(QLatin1Char('[')) && text.endsWith(QLatin1Char(']')))
                text = text.mid(1, text.size() - 2);
            nlohmann::json list = nlohmann::json::array();
            for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
                bool ok = false;
                const int v = part.trimmed().toInt(&ok);
                if (!ok) {
                    m_lastError = tr("%1: '%2' is not an integer; write 1, N, or a list like [0,1,1]")
                                      .arg(QString::fromStdString(key), part.trimmed());
                    m_errorLabel->setText(m_lastError);
                    m_errorLabel->show();
                    emit editRejected(m_lastError);
                    return;
                }
                list.push_back(v);
            }
            commit(key, list);
        });
        return edit;
    }
    case FieldKind::RecomputeModules:
        break;
    }
    return new QWidget;
}

QWidget* RecipeForm::makeModulesEditor()
{
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    m_modulesUnset = new QCheckBox(tr("Unset: Megatron's default [\"core_attn\"] (R10)"));
    layout->addWidget(m_modulesUnset);
    m_labelsModel = new RecomputeLabelsModel(this);
    m_labelsView = new QTreeView;
    m_labelsView->setRootIsDecorated(false);
    m_labelsView->setUniformRowHeights(true);
    m_labelsView->setModel(m_labelsModel);
    m_labelsView->header()->setStretchLastSection(true);
    m_labelsView->header()->setSectionResizeMode(
        RecomputeLabelsModel::LabelColumn, QHeaderView::ResizeToContents);
    m_labelsView->header()->setSectionResizeMode(
        RecomputeLabelsModel::ProfileColumn, QHeaderView::ResizeToContents);
    m_labelsView->setMinimumHeight(m_labelsView->sizeHintForRow(0) * 12 + 24);
    m_labelsView->setMinimumHeight(250);
    layout->addWidget(m_labelsView);
    connect(m_modulesUnset, &QCheckBox::toggled, this, [this](bool unset) {
        commit("recompute_modules", unset ? nlohmann::json(nullptr) : nlohmann::json::array());
    });
    connect(m_labelsModel, &RecomputeLabelsModel::modulesEdited, this, [this](const QStringList& modules) {
        nlohmann::json list = nlohmann::json::array();
        for (const QString& m : modules)
            list.push_back(m.toStdString());
        commit("recompute_modules", list);
    });
    return box;
}

void RecipeForm::commit(const std::string& key, const nlohmann::json& value)
{
    m_editingKey = key;
    QString error;
    const bool ok = m_document->setField(key, value, this, &error);
    m_editingKey.clear();
    if (ok) {
        m_lastError.clear();
        m_errorLabel->hide();
        return;
    }
    m_lastError = error;
    m_errorLabel->setText(error);
    m_errorLabel->show();
    emit editRejected(error);
}

void RecipeForm::setEditorValue(const FieldSpec& spec, QWidget* editor, const nlohmann::json& value)
{
    const QSignalBlocker blocker(editor);
    switch (spec.kind) {
    case FieldKind::Int:
    case FieldKind::OptionalInt:
        static_cast<QSpinBox*>(editor)->setValue(value.is_number() ? value.get<int>() : kNone);
        break;
    case FieldKind::Double:
    case FieldKind::OptionalDouble:
        static_cast<QDoubleSpinBox*>(editor)->setValue(value.is_number() ? value.get<double>() : -1.0);
        break;
    case FieldKind::Bool:
        static_cast<QCheckBox*>(editor)->setChecked(value.is_boolean() && value.get<bool>());
        break;
    case FieldKind::Choice:
    case FieldKind::OptionalChoice:
    case FieldKind::Profile: {
        auto* box = static_cast<QComboBox*>(editor);
        if (!value.is_string()) {
            box->setCurrentIndex(box->findData(QVariant()));
            break;
        }
        const QString v = QString::fromStdString(value.get<std::string>());
        int i = box->findData(v);
        if (i < 0) {
            // A value the table does not list (a newer Bridge recipe name, say): show it as it is.
            box->addItem(v, v);
            i = box->count() - 1;
        }
        box->setCurrentIndex(i);
        break;
    }
    case FieldKind::Text:
    case FieldKind::OptionalText:
        static_cast<QLineEdit*>(editor)->setText(
            value.is_string() ? QString::fromStdString(value.get<std::string>()) : QString());
        static_cast<QLineEdit*>(editor)->setCursorPosition(0); // show the start of a long value
        break;
    case FieldKind::TextList:
    case FieldKind::OptionalTextList:
    case FieldKind::IntList:
        static_cast<QLineEdit*>(editor)->setText(
            value.is_number() ? QString::number(value.get<int>()) : textListToString(value));
        static_cast<QLineEdit*>(editor)->setCursorPosition(0);
        break;
    case FieldKind::RecomputeModules: {
        const QSignalBlocker unsetBlocker(m_modulesUnset);
        m_modulesUnset->setChecked(value.is_null());
        break;
    }
    }
}

void RecipeForm::refresh(QObject* origin)
{
    const nlohmann::json j = recipeToJson(m_document->recipe());
    for (const auto& spec : recipeFields()) {
        QWidget* w = editor(spec.key);
        if (!w)
            continue;
        // The line edit being typed into keeps the user's spelling ("a,b" is not rewritten to "a, b").
        if (origin == this && m_editingKey == spec.key && qobject_cast<QLineEdit*>(w))
            continue;
        setEditorValue(spec, w, jsonValueAt(j, spec.key));
    }
    m_labelsModel->setRecipe(m_document->recipe());
    applyMarkings();
}

void RecipeForm::applyMarkings()
{
    // The most severe finding wins a field's marking; the tooltip lists them all.
    auto rank = [](Severity s) {
        switch (s) {
        case Severity::Error:
            return 4;
        case Severity::Warning:
            return 3;
        case Severity::Note:
            return 2;
        case Severity::Adjustment:
            return 1;
        }
        return 0;
    };
    std::map<std::string, std::pair<int, QStringList>> marks;
    QHash<QString, std::array<int, 5>> groupCounts;
    for (const auto& f : m_document->validation().findings) {
        QSet<QString> groups;
        for (const auto& field : f.fields) {
            const std::string key = formKeyForFindingField(field);
            if (key.empty())
                continue;
            groups.insert(QString::fromLatin1(findField(key)->group));
            auto& m = marks[key];
            m.first = std::max(m.first, rank(f.severity));
            m.second << QStringLiteral("%1 (%2): %3")
                            .arg(QString::fromStdString(f.rule_id),
                                QString::fromLatin1(severityName(f.severity)),
                                QString::fromStdString(f.message));
        }
        for (const QString& g : groups)
            groupCounts[g][std::size_t(rank(f.severity))]++;
    }
    static const char* names[] = { "", "adjustment", "note", "warning", "error" };
    for (const auto& spec : recipeFields()) {
        auto it = marks.find(spec.key);
        const QString mark = it == marks.end() ? QString() : QString::fromLatin1(names[it->second.first]);
        const QString old = marking(spec.key);
        if (mark == old)
            continue;
        m_markings[spec.key] = mark;
        QWidget* targets[] = { m_labels[spec.key],
            spec.kind == FieldKind::RecomputeModules ? static_cast<QWidget*>(m_labelsView)
                                                     : editor(spec.key) };
        for (QWidget* w : targets) {
            if (!w)
                continue;
            w->setProperty(kMarkProperty, mark);
            w->style()->unpolish(w);
            w->style()->polish(w);
            QString tip = QString::fromLatin1(spec.tip);
            if (it != marks.end())
                tip += (tip.isEmpty() ? QString() : QStringLiteral("\n\n"))
                    + it->second.second.join(QLatin1Char('\n'));
            w->setToolTip(tip);
        }
    }
    for (auto it = m_groups.begin(); it != m_groups.end(); ++it) {
        const auto counts = groupCounts.value(it.key(), std::array<int, 5> {});
        QStringList parts;
        if (counts[4])
            parts << tr("%n error(s)", nullptr, counts[4]);
        if (counts[3])
            parts << tr("%n warning(s)", nullptr, counts[3]);
        if (counts[2])
            parts << tr("%n note(s)", nullptr, counts[2]);
        const QString title = parts.isEmpty()
            ? it.key()
            : it.key() + QStringLiteral("  ⚠ ") + parts.join(QStringLiteral(", "));
        if (it.value()->title() != title)
            it.value()->setTitle(title);
    }
}

void RecipeForm::scrollToGroup(const QString& group)
{
    if (QGroupBox* box = m_groups.value(group))
        verticalScrollBar()->setValue(box->y());
}

void RecipeForm::focusField(const std::string& key)
{
    const std::string formKey = formKeyForFindingField(key);
    QWidget* w = formKey == "recompute_modules" ? static_cast<QWidget*>(m_labelsView) : editor(formKey);
    if (!w)
        return;
    ensureWidgetVisible(w, 40, 80);
    w->setFocus(Qt::OtherFocusReason);
}

} // namespace rs::ui
