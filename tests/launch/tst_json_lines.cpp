// SPDX-License-Identifier: Apache-2.0
// The JSON-lines reader: lines split across chunks, CRLF, blank lines, malformed lines, a last line
// without its newline.
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
        QVector<QJsonObject> events;
        for (int i = 0; i < stream.size(); i += chunk)
            events += reader.feed(stream.mid(i, chunk));
        events += reader.finish();
        QCOMPARE(events.size(), 3);
        QCOMPARE(events[0].value(u"event"_s).toString(), u"hello"_s);
        QCOMPARE(events[1].value(u"step_ms"_s).toDouble(), 12.5);
        QVERIFY(events[2].value(u"loss"_s).isNull());
        QCOMPARE(reader.malformedCount(), 0);
    }

    void malformed_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::addColumn<QString>("why");
        QTest::newRow("text") << QByteArray("Warning: something") << u"not JSON"_s;
        QTest::newRow("array") << QByteArray("[1,2]") << u"not a JSON object"_s;
        QTest::newRow("no event") << QByteArray("{\"rank\":0}") << u"no string \"event\" key"_s;
        QTest::newRow("event not string") << QByteArray("{\"event\":3}") << u"no string \"event\" key"_s;
        QTest::newRow("truncated") << QByteArray("{\"event\":\"iteration\",\"it") << u"not JSON"_s;
    }

    void malformed()
    {
        QFETCH(QByteArray, line);
        QFETCH(QString, why);
        JsonLinesReader reader;
        auto events = reader.feed("{\"event\":\"hello\"}\n" + line + "\n{\"event\":\"result\"}\n");
        QCOMPARE(events.size(), 2);
        QCOMPARE(events[1].value(u"event"_s).toString(), u"result"_s);
        const auto bad = reader.takeMalformed();
        QCOMPARE(bad.size(), 1);
        QCOMPARE(bad[0].line, line);
        QVERIFY2(bad[0].why.startsWith(why), qPrintable(bad[0].why));
        QVERIFY(reader.takeMalformed().isEmpty());
        QCOMPARE(reader.malformedCount(), 1);
    }

    void lastLineWithoutNewline()
    {
        JsonLinesReader reader;
        QCOMPARE(reader.feed("{\"event\":\"hello\"}\n{\"event\":\"result\",\"status\":\"pass\"}").size(), 1);
        const auto tail = reader.finish();
        QCOMPARE(tail.size(), 1);
        QCOMPARE(tail[0].value(u"status"_s).toString(), u"pass"_s);
    }
};

QTEST_GUILESS_MAIN(TestJsonLines)
#include "tst_json_lines.moc"
