// SPDX-License-Identifier: Apache-2.0
// The layout parser (pipeline_layout.h). parse_str_to_list unrolls with two regular expressions applied one
// after the other, each over the whole text, left to right, without overlaps: r'\(([^)]+)\)\*(\d+)' and then
// r'(.)\*(\d+)'. They are written out here as the scans those substitutions make, on code points (Python's
// str), so that what they leave behind (an unmatched parenthesis, a '*' without a count) is the invalid
// character Python reports.
#include "core/pipeline_layout.h"

#include <algorithm>

namespace rs {

namespace {

const char* const kAllowed
    = "allowed: E (the embedding), t (a decoder layer), m (an MTP layer), L (the loss), '|' between stages, "
      "X*N and (...)*N to repeat, ',' for readability";

// UTF-8 to code points; a byte that starts no well-formed sequence stands for itself (the reader has already
// refused text that is not UTF-8, this only keeps such bytes from being read past).
std::u32string decode(const std::string& s)
{
    std::u32string out;
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
        char32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
        std::size_t k = 1;
        for (; k <= n && i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        if (k <= n) { // a truncated sequence: the lead byte alone
            out.push_back(c);
            ++i;
            continue;
        }
        out.push_back(cp);
        i += n + 1;
    }
    return out;
}

std::string encode(char32_t cp)
{
    std::string out;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return out;
}

bool isDigit(char32_t c)
{
    // \d also matches other scripts' digits in Python; a layout written with them is refused here as an
    // invalid character instead of unrolled (no layout in Megatron's or Bridge's sources uses them).
    return c >= U'0' && c <= U'9';
}

// The count of "*N" at text[at] (the '*'), and where it ends; false when there is none. A count that would
// make the text larger than kMaxLayoutLayers is refused here, before anything is repeated.
bool repeatCount(const std::u32string& text, std::size_t at, std::size_t unit, std::size_t& count,
    std::size_t& end, const std::string& original)
{
    if (at >= text.size() || text[at] != U'*' || at + 1 >= text.size() || !isDigit(text[at + 1]))
        return false;
    end = at + 1;
    count = 0;
    bool tooMany = false;
    while (end < text.size() && isDigit(text[end])) {
        count = count * 10 + static_cast<std::size_t>(text[end] - U'0');
        tooMany = tooMany || count > kMaxLayoutLayers;
        ++end;
    }
    if (tooMany || (unit > 0 && count > kMaxLayoutLayers / unit))
        throw PipelineLayoutError("'" + original + "' repeats to more than "
            + std::to_string(kMaxLayoutLayers) + " layers; a pipeline layout holds a model's layers ("
            + kAllowed + ")");
    return true;
}

void mustFit(std::size_t size, const std::string& original)
{
    if (size > 2 * kMaxLayoutLayers) // layers and the '|' between stages
        throw PipelineLayoutError("'" + original + "' repeats to more than "
            + std::to_string(kMaxLayoutLayers) + " layers; a pipeline layout holds a model's layers ("
            + kAllowed + ")");
}

} // namespace

std::size_t PipelineLayout::count(char kind) const
{
    std::size_t n = 0;
    for (const std::string& s : stages)
        n += static_cast<std::size_t>(std::count(s.begin(), s.end(), kind));
    return n;
}

std::size_t PipelineLayout::count(char kind, std::size_t stage) const
{
    if (stage >= stages.size())
        return 0;
    return static_cast<std::size_t>(std::count(stages[stage].begin(), stages[stage].end(), kind));
}

std::string PipelineLayout::flat() const
{
    std::string out;
    for (const std::string& s : stages)
        out += s;
    return out;
}

PipelineLayout parsePipelineLayout(const std::string& original)
{
    std::u32string text;
    for (char32_t c : decode(original))
        if (c != U',') // "purely cosmetic commas"
            text.push_back(c);

    // r'\(([^)]+)\)\*(\d+)': a '(' whose first ')' after at least one character is followed by "*N".
    std::u32string once;
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] == U'(') {
            const std::size_t close = text.find(U')', i + 1);
            std::size_t count = 0, end = 0;
            if (close != std::u32string::npos && close > i + 1
                && repeatCount(text, close + 1, close - i - 1, count, end, original)) {
                for (std::size_t k = 0; k < count; ++k)
                    once.append(text, i + 1, close - i - 1);
                mustFit(once.size(), original);
                i = end;
                continue;
            }
        }
        once.push_back(text[i]);
        ++i;
    }
    // r'(.)\*(\d+)': any one character but a newline, followed by "*N".
    std::u32string unrolled;
    for (std::size_t i = 0; i < once.size();) {
        std::size_t count = 0, end = 0;
        if (once[i] != U'\n' && repeatCount(once, i + 1, 1, count, end, original)) {
            unrolled.append(count, once[i]);
            mustFit(unrolled.size(), original);
            i = end;
            continue;
        }
        unrolled.push_back(once[i]);
        ++i;
    }

    PipelineLayout layout;
    layout.stages.emplace_back();
    for (char32_t c : unrolled) {
        if (c == U'|') {
            layout.stages.emplace_back();
            continue;
        }
        if (c != U'E' && c != U't' && c != U'm' && c != U'L')
            throw PipelineLayoutError("'" + encode(c) + "' is not a layer of a pipeline layout (stage "
                + std::to_string(layout.stages.size() - 1) + " of '" + original + "' once unrolled: '"
                + layout.stages.back() + encode(c) + "...'); " + kAllowed);
        layout.stages.back().push_back(static_cast<char>(c));
    }
    mustFit(2 * layout.flat().size(), original);
    if (layout.flat().empty())
        throw PipelineLayoutError("'" + original
            + "' holds no layer (Megatron's validate_layer_layout reads the first layer of the layout and "
              "fails); a layout holds the embedding, the decoder layers and the loss at least ("
            + kAllowed + ")");
    return layout;
}

