// SPDX-License-Identifier: Apache-2.0
#include "launch/json_lines.h"

namespace rs::launch {

QVector<stream::Event> JsonLinesReader::feed(const QByteArray& bytes)
{
    QVector<stream::Event> out;
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

QVector<stream::Event> JsonLinesReader::finish()
{
    QVector<stream::Event> out;
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

void JsonLinesReader::parseLine(QByteArray line, QVector<stream::Event>* out)
{
    if (line.endsWith('\r'))
        line.chop(1);
    if (line.trimmed().isEmpty())
        return;
    try {
        out->push_back(stream::decodeLine(std::string_view(line.constData(), size_t(line.size()))));
    } catch (const stream::StreamError& error) {
        ++m_malformedCount;
        m_malformed.push_back({ line, QString::fromStdString(error.what()),
            QString::fromStdString(error.event()), QString::fromStdString(error.key()) });
    }
}

} // namespace rs::launch
