// SPDX-License-Identifier: Apache-2.0
// Splits a byte stream into JSON-lines events (docs/stream.md). Bytes arrive in arbitrary chunks; a line
// is complete at '\n' ("\r\n" is accepted). Lines that are not a JSON object with a string "event" are
// reported as malformed, never fatal: a worker's stdout may carry a stray print.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QVector>

namespace rs::launch {

class JsonLinesReader {
public:
    struct Malformed {
        QByteArray line;
        QString why;
    };

    // Appends bytes; returns the events completed by them, in order.
    QVector<QJsonObject> feed(const QByteArray& bytes);
    // End of stream: a last line without '\n' is parsed too (a truncated one comes back as malformed).
    QVector<QJsonObject> finish();
    // Malformed lines seen since the last call (taken: the list is cleared).
    QVector<Malformed> takeMalformed();
    int malformedCount() const { return m_malformedCount; }

private:
    void parseLine(QByteArray line, QVector<QJsonObject>* out);
    QByteArray m_buffer;
    QVector<Malformed> m_malformed;
    int m_malformedCount = 0;
};

} // namespace rs::launch
