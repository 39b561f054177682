// SPDX-License-Identifier: Apache-2.0
// sha256Hex is declared in core/recipe_json.h (the recipe hash); this header is for users that only hash.
#pragma once

#include <string>

namespace rs {

std::string sha256Hex(const std::string& bytes);

} // namespace rs
