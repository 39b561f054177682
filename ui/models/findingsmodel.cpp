// SPDX-License-Identifier: Apache-2.0
#include "models/findingsmodel.h"

#include <QColor>
#include <QStringList>

namespace rs::ui {

FindingsModel::FindingsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void FindingsModel::setFindings(const std::vector<Finding>& findings)
{
    beginResetModel();
    m_findings = findings;
    endResetModel();
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
        case MessageColumn:
            return QString::fromStdString(f->message);
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
