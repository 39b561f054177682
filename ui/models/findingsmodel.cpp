// SPDX-License-Identifier: Apache-2.0
#include "models/findingsmodel.h"

#include <algorithm>

#include <QColor>
#include <QStringList>

#include "core/recipe_json.h"

namespace rs::ui {

FindingsModel::FindingsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void FindingsModel::setFindings(const std::vector<Finding>& findings, const Recipe* recipe)
{
    beginResetModel();
    m_findings = findings;
    m_hints.clear();
    for (const Finding& f : m_findings)
        m_hints << (recipe && f.rule_id == "R11" ? labelHint(*recipe) : QString());
    endResetModel();
}

QString FindingsModel::hint(int row) const
{
    return m_hints.value(row);
}

QString FindingsModel::labelHint(const Recipe& recipe)
{
    if (!recipe.recompute_modules)
        return {};
    // The suggestion R11's fix-it applies (core's suggestedRecomputeLabel), so the hint and Fix agree.
    QStringList parts;
    for (const std::string& label : *recipe.recompute_modules) {
        if (const auto near = suggestedRecomputeLabel(label, recipe.profile))
            parts << QStringLiteral("'%1' for '%2'")
                         .arg(QString::fromStdString(*near), QString::fromStdString(label));
    }
    return parts.isEmpty() ? QString() : tr("did you mean %1?").arg(parts.join(QStringLiteral(", ")));
}

const Finding* FindingsModel::finding(int row) const
{
    if (row < 0 || row >= int(m_findings.size()))
        return nullptr;
    return &m_findings[std::size_t(row)];
}

int FindingsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_findings.size());
}

int FindingsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString FindingsModel::severityText(Severity severity)
{
    return QString::fromLatin1(severityName(severity));
}

QColor FindingsModel::severityColor(Severity severity)
{
    switch (severity) {
    case Severity::Error:
        return QColor(0xc6, 0x28, 0x28);
    case Severity::Warning:
        return QColor(0xb2, 0x6a, 0x00);
    case Severity::Note:
        return QColor(0x1e, 0x5a, 0xa8);
    case Severity::Adjustment:
        return QColor(0x5f, 0x5f, 0x5f);
    }
    return {};
}

static QStringList toStringList(const std::vector<std::string>& v)
{
    QStringList out;
    out.reserve(int(v.size()));
    for (const auto& s : v)
        out << QString::fromStdString(s);
    return out;
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const
{
    const Finding* f = index.isValid() ? finding(index.row()) : nullptr;
    if (!f)
        return {};
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case SeverityColumn:
            return severityText(f->severity);
        case RuleColumn:
            return QString::fromStdString(f->rule_id);
        case MessageColumn: {
            const QString hint = m_hints.value(index.row());
            QString text = QString::fromStdString(f->message);
            if (!hint.isEmpty())
                text += QStringLiteral(" — ") + hint;
            return text;
        }
        case FieldsColumn:
            return toStringList(f->fields).join(QStringLiteral(", "));
        case SourceColumn:
            return QString::fromStdString(f->source);
        case FixItColumn:
            return f->fixit ? QString::fromStdString(f->fixit->description) : QString();
        }
        break;
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("<b>%1 %2</b><br>%3")
                          .arg(QString::fromStdString(f->rule_id), severityText(f->severity),
                              QString::fromStdString(f->message).toHtmlEscaped());
        if (!m_hints.value(index.row()).isEmpty())
            tip += QStringLiteral("<br><b>%1</b>").arg(m_hints.value(index.row()).toHtmlEscaped());
        if (!f->source.empty())
            tip += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(f->source).toHtmlEscaped());
        if (f->fixit)
            tip += QStringLiteral("<br>Fix-it: %1")
                       .arg(QString::fromStdString(f->fixit->description).toHtmlEscaped());
        return tip;
    }
    case Qt::ForegroundRole:
        if (index.column() == SeverityColumn)
            return severityColor(f->severity);
        break;
    case SeverityRole:
        return int(f->severity);
    case HasFixItRole:
        return f->fixit.has_value();
    case FieldsRole:
        return toStringList(f->fields);
    }
    return {};
}

QVariant FindingsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case SeverityColumn:
        return tr("Severity");
    case RuleColumn:
        return tr("Rule");
    case MessageColumn:
        return tr("Message");
    case FieldsColumn:
        return tr("Fields");
    case SourceColumn:
        return tr("Source");
    case FixItColumn:
        return tr("Fix-it");
    }
    return {};
}

} // namespace rs::ui
