// SPDX-License-Identifier: Apache-2.0
// The JSON-lines reader: lines split across chunks, CRLF, blank lines, malformed lines (no event, or a key
// of the wrong type, named), a last line without its newline; each line decoded once into its typed event.
#include <QTest>

#include "launch/json_lines.h"

using namespace Qt::StringLiterals;
using rs::launch::JsonLinesReader;

class TestJsonLines : public QObject {
    Q_OBJECT
private slots:
    void chunking_data()
    {
        QTest::addColumn<int>("chunk");
        for (int c : { 1, 2, 3, 7, 64, 4096 })
            QTest::addRow("chunk %d", c) << c;
    }

    void chunking()
    {
        QFETCH(int, chunk);
        const QByteArray stream = "{\"event\":\"hello\",\"rank\":0}\n"
                                  "{\"event\":\"iteration\",\"iteration\":1,\"step_ms\":12.5}\r\n"
                                  "\n"
                                  "{\"event\":\"iteration\",\"iteration\":2,\"loss\":null}\n";
        JsonLinesReader reader;
        QVector<rs::stream::Event> events;
        for (int i = 0; i < stream.size(); i += chunk)
            events += reader.feed(stream.mid(i, chunk));
        events += reader.finish();
        QCOMPARE(events.size(), 3);
        QVERIFY(std::holds_alternative<rs::stream::Hello>(events[0]));
        QCOMPARE(std::get<rs::stream::Iteration>(events[1]).step_ms, std::optional<double>(12.5));
        QCOMPARE(std::get<rs::stream::Iteration>(events[2]).iteration, 2);
        QVERIFY(!std::get<rs::stream::Iteration>(events[2]).loss);
        QCOMPARE(reader.malformedCount(), 0);
    }

    void malformed_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::addColumn<QString>("why");
        QTest::addColumn<QString>("event");
        QTest::addColumn<QString>("key");
        QTest::newRow("text") << QByteArray("Warning: something") << u"not JSON (byte "_s << QString()
                              << QString();
        QTest::newRow("array") << QByteArray("[1,2]") << u"not a JSON object"_s << QString() << QString();
        QTest::newRow("no event") << QByteArray("{\"rank\":0}") << u"no string \"event\" key"_s << QString()
                                  << QString();
        QTest::newRow("event not string")
            << QByteArray("{\"event\":3}") << u"no string \"event\" key"_s << QString() << QString();
        QTest::newRow("truncated") << QByteArray("{\"event\":\"iteration\",\"it") << u"not JSON"_s
                                   << QString() << QString();
        QTest::newRow("not UTF-8") << QByteArray("{\"event\":\"note\",\"message\":\"caf\xe9\"}")
                                   << u"not JSON"_s << QString() << QString();
        QTest::newRow("nested too deep") << QByteArray(300, '[') + QByteArray(300, ']')
                                         << u"nested deeper than 256 levels"_s << QString() << QString();
        QTest::newRow("bytes as text")
            << QByteArray("{\"event\":\"iteration\",\"forward_peak_allocated\":\"lots\"}")
            << u"iteration event: 'forward_peak_allocated': expected an integer (bytes or a count), got \"lots\""_s
            << u"iteration"_s << u"forward_peak_allocated"_s;
        QTest::newRow("status as number")
            << QByteArray("{\"event\":\"result\",\"status\":0}")
            << u"result event: 'status': expected a string, got 0"_s << u"result"_s << u"status"_s;
        QTest::newRow("phase peak not an object")
            << QByteArray("{\"event\":\"rank_summary\",\"phase_peaks\":{\"forward\":7}}")
            << u"rank_summary event: 'phase_peaks.forward': expected an object {allocated, reserved}, got 7"_s
            << u"rank_summary"_s << u"phase_peaks.forward"_s;
    }

    void malformed()
    {
        QFETCH(QByteArray, line);
        QFETCH(QString, why);
        QFETCH(QString, event);
        QFETCH(QString, key);
        JsonLinesReader reader;
        auto events = reader.feed("{\"event\":\"hello\"}\n" + line + "\n{\"event\":\"result\"}\n");
        QCOMPARE(events.size(), 2);
        QVERIFY(std::holds_alternative<rs::stream::Result>(events[1]));
        const auto bad = reader.takeMalformed();
        QCOMPARE(bad.size(), 1);
        QCOMPARE(bad[0].line, line);
        QVERIFY2(bad[0].why.startsWith(why), qPrintable(bad[0].why));
        QCOMPARE(bad[0].event, event);
        QCOMPARE(bad[0].key, key);
        QVERIFY(reader.takeMalformed().isEmpty());
        QCOMPARE(reader.malformedCount(), 1);
    }

    // An event this build does not know is handed on as it came (readers ignore it), its keys kept.
    void unknownEventIsKept()
    {
        JsonLinesReader reader;
        const auto events = reader.feed("{\"event\":\"future_thing\",\"x\":[1,2]}\n");
        QCOMPARE(events.size(), 1);
        QCOMPARE(rs::stream::kindOf(events[0]), rs::stream::EventKind::Unknown);
        const auto& unknown = std::get<rs::stream::UnknownEvent>(events[0]);
        QCOMPARE(unknown.event, std::string("future_thing"));
        QCOMPARE(
            rs::stream::toJson(events[0]).dump(), std::string("{\"event\":\"future_thing\",\"x\":[1,2]}"));
        QCOMPARE(reader.malformedCount(), 0);
    }

    void lastLineWithoutNewline()
    {
        JsonLinesReader reader;
        QCOMPARE(reader.feed("{\"event\":\"hello\"}\n{\"event\":\"result\",\"status\":\"pass\"}").size(), 1);
        const auto tail = reader.finish();
        QCOMPARE(tail.size(), 1);
        QCOMPARE(std::get<rs::stream::Result>(tail[0]).status, std::string("pass"));
    }
};

QTEST_GUILESS_MAIN(TestJsonLines)
#include "tst_json_lines.moc"
