// SPDX-License-Identifier: Apache-2.0
// Splits a byte stream into the worker's events (docs/stream.md), each decoded once, here, into its type
// (core/stream.h decodeLine). Bytes arrive in arbitrary chunks; a line is complete at '\n' ("\r\n" is
// accepted). A line that is not a JSON object with a string "event", or whose known key has the wrong type,
// is reported as malformed (naming the event and the key), never fatal: a worker's stdout may carry a stray
// print.
#pragma once

#include <QByteArray>
#include <QString>
#include <QVector>

#include "core/stream.h"

namespace rs::launch {

class JsonLinesReader {
public:
    struct Malformed {
        QByteArray line;
        QString why; // "not JSON (byte 3: ...)", "iteration event: 'step_ms': expected a number, got \"x\""
        QString event, key; // the event and key that did not read ("" when the line is no event at all)
    };

    // Appends bytes; returns the events completed by them, in order.
    QVector<stream::Event> feed(const QByteArray& bytes);
    // End of stream: a last line without '\n' is parsed too (a truncated one comes back as malformed).
    QVector<stream::Event> finish();
    // Malformed lines seen since the last call (taken: the list is cleared).
    QVector<Malformed> takeMalformed();
    int malformedCount() const { return m_malformedCount; }

private:
    void parseLine(QByteArray line, QVector<stream::Event>* out);
    QByteArray m_buffer;
    QVector<Malformed> m_malformed;
    int m_malformedCount = 0;
};

} // namespace rs::launch
