// SPDX-License-Identifier: Apache-2.0
#include "core/units.h"

#include <charconv>
#include <cmath>

namespace rs {

std::string formatFixed(double value, int decimals)
{
    if (!std::isfinite(value))
        return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
    char buf[128];
    const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
    return r.ec == std::errc() ? std::string(buf, r.ptr) : std::string();
}

std::string formatGbShort(double gb, int max_decimals)
{
    std::string s = formatFixed(gb, max_decimals);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0')
            s.pop_back();
        if (s.back() == '.')
            s.pop_back();
    }
    return s;
}

std::int64_t gbToBytes(double gb)
{
    return std::llround(gb * kBytesPerGb);
}

std::string formatGb(std::optional<std::int64_t> bytes, int decimals)
{
    return bytes ? formatFixed(bytesToGb(*bytes), decimals) : std::string();
}

std::string formatGbPrecise(std::optional<std::int64_t> bytes)
{
    if (!bytes)
        return {};
    const double gb = bytesToGb(*bytes);
    int decimals = 3;
    // One more decimal for each power of ten below 0.1 GB, up to bytes of a kilobyte.
    for (double v = std::abs(gb); v > 0 && v < 0.1 && decimals < 6; v *= 10)
        ++decimals;
    return formatFixed(gb, decimals);
}

std::string formatGbUnit(std::optional<std::int64_t> bytes, const std::string& unknown, int decimals)
{
    return bytes ? formatGb(bytes, decimals) + " GB" : unknown;
}

} // namespace rs