PipelineLayout pipelineLayoutFromNames(const std::vector<std::vector<std::string>>& stages)
{
    PipelineLayout layout;
    std::size_t total = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        layout.stages.emplace_back();
        for (const std::string& raw : stages[i]) {
            // layer_type.strip().lower(): Python's strip drops every whitespace character at both ends.
            const auto blank = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
            std::size_t b = 0, e = raw.size();
            while (b < e && blank(raw[b]))
                ++b;
            while (e > b && blank(raw[e - 1]))
                --e;
            std::string name = raw.substr(b, e - b);
            std::transform(name.begin(), name.end(), name.begin(),
                [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
            char kind = 0;
            if (name == "embedding")
                kind = kLayoutEmbedding;
            else if (name == "decoder")
                kind = kLayoutDecoder;
            else if (name == "mtp")
                kind = kLayoutMtp;
            else if (name == "loss")
                kind = kLayoutLoss;
            else if (name == "encoder")
                throw PipelineLayoutError("stage " + std::to_string(i)
                    + ": 'encoder' layers are not supported in a pipeline layout (Megatron's "
                      "validate_layer_layout raises NotImplementedError); allowed: embedding, decoder, mtp, "
                      "loss");
            else
                throw PipelineLayoutError("stage " + std::to_string(i) + ": '" + raw
                    + "' is not a layer of a pipeline layout (Megatron's LayerType); allowed: embedding, "
                      "decoder, mtp, loss");
            layout.stages.back().push_back(kind);
            if (++total > kMaxLayoutLayers)
                throw PipelineLayoutError("more than " + std::to_string(kMaxLayoutLayers)
                    + " layers; a pipeline layout holds a model's layers");
        }
    }
    if (total == 0)
        throw PipelineLayoutError(
            "the layout holds no layer (Megatron's validate_layer_layout reads the first layer of the layout "
            "and fails); a layout holds the embedding, the decoder layers and the loss at least");
    return layout;
}

std::string pipelineLayoutText(const PipelineLayout& layout)
{
    std::string out;
    for (std::size_t i = 0; i < layout.stages.size(); ++i)
        out += (i ? "|" : "") + layout.stages[i];
    return out;
}

} // namespace rs
