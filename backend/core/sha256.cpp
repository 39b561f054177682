// SPDX-License-Identifier: Apache-2.0
#include "core/sha256.h"

namespace rs {

std::string sha256Hex(const std::string&)
{
    return std::string();
}

} // namespace rs
