// SPDX-License-Identifier: Apache-2.0
#include "core/shell_words.h"

#include <cctype>

namespace rs {

namespace {

int hexDigit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

} // namespace

std::optional<std::vector<std::string>> splitShellWords(std::string_view line)
{
    std::vector<std::string> words;
    std::string word;
    bool inWord = false;
    std::size_t i = 0;
    const std::size_t n = line.size();
    while (i < n) {
        const char c = line[i];
        if (c == ' ' || c == '\t' || c == '\n') {
            if (inWord)
                words.push_back(std::move(word));
            word.clear();
            inWord = false;
            ++i;
            continue;
        }
        inWord = true;
        if (c == '\'') {
            const std::size_t end = line.find('\'', i + 1);
            if (end == std::string_view::npos)
                return std::nullopt;
            word.append(line.substr(i + 1, end - i - 1));
            i = end + 1;
        } else if (c == '$' && i + 1 < n && line[i + 1] == '\'') {
            i += 2;
            bool closed = false;
            while (i < n) {
                const char d = line[i];
                if (d == '\'') {
                    closed = true;
                    ++i;
                    break;
                }
                if (d != '\\' || i + 1 >= n) {
                    word.push_back(d);
                    ++i;
                    continue;
                }
                const char e = line[i + 1];
                i += 2;
                switch (e) {
                case 'n':
                    word.push_back('\n');
                    break;
                case 'r':
                    word.push_back('\r');
                    break;
                case 't':
                    word.push_back('\t');
                    break;
                case 'x': {
                    int value = 0, digits = 0;
                    while (digits < 2 && i < n && hexDigit(line[i]) >= 0) {
                        value = value * 16 + hexDigit(line[i]);
                        ++i;
                        ++digits;
                    }
                    if (digits == 0)
                        word.append("\\x");
                    else
                        word.push_back(static_cast<char>(value));
                    break;
                }
                case '0': {
                    int value = 0, digits = 0;
                    while (digits < 3 && i < n && line[i] >= '0' && line[i] <= '7') {
                        value = value * 8 + (line[i] - '0');
                        ++i;
                        ++digits;
                    }
                    word.push_back(static_cast<char>(value));
                    break;
                }
                case '\\':
                case '\'':
                case '"':
                    word.push_back(e);
                    break;
                default: // bash keeps an unknown escape as written
                    word.push_back('\\');
                    word.push_back(e);
                }
            }
            if (!closed)
                return std::nullopt;
        } else if (c == '"') {
            ++i;
            bool closed = false;
            while (i < n) {
                const char d = line[i];
                if (d == '"') {
                    closed = true;
                    ++i;
                    break;
                }
                if (d == '\\' && i + 1 < n
                    && (line[i + 1] == '\\' || line[i + 1] == '"' || line[i + 1] == '$'
                        || line[i + 1] == '`')) {
                    word.push_back(line[i + 1]);
                    i += 2;
                    continue;
                }
                word.push_back(d);
                ++i;
            }
            if (!closed)
                return std::nullopt;
        } else if (c == '\\') {
            if (i + 1 < n && line[i + 1] != '\n')
                word.push_back(line[i + 1]);
            i += 2;
        } else {
            word.push_back(c);
            ++i;
        }
    }
    if (inWord)
        words.push_back(std::move(word));
    return words;
}

} // namespace rs
