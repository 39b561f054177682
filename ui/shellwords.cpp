// SPDX-License-Identifier: Apache-2.0
#include "shellwords.h"

namespace rs::ui {

bool splitShellWords(const QString& text, QStringList* words, QString* error)
{
    words->clear();
    QString current;
    bool inWord = false;
    QChar quote;
    int line = 1;
    int quoteLine = 0;
    for (int i = 0; i < text.size(); ++i) {
        const QChar c = text.at(i);
        if (c == QLatin1Char('\n'))
            ++line;
        if (!quote.isNull()) {
            if (c == quote) {
                quote = QChar();
            } else if (quote == QLatin1Char('"') && c == QLatin1Char('\\') && i + 1 < text.size()
                && QStringLiteral("\"\\$`").contains(text.at(i + 1))) {
                current += text.at(++i);
            } else {
                current += c;
            }
            continue;
        }
        if (c == QLatin1Char('\\')) {
            if (i + 1 < text.size() && text.at(i + 1) == QLatin1Char('\n')) {
                ++i; // continuation
                ++line;
                continue;
            }
            if (i + 1 < text.size()) {
                current += text.at(++i);
                inWord = true;
            }
            continue;
        }
        if (c == QLatin1Char('\'') || c == QLatin1Char('"')) {
            quote = c;
            quoteLine = line;
            inWord = true;
            continue;
        }
        if (c == QLatin1Char('#') && !inWord) {
            while (i + 1 < text.size() && text.at(i + 1) != QLatin1Char('\n'))
                ++i;
            continue;
        }
        if (c.isSpace()) {
            if (inWord)
                words->append(current);
            current.clear();
            inWord = false;
            continue;
        }
        current += c;
        inWord = true;
    }
    if (!quote.isNull()) {
        *error = QStringLiteral("line %1: the %2 quote opened here is never closed")
                     .arg(quoteLine)
                     .arg(quote == QLatin1Char('\'') ? QStringLiteral("single") : QStringLiteral("double"));
        return false;
    }
    if (inWord)
        words->append(current);
    return true;
}

QString quoteShellWord(const QString& word)
{
    if (word.isEmpty())
        return QStringLiteral("''");
    static const QString safe = QStringLiteral("@%+=:,./-_");
    bool plain = true;
    for (const QChar c : word) {
        if (!(c.isLetterOrNumber() || safe.contains(c))) {
            plain = false;
            break;
        }
    }
    if (plain)
        return word;
    // A Bridge override that quotes its own value (studio.name='My recipe') reads best in double quotes.
    static const QString doubleQuoteSpecial = QStringLiteral("\"$`\\!");
    bool doubleSafe = true;
    for (const QChar c : word)
        doubleSafe &= !doubleQuoteSpecial.contains(c);
    if (doubleSafe && word.contains(QLatin1Char('\'')))
        return QLatin1Char('"') + word + QLatin1Char('"');
    QString quoted = word;
    quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

QString joinShellLines(const QList<QStringList>& lines)
{
    QStringList out;
    for (const QStringList& words : lines) {
        QStringList quoted;
        for (const QString& w : words)
            quoted << quoteShellWord(w);
        out << quoted.join(QLatin1Char(' '));
    }
    return out.join(QStringLiteral(" \\\n"));
}

QList<QStringList> groupFlagLines(const QStringList& args)
{
    QList<QStringList> lines;
    for (const QString& a : args) {
        if (a.startsWith(QStringLiteral("--")) || lines.isEmpty())
            lines.append(QStringList { a });
        else
            lines.last().append(a);
    }
    return lines;
}

} // namespace rs::ui
