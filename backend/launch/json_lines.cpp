// SPDX-License-Identifier: Apache-2.0
#include "launch/json_lines.h"

#include <QJsonDocument>
#include <QJsonParseError>

using namespace Qt::StringLiterals;

namespace rs::launch {

QVector<QJsonObject> JsonLinesReader::feed(const QByteArray& bytes)
{
    QVector<QJsonObject> out;
    m_buffer += bytes;
    qsizetype start = 0;
    for (;;) {
        const qsizetype nl = m_buffer.indexOf('\n', start);
        if (nl < 0)
            break;
        parseLine(m_buffer.mid(start, nl - start), &out);
        start = nl + 1;
    }
    m_buffer.remove(0, start);
    return out;
}

QVector<QJsonObject> JsonLinesReader::finish()
{
    QVector<QJsonObject> out;
    if (!m_buffer.isEmpty())
        parseLine(m_buffer, &out);
    m_buffer.clear();
    return out;
}

QVector<JsonLinesReader::Malformed> JsonLinesReader::takeMalformed()
{
    QVector<Malformed> out;
    out.swap(m_malformed);
    return out;
}

void JsonLinesReader::parseLine(QByteArray line, QVector<QJsonObject>* out)
{
    if (line.endsWith('\r'))
        line.chop(1);
    if (line.trimmed().isEmpty())
        return;
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
    QString why;
    if (err.error != QJsonParseError::NoError)
        why = u"not JSON (%1 at byte %2)"_s.arg(err.errorString()).arg(err.offset);
    else if (!doc.isObject())
        why = u"not a JSON object"_s;
    else if (!doc.object().value(u"event"_s).isString())
        why = u"no string \"event\" key"_s;
    if (!why.isEmpty()) {
        ++m_malformedCount;
        m_malformed.push_back({ line, why });
        return;
    }
    out->push_back(doc.object());
}

} // namespace rs::launch
