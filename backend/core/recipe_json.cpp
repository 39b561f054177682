// SPDX-License-Identifier: Apache-2.0
#include "core/recipe_json.h"

namespace rs {

RecipeError::RecipeError(std::string field_, std::string where_, const std::string& message)
    : std::runtime_error(where_ + ": " + (field_.empty() ? std::string() : field_ + ": ") + message)
    , field(std::move(field_))
    , where(std::move(where_))
{
}

bool Recipe::operator==(const Recipe& other) const
{
    return recipeToJson(*this) == recipeToJson(other);
}

Recipe recipeFromJson(const nlohmann::json&, const std::string& where)
{
    throw RecipeError("", where, "not implemented yet");
}

Recipe recipeFromJsonText(const std::string& text, const std::string& where)
{
    return recipeFromJson(nlohmann::json::parse(text), where);
}

nlohmann::json recipeToJson(const Recipe& r)
{
    nlohmann::json j;
    j["schema_version"] = Recipe::kSchemaVersion;
    j["name"] = r.name;
    return j;
}

std::string recipeCanonicalText(const Recipe& r)
{
    return recipeToJson(r).dump();
}

const std::vector<std::string>* allowedValues(const std::string&)
{
    return nullptr;
}

std::string nearestName(const std::string&, const std::vector<std::string>& candidates)
{
    return candidates.empty() ? std::string() : candidates.front();
}

} // namespace rs
