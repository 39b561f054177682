// SPDX-License-Identifier: Apache-2.0
#include "core/recipe.h"

#include "core/profiles.h"

namespace rs {

const char* profileName(Profile profile)
{
    return profileInfo(profile).name; // the profile table (profiles.cpp)
}

std::optional<Profile> profileFromName(const std::string& name)
{
    for (Profile p : allProfiles()) {
        if (name == profileName(p))
            return p;
    }
    return std::nullopt;
}

const std::vector<Profile>& allProfiles()
{
    static const std::vector<Profile> profiles = [] {
        std::vector<Profile> out;
        for (const ProfileInfo& row : profileTable())
            out.push_back(row.id);
        return out;
    }();
    return profiles;
}

} // namespace rs
