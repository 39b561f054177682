// SPDX-License-Identifier: Apache-2.0
// Memory units as the guide writes them: decimal GB (1 GB = 1e9 bytes), three decimals ("36.618"). Every
// program prints bytes through these, so the CLI, the studio and the reports never disagree on a figure.
// The text never depends on the locale (a decimal point, always).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rs {

inline constexpr double kBytesPerGb = 1.0e9;

inline double bytesToGb(std::int64_t bytes)
{
    return double(bytes) / kBytesPerGb;
}

// `value` with `decimals` places and a decimal point: "457.18".
std::string formatFixed(double value, int decimals);
// GB as short as it reads: "81.2", "80", "0.0024" (at most `max_decimals` places, trailing zeros dropped).
std::string formatGbShort(double gb, int max_decimals);
// A target in GB as bytes (1 GB = 1e9 bytes), rounded to the byte.
std::int64_t gbToBytes(double gb);
// The decimals a figure near a target of `target_gb` is written with: 3 (the guide's), 6 below 1 GB, so a
// small target (0.0024 GB) and the peaks compared with it do not all read 0.002.
inline int gbDecimalsFor(double target_gb)
{
    return target_gb < 1.0 ? 6 : 3;
}
// "36.618" (`decimals` places); "" when unknown.
std::string formatGb(std::optional<std::int64_t> bytes, int decimals = 3);
// At least three significant figures and three decimals: "36.618", "0.0483", "0.00152" (a tiny CPU run's
// peaks differ where "0.048" would hide it); "" when unknown.
std::string formatGbPrecise(std::optional<std::int64_t> bytes);
// "36.618 GB"; `unknown` when unknown.
std::string formatGbUnit(
    std::optional<std::int64_t> bytes, const std::string& unknown = "-", int decimals = 3);

} // namespace rs
